/* SPDX-License-Identifier: BSD-2-Clause */
/* The firmware's protocol codec, compiled on the host, against the shared vectors. */
#include <stdio.h>
#include <string.h>

#include "satemu_proto.h"

struct stream_frame { uint8_t seq, op; const unsigned char *payload; size_t len; };
struct stream_vector {
    const char *name;
    const unsigned char *bytes;
    size_t len;
    const struct stream_frame *frames;
    size_t nframes;
    uint32_t errors[SATEMU_ERR_COUNT];
};
#include "satemu_vectors.h"

#define N(a) (sizeof(a) / sizeof((a)[0]))

static int failures;
static int checks;

static void expect(int ok, const char *what, size_t i)
{
    checks++;
    if (!ok) {
        failures++;
        printf("FAIL %s #%zu\n", what, i);
    }
}

int main(void)
{
    static uint8_t buf[4 * SATEMU_MAX_ENCODED];

    for (size_t i = 0; i < N(crc_vectors); i++)
        expect(satemu_crc16(crc_vectors[i].data, crc_vectors[i].len) == crc_vectors[i].crc, "crc16", i);

    for (size_t i = 0; i < N(cobs_vectors); i++) {
        size_t n = satemu_cobs_encode(cobs_vectors[i].raw, cobs_vectors[i].raw_len, buf);
        expect(n == cobs_vectors[i].enc_len && !memcmp(buf, cobs_vectors[i].enc, n), "cobs encode", i);
        int m = satemu_cobs_decode(cobs_vectors[i].enc, cobs_vectors[i].enc_len, buf, sizeof(buf));
        expect(m == (int)cobs_vectors[i].raw_len && !memcmp(buf, cobs_vectors[i].raw, (size_t)m),
               "cobs decode", i);
    }

    for (size_t i = 0; i < N(frame_vectors); i++) {
        size_t n = satemu_encode_frame(frame_vectors[i].seq, frame_vectors[i].op,
                                       frame_vectors[i].payload, frame_vectors[i].len, buf);
        expect(n == frame_vectors[i].wire_len && !memcmp(buf, frame_vectors[i].wire, n), "frame encode", i);
        struct satemu_deframer d;
        struct satemu_frame f;
        satemu_deframer_init(&d);
        int got = 0;
        for (size_t k = 0; k < frame_vectors[i].wire_len; k++)
            got += satemu_deframe_byte(&d, frame_vectors[i].wire[k], &f);
        expect(got == 1 && f.seq == frame_vectors[i].seq && f.op == frame_vectors[i].op
               && f.length == frame_vectors[i].len
               && !memcmp(f.payload, frame_vectors[i].payload, f.length), "frame decode", i);
    }

    for (size_t i = 0; i < N(stream_vectors); i++) {
        const struct stream_vector *v = &stream_vectors[i];
        struct satemu_deframer d;
        struct satemu_frame f;
        satemu_deframer_init(&d);
        size_t got = 0;
        int same = 1;
        for (size_t k = 0; k < v->len; k++) {
            if (satemu_deframe_byte(&d, v->bytes[k], &f)) {
                if (got >= v->nframes || f.seq != v->frames[got].seq || f.op != v->frames[got].op
                    || f.length != v->frames[got].len
                    || memcmp(f.payload, v->frames[got].payload, f.length))
                    same = 0;
                got++;
            }
        }
        expect(same && got == v->nframes, v->name, i);
        expect(!memcmp(d.errors, v->errors, sizeof(d.errors)), v->name, i);
    }

    printf("%d checks, %d failed\n", checks, failures);
    printf("%d passed, %d failed\n", checks - failures, failures);
    return failures != 0;
}
