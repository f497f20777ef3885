/* SPDX-License-Identifier: BSD-2-Clause */
/* Host-firmware protocol codec, the C twin of satemu.base.protocol (checked against shared vectors). */
#include <string.h>

#include "satemu_proto.h"

uint16_t satemu_crc16(const uint8_t *data, size_t len)
{
    uint16_t crc = 0xFFFF;
    for (size_t i = 0; i < len; i++) {
        crc ^= (uint16_t)data[i] << 8;
        for (int bit = 0; bit < 8; bit++)
            crc = (crc & 0x8000) ? (uint16_t)((crc << 1) ^ 0x1021) : (uint16_t)(crc << 1);
    }
    return crc;
}

size_t satemu_cobs_encode(const uint8_t *in, size_t len, uint8_t *out)
{
    size_t code_at = 0, o = 1;
    uint8_t code = 1;
    int full = 0;                     /* the last code written was a full block's 0xFF */
    for (size_t i = 0; i < len; i++) {
        if (in[i] == 0) {
            out[code_at] = code;
            code_at = o++;
            code = 1;
            full = 0;
        } else {
            out[o++] = in[i];
            if (++code == 0xFF) {
                out[code_at] = code;
                code_at = o++;
                code = 1;
                full = 1;
            }
        }
    }
    if (code == 1 && full)
        return o - 1;                 /* data ended with a full block: no empty block after it */
    out[code_at] = code;
    return o;
}

int satemu_cobs_decode(const uint8_t *in, size_t len, uint8_t *out, size_t out_cap)
{
    size_t i = 0, o = 0;
    while (i < len) {
        uint8_t code = in[i];
        if (code == 0 || i + code > len)
            return -1;
        for (size_t k = i + 1; k < i + code; k++) {
            if (in[k] == 0)
                return -1;
            if (o >= out_cap)
                return -2;
            out[o++] = in[k];
        }
        i += code;
        if (code != 0xFF && i < len) {
            if (o >= out_cap)
                return -2;
            out[o++] = 0;
        }
    }
    return (int)o;
}

size_t satemu_encode_frame(uint8_t seq, uint8_t op, const uint8_t *payload, size_t len,
                           uint8_t *out)
{
    uint8_t body[SATEMU_MAX_FRAME];
    if (len > SATEMU_MAX_PAYLOAD)
        return 0;
    body[0] = seq;
    body[1] = op;
    body[2] = (uint8_t)len;
    body[3] = (uint8_t)(len >> 8);
    if (len)
        memcpy(body + 4, payload, len);
    uint16_t crc = satemu_crc16(body, len + 4);
    body[len + 4] = (uint8_t)crc;
    body[len + 5] = (uint8_t)(crc >> 8);
    size_t n = satemu_cobs_encode(body, len + 6, out);
    out[n] = 0;
    return n + 1;
}

void satemu_deframer_init(struct satemu_deframer *d)
{
    memset(d, 0, sizeof(*d));
}

static int decode(struct satemu_deframer *d, struct satemu_frame *frame)
{
    int n = satemu_cobs_decode(d->raw, d->fill, d->body, sizeof(d->body));
    if (n < 0) {
        d->errors[n == -2 ? SATEMU_ERR_OVERLONG : SATEMU_ERR_COBS]++;
        return 0;
    }
    if (n < 6) {
        d->errors[SATEMU_ERR_SHORT]++;
        return 0;
    }
    uint16_t length = (uint16_t)(d->body[2] | (d->body[3] << 8));
    if ((size_t)length != (size_t)n - 6) {
        d->errors[SATEMU_ERR_LENGTH]++;
        return 0;
    }
    uint16_t crc = (uint16_t)(d->body[n - 2] | (d->body[n - 1] << 8));
    if (satemu_crc16(d->body, (size_t)n - 2) != crc) {
        d->errors[SATEMU_ERR_CRC]++;
        return 0;
    }
    frame->seq = d->body[0];
    frame->op = d->body[1];
    frame->length = length;
    frame->payload = d->body + 4;
    return 1;
}

int satemu_deframe_byte(struct satemu_deframer *d, uint8_t byte, struct satemu_frame *frame)
{
    if (byte != 0) {
        if (d->fill < sizeof(d->raw))
            d->raw[d->fill++] = byte;
        else
            d->overflow = 1;
        return 0;
    }
    int got = 0;
    if (d->overflow)
        d->errors[SATEMU_ERR_OVERLONG]++;
    else if (d->fill)
        got = decode(d, frame);
    d->fill = 0;
    d->overflow = 0;
    return got;
}
