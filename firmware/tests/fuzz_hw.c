/* SPDX-License-Identifier: BSD-2-Clause */
/* libFuzzer target: the command layer on hostile hardware. The input chooses the box (every
 * limit of struct satemu_limits, each delay line's and frame-log ring's base and size,
 * bod_mask, bod_ring, counter_bits, log_bits, the deframer's counts LINK_STATS reports, whether
 * the ports' counters, those counts and the DRAM's reads exist) and what every register read,
 * port counter and DRAM word returns (zero, all ones, the sign bit, raw words, ...), then
 * requests that satemu_handle answers one after the other, with satemu_requests_poll between
 * them. Checks, besides the sanitizers (the request's payload is a heap buffer of exactly its
 * length, the answer one of SATEMU_MAX_PAYLOAD bytes):
 * - every answer is 1 to SATEMU_MAX_PAYLOAD bytes and starts with a known status (FUZZ_STATUSES:
 *   a bit per satemu.base.protocol.Status, which the build passes);
 * - every register read and write is of a channel and a word of the register map; a write made
 *   for a request that names a channel is to that channel;
 * - a refused request (FUZZ_REFUSALS: a bit per status that refuses before acting, which the
 *   build passes) writes no register and strobes nothing but a statistics snapshot;
 * - every DRAM read is of a word of the ring of the channel a READ_LOG names; LOG_CTL is
 *   written to both channels only with LOG_CLEAR and the ring's bits;
 * - HELLO's answer is whole and reports the limits it was given (the frame log's records those
 *   of log_bits where the box has a log, else 0), LINK_STATS' the link's counts, READ_LOG's
 *   head and the records it counts.
 *
 * Input: the box and the requests from the front, the register reads from the back, so that
 * mutating one seldom shifts the other; payload bytes past what remains are zeros. A register
 * holds what was last written to it or read from it (0 at first): a zero selector, and every
 * read once the input is spent, return that.
 *   box:     the limits as HELLO sends them (SATEMU_LIMITS_BYTES, little-endian, in its order);
 *            per channel the delay line's base and words (u32 each), then per channel the log
 *            ring's; bod_mask, bod_ring (u32); counter_bits, log_bits (u8); flags (u8; bit 0:
 *            no port counters, bit 1: no link counts, bit 2: no DRAM reads); the link counts
 *            (SATEMU_ERR_COUNT u32).
 *   request: op (u8; 0 ends the requests), form (u8); if form's bit 0 is set, a length (u16,
 *            modulo SATEMU_MAX_PAYLOAD + 1), else the length of op's form (form >> 1 for an
 *            unknown op); then the payload.
 *   read:    a selector byte (last byte first), see read_value; a DRAM word takes two, its
 *            lower half first. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "requests.h"

#if !defined(FUZZ_STATUSES) || !defined(FUZZ_REFUSALS)
#error "the build passes FUZZ_STATUSES and FUZZ_REFUSALS (tests/firmware/fuzzing.py)"
#endif

static const struct {
    uint8_t known, channel;
    uint16_t length;
} forms[] = SATEMU_REQUEST_FORMS;
#define OPS (sizeof(forms) / sizeof(forms[0]))

/* The hostile box of one input. */
struct box {
    const uint8_t *data;
    size_t front, back;                /* data[front..back) is not consumed yet */
    uint32_t regs[SATEMU_CHANNELS][SATEMU_REG_WORDS];    /* the last value written or read */
    int channel;                       /* the channel the request names, or -1 */
    int op;                            /* the request's opcode */
    unsigned writes, strobes;          /* since the request began */
    const struct satemu_hw *hw;
};

static struct box box;

static void fail(const char *why, int channel, unsigned word)
{
    fprintf(stderr, "fuzz_hw: %s (channel %d, word %u)\n", why, channel, word);
    abort();
}

static uint64_t take_front(struct box *b, int n)
{
    uint64_t v = 0;
    for (int i = 0; i < n; i++)
        v |= (uint64_t)(b->front < b->back ? b->data[b->front++] : 0) << (8 * i);
    return v;
}

static uint64_t get_le(const uint8_t *p, int n)
{
    uint64_t v = 0;
    for (int i = n - 1; i >= 0; i--)
        v = v << 8 | p[i];
    return v;
}

static int take_back(struct box *b, uint8_t *byte)
{
    if (b->front >= b->back)
        return 0;
    *byte = b->data[--b->back];
    return 1;
}

/* What a read returns, by the next selector from the back: the register's value, 0, all ones,
 * the sign bit, the largest signed word, 4 raw bytes, a small value (the selector's top bits) or
 * the register's value plus one (a moving counter); the register's value once the input is
 * spent. */
static uint32_t read_value(struct box *b, uint32_t stored)
{
    uint8_t sel, byte;
    if (!take_back(b, &sel))
        return stored;
    switch (sel & 7) {
    case 1: return 0;
    case 2: return 0xFFFFFFFFu;
    case 3: return 0x80000000u;
    case 4: return 0x7FFFFFFFu;
    case 5: {
        uint32_t v = 0;
        for (int i = 0; i < 4 && take_back(b, &byte); i++)
            v = v << 8 | byte;
        return v;
    }
    case 6: return sel >> 3;
    case 7: return stored + 1;
    default: return stored;
    }
}

static void check_reg(int channel, unsigned word, void *ctx)
{
    if (ctx != &box)
        fail("a callback without the hardware's context", channel, word);
    if (channel < 0 || channel >= SATEMU_CHANNELS || word >= SATEMU_REG_WORDS)
        fail("a register outside the map", channel, word);
}

static uint32_t rd(void *ctx, int channel, unsigned word)
{
    struct box *b = ctx;
    check_reg(channel, word, ctx);
    return b->regs[channel][word] = read_value(b, b->regs[channel][word]);
}

static void wr(void *ctx, int channel, unsigned word, uint32_t value)
{
    struct box *b = ctx;
    check_reg(channel, word, ctx);
    if (b->channel >= 0 && channel != b->channel)
        fail("a write to another channel than the request's", channel, word);
    b->regs[channel][word] = value;
    b->writes++;
}

static void strobe(void *ctx, unsigned flags)
{
    if (ctx != &box)
        fail("a strobe without the hardware's context", -1, flags);
    box.strobes++;
}

/* A statistics snapshot alone changes nothing but the snapshot registers, which only the
 * firmware reads (GET_STATS takes its own): a read of the counters and the cycle, which a
 * refusal may make (TIMELINE_START checks its start against the box's cycle). */
static void stats_strobe(void *ctx, unsigned flags)
{
    if (flags != SATEMU_STATS_SNAPSHOT)
        strobe(ctx, flags);
    else if (ctx != &box)
        fail("a strobe without the hardware's context", -1, flags);
}

/* A DRAM word: what two reads give (stored 0). Only a READ_LOG reads, and only its channel's
 * ring: 2 << log_bits words from the ring's base. */
static uint64_t mem_read(void *ctx, uint32_t word)
{
    struct box *b = ctx;
    if (ctx != &box)
        fail("a DRAM read without the hardware's context", -1, word);
    if (b->op != SATEMU_OP_READ_LOG || b->channel < 0)
        fail("a DRAM read outside READ_LOG", b->channel, word);
    uint64_t at = (uint32_t)(word - b->hw->log[b->channel].base);
    if (b->hw->log_bits > SATEMU_LOG_BITS_MAX || at >= (uint64_t)2 << b->hw->log_bits)
        fail("a DRAM read outside the channel's ring", b->channel, word);
    uint64_t lo = read_value(b, 0);
    return lo | (uint64_t)read_value(b, 0) << 32;
}

/* The timeline store: every word written or read back lies within it (what is read back is
 * what the input gives, as a channel's register). */
static void timeline_word(struct box *b, uint32_t word)
{
    if (word - b->hw->timeline.base >= b->hw->timeline.words)
        fail("a timeline-store word outside the store", b->channel, word);
}

static void mem_write(void *ctx, uint32_t word, uint64_t value)
{
    (void)value;
    if (ctx != &box)
        fail("a DRAM write without the hardware's context", -1, word);
    timeline_word(ctx, word);
}

static uint64_t mem_load(void *ctx, uint32_t word)
{
    struct box *b = ctx;
    if (ctx != &box)
        fail("a DRAM load without the hardware's context", -1, word);
    timeline_word(b, word);
    uint64_t lo = read_value(b, 0);
    return lo | (uint64_t)read_value(b, 0) << 32;
}

static void log_ctl(void *ctx, unsigned value)
{
    struct box *b = ctx;
    if (ctx != &box)
        fail("a LOG_CTL write without the hardware's context", -1, value);
    if (value != (b->hw->log_bits | SATEMU_LOG_CLEAR))
        fail("LOG_CTL written without LOG_CLEAR and the ring's bits", -1, value);
    b->strobes++;
}

static uint32_t port_count(void *ctx, int channel, unsigned counter)
{
    struct box *b = ctx;
    check_reg(channel, 0, ctx);
    if (counter >= SATEMU_PORT_COUNTERS)
        fail("a port counter that does not exist", channel, counter);
    return read_value(b, 0);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct box *b = &box;
    memset(b, 0, sizeof(*b));
    b->data = data;
    b->back = size;

    struct satemu_hw hw = { .ctx = b, .read = rd, .write = wr, .commit = strobe,
                            .stats = stats_strobe, .port_count = port_count, .mem_read = mem_read,
                            .log_ctl = log_ctl, .mem_write = mem_write, .mem_load = mem_load };
    b->hw = &hw;
    uint8_t limits[SATEMU_LIMITS_BYTES];
    for (size_t i = 0; i < sizeof(limits); i++)
        limits[i] = (uint8_t)take_front(b, 1);
    const uint8_t *l = limits;
#define GET_LIMIT(name, bytes) hw.limits.name = get_le(l, bytes); l += (bytes);
    SATEMU_LIMIT_LIST(GET_LIMIT)
#undef GET_LIMIT
    for (int ch = 0; ch < SATEMU_CHANNELS; ch++) {
        hw.delay_line[ch].base = (uint32_t)take_front(b, 4);
        hw.delay_line[ch].words = (uint32_t)take_front(b, 4);
    }
    for (int ch = 0; ch < SATEMU_CHANNELS; ch++) {
        hw.log[ch].base = (uint32_t)take_front(b, 4);
        hw.log[ch].words = (uint32_t)take_front(b, 4);
    }
    hw.timeline.base = (uint32_t)take_front(b, 4);
    /* At most 2^16 words, so that a TIMELINE_START's check of every entry stays quick. */
    hw.timeline.words = (uint32_t)take_front(b, 4) & 0xFFFFu;
    hw.bod_mask = (uint32_t)take_front(b, 4);
    hw.bod_ring = (uint32_t)take_front(b, 4);
    hw.counter_bits = (uint32_t)take_front(b, 1);
    hw.log_bits = (uint32_t)take_front(b, 1);
    unsigned flags = (unsigned)take_front(b, 1);
    uint32_t link_errors[SATEMU_ERR_COUNT];
    for (int i = 0; i < SATEMU_ERR_COUNT; i++)
        link_errors[i] = (uint32_t)take_front(b, 4);
    if (flags & 1)
        hw.port_count = NULL;
    if (!(flags & 2))
        hw.link_errors = link_errors;
    if (flags & 4)
        hw.mem_read = NULL;
    if (flags & 8)
        hw.mem_write = NULL;
    /* HELLO reports the frame log's records as the firmware can read them: 2^log_bits with a
     * log (log_bits 1 .. SATEMU_LOG_BITS_MAX and the DRAM's reads), else 0. */
    int has_log = hw.log_bits >= 1 && hw.log_bits <= SATEMU_LOG_BITS_MAX && hw.mem_read;
    struct satemu_limits reported = hw.limits;
    reported.log_records = has_log ? 1u << hw.log_bits : 0;
    /* ... and the timeline store's entries: two words each, with the DRAM's writes. */
    reported.timeline_entries = hw.mem_write && hw.timeline.words >= 2 ? hw.timeline.words / 2 : 0;
    uint8_t *o = limits;
#define PUT_LIMIT(name, bytes) \
    for (int i = 0; i < (bytes); i++) *o++ = (uint8_t)((uint64_t)reported.name >> (8 * i));
    SATEMU_LIMIT_LIST(PUT_LIMIT)
#undef PUT_LIMIT
    b->channel = -1;
    b->op = 0;
    satemu_requests_init(&hw);         /* each input is a box just booted */

    while (b->back - b->front >= 2) {
        uint8_t op = (uint8_t)take_front(b, 1), form = (uint8_t)take_front(b, 1);
        if (op == 0)
            break;
        size_t len = form & 1 ? take_front(b, 2) % (SATEMU_MAX_PAYLOAD + 1)
                   : op < OPS && forms[op].known ? forms[op].length : form >> 1;
        uint8_t *payload = malloc(len ? len : 1), *out = malloc(SATEMU_MAX_PAYLOAD);
        for (size_t i = 0; i < len; i++)
            payload[i] = (uint8_t)take_front(b, 1);
        struct satemu_frame req = { (uint8_t)b->front, op, (uint16_t)len, payload };
        int known = op < OPS && forms[op].known && len == forms[op].length;
        b->channel = known && forms[op].channel && payload[0] < SATEMU_CHANNELS ? payload[0] : -1;
        b->op = op;
        b->writes = b->strobes = 0;
        size_t n = satemu_handle(&hw, &req, out);
        if (n < 1 || n > SATEMU_MAX_PAYLOAD)
            fail("an answer of no or too many bytes", b->channel, (unsigned)n);
        if (out[0] >= 64 || !((FUZZ_STATUSES >> out[0]) & 1))
            fail("an unknown status", b->channel, out[0]);
        if (((FUZZ_REFUSALS >> out[0]) & 1) && (b->writes || b->strobes))
            fail("a refused request wrote or strobed", b->channel, out[0]);
        if (known && op == SATEMU_OP_HELLO
            && (n != 1 + SATEMU_HELLO_RESPONSE_BYTES
                || memcmp(out + 1 + 2 + 4, limits, SATEMU_LIMITS_BYTES)))
            fail("HELLO did not report the limits", -1, (unsigned)n);
        if (known && op == SATEMU_OP_HELLO
            && ((out[3] & SATEMU_CAP_FRAME_LOG) != 0) != (has_log != 0))
            fail("HELLO's FRAME_LOG is not the log's", -1, out[3]);
        if (known && op == SATEMU_OP_READ_LOG && out[0] == SATEMU_STATUS_OK
            && (n < 1 + SATEMU_READ_LOG_HEAD_BYTES || out[21] > SATEMU_READ_LOG_MAX
                || out[21] > payload[9]
                || n != 1 + SATEMU_READ_LOG_HEAD_BYTES + (size_t)out[21] * SATEMU_LOG_RECORD_BYTES))
            fail("READ_LOG's answer does not hold the records it counts", b->channel, (unsigned)n);
        if (known && op == SATEMU_OP_READ_LOG && out[0] == SATEMU_STATUS_OK
            && (!has_log || !hw.log[b->channel].words))
            fail("READ_LOG answered without a log", b->channel, out[0]);
        if (known && op == SATEMU_OP_LINK_STATS) {
            uint8_t counts[4 * SATEMU_ERR_COUNT] = { 0 };
            for (int i = 0; hw.link_errors && i < 4 * SATEMU_ERR_COUNT; i++)
                counts[i] = (uint8_t)(link_errors[i / 4] >> (8 * (i % 4)));
            if (n != 1 + SATEMU_LINK_STATS_BYTES || memcmp(out + 1 + 4, counts, sizeof(counts)))
                fail("LINK_STATS did not report the link's counts", -1, (unsigned)n);
        }
        free(payload);
        free(out);
        b->channel = -1;
        b->op = 0;
        satemu_requests_poll(&hw);
    }
    return 0;
}
