/* SPDX-License-Identifier: BSD-2-Clause */
/* Request handling: each request's length and channel, then the profile checks (validate.c),
 * the commit rules, the statistics (stats.c) or the registers; message sizes come from the
 * generated header. */
#include "requests.h"
#include "commit.h"
#include "stats.h"
#include "terminals.h"
#include "timeline.h"
#include "validate.h"

/* The layouts below against satemu.base.protocol's: a profile is a u64 a field (SET_PROFILE's after
 * the channel and a u32 generation), a statistic a u64;
 * HELLO's answer is the version (u16), the capabilities (u32), then the limits; BOD_TRACE's
 * head is bod_count u32, bod_start u64, the first superframe u32 and the records' count u8;
 * READ_LOG's request is the channel u8, the first record u64 and the most records u8, its head
 * log_count u64, log_lost u32, the first record u64 and the records' count u8, a record its
 * two words, u64 each. */
_Static_assert(SATEMU_SET_PROFILE_REQUEST_BYTES == 1 + 4 + SATEMU_PROFILE_BYTES
               && SATEMU_PROFILE_BYTES == 8 * SATEMU_PROFILE_FIELDS, "profile messages");
_Static_assert(SATEMU_STATS_BYTES == 8 * SATEMU_STATS_FIELDS, "GET_STATS' answer");
_Static_assert(SATEMU_HELLO_RESPONSE_BYTES == 2 + 4 + SATEMU_LIMITS_BYTES, "HELLO's answer");
_Static_assert(SATEMU_BAD_FIELD_DETAIL_BYTES == 1 + 3 * 8 && SATEMU_BUDGET_DETAIL_BYTES == 2 * 8
               && SATEMU_THROUGHPUT_DETAIL_BYTES == 2 * 8, "verdict details");
_Static_assert(SATEMU_BOD_TRACE_REQUEST_BYTES == 1 + 4 + 1
               && SATEMU_BOD_TRACE_HEAD_BYTES == 4 + 8 + 4 + 1
               && SATEMU_BOD_RECORD_BYTES == 4 * SATEMU_BOD_RECORD_WORDS, "BOD_TRACE");
_Static_assert(1 + SATEMU_BOD_TRACE_HEAD_BYTES + SATEMU_BOD_TRACE_MAX * SATEMU_BOD_RECORD_BYTES
               <= SATEMU_MAX_PAYLOAD, "BOD_TRACE's answer fits a frame");

_Static_assert(SATEMU_READ_LOG_REQUEST_BYTES == 1 + 8 + 1
               && SATEMU_READ_LOG_HEAD_BYTES == 8 + 4 + 8 + 1
               && SATEMU_LOG_RECORD_BYTES == 8 * SATEMU_LOG_RECORD_WORDS
               && SATEMU_LOG_RECORD_WORDS == 2, "READ_LOG");
_Static_assert(1 + SATEMU_READ_LOG_HEAD_BYTES + SATEMU_READ_LOG_MAX * SATEMU_LOG_RECORD_BYTES
               <= SATEMU_MAX_PAYLOAD && SATEMU_READ_LOG_MAX <= 255,
               "READ_LOG's answer fits a frame, its count a byte");
_Static_assert(SATEMU_LOG_BITS_MAX < 32 && SATEMU_LOG_BITS_MAX < SATEMU_LOG_CLEAR, "LOG_CTL");

_Static_assert(SATEMU_LINK_STATS_FIELDS == 1 + SATEMU_ERR_COUNT
               && SATEMU_LINK_STATS_BYTES == 4 * SATEMU_LINK_STATS_FIELDS, "LINK_STATS");
_Static_assert(SATEMU_COMMIT_REQUEST_BYTES == 1 + 4 && SATEMU_INCOMPLETE_DETAIL_BYTES == 2 * 4
               && SATEMU_CHANNEL_MASK_DETAIL_BYTES == 1 && SATEMU_COMMIT_RESULT_BYTES == 1
               && SATEMU_GET_PROFILE_REQUEST_BYTES == 2, "COMMIT and GET_PROFILE");
_Static_assert(SATEMU_JITTER_SET_HEAD_BYTES == 1 + 1 + 2 + 1
               && SATEMU_JITTER_SET_REQUEST_BYTES == 5 + 2 * SATEMU_JITTER_SET_MAX
               && SATEMU_JITTER_BAD_DETAIL_BYTES == 2 && SATEMU_JITTER_SET_MAX <= 255, "JITTER_SET");

/* Each profile field's register, by field (enum satemu_field), and whether it is a layout field. */
static const uint16_t profile_regs[SATEMU_PROFILE_FIELDS] = SATEMU_PROFILE_REGS;
static const uint8_t profile_layout[SATEMU_PROFILE_FIELDS] = SATEMU_PROFILE_LAYOUT;

/* STATUS (satemu.base.regmap): a commit the channel has not taken yet; the last layout commit kept
 * the old layout; the delay line holds no frame; the last commit named a cycle already past. */
#define STATUS_PENDING SATEMU_STATUS_REG_PENDING
#define STATUS_LAYOUT_KEPT SATEMU_STATUS_REG_LAYOUT_KEPT
#define STATUS_EMPTY SATEMU_STATUS_REG_EMPTY
#define STATUS_LATE SATEMU_STATUS_REG_LATE
/* STATUS reads a commit may take before its answer: far more than the gateware needs (a few
 * cycles, or a backlog of the ingress FIFO); a commit not taken by then is answered PENDING and
 * finished by satemu_requests_poll. */
#define APPLY_WAIT_READS 4096u
#define BOTH_CHANNELS ((1u << SATEMU_CHANNELS) - 1)

/* The commit rules (docs/architecture.md, "Commits and sessions"). A load stages both channels
 * under one generation; COMMIT applies only a load staged whole, and says so again when asked
 * twice; the profile in force is kept here, field by field, as the gateware took it. */
static struct {
    uint32_t staged[SATEMU_CHANNELS];   /* the generation each channel's shadow holds (0: none) */
    uint32_t in_force;                  /* the generation of the last commit (0: boot values) */
    uint32_t applying;                  /* a commit the gateware has not taken yet (0: none) */
    uint32_t changes;                   /* ... and the channels whose layout it changes */
    uint32_t waiting;                   /* channels whose layout part waits for the drain */
    uint32_t layout_set;                /* channels whose layout (the region first) is in force */
    uint32_t requests;                  /* requests answered, for LINK_STATS */
    uint64_t profile[SATEMU_CHANNELS][SATEMU_PROFILE_FIELDS];   /* the profile in force */
} st;

/* The generation a timeline's steps commit under: never one a host load picks. */
#define TIMELINE_GEN 0xFFFFFFFFu

uint64_t satemu_get_le(const uint8_t *p, int n)
{
    uint64_t v = 0;
    for (int i = n - 1; i >= 0; i--)
        v = (v << 8) | p[i];
    return v;
}

uint8_t *satemu_put_le(uint8_t *p, uint64_t v, int n)
{
    for (int i = 0; i < n; i++, v >>= 8)
        *p++ = (uint8_t)v;
    return p;
}

static size_t status_only(uint8_t *out, uint8_t status)
{
    out[0] = status;
    return 1;
}

static uint32_t status_reg(const struct satemu_hw *hw, int ch)
{
    return hw->read(hw->ctx, ch, SATEMU_REG_STATUS);
}

static int pending(const struct satemu_hw *hw)
{
    return ((status_reg(hw, 0) | status_reg(hw, 1)) & STATUS_PENDING) != 0;
}

static uint64_t shadow(const struct satemu_hw *hw, int ch, int i)
{
    return satemu_read_reg(hw, ch, profile_regs[i], satemu_profile_widths[i]);
}

/* The records each channel's frame-log ring holds: 0 when the box has no log. */
static uint32_t log_records(const struct satemu_hw *hw)
{
    if (!hw->log_bits || hw->log_bits > SATEMU_LOG_BITS_MAX || !hw->mem_read || !hw->log_ctl)
        return 0;
    return 1u << hw->log_bits;
}

static int has_log(const struct satemu_hw *hw, int ch)
{
    return log_records(hw) && hw->log[ch].words;
}

void satemu_requests_init(const struct satemu_hw *hw)
{
    for (int ch = 0; ch < SATEMU_CHANNELS; ch++) {
        st.staged[ch] = 0;
        for (int i = 0; i < SATEMU_PROFILE_FIELDS; i++)
            st.profile[ch][i] = shadow(hw, ch, i);
        /* The log starts enabled, empty, at the channel's ring. */
        if (has_log(hw, ch)) {
            hw->write(hw->ctx, ch, SATEMU_REG_LOG_BASE, hw->log[ch].base);
            hw->write(hw->ctx, ch, SATEMU_REG_LOG_CTL, hw->log_bits | SATEMU_LOG_CLEAR);
        }
    }
    st.in_force = st.applying = st.changes = st.waiting = st.layout_set = st.requests = 0;
    satemu_timeline_init();
}

/* The channels whose staged layout differs from the one in force (a region never committed
 * differs). */
static uint32_t layout_changes(const struct satemu_hw *hw)
{
    uint32_t mask = 0;
    for (int ch = 0; ch < SATEMU_CHANNELS; ch++) {
        if (!((st.layout_set >> ch) & 1)) {
            mask |= 1u << ch;
            continue;
        }
        for (int i = 0; i < SATEMU_PROFILE_FIELDS; i++)
            if (profile_layout[i] && shadow(hw, ch, i) != st.profile[ch][i]) {
                mask |= 1u << ch;
                break;
            }
    }
    return mask;
}

/* The gateware took the commit being applied: the shadow (unchanged since, SET_PROFILE waits)
 * is in force, less the layout of each channel that kept its old one, which waits. */
static void settle(const struct satemu_hw *hw)
{
    for (int ch = 0; ch < SATEMU_CHANNELS; ch++) {
        int changed = (st.changes >> ch) & 1;
        int kept = changed && (status_reg(hw, ch) & STATUS_LAYOUT_KEPT);
        for (int i = 0; i < SATEMU_PROFILE_FIELDS; i++)
            if (!profile_layout[i] || !kept)
                st.profile[ch][i] = shadow(hw, ch, i);
        if (kept)
            st.waiting |= 1u << ch;
        else if (changed)
            st.layout_set |= 1u << ch;
    }
    st.in_force = st.applying;
    st.applying = st.changes = 0;
}

static void start_commit(const struct satemu_hw *hw, uint32_t gen, uint32_t changes, unsigned flags)
{
    hw->commit(hw->ctx, SATEMU_COMMIT_APPLY | (changes ? SATEMU_COMMIT_LAYOUT : 0u) | flags);
    st.applying = gen;
    st.changes = changes;
    st.waiting = 0;
}

void satemu_requests_poll(const struct satemu_hw *hw)
{
    if (st.applying) {
        if (pending(hw))
            return;
        settle(hw);
        if (!st.waiting)                          /* a load answered PENDING, now whole */
            satemu_timeline_loaded(hw, st.in_force);
    }
    if (satemu_timeline_poll(hw))
        return;
    /* A waiting layout is committed again once its delay lines are empty, unless a new load
     * has been staged since (its own commit then decides). */
    if (!st.waiting || st.staged[0] || st.staged[1] || pending(hw))
        return;
    for (int ch = 0; ch < SATEMU_CHANNELS; ch++)
        if (((st.waiting >> ch) & 1) && !(status_reg(hw, ch) & STATUS_EMPTY))
            return;
    start_commit(hw, st.in_force, st.waiting, 0);
}

static size_t with_mask(uint8_t *out, uint8_t status, uint32_t mask)
{
    out[0] = status;
    out[1] = (uint8_t)mask;
    return 2;
}

/* COMMIT: flags u8, generation u32. */
static size_t commit(const struct satemu_hw *hw, const uint8_t *p, uint8_t *out)
{
    uint32_t gen = (uint32_t)satemu_get_le(p + 1, 4);
    if (satemu_timeline_running())
        return status_only(out, SATEMU_STATUS_RUNNING);
    if (st.applying && !pending(hw))
        settle(hw);
    if (gen && gen == st.applying)
        return with_mask(out, SATEMU_STATUS_PENDING, BOTH_CHANNELS);
    if (gen && gen == st.in_force) {                 /* a retry: say again what became of it */
        if (st.waiting)
            return with_mask(out, SATEMU_STATUS_PENDING, st.waiting);
        out[0] = SATEMU_STATUS_OK;
        out[1] = SATEMU_COMMIT_ALREADY;
        return 2;
    }
    /* The staged profiles, where a channel's declares terminals (read back from the shadow). */
    uint64_t staged_f[SATEMU_CHANNELS][SATEMU_PROFILE_FIELDS];
    const uint64_t *f[SATEMU_CHANNELS];
    int terminals = 0;
    for (int ch = 0; ch < SATEMU_CHANNELS; ch++) {
        f[ch] = staged_f[ch];
        staged_f[ch][SATEMU_F_TERM_MATCH] = hw->limits.terminals ? shadow(hw, ch, SATEMU_F_TERM_MATCH)
                                                                 : 0;
        if (staged_f[ch][SATEMU_F_TERM_MATCH]) {
            terminals = 1;
            for (int i = 0; i < SATEMU_PROFILE_FIELDS; i++)
                staged_f[ch][i] = shadow(hw, ch, i);
        }
    }
    if (!gen || st.staged[0] != gen || st.staged[1] != gen
        || (terminals && !satemu_terminals_staged(hw, gen, f))) {
        out[0] = SATEMU_STATUS_INCOMPLETE;
        uint8_t *o = satemu_put_le(out + 1, st.staged[0], 4);
        o = satemu_put_le(o, st.staged[1], 4);
        return (size_t)(o - out);
    }
    if (st.applying || pending(hw))
        return status_only(out, SATEMU_STATUS_BUSY);
    if (terminals) {
        struct satemu_term_verdict v;
        satemu_terminals_check(hw, f, &v);
        if (v.status) {
            uint8_t *o = out;
            *o++ = v.status;
            o = satemu_put_le(o, v.index, 2);
            *o++ = v.rule;
            o = satemu_put_le(o, v.value, 8);
            o = satemu_put_le(o, v.lo, 8);
            o = satemu_put_le(o, v.hi, 8);
            return (size_t)(o - out);
        }
    }
    uint32_t changes = layout_changes(hw), busy = 0;
    for (int ch = 0; ch < SATEMU_CHANNELS; ch++)
        if (((changes >> ch) & 1) && !(status_reg(hw, ch) & STATUS_EMPTY))
            busy |= 1u << ch;
    if (busy)                                         /* nothing applied; the load stays staged */
        return with_mask(out, SATEMU_STATUS_LAYOUT_BUSY, busy);
    if (terminals)
        satemu_terminals_write(hw, f);
    start_commit(hw, gen, changes, p[0] & SATEMU_COMMIT_RESEED);
    st.staged[0] = st.staged[1] = 0;
    for (unsigned n = 0; n < APPLY_WAIT_READS && pending(hw); n++)
        ;
    if (pending(hw))
        return with_mask(out, SATEMU_STATUS_PENDING, BOTH_CHANNELS);
    settle(hw);
    if (st.waiting)
        return with_mask(out, SATEMU_STATUS_PENDING, st.waiting);
    satemu_timeline_loaded(hw, st.in_force);      /* a timeline armed for this load starts */
    out[0] = SATEMU_STATUS_OK;
    out[1] = SATEMU_COMMIT_APPLIED;
    return 2;
}

static size_t link_stats(const struct satemu_hw *hw, uint8_t *out)
{
    uint8_t *o = out;
    *o++ = SATEMU_STATUS_OK;
    o = satemu_put_le(o, st.requests, 4);
    for (int i = 0; i < SATEMU_ERR_COUNT; i++)
        o = satemu_put_le(o, hw->link_errors ? hw->link_errors[i] : 0, 4);
    return (size_t)(o - out);
}

/* HELLO: the limits, with the frame log's records as the firmware can read them (0: none). */
static size_t hello(const struct satemu_hw *hw, const uint8_t *p, uint8_t *out)
{
    struct satemu_limits limits = hw->limits;
    limits.log_records = log_records(hw);
    limits.timeline_entries = satemu_timeline_entries(hw);
    out[0] = satemu_get_le(p, SATEMU_HELLO_REQUEST_BYTES) == SATEMU_PROTOCOL_VERSION
           ? SATEMU_STATUS_OK : SATEMU_STATUS_BAD_VERSION;
    uint8_t *o = satemu_put_le(out + 1, SATEMU_PROTOCOL_VERSION, 2);
    o = satemu_put_le(o, SATEMU_CAP_CHANNELS | (hw->bod_mask ? SATEMU_CAP_BOD : 0)
                  | (limits.log_records ? SATEMU_CAP_FRAME_LOG : 0)
                  | (limits.timeline_entries ? SATEMU_CAP_TIMELINE : 0)
                  | (limits.terminals ? SATEMU_CAP_TERMINALS : 0)
                  | (limits.jitter_table ? SATEMU_CAP_JITTER : 0), 4);
#define PUT_LIMIT(name, bytes) o = satemu_put_le(o, limits.name, bytes);
    SATEMU_LIMIT_LIST(PUT_LIMIT)
#undef PUT_LIMIT
    return (size_t)(o - out);
}

/* One profile field into its register, or two for a field wider than 32 bits. */
static void write_field(const struct satemu_hw *hw, int ch, int i, uint64_t v)
{
    hw->write(hw->ctx, ch, profile_regs[i], (uint32_t)v);
    if (satemu_profile_widths[i] > 32)
        hw->write(hw->ctx, ch, profile_regs[i] + 1, (uint32_t)(v >> 32));
}

/* ---- What the timeline runner uses (commit.h) ---- */

const uint64_t *satemu_in_force(int channel)
{
    return st.profile[channel];
}

uint32_t satemu_staged_load(void)
{
    return st.staged[0] && st.staged[0] == st.staged[1] ? st.staged[0] : 0;
}

uint64_t satemu_shadow_field(const struct satemu_hw *hw, int channel, int field)
{
    return shadow(hw, channel, field);
}

int satemu_is_layout(int field)
{
    return profile_layout[field];
}

int satemu_applying(const struct satemu_hw *hw)
{
    if (st.applying && !pending(hw))
        settle(hw);
    return st.applying != 0;
}

int satemu_commit_busy(const struct satemu_hw *hw)
{
    return satemu_applying(hw) || st.waiting || pending(hw);
}

void satemu_write_field(const struct satemu_hw *hw, int channel, int field, uint64_t value)
{
    write_field(hw, channel, field, value);
}

void satemu_unstage(const struct satemu_hw *hw)
{
    for (int ch = 0; ch < SATEMU_CHANNELS; ch++) {
        st.staged[ch] = 0;
        for (int i = 0; i < SATEMU_PROFILE_FIELDS; i++)
            if (!profile_layout[i])
                write_field(hw, ch, i, st.profile[ch][i]);
    }
}

int satemu_commit_at(const struct satemu_hw *hw, uint64_t cycle)
{
    for (int ch = 0; ch < SATEMU_CHANNELS; ch++) {
        hw->write(hw->ctx, ch, SATEMU_REG_COMMIT_CYCLE, (uint32_t)cycle);
        hw->write(hw->ctx, ch, SATEMU_REG_COMMIT_CYCLE + 1, (uint32_t)(cycle >> 32));
    }
    start_commit(hw, TIMELINE_GEN, 0, SATEMU_COMMIT_AT);
    return (status_reg(hw, 0) & STATUS_LATE) != 0;
}

/* SET_PROFILE: channel u8, generation u32, the fields. A refused profile unstages the channel. */
static size_t set_profile(const struct satemu_hw *hw, const uint8_t *p, uint8_t *out)
{
    int ch = p[0];
    if (satemu_timeline_running())
        return status_only(out, SATEMU_STATUS_RUNNING);
    if (st.applying)               /* the shadow must stay as committed until the channel takes it */
        return status_only(out, SATEMU_STATUS_BUSY);
    satemu_timeline_disarm();      /* the load an armed timeline waits for changes */
    uint32_t gen = (uint32_t)satemu_get_le(p + 1, 4);
    uint64_t f[SATEMU_PROFILE_FIELDS];
    for (int i = 0; i < SATEMU_PROFILE_FIELDS; i++)
        f[i] = satemu_get_le(p + 5 + 8 * i, 8);
    struct satemu_verdict v;
    satemu_validate(hw, ch, f, &v);
    st.staged[ch] = v.status == SATEMU_STATUS_OK ? gen : 0;
    out[0] = v.status;
    if (v.status == SATEMU_STATUS_BAD_FIELD) {
        uint8_t *o = out + 1;
        *o++ = v.field;
        o = satemu_put_le(o, v.value, 8);
        o = satemu_put_le(o, v.lo, 8);
        o = satemu_put_le(o, v.hi, 8);
        return (size_t)(o - out);
    }
    if (v.status == SATEMU_STATUS_BUDGET || v.status == SATEMU_STATUS_THROUGHPUT) {
        uint8_t *o = satemu_put_le(out + 1, v.value, 8);
        o = satemu_put_le(o, v.hi, 8);
        return (size_t)(o - out);
    }
    for (int i = 0; i < SATEMU_PROFILE_FIELDS; i++)
        write_field(hw, ch, i, f[i]);
    hw->write(hw->ctx, ch, SATEMU_REG_MEM_BASE, hw->delay_line[ch].base);
    hw->write(hw->ctx, ch, SATEMU_REG_MEM_SIZE, hw->delay_line[ch].words);
    return 1;
}

/* JITTER_SET: channel u8, bank u8, first u16, n u8, then SATEMU_JITTER_SET_MAX entries, i16
 * each: n of them into the bank from entry first, through jit_sel and jit_val (each write of
 * jit_val advances jit_sel). Only into a bank the profile in force does not draw from; the
 * caller has refused a running timeline (whose steps may name either bank). */
static size_t jitter_set(const struct satemu_hw *hw, const uint8_t *p, uint8_t *out)
{
    int ch = p[0];
    unsigned bank = p[1], first = (unsigned)satemu_get_le(p + 2, 2), n = p[4];
    if (!hw->limits.jitter_table)
        return status_only(out, SATEMU_STATUS_NO_JITTER);
    if (st.applying)
        return status_only(out, SATEMU_STATUS_BUSY);
    uint8_t fault = 0;
    if (bank > 1 || n < 1 || n > SATEMU_JITTER_SET_MAX || first + n > SATEMU_JITTER_TABLE)
        fault = SATEMU_JITTER_FAULT_RANGE;
    else if (st.profile[ch][SATEMU_F_JIT_SIGMA] && st.profile[ch][SATEMU_F_JIT_BANK] == bank)
        fault = SATEMU_JITTER_FAULT_IN_FORCE;
    if (fault) {
        out[0] = SATEMU_STATUS_JITTER_BAD;
        out[1] = fault;
        out[2] = (uint8_t)bank;
        return 1 + SATEMU_JITTER_BAD_DETAIL_BYTES;
    }
    hw->write(hw->ctx, ch, SATEMU_REG_JIT_SEL, bank * SATEMU_JITTER_TABLE + first);
    for (unsigned i = 0; i < n; i++)
        hw->write(hw->ctx, ch, SATEMU_REG_JIT_VAL,
                  (uint32_t)satemu_get_le(p + SATEMU_JITTER_SET_HEAD_BYTES + 2 * i, 2));
    return status_only(out, SATEMU_STATUS_OK);
}

/* GET_PROFILE: channel u8, which u8 (SATEMU_PROFILE_STAGED or SATEMU_PROFILE_IN_FORCE). */
static size_t get_profile(const struct satemu_hw *hw, const uint8_t *p, uint8_t *out)
{
    int ch = p[0];
    if (p[1] != SATEMU_PROFILE_STAGED && p[1] != SATEMU_PROFILE_IN_FORCE)
        return status_only(out, SATEMU_STATUS_BAD_OPCODE);
    uint8_t *o = out;
    *o++ = SATEMU_STATUS_OK;
    for (int i = 0; i < SATEMU_PROFILE_FIELDS; i++)
        o = satemu_put_le(o, p[1] == SATEMU_PROFILE_IN_FORCE ? st.profile[ch][i] : shadow(hw, ch, i), 8);
    return (size_t)(o - out);
}

static size_t get_stats(const struct satemu_hw *hw, int ch, uint8_t *out)
{
    uint64_t values[SATEMU_STATS_FIELDS];
    satemu_stats_read(hw, ch, values);
    uint8_t *o = out;
    *o++ = SATEMU_STATUS_OK;
    for (int i = 0; i < SATEMU_STATS_FIELDS; i++)
        o = satemu_put_le(o, values[i], 8);
    return (size_t)(o - out);
}

/* The window of a ring that holds the last `ring` of the `count` items written (superframes,
 * log records): the first item to send is the one asked for (`*first`), or the oldest still
 * held if that is later; returns how many to send, at most `max` (the request's) and `limit`
 * (what fits a payload). */
static uint64_t ring_window(uint64_t count, uint64_t ring, uint64_t *first, unsigned max,
                            unsigned limit)
{
    if (count > ring && *first < count - ring)
        *first = count - ring;
    uint64_t n = *first < count ? count - *first : 0;
    if (n > max)
        n = max;
    return n > limit ? limit : n;
}

/* BOD_TRACE: channel u8, first superframe u32, max records u8. */
static size_t bod_trace(const struct satemu_hw *hw, const uint8_t *p, uint8_t *out)
{
    int ch = p[0];
    /* bod_start is the cycle superframe 0 began. A committed layout applies when the channel
     * takes it, which may fall within this answer: bod_start is read before and after bod_count
     * (two words, LSW first) until both reads agree, so the count and the start belong to the
     * same run of the block. */
    uint64_t start = satemu_read_reg(hw, ch, SATEMU_REG_BOD_START, SATEMU_REG_BOD_START_WIDTH);
    uint64_t again;
    uint32_t count;
    for (;;) {
        count = hw->read(hw->ctx, ch, SATEMU_REG_BOD_COUNT);
        again = satemu_read_reg(hw, ch, SATEMU_REG_BOD_START, SATEMU_REG_BOD_START_WIDTH);
        if (again == start)
            break;
        start = again;
    }
    /* A record a terminal a superframe (docs/bod.md, "Terminals"): `first` counts records. */
    unsigned per = satemu_terminal_count(st.profile[ch]);
    uint64_t records = (uint64_t)count * (per ? per : 1);
    uint64_t from = satemu_get_le(p + 1, 4);
    uint32_t n = (uint32_t)ring_window(records, hw->bod_ring, &from, p[5], SATEMU_BOD_TRACE_MAX);
    uint32_t first = (uint32_t)from;
    uint8_t *o = out;
    *o++ = SATEMU_STATUS_OK;
    o = satemu_put_le(o, count, 4);
    o = satemu_put_le(o, start, 8);
    o = satemu_put_le(o, first, 4);
    *o++ = (uint8_t)n;
    for (uint32_t i = 0; i < n; i++) {
        /* The ring's read port answers a cycle after the select: any bus read is later. */
        hw->write(hw->ctx, ch, SATEMU_REG_BOD_SEL, first + i);
        for (unsigned w = 0; w < SATEMU_BOD_RECORD_WORDS; w++)
            o = satemu_put_le(o, hw->read(hw->ctx, ch, SATEMU_REG_BOD_REC + w), 4);
    }
    return (size_t)(o - out);
}

/* log_count, live and 64 bits wide: the upper word before and after the lower one, again until
 * both reads agree, so that a carry between the two words' reads is never half seen. */
static uint64_t log_count(const struct satemu_hw *hw, int ch)
{
    uint32_t hi = hw->read(hw->ctx, ch, SATEMU_REG_LOG_COUNT + 1), lo, again;
    for (;;) {
        lo = hw->read(hw->ctx, ch, SATEMU_REG_LOG_COUNT);
        again = hw->read(hw->ctx, ch, SATEMU_REG_LOG_COUNT + 1);
        if (again == hi)
            return (uint64_t)hi << 32 | lo;
        hi = again;
    }
}

/* READ_LOG: channel u8, first record u64, max records u8. Records count from the log's last
 * clear; record r sits in slot r mod 2^log_bits of the channel's ring. */
static size_t read_log(const struct satemu_hw *hw, const uint8_t *p, uint8_t *out)
{
    int ch = p[0];
    uint64_t ring = log_records(hw);
    uint64_t count = log_count(hw, ch);
    uint32_t lost = hw->read(hw->ctx, ch, SATEMU_REG_LOG_LOST);
    uint64_t first = satemu_get_le(p + 1, 8);
    uint64_t n = ring_window(count, ring, &first, p[9], SATEMU_READ_LOG_MAX);
    uint8_t *o = out;
    *o++ = SATEMU_STATUS_OK;
    o = satemu_put_le(o, count, 8);
    o = satemu_put_le(o, lost, 4);
    o = satemu_put_le(o, first, 8);
    *o++ = (uint8_t)n;
    for (uint64_t i = 0; i < n; i++) {
        uint32_t at = hw->log[ch].base + 2u * (uint32_t)((first + i) & (ring - 1));
        /* Word 1, word 0, word 1 again: a slot the channel overwrote between the reads is sent
         * with word 1 as 0, no record (its valid bit is 0), which the host counts stale. */
        uint64_t w1 = hw->mem_read(hw->ctx, at + 1);
        uint64_t w0 = hw->mem_read(hw->ctx, at);
        if (hw->mem_read(hw->ctx, at + 1) != w1)
            w1 = 0;
        o = satemu_put_le(o, w0, 8);
        o = satemu_put_le(o, w1, 8);
    }
    return (size_t)(o - out);
}


/* Each request's payload: its length, and whether it starts with a channel (u8). */
static const struct {
    uint8_t known, channel;
    uint16_t length;
} forms[] = SATEMU_REQUEST_FORMS;

size_t satemu_handle(const struct satemu_hw *hw, const struct satemu_frame *req, uint8_t *out)
{
    const uint8_t *p = req->payload;
    st.requests++;
    if (req->op >= sizeof(forms) / sizeof(forms[0]) || !forms[req->op].known)
        return status_only(out, SATEMU_STATUS_BAD_OPCODE);
    if (req->length != forms[req->op].length)
        return status_only(out, SATEMU_STATUS_BAD_LENGTH);
    if (forms[req->op].channel && p[0] >= SATEMU_CHANNELS)
        return status_only(out, SATEMU_STATUS_BAD_CHANNEL);
    switch (req->op) {
    case SATEMU_OP_HELLO:
        return hello(hw, p, out);
    case SATEMU_OP_SET_PROFILE:
        return set_profile(hw, p, out);
    case SATEMU_OP_GET_PROFILE:
        return get_profile(hw, p, out);
    case SATEMU_OP_COMMIT:
        return commit(hw, p, out);
    case SATEMU_OP_LINK_STATS:
        return link_stats(hw, out);
    case SATEMU_OP_GET_STATS:
        return get_stats(hw, p[0], out);
    case SATEMU_OP_RESET_STATS:
        satemu_stats_reset(hw);
        satemu_terminals_reset_stats(hw);
        return status_only(out, SATEMU_STATUS_OK);
    case SATEMU_OP_TERMINAL_SET:
        if (satemu_timeline_running())
            return status_only(out, SATEMU_STATUS_RUNNING);
        return satemu_terminal_set(hw, p, out);
    case SATEMU_OP_LEVEL_SET:
        if (satemu_timeline_running())
            return status_only(out, SATEMU_STATUS_RUNNING);
        return satemu_level_set(hw, p, out);
    case SATEMU_OP_TERMINAL_STATS:
        return satemu_terminal_stats(hw, p, out);
    case SATEMU_OP_JITTER_SET:
        if (satemu_timeline_running())
            return status_only(out, SATEMU_STATUS_RUNNING);
        return jitter_set(hw, p, out);
    case SATEMU_OP_BOD_TRACE:
        if (!((hw->bod_mask >> p[0]) & 1))
            return status_only(out, SATEMU_STATUS_NO_BOD);
        return bod_trace(hw, p, out);
    case SATEMU_OP_READ_LOG:
        if (!has_log(hw, p[0]))
            return status_only(out, SATEMU_STATUS_NO_LOG);
        return read_log(hw, p, out);
    case SATEMU_OP_TIMELINE_WRITE:
    case SATEMU_OP_TIMELINE_START:
    case SATEMU_OP_TIMELINE_STOP:
    case SATEMU_OP_TIMELINE_STATUS:
        if (!satemu_timeline_entries(hw))
            return status_only(out, SATEMU_STATUS_NO_TIMELINE);
        if (st.applying && !pending(hw))
            settle(hw);
        return satemu_timeline_request(hw, req->op, p, out);
    case SATEMU_OP_CLEAR_LOG:
        if (!log_records(hw))
            return status_only(out, SATEMU_STATUS_NO_LOG);
        /* Both channels' logs restart at slot 0 in the same cycle, with their rings kept. */
        hw->log_ctl(hw->ctx, hw->log_bits | SATEMU_LOG_CLEAR);
        return status_only(out, SATEMU_STATUS_OK);
    }
    return status_only(out, SATEMU_STATUS_BAD_OPCODE);     /* an op forms has but not here */
}
