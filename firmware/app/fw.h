/* SPDX-License-Identifier: BSD-2-Clause */
/* Firmware command layer: requests in, responses out, profiles checked before they touch the
 * gateware. Hardware access goes through struct satemu_hw so the same code runs on the SoC and,
 * for tests, on the host. */
#ifndef SATEMU_FW_H
#define SATEMU_FW_H

#include <stddef.h>
#include <stdint.h>

#include "satemu_proto.h"

/* SATEMU_PROFILE_FIELDS (the length of satemu.protocol.PROFILE_FIELDS) comes with the
 * generated header. */

struct satemu_hw {
    void *ctx;
    uint32_t (*read)(void *ctx, int channel, unsigned word);
    void (*write)(void *ctx, int channel, unsigned word, uint32_t value);
    /* Strobes that reach both channels in the same cycle. */
    void (*commit)(void *ctx, unsigned flags);
    void (*stats)(void *ctx, unsigned flags);
    uint32_t f_clk;                   /* Hz */
    uint64_t port_bps;
    uint32_t mem_base[2], mem_words[2];
    uint32_t queue_depth, max_frame, latency_floor;
    /* Frames the channel's ingress MAC discarded for a bad preamble: a free-running 32-bit
     * count (NULL: none). */
    uint32_t (*port_drops)(void *ctx, int channel);
    /* Bandwidth-on-Demand: a bit per channel that has the BoD block, and the depth of its
     * statistics ring (superframe records). */
    uint32_t bod_mask;
    uint32_t bod_ring;
    /* Delay-line throughput each channel is guaranteed with both busy, in 64-bit words per
     * 65536 cycles (SATEMU_MEM_WPC); 0: not limited. */
    uint32_t mem_wpc;
    /* Width of the gateware's statistics counters (SATEMU_COUNTER_BITS; 0 means 64). Narrower
     * counters wrap; satemu_fold_counters keeps the 64-bit counts the host sees. */
    uint32_t counter_bits;
};

struct satemu_verdict {
    uint8_t status;                   /* enum satemu_status */
    uint8_t field;                    /* index into the profile fields, for BAD_FIELD */
    uint64_t value, lo, hi;           /* BAD_FIELD: value and range; BUDGET, THROUGHPUT:
                                         need, -, have */
};

/* The widths of the profile fields, in order (satemu.protocol.PROFILE_FIELDS). */
extern const uint8_t satemu_profile_widths[SATEMU_PROFILE_FIELDS];

uint64_t satemu_budget_words(const struct satemu_hw *hw, const uint64_t *f);
/* Delay-line words per 65536 cycles a profile can demand at worst, rounded up (UINT64_MAX when
 * beyond 64 bits); satemu_validate rejects it (THROUGHPUT) when it exceeds a nonzero mem_wpc. */
uint64_t satemu_traffic_wpc(const struct satemu_hw *hw, const uint64_t *f);
/* The verdict on a profile for a channel (BoD is allowed only where the hardware has it). */
void satemu_validate(const struct satemu_hw *hw, int channel, const uint64_t *fields,
                     struct satemu_verdict *v);

/* Snapshots both channels and adds what each statistics counter counted since its last fold
 * (modulo its width) to the 64-bit count GET_STATS reports. GET_STATS folds first; a firmware
 * whose counters are narrower than 64 bits must also fold more often than the fastest counter
 * wraps (a 32-bit byte count at 1 Gbit/s wraps after 34 s): satemu_fold_start snapshots, then
 * each satemu_fold_step folds one counter (it returns 0 once all are), so that the main loop
 * never stops serving the UART for a whole fold (on SERV, about 1,400 cycles a counter). */
void satemu_fold_counters(const struct satemu_hw *hw);
void satemu_fold_start(const struct satemu_hw *hw);
int satemu_fold_step(const struct satemu_hw *hw);

/* Handles one request; writes the response payload (status byte first) to out, which holds
 * SATEMU_MAX_PAYLOAD bytes, and returns its length. */
size_t satemu_handle(const struct satemu_hw *hw, const struct satemu_frame *req, uint8_t *out);

#endif
