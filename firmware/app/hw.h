/* SPDX-License-Identifier: BSD-2-Clause */
/* The firmware's view of the hardware: register access, strobes and the box's limits, behind
 * struct satemu_hw so that the same code runs on the SoC (main.c) and, for tests, on the host. */
#ifndef SATEMU_HW_H
#define SATEMU_HW_H

#include <stdint.h>

#include "satemu_proto.h"

struct satemu_term_store;

/* A region of the DRAM (a channel's delay line, its frame-log ring), in 64-bit words. */
struct satemu_region {
    uint32_t base, words;
};

/* Filled by member: on the SoC from the generated board header (satemu_board_gen.h). */
struct satemu_hw {
    void *ctx;
    uint32_t (*read)(void *ctx, int channel, unsigned word);
    void (*write)(void *ctx, int channel, unsigned word, uint32_t value);
    /* Strobes that reach both channels in the same cycle. */
    void (*commit)(void *ctx, unsigned flags);
    void (*stats)(void *ctx, unsigned flags);
    /* A counter of the channel's ingress port kept outside the channel (enum
     * satemu_port_counter: the MAC's), free-running, 32 bits (NULL: none). */
    uint32_t (*port_count)(void *ctx, int channel, unsigned counter);
    /* What the firmware enforces and HELLO reports (satemu.base.protocol.LIMIT_FIELDS). */
    struct satemu_limits limits;
    /* Each channel's delay line; its size is limits.mem_words on every board. */
    struct satemu_region delay_line[SATEMU_CHANNELS];
    /* Bandwidth-on-Demand: a bit per channel that has the BoD block, and the depth of its
     * statistics ring (superframe records). */
    uint32_t bod_mask;
    uint32_t bod_ring;
    /* Width of the gateware's statistics counters (SATEMU_COUNTER_BITS; 0 means 64). Narrower
     * counters wrap; satemu_fold_counters keeps the 64-bit counts the host sees. */
    uint32_t counter_bits;
    /* The frame log: each channel's ring of 1 << log_bits records, two 64-bit words each (record
     * n in slot n mod 2^log_bits, at word log[ch].base + 2 slot), which the channel writes into
     * the DRAM. log_bits 0 (or above SATEMU_LOG_BITS_MAX), or no mem_read or log_ctl: the box
     * has no log; log[ch].words 0: that channel has none (nor has its gateware, which ignores
     * LOG_CTL). */
    uint32_t log_bits;
    struct satemu_region log[SATEMU_CHANNELS];
    /* One 64-bit word of the DRAM, by word address, as it is there now (no cached copy) (NULL:
     * the CPU cannot read the DRAM). */
    uint64_t (*mem_read)(void *ctx, uint32_t word);
    /* The timeline store: entries of two 64-bit words from DRAM word timeline.base, which only
     * the CPU uses (words 0, or no mem_write or mem_load: the box runs no timelines). */
    struct satemu_region timeline;
    /* One 64-bit word of the DRAM that only the CPU uses: written, and read back (possibly
     * through the CPU's caches) (NULL: none). */
    void (*mem_write)(void *ctx, uint32_t word, uint64_t value);
    uint64_t (*mem_load)(void *ctx, uint32_t word);
    /* Writes LOG_CTL of both channels in the same cycle. */
    void (*log_ctl)(void *ctx, unsigned value);
    /* The UART deframer's discards by cause (enum satemu_deframe_error), for LINK_STATS
     * (NULL: none kept). */
    const uint32_t *link_errors;
    /* Each channel's terminal table and counters (struct satemu_term_store, terminals.h; NULL:
     * the channel has none). */
    struct satemu_term_store *terms[SATEMU_CHANNELS];
};

/* A register of `width` bits at `word` of a channel: one word, or two, least significant first. */
static inline uint64_t satemu_read_reg(const struct satemu_hw *hw, int channel, unsigned word,
                                       unsigned width)
{
    uint64_t v = hw->read(hw->ctx, channel, word);
    if (width > 32)
        v |= (uint64_t)hw->read(hw->ctx, channel, word + 1) << 32;
    return v;
}

#endif
