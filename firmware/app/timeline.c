/* SPDX-License-Identifier: BSD-2-Clause */
/* The timeline runner (docs/architecture.md, "Timelines"): its entries sit in the DRAM, two
 * words each; between requests the firmware stages each step on the profile in force as soon
 * as the step before it has taken effect, and commits it named for its cycle (COMMIT_AT) only
 * once that cycle is less than f_clk / SATEMU_TIMELINE_LEAD_DIVISOR cycles (a tenth of a second)
 * ahead. Until then the step is the firmware's alone: TIMELINE_STOP drops it, so a stop leaves
 * at most one step, due within the lead, in the gateware, and a later load waits no longer than
 * that.
 *
 * A timeline started while a load is staged whole is armed for that load: it starts when the
 * COMMIT of the load has taken effect, in the same request (or once a layout part waiting for
 * the drain has), so that a host that dies between its requests leaves either the old profile
 * or the new one with its timeline. A SET_PROFILE or a TIMELINE_STOP disarms it. */
#include "timeline.h"
#include "commit.h"
#include "validate.h"

/* The most entries one step may have: every field of both channels once. */
#define STEP_ENTRIES_MAX (SATEMU_CHANNELS * SATEMU_PROFILE_FIELDS)

static struct {
    uint8_t state;                      /* enum satemu_timeline_run */
    uint8_t fault, verdict;             /* why it stopped (enum satemu_timeline_fault, status) */
    uint8_t staging;                    /* a step committed, not taken yet */
    uint8_t held;                       /* a step staged in the shadow, not committed yet */
    uint32_t armed_gen;                 /* ARMED: the load whose commit starts the run */
    uint32_t entries, next, lap, applied, late, fault_entry;
    uint64_t start, period, lap_start, in_force_cycle, staged_cycle;
} tl;

uint32_t satemu_timeline_entries(const struct satemu_hw *hw)
{
    if (!hw->mem_write || !hw->mem_load || hw->timeline.words < 2)
        return 0;
    return hw->timeline.words / 2;
}

void satemu_timeline_init(void)
{
    tl.state = SATEMU_TIMELINE_RUN_IDLE;
    tl.staging = tl.held = 0;
}

int satemu_timeline_running(void)
{
    return tl.state == SATEMU_TIMELINE_RUN_RUNNING;
}

static int running_or_armed(void)
{
    return tl.state == SATEMU_TIMELINE_RUN_RUNNING || tl.state == SATEMU_TIMELINE_RUN_ARMED;
}

void satemu_timeline_disarm(void)
{
    if (tl.state == SATEMU_TIMELINE_RUN_ARMED)
        tl.state = SATEMU_TIMELINE_RUN_IDLE;
}

void satemu_timeline_loaded(const struct satemu_hw *hw, uint32_t generation)
{
    if (tl.state != SATEMU_TIMELINE_RUN_ARMED || generation != tl.armed_gen)
        return;
    tl.state = SATEMU_TIMELINE_RUN_RUNNING;
    satemu_timeline_poll(hw);           /* the first step, committed at once if near */
}

/* The box's cycle, as a statistics snapshot takes it (GET_STATS' snapshot_cycle). */
static uint64_t box_now(const struct satemu_hw *hw)
{
    hw->stats(hw->ctx, SATEMU_STATS_SNAPSHOT);
    return satemu_read_reg(hw, SATEMU_CHANNEL_FORWARD, SATEMU_REG_SNAPSHOT_CYCLE, 64);
}

static size_t status_only(uint8_t *out, uint8_t status)
{
    out[0] = status;
    return 1;
}

static uint64_t entry_offset(const struct satemu_hw *hw, uint32_t n)
{
    return hw->mem_load(hw->ctx, hw->timeline.base + 2u * n);
}

static uint64_t entry_word1(const struct satemu_hw *hw, uint32_t n)
{
    return hw->mem_load(hw->ctx, hw->timeline.base + 2u * n + 1u);
}

/* Why an entry cannot be part of a timeline (SATEMU_TIMELINE_FAULT_NONE: it can): a channel
 * that does not exist, a field a step may not set (the seed, the layout) or a value wider than
 * its field. */
static uint8_t entry_fault(uint64_t w1)
{
    unsigned ch = (unsigned)(w1 >> 56), field = (unsigned)(w1 >> 48) & 0xFFu;
    uint64_t value = w1 & ((1ull << SATEMU_TIMELINE_VALUE_BITS) - 1);
    if (ch >= SATEMU_CHANNELS || field >= SATEMU_PROFILE_FIELDS || satemu_is_layout((int)field)
        || field == SATEMU_F_SEED)
        return SATEMU_TIMELINE_FAULT_FIELD;
    if (satemu_profile_widths[field] < 64 && value >> satemu_profile_widths[field])
        return SATEMU_TIMELINE_FAULT_VALUE;
    return SATEMU_TIMELINE_FAULT_NONE;
}

/* entry_fault, and a field the profile the run starts on (the one in force, or the load staged
 * when armed) does not let a step set: the overhead of a channel that BoD serves (its slots
 * carry the bytes the overhead adds, and a superframe keeps the shape it started with).
 * Checked at the start and as each step is staged, not as written: the profile may be loaded
 * after its timeline's entries. */
static uint8_t entry_fault_on(const struct satemu_hw *hw, uint64_t w1, int staged)
{
    uint8_t fault = entry_fault(w1);
    unsigned ch = (unsigned)(w1 >> 56), field = (unsigned)(w1 >> 48) & 0xFFu;
    if (fault || field != SATEMU_F_OVERHEAD)
        return fault;
    uint64_t bod = staged ? satemu_shadow_field(hw, (int)ch, SATEMU_F_BOD_FLAGS)
                          : satemu_in_force((int)ch)[SATEMU_F_BOD_FLAGS];
    return bod & SATEMU_BOD_ENABLE ? SATEMU_TIMELINE_FAULT_FIELD : SATEMU_TIMELINE_FAULT_NONE;
}

static size_t timeline_bad(uint8_t *out, uint32_t entry, uint8_t fault)
{
    out[0] = SATEMU_STATUS_TIMELINE_BAD;
    uint8_t *o = satemu_put_le(out + 1, entry, 4);
    *o++ = fault;
    return (size_t)(o - out);
}

/* TIMELINE_WRITE: first entry u32, n u8, TIMELINE_WRITE_MAX entries (the first n count). */
static size_t timeline_write(const struct satemu_hw *hw, const uint8_t *p, uint8_t *out)
{
    uint32_t first = (uint32_t)satemu_get_le(p, 4), n = p[4];
    uint32_t store = satemu_timeline_entries(hw);
    if (running_or_armed())
        return status_only(out, SATEMU_STATUS_RUNNING);
    if (!n || n > SATEMU_TIMELINE_WRITE_MAX)
        return timeline_bad(out, first, SATEMU_TIMELINE_FAULT_EMPTY);
    if (first > store || n > store - first)
        return timeline_bad(out, first, SATEMU_TIMELINE_FAULT_BEYOND);
    for (uint32_t i = 0; i < n; i++) {
        uint8_t fault = entry_fault(satemu_get_le(p + 5 + 16 * i + 8, 8));
        if (fault)
            return timeline_bad(out, first + i, fault);
    }
    for (uint32_t i = 0; i < n; i++) {
        hw->mem_write(hw->ctx, hw->timeline.base + 2u * (first + i),
                      satemu_get_le(p + 5 + 16 * i, 8));
        hw->mem_write(hw->ctx, hw->timeline.base + 2u * (first + i) + 1u,
                      satemu_get_le(p + 5 + 16 * i + 8, 8));
    }
    return status_only(out, SATEMU_STATUS_OK);
}

/* TIMELINE_START: entries u32, start cycle u64, period u64 (0: once). The entries are checked
 * again as stored (sorted, allowed, the period above the last offset), and the start at most
 * SATEMU_TIMELINE_AHEAD_MAX_S of box time ahead. With a load staged whole the run is armed for
 * its commit; else every shadow field is put back to the profile in force, so a load staged in
 * part is dropped rather than carried by the first step, and the run starts. */
static size_t timeline_start(const struct satemu_hw *hw, const uint8_t *p, uint8_t *out)
{
    uint32_t n = (uint32_t)satemu_get_le(p, 4);
    uint64_t start = satemu_get_le(p + 4, 8), period = satemu_get_le(p + 12, 8);
    if (running_or_armed())
        return status_only(out, SATEMU_STATUS_RUNNING);
    if (satemu_commit_busy(hw))
        return status_only(out, SATEMU_STATUS_BUSY);
    if (!n)
        return timeline_bad(out, 0, SATEMU_TIMELINE_FAULT_EMPTY);
    if (n > satemu_timeline_entries(hw))
        return timeline_bad(out, n - 1, SATEMU_TIMELINE_FAULT_BEYOND);
    uint32_t load = satemu_staged_load();
    uint64_t last = 0;
    uint32_t same = 0;
    for (uint32_t i = 0; i < n; i++) {
        uint64_t off = entry_offset(hw, i);
        uint8_t fault = entry_fault_on(hw, entry_word1(hw, i), load != 0);
        if (fault)
            return timeline_bad(out, i, fault);
        if (off < last)
            return timeline_bad(out, i, SATEMU_TIMELINE_FAULT_UNSORTED);
        same = i && off == last ? same + 1 : 1;
        if (same > STEP_ENTRIES_MAX)
            return timeline_bad(out, i, SATEMU_TIMELINE_FAULT_STEP);
        last = off;
    }
    if (period && period <= last)
        return timeline_bad(out, n - 1, SATEMU_TIMELINE_FAULT_PERIOD);
    uint64_t now = box_now(hw), ahead = (uint64_t)SATEMU_TIMELINE_AHEAD_MAX_S * hw->limits.f_clk;
    if (start > now && start - now > ahead)
        return timeline_bad(out, 0, SATEMU_TIMELINE_FAULT_AHEAD);
    if (last > UINT64_MAX - start)
        return timeline_bad(out, n - 1, SATEMU_TIMELINE_FAULT_AHEAD);
    if (!load)
        satemu_unstage(hw);
    tl.entries = n;
    tl.start = tl.lap_start = start;
    tl.period = period;
    tl.next = tl.lap = tl.applied = tl.late = tl.fault_entry = 0;
    tl.fault = SATEMU_TIMELINE_FAULT_NONE;
    tl.verdict = SATEMU_STATUS_OK;
    tl.in_force_cycle = 0;
    tl.staging = tl.held = 0;
    tl.armed_gen = load;
    tl.state = load ? SATEMU_TIMELINE_RUN_ARMED : SATEMU_TIMELINE_RUN_RUNNING;
    if (!load)
        satemu_timeline_poll(hw);       /* the first step, committed before the answer if near */
    return status_only(out, SATEMU_STATUS_OK);
}

static int stop_on(uint8_t fault, uint8_t verdict, uint32_t entry)
{
    tl.state = SATEMU_TIMELINE_RUN_FAILED;
    tl.fault = fault;
    tl.verdict = verdict;
    tl.fault_entry = entry;
    return 0;
}

/* Stages the next step (tl.next and the entries at its offset) on the profile in force, checked
 * as a whole profile; returns 0 when the run ended (done, or failed on the step). */
static int stage_next(const struct satemu_hw *hw)
{
    if (tl.next == tl.entries) {
        /* Once, or the next lap would begin past the 64-bit cycle count: done. */
        if (!tl.period || tl.lap_start > UINT64_MAX - tl.period) {
            tl.state = SATEMU_TIMELINE_RUN_DONE;
            return 0;
        }
        tl.next = 0;
        tl.lap++;
        tl.lap_start += tl.period;
    }
    uint64_t off = entry_offset(hw, tl.next);
    if (off > UINT64_MAX - tl.lap_start) {
        tl.state = SATEMU_TIMELINE_RUN_DONE;
        return 0;
    }
    uint64_t f[SATEMU_CHANNELS][SATEMU_PROFILE_FIELDS];
    uint32_t touched = 0, end = tl.next;
    for (int ch = 0; ch < SATEMU_CHANNELS; ch++)
        for (int i = 0; i < SATEMU_PROFILE_FIELDS; i++)
            f[ch][i] = satemu_in_force(ch)[i];
    for (; end < tl.entries && entry_offset(hw, end) == off; end++) {
        uint64_t w1 = entry_word1(hw, end);
        /* The store, checked at the start, has changed. */
        uint8_t fault = end - tl.next >= STEP_ENTRIES_MAX ? SATEMU_TIMELINE_FAULT_STEP
                                                          : entry_fault_on(hw, w1, 0);
        if (fault)
            return stop_on(fault, SATEMU_STATUS_OK, end);
        unsigned ch = (unsigned)(w1 >> 56), field = (unsigned)(w1 >> 48) & 0xFFu;
        f[ch][field] = w1 & ((1ull << SATEMU_TIMELINE_VALUE_BITS) - 1);
        touched |= 1u << ch;
    }
    for (int ch = 0; ch < SATEMU_CHANNELS; ch++) {
        if (!((touched >> ch) & 1))
            continue;
        struct satemu_verdict v;
        satemu_validate(hw, ch, f[ch], &v);
        if (v.status != SATEMU_STATUS_OK)
            return stop_on(SATEMU_TIMELINE_FAULT_PROFILE, v.status, tl.next);
    }
    for (int ch = 0; ch < SATEMU_CHANNELS; ch++)
        for (int i = 0; i < SATEMU_PROFILE_FIELDS; i++)
            if (f[ch][i] != satemu_in_force(ch)[i])
                satemu_write_field(hw, ch, i, f[ch][i]);
    tl.held = 1;
    tl.staged_cycle = tl.lap_start + off;
    tl.next = end;
    return 1;
}

/* The step taken since it was committed: counted. */
static void taken(void)
{
    tl.staging = 0;
    tl.applied++;
    tl.in_force_cycle = tl.staged_cycle;
}

int satemu_timeline_poll(const struct satemu_hw *hw)
{
    if (tl.state != SATEMU_TIMELINE_RUN_RUNNING)
        return 0;
    if (satemu_applying(hw))
        return 1;
    if (tl.staging)
        taken();
    if (!tl.held && !stage_next(hw))
        return 0;
    uint64_t lead = hw->limits.f_clk / SATEMU_TIMELINE_LEAD_DIVISOR;
    uint64_t now = box_now(hw);
    if (tl.staged_cycle > now && tl.staged_cycle - now > lead)
        return 1;                       /* held: not near yet */
    tl.held = 0;
    if (satemu_commit_at(hw, tl.staged_cycle))
        tl.late++;
    tl.staging = 1;
    return 1;
}

/* TIMELINE_STOP: no further step, and an armed run disarmed (its load stays staged). A step
 * held is dropped (the shadow back to the profile in force); one committed and not yet taken,
 * due within the lead, still takes effect. */
static size_t timeline_stop(const struct satemu_hw *hw, uint8_t *out)
{
    satemu_timeline_disarm();
    if (tl.state == SATEMU_TIMELINE_RUN_RUNNING) {
        tl.state = SATEMU_TIMELINE_RUN_IDLE;
        if (tl.held) {
            tl.held = 0;
            satemu_unstage(hw);
        }
    }
    return status_only(out, SATEMU_STATUS_OK);
}

static size_t timeline_status(const struct satemu_hw *hw, uint8_t *out)
{
    if (!satemu_applying(hw) && tl.staging && tl.state != SATEMU_TIMELINE_RUN_RUNNING)
        taken();                        /* the step committed before a stop, now taken */
    uint8_t *o = out;
    *o++ = SATEMU_STATUS_OK;
    *o++ = tl.state;
    o = satemu_put_le(o, tl.entries, 4);
    o = satemu_put_le(o, tl.start, 8);
    o = satemu_put_le(o, tl.period, 8);
    o = satemu_put_le(o, tl.next, 4);
    o = satemu_put_le(o, tl.lap, 4);
    o = satemu_put_le(o, tl.applied, 4);
    o = satemu_put_le(o, tl.late, 4);
    o = satemu_put_le(o, tl.in_force_cycle, 8);
    o = satemu_put_le(o, tl.fault_entry, 4);
    *o++ = tl.fault;
    *o++ = tl.verdict;
    return (size_t)(o - out);
}

size_t satemu_timeline_request(const struct satemu_hw *hw, unsigned op, const uint8_t *p,
                               uint8_t *out)
{
    switch (op) {
    case SATEMU_OP_TIMELINE_WRITE:
        return timeline_write(hw, p, out);
    case SATEMU_OP_TIMELINE_START:
        return timeline_start(hw, p, out);
    case SATEMU_OP_TIMELINE_STOP:
        return timeline_stop(hw, out);
    default:
        return timeline_status(hw, out);
    }
}
