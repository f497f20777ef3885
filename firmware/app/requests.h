/* SPDX-License-Identifier: BSD-2-Clause */
/* Request handling: one request in, its response payload out (satemu.base.protocol's messages). */
#ifndef SATEMU_REQUESTS_H
#define SATEMU_REQUESTS_H

#include <stddef.h>
#include <stdint.h>

#include "hw.h"

/* Starts the command layer: the profile in force is what the channels hold now (their reset
 * values at boot), nothing is staged; each channel with a frame log gets its ring and starts it
 * empty (LOG_CLEAR). Call it once before the first request. */
void satemu_requests_init(const struct satemu_hw *hw);

/* Handles one request; writes the response payload (status byte first) to out, which holds
 * SATEMU_MAX_PAYLOAD bytes, and returns its length. */
size_t satemu_handle(const struct satemu_hw *hw, const struct satemu_frame *req, uint8_t *out);

/* Between requests: finishes a commit whose BoD part waits for the delay line to drain
 * (answered PENDING), once it has drained and nothing new was staged. */
void satemu_requests_poll(const struct satemu_hw *hw);

#endif
