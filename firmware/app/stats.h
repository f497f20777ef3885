/* SPDX-License-Identifier: BSD-2-Clause */
/* Statistics: the channels' counters folded into 64-bit counts since the last RESET_STATS, their
 * gauges and the ports' counters, in GET_STATS order (enum satemu_stat). */
#ifndef SATEMU_STATS_H
#define SATEMU_STATS_H

#include <stdint.h>

#include "hw.h"

/* Snapshots both channels and adds what each statistics counter counted since its last fold
 * (modulo its width) to the 64-bit count GET_STATS reports. GET_STATS folds first; a firmware
 * whose counters are narrower than 64 bits must also fold more often than the fastest counter
 * wraps (a 32-bit byte count at 1 Gbit/s wraps after 34 s): satemu_fold_start snapshots, then
 * each satemu_fold_step folds one counter (it returns 0 once all are), so that the main loop
 * never stops serving the UART for a whole fold (on SERV, about 1,400 cycles a counter). */
void satemu_fold_counters(const struct satemu_hw *hw);
void satemu_fold_start(const struct satemu_hw *hw);
int satemu_fold_step(const struct satemu_hw *hw);

/* GET_STATS' values for a channel, by enum satemu_stat: folds, then the counts since the last
 * reset, the gauges of that snapshot, and the port's counters since the last reset. */
void satemu_stats_read(const struct satemu_hw *hw, int channel,
                       uint64_t values[SATEMU_STATS_FIELDS]);

/* RESET_STATS: clears both channels' counters and high-water marks at once, restarts the counts
 * and the ports' counters from there, and ends a fold under way. */
void satemu_stats_reset(const struct satemu_hw *hw);

#endif
