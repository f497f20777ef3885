/* SPDX-License-Identifier: BSD-2-Clause */
/* Request handling: each request's length and channel, then the profile checks (validate.c),
 * the statistics (stats.c) or the registers; message sizes come from the generated header. */
#include "requests.h"
#include "stats.h"
#include "validate.h"

/* The layouts below against satemu.protocol's: a profile is a u64 a field, a statistic a u64;
 * HELLO's answer is the version (u16), the capabilities (u32), then the limits; BOD_TRACE's
 * head is bod_count u32, bod_start u64, the first superframe u32 and the records' count u8. */
_Static_assert(SATEMU_SET_PROFILE_REQUEST_BYTES == 1 + SATEMU_PROFILE_BYTES
               && SATEMU_PROFILE_BYTES == 8 * SATEMU_PROFILE_FIELDS, "profile messages");
_Static_assert(SATEMU_STATS_BYTES == 8 * SATEMU_STATS_FIELDS, "GET_STATS' answer");
_Static_assert(SATEMU_HELLO_RESPONSE_BYTES == 2 + 4 + SATEMU_LIMITS_BYTES, "HELLO's answer");
_Static_assert(SATEMU_BAD_FIELD_DETAIL_BYTES == 1 + 3 * 8 && SATEMU_BUDGET_DETAIL_BYTES == 2 * 8
               && SATEMU_THROUGHPUT_DETAIL_BYTES == 2 * 8, "verdict details");
_Static_assert(SATEMU_BOD_TRACE_REQUEST_BYTES == 1 + 4 + 1
               && SATEMU_BOD_TRACE_HEAD_BYTES == 4 + 8 + 4 + 1
               && SATEMU_BOD_RECORD_BYTES == 4 * SATEMU_BOD_RECORD_WORDS, "BOD_TRACE");
_Static_assert(1 + SATEMU_BOD_TRACE_HEAD_BYTES + SATEMU_BOD_TRACE_MAX * SATEMU_BOD_RECORD_BYTES
               <= SATEMU_MAX_PAYLOAD, "BOD_TRACE's answer fits a frame");

/* Each profile field's register, by field (enum satemu_field). */
static const uint16_t profile_regs[SATEMU_PROFILE_FIELDS] = SATEMU_PROFILE_REGS;

static uint64_t get_le(const uint8_t *p, int n)
{
    uint64_t v = 0;
    for (int i = n - 1; i >= 0; i--)
        v = (v << 8) | p[i];
    return v;
}

static uint8_t *put_le(uint8_t *p, uint64_t v, int n)
{
    for (int i = 0; i < n; i++, v >>= 8)
        *p++ = (uint8_t)v;
    return p;
}

static size_t status_only(uint8_t *out, uint8_t status)
{
    out[0] = status;
    return 1;
}

static int pending(const struct satemu_hw *hw)
{
    return (hw->read(hw->ctx, 0, SATEMU_REG_STATUS) | hw->read(hw->ctx, 1, SATEMU_REG_STATUS)) & 1;
}

static size_t hello(const struct satemu_hw *hw, const uint8_t *p, uint8_t *out)
{
    out[0] = get_le(p, SATEMU_HELLO_REQUEST_BYTES) == SATEMU_PROTOCOL_VERSION
           ? SATEMU_STATUS_OK : SATEMU_STATUS_BAD_VERSION;
    uint8_t *o = put_le(out + 1, SATEMU_PROTOCOL_VERSION, 2);
    o = put_le(o, SATEMU_CAP_CHANNELS | (hw->bod_mask ? SATEMU_CAP_BOD : 0), 4);
#define PUT_LIMIT(name, bytes) o = put_le(o, hw->limits.name, bytes);
    SATEMU_LIMIT_LIST(PUT_LIMIT)
#undef PUT_LIMIT
    return (size_t)(o - out);
}

static size_t set_profile(const struct satemu_hw *hw, const uint8_t *p, uint8_t *out)
{
    int ch = p[0];
    uint64_t f[SATEMU_PROFILE_FIELDS];
    for (int i = 0; i < SATEMU_PROFILE_FIELDS; i++)
        f[i] = get_le(p + 1 + 8 * i, 8);
    struct satemu_verdict v;
    satemu_validate(hw, ch, f, &v);
    out[0] = v.status;
    if (v.status == SATEMU_STATUS_BAD_FIELD) {
        uint8_t *o = out + 1;
        *o++ = v.field;
        o = put_le(o, v.value, 8);
        o = put_le(o, v.lo, 8);
        o = put_le(o, v.hi, 8);
        return (size_t)(o - out);
    }
    if (v.status == SATEMU_STATUS_BUDGET || v.status == SATEMU_STATUS_THROUGHPUT) {
        uint8_t *o = put_le(out + 1, v.value, 8);
        o = put_le(o, v.hi, 8);
        return (size_t)(o - out);
    }
    for (int i = 0; i < SATEMU_PROFILE_FIELDS; i++) {
        hw->write(hw->ctx, ch, profile_regs[i], (uint32_t)f[i]);
        if (satemu_profile_widths[i] > 32)
            hw->write(hw->ctx, ch, profile_regs[i] + 1, (uint32_t)(f[i] >> 32));
    }
    hw->write(hw->ctx, ch, SATEMU_REG_MEM_BASE, hw->delay_line[ch].base);
    hw->write(hw->ctx, ch, SATEMU_REG_MEM_SIZE, hw->delay_line[ch].words);
    return 1;
}

static size_t get_profile(const struct satemu_hw *hw, int ch, uint8_t *out)
{
    uint8_t *o = out;
    *o++ = SATEMU_STATUS_OK;
    for (int i = 0; i < SATEMU_PROFILE_FIELDS; i++)
        o = put_le(o, satemu_read_reg(hw, ch, profile_regs[i], satemu_profile_widths[i]), 8);
    return (size_t)(o - out);
}

static size_t get_stats(const struct satemu_hw *hw, int ch, uint8_t *out)
{
    uint64_t values[SATEMU_STATS_FIELDS];
    satemu_stats_read(hw, ch, values);
    uint8_t *o = out;
    *o++ = SATEMU_STATUS_OK;
    for (int i = 0; i < SATEMU_STATS_FIELDS; i++)
        o = put_le(o, values[i], 8);
    return (size_t)(o - out);
}

/* BOD_TRACE: channel u8, first superframe u32, max records u8. */
static size_t bod_trace(const struct satemu_hw *hw, const uint8_t *p, uint8_t *out)
{
    int ch = p[0];
    /* bod_start is the cycle superframe 0 began. A committed layout applies when the channel
     * takes it, which may fall within this answer: bod_start is read before and after bod_count
     * (two words, LSW first) until both reads agree, so the count and the start belong to the
     * same run of the block. */
    uint64_t start = satemu_read_reg(hw, ch, SATEMU_REG_BOD_START, SATEMU_REG_BOD_START_WIDTH);
    uint64_t again;
    uint32_t count;
    for (;;) {
        count = hw->read(hw->ctx, ch, SATEMU_REG_BOD_COUNT);
        again = satemu_read_reg(hw, ch, SATEMU_REG_BOD_START, SATEMU_REG_BOD_START_WIDTH);
        if (again == start)
            break;
        start = again;
    }
    uint32_t first = (uint32_t)get_le(p + 1, 4);
    /* The ring holds the last bod_ring superframes; older ones are overwritten. */
    if (count > hw->bod_ring && first < count - hw->bod_ring)
        first = count - hw->bod_ring;
    uint32_t n = first < count ? count - first : 0;
    if (n > p[5])
        n = p[5];
    if (n > SATEMU_BOD_TRACE_MAX)
        n = SATEMU_BOD_TRACE_MAX;
    uint8_t *o = out;
    *o++ = SATEMU_STATUS_OK;
    o = put_le(o, count, 4);
    o = put_le(o, start, 8);
    o = put_le(o, first, 4);
    *o++ = (uint8_t)n;
    for (uint32_t i = 0; i < n; i++) {
        /* The ring's read port answers a cycle after the select: any bus read is later. */
        hw->write(hw->ctx, ch, SATEMU_REG_BOD_SEL, first + i);
        for (unsigned w = 0; w < SATEMU_BOD_RECORD_WORDS; w++)
            o = put_le(o, hw->read(hw->ctx, ch, SATEMU_REG_BOD_REC + w), 4);
    }
    return (size_t)(o - out);
}

/* Each request's payload: its length, and whether it starts with a channel (u8). */
static const struct {
    uint8_t known, channel;
    uint16_t length;
} forms[] = SATEMU_REQUEST_FORMS;

size_t satemu_handle(const struct satemu_hw *hw, const struct satemu_frame *req, uint8_t *out)
{
    const uint8_t *p = req->payload;
    if (req->op >= sizeof(forms) / sizeof(forms[0]) || !forms[req->op].known)
        return status_only(out, SATEMU_STATUS_BAD_OPCODE);
    if (req->length != forms[req->op].length)
        return status_only(out, SATEMU_STATUS_BAD_LENGTH);
    if (forms[req->op].channel && p[0] >= SATEMU_CHANNELS)
        return status_only(out, SATEMU_STATUS_BAD_CHANNEL);
    switch (req->op) {
    case SATEMU_OP_HELLO:
        return hello(hw, p, out);
    case SATEMU_OP_SET_PROFILE:
        return set_profile(hw, p, out);
    case SATEMU_OP_GET_PROFILE:
        return get_profile(hw, p[0], out);
    case SATEMU_OP_COMMIT:
        if (pending(hw))
            return status_only(out, SATEMU_STATUS_BUSY);
        /* The region of a channel never changes, so LAYOUT is always safe to ask for: while
         * frames are stored the gateware keeps the (same) region and applies the rest. */
        hw->commit(hw->ctx,
                   SATEMU_COMMIT_APPLY | SATEMU_COMMIT_LAYOUT | (p[0] & SATEMU_COMMIT_RESEED));
        return status_only(out, SATEMU_STATUS_OK);
    case SATEMU_OP_GET_STATS:
        return get_stats(hw, p[0], out);
    case SATEMU_OP_RESET_STATS:
        satemu_stats_reset(hw);
        return status_only(out, SATEMU_STATUS_OK);
    case SATEMU_OP_BOD_TRACE:
        if (!((hw->bod_mask >> p[0]) & 1))
            return status_only(out, SATEMU_STATUS_NO_BOD);
        return bod_trace(hw, p, out);
    }
    return status_only(out, SATEMU_STATUS_BAD_OPCODE);     /* an op forms has but not here */
}
