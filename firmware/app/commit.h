/* SPDX-License-Identifier: BSD-2-Clause */
/* The commit state's parts the timeline runner (timeline.c) uses; requests.c keeps the state. */
#ifndef SATEMU_COMMIT_H
#define SATEMU_COMMIT_H

#include <stddef.h>
#include <stdint.h>

#include "hw.h"

/* The profile in force on a channel, as the gateware took it, by field (enum satemu_field). */
const uint64_t *satemu_in_force(int channel);

/* The generation staged on both channels (a load staged whole), 0 when there is none. */
uint32_t satemu_staged_load(void);

/* A field as a channel's shadow holds it (the load staged). */
uint64_t satemu_shadow_field(const struct satemu_hw *hw, int channel, int field);

/* 1 for a field a commit takes only with COMMIT_LAYOUT (the memory region, the BoD settings). */
int satemu_is_layout(int field);

/* A commit the gateware has not taken yet (one it has taken is settled first). */
int satemu_applying(const struct satemu_hw *hw);

/* satemu_applying, a layout waiting for its delay line to drain, or a commit pending in the
 * gateware: no timeline may start. */
int satemu_commit_busy(const struct satemu_hw *hw);

/* One field into a channel's shadow register(s). */
void satemu_write_field(const struct satemu_hw *hw, int channel, int field, uint64_t value);

/* Every shadow field but the layout's back to the profile in force, and nothing staged: a load
 * staged and not committed is dropped. */
void satemu_unstage(const struct satemu_hw *hw);

/* Commits the shadow of both channels named for `cycle` (COMMIT_AT) under the timeline's
 * generation; returns 1 when the gateware says the cycle was already past (STATUS_LATE). */
int satemu_commit_at(const struct satemu_hw *hw, uint64_t cycle);

/* Little-endian fields of the requests and answers. */
uint64_t satemu_get_le(const uint8_t *p, int n);
uint8_t *satemu_put_le(uint8_t *p, uint64_t v, int n);

#endif
