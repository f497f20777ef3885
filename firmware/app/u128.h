/* SPDX-License-Identifier: BSD-2-Clause */
/* 128-bit unsigned arithmetic, enough for the profile checks' exact bounds (RV32 has no
 * __int128). */
#ifndef SATEMU_U128_H
#define SATEMU_U128_H

#include <stdint.h>

struct u128 { uint64_t hi, lo; };

static inline struct u128 mul64(uint64_t a, uint64_t b)
{
    uint64_t a0 = (uint32_t)a, a1 = a >> 32, b0 = (uint32_t)b, b1 = b >> 32;
    uint64_t p00 = a0 * b0, p01 = a0 * b1, p10 = a1 * b0, p11 = a1 * b1;
    uint64_t mid = (p00 >> 32) + (uint32_t)p01 + (uint32_t)p10;
    struct u128 r = { p11 + (p01 >> 32) + (p10 >> 32) + (mid >> 32), (mid << 32) | (uint32_t)p00 };
    return r;
}

/* a * b for a 128-bit a and a 64-bit b: exact while the result fits 128 bits. */
static inline struct u128 mul_small(struct u128 a, uint64_t b)
{
    struct u128 lo = mul64(a.lo, b);
    struct u128 r = { a.hi * b + lo.hi, lo.lo };
    return r;
}

static inline int ge128(struct u128 a, struct u128 b)
{
    return a.hi != b.hi ? a.hi > b.hi : a.lo >= b.lo;
}

static inline struct u128 sub128(struct u128 a, struct u128 b)
{
    struct u128 r = { a.hi - b.hi - (a.lo < b.lo), a.lo - b.lo };
    return r;
}

static inline struct u128 add128(struct u128 a, struct u128 b)
{
    struct u128 r = { a.hi + b.hi + (a.lo + b.lo < a.lo), a.lo + b.lo };
    return r;
}

/* floor(n / d) for d != 0, by shift and subtract; the quotient must fit 64 bits. */
static inline uint64_t div128(struct u128 n, struct u128 d)
{
    struct u128 rem = { 0, 0 };
    uint64_t q = 0;
    for (int bit = 127; bit >= 0; bit--) {
        rem.hi = (rem.hi << 1) | (rem.lo >> 63);
        rem.lo = (rem.lo << 1) | ((bit >= 64 ? n.hi >> (bit - 64) : n.lo >> bit) & 1);
        if (ge128(rem, d)) {
            rem = sub128(rem, d);
            if (bit < 64)
                q |= (uint64_t)1 << bit;
        }
    }
    return q;
}

/* ceil(n / d), or UINT64_MAX when that does not fit 64 bits (or d = 0). */
static inline uint64_t ceil_div_sat(struct u128 n, struct u128 d)
{
    struct u128 one = { 0, 1 };
    n = add128(n, sub128(d, one));                /* ceil(n / d) = floor((n + d - 1) / d) */
    if (d.hi == 0 && n.hi >= d.lo)                /* n >= d * 2^64 */
        return UINT64_MAX;
    return div128(n, d);
}

#endif
