/* SPDX-License-Identifier: BSD-2-Clause */
/* libFuzzer target: arbitrary bytes into the deframer and the command layer. Every frame the
 * deframer delivers must re-encode to itself, and every request must get a response that fits a
 * frame and starts with a known status, without touching memory it should not. */
#include <stdlib.h>
#include <string.h>

#include "requests.h"
#include "satemu_proto.h"

static uint32_t regs[SATEMU_CHANNELS][SATEMU_REG_WORDS];
static uint32_t rd(void *ctx, int ch, unsigned word) { (void)ctx; return regs[ch][word]; }
static void wr(void *ctx, int ch, unsigned word, uint32_t v) { (void)ctx; regs[ch][word] = v; }
static void strobe(void *ctx, unsigned flags) { (void)ctx; (void)flags; }
static uint32_t port_count(void *ctx, int ch, unsigned counter)
{
    (void)ctx;
    return regs[ch][0] * 3u + counter;
}
/* The DRAM under the frame-log rings: a word's value is made from its address. */
static uint64_t mem_read(void *ctx, uint32_t word)
{
    (void)ctx;
    return (uint64_t)word * 0x9e3779b97f4a7c15ull;
}
static void log_ctl(void *ctx, unsigned value) { (void)ctx; (void)value; }
static const struct satemu_hw hw = {
    .read = rd, .write = wr, .commit = strobe, .stats = strobe, .port_count = port_count,
    .limits = { .f_clk = 75000000u, .queue_depth = 65535, .queue_fifo = 1024, .spill_mask = 3,
                .bod_queue = 65535, .max_frame = 2048,
                .latency_floor = 2048, .mem_words = 6u << 20, .port_bps = 1000000000u,
                .mem_wpc_forward = 40000u, .mem_wpc_return = 20000u },
    .delay_line = { { 0, 6u << 20 }, { 6u << 20, 6u << 20 } },
    .bod_mask = 1u << SATEMU_CHANNEL_RETURN, .bod_ring = 8, .counter_bits = 32,
    .log_bits = 4, .log = { { 12u << 20, 32 }, { (12u << 20) + 32, 32 } },
    .mem_read = mem_read, .log_ctl = log_ctl,
};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static struct satemu_deframer d;
    static uint8_t wire[SATEMU_MAX_ENCODED];
    struct satemu_frame f, g;
    regs[1][SATEMU_REG_BOD_COUNT] = 300;     /* a full BoD ring, so BOD_TRACE reads records */
    regs[0][SATEMU_REG_LOG_COUNT] = 70;      /* wrapped log rings, so READ_LOG reads records */
    regs[1][SATEMU_REG_LOG_COUNT + 1] = 1;
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
        uint8_t resp[SATEMU_MAX_PAYLOAD];
        struct satemu_frame r = { seq, op, len, payload };
        size_t rn = satemu_handle(&hw, &r, resp);
        if (rn < 1 || rn > SATEMU_MAX_PAYLOAD || resp[0] > SATEMU_STATUS_LAST)
            abort();
        if (!satemu_encode_frame(seq, (uint8_t)(op | SATEMU_RESPONSE_BIT), resp, rn, wire))
            abort();
    }
    return 0;
}
