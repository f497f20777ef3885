/* SPDX-License-Identifier: BSD-2-Clause */
/* libFuzzer target: arbitrary bytes into the deframer; every frame it delivers must re-encode to
 * something that decodes back to the same frame. */
#include <stdlib.h>
#include <string.h>

#include "satemu_proto.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static struct satemu_deframer d;
    static uint8_t wire[SATEMU_MAX_ENCODED];
    struct satemu_frame f, g;
    satemu_deframer_init(&d);
    for (size_t i = 0; i < size; i++) {
        if (!satemu_deframe_byte(&d, data[i], &f))
            continue;
        if (f.length > SATEMU_MAX_PAYLOAD)
            abort();
        uint8_t seq = f.seq, op = f.op;
        uint8_t payload[SATEMU_MAX_PAYLOAD];
        uint16_t len = f.length;
        memcpy(payload, f.payload, len);
        size_t n = satemu_encode_frame(seq, op, payload, len, wire);
        struct satemu_deframer e;
        satemu_deframer_init(&e);
        int got = 0;
        for (size_t k = 0; k < n; k++)
            got += satemu_deframe_byte(&e, wire[k], &g);
        if (got != 1 || g.seq != seq || g.op != op || g.length != len || memcmp(g.payload, payload, len))
            abort();
    }
    return 0;
}
