/* SPDX-License-Identifier: BSD-2-Clause */
/* Statistics: counter folding into 64-bit counts, and GET_STATS' values in their wire order. */
#include "stats.h"
#include "terminals.h"

/* GET_STATS' answer is the counters, the gauges and the port's counters, in this order. */
_Static_assert(SATEMU_COUNTERS + SATEMU_GAUGES + SATEMU_PORT_COUNTERS == SATEMU_STATS_FIELDS,
               "GET_STATS' fields");

static const uint16_t counter_regs[SATEMU_COUNTERS] = SATEMU_COUNTER_REGS;
static const uint16_t gauge_regs[SATEMU_GAUGES] = SATEMU_GAUGE_REGS;

/* Each counter's 64-bit count since the last RESET_STATS, and its register at the last fold. */
static uint64_t counts[SATEMU_CHANNELS][SATEMU_COUNTERS];
static uint64_t counts_raw[SATEMU_CHANNELS][SATEMU_COUNTERS];
/* The ports' counters at the last RESET_STATS. */
static uint32_t port_base[SATEMU_CHANNELS][SATEMU_PORT_COUNTERS];

static uint64_t counter_mask(const struct satemu_hw *hw)
{
    return hw->counter_bits && hw->counter_bits < 64 ? (UINT64_C(1) << hw->counter_bits) - 1
                                                     : UINT64_MAX;
}

/* Adds what counter i of channel ch counted since its last fold, from the snapshot now in the
 * registers (any snapshot taken since that fold will do). */
static void fold_one(const struct satemu_hw *hw, int ch, unsigned i)
{
    uint64_t raw = satemu_read_reg(hw, ch, counter_regs[i], 64);
    counts[ch][i] += (raw - counts_raw[ch][i]) & counter_mask(hw);
    counts_raw[ch][i] = raw;
}

#define FOLDS (SATEMU_CHANNELS * SATEMU_COUNTERS)

/* The next counter satemu_fold_step folds, channel-major; FOLDS: none until the next
 * satemu_fold_start. */
static unsigned fold_next = FOLDS;

void satemu_fold_start(const struct satemu_hw *hw)
{
    hw->stats(hw->ctx, SATEMU_STATS_SNAPSHOT);
    fold_next = 0;
    satemu_terminals_fold_start();
}

int satemu_fold_step(const struct satemu_hw *hw)
{
    if (fold_next >= FOLDS)
        return satemu_terminals_fold_step(hw);     /* then each terminal's counters */
    fold_one(hw, (int)(fold_next / SATEMU_COUNTERS), fold_next % SATEMU_COUNTERS);
    fold_next++;
    return 1;
}

void satemu_fold_counters(const struct satemu_hw *hw)
{
    /* The channels' counters only (a terminal's are folded when asked for, and in the
     * periodic fold). */
    hw->stats(hw->ctx, SATEMU_STATS_SNAPSHOT);
    for (unsigned i = 0; i < FOLDS; i++)
        fold_one(hw, (int)(i / SATEMU_COUNTERS), i % SATEMU_COUNTERS);
    fold_next = FOLDS;
}

static uint32_t port_count(const struct satemu_hw *hw, int ch, unsigned i)
{
    return hw->port_count ? hw->port_count(hw->ctx, ch, i) : 0;
}

void satemu_stats_read(const struct satemu_hw *hw, int ch, uint64_t values[SATEMU_STATS_FIELDS])
{
    satemu_fold_counters(hw);
    uint64_t *v = values;
    for (unsigned i = 0; i < SATEMU_COUNTERS; i++)
        *v++ = counts[ch][i];
    for (unsigned i = 0; i < SATEMU_GAUGES; i++)      /* as the snapshot holds them */
        *v++ = satemu_read_reg(hw, ch, gauge_regs[i], 64);
    for (unsigned i = 0; i < SATEMU_PORT_COUNTERS; i++)    /* since the reset, mod 2^32 */
        *v++ = (uint32_t)(port_count(hw, ch, i) - port_base[ch][i]);
}

void satemu_stats_reset(const struct satemu_hw *hw)
{
    hw->stats(hw->ctx, SATEMU_STATS_CLEAR);
    for (int ch = 0; ch < SATEMU_CHANNELS; ch++) {
        for (unsigned i = 0; i < SATEMU_PORT_COUNTERS; i++)
            port_base[ch][i] = port_count(hw, ch, i);
        for (unsigned i = 0; i < SATEMU_COUNTERS; i++)
            counts[ch][i] = counts_raw[ch][i] = 0;    /* the clear zeroed the registers */
    }
    fold_next = FOLDS;    /* a fold under way would read a snapshot from before */
}
