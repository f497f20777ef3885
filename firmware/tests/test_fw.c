/* SPDX-License-Identifier: BSD-2-Clause */
/* The firmware's command layer on the host: the profile checks against the shared vectors, and
 * every request against a register file that stands in for the two channels' register banks,
 * with a BoD statistics ring behind the return channel's bod_sel/bod_rec and a memory that
 * holds each channel's frame-log ring. Fields are named by the generated enum satemu_field, so
 * the same test runs against any declaration of them. */
#include <stdio.h>
#include <string.h>

#include "requests.h"
#include "stats.h"
#include "validate.h"
#include "satemu_profile_vectors.h"
#include "satemu_bod_vectors.h"
#include "satemu_hello_vectors.h"
#include "satemu_log_vectors.h"
#include "satemu_write_vector.h"
#include "satemu_terminal_vectors.h"
#include "commit.h"
#include "terminals.h"

/* The tests' box tells terminals apart and has jitter (limits, below): HELLO announces both. */
#define TERMS (SATEMU_CAP_TERMINALS | SATEMU_CAP_JITTER)

#define N(a) (sizeof(a) / sizeof((a)[0]))

static int checks, failures;

static void expect(int ok, const char *what, long i)
{
    checks++;
    if (!ok) {
        failures++;
        printf("FAIL %s #%ld\n", what, i);
    }
}

struct bank {
    uint32_t regs[2][SATEMU_REG_WORDS];
    unsigned commits, last_commit, stats;
    uint32_t port[2];
    uint32_t ring[BOD_VEC_RING][SATEMU_BOD_RECORD_WORDS];   /* the return channel's BoD ring */
    int restart;                /* the next read of bod_count restarts the block: count 0 ... */
    uint64_t restart_start;     /* ... from this bod_start on */
    /* The commit as the gateware takes it: STATUS shows it pending for `hold` more reads (`slow`
     * after each commit); a layout commit is kept out (STATUS bit 1) on channels not empty
     * (bit 2) or in `keep`. */
    unsigned hold, slow, keep, kept;
    /* The frame log: each channel's ring in the memory, at log_rings[ch] (LOG_VEC_RING records,
     * two words each); reads elsewhere are counted. The first read of word `torn_at` of channel
     * `torn_ch`'s ring (a record's word 1), while `torn` is set, overwrites that record with
     * `later`, as the channel would. */
    uint64_t mem[2][2 * LOG_VEC_RING];
    unsigned mem_reads, mem_outside;
    int torn, torn_ch;
    unsigned torn_at;
    uint64_t later[2];
    /* LOG_CTL writes to both channels at once: how many, and the last value. */
    unsigned log_ctls, last_log_ctl;
    int carry;                  /* the next read of log_count's lower word sees it carry */
    /* The timeline store (TL_ENTRIES entries, two words each); the next commit is taken late
     * (STATUS bit 4 until the commit after it) when `late_next` is set. */
    uint64_t tl[2 * 64];
    unsigned late_next, late;
    /* Each channel's jitter table as the gateware takes JIT_SEL and JIT_VAL (each write of
     * JIT_VAL lands at JIT_SEL and advances it), and how many entries were written. */
    uint16_t jit[2][2 * SATEMU_JITTER_TABLE];
    unsigned jit_writes;
};
#define TL_ENTRIES 64u

/* The frame-log rings of the tests below: 2^LOG_BITS records each, at these DRAM words. */
#define LOG_BITS 5u
_Static_assert(LOG_VEC_RING == 1u << LOG_BITS, "the READ_LOG vectors' ring");
static const uint32_t log_rings[2] = { 0x00001000u, 0x00802000u };

static void set_log(struct bank *b, int ch, uint64_t count, uint32_t lost)
{
    b->regs[ch][SATEMU_REG_LOG_COUNT] = (uint32_t)count;
    b->regs[ch][SATEMU_REG_LOG_COUNT + 1] = (uint32_t)(count >> 32);
    b->regs[ch][SATEMU_REG_LOG_LOST] = lost;
}

static void set_bod(struct bank *b, uint32_t count, uint64_t start)
{
    b->regs[SATEMU_CHANNEL_RETURN][SATEMU_REG_BOD_COUNT] = count;
    b->regs[SATEMU_CHANNEL_RETURN][SATEMU_REG_BOD_START] = (uint32_t)start;
    b->regs[SATEMU_CHANNEL_RETURN][SATEMU_REG_BOD_START + 1] = (uint32_t)(start >> 32);
}

static uint32_t rd(void *ctx, int ch, unsigned word)
{
    struct bank *b = ctx;
    /* bod_rec shows the ring entry of superframe bod_sel, as the gateware's ring does. */
    if (ch == SATEMU_CHANNEL_RETURN && word >= SATEMU_REG_BOD_REC
        && word < SATEMU_REG_BOD_REC + SATEMU_BOD_RECORD_WORDS)
        return b->ring[b->regs[ch][SATEMU_REG_BOD_SEL] % BOD_VEC_RING][word - SATEMU_REG_BOD_REC];
    if (ch == SATEMU_CHANNEL_RETURN && word == SATEMU_REG_BOD_COUNT && b->restart) {
        uint32_t v = b->regs[ch][word];      /* the old run's count, then the restart */
        b->restart = 0;
        set_bod(b, 0, b->restart_start);
        return v;
    }
    if (word == SATEMU_REG_LOG_COUNT && b->carry) {     /* a record taken across the carry */
        uint64_t count = (uint64_t)b->regs[ch][word + 1] << 32 | b->regs[ch][word];
        b->carry = 0;
        set_log(b, ch, count + 2, b->regs[ch][SATEMU_REG_LOG_LOST]);
        return b->regs[ch][word];
    }
    if (word == SATEMU_REG_STATUS) {
        uint32_t v = b->regs[ch][word] | ((b->kept >> ch) & 1u) << 1 | (b->hold ? 1u : 0u)
                     | (b->late ? SATEMU_STATUS_REG_LATE : 0u);
        if (b->hold)
            b->hold--;
        return v;
    }
    return b->regs[ch][word];
}
static void wr(void *ctx, int ch, unsigned word, uint32_t v)
{
    struct bank *b = ctx;
    if (word == SATEMU_REG_JIT_VAL) {
        uint32_t sel = b->regs[ch][SATEMU_REG_JIT_SEL] % (2 * SATEMU_JITTER_TABLE);
        b->jit[ch][sel] = (uint16_t)v;
        b->regs[ch][SATEMU_REG_JIT_SEL] = (sel + 1) % (2 * SATEMU_JITTER_TABLE);
        b->jit_writes++;
    }
    b->regs[ch][word] = v;
}
static void commit(void *ctx, unsigned flags)
{
    struct bank *b = ctx;
    b->commits++;
    b->last_commit = flags;
    b->hold = b->slow;
    b->kept = 0;
    b->late = b->late_next;
    b->late_next = 0;
    for (int ch = 0; ch < SATEMU_CHANNELS; ch++)
        if ((flags & SATEMU_COMMIT_LAYOUT)
            && (((b->keep >> ch) & 1) || !(b->regs[ch][SATEMU_REG_STATUS] & 4u)))
            b->kept |= 1u << ch;
}
static void stats(void *ctx, unsigned flags) { ((struct bank *)ctx)->stats |= flags; }
static uint64_t mem_read(void *ctx, uint32_t word)
{
    struct bank *b = ctx;
    b->mem_reads++;
    for (int ch = 0; ch < SATEMU_CHANNELS; ch++) {
        uint32_t at = word - log_rings[ch];
        if (at >= 2 * LOG_VEC_RING)
            continue;
        uint64_t v = b->mem[ch][at];
        if (b->torn && ch == b->torn_ch && at == b->torn_at) {
            b->torn = 0;
            b->mem[ch][at - 1] = b->later[0];
            b->mem[ch][at] = b->later[1];
        }
        return v;
    }
    b->mem_outside++;
    return 0xdeadbeefdeadbeefull;
}
/* LOG_CTL of both channels: the ring's bits, and with LOG_CLEAR their counts start again. */
static void log_ctl(void *ctx, unsigned value)
{
    struct bank *b = ctx;
    b->log_ctls++;
    b->last_log_ctl = value;
    for (int ch = 0; ch < SATEMU_CHANNELS; ch++) {
        b->regs[ch][SATEMU_REG_LOG_CTL] = value & SATEMU_LOG_BITS_MAX;
        if (value & SATEMU_LOG_CLEAR)
            set_log(b, ch, 0, 0);
    }
}
static uint32_t port_count(void *ctx, int ch, unsigned counter)
{
    return counter == SATEMU_PORT_DROP_PREAMBLE ? ((struct bank *)ctx)->port[ch] : 0;
}

static void tl_write(void *ctx, uint32_t word, uint64_t value)
{
    struct bank *b = ctx;
    expect(word < 2 * TL_ENTRIES, "timeline store write within the store", (long)word);
    if (word < 2 * TL_ENTRIES)
        b->tl[word] = value;
}
static uint64_t tl_load(void *ctx, uint32_t word)
{
    struct bank *b = ctx;
    expect(word < 2 * TL_ENTRIES, "timeline store read within the store", (long)word);
    return word < 2 * TL_ENTRIES ? b->tl[word] : 0;
}

static size_t request(const struct satemu_hw *hw, uint8_t op, const uint8_t *payload, size_t len,
                      uint8_t *resp)
{
    struct satemu_frame f = { 1, op, (uint16_t)len, payload };
    return satemu_handle(hw, &f, resp);
}

static uint64_t get_u64(const uint8_t *p)
{
    uint64_t v = 0;
    for (int k = 7; k >= 0; k--)
        v = (v << 8) | p[k];
    return v;
}

#define GEN 0x5a7e0001u            /* the generation of the loads below, unless they say */

static void put_u32(uint8_t *p, uint32_t v)
{
    for (int k = 0; k < 4; k++)
        p[k] = (uint8_t)(v >> (8 * k));
}

static uint32_t get_u32(const uint8_t *p)
{
    return (uint32_t)get_u64((const uint8_t[8]){ p[0], p[1], p[2], p[3] });
}

/* A SET_PROFILE request for channel ch: the channel, the generation, then each field as a u64. */
static void profile_request_gen(uint8_t *req, int ch, uint32_t gen, const uint64_t *fields)
{
    req[0] = (uint8_t)ch;
    put_u32(req + 1, gen);
    for (int i = 0; i < SATEMU_PROFILE_FIELDS; i++)
        for (int k = 0; k < 8; k++)
            req[5 + 8 * i + k] = (uint8_t)(fields[i] >> (8 * k));
}

static void profile_request(uint8_t *req, int ch, const uint64_t *fields)
{
    profile_request_gen(req, ch, GEN, fields);
}

/* GET_PROFILE of a channel's staged profile or the one in force, into resp. */
static size_t get_profile(const struct satemu_hw *hw, int ch, int which, uint8_t *resp)
{
    uint8_t p[2] = { (uint8_t)ch, (uint8_t)which };
    return request(hw, SATEMU_OP_GET_PROFILE, p, 2, resp);
}

/* COMMIT of generation gen; the answer's status, and its second byte in *detail. */
static int commit_gen(const struct satemu_hw *hw, uint32_t gen, uint8_t flags, uint8_t *resp,
                      size_t *n)
{
    uint8_t p[5] = { flags };
    put_u32(p + 1, gen);
    resp[0] = 0xEE;
    *n = request(hw, SATEMU_OP_COMMIT, p, 5, resp);
    return resp[0];
}

/* Both channels staged with `fields` under gen: 1 if both were accepted. */
static int stage(const struct satemu_hw *hw, uint32_t gen, const uint64_t *fwd, const uint64_t *ret)
{
    uint8_t req[SATEMU_MAX_PAYLOAD], resp[SATEMU_MAX_PAYLOAD];
    profile_request_gen(req, 0, gen, fwd);
    int ok = request(hw, SATEMU_OP_SET_PROFILE, req, SATEMU_SET_PROFILE_REQUEST_BYTES, resp) == 1
             && resp[0] == SATEMU_STATUS_OK;
    profile_request_gen(req, 1, gen, ret);
    return ok && request(hw, SATEMU_OP_SET_PROFILE, req, SATEMU_SET_PROFILE_REQUEST_BYTES, resp)
                 == 1 && resp[0] == SATEMU_STATUS_OK;
}

/* The profile of `ch` that GET_PROFILE reports (which) equals `fields`. */
static int profile_is(const struct satemu_hw *hw, int ch, int which, const uint64_t *fields)
{
    uint8_t resp[SATEMU_MAX_PAYLOAD];
    if (get_profile(hw, ch, which, resp) != 1 + SATEMU_PROFILE_BYTES || resp[0] != SATEMU_STATUS_OK)
        return 0;
    for (int i = 0; i < SATEMU_PROFILE_FIELDS; i++)
        if (get_u64(resp + 1 + 8 * i) != fields[i])
            return 0;
    return 1;
}

/* READ_LOG: the exact answers of the shared vectors, from rings that hold the case's state in
 * the memory and log_count (two words) and log_lost in the registers, a torn record
 * overwritten while it is read; then CLEAR_LOG, a count read across its carry, HELLO's view of
 * the log, and the log set up by satemu_requests_init. */
static void frame_log(struct satemu_hw *hw, struct bank *b)
{
    uint8_t resp[SATEMU_MAX_PAYLOAD];
    size_t n;
    struct satemu_hw box = *hw;
    box.mem_read = mem_read;
    box.log_ctl = log_ctl;
    for (size_t i = 0; i < N(log_cases); i++) {
        const struct satemu_hw *h = &box;
        unsigned st = log_cases[i].state;
        box.log_bits = log_cases[i].records[0] || log_cases[i].records[1] ? LOG_BITS : 0;
        for (int ch = 0; ch < SATEMU_CHANNELS; ch++) {
            expect(!log_cases[i].records[ch] || log_cases[i].records[ch] == LOG_VEC_RING,
                   "a vector's ring", (long)i);
            box.log[ch].base = log_rings[ch];
            box.log[ch].words = log_cases[i].records[ch] ? 2 * LOG_VEC_RING : 0;
            for (unsigned s = 0; s < LOG_VEC_RING; s++) {
                b->mem[ch][2 * s] = log_states[st].slots[s][0];
                b->mem[ch][2 * s + 1] = log_states[st].slots[s][1];
            }
            set_log(b, ch, log_states[st].count, log_states[st].lost);
        }
        b->torn = log_cases[i].torn;
        b->torn_ch = log_cases[i].req_len ? log_cases[i].req[0] : 0;
        b->torn_at = 2 * (unsigned)(log_cases[i].torn_record % LOG_VEC_RING) + 1;
        b->later[0] = log_cases[i].later[0];
        b->later[1] = log_cases[i].later[1];
        b->mem_outside = b->log_ctls = 0;
        n = request(h, SATEMU_OP_READ_LOG, log_cases[i].req, log_cases[i].req_len, resp);
        int same = n == log_cases[i].resp_len && !memcmp(resp, log_cases[i].resp, n);
        if (!same)
            printf("  log case %zu: %zu bytes, status %u\n", i, n, resp[0]);
        expect(same, "read log", (long)i);
        expect(!b->mem_outside && !b->torn && !b->log_ctls, "read log: the ring only", (long)i);
    }

    /* A count read across the carry of its lower word: never half of each. */
    box.log_bits = LOG_BITS;
    box.log[1].words = 2 * LOG_VEC_RING;
    set_log(b, 1, 0x1ffffffffull, 7);
    b->carry = 1;
    uint8_t req[SATEMU_READ_LOG_REQUEST_BYTES] = { 1, 0, 0, 0, 0, 0, 0, 0, 0, 0 };
    n = request(&box, SATEMU_OP_READ_LOG, req, sizeof(req), resp);
    expect(n == 1 + SATEMU_READ_LOG_HEAD_BYTES && resp[0] == SATEMU_STATUS_OK
           && get_u64(resp + 1) == 0x200000001ull && get_u32(resp + 9) == 7 && !b->carry,
           "log count across a carry", 0);

    /* CLEAR_LOG: one write of LOG_CLEAR with the ring's bits, to both channels at once. */
    memset(b->regs, 0, sizeof(b->regs));
    set_log(b, 0, 45, 3);
    set_log(b, 1, 10, 1);
    b->log_ctls = 0;
    n = request(&box, SATEMU_OP_CLEAR_LOG, req, 0, resp);
    expect(n == 1 && resp[0] == SATEMU_STATUS_OK && b->log_ctls == 1
           && b->last_log_ctl == (LOG_BITS | SATEMU_LOG_CLEAR), "clear log", 0);
    n = request(&box, SATEMU_OP_READ_LOG, req, sizeof(req), resp);
    expect(n == 1 + SATEMU_READ_LOG_HEAD_BYTES && get_u64(resp + 1) == 0 && get_u32(resp + 9) == 0
           && resp[21] == 0, "read log after the clear", 0);
    expect(request(&box, SATEMU_OP_CLEAR_LOG, req, 1, resp) == 1
           && resp[0] == SATEMU_STATUS_BAD_LENGTH && b->log_ctls == 1, "clear log, long", 0);
    box.log_bits = 0;
    expect(request(&box, SATEMU_OP_CLEAR_LOG, req, 0, resp) == 1
           && resp[0] == SATEMU_STATUS_NO_LOG && b->log_ctls == 1, "clear log, no log", 0);
    box.log_bits = LOG_BITS;
    box.mem_read = NULL;                       /* the CPU cannot read the rings: no log */
    expect(request(&box, SATEMU_OP_CLEAR_LOG, req, 0, resp) == 1
           && resp[0] == SATEMU_STATUS_NO_LOG && b->log_ctls == 1, "clear log, no memory", 0);
    expect(request(&box, SATEMU_OP_READ_LOG, req, sizeof(req), resp) == 1
           && resp[0] == SATEMU_STATUS_NO_LOG, "read log, no memory", 0);

    /* HELLO: FRAME_LOG and the ring's records, only where the firmware can read the rings. */
    uint8_t ver[2] = { SATEMU_PROTOCOL_VERSION & 0xFF, SATEMU_PROTOCOL_VERSION >> 8 };
    box.bod_mask = 0;
    n = request(&box, SATEMU_OP_HELLO, ver, 2, resp);
    expect(n == 1 + SATEMU_HELLO_RESPONSE_BYTES && resp[3] == (SATEMU_CAP_CHANNELS | TERMS)
           && get_u32(resp + SATEMU_HELLO_AT_LOG_RECORDS) == 0, "hello without a log", 0);
    box.mem_read = mem_read;
    n = request(&box, SATEMU_OP_HELLO, ver, 2, resp);
    expect(n == 1 + SATEMU_HELLO_RESPONSE_BYTES
           && resp[3] == (SATEMU_CAP_CHANNELS | SATEMU_CAP_FRAME_LOG | TERMS)
           && get_u32(resp + SATEMU_HELLO_AT_LOG_RECORDS) == LOG_VEC_RING, "hello with a log", 0);
    box.log_bits = SATEMU_LOG_BITS_MAX + 1;
    n = request(&box, SATEMU_OP_HELLO, ver, 2, resp);
    expect(resp[3] == (SATEMU_CAP_CHANNELS | TERMS)
           && get_u32(resp + SATEMU_HELLO_AT_LOG_RECORDS) == 0,
           "hello, log_bits too big", 0);

    /* At the start each channel with a log gets its ring, enabled and empty; one without none. */
    box.log_bits = LOG_BITS;
    box.log[1].words = 0;
    memset(b->regs, 0, sizeof(b->regs));
    b->regs[0][SATEMU_REG_STATUS] = b->regs[1][SATEMU_REG_STATUS] = 4;
    satemu_requests_init(&box);
    uint32_t zero[SATEMU_REG_WORDS] = { 0 };
    zero[SATEMU_REG_STATUS] = 4;
    expect(b->regs[0][SATEMU_REG_LOG_BASE] == log_rings[0]
           && b->regs[0][SATEMU_REG_LOG_CTL] == (LOG_BITS | SATEMU_LOG_CLEAR)
           && !memcmp(b->regs[1], zero, sizeof(zero)), "init sets the log up", 0);
    b->regs[0][SATEMU_REG_LOG_BASE] = b->regs[0][SATEMU_REG_LOG_CTL] = 0;
    expect(!memcmp(b->regs[0], zero, sizeof(zero)), "init writes nothing else", 0);
    memset(b->regs, 0, sizeof(b->regs));
    b->log_ctls = 0;
}

/* The box of the tests below (the profile vectors bring their own). */
static const struct satemu_limits limits = {
    .f_clk = 75000000u, .queue_depth = 1024, .queue_fifo = 1024, .bod_queue = 1024,
    .max_frame = 2048, .latency_floor = 2048,
    .mem_words = 6u << 20, .port_bps = 1000000000u,
    .terminals = 4, .synthetic = 4, .demand_levels = 8,   /* command_layer.WRITE_BOX's */
    .jitter_table = SATEMU_JITTER_TABLE,
    .impairments = SATEMU_IMPAIR_CORRUPT | SATEMU_IMPAIR_DUPLICATE | SATEMU_IMPAIR_ECN,
};

/* The commit rules: only a load staged whole under one generation applies; a retried COMMIT
 * applies nothing and says again what became of the load; a layout change (a BoD setting) is
 * refused while its delay line holds frames, and waits, reported PENDING, when the channel
 * kept the old layout anyway; GET_PROFILE reads the staged profile and the one in force. */
static void commit_rules(struct satemu_hw *hw, struct bank *bank, const uint64_t *base)
{
    uint8_t resp[SATEMU_MAX_PAYLOAD];
    size_t n;
    uint64_t boot[SATEMU_PROFILE_FIELDS] = { 0 }, a[SATEMU_PROFILE_FIELDS],
             b[SATEMU_PROFILE_FIELDS], c[SATEMU_PROFILE_FIELDS];
    memset(bank->regs, 0, sizeof(bank->regs));
    bank->regs[0][SATEMU_REG_STATUS] = bank->regs[1][SATEMU_REG_STATUS] = 4;     /* empty */
    bank->commits = bank->hold = bank->slow = bank->keep = bank->kept = 0;
    satemu_requests_init(hw);
    memcpy(a, base, sizeof(a));
    memcpy(b, base, sizeof(b));
    b[SATEMU_F_DELAY] += 1000;                       /* another load, same layout */
    memcpy(c, b, sizeof(c));
    c[SATEMU_F_BOD_LATENCY] ^= 1u;                   /* another layout (BoD is off: any value) */

    expect(commit_gen(hw, 7, 0, resp, &n) == SATEMU_STATUS_INCOMPLETE
           && n == 1 + SATEMU_INCOMPLETE_DETAIL_BYTES && get_u32(resp + 1) == 0
           && get_u32(resp + 5) == 0 && bank->commits == 0, "commit, nothing staged", 0);
    uint8_t req[SATEMU_MAX_PAYLOAD];
    profile_request_gen(req, 0, 7, a);
    expect(request(hw, SATEMU_OP_SET_PROFILE, req, SATEMU_SET_PROFILE_REQUEST_BYTES, resp) == 1
           && resp[0] == SATEMU_STATUS_OK, "stage forward", 7);
    expect(commit_gen(hw, 7, 0, resp, &n) == SATEMU_STATUS_INCOMPLETE && get_u32(resp + 1) == 7
           && get_u32(resp + 5) == 0 && bank->commits == 0, "commit, forward only", 0);
    profile_request_gen(req, 1, 8, a);
    request(hw, SATEMU_OP_SET_PROFILE, req, SATEMU_SET_PROFILE_REQUEST_BYTES, resp);
    expect(commit_gen(hw, 7, 0, resp, &n) == SATEMU_STATUS_INCOMPLETE && get_u32(resp + 1) == 7
           && get_u32(resp + 5) == 8 && bank->commits == 0, "commit, two loads", 0);
    expect(profile_is(hw, 0, SATEMU_PROFILE_IN_FORCE, boot)
           && profile_is(hw, 0, SATEMU_PROFILE_STAGED, a), "staged is not in force", 0);

    /* The first commit also sets the regions: a layout commit. */
    expect(stage(hw, 7, a, a), "stage both", 7);
    expect(commit_gen(hw, 7, SATEMU_COMMIT_RESEED, resp, &n) == SATEMU_STATUS_OK && n == 2
           && resp[1] == SATEMU_COMMIT_APPLIED && bank->commits == 1
           && bank->last_commit == (SATEMU_COMMIT_APPLY | SATEMU_COMMIT_LAYOUT
                                    | SATEMU_COMMIT_RESEED), "commit", 7);
    expect(commit_gen(hw, 7, SATEMU_COMMIT_RESEED, resp, &n) == SATEMU_STATUS_OK && n == 2
           && resp[1] == SATEMU_COMMIT_ALREADY && bank->commits == 1, "commit retried", 7);
    expect(profile_is(hw, 0, SATEMU_PROFILE_IN_FORCE, a)
           && profile_is(hw, 1, SATEMU_PROFILE_IN_FORCE, a), "in force", 7);

    /* Same layout: no layout commit, taken under traffic. */
    bank->regs[0][SATEMU_REG_STATUS] = bank->regs[1][SATEMU_REG_STATUS] = 0;     /* frames stored */
    expect(stage(hw, 9, b, b), "stage both", 9);
    expect(commit_gen(hw, 9, 0, resp, &n) == SATEMU_STATUS_OK && resp[1] == SATEMU_COMMIT_APPLIED
           && bank->commits == 2 && bank->last_commit == SATEMU_COMMIT_APPLY, "commit", 9);
    expect(profile_is(hw, 1, SATEMU_PROFILE_IN_FORCE, b), "in force", 9);

    /* A refused SET_PROFILE unstages its channel. */
    expect(stage(hw, 10, a, a), "stage both", 10);
    uint64_t bad[SATEMU_PROFILE_FIELDS];
    memcpy(bad, a, sizeof(bad));
    bad[SATEMU_F_LOSS_MODE] = 3;
    profile_request_gen(req, 1, 10, bad);
    request(hw, SATEMU_OP_SET_PROFILE, req, SATEMU_SET_PROFILE_REQUEST_BYTES, resp);
    expect(resp[0] == SATEMU_STATUS_BAD_FIELD, "refused", 10);
    expect(commit_gen(hw, 10, 0, resp, &n) == SATEMU_STATUS_INCOMPLETE && get_u32(resp + 1) == 10
           && get_u32(resp + 5) == 0 && bank->commits == 2, "commit after a refusal", 10);

    /* A layout change while the return channel holds frames: refused, nothing applied, the
     * load still staged; applied once it is empty. */
    expect(stage(hw, 11, b, c), "stage both", 11);
    bank->regs[0][SATEMU_REG_STATUS] = 4;
    expect(commit_gen(hw, 11, 0, resp, &n) == SATEMU_STATUS_LAYOUT_BUSY && n == 2 && resp[1] == 2
           && bank->commits == 2 && profile_is(hw, 1, SATEMU_PROFILE_IN_FORCE, b),
           "layout busy", 11);
    bank->regs[1][SATEMU_REG_STATUS] = 4;
    expect(commit_gen(hw, 11, 0, resp, &n) == SATEMU_STATUS_OK && resp[1] == SATEMU_COMMIT_APPLIED
           && bank->last_commit == (SATEMU_COMMIT_APPLY | SATEMU_COMMIT_LAYOUT)
           && profile_is(hw, 1, SATEMU_PROFILE_IN_FORCE, c), "layout once empty", 11);

    /* The channel keeps its old layout anyway (frames came in between): the rest is in force,
     * the layout waits and COMMIT says PENDING until it is taken. */
    expect(stage(hw, 12, b, b), "stage both", 12);
    bank->keep = 2;
    expect(commit_gen(hw, 12, 0, resp, &n) == SATEMU_STATUS_PENDING && n == 2 && resp[1] == 2,
           "layout kept", 12);
    uint64_t mixed[SATEMU_PROFILE_FIELDS];
    memcpy(mixed, b, sizeof(mixed));
    mixed[SATEMU_F_BOD_LATENCY] = c[SATEMU_F_BOD_LATENCY];
    expect(profile_is(hw, 1, SATEMU_PROFILE_IN_FORCE, mixed), "in force: the old layout", 12);
    expect(commit_gen(hw, 12, 0, resp, &n) == SATEMU_STATUS_PENDING && resp[1] == 2,
           "still pending", 12);
    unsigned before = bank->commits;
    bank->regs[1][SATEMU_REG_STATUS] = 0;
    satemu_requests_poll(hw);
    expect(bank->commits == before, "no retry while frames are stored", 12);
    bank->regs[1][SATEMU_REG_STATUS] = 4;
    bank->keep = 0;
    satemu_requests_poll(hw);
    satemu_requests_poll(hw);
    expect(bank->commits == before + 1
           && bank->last_commit == (SATEMU_COMMIT_APPLY | SATEMU_COMMIT_LAYOUT)
           && profile_is(hw, 1, SATEMU_PROFILE_IN_FORCE, b), "retried once drained", 12);
    expect(commit_gen(hw, 12, 0, resp, &n) == SATEMU_STATUS_OK && resp[1] == SATEMU_COMMIT_ALREADY,
           "now in force", 12);

    /* A commit the gateware takes late: PENDING on both, SET_PROFILE waits, then in force. */
    expect(stage(hw, 13, a, a), "stage both", 13);
    bank->slow = 100000;
    expect(commit_gen(hw, 13, 0, resp, &n) == SATEMU_STATUS_PENDING && resp[1] == 3, "slow", 13);
    profile_request_gen(req, 0, 14, b);
    expect(request(hw, SATEMU_OP_SET_PROFILE, req, SATEMU_SET_PROFILE_REQUEST_BYTES, resp) == 1
           && resp[0] == SATEMU_STATUS_BUSY, "set while applying", 13);
    bank->hold = bank->slow = 0;
    satemu_requests_poll(hw);
    expect(commit_gen(hw, 13, 0, resp, &n) == SATEMU_STATUS_OK && resp[1] == SATEMU_COMMIT_ALREADY
           && profile_is(hw, 0, SATEMU_PROFILE_IN_FORCE, a), "taken late", 13);

    /* Never while the gateware is still taking another commit. */
    expect(stage(hw, 15, b, b), "stage both", 15);
    bank->regs[1][SATEMU_REG_STATUS] = 4 | 1;
    before = bank->commits;
    expect(commit_gen(hw, 15, 0, resp, &n) == SATEMU_STATUS_BUSY && bank->commits == before,
           "busy", 15);
    bank->regs[1][SATEMU_REG_STATUS] = 4;
    expect(get_profile(hw, 0, 2, resp) == 1 && resp[0] == SATEMU_STATUS_BAD_OPCODE,
           "no third profile", 0);

    /* LINK_STATS: the requests answered, then the deframer's discards by cause. */
    static const uint32_t errors[SATEMU_ERR_COUNT] = { 1, 2, 3, 0x01020304u, 5 };
    hw->link_errors = errors;
    satemu_requests_init(hw);
    n = request(hw, SATEMU_OP_LINK_STATS, resp, 0, resp);
    expect(n == 1 + SATEMU_LINK_STATS_BYTES && resp[0] == SATEMU_STATUS_OK
           && get_u32(resp + 1) == 1 && get_u32(resp + 5) == 1
           && get_u32(resp + 17) == 0x01020304u && get_u32(resp + 21) == 5, "link stats", 0);
    hw->link_errors = NULL;
    memset(bank->regs, 0, sizeof(bank->regs));
}


/* TIMELINE_WRITE of n entries from `first`: (offset, channel, field, value) each. */
static size_t tl_request(const struct satemu_hw *hw, uint32_t first, unsigned n,
                         const uint64_t (*e)[4], uint8_t *resp)
{
    uint8_t req[SATEMU_TIMELINE_WRITE_REQUEST_BYTES] = { 0 };
    put_u32(req, first);
    req[4] = (uint8_t)n;
    for (unsigned i = 0; i < n; i++) {
        uint64_t w1 = e[i][1] << 56 | e[i][2] << 48 | e[i][3];
        for (int k = 0; k < 8; k++) {
            req[5 + 16 * i + k] = (uint8_t)(e[i][0] >> (8 * k));
            req[5 + 16 * i + 8 + k] = (uint8_t)(w1 >> (8 * k));
        }
    }
    return request(hw, SATEMU_OP_TIMELINE_WRITE, req, sizeof(req), resp);
}

static size_t tl_start(const struct satemu_hw *hw, uint32_t entries, uint64_t start,
                       uint64_t period, uint8_t *resp)
{
    uint8_t req[SATEMU_TIMELINE_START_REQUEST_BYTES];
    put_u32(req, entries);
    for (int k = 0; k < 8; k++) {
        req[4 + k] = (uint8_t)(start >> (8 * k));
        req[12 + k] = (uint8_t)(period >> (8 * k));
    }
    return request(hw, SATEMU_OP_TIMELINE_START, req, sizeof(req), resp);
}

/* TIMELINE_STATUS into resp; the state's fields by TIMELINE_STATE's layout. */
static void tl_status(const struct satemu_hw *hw, uint8_t *resp)
{
    size_t n = request(hw, SATEMU_OP_TIMELINE_STATUS, NULL, 0, resp);
    expect(n == 1 + SATEMU_TIMELINE_STATE_BYTES && resp[0] == SATEMU_STATUS_OK,
           "timeline status", 0);
}
#define TL_STATE(r) ((r)[1])
#define TL_NEXT(r) get_u32((r) + 22)
#define TL_LAP(r) get_u32((r) + 26)
#define TL_APPLIED(r) get_u32((r) + 30)
#define TL_LATE(r) get_u32((r) + 34)
#define TL_IN_FORCE(r) get_u64((r) + 38)
#define TL_FAULT_ENTRY(r) get_u32((r) + 46)
#define TL_FAULT(r) ((r)[50])
#define TL_VERDICT(r) ((r)[51])

static uint64_t reg64(const struct bank *b, int ch, unsigned word)
{
    return (uint64_t)b->regs[ch][word + 1] << 32 | b->regs[ch][word];
}

/* The box's cycle, as the next statistics snapshot takes it. */
static void set_now(struct bank *b, uint64_t cycle)
{
    for (int ch = 0; ch < SATEMU_CHANNELS; ch++) {
        b->regs[ch][SATEMU_REG_SNAPSHOT_CYCLE] = (uint32_t)cycle;
        b->regs[ch][SATEMU_REG_SNAPSHOT_CYCLE + 1] = (uint32_t)(cycle >> 32);
    }
}

/* Timelines: entries checked as written and at the start, each step staged on the profile in
 * force and committed named for its cycle once the one before it took effect, repeats, late
 * steps, a step whose profile fails, and what a running timeline refuses. */
static void test_timeline(const uint64_t *fields)
{
    static struct bank bank;
    struct satemu_hw hw = {
        .ctx = &bank, .read = rd, .write = wr, .commit = commit, .stats = stats,
        .port_count = port_count, .limits = limits,
        .delay_line = { { 0, 6u << 20 }, { 6u << 20, 6u << 20 } },
        .timeline = { 0, 2 * TL_ENTRIES }, .mem_write = tl_write, .mem_load = tl_load,
    };
    uint8_t resp[SATEMU_MAX_PAYLOAD], req[SATEMU_MAX_PAYLOAD];
    for (int ch = 0; ch < SATEMU_CHANNELS; ch++)
        bank.regs[ch][SATEMU_REG_STATUS] = 4u;          /* empty delay lines */
    satemu_requests_init(&hw);
    for (int ch = 0; ch < SATEMU_CHANNELS; ch++) {
        profile_request(req, ch, fields);
        expect(request(&hw, SATEMU_OP_SET_PROFILE, req, SATEMU_SET_PROFILE_REQUEST_BYTES, resp)
               == 1 && resp[0] == SATEMU_STATUS_OK, "timeline: base profile", ch);
    }
    uint8_t c[5] = { 0 };
    put_u32(c + 1, GEN);
    expect(request(&hw, SATEMU_OP_COMMIT, c, 5, resp) == 2 && resp[0] == SATEMU_STATUS_OK,
           "timeline: base committed", 0);
    uint8_t hello[2] = { SATEMU_PROTOCOL_VERSION & 0xFF, SATEMU_PROTOCOL_VERSION >> 8 };
    request(&hw, SATEMU_OP_HELLO, hello, 2, resp);
    expect((get_u32(resp + 3) & SATEMU_CAP_TIMELINE) && get_u32(resp + SATEMU_HELLO_AT_TIMELINE_ENTRIES) == TL_ENTRIES,
           "hello: timeline entries", 0);

    /* Refused entries: the seed, a layout field, a channel that does not exist, a value too
     * wide, beyond the store, none; nothing is stored. */
    const uint64_t seed[1][4] = { { 0, 0, SATEMU_F_SEED, 1 } };
    const uint64_t layout[1][4] = { { 0, 1, SATEMU_F_BOD_FLAGS, 1 } };
    const uint64_t nochan[1][4] = { { 0, 2, SATEMU_F_DELAY, 1 } };
    const uint64_t wide[2][4] = { { 0, 0, SATEMU_F_DELAY, 5 },
                                  { 0, 0, SATEMU_F_MIN_LEN, 1u << 16 } };
    struct { const uint64_t (*e)[4]; unsigned first, n, entry, fault; } bad[] = {
        { seed, 0, 1, 0, SATEMU_TIMELINE_FAULT_FIELD },
        { layout, 3, 1, 3, SATEMU_TIMELINE_FAULT_FIELD },
        { nochan, 0, 1, 0, SATEMU_TIMELINE_FAULT_FIELD },
        { wide, 7, 2, 8, SATEMU_TIMELINE_FAULT_VALUE },
        { wide, TL_ENTRIES - 1, 2, TL_ENTRIES - 1, SATEMU_TIMELINE_FAULT_BEYOND },
        { wide, 0, 0, 0, SATEMU_TIMELINE_FAULT_EMPTY },
    };
    for (size_t i = 0; i < N(bad); i++) {
        size_t n = tl_request(&hw, bad[i].first, bad[i].n, bad[i].e, resp);
        expect(n == 1 + SATEMU_TIMELINE_FAULT_DETAIL_BYTES
               && resp[0] == SATEMU_STATUS_TIMELINE_BAD && get_u32(resp + 1) == bad[i].entry
               && resp[5] == bad[i].fault, "timeline write refused", (long)i);
    }
    uint64_t zero[2 * TL_ENTRIES] = { 0 };
    expect(!memcmp(bank.tl, zero, sizeof(zero)), "refused writes store nothing", 0);

    /* Three steps: at 0 both channels change, at 1000 the forward delay, at 2500 the return
     * rate's fraction. */
    uint64_t d0 = fields[SATEMU_F_DELAY];
    const uint64_t steps[4][4] = {
        { 0, 0, SATEMU_F_DELAY, d0 + 100 }, { 0, 1, SATEMU_F_LOSS_P, 5 },
        { 1000, 0, SATEMU_F_DELAY, d0 - 100 }, { 2500, 1, SATEMU_F_RATE_NUM, 3 } };
    expect(tl_request(&hw, 0, 4, steps, resp) == 1 && resp[0] == SATEMU_STATUS_OK,
           "timeline written", 0);
    expect(bank.tl[4] == 1000 && bank.tl[5] == ((uint64_t)SATEMU_F_DELAY << 48 | (d0 - 100)),
           "an entry as stored", 0);
    const uint64_t unsorted[1][4] = { { 999, 0, SATEMU_F_DELAY, d0 } };
    expect(tl_request(&hw, 3, 1, unsorted, resp) == 1, "an unsorted entry is stored ...", 0);
    expect(tl_start(&hw, 4, 10000, 0, resp) == 6 && resp[0] == SATEMU_STATUS_TIMELINE_BAD
           && get_u32(resp + 1) == 3 && resp[5] == SATEMU_TIMELINE_FAULT_UNSORTED,
           "... and refused at the start", 0);
    expect(tl_request(&hw, 3, 1, steps + 3, resp) == 1, "rewritten", 0);
    expect(tl_start(&hw, 4, 10000, 2500, resp) == 6 && resp[5] == SATEMU_TIMELINE_FAULT_PERIOD,
           "a period not above the last offset", 0);
    expect(tl_start(&hw, 0, 10000, 0, resp) == 6 && resp[5] == SATEMU_TIMELINE_FAULT_EMPTY,
           "no entries", 0);
    expect(tl_start(&hw, TL_ENTRIES + 1, 10000, 0, resp) == 6
           && resp[5] == SATEMU_TIMELINE_FAULT_BEYOND, "beyond the store", 0);

    /* Started: the first step is staged and committed, named for start + 0, before the answer. */
    bank.slow = 3;                      /* each commit shows pending for 3 STATUS reads */
    unsigned commits = bank.commits;
    expect(tl_start(&hw, 4, 10000, 3000, resp) == 1 && resp[0] == SATEMU_STATUS_OK,
           "timeline started", 0);
    expect(bank.commits == commits + 1
           && bank.last_commit == (SATEMU_COMMIT_APPLY | SATEMU_COMMIT_AT)
           && reg64(&bank, 0, SATEMU_REG_COMMIT_CYCLE) == 10000
           && reg64(&bank, 1, SATEMU_REG_COMMIT_CYCLE) == 10000, "first step committed AT", 0);
    expect(reg64(&bank, 0, SATEMU_REG_DELAY) == d0 + 100
           && bank.regs[1][SATEMU_REG_LOSS_P] == 5, "first step staged on both channels", 0);
    /* The in-force profile is the base until the channels take the step. */
    size_t n;
    n = get_profile(&hw, 0, SATEMU_PROFILE_IN_FORCE, resp);
    expect(n == 1 + SATEMU_PROFILE_BYTES && get_u64(resp + 1 + 8 * SATEMU_F_DELAY) == d0,
           "in force: the base, before the step's cycle", 0);
    /* Refused while it runs. */
    profile_request(req, 0, fields);
    expect(request(&hw, SATEMU_OP_SET_PROFILE, req, SATEMU_SET_PROFILE_REQUEST_BYTES, resp) == 1
           && resp[0] == SATEMU_STATUS_RUNNING, "set profile while running", 0);
    expect(request(&hw, SATEMU_OP_COMMIT, c, 5, resp) == 1 && resp[0] == SATEMU_STATUS_RUNNING,
           "commit while running", 0);
    expect(tl_request(&hw, 0, 1, steps, resp) == 1 && resp[0] == SATEMU_STATUS_RUNNING,
           "timeline write while running", 0);
    expect(tl_start(&hw, 4, 10000, 0, resp) == 1 && resp[0] == SATEMU_STATUS_RUNNING,
           "timeline start while running", 0);

    /* The poll finds the step taken, then commits the next one, with the second of these
     * commits taken late. */
    uint64_t cycles[] = { 11000, 12500, 13000, 14000, 15500, 16000 };
    for (unsigned k = 1; k < N(cycles); k++) {
        if (k == 3)
            bank.late_next = 1;
        for (unsigned poll = 0; poll < 10 && bank.commits == commits + k; poll++)
            satemu_requests_poll(&hw);
        expect(bank.commits == commits + k + 1
               && reg64(&bank, 0, SATEMU_REG_COMMIT_CYCLE) == cycles[k - 1],
               "next step committed at its cycle", (long)k);
    }
    tl_status(&hw, resp);
    expect(TL_STATE(resp) == SATEMU_TIMELINE_RUN_RUNNING && TL_LAP(resp) == 1
           && TL_APPLIED(resp) == 5 && TL_LATE(resp) == 1 && TL_IN_FORCE(resp) == 14000
           && TL_NEXT(resp) == 4, "status while running", 0);
    expect(reg64(&bank, 0, SATEMU_REG_DELAY) == d0 - 100
           && bank.regs[1][SATEMU_REG_RATE_NUM] == 3, "the step staged", 0);

    /* Stopped: the step committed still takes effect; nothing further is committed. */
    expect(request(&hw, SATEMU_OP_TIMELINE_STOP, NULL, 0, resp) == 1
           && resp[0] == SATEMU_STATUS_OK, "timeline stopped", 0);
    unsigned after = bank.commits;
    for (unsigned poll = 0; poll < 10; poll++)
        satemu_requests_poll(&hw);
    tl_status(&hw, resp);
    expect(bank.commits == after && TL_STATE(resp) == SATEMU_TIMELINE_RUN_IDLE
           && TL_APPLIED(resp) == 6 && TL_IN_FORCE(resp) == 15500, "status after the stop", 0);
    n = get_profile(&hw, 1, SATEMU_PROFILE_IN_FORCE, resp);
    expect(get_u64(resp + 1 + 8 * SATEMU_F_RATE_NUM) == 3, "in force after the stop", 0);

    /* A step whose profile fails the checks (rate_num not below rate_den) stops the run. */
    const uint64_t failing[2][4] = { { 0, 0, SATEMU_F_LOSS_P, 7 },
                                     { 500, 0, SATEMU_F_RATE_NUM, 1u << 31 } };
    expect(tl_request(&hw, 0, 2, failing, resp) == 1 && resp[0] == SATEMU_STATUS_OK,
           "failing timeline written", 0);
    expect(tl_start(&hw, 2, 20000, 0, resp) == 1 && resp[0] == SATEMU_STATUS_OK,
           "failing timeline started", 0);
    for (unsigned poll = 0; poll < 10; poll++)
        satemu_requests_poll(&hw);
    tl_status(&hw, resp);
    expect(TL_STATE(resp) == SATEMU_TIMELINE_RUN_FAILED && TL_APPLIED(resp) == 1
           && TL_FAULT(resp) == SATEMU_TIMELINE_FAULT_PROFILE && TL_FAULT_ENTRY(resp) == 1
           && TL_VERDICT(resp) == SATEMU_STATUS_BAD_FIELD, "a failing step stops the run", 0);
    profile_request(req, 0, fields);
    expect(request(&hw, SATEMU_OP_SET_PROFILE, req, SATEMU_SET_PROFILE_REQUEST_BYTES, resp) == 1
           && resp[0] == SATEMU_STATUS_OK, "loads again after a failed run", 0);

    /* A run that does not repeat ends DONE after its last step. */
    expect(tl_start(&hw, 1, 30000, 0, resp) == 1 && resp[0] == SATEMU_STATUS_OK,
           "one-step timeline", 0);
    for (unsigned poll = 0; poll < 10; poll++)
        satemu_requests_poll(&hw);
    tl_status(&hw, resp);
    expect(TL_STATE(resp) == SATEMU_TIMELINE_RUN_DONE && TL_APPLIED(resp) == 1
           && TL_IN_FORCE(resp) == 30000, "done", 0);

    /* A step may not set the overhead of a channel BoD serves: stored as written (the profile
     * may come later), refused at the start against the profile in force; the forward
     * channel's overhead, which no BoD serves, may change. */
    const struct profile_case *bod = NULL;
    for (size_t i = 0; i < N(profile_cases) && !bod; i++)
        if (profile_cases[i].status == SATEMU_STATUS_OK && profile_cases[i].channel == 1
            && (profile_cases[i].fields[SATEMU_F_BOD_FLAGS] & SATEMU_BOD_ENABLE))
            bod = &profile_cases[i];
    expect(bod != NULL, "a BoD case among the vectors", 0);
    hw.limits = bod->limits;
    hw.bod_mask = bod->bod_mask;
    profile_request(req, 1, bod->fields);
    expect(request(&hw, SATEMU_OP_SET_PROFILE, req, SATEMU_SET_PROFILE_REQUEST_BYTES, resp) == 1
           && resp[0] == SATEMU_STATUS_OK, "BoD profile on the return channel", 0);
    profile_request(req, 0, fields);
    expect(request(&hw, SATEMU_OP_SET_PROFILE, req, SATEMU_SET_PROFILE_REQUEST_BYTES, resp) == 1
           && resp[0] == SATEMU_STATUS_OK, "forward profile", 0);
    expect(request(&hw, SATEMU_OP_COMMIT, c, 5, resp) == 2 && resp[0] == SATEMU_STATUS_OK,
           "BoD profile committed", 0);
    uint64_t ovh = bod->fields[SATEMU_F_OVERHEAD] + 1;
    const uint64_t bod_ovh[2][4] = { { 0, 0, SATEMU_F_OVERHEAD, ovh },
                                     { 100, 1, SATEMU_F_OVERHEAD, ovh } };
    expect(tl_request(&hw, 0, 2, bod_ovh, resp) == 1 && resp[0] == SATEMU_STATUS_OK,
           "a BoD channel's overhead stored", 0);
    expect(tl_start(&hw, 2, 40000, 0, resp) == 6 && resp[0] == SATEMU_STATUS_TIMELINE_BAD
           && get_u32(resp + 1) == 1 && resp[5] == SATEMU_TIMELINE_FAULT_FIELD,
           "... refused at the start", 0);
    expect(tl_start(&hw, 1, 40000, 0, resp) == 1 && resp[0] == SATEMU_STATUS_OK,
           "the forward channel's overhead taken", 0);
    hw.limits = limits;
    hw.bod_mask = 0;

    /* Held until near: a step due more than the lead (f_clk / SATEMU_TIMELINE_LEAD_DIVISOR
     * cycles) after the box's cycle is staged in the shadow but not committed; the poll commits
     * it once the cycle is within the lead. A stop drops the step held (the shadow back to the
     * profile in force), and a load is taken at once, with nothing left to wait for. */
    for (unsigned poll = 0; poll < 10; poll++)
        satemu_requests_poll(&hw);
    tl_status(&hw, resp);
    expect(TL_STATE(resp) == SATEMU_TIMELINE_RUN_DONE, "the last run done", 0);
    const uint64_t lead = limits.f_clk / SATEMU_TIMELINE_LEAD_DIVISOR, t0 = 1000000;
    get_profile(&hw, 0, SATEMU_PROFILE_IN_FORCE, resp);
    const uint64_t d1 = get_u64(resp + 1 + 8 * SATEMU_F_DELAY);
    set_now(&bank, t0);
    const uint64_t far[2][4] = { { 0, 0, SATEMU_F_DELAY, d1 + 7 },
                                 { 5 * lead, 0, SATEMU_F_DELAY, d1 + 9 } };
    expect(tl_request(&hw, 0, 2, far, resp) == 1 && resp[0] == SATEMU_STATUS_OK,
           "far timeline written", 0);
    commits = bank.commits;
    const uint64_t far_start = t0 + 3 * lead;
    expect(tl_start(&hw, 2, far_start, 0, resp) == 1 && resp[0] == SATEMU_STATUS_OK
           && bank.commits == commits, "a step far ahead is held, not committed", 0);
    expect(reg64(&bank, 0, SATEMU_REG_DELAY) == d1 + 7, "the held step is in the shadow", 0);
    set_now(&bank, far_start - lead - 1);
    for (unsigned poll = 0; poll < 10; poll++)
        satemu_requests_poll(&hw);
    expect(bank.commits == commits, "held until the cycle is within the lead", 0);
    set_now(&bank, far_start - lead);
    satemu_requests_poll(&hw);
    expect(bank.commits == commits + 1
           && bank.last_commit == (SATEMU_COMMIT_APPLY | SATEMU_COMMIT_AT)
           && reg64(&bank, 0, SATEMU_REG_COMMIT_CYCLE) == far_start,
           "committed AT its cycle once within the lead", 0);
    for (unsigned poll = 0; poll < 10; poll++)
        satemu_requests_poll(&hw);
    tl_status(&hw, resp);
    expect(bank.commits == commits + 1 && TL_APPLIED(resp) == 1 && TL_NEXT(resp) == 2
           && reg64(&bank, 0, SATEMU_REG_DELAY) == d1 + 9, "the next step held", 0);
    expect(request(&hw, SATEMU_OP_TIMELINE_STOP, NULL, 0, resp) == 1
           && resp[0] == SATEMU_STATUS_OK, "stopped with a step held", 0);
    expect(reg64(&bank, 0, SATEMU_REG_DELAY) == d1 + 7, "the stop drops the held step", 0);
    for (unsigned poll = 0; poll < 10; poll++)
        satemu_requests_poll(&hw);
    tl_status(&hw, resp);
    expect(bank.commits == commits + 1 && TL_STATE(resp) == SATEMU_TIMELINE_RUN_IDLE
           && TL_APPLIED(resp) == 1 && TL_IN_FORCE(resp) == far_start,
           "nothing committed after the stop", 0);
    profile_request(req, 0, fields);
    expect(request(&hw, SATEMU_OP_SET_PROFILE, req, SATEMU_SET_PROFILE_REQUEST_BYTES, resp) == 1
           && resp[0] == SATEMU_STATUS_OK, "a load after the stop is taken at once", 0);

    /* The start: at most SATEMU_TIMELINE_AHEAD_MAX_S of box time ahead; nothing is staged for
     * a start refused. */
    const uint64_t day = (uint64_t)SATEMU_TIMELINE_AHEAD_MAX_S * limits.f_clk;
    set_now(&bank, t0);
    commits = bank.commits;
    expect(tl_start(&hw, 2, t0 + day + 1, 0, resp) == 6 && resp[0] == SATEMU_STATUS_TIMELINE_BAD
           && get_u32(resp + 1) == 0 && resp[5] == SATEMU_TIMELINE_FAULT_AHEAD
           && bank.commits == commits, "a start more than a day ahead", 0);
    expect(request(&hw, SATEMU_OP_COMMIT, c, 5, resp) >= 1 && resp[0] != SATEMU_STATUS_RUNNING,
           "nothing runs after the refusal", 0);
    expect(tl_start(&hw, 2, UINT64_MAX - 4 * lead, 0, resp) == 6
           && resp[5] == SATEMU_TIMELINE_FAULT_AHEAD, "a last step past 2^64 cycles", 0);
    expect(tl_start(&hw, 2, t0 + day, 0, resp) == 1 && resp[0] == SATEMU_STATUS_OK
           && bank.commits == commits, "a start a day ahead, held", 0);
    expect(request(&hw, SATEMU_OP_TIMELINE_STOP, NULL, 0, resp) == 1, "and stopped", 0);

    /* Armed: started with a load staged whole, a timeline waits for that load's COMMIT, which
     * applies the load and starts the run in the same request; nothing is committed before.
     * A SET_PROFILE disarms it, and so does a stop (the load stays staged). */
    uint64_t armed_fields[SATEMU_PROFILE_FIELDS];
    memcpy(armed_fields, fields, sizeof(armed_fields));
    armed_fields[SATEMU_F_DELAY] = d1 + 3;
    const uint32_t gen_a = 0x0A0B0C0Du;
    uint8_t ca[5] = { 0 };
    put_u32(ca + 1, gen_a);
    for (int ch = 0; ch < SATEMU_CHANNELS; ch++) {
        profile_request_gen(req, ch, gen_a, armed_fields);
        expect(request(&hw, SATEMU_OP_SET_PROFILE, req, SATEMU_SET_PROFILE_REQUEST_BYTES, resp)
               == 1 && resp[0] == SATEMU_STATUS_OK, "a load staged whole", ch);
    }
    commits = bank.commits;
    expect(tl_start(&hw, 2, t0 + lead / 2, 0, resp) == 1 && resp[0] == SATEMU_STATUS_OK
           && bank.commits == commits, "a timeline armed for the load", 0);
    tl_status(&hw, resp);
    expect(TL_STATE(resp) == SATEMU_TIMELINE_RUN_ARMED, "armed", 0);
    expect(reg64(&bank, 0, SATEMU_REG_DELAY) == d1 + 3, "the load stays staged", 0);
    expect(tl_request(&hw, 0, 1, far, resp) == 1 && resp[0] == SATEMU_STATUS_RUNNING
           && tl_start(&hw, 2, t0, 0, resp) == 1 && resp[0] == SATEMU_STATUS_RUNNING,
           "the entries kept while armed", 0);
    for (unsigned poll = 0; poll < 10; poll++)
        satemu_requests_poll(&hw);
    expect(bank.commits == commits, "nothing runs before the load's commit", 0);
    expect(request(&hw, SATEMU_OP_COMMIT, ca, 5, resp) == 2 && resp[0] == SATEMU_STATUS_OK
           && resp[1] == SATEMU_COMMIT_APPLIED, "the load committed", 0);
    tl_status(&hw, resp);
    expect(TL_STATE(resp) == SATEMU_TIMELINE_RUN_RUNNING, "... and its timeline runs", 0);
    expect(bank.commits == commits + 2
           && bank.last_commit == (SATEMU_COMMIT_APPLY | SATEMU_COMMIT_AT)
           && reg64(&bank, 0, SATEMU_REG_COMMIT_CYCLE) == t0 + lead / 2
           && reg64(&bank, 0, SATEMU_REG_DELAY) == d1 + 7,
           "its first step committed AT on the load", 0);
    expect(request(&hw, SATEMU_OP_TIMELINE_STOP, NULL, 0, resp) == 1, "stopped", 0);
    for (unsigned poll = 0; poll < 10; poll++)
        satemu_requests_poll(&hw);
    for (int ch = 0; ch < SATEMU_CHANNELS; ch++) {
        profile_request_gen(req, ch, gen_a + 1, armed_fields);
        request(&hw, SATEMU_OP_SET_PROFILE, req, SATEMU_SET_PROFILE_REQUEST_BYTES, resp);
    }
    expect(tl_start(&hw, 2, t0 + lead / 2, 0, resp) == 1 && resp[0] == SATEMU_STATUS_OK,
           "armed again", 0);
    profile_request_gen(req, 1, gen_a + 2, armed_fields);
    request(&hw, SATEMU_OP_SET_PROFILE, req, SATEMU_SET_PROFILE_REQUEST_BYTES, resp);
    tl_status(&hw, resp);
    expect(TL_STATE(resp) == SATEMU_TIMELINE_RUN_IDLE, "a SET_PROFILE disarms", 0);
    for (int ch = 0; ch < SATEMU_CHANNELS; ch++) {
        profile_request_gen(req, ch, gen_a + 3, armed_fields);
        request(&hw, SATEMU_OP_SET_PROFILE, req, SATEMU_SET_PROFILE_REQUEST_BYTES, resp);
    }
    expect(tl_start(&hw, 2, t0 + lead / 2, 0, resp) == 1 && resp[0] == SATEMU_STATUS_OK,
           "armed once more", 0);
    expect(request(&hw, SATEMU_OP_TIMELINE_STOP, NULL, 0, resp) == 1, "a stop ...", 0);
    tl_status(&hw, resp);
    commits = bank.commits;
    put_u32(ca + 1, gen_a + 3);
    expect(TL_STATE(resp) == SATEMU_TIMELINE_RUN_IDLE
           && request(&hw, SATEMU_OP_COMMIT, ca, 5, resp) == 2 && resp[0] == SATEMU_STATUS_OK,
           "... disarms, and the load is still committed", 0);
    tl_status(&hw, resp);
    expect(TL_STATE(resp) == SATEMU_TIMELINE_RUN_IDLE && bank.commits == commits + 1,
           "with no timeline", 0);
    set_now(&bank, 0);

    /* A box without the store answers NO_TIMELINE. */
    hw.mem_write = NULL;
    expect(request(&hw, SATEMU_OP_TIMELINE_STATUS, NULL, 0, resp) == 1
           && resp[0] == SATEMU_STATUS_NO_TIMELINE, "no timeline store", 0);
}

static void terminal_checks(struct satemu_hw *hw)
{
    static struct satemu_terminal t[TERM_VEC_TERMINALS];
    static struct satemu_level lv[TERM_VEC_LEVELS + 1];
    static uint64_t counts[TERM_VEC_TERMINALS + 1][SATEMU_TERMINAL_COUNTERS];
    static uint64_t raw[TERM_VEC_TERMINALS + 1][SATEMU_TERMINAL_COUNTERS];
    struct satemu_term_store store = { t, TERM_VEC_TERMINALS, lv, TERM_VEC_LEVELS + 1,
                                       counts, raw };
    static const uint64_t none[SATEMU_PROFILE_FIELDS];
    uint32_t gen = satemu_staged_load();
    for (size_t i = 0; i < N(terminal_cases); i++) {
        const struct terminal_case *c = &terminal_cases[i];
        hw->limits = c->limits;
        hw->bod_mask = c->bod_mask;
        hw->terms[c->channel] = &store;
        hw->terms[!c->channel] = NULL;
        memset(t, 0, sizeof(t));
        for (unsigned k = 0; k < c->n; k++) {
            t[k].gen = gen;
            memcpy(t[k].f, c->t[k], sizeof(t[k].f));
        }
        for (unsigned k = 0; k < TERM_VEC_LEVELS + 1; k++) {
            lv[k].gen = k < c->levels ? gen : gen + 1;
            lv[k].rate = k < c->levels ? c->level[k][0] : 0;
            lv[k].length = k < c->levels ? c->level[k][1] : 0;
        }
        const uint64_t *f[SATEMU_CHANNELS];
        f[c->channel] = c->fields;
        f[!c->channel] = none;
        struct satemu_term_verdict v;
        satemu_terminals_check(hw, f, &v);
        int same = v.status == c->status && (v.status == SATEMU_STATUS_OK
            || (v.index == c->index && v.rule == c->rule && v.value == c->value
                && v.lo == c->lo && v.hi == c->hi));
        if (!same)
            printf("  %s: status %u index %u rule %u value %llu range %llu..%llu\n", c->why,
                   v.status, v.index, v.rule, (unsigned long long)v.value,
                   (unsigned long long)v.lo, (unsigned long long)v.hi);
        expect(same, "terminal verdict", (long)i);
    }
    hw->terms[0] = hw->terms[1] = NULL;
}

/* JITTER_SET: channel, bank, first, n, then JITTER_SET_MAX entries. */
static size_t jitter_set(const struct satemu_hw *hw, int ch, unsigned bank, unsigned first,
                         unsigned n, int16_t base, uint8_t *resp)
{
    uint8_t req[SATEMU_JITTER_SET_REQUEST_BYTES] = { 0 };
    req[0] = (uint8_t)ch;
    req[1] = (uint8_t)bank;
    req[2] = (uint8_t)first;
    req[3] = (uint8_t)(first >> 8);
    req[4] = (uint8_t)n;
    for (unsigned i = 0; i < SATEMU_JITTER_SET_MAX; i++) {
        uint16_t v = (uint16_t)(base + (int16_t)(7 * i));
        req[SATEMU_JITTER_SET_HEAD_BYTES + 2 * i] = (uint8_t)v;
        req[SATEMU_JITTER_SET_HEAD_BYTES + 2 * i + 1] = (uint8_t)(v >> 8);
    }
    return request(hw, SATEMU_OP_JITTER_SET, req, sizeof(req), resp);
}

/* JITTER_SET writes n entries from `first` into the bank, through JIT_SEL and JIT_VAL; it
 * refuses a bank the profile in force draws from (IN_FORCE), entries outside a bank (RANGE),
 * and everything on a box without jitter (NO_JITTER), each writing nothing. */
static void jitter_checks(struct satemu_hw *hw, struct bank *bank, const uint64_t *base)
{
    uint8_t resp[SATEMU_MAX_PAYLOAD];
    size_t n;
    memset(bank->regs, 0, sizeof(bank->regs));
    memset(bank->jit, 0, sizeof(bank->jit));
    bank->regs[0][SATEMU_REG_STATUS] = bank->regs[1][SATEMU_REG_STATUS] = 4;     /* empty */
    bank->commits = bank->hold = bank->slow = bank->keep = bank->kept = 0;
    satemu_requests_init(hw);
    bank->jit_writes = 0;
    n = jitter_set(hw, 1, 1, 4096 - 100, 100, -32768, resp);
    int same = 1;
    for (unsigned i = 0; i < 100; i++)
        same &= bank->jit[1][2 * 4096 - 100 + i] == (uint16_t)(-32768 + 7 * (int)i);
    expect(n == 1 && resp[0] == SATEMU_STATUS_OK && same && bank->jit_writes == 100,
           "jitter set, bank 1's last entries", 0);
    n = jitter_set(hw, 0, 0, 0, SATEMU_JITTER_SET_MAX, 5, resp);
    expect(n == 1 && resp[0] == SATEMU_STATUS_OK && bank->jit[0][0] == 5
           && bank->jit[0][SATEMU_JITTER_SET_MAX - 1] == 5 + 7 * (SATEMU_JITTER_SET_MAX - 1)
           && bank->jit_writes == 100 + SATEMU_JITTER_SET_MAX, "jitter set, a whole request", 0);
    static const unsigned bad[][3] = { { 2, 0, 1 }, { 0, 0, 0 },
                                       { 0, 0, SATEMU_JITTER_SET_MAX + 1 },
                                       { 0, 4096 - 99, 100 }, { 1, 0xFFFF, 1 } };
    for (unsigned i = 0; i < N(bad); i++) {
        n = jitter_set(hw, 0, bad[i][0], bad[i][1], bad[i][2], 1, resp);
        expect(n == 1 + SATEMU_JITTER_BAD_DETAIL_BYTES && resp[0] == SATEMU_STATUS_JITTER_BAD
               && resp[1] == SATEMU_JITTER_FAULT_RANGE && resp[2] == (uint8_t)bad[i][0]
               && bank->jit_writes == 100 + SATEMU_JITTER_SET_MAX, "jitter set, range", i);
    }
    /* A profile with jitter from bank 1 in force on the forward channel: bank 1 refused there,
     * bank 0 and the return channel's bank 1 taken. */
    uint64_t a[SATEMU_PROFILE_FIELDS];
    memcpy(a, base, sizeof(a));
    a[SATEMU_F_JIT_SIGMA] = 1000;
    a[SATEMU_F_JIT_BANK] = 1;
    expect(stage(hw, 5, a, base), "jitter profile staged", 5);
    expect(commit_gen(hw, 5, 0, resp, &n) == SATEMU_STATUS_OK, "jitter profile in force", 5);
    unsigned writes = bank->jit_writes;
    n = jitter_set(hw, 0, 1, 0, 10, 3, resp);
    expect(n == 1 + SATEMU_JITTER_BAD_DETAIL_BYTES && resp[0] == SATEMU_STATUS_JITTER_BAD
           && resp[1] == SATEMU_JITTER_FAULT_IN_FORCE && resp[2] == 1
           && bank->jit_writes == writes, "jitter set, the bank in force", 1);
    expect(jitter_set(hw, 0, 0, 0, 10, 3, resp) == 1 && resp[0] == SATEMU_STATUS_OK
           && jitter_set(hw, 1, 1, 0, 10, 3, resp) == 1 && resp[0] == SATEMU_STATUS_OK
           && bank->jit_writes == writes + 20, "jitter set, the other banks", 0);
    hw->limits.jitter_table = 0;
    n = jitter_set(hw, 0, 0, 0, 10, 3, resp);
    expect(n == 1 && resp[0] == SATEMU_STATUS_NO_JITTER && bank->jit_writes == writes + 20,
           "jitter set, no jitter", 0);
    hw->limits.jitter_table = SATEMU_JITTER_TABLE;
}

int main(void)
{
    static struct bank bank;
    struct satemu_hw hw = {
        .ctx = &bank, .read = rd, .write = wr, .commit = commit, .stats = stats,
        .port_count = port_count, .limits = limits,
        .delay_line = { { 0, 6u << 20 }, { 6u << 20, 6u << 20 } },
        .bod_mask = BOD_VEC_BOD_MASK, .bod_ring = BOD_VEC_RING, .counter_bits = 0,
    };
    uint8_t resp[SATEMU_MAX_PAYLOAD], req[SATEMU_MAX_PAYLOAD];

    /* Profile checks: same verdict as satemu.base.validate for every shared case. */
    for (size_t i = 0; i < N(profile_cases); i++) {
        const struct profile_case *c = &profile_cases[i];
        hw.limits = c->limits;
        hw.bod_mask = c->bod_mask;
        struct satemu_verdict v;
        satemu_validate(&hw, c->channel, c->fields, &v);
        int same = v.status == c->status && v.field == c->field && v.value == c->value
            && v.lo == c->lo && v.hi == c->hi;
        if (!same)
            printf("  %s: status %u field %u value %llu range %llu..%llu\n", c->why, v.status,
                   v.field, (unsigned long long)v.value, (unsigned long long)v.lo,
                   (unsigned long long)v.hi);
        expect(same, "profile verdict", (long)i);
    }
    hw.limits = limits;
    hw.bod_mask = BOD_VEC_BOD_MASK;

    /* Terminal tables at COMMIT: the same TERMINAL_BAD detail as satemu.base.validate's
     * terminal_verdict and terminal_budget for every shared case. */
    terminal_checks(&hw);
    hw.limits = limits;
    hw.bod_mask = BOD_VEC_BOD_MASK;

    /* SET_PROFILE of a valid case writes every field and the channel's region; GET_PROFILE
     * reads the same values back. */
    const struct profile_case *ok = &profile_cases[0];
    profile_request(req, 1, ok->fields);
    expect(request(&hw, SATEMU_OP_SET_PROFILE, req, SATEMU_SET_PROFILE_REQUEST_BYTES, resp) == 1
           && resp[0] == SATEMU_STATUS_OK, "set profile", 0);
    expect(bank.regs[1][SATEMU_REG_MEM_BASE] == (6u << 20)
           && bank.regs[1][SATEMU_REG_MEM_SIZE] == (6u << 20), "region written", 0);
    uint8_t ch = 1;
    size_t n = get_profile(&hw, 1, SATEMU_PROFILE_STAGED, resp);
    expect(n == 1 + SATEMU_PROFILE_BYTES && resp[0] == SATEMU_STATUS_OK
           && !memcmp(resp + 1, req + 5, SATEMU_PROFILE_BYTES), "get profile", 0);

    /* Each field goes to its own register (satemu.base.regmap), and nothing else is written: the
     * register image the Python declarations give for a profile whose fields all differ. */
    memset(bank.regs, 0, sizeof(bank.regs));
    hw.delay_line[WRITE_CHANNEL].base = WRITE_MEM_BASE;
    hw.delay_line[WRITE_CHANNEL].words = WRITE_MEM_WORDS;
    profile_request(req, WRITE_CHANNEL, write_fields);
    expect(request(&hw, SATEMU_OP_SET_PROFILE, req, SATEMU_SET_PROFILE_REQUEST_BYTES, resp) == 1
           && resp[0] == SATEMU_STATUS_OK, "set profile, distinct fields", 0);
    for (unsigned w = 0; w < SATEMU_REG_WORDS; w++) {
        if (bank.regs[WRITE_CHANNEL][w] != write_image[w])
            printf("  register word %u: 0x%08x, not 0x%08x\n", w, bank.regs[WRITE_CHANNEL][w],
                   write_image[w]);
    }
    uint32_t zero[SATEMU_REG_WORDS] = { 0 };
    expect(!memcmp(bank.regs[WRITE_CHANNEL], write_image, sizeof(write_image))
           && !memcmp(bank.regs[1 - WRITE_CHANNEL], zero, sizeof(zero)), "register image", 0);
    n = get_profile(&hw, WRITE_CHANNEL, SATEMU_PROFILE_STAGED, resp);
    expect(n == 1 + SATEMU_PROFILE_BYTES && !memcmp(resp + 1, req + 5, SATEMU_PROFILE_BYTES),
           "get profile, distinct fields", 0);
    hw.delay_line[WRITE_CHANNEL].base = WRITE_CHANNEL ? 6u << 20 : 0;
    hw.delay_line[WRITE_CHANNEL].words = 6u << 20;

    /* A field beyond its register's width is BAD_FIELD with that field's index and range, and
     * writes nothing. */
    memset(bank.regs, 0, sizeof(bank.regs));
    for (int i = 0; i < SATEMU_PROFILE_FIELDS; i++) {
        if (satemu_profile_widths[i] >= 64)
            continue;
        uint64_t f[SATEMU_PROFILE_FIELDS];
        memcpy(f, write_fields, sizeof(f));
        f[i] = (uint64_t)1 << satemu_profile_widths[i];
        profile_request(req, 0, f);
        n = request(&hw, SATEMU_OP_SET_PROFILE, req, SATEMU_SET_PROFILE_REQUEST_BYTES, resp);
        expect(n == 1 + SATEMU_BAD_FIELD_DETAIL_BYTES && resp[0] == SATEMU_STATUS_BAD_FIELD
               && resp[1] == i && get_u64(resp + 2) == f[i] && get_u64(resp + 10) == 0
               && get_u64(resp + 18) == f[i] - 1, "too wide", i);
    }
    expect(!memcmp(bank.regs, zero, sizeof(zero)) && !memcmp(bank.regs[1], zero, sizeof(zero)),
           "nothing written", 2);

    /* A rejected profile touches nothing and says why. */
    profile_request(req, 1, ok->fields);
    req[0] = 0;
    req[5 + 8 * SATEMU_F_LOSS_MODE] = 3;                  /* loss_mode 3 */
    n = request(&hw, SATEMU_OP_SET_PROFILE, req, SATEMU_SET_PROFILE_REQUEST_BYTES, resp);
    expect(n == 1 + SATEMU_BAD_FIELD_DETAIL_BYTES && resp[0] == SATEMU_STATUS_BAD_FIELD
           && resp[1] == SATEMU_F_LOSS_MODE && resp[2] == 3, "bad field answer", 0);
    expect(!memcmp(bank.regs[0], zero, sizeof(zero)), "nothing written", 0);

    /* Too fast for the board's delay-line throughput: THROUGHPUT with the words per 65536 cycles
     * the profile may need and those guaranteed, and nothing written. */
    req[5 + 8 * SATEMU_F_LOSS_MODE] = (uint8_t)ok->fields[SATEMU_F_LOSS_MODE];
    hw.limits.mem_wpc_forward = 1;
    hw.limits.mem_wpc_return = 0xFFFFFFFFu;              /* the other channel's does not count */
    uint64_t wpc = satemu_traffic_wpc(&hw, req[0], ok->fields);
    n = request(&hw, SATEMU_OP_SET_PROFILE, req, SATEMU_SET_PROFILE_REQUEST_BYTES, resp);
    expect(n == 1 + SATEMU_THROUGHPUT_DETAIL_BYTES && resp[0] == SATEMU_STATUS_THROUGHPUT
           && get_u64(resp + 1) == wpc && wpc > 1 && get_u64(resp + 9) == 1,
           "throughput answer", 0);
    expect(!memcmp(bank.regs[0], zero, sizeof(zero)), "nothing written", 1);
    hw.limits.mem_wpc_forward = (uint32_t)wpc;           /* exactly enough: accepted */
    hw.limits.mem_wpc_return = 1;
    n = request(&hw, SATEMU_OP_SET_PROFILE, req, SATEMU_SET_PROFILE_REQUEST_BYTES, resp);
    expect(n == 1 && resp[0] == SATEMU_STATUS_OK, "throughput just enough", 0);
    hw.limits.mem_wpc_forward = hw.limits.mem_wpc_return = 0;

    /* Malformed requests. */
    expect(request(&hw, SATEMU_OP_SET_PROFILE, req, 20, resp) == 1
           && resp[0] == SATEMU_STATUS_BAD_LENGTH, "short set", 0);
    ch = 2;
    expect(request(&hw, SATEMU_OP_GET_STATS, &ch, 1, resp) == 1 && resp[0] == SATEMU_STATUS_BAD_CHANNEL,
           "bad channel", 0);
    expect(request(&hw, 0x55, req, 0, resp) == 1 && resp[0] == SATEMU_STATUS_BAD_OPCODE, "bad opcode", 0);
    uint8_t ver[2] = { SATEMU_PROTOCOL_VERSION + 1, 0 };
    n = request(&hw, SATEMU_OP_HELLO, ver, 2, resp);
    expect(n == 1 + SATEMU_HELLO_RESPONSE_BYTES && resp[0] == SATEMU_STATUS_BAD_VERSION
           && resp[1] == SATEMU_PROTOCOL_VERSION, "hello, wrong version", 0);
    ver[0] = SATEMU_PROTOCOL_VERSION;
    n = request(&hw, SATEMU_OP_HELLO, ver, 2, resp);
    expect(n == 1 + SATEMU_HELLO_RESPONSE_BYTES && resp[0] == SATEMU_STATUS_OK
           && resp[3] == (SATEMU_CAP_CHANNELS | SATEMU_CAP_BOD | TERMS), "hello announces BoD",
           0);
    hw.bod_mask = 0;
    hw.limits.mem_wpc_forward = 0x01020304u;
    hw.limits.mem_wpc_return = 0x05060708u;
    n = request(&hw, SATEMU_OP_HELLO, ver, 2, resp);
    expect(n == 1 + SATEMU_HELLO_RESPONSE_BYTES && resp[3] == (SATEMU_CAP_CHANNELS | TERMS),
           "hello without BoD", 0);
    expect(get_u32(resp + SATEMU_HELLO_AT_MEM_WPC_FORWARD) == 0x01020304u
           && get_u32(resp + SATEMU_HELLO_AT_MEM_WPC_RETURN) == 0x05060708u,
           "hello mem_wpc", 0);
    hw.bod_mask = BOD_VEC_BOD_MASK;
    hw.limits.mem_wpc_forward = hw.limits.mem_wpc_return = 0;

    /* HELLO: the exact answers of the shared vectors, from the box parameters they name (a
     * frame log of log_records records: log_bits their logarithm). */
    for (size_t i = 0; i < N(hello_cases); i++) {
        struct satemu_hw box = hw;
        box.limits = hello_cases[i].limits;
        box.bod_mask = hello_cases[i].bod_mask;
        uint32_t records = hello_cases[i].limits.log_records;
        box.log_bits = records ? (uint32_t)__builtin_ctz(records) : 0;
        box.mem_read = mem_read;
        box.log_ctl = log_ctl;
        box.limits.log_records = 12345;      /* HELLO reports what log_bits gives */
        box.timeline.words = 2 * hello_cases[i].limits.timeline_entries;
        box.mem_write = tl_write;
        box.mem_load = tl_load;
        box.limits.timeline_entries = 54321; /* ... and what the store's size gives */
        n = request(&box, SATEMU_OP_HELLO, hello_cases[i].req, hello_cases[i].req_len, resp);
        expect(n == hello_cases[i].resp_len && !memcmp(resp, hello_cases[i].resp, n),
               "hello vector", (long)i);
    }

    /* BOD_TRACE: the exact answers of the shared vectors, from a ring that holds the last
     * BOD_VEC_RING superframes of the history, and the case's bod_count and bod_start (two
     * words, LSW first). */
    for (size_t i = 0; i < N(bod_cases); i++) {
        uint32_t count = bod_cases[i].count;
        memset(bank.ring, 0, sizeof(bank.ring));
        for (uint32_t s = count > BOD_VEC_RING ? count - BOD_VEC_RING : 0; s < count; s++)
            memcpy(bank.ring[s % BOD_VEC_RING], bod_history[s], sizeof(bod_history[s]));
        set_bod(&bank, count, bod_cases[i].start);
        n = request(&hw, SATEMU_OP_BOD_TRACE, bod_cases[i].req, bod_cases[i].req_len, resp);
        int same = n == bod_cases[i].resp_len && !memcmp(resp, bod_cases[i].resp, n);
        if (!same)
            printf("  bod case %zu: %zu bytes, status %u\n", i, n, resp[0]);
        expect(same, "bod trace", (long)i);
    }
    /* A restart between the reads of bod_count and bod_start: the answer carries the new run's
     * count and start, never the old count with the new start. */
    set_bod(&bank, 45, 0x0000012389abcdefull);
    bank.restart = 1;
    bank.restart_start = 0x00000456deadbeefull;
    n = request(&hw, SATEMU_OP_BOD_TRACE, bod_cases[0].req, bod_cases[0].req_len, resp);
    static const uint8_t restarted[] = { SATEMU_STATUS_OK, 0, 0, 0, 0,
                                         0xef, 0xbe, 0xad, 0xde, 0x56, 0x04, 0, 0,
                                         0, 0, 0, 0, 0 };
    expect(n == sizeof(restarted) && !memcmp(resp, restarted, n), "bod trace across a restart", 0);

    frame_log(&hw, &bank);
    commit_rules(&hw, &bank, ok->fields);
    jitter_checks(&hw, &bank, ok->fields);

    /* RESET_STATS clears both channels at once, the MAC's counts by a baseline. */
    bank.port[0] = 0xfffffffeu;
    bank.port[1] = 7;
    resp[0] = 0xEE;
    expect(request(&hw, SATEMU_OP_RESET_STATS, req, 0, resp) == 1 && resp[0] == SATEMU_STATUS_OK
           && (bank.stats & SATEMU_STATS_CLEAR), "reset stats", 0);

    /* GET_STATS snapshots, then reads 64-bit values. */
    bank.regs[0][SATEMU_REG_TX_BYTES] = 0x89abcdefu;
    bank.regs[0][SATEMU_REG_TX_BYTES + 1] = 0x1234567u;
    ch = 0;
    n = request(&hw, SATEMU_OP_GET_STATS, &ch, 1, resp);
    uint64_t tx = get_u64(resp + 1 + 8 * SATEMU_STAT_TX_BYTES);
    expect(n == 1 + SATEMU_STATS_BYTES && (bank.stats & SATEMU_STATS_SNAPSHOT)
           && tx == 0x0123456789abcdefull, "stats", 0);
    /* The last field is the MAC's count since the reset, across the 32-bit wrap. */
    bank.port[0] = 3;
    n = request(&hw, SATEMU_OP_GET_STATS, &ch, 1, resp);
    expect(resp[n - 8] == 5 && resp[n - 7] == 0 && resp[n - 1] == 0, "port counter", 0);

    /* 32-bit counters (the Colorlight's): each fold adds what a counter counted since the last
     * one, across its wrap, so GET_STATS still reports 64-bit counts; RESET_STATS starts them
     * again from the cleared registers. */
    hw.counter_bits = 32;
    expect(request(&hw, SATEMU_OP_RESET_STATS, req, 0, resp) == 1, "reset stats (32)", 0);
    bank.regs[0][SATEMU_REG_TX_BYTES + 1] = 0;
    static const uint32_t raw[] = { 0x7fffff00u, 0xffffff00u, 0x100u, 0x80000000u, 0x10u };
    uint64_t want[] = { 0x7fffff00ull, 0xffffff00ull, 0x100000100ull, 0x180000000ull,
                        0x200000010ull };
    for (size_t i = 0; i < N(raw); i++) {
        bank.regs[0][SATEMU_REG_TX_BYTES] = raw[i];
        bank.regs[1][SATEMU_REG_RX_FRAMES] = raw[i] / 2;
        bank.regs[0][SATEMU_REG_TX_BYTES + 1] = 0xdeadu * (i & 1);   /* above the counter: ignored */
        if (i == 2) {                           /* the firmware's periodic fold, between two reads */
            satemu_fold_start(&hw);
            int steps = 0;
            while (satemu_fold_step(&hw))
                steps++;
            expect(steps == SATEMU_CHANNELS * SATEMU_COUNTERS, "a fold step per counter", 0);
        }
        if (i == 3) {                           /* a fold cut short by GET_STATS still counts */
            satemu_fold_start(&hw);
            expect(satemu_fold_step(&hw) && satemu_fold_step(&hw), "fold steps", 3);
        }
        n = request(&hw, SATEMU_OP_GET_STATS, &ch, 1, resp);
        tx = get_u64(resp + 1 + 8 * SATEMU_STAT_TX_BYTES);
        expect(n == 1 + SATEMU_STATS_BYTES && tx == want[i], "32-bit counter folded", (long)i);
    }
    ch = 1;
    n = request(&hw, SATEMU_OP_GET_STATS, &ch, 1, resp);
    expect(get_u64(resp + 1 + 8 * SATEMU_STAT_RX_FRAMES) == 0x200000008ull,
           "the other channel folded too", 0);
    satemu_fold_start(&hw);                     /* a fold under way when the reset comes ... */
    expect(request(&hw, SATEMU_OP_RESET_STATS, req, 0, resp) == 1, "reset stats (32)", 1);
    expect(!satemu_fold_step(&hw), "... stops there", 0);
    bank.regs[1][SATEMU_REG_RX_FRAMES] = 3;
    n = request(&hw, SATEMU_OP_GET_STATS, &ch, 1, resp);
    expect(get_u64(resp + 1 + 8 * SATEMU_STAT_RX_FRAMES) == 3, "counts restart after a reset", 0);

    test_timeline(profile_cases[0].fields);

    printf("%d passed, %d failed\n", checks - failures, failures);
    return failures != 0;
}
