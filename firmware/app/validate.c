/* SPDX-License-Identifier: BSD-2-Clause */
/* Profile checks; satemu.base.validate is their Python reference (shared vectors pin both). Fields
 * are named by the generated enum satemu_field, so their order is the Python declaration's. */
#include <string.h>

#include "u128.h"
#include "validate.h"

const uint8_t satemu_profile_widths[SATEMU_PROFILE_FIELDS] = SATEMU_PROFILE_WIDTHS;

/* The background schedule's level fields, level by level. */
static const uint8_t bg_fields[SATEMU_BOD_BG_LEVELS] = SATEMU_BOD_BG_FIELDS;

/* The fastest the profile's frames can come: a frame of L bytes at most every
 * (L + ovh) * t_num / t_den cycles. BoD: the whole carrier, bod_slot_bytes of slot payload per
 * bod_slot_cycles (ovh = overhead); shaped: the shaper's q + num/den cycles a byte (ovh =
 * overhead); not shaped: the port's line rate with 24 bytes of preamble, FCS and gap.
 * satemu.base.validate.byte_time is the reference. */
static void byte_time(const struct satemu_hw *hw, const uint64_t *f, struct u128 *t_num,
                      uint64_t *t_den, uint64_t *ovh)
{
    *ovh = f[SATEMU_F_OVERHEAD];
    t_num->hi = 0;
    if (f[SATEMU_F_BOD_FLAGS] & SATEMU_BOD_ENABLE) {
        t_num->lo = f[SATEMU_F_BOD_SLOT_CYCLES];
        *t_den = f[SATEMU_F_BOD_SLOT_BYTES];
    } else if (f[SATEMU_F_RATE_Q] || f[SATEMU_F_RATE_NUM]) {
        *t_num = mul64(f[SATEMU_F_RATE_Q], f[SATEMU_F_RATE_DEN]);
        t_num->lo += f[SATEMU_F_RATE_NUM];
        t_num->hi += t_num->lo < f[SATEMU_F_RATE_NUM];
        *t_den = f[SATEMU_F_RATE_DEN];
    } else {
        t_num->lo = 8 * (uint64_t)hw->limits.f_clk;
        *t_den = hw->limits.port_bps;
        *ovh = 24;
    }
}

/* Whether BoD serves the channel: it is on, and the channel has the block. */
static int bod_serves(const struct satemu_hw *hw, int channel, const uint64_t *f)
{
    return (f[SATEMU_F_BOD_FLAGS] & SATEMU_BOD_ENABLE) && ((hw->bod_mask >> channel) & 1);
}

/* Whether the channel's departure times may spill to memory (limits.spill_mask). */
static int ring(const struct satemu_hw *hw, int channel)
{
    return (hw->limits.spill_mask >> channel) & 1;
}

/* Whether the chip holds the channel's departure times as distances: a channel without the
 * ring on a box with limits.delta_queue (satemu.base.params.ChannelParams.delta_coded). */
static int delta_coded(const struct satemu_hw *hw, int channel)
{
    return !ring(hw, channel) && hw->limits.delta_queue;
}

/* The departure times the chip holds for the channel (ChannelParams.queue_onchip). */
static uint64_t chip_queue(const struct satemu_hw *hw, int channel)
{
    return delta_coded(hw, channel) ? hw->limits.delta_queue : hw->limits.queue_fifo;
}

/* The cap on the channel's queue, in frames: limits.bod_queue while BoD serves it, else
 * limits.queue_depth where its departure times may spill to memory, else what the chip
 * holds. */
static uint64_t queue_cap(const struct satemu_hw *hw, int channel, const uint64_t *f)
{
    if (bod_serves(hw, channel, f))
        return hw->limits.bod_queue;
    return ring(hw, channel) ? hw->limits.queue_depth : chip_queue(hw, channel);
}

uint64_t satemu_budget_words(const struct satemu_hw *hw, int channel, const uint64_t *f)
{
    uint64_t floor_ = hw->limits.latency_floor;
    /* The longest a frame's delay can be: with jitter, the delay plus the largest entry a
     * table can hold times jit_sigma (satemu.base.validate.longest_delay). */
    uint64_t longest = f[SATEMU_F_DELAY]
                     + ((SATEMU_JITTER_ENTRY_MAX * f[SATEMU_F_JIT_SIGMA]) >> SATEMU_JITTER_SHIFT);
    uint64_t window = (longest > floor_ ? longest : floor_) + floor_;
    struct u128 t_num;
    uint64_t den, ovh;
    byte_time(hw, f, &t_num, &den, &ovh);
    uint64_t min_len = f[SATEMU_F_MIN_LEN];
    struct u128 num = mul_small(t_num, min_len + ovh);   /* cycles a frame, times den */
    struct u128 top = mul64(window, den);
    uint64_t in_delay = div128(top, num) + 2;
    uint64_t queued = f[SATEMU_F_QUEUE_FRAMES];
    if (queue_cap(hw, channel, f) < queued)
        queued = queue_cap(hw, channel, f);
    if (f[SATEMU_F_QUEUE_BYTES] / min_len < queued)
        queued = f[SATEMU_F_QUEUE_BYTES] / min_len;
    return (in_delay + queued) * (1 + (min_len + 7) / 8);
}

/* Whether the profile's queue can outgrow the departure times held on chip, so that each frame's
 * also goes to memory and back (satemu.base.params.ChannelParams.spills); a queue BoD serves never
 * does. */
static int spills(const struct satemu_hw *hw, int channel, const uint64_t *f)
{
    if (!ring(hw, channel) || bod_serves(hw, channel, f)
        || hw->limits.queue_depth <= hw->limits.queue_fifo)
        return 0;
    uint64_t min_len = f[SATEMU_F_MIN_LEN] ? f[SATEMU_F_MIN_LEN] : 1;
    uint64_t queued = f[SATEMU_F_QUEUE_FRAMES];
    if (f[SATEMU_F_QUEUE_BYTES] / min_len < queued)
        queued = f[SATEMU_F_QUEUE_BYTES] / min_len;
    if (hw->limits.queue_depth < queued)
        queued = hw->limits.queue_depth;
    return queued > hw->limits.queue_fifo;
}

/* Delay-line words per 65536 cycles the profile can demand at worst, as n / d: a frame of L
 * bytes takes 1 + ceil(L/8) <= (L + 15) / 8 words, one more (L + 23) / 8 where the queue
 * spills, and arrives at most every T * (L + ovh) cycles, T = t_num / t_den cycles per byte
 * (byte_time). (L + 15) / (L + ovh) is largest at min_len when ovh < 15, else at max_len (23
 * where it spills). satemu.base.validate.delay_line_traffic is the reference. */
static void traffic(const struct satemu_hw *hw, int channel, const uint64_t *f, struct u128 *n,
                    struct u128 *d)
{
    struct u128 t_num;
    uint64_t t_den, ovh;
    byte_time(hw, f, &t_num, &t_den, &ovh);
    uint64_t extra = spills(hw, channel, f) ? 23 : 15;
    uint64_t len = ovh < extra ? f[SATEMU_F_MIN_LEN] : f[SATEMU_F_MAX_LEN];
    *n = mul64((len + extra) << 16, t_den);
    *d = mul_small(t_num, 8 * (len + ovh));
}

uint64_t satemu_traffic_wpc(const struct satemu_hw *hw, int channel, const uint64_t *f)
{
    struct u128 n, d;
    traffic(hw, channel, f, &n, &d);
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

/* The BoD fields, only when BoD is on: satemu.base.validate's BoD rules, in its order. */
static void validate_bod(const struct satemu_hw *hw, int channel, const uint64_t *f,
                         struct satemu_verdict *v)
{
    if (!((hw->bod_mask >> channel) & 1))
        BAD(SATEMU_F_BOD_FLAGS, 0, 0);
    /* A slot takes fewer than SATEMU_DELTA_SLOT_SPAN cycles where the queue is delta-coded. */
    uint64_t slot_max = delta_coded(hw, channel) ? SATEMU_DELTA_SLOT_SPAN - 1 : 0xFFFFFFFFu;
    if (f[SATEMU_F_BOD_SLOT_CYCLES] < 32 || f[SATEMU_F_BOD_SLOT_CYCLES] > slot_max)
        BAD(SATEMU_F_BOD_SLOT_CYCLES, 32, slot_max);
    if (f[SATEMU_F_BOD_SLOTS] < 1)
        BAD(SATEMU_F_BOD_SLOTS, 1, 0xFFFFu);
    if (f[SATEMU_F_BOD_SLOT_BYTES] < 1)
        BAD(SATEMU_F_BOD_SLOT_BYTES, 1, 0xFFFFu);
    /* A queue deeper than the chip's departure times: a slot carries fewer than a quarter of
     * them (satemu.base.params.ChannelParams.slot_frames_max). */
    if (f[SATEMU_F_QUEUE_FRAMES] > chip_queue(hw, channel)) {
        uint64_t k = chip_queue(hw, channel) / 4 ? chip_queue(hw, channel) / 4 : 1;
        uint64_t most = k * (f[SATEMU_F_MIN_LEN] + f[SATEMU_F_OVERHEAD]) - 1;
        if (f[SATEMU_F_BOD_SLOT_BYTES] > most)
            BAD(SATEMU_F_BOD_SLOT_BYTES, 1, most);
    }
    uint64_t carrier = f[SATEMU_F_BOD_SLOTS] * SATEMU_BOD_RATE_ONE;
    if (f[SATEMU_F_BOD_CRA] > carrier)
        BAD(SATEMU_F_BOD_CRA, 0, carrier);
    if (f[SATEMU_F_BOD_RBDC_MAX] > carrier)
        BAD(SATEMU_F_BOD_RBDC_MAX, 0, carrier);
    if (f[SATEMU_F_BOD_REQ_PERIOD] < 1)
        BAD(SATEMU_F_BOD_REQ_PERIOD, 1, 0xFFFFu);
    if (f[SATEMU_F_BOD_LATENCY] < 1 || f[SATEMU_F_BOD_LATENCY] > SATEMU_BOD_LATENCY_MAX)
        BAD(SATEMU_F_BOD_LATENCY, 1, SATEMU_BOD_LATENCY_MAX);
    if (f[SATEMU_F_BOD_BG_COUNT] < 1 || f[SATEMU_F_BOD_BG_COUNT] > SATEMU_BOD_BG_LEVELS)
        BAD(SATEMU_F_BOD_BG_COUNT, 1, SATEMU_BOD_BG_LEVELS);
    for (unsigned i = 0; i < f[SATEMU_F_BOD_BG_COUNT]; i++) {
        /* slots (bits 15..0) at most bod_slots, for superframes (bits 31..16) at least 1 */
        uint64_t level = f[bg_fields[i]];
        if ((level & 0xFFFFu) > f[SATEMU_F_BOD_SLOTS] || (level >> 16) < 1)
            BAD(bg_fields[i], 1u << 16, 0xFFFF0000u | f[SATEMU_F_BOD_SLOTS]);
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
    if (f[SATEMU_F_LOSS_MODE] > 2)
        BAD(SATEMU_F_LOSS_MODE, 0, 2);
    if (f[SATEMU_F_RATE_DEN] < 1)
        BAD(SATEMU_F_RATE_DEN, 1, 0xFFFFFFFFu);
    if (f[SATEMU_F_RATE_NUM] >= f[SATEMU_F_RATE_DEN])
        BAD(SATEMU_F_RATE_NUM, 0, f[SATEMU_F_RATE_DEN] - 1);
    if (f[SATEMU_F_RATE_Q] == 0 && f[SATEMU_F_RATE_NUM]
        && 8 * f[SATEMU_F_RATE_NUM] < f[SATEMU_F_RATE_DEN])
        BAD(SATEMU_F_RATE_NUM, (f[SATEMU_F_RATE_DEN] + 7) / 8, f[SATEMU_F_RATE_DEN] - 1);
    if (f[SATEMU_F_MIN_LEN] < 1 || f[SATEMU_F_MIN_LEN] > f[SATEMU_F_MAX_LEN])
        BAD(SATEMU_F_MIN_LEN, 1, f[SATEMU_F_MAX_LEN]);
    if (f[SATEMU_F_MAX_LEN] > hw->limits.max_frame)
        BAD(SATEMU_F_MAX_LEN, f[SATEMU_F_MIN_LEN], hw->limits.max_frame);
    if (f[SATEMU_F_QUEUE_FRAMES] < 1 || f[SATEMU_F_QUEUE_FRAMES] > queue_cap(hw, channel, f))
        BAD(SATEMU_F_QUEUE_FRAMES, 1, queue_cap(hw, channel, f));
    if (f[SATEMU_F_QUEUE_BYTES] < f[SATEMU_F_MIN_LEN])
        BAD(SATEMU_F_QUEUE_BYTES, f[SATEMU_F_MIN_LEN], 0xFFFFFFFFu);
    /* The terminal table's registers (each terminal's own fields are checked at COMMIT). */
    if (f[SATEMU_F_TERM_MATCH] > SATEMU_MATCH_VLAN)
        BAD(SATEMU_F_TERM_MATCH, 0, SATEMU_MATCH_VLAN);
    if (f[SATEMU_F_TERM_MATCH]) {
        if (f[SATEMU_F_TERM_FRAMED] < 1 || f[SATEMU_F_TERM_FRAMED] > hw->limits.terminals)
            BAD(SATEMU_F_TERM_FRAMED, 1, hw->limits.terminals);
        uint64_t synthetic = (f[SATEMU_F_BOD_FLAGS] & SATEMU_BOD_ENABLE)
                             && ((hw->bod_mask >> channel) & 1) ? hw->limits.synthetic : 0;
        if (f[SATEMU_F_TERM_SYNTHETIC] > synthetic)
            BAD(SATEMU_F_TERM_SYNTHETIC, 0, synthetic);
        if (f[SATEMU_F_TERM_UNCLASSIFIED] != SATEMU_UNCLASSIFIED_DROP
            && f[SATEMU_F_TERM_UNCLASSIFIED] >= f[SATEMU_F_TERM_FRAMED])
            BAD(SATEMU_F_TERM_UNCLASSIFIED, 0, f[SATEMU_F_TERM_FRAMED] - 1);
    } else {
        if (f[SATEMU_F_TERM_FRAMED])
            BAD(SATEMU_F_TERM_FRAMED, 0, 0);
        if (f[SATEMU_F_TERM_SYNTHETIC])
            BAD(SATEMU_F_TERM_SYNTHETIC, 0, 0);
    }
    /* Jitter: only on a box whose channels have it, and not where BoD serves the channel. */
    if (f[SATEMU_F_JIT_SIGMA] && (!hw->limits.jitter_table || bod_serves(hw, channel, f)))
        BAD(SATEMU_F_JIT_SIGMA, 0, 0);
    /* Corruption: only on a box whose channels have it. */
    if (f[SATEMU_F_COR_P] && !(hw->limits.impairments & SATEMU_IMPAIR_CORRUPT))
        BAD(SATEMU_F_COR_P, 0, 0);
    /* ECN marking: only on a box whose channels have it, and not where BoD serves the channel. */
    if (f[SATEMU_F_ECN_SOJOURN]
        && (!(hw->limits.impairments & SATEMU_IMPAIR_ECN) || bod_serves(hw, channel, f)))
        BAD(SATEMU_F_ECN_SOJOURN, 0, 0);
    if (f[SATEMU_F_ECN_QUEUE]
        && (!(hw->limits.impairments & SATEMU_IMPAIR_ECN) || bod_serves(hw, channel, f)))
        BAD(SATEMU_F_ECN_QUEUE, 0, 0);
    /* Duplication: only on a box whose channels have it. */
    if (f[SATEMU_F_DUP_P] && !(hw->limits.impairments & SATEMU_IMPAIR_DUPLICATE))
        BAD(SATEMU_F_DUP_P, 0, 0);
    if (delta_coded(hw, channel) && !(f[SATEMU_F_BOD_FLAGS] & SATEMU_BOD_ENABLE)) {
        /* A frame's serialisation takes fewer than SATEMU_DELTA_FRAME_SPAN cycles. */
        uint64_t frame = f[SATEMU_F_MAX_LEN] + f[SATEMU_F_OVERHEAD];
        uint64_t frac = f[SATEMU_F_RATE_NUM] > 0;
        struct u128 span = mul64(frame, f[SATEMU_F_RATE_Q] + frac);
        if (span.hi || span.lo >= SATEMU_DELTA_FRAME_SPAN)
            BAD(SATEMU_F_RATE_Q, 0, (SATEMU_DELTA_FRAME_SPAN - 1) / frame - frac);
    }
    if (f[SATEMU_F_BOD_FLAGS] & SATEMU_BOD_ENABLE) {
        validate_bod(hw, channel, f, v);
        if (v->status)
            return;
    }
    /* Each channel's region is limits.mem_words; its queue's cap is the channel's. */
    uint64_t need = satemu_budget_words(hw, channel, f);
    if (need > hw->limits.mem_words) {
        v->status = SATEMU_STATUS_BUDGET;
        v->value = need;
        v->hi = hw->limits.mem_words;
        return;
    }
    /* Then its throughput, when the board bounds it: reject when n > wpc * d, exactly, wpc the
     * channel's guarantee. */
    uint64_t wpc = channel == SATEMU_CHANNEL_RETURN ? hw->limits.mem_wpc_return
                                                    : hw->limits.mem_wpc_forward;
    if (wpc) {
        struct u128 n, d;
        traffic(hw, channel, f, &n, &d);
        if (!ge128(mul_small(d, wpc), n)) {
            v->status = SATEMU_STATUS_THROUGHPUT;
            v->value = ceil_div_sat(n, d);
            v->hi = wpc;
        }
    }
}
