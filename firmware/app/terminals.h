/* SPDX-License-Identifier: BSD-2-Clause */
/* Terminals (docs/bod.md, "Terminals"): a load's terminal table staged under its generation
 * (TERMINAL_SET, LEVEL_SET), checked and written into the terminal window at its COMMIT, and
 * each terminal's counters (TERMINAL_STATS). */
#ifndef SATEMU_TERMINALS_H
#define SATEMU_TERMINALS_H

#include <stddef.h>
#include <stdint.h>

#include "hw.h"

/* A terminal as a load stages it: its fields (enum satemu_term_field) and the generation. */
struct satemu_terminal {
    uint32_t gen;
    uint64_t f[SATEMU_TERMINAL_FIELDS];
};

/* An entry of the level table: a rate (bytes a superframe x 256), its superframes. */
struct satemu_level {
    uint32_t gen;
    uint32_t rate, length;
};

/* A channel's terminal table and counters, which the board provides (struct satemu_hw's terms):
 * room for `cap` terminals and `level_cap` levels; `counts` and `raw` hold, for each terminal
 * with frames and then no one's (limits.terminals + 1 sets), its counters' 64-bit counts and
 * their registers at the last fold (counters narrower than 64 bits wrap). */
struct satemu_term_store {
    struct satemu_terminal *t;
    unsigned cap;
    struct satemu_level *levels;
    unsigned level_cap;
    uint64_t (*counts)[SATEMU_TERMINAL_COUNTERS];
    uint64_t (*raw)[SATEMU_TERMINAL_COUNTERS];
};

/* TERMINAL_BAD's detail. */
struct satemu_term_verdict {
    uint8_t status;                   /* OK, or TERMINAL_BAD */
    uint16_t index;                   /* the terminal (or level), or SATEMU_TABLE_INDEX */
    uint8_t rule;                     /* enum satemu_term_rule */
    uint64_t value, lo, hi;
};

size_t satemu_terminal_set(const struct satemu_hw *hw, const uint8_t *p, uint8_t *out);
size_t satemu_level_set(const struct satemu_hw *hw, const uint8_t *p, uint8_t *out);
size_t satemu_terminal_stats(const struct satemu_hw *hw, const uint8_t *p, uint8_t *out);

/* The terminals a channel's staged profile (`f`) declares, with frames and synthetic: 0 for a
 * profile without a table. */
unsigned satemu_terminal_count(const uint64_t *f);

/* At COMMIT of load `gen`: whether each channel's table is staged whole under it (0: it is
 * not); then its verdict (satemu.base.validate.terminal_verdict and terminal_budget) against
 * the channels' staged profiles `f[channel]`, in `v`. */
int satemu_terminals_staged(const struct satemu_hw *hw, uint32_t gen, const uint64_t *const *f);
void satemu_terminals_check(const struct satemu_hw *hw, const uint64_t *const *f,
                            struct satemu_term_verdict *v);
/* Writes each channel's staged table into its terminal window and level table (the shadow),
 * once the gateware has refilled its shadow after the last commit. */
void satemu_terminals_write(const struct satemu_hw *hw, const uint64_t *const *f);

/* Counters: cleared with RESET_STATS; folded one counter a call (1 while some are left of a
 * fold begun with satemu_terminals_fold_start). */
void satemu_terminals_reset_stats(const struct satemu_hw *hw);
void satemu_terminals_fold_start(void);
int satemu_terminals_fold_step(const struct satemu_hw *hw);

#endif
