/* SPDX-License-Identifier: BSD-2-Clause */
/* Profile checks: every field of a profile, then the delay line's size and throughput, before
 * any of it touches the gateware (satemu.base.validate is the Python reference). */
#ifndef SATEMU_VALIDATE_H
#define SATEMU_VALIDATE_H

#include <stdint.h>

#include "hw.h"

struct satemu_verdict {
    uint8_t status;                   /* enum satemu_status */
    uint8_t field;                    /* enum satemu_field, for BAD_FIELD */
    uint64_t value, lo, hi;           /* BAD_FIELD: value and range; BUDGET, THROUGHPUT:
                                         need, -, have */
};

/* Each profile field's register width in bits, by field (enum satemu_field). */
extern const uint8_t satemu_profile_widths[SATEMU_PROFILE_FIELDS];

/* Delay-line words a profile can occupy at worst on a channel
 * (satemu.base.validate.delay_line_budget). */
uint64_t satemu_budget_words(const struct satemu_hw *hw, int channel, const uint64_t *f);
/* Delay-line words per 65536 cycles a profile can demand at worst, rounded up (UINT64_MAX when
 * beyond 64 bits); satemu_validate rejects it (THROUGHPUT) when it exceeds the channel's
 * nonzero mem_wpc_forward or mem_wpc_return. */
uint64_t satemu_traffic_wpc(const struct satemu_hw *hw, int channel, const uint64_t *f);
/* The verdict on a profile (its fields by enum satemu_field) for a channel (BoD is allowed only
 * where the hardware has it). */
void satemu_validate(const struct satemu_hw *hw, int channel, const uint64_t *fields,
                     struct satemu_verdict *v);

#endif
