/* SPDX-License-Identifier: BSD-2-Clause */
/* Request handling: one request in, its response payload out (satemu.protocol's messages). */
#ifndef SATEMU_REQUESTS_H
#define SATEMU_REQUESTS_H

#include <stddef.h>
#include <stdint.h>

#include "hw.h"

/* Handles one request; writes the response payload (status byte first) to out, which holds
 * SATEMU_MAX_PAYLOAD bytes, and returns its length. */
size_t satemu_handle(const struct satemu_hw *hw, const struct satemu_frame *req, uint8_t *out);

#endif
