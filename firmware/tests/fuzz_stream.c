/* SPDX-License-Identifier: BSD-2-Clause */
/* libFuzzer target: the deframer as the UART feeds it, one instance for the whole run and never
 * reset, so that each input continues whatever the inputs before it left: a partial frame,
 * garbage longer than SATEMU_MAX_ENCODED, a delimiter-less run. Beside it the target keeps its
 * own model of the stream, the bytes since the last delimiter, and checks after every byte:
 * - the deframer holds min(those bytes, SATEMU_MAX_ENCODED) and flags an overflow exactly when
 *   there are more (it never writes past its buffer: ASan);
 * - at a delimiter it yields a frame exactly when those bytes are one valid frame (a COBS block
 *   that decodes to at most SATEMU_MAX_FRAME bytes: seq, op, a length equal to the payload's,
 *   the payload, a CRC-16 of the rest that matches), and then that frame; otherwise it counts
 *   exactly one error, none for an empty block;
 * and after every input, on a copy of the deframer, that a delimiter then a valid frame (drawn
 * from the input) yields exactly that frame, whatever came before: it resynchronises.
 * A failure prints the bytes the input continued (those since the last delimiter): fed to a new
 * deframer before the input, they reproduce it. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "satemu_proto.h"

static struct satemu_deframer d;
/* The model: the bytes since the last delimiter (the first SATEMU_MAX_ENCODED), and how many. */
static uint8_t pending[SATEMU_MAX_ENCODED];
static size_t pending_n;
/* The same when this input began, for the report of a failure. */
static uint8_t carried[SATEMU_MAX_ENCODED];
static size_t carried_n;

static void fail(const char *why)
{
    size_t n = carried_n < sizeof(carried) ? carried_n : sizeof(carried);
    fprintf(stderr, "fuzz_stream: %s; %zu byte(s) since the last delimiter before this input%s:\n",
            why, carried_n, carried_n > n ? " (more than the deframer holds: any will do)" : "");
    for (size_t i = 0; i < n; i++)
        fprintf(stderr, "%02x%s", carried[i], i % 32 == 31 ? "\n" : "");
    fprintf(stderr, "\n");
    abort();
}

/* COBS as satemu.base.protocol.cobs_decode, written apart from proto.c's: 0 and the length in *n, or
 * -1 for a malformed block. The block holds no zero byte (the delimiter ends it); out holds
 * len bytes. */
static int model_cobs(const uint8_t *in, size_t len, uint8_t *out, size_t *n)
{
    size_t i = 0, o = 0;
    while (i < len) {
        size_t code = in[i];
        if (i + code > len)
            return -1;
        memcpy(out + o, in + i + 1, code - 1);
        o += code - 1;
        i += code;
        if (code != 0xFF && i < len)
            out[o++] = 0;
    }
    *n = o;
    return 0;
}

/* Whether the model's pending bytes are one valid frame; if so its body in body[0..*n). */
static int model_frame(uint8_t *body, size_t *n)
{
    if (pending_n == 0 || pending_n > sizeof(pending) || model_cobs(pending, pending_n, body, n))
        return 0;
    if (*n < 6 || *n > SATEMU_MAX_FRAME)
        return 0;
    size_t length = body[2] | (size_t)body[3] << 8;
    /* satemu_crc16 is checked against the shared vectors (test_proto.c). */
    return length == *n - 6 && satemu_crc16(body, *n - 2) == (body[*n - 2] | body[*n - 1] << 8);
}

static uint32_t error_total(const struct satemu_deframer *x)
{
    uint32_t total = 0;
    for (int i = 0; i < SATEMU_ERR_COUNT; i++)
        total += x->errors[i];
    return total;
}

/* One byte into the deframer and the model, checked against each other. */
static void feed(uint8_t byte)
{
    struct satemu_frame f;
    uint8_t body[SATEMU_MAX_ENCODED];
    size_t n = 0;
    int want = 0;
    if (byte == 0)
        want = model_frame(body, &n);
    uint32_t errors = error_total(&d);
    int got = satemu_deframe_byte(&d, byte, &f);
    if (byte != 0) {
        if (pending_n < sizeof(pending))
            pending[pending_n] = byte;
        pending_n++;
        if (got)
            fail("a frame without a delimiter");
        if (d.fill != (pending_n < sizeof(pending) ? pending_n : sizeof(pending))
            || d.overflow != (pending_n > sizeof(pending)))
            fail("the deframer's fill or overflow is not the stream's");
        return;
    }
    if (got != want)
        fail(want ? "a valid frame was dropped" : "an invalid frame was delivered");
    if (got && (f.length > SATEMU_MAX_PAYLOAD || f.length != n - 6 || f.seq != body[0]
                || f.op != body[1] || memcmp(f.payload, body + 4, f.length)))
        fail("the frame delivered is not the one on the wire");
    if (error_total(&d) - errors != (uint32_t)(!got && pending_n))
        fail("a bad block was not counted exactly once");
    if (d.fill || d.overflow)
        fail("a delimiter did not empty the deframer");
    pending_n = 0;
}

/* On a copy of the deframer: a delimiter, then a frame from the input's bytes, comes out whole. */
static void check_resync(const uint8_t *data, size_t size)
{
    static uint8_t wire[SATEMU_MAX_ENCODED];
    struct satemu_deframer c = d;
    struct satemu_frame f;
    uint8_t body[SATEMU_MAX_ENCODED];
    size_t len = size < SATEMU_MAX_PAYLOAD ? size : SATEMU_MAX_PAYLOAD, n;
    const uint8_t *payload = data + size - len;
    uint8_t seq = (uint8_t)size, op = size ? data[0] : 0;
    size_t wn = satemu_encode_frame(seq, op, payload, len, wire);
    if (satemu_deframe_byte(&c, 0, &f) != model_frame(body, &n))
        fail("a delimiter after the input did not end its block as the model did");
    int got = 0;
    for (size_t i = 0; i < wn; i++) {
        if (satemu_deframe_byte(&c, wire[i], &f)) {
            if (i != wn - 1)
                fail("resynchronisation: a frame before the frame's delimiter");
            got = 1;
        }
    }
    if (!got || f.seq != seq || f.op != op || f.length != len || memcmp(f.payload, payload, len))
        fail("resynchronisation: a delimiter then a valid frame did not yield that frame");
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static int started;
    if (!started) {
        satemu_deframer_init(&d);
        started = 1;
    }
    carried_n = pending_n;
    memcpy(carried, pending, pending_n < sizeof(pending) ? pending_n : sizeof(pending));
    for (size_t i = 0; i < size; i++)
        feed(data[i]);
    check_resync(data, size);
    return 0;
}
