/* SPDX-License-Identifier: BSD-2-Clause */
/* Host-firmware protocol codec: CRC-16, COBS and a byte-at-a-time deframer. */
#ifndef SATEMU_PROTO_H
#define SATEMU_PROTO_H

#include <stddef.h>
#include <stdint.h>

#include "satemu_proto_gen.h"   /* opcodes, status codes, sizes: generated from satemu.base.protocol */

uint16_t satemu_crc16(const uint8_t *data, size_t len);

/* COBS without the delimiter. encode needs len + len/254 + 1 bytes of room; both return the
 * output length; decode returns -1 on a malformed block, -2 when out_cap would be exceeded. */
size_t satemu_cobs_encode(const uint8_t *in, size_t len, uint8_t *out);
int satemu_cobs_decode(const uint8_t *in, size_t len, uint8_t *out, size_t out_cap);

/* Encodes one frame, delimiter included, into out (SATEMU_MAX_ENCODED bytes); returns its length
 * or 0 if the payload is too long. */
size_t satemu_encode_frame(uint8_t seq, uint8_t op, const uint8_t *payload, size_t len,
                           uint8_t *out);

enum satemu_deframe_error {
    SATEMU_ERR_COBS, SATEMU_ERR_SHORT, SATEMU_ERR_LENGTH, SATEMU_ERR_CRC, SATEMU_ERR_OVERLONG,
    SATEMU_ERR_COUNT
};

struct satemu_frame {
    uint8_t seq;
    uint8_t op;
    uint16_t length;
    const uint8_t *payload;    /* valid until the next satemu_deframe_byte() */
};

struct satemu_deframer {
    uint8_t raw[SATEMU_MAX_ENCODED];
    uint8_t body[SATEMU_MAX_FRAME];
    size_t fill;
    int overflow;
    uint32_t errors[SATEMU_ERR_COUNT];
};

void satemu_deframer_init(struct satemu_deframer *d);

/* Feeds one received byte. Returns 1 and fills *frame when the byte completes a valid frame,
 * 0 otherwise; anything that cannot be a frame is counted in d->errors and skipped. */
int satemu_deframe_byte(struct satemu_deframer *d, uint8_t byte, struct satemu_frame *frame);

#endif
