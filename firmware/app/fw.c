/* SPDX-License-Identifier: BSD-2-Clause */
/* Firmware command layer; satemu.validate is its Python reference (shared vectors pin both). */
#include <string.h>

#include "fw.h"

/* Field indices in the profile (satemu.protocol.PROFILE_FIELDS). */
enum {
    F_LOSS_MODE, F_LOSS_P, F_GE_P, F_GE_R, F_GE_LOSS_GOOD, F_GE_LOSS_BAD, F_SEED, F_RATE_Q,
    F_RATE_NUM, F_RATE_DEN, F_OVERHEAD, F_DELAY, F_QUEUE_FRAMES, F_QUEUE_BYTES, F_MIN_LEN,
    F_MAX_LEN, F_BOD_FLAGS, F_BOD_SLOT_CYCLES, F_BOD_SLOTS, F_BOD_SLOT_BYTES, F_BOD_CRA,
    F_BOD_RBDC_MAX, F_BOD_RBDC_TIMEOUT, F_BOD_VBDC_MAX, F_BOD_REQ_PERIOD, F_BOD_LATENCY,
    F_BOD_BG_COUNT, F_BOD_BG0, F_COUNT = F_BOD_BG0 + SATEMU_BOD_BG_LEVELS
};
/* The enum follows the generated field list, or this fails to compile. */
typedef char satemu_fields_match[F_COUNT == SATEMU_PROFILE_FIELDS ? 1 : -1];

const uint8_t satemu_profile_widths[SATEMU_PROFILE_FIELDS] = {
    SATEMU_REG_LOSS_MODE_WIDTH, SATEMU_REG_LOSS_P_WIDTH, SATEMU_REG_GE_P_WIDTH,
    SATEMU_REG_GE_R_WIDTH, SATEMU_REG_GE_LOSS_GOOD_WIDTH, SATEMU_REG_GE_LOSS_BAD_WIDTH,
    SATEMU_REG_SEED_WIDTH, SATEMU_REG_RATE_Q_WIDTH, SATEMU_REG_RATE_NUM_WIDTH,
    SATEMU_REG_RATE_DEN_WIDTH, SATEMU_REG_OVERHEAD_WIDTH, SATEMU_REG_DELAY_WIDTH,
    SATEMU_REG_QUEUE_FRAMES_WIDTH, SATEMU_REG_QUEUE_BYTES_WIDTH, SATEMU_REG_MIN_LEN_WIDTH,
    SATEMU_REG_MAX_LEN_WIDTH, SATEMU_REG_BOD_FLAGS_WIDTH, SATEMU_REG_BOD_SLOT_CYCLES_WIDTH,
    SATEMU_REG_BOD_SLOTS_WIDTH, SATEMU_REG_BOD_SLOT_BYTES_WIDTH, SATEMU_REG_BOD_CRA_WIDTH,
    SATEMU_REG_BOD_RBDC_MAX_WIDTH, SATEMU_REG_BOD_RBDC_TIMEOUT_WIDTH,
    SATEMU_REG_BOD_VBDC_MAX_WIDTH, SATEMU_REG_BOD_REQ_PERIOD_WIDTH, SATEMU_REG_BOD_LATENCY_WIDTH,
    SATEMU_REG_BOD_BG_COUNT_WIDTH, SATEMU_REG_BOD_BG0_WIDTH, SATEMU_REG_BOD_BG1_WIDTH,
    SATEMU_REG_BOD_BG2_WIDTH, SATEMU_REG_BOD_BG3_WIDTH, SATEMU_REG_BOD_BG4_WIDTH,
    SATEMU_REG_BOD_BG5_WIDTH, SATEMU_REG_BOD_BG6_WIDTH, SATEMU_REG_BOD_BG7_WIDTH,
};

static const uint16_t profile_regs[SATEMU_PROFILE_FIELDS] = {
    SATEMU_REG_LOSS_MODE, SATEMU_REG_LOSS_P, SATEMU_REG_GE_P, SATEMU_REG_GE_R,
    SATEMU_REG_GE_LOSS_GOOD, SATEMU_REG_GE_LOSS_BAD, SATEMU_REG_SEED, SATEMU_REG_RATE_Q,
    SATEMU_REG_RATE_NUM, SATEMU_REG_RATE_DEN, SATEMU_REG_OVERHEAD, SATEMU_REG_DELAY,
    SATEMU_REG_QUEUE_FRAMES, SATEMU_REG_QUEUE_BYTES, SATEMU_REG_MIN_LEN, SATEMU_REG_MAX_LEN,
    SATEMU_REG_BOD_FLAGS, SATEMU_REG_BOD_SLOT_CYCLES, SATEMU_REG_BOD_SLOTS,
    SATEMU_REG_BOD_SLOT_BYTES, SATEMU_REG_BOD_CRA, SATEMU_REG_BOD_RBDC_MAX,
    SATEMU_REG_BOD_RBDC_TIMEOUT, SATEMU_REG_BOD_VBDC_MAX, SATEMU_REG_BOD_REQ_PERIOD,
    SATEMU_REG_BOD_LATENCY, SATEMU_REG_BOD_BG_COUNT, SATEMU_REG_BOD_BG0, SATEMU_REG_BOD_BG1,
    SATEMU_REG_BOD_BG2, SATEMU_REG_BOD_BG3, SATEMU_REG_BOD_BG4, SATEMU_REG_BOD_BG5,
    SATEMU_REG_BOD_BG6, SATEMU_REG_BOD_BG7,
};

/* PORT_COUNTERS at the last RESET_STATS, per channel. */
static uint32_t port_base[2];

/* The statistics counters, in GET_STATS order: their 64-bit counts since the last RESET_STATS,
 * and the raw register values at the last fold. */
static const uint16_t counter_regs[] = {
    SATEMU_REG_RX_FRAMES, SATEMU_REG_RX_BYTES, SATEMU_REG_TX_FRAMES, SATEMU_REG_TX_BYTES,
    SATEMU_REG_DROP_RUNT, SATEMU_REG_DROP_OVERSIZE, SATEMU_REG_DROP_ERROR,
    SATEMU_REG_DROP_LOSS, SATEMU_REG_DROP_QUEUE, SATEMU_REG_DROP_MEM,
    SATEMU_REG_DROP_OVERRUN, SATEMU_REG_LATE,
};
#define COUNTERS (sizeof(counter_regs) / sizeof(counter_regs[0]))
static uint64_t counts[2][COUNTERS], counts_raw[2][COUNTERS];

/* ---- 128-bit unsigned arithmetic, enough for the budget (RV32 has no __int128) ---------- */
struct u128 { uint64_t hi, lo; };

static struct u128 mul64(uint64_t a, uint64_t b)
{
    uint64_t a0 = (uint32_t)a, a1 = a >> 32, b0 = (uint32_t)b, b1 = b >> 32;
    uint64_t p00 = a0 * b0, p01 = a0 * b1, p10 = a1 * b0, p11 = a1 * b1;
    uint64_t mid = (p00 >> 32) + (uint32_t)p01 + (uint32_t)p10;
    struct u128 r = { p11 + (p01 >> 32) + (p10 >> 32) + (mid >> 32), (mid << 32) | (uint32_t)p00 };
    return r;
}

/* a * b for a 128-bit a and a 64-bit b: exact while the result fits 128 bits. */
static struct u128 mul_small(struct u128 a, uint64_t b)
{
    struct u128 lo = mul64(a.lo, b);
    struct u128 r = { a.hi * b + lo.hi, lo.lo };
    return r;
}

static int ge128(struct u128 a, struct u128 b)
{
    return a.hi != b.hi ? a.hi > b.hi : a.lo >= b.lo;
}

static struct u128 sub128(struct u128 a, struct u128 b)
{
    struct u128 r = { a.hi - b.hi - (a.lo < b.lo), a.lo - b.lo };
    return r;
}

static struct u128 add128(struct u128 a, struct u128 b)
{
    struct u128 r = { a.hi + b.hi + (a.lo + b.lo < a.lo), a.lo + b.lo };
    return r;
}

/* floor(n / d) for d != 0, by shift and subtract; the quotient must fit 64 bits. */
static uint64_t div128(struct u128 n, struct u128 d)
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

/* The fastest the profile's frames can come: a frame of L bytes at most every
 * (L + ovh) * t_num / t_den cycles. BoD: the whole carrier, bod_slot_bytes of slot payload per
 * bod_slot_cycles (ovh = overhead); shaped: the shaper's q + num/den cycles a byte (ovh =
 * overhead); not shaped: the port's line rate with 24 bytes of preamble, FCS and gap.
 * satemu.channel_model.byte_time is the reference. */
static void byte_time(const struct satemu_hw *hw, const uint64_t *f, struct u128 *t_num,
                      uint64_t *t_den, uint64_t *ovh)
{
    *ovh = f[F_OVERHEAD];
    t_num->hi = 0;
    if (f[F_BOD_FLAGS] & SATEMU_BOD_ENABLE) {
        t_num->lo = f[F_BOD_SLOT_CYCLES];
        *t_den = f[F_BOD_SLOT_BYTES];
    } else if (f[F_RATE_Q] || f[F_RATE_NUM]) {
        *t_num = mul64(f[F_RATE_Q], f[F_RATE_DEN]);
        t_num->lo += f[F_RATE_NUM];
        t_num->hi += t_num->lo < f[F_RATE_NUM];
        *t_den = f[F_RATE_DEN];
    } else {
        t_num->lo = 8 * (uint64_t)hw->f_clk;
        *t_den = hw->port_bps;
        *ovh = 24;
    }
}

uint64_t satemu_budget_words(const struct satemu_hw *hw, const uint64_t *f)
{
    uint64_t floor_ = hw->latency_floor;
    uint64_t window = (f[F_DELAY] > floor_ ? f[F_DELAY] : floor_) + floor_;
    struct u128 t_num;
    uint64_t den, ovh;
    byte_time(hw, f, &t_num, &den, &ovh);
    struct u128 num = mul_small(t_num, f[F_MIN_LEN] + ovh);   /* cycles a frame, times den */
    struct u128 top = mul64(window, den);
    uint64_t in_delay = div128(top, num) + 2;
    uint64_t queued = f[F_QUEUE_FRAMES];
    if (hw->queue_depth < queued)
        queued = hw->queue_depth;
    if (f[F_QUEUE_BYTES] / f[F_MIN_LEN] < queued)
        queued = f[F_QUEUE_BYTES] / f[F_MIN_LEN];
    return (in_delay + queued) * (1 + (f[F_MIN_LEN] + 7) / 8);
}

/* Delay-line words per 65536 cycles the profile can demand at worst, as n / d: a frame of L
 * bytes takes 1 + ceil(L/8) <= (L + 15) / 8 words and arrives at most every T * (L + ovh) cycles,
 * T = t_num / t_den cycles per byte (byte_time). (L + 15) / (L + ovh)
 * is largest at min_len when ovh < 15, else at max_len. satemu.channel_model.delay_line_traffic
 * is the reference. */
static void traffic(const struct satemu_hw *hw, const uint64_t *f, struct u128 *n, struct u128 *d)
{
    struct u128 t_num;
    uint64_t t_den, ovh;
    byte_time(hw, f, &t_num, &t_den, &ovh);
    uint64_t len = ovh < 15 ? f[F_MIN_LEN] : f[F_MAX_LEN];
    *n = mul64((len + 15) << 16, t_den);
    *d = mul_small(t_num, 8 * (len + ovh));
}

/* ceil(n / d), or UINT64_MAX when that does not fit 64 bits (or d = 0). */
static uint64_t ceil_div_sat(struct u128 n, struct u128 d)
{
    struct u128 one = { 0, 1 };
    n = add128(n, sub128(d, one));                /* ceil(n / d) = floor((n + d - 1) / d) */
    if (d.hi == 0 && n.hi >= d.lo)                /* n >= d * 2^64 */
        return UINT64_MAX;
    return div128(n, d);
}

uint64_t satemu_traffic_wpc(const struct satemu_hw *hw, const uint64_t *f)
{
    struct u128 n, d;
    traffic(hw, f, &n, &d);
    return ceil_div_sat(n, d);
}

static void bad(struct satemu_verdict *v, const uint64_t *f, int field, uint64_t lo, uint64_t hi)
{
    v->status = SATEMU_STATUS_BAD_FIELD;
    v->field = (uint8_t)field;
    v->value = f[field];
    v->lo = lo;
    v->hi = hi;
}

#define BAD(...) do { bad(v, f, __VA_ARGS__); return; } while (0)

/* The BoD fields, only when BoD is on: satemu.bod_model.check_bod's rules in its order. */
static void validate_bod(const struct satemu_hw *hw, int channel, const uint64_t *f,
                         struct satemu_verdict *v)
{
    if (!((hw->bod_mask >> channel) & 1))
        BAD(F_BOD_FLAGS, 0, 0);
    if (f[F_BOD_SLOT_CYCLES] < 32)
        BAD(F_BOD_SLOT_CYCLES, 32, 0xFFFFFFFFu);
    if (f[F_BOD_SLOTS] < 1)
        BAD(F_BOD_SLOTS, 1, 0xFFFFu);
    if (f[F_BOD_SLOT_BYTES] < 1)
        BAD(F_BOD_SLOT_BYTES, 1, 0xFFFFu);
    uint64_t carrier = f[F_BOD_SLOTS] * SATEMU_BOD_RATE_ONE;
    if (f[F_BOD_CRA] > carrier)
        BAD(F_BOD_CRA, 0, carrier);
    if (f[F_BOD_RBDC_MAX] > carrier)
        BAD(F_BOD_RBDC_MAX, 0, carrier);
    if (f[F_BOD_REQ_PERIOD] < 1)
        BAD(F_BOD_REQ_PERIOD, 1, 0xFFFFu);
    if (f[F_BOD_LATENCY] < 1 || f[F_BOD_LATENCY] > SATEMU_BOD_LATENCY_MAX)
        BAD(F_BOD_LATENCY, 1, SATEMU_BOD_LATENCY_MAX);
    if (f[F_BOD_BG_COUNT] < 1 || f[F_BOD_BG_COUNT] > SATEMU_BOD_BG_LEVELS)
        BAD(F_BOD_BG_COUNT, 1, SATEMU_BOD_BG_LEVELS);
    for (unsigned i = 0; i < f[F_BOD_BG_COUNT]; i++) {
        /* slots (bits 15..0) at most bod_slots, for superframes (bits 31..16) at least 1 */
        uint64_t level = f[F_BOD_BG0 + i];
        if ((level & 0xFFFFu) > f[F_BOD_SLOTS] || (level >> 16) < 1)
            BAD(F_BOD_BG0 + (int)i, 1u << 16, 0xFFFF0000u | f[F_BOD_SLOTS]);
    }
}

void satemu_validate(const struct satemu_hw *hw, int channel, const uint64_t *f,
                     struct satemu_verdict *v)
{
    memset(v, 0, sizeof(*v));
    for (int i = 0; i < SATEMU_PROFILE_FIELDS; i++) {
        uint64_t max = satemu_profile_widths[i] >= 64 ? UINT64_MAX
                     : ((uint64_t)1 << satemu_profile_widths[i]) - 1;
        if (f[i] > max)
            BAD(i, 0, max);
    }
    if (f[F_LOSS_MODE] > 2)
        BAD(F_LOSS_MODE, 0, 2);
    if (f[F_RATE_DEN] < 1)
        BAD(F_RATE_DEN, 1, 0xFFFFFFFFu);
    if (f[F_RATE_NUM] >= f[F_RATE_DEN])
        BAD(F_RATE_NUM, 0, f[F_RATE_DEN] - 1);
    if (f[F_RATE_Q] == 0 && f[F_RATE_NUM] && 8 * f[F_RATE_NUM] < f[F_RATE_DEN])
        BAD(F_RATE_NUM, (f[F_RATE_DEN] + 7) / 8, f[F_RATE_DEN] - 1);
    if (f[F_MIN_LEN] < 1 || f[F_MIN_LEN] > f[F_MAX_LEN])
        BAD(F_MIN_LEN, 1, f[F_MAX_LEN]);
    if (f[F_MAX_LEN] > hw->max_frame)
        BAD(F_MAX_LEN, f[F_MIN_LEN], hw->max_frame);
    if (f[F_QUEUE_FRAMES] < 1 || f[F_QUEUE_FRAMES] > hw->queue_depth)
        BAD(F_QUEUE_FRAMES, 1, hw->queue_depth);
    if (f[F_QUEUE_BYTES] < f[F_MIN_LEN])
        BAD(F_QUEUE_BYTES, f[F_MIN_LEN], 0xFFFFFFFFu);
    if (f[F_BOD_FLAGS] & SATEMU_BOD_ENABLE) {
        validate_bod(hw, channel, f, v);
        if (v->status)
            return;
    }
    /* The channel of a profile does not change the bound: both regions are the same size. */
    uint64_t need = satemu_budget_words(hw, f);
    if (need > hw->mem_words[0]) {
        v->status = SATEMU_STATUS_BUDGET;
        v->value = need;
        v->hi = hw->mem_words[0];
        return;
    }
    /* Then its throughput, when the board bounds it: reject when n > mem_wpc * d, exactly. */
    if (hw->mem_wpc) {
        struct u128 n, d;
        traffic(hw, f, &n, &d);
        if (!ge128(mul_small(d, hw->mem_wpc), n)) {
            v->status = SATEMU_STATUS_THROUGHPUT;
            v->value = ceil_div_sat(n, d);
            v->hi = hw->mem_wpc;
        }
    }
}

/* ---- requests ---------------------------------------------------------------------------- */

static uint64_t get_le(const uint8_t *p, int n)
{
    uint64_t v = 0;
    for (int i = n - 1; i >= 0; i--)
        v = (v << 8) | p[i];
    return v;
}

static uint8_t *put_le(uint8_t *p, uint64_t v, int n)
{
    for (int i = 0; i < n; i++, v >>= 8)
        *p++ = (uint8_t)v;
    return p;
}

static uint64_t read_field(const struct satemu_hw *hw, int ch, unsigned word, int width)
{
    uint64_t v = hw->read(hw->ctx, ch, word);
    if (width > 32)
        v |= (uint64_t)hw->read(hw->ctx, ch, word + 1) << 32;
    return v;
}

static size_t status_only(uint8_t *out, uint8_t status)
{
    out[0] = status;
    return 1;
}

static uint64_t counter_mask(const struct satemu_hw *hw)
{
    return hw->counter_bits && hw->counter_bits < 64 ? (UINT64_C(1) << hw->counter_bits) - 1
                                                     : UINT64_MAX;
}

/* Adds what counter i of channel ch counted since its last fold, from the snapshot now in the
 * registers (any snapshot taken since that fold will do). */
static void fold_one(const struct satemu_hw *hw, int ch, size_t i)
{
    uint64_t raw = read_field(hw, ch, counter_regs[i], 64);
    counts[ch][i] += (raw - counts_raw[ch][i]) & counter_mask(hw);
    counts_raw[ch][i] = raw;
}

/* The next counter satemu_fold_step folds, channel-major; 2 * COUNTERS: none until the next
 * satemu_fold_start. */
static size_t fold_next = 2 * COUNTERS;

void satemu_fold_start(const struct satemu_hw *hw)
{
    hw->stats(hw->ctx, SATEMU_STATS_SNAPSHOT);
    fold_next = 0;
}

int satemu_fold_step(const struct satemu_hw *hw)
{
    if (fold_next >= 2 * COUNTERS)
        return 0;
    fold_one(hw, (int)(fold_next / COUNTERS), fold_next % COUNTERS);
    fold_next++;
    return 1;
}

void satemu_fold_counters(const struct satemu_hw *hw)
{
    satemu_fold_start(hw);
    while (satemu_fold_step(hw))
        ;
}

static int pending(const struct satemu_hw *hw)
{
    return (hw->read(hw->ctx, 0, SATEMU_REG_STATUS) | hw->read(hw->ctx, 1, SATEMU_REG_STATUS)) & 1;
}

size_t satemu_handle(const struct satemu_hw *hw, const struct satemu_frame *req, uint8_t *out)
{
    const uint8_t *p = req->payload;
    switch (req->op) {
    case SATEMU_OP_HELLO: {
        if (req->length != 2)
            return status_only(out, SATEMU_STATUS_BAD_LENGTH);
        uint8_t *o = out + 1;
        out[0] = get_le(p, 2) == SATEMU_PROTOCOL_VERSION ? SATEMU_STATUS_OK
                                                         : SATEMU_STATUS_BAD_VERSION;
        o = put_le(o, SATEMU_PROTOCOL_VERSION, 2);
        o = put_le(o, SATEMU_CAP_CHANNELS | (hw->bod_mask ? SATEMU_CAP_BOD : 0), 4);
        o = put_le(o, hw->f_clk, 4);
        o = put_le(o, hw->queue_depth, 2);
        o = put_le(o, hw->max_frame, 2);
        o = put_le(o, hw->latency_floor, 4);
        o = put_le(o, hw->mem_words[0], 4);
        o = put_le(o, hw->port_bps, 8);
        o = put_le(o, hw->mem_wpc, 4);
        return (size_t)(o - out);
    }
    case SATEMU_OP_SET_PROFILE: {
        if (req->length != 1 + 8 * SATEMU_PROFILE_FIELDS)
            return status_only(out, SATEMU_STATUS_BAD_LENGTH);
        if (p[0] > 1)
            return status_only(out, SATEMU_STATUS_BAD_CHANNEL);
        uint64_t f[SATEMU_PROFILE_FIELDS];
        for (int i = 0; i < SATEMU_PROFILE_FIELDS; i++)
            f[i] = get_le(p + 1 + 8 * i, 8);
        struct satemu_verdict v;
        satemu_validate(hw, p[0], f, &v);
        out[0] = v.status;
        if (v.status == SATEMU_STATUS_BAD_FIELD) {
            uint8_t *o = out + 1;
            *o++ = v.field;
            o = put_le(o, v.value, 8);
            o = put_le(o, v.lo, 8);
            o = put_le(o, v.hi, 8);
            return (size_t)(o - out);
        }
        if (v.status == SATEMU_STATUS_BUDGET || v.status == SATEMU_STATUS_THROUGHPUT) {
            uint8_t *o = put_le(out + 1, v.value, 8);
            o = put_le(o, v.hi, 8);
            return (size_t)(o - out);
        }
        for (int i = 0; i < SATEMU_PROFILE_FIELDS; i++) {
            hw->write(hw->ctx, p[0], profile_regs[i], (uint32_t)f[i]);
            if (satemu_profile_widths[i] > 32)
                hw->write(hw->ctx, p[0], profile_regs[i] + 1, (uint32_t)(f[i] >> 32));
        }
        hw->write(hw->ctx, p[0], SATEMU_REG_MEM_BASE, hw->mem_base[p[0]]);
        hw->write(hw->ctx, p[0], SATEMU_REG_MEM_SIZE, hw->mem_words[p[0]]);
        return 1;
    }
    case SATEMU_OP_GET_PROFILE: {
        if (req->length != 1)
            return status_only(out, SATEMU_STATUS_BAD_LENGTH);
        if (p[0] > 1)
            return status_only(out, SATEMU_STATUS_BAD_CHANNEL);
        uint8_t *o = out;
        *o++ = SATEMU_STATUS_OK;
        for (int i = 0; i < SATEMU_PROFILE_FIELDS; i++)
            o = put_le(o, read_field(hw, p[0], profile_regs[i], satemu_profile_widths[i]), 8);
        return (size_t)(o - out);
    }
    case SATEMU_OP_COMMIT:
        if (req->length != 1)
            return status_only(out, SATEMU_STATUS_BAD_LENGTH);
        if (pending(hw))
            return status_only(out, SATEMU_STATUS_BUSY);
        /* The region of a channel never changes, so LAYOUT is always safe to ask for: while
         * frames are stored the gateware keeps the (same) region and applies the rest. */
        hw->commit(hw->ctx, SATEMU_COMMIT_APPLY | SATEMU_COMMIT_LAYOUT | (p[0] & SATEMU_COMMIT_RESEED));
        return status_only(out, SATEMU_STATUS_OK);
    case SATEMU_OP_GET_STATS: {
        /* After the counters (counter_regs), the gauges and the snapshot's cycle, as read. */
        static const uint16_t gauge_regs[] = {
            SATEMU_REG_QUEUE_FRAMES_NOW, SATEMU_REG_QUEUE_BYTES_NOW, SATEMU_REG_QUEUE_FRAMES_HWM,
            SATEMU_REG_QUEUE_BYTES_HWM, SATEMU_REG_MEM_WORDS_NOW, SATEMU_REG_MEM_WORDS_HWM,
            SATEMU_REG_SNAPSHOT_CYCLE,
        };
        if (req->length != 1)
            return status_only(out, SATEMU_STATUS_BAD_LENGTH);
        if (p[0] > 1)
            return status_only(out, SATEMU_STATUS_BAD_CHANNEL);
        satemu_fold_counters(hw);
        uint8_t *o = out;
        *o++ = SATEMU_STATUS_OK;
        for (size_t i = 0; i < COUNTERS; i++)
            o = put_le(o, counts[p[0]][i], 8);
        for (size_t i = 0; i < sizeof(gauge_regs) / sizeof(gauge_regs[0]); i++)
            o = put_le(o, read_field(hw, p[0], gauge_regs[i], 64), 8);
        /* PORT_COUNTERS: counted since the last RESET_STATS (mod 2^32). */
        o = put_le(o, hw->port_drops ? (uint32_t)(hw->port_drops(hw->ctx, p[0]) - port_base[p[0]]) : 0, 8);
        return (size_t)(o - out);
    }
    case SATEMU_OP_RESET_STATS:
        if (req->length != 0)
            return status_only(out, SATEMU_STATUS_BAD_LENGTH);
        hw->stats(hw->ctx, SATEMU_STATS_CLEAR);
        for (int ch = 0; ch < 2; ch++) {
            port_base[ch] = hw->port_drops ? hw->port_drops(hw->ctx, ch) : 0;
            for (size_t i = 0; i < COUNTERS; i++)
                counts[ch][i] = counts_raw[ch][i] = 0;    /* the clear zeroed the registers */
        }
        fold_next = 2 * COUNTERS;    /* a fold under way would read a snapshot from before */
        return status_only(out, SATEMU_STATUS_OK);
    case SATEMU_OP_BOD_TRACE: {
        /* channel u8, first superframe u32, max records u8 */
        if (req->length != 6)
            return status_only(out, SATEMU_STATUS_BAD_LENGTH);
        if (p[0] > 1)
            return status_only(out, SATEMU_STATUS_BAD_CHANNEL);
        if (!((hw->bod_mask >> p[0]) & 1))
            return status_only(out, SATEMU_STATUS_NO_BOD);
        /* bod_start is the cycle superframe 0 began. A committed layout applies when the
         * channel takes it, which may fall within this answer: bod_start is read before and
         * after bod_count (two words, LSW first) until both reads agree, so the count and the
         * start belong to the same run of the block. */
        uint64_t start = read_field(hw, p[0], SATEMU_REG_BOD_START, SATEMU_REG_BOD_START_WIDTH);
        uint64_t again;
        uint32_t count;
        for (;;) {
            count = hw->read(hw->ctx, p[0], SATEMU_REG_BOD_COUNT);
            again = read_field(hw, p[0], SATEMU_REG_BOD_START, SATEMU_REG_BOD_START_WIDTH);
            if (again == start)
                break;
            start = again;
        }
        uint32_t first = (uint32_t)get_le(p + 1, 4);
        /* The ring holds the last bod_ring superframes; older ones are overwritten. */
        if (count > hw->bod_ring && first < count - hw->bod_ring)
            first = count - hw->bod_ring;
        uint32_t n = first < count ? count - first : 0;
        if (n > p[5])
            n = p[5];
        if (n > SATEMU_BOD_TRACE_MAX)
            n = SATEMU_BOD_TRACE_MAX;
        uint8_t *o = out;
        *o++ = SATEMU_STATUS_OK;
        o = put_le(o, count, 4);
        o = put_le(o, start, 8);
        o = put_le(o, first, 4);
        *o++ = (uint8_t)n;
        for (uint32_t i = 0; i < n; i++) {
            /* The ring's read port answers a cycle after the select: any bus read is later. */
            hw->write(hw->ctx, p[0], SATEMU_REG_BOD_SEL, first + i);
            for (unsigned w = 0; w < SATEMU_BOD_RECORD_WORDS; w++)
                o = put_le(o, hw->read(hw->ctx, p[0], SATEMU_REG_BOD_REC + w), 4);
        }
        return (size_t)(o - out);
    }
    default:
        return status_only(out, SATEMU_STATUS_BAD_OPCODE);
    }
}
