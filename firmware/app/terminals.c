/* SPDX-License-Identifier: BSD-2-Clause */
/* Terminals: a load's table staged, checked (satemu.base.validate.terminal_verdict and
 * terminal_budget are the reference; shared vectors pin both), written into the terminal
 * window; each terminal's counters. */
#include <string.h>

#include "commit.h"
#include "terminals.h"
#include "validate.h"

/* On a board, its generated header says how many terminals its channels tell apart. */
#if defined(__has_include)
#if __has_include("satemu_board_gen.h")
#include "satemu_board_gen.h"
#endif
#endif

#if defined(SATEMU_BOARD_TERMINALS) && SATEMU_BOARD_TERMINALS == 0
/* A board built without terminals (the Versa-5G's and the Colorlight's builds leave them out):
 * its ROM holds none of this code. Its validator refuses every term_* register but 0, so no
 * load declares a terminal; TERMINAL_SET, LEVEL_SET and TERMINAL_STATS answer BAD_OPCODE, as
 * HELLO announces no TERMINALS capability. */
static size_t no_terminals(uint8_t *out)
{
    out[0] = SATEMU_STATUS_BAD_OPCODE;
    return 1;
}

unsigned satemu_terminal_count(const uint64_t *f) { (void)f; return 0; }
size_t satemu_terminal_set(const struct satemu_hw *hw, const uint8_t *p, uint8_t *out)
{
    (void)hw; (void)p;
    return no_terminals(out);
}
size_t satemu_level_set(const struct satemu_hw *hw, const uint8_t *p, uint8_t *out)
{
    (void)hw; (void)p;
    return no_terminals(out);
}
size_t satemu_terminal_stats(const struct satemu_hw *hw, const uint8_t *p, uint8_t *out)
{
    (void)hw; (void)p;
    return no_terminals(out);
}
int satemu_terminals_staged(const struct satemu_hw *hw, uint32_t gen, const uint64_t *const *f)
{
    (void)hw; (void)gen; (void)f;
    return 1;
}
void satemu_terminals_check(const struct satemu_hw *hw, const uint64_t *const *f,
                            struct satemu_term_verdict *v)
{
    (void)hw; (void)f;
    memset(v, 0, sizeof(*v));
}
void satemu_terminals_write(const struct satemu_hw *hw, const uint64_t *const *f)
{
    (void)hw; (void)f;
}
void satemu_terminals_reset_stats(const struct satemu_hw *hw) { (void)hw; }
void satemu_terminals_fold_start(void) {}
int satemu_terminals_fold_step(const struct satemu_hw *hw)
{
    (void)hw;
    return 0;
}
#else

static const uint8_t term_widths[SATEMU_TERMINAL_FIELDS] = SATEMU_TERMINAL_WIDTHS;
static const uint8_t term_words[SATEMU_TERMINAL_FIELDS] = SATEMU_TERMINAL_WORDS;

static size_t status_only(uint8_t *out, uint8_t status)
{
    out[0] = status;
    return 1;
}

static size_t term_bad(uint8_t *out, const struct satemu_term_verdict *v)
{
    uint8_t *o = out;
    *o++ = SATEMU_STATUS_TERMINAL_BAD;
    o = satemu_put_le(o, v->index, 2);
    *o++ = v->rule;
    o = satemu_put_le(o, v->value, 8);
    o = satemu_put_le(o, v->lo, 8);
    o = satemu_put_le(o, v->hi, 8);
    return (size_t)(o - out);
}

unsigned satemu_terminal_count(const uint64_t *f)
{
    if (!f[SATEMU_F_TERM_MATCH])
        return 0;
    return (unsigned)(f[SATEMU_F_TERM_FRAMED] + f[SATEMU_F_TERM_SYNTHETIC]);
}

/* The terminals a channel's table may hold: with frames, and on a BoD channel synthetic ones. */
static unsigned room(const struct satemu_hw *hw, int ch)
{
    unsigned n = hw->limits.terminals + (((hw->bod_mask >> ch) & 1) ? hw->limits.synthetic : 0);
    const struct satemu_term_store *s = hw->terms[ch];
    return s && n <= s->cap ? n : (s ? s->cap : 0);
}

/* TERMINAL_SET: channel u8, generation u32, terminal u8, its fields u64 each. */
size_t satemu_terminal_set(const struct satemu_hw *hw, const uint8_t *p, uint8_t *out)
{
    int ch = p[0];
    unsigned i = p[5];
    if (satemu_applying(hw))
        return status_only(out, SATEMU_STATUS_BUSY);
    struct satemu_term_verdict v = { SATEMU_STATUS_TERMINAL_BAD, i, SATEMU_RULE_TERMINALS, i,
                                     0, 0 };
    unsigned n = room(hw, ch);
    if (i >= n) {
        v.hi = n ? n - 1 : 0;
        return term_bad(out, &v);
    }
    struct satemu_terminal *t = &hw->terms[ch]->t[i];
    t->gen = (uint32_t)satemu_get_le(p + 1, 4);
    for (int k = 0; k < SATEMU_TERMINAL_FIELDS; k++)
        t->f[k] = satemu_get_le(p + 6 + 8 * k, 8);
    return status_only(out, SATEMU_STATUS_OK);
}

/* LEVEL_SET: channel u8, generation u32, first u16, n u8, then LEVEL_SET_MAX entries of a rate
 * u32 and a length u16, the first n counting. */
size_t satemu_level_set(const struct satemu_hw *hw, const uint8_t *p, uint8_t *out)
{
    int ch = p[0];
    unsigned first = (unsigned)satemu_get_le(p + 5, 2), n = p[7];
    if (satemu_applying(hw))
        return status_only(out, SATEMU_STATUS_BUSY);
    const struct satemu_term_store *s = hw->terms[ch];
    unsigned cap = ((hw->bod_mask >> ch) & 1) && s ? hw->limits.demand_levels : 0;
    if (s && cap > s->level_cap)
        cap = s->level_cap;
    if (n > SATEMU_LEVEL_SET_MAX || first + n > cap) {
        struct satemu_term_verdict v = { SATEMU_STATUS_TERMINAL_BAD, SATEMU_TABLE_INDEX,
                                         SATEMU_RULE_LEVELS, first + n, 0, cap };
        return term_bad(out, &v);
    }
    uint32_t gen = (uint32_t)satemu_get_le(p + 1, 4);
    for (unsigned k = 0; k < n; k++) {
        struct satemu_level *l = &s->levels[first + k];
        l->gen = gen;
        l->rate = (uint32_t)satemu_get_le(p + 8 + 6 * k, 4);
        l->length = (uint32_t)satemu_get_le(p + 12 + 6 * k, 2);
    }
    return status_only(out, SATEMU_STATUS_OK);
}

/* The levels staged under `gen` one after another from entry 0: the load's level table. */
static unsigned levels_of(const struct satemu_hw *hw, int ch, uint32_t gen)
{
    const struct satemu_term_store *s = hw->terms[ch];
    unsigned n = 0;
    if (!s)
        return 0;
    unsigned cap = hw->limits.demand_levels < s->level_cap ? hw->limits.demand_levels
                                                           : s->level_cap;
    while (n < cap && s->levels[n].gen == gen)
        n++;
    return n;
}

int satemu_terminals_staged(const struct satemu_hw *hw, uint32_t gen, const uint64_t *const *f)
{
    for (int ch = 0; ch < SATEMU_CHANNELS; ch++) {
        unsigned n = satemu_terminal_count(f[ch]);
        if (n > room(hw, ch))
            return 0;
        for (unsigned i = 0; i < n; i++)
            if (hw->terms[ch]->t[i].gen != gen)
                return 0;
    }
    return 1;
}

static uint32_t load_gen;           /* the load being checked: its levels */

#define BAD(index_, rule_, value_, lo_, hi_) do { \
    v->status = SATEMU_STATUS_TERMINAL_BAD; v->index = (uint16_t)(index_); v->rule = (rule_); \
    v->value = (value_); v->lo = (lo_); v->hi = (hi_); return; } while (0)

/* satemu.base.validate.terminal_verdict and terminal_budget, in their order, for channel ch. */
static void check_channel(const struct satemu_hw *hw, int ch, const uint64_t *f,
                          struct satemu_term_verdict *v)
{
    unsigned n = satemu_terminal_count(f);
    if (!n)
        return;
    const struct satemu_terminal *t = hw->terms[ch]->t;
    unsigned framed = (unsigned)f[SATEMU_F_TERM_FRAMED], count = 0;
    for (unsigned i = 0; i < n; i++)
        count += !(t[i].f[SATEMU_T_FLAGS] & SATEMU_TERM_SYNTHETIC);
    if (count != framed)
        BAD(SATEMU_TABLE_INDEX, SATEMU_RULE_TERM_FRAMED, framed, count, count);
    for (unsigned i = 0; i < n; i++)        /* those with frames first */
        if ((i < framed) == !!(t[i].f[SATEMU_T_FLAGS] & SATEMU_TERM_SYNTHETIC))
            BAD(SATEMU_TABLE_INDEX, SATEMU_RULE_TERMINALS, framed, framed, framed);
    unsigned levels = levels_of(hw, ch, load_gen);
    for (unsigned i = 0; i < levels; i++) {
        uint32_t length = hw->terms[ch]->levels[i].length;
        if (length < 1 || length >= (1u << SATEMU_LEVEL_SUPERFRAME_BITS))
            BAD(i, SATEMU_RULE_LEVEL, length, 1, (1u << SATEMU_LEVEL_SUPERFRAME_BITS) - 1);
    }
    int block = (hw->bod_mask >> ch) & 1;        /* a table on the BoD channel needs BoD on */
    if (block && !(f[SATEMU_F_BOD_FLAGS] & SATEMU_BOD_ENABLE))
        BAD(SATEMU_TABLE_INDEX, SATEMU_RULE_TERMINALS, framed, 0, 0);
    int shared = !block;
    uint64_t key_max = f[SATEMU_F_TERM_MATCH] == SATEMU_MATCH_MAC ? ((uint64_t)1 << 48) - 1 : 4094;
    uint64_t cap = (block ? hw->limits.bod_queue : hw->limits.queue_depth);
    unsigned bits = 0;
    while ((1u << bits) < framed)
        bits++;
    cap >>= bits;                           /* ChannelParams.terminal_cap */
    uint64_t carrier = f[SATEMU_F_BOD_SLOTS] * SATEMU_BOD_RATE_ONE;
    for (unsigned i = 0; i < n; i++) {
        const uint64_t *x = t[i].f;
        for (int k = 0; k < SATEMU_TERMINAL_FIELDS; k++) {
            uint64_t max = term_widths[k] >= 64 ? UINT64_MAX
                         : ((uint64_t)1 << term_widths[k]) - 1;
            if (x[k] > max)
                BAD(i, k, x[k], 0, max);
        }
        int synthetic = (x[SATEMU_T_FLAGS] & SATEMU_TERM_SYNTHETIC) != 0;
        if (!synthetic) {
            if (x[SATEMU_T_KEY] < 1 || x[SATEMU_T_KEY] > key_max)
                BAD(i, SATEMU_RULE_KEY, x[SATEMU_T_KEY], 1, key_max);
            for (unsigned j = 0; j < i; j++)
                if (!(t[j].f[SATEMU_T_FLAGS] & SATEMU_TERM_SYNTHETIC)
                    && t[j].f[SATEMU_T_KEY] == x[SATEMU_T_KEY])
                    BAD(i, SATEMU_RULE_KEY, x[SATEMU_T_KEY], j, j);
        }
        if (shared)
            continue;
        if (x[SATEMU_T_LOSS_MODE] > 2)
            BAD(i, SATEMU_RULE_LOSS_MODE, x[SATEMU_T_LOSS_MODE], 0, 2);
        if (!synthetic) {
            if (x[SATEMU_T_QUEUE_FRAMES] < 1 || x[SATEMU_T_QUEUE_FRAMES] > cap)
                BAD(i, SATEMU_RULE_QUEUE_FRAMES, x[SATEMU_T_QUEUE_FRAMES], 1, cap);
            if (x[SATEMU_T_QUEUE_BYTES] < f[SATEMU_F_MIN_LEN])
                BAD(i, SATEMU_RULE_QUEUE_BYTES, x[SATEMU_T_QUEUE_BYTES], f[SATEMU_F_MIN_LEN],
                    0xFFFFFFFFu);
        }
        if (x[SATEMU_T_CRA] > carrier)
            BAD(i, SATEMU_RULE_CRA, x[SATEMU_T_CRA], 0, carrier);
        if (x[SATEMU_T_RBDC_MAX] > carrier)
            BAD(i, SATEMU_RULE_RBDC_MAX, x[SATEMU_T_RBDC_MAX], 0, carrier);
        if (x[SATEMU_T_REQ_PERIOD] < 1)
            BAD(i, SATEMU_RULE_REQ_PERIOD, x[SATEMU_T_REQ_PERIOD], 1, 0xFFFFu);
        if (synthetic) {
            if (x[SATEMU_T_DEMAND_KIND] == SATEMU_DEMAND_LEVELS) {
                uint64_t left = levels > x[SATEMU_T_DEMAND_FIRST]
                              ? levels - x[SATEMU_T_DEMAND_FIRST] : 0;
                if (x[SATEMU_T_DEMAND_COUNT] < 1
                    || x[SATEMU_T_DEMAND_FIRST] + x[SATEMU_T_DEMAND_COUNT] > levels)
                    BAD(i, SATEMU_RULE_DEMAND_COUNT, x[SATEMU_T_DEMAND_COUNT], 1, left);
            }
        } else if (x[SATEMU_T_DEMAND_KIND]) {
            BAD(i, SATEMU_RULE_DEMAND_KIND, x[SATEMU_T_DEMAND_KIND], 0, 0);
        } else if (!x[SATEMU_T_CRA] && !x[SATEMU_T_VBDC_MAX]
                   && !(x[SATEMU_T_FLAGS] & SATEMU_TERM_FCA)) {
            BAD(i, SATEMU_RULE_CAPACITY, 0, 0, 0);
        }
    }
    if (shared)
        return;
    uint64_t cra = 0;
    for (unsigned i = 0; i < n; i++)
        cra += t[i].f[SATEMU_T_CRA];
    if (cra > carrier)
        BAD(SATEMU_TABLE_INDEX, SATEMU_RULE_CRA, cra, 0, carrier);
    /* Each terminal with frames' share of the delay line holds what its frames can need. */
    uint64_t share = hw->limits.mem_words >> bits;
    uint64_t own[SATEMU_PROFILE_FIELDS];
    memcpy(own, f, sizeof(own));
    for (unsigned i = 0; i < framed; i++) {
        own[SATEMU_F_QUEUE_FRAMES] = t[i].f[SATEMU_T_QUEUE_FRAMES] < cap
                                   ? t[i].f[SATEMU_T_QUEUE_FRAMES] : cap;
        own[SATEMU_F_QUEUE_BYTES] = t[i].f[SATEMU_T_QUEUE_BYTES];
        uint64_t need = satemu_budget_words(hw, ch, own);
        if (need > share)
            BAD(i, SATEMU_RULE_BUDGET, need, 0, share);
    }
}

void satemu_terminals_check(const struct satemu_hw *hw, const uint64_t *const *f,
                            struct satemu_term_verdict *v)
{
    memset(v, 0, sizeof(*v));
    load_gen = satemu_staged_load();
    for (int ch = 0; ch < SATEMU_CHANNELS && !v->status; ch++)
        check_channel(hw, ch, f[ch], v);
}

void satemu_terminals_write(const struct satemu_hw *hw, const uint64_t *const *f)
{
    uint32_t gen = satemu_staged_load();
    for (int ch = 0; ch < SATEMU_CHANNELS; ch++) {
        unsigned n = satemu_terminal_count(f[ch]);
        if (!n)
            continue;
        /* The gateware refills its shadow table after each commit: wait for it (bounded). */
        for (unsigned k = 0; k < 1u << 20; k++)
            if (!(hw->read(hw->ctx, ch, SATEMU_REG_STATUS) & SATEMU_STATUS_REG_COPYING))
                break;
        for (unsigned i = 0; i < n; i++) {
            const uint64_t *x = hw->terms[ch]->t[i].f;
            hw->write(hw->ctx, ch, SATEMU_REG_TERM_SEL, i);
            for (int k = 0; k < SATEMU_TERMINAL_FIELDS; k++) {
                unsigned word = SATEMU_TERM_WINDOW + term_words[k];
                hw->write(hw->ctx, ch, word, (uint32_t)x[k]);
                if (term_widths[k] > 32)
                    hw->write(hw->ctx, ch, word + 1, (uint32_t)(x[k] >> 32));
            }
        }
        unsigned levels = levels_of(hw, ch, gen);
        for (unsigned i = 0; i < levels; i++) {
            const struct satemu_level *l = &hw->terms[ch]->levels[i];
            hw->write(hw->ctx, ch, SATEMU_REG_LEVEL_SEL, i);
            hw->write(hw->ctx, ch, SATEMU_REG_LEVEL_RATE, l->rate);
            hw->write(hw->ctx, ch, SATEMU_REG_LEVEL_LENGTH, l->length);
        }
    }
}

/* ---- counters ---------------------------------------------------------------------------- */

static uint64_t counter_mask(const struct satemu_hw *hw)
{
    return hw->counter_bits && hw->counter_bits < 64 ? (UINT64_C(1) << hw->counter_bits) - 1
                                                     : UINT64_MAX;
}

/* Counter k of set `set` (a terminal with frames, or limits.terminals: no one's), as the
 * gateware holds it now. */
static uint64_t read_counter(const struct satemu_hw *hw, int ch, unsigned set, unsigned k)
{
    unsigned who = set == hw->limits.terminals ? SATEMU_NO_TERMINAL : set;
    hw->write(hw->ctx, ch, SATEMU_REG_TSTAT_SEL, who << 4 | k);
    return satemu_read_reg(hw, ch, SATEMU_REG_TSTAT, SATEMU_REG_TSTAT_WIDTH);
}

static void fold_one(const struct satemu_hw *hw, int ch, unsigned set, unsigned k)
{
    struct satemu_term_store *s = hw->terms[ch];
    uint64_t raw = read_counter(hw, ch, set, k);
    s->counts[set][k] += (raw - s->raw[set][k]) & counter_mask(hw);
    s->raw[set][k] = raw;
}

static unsigned sets(const struct satemu_hw *hw, int ch)
{
    return hw->terms[ch] && hw->limits.terminals ? hw->limits.terminals + 1u : 0;
}

static unsigned fold_ch = SATEMU_CHANNELS, fold_at;

void satemu_terminals_fold_start(void)
{
    fold_ch = 0;
    fold_at = 0;
}

int satemu_terminals_fold_step(const struct satemu_hw *hw)
{
    while (fold_ch < SATEMU_CHANNELS && fold_at >= sets(hw, fold_ch) * SATEMU_TERMINAL_COUNTERS) {
        fold_ch++;
        fold_at = 0;
    }
    if (fold_ch >= SATEMU_CHANNELS)
        return 0;
    fold_one(hw, fold_ch, fold_at / SATEMU_TERMINAL_COUNTERS, fold_at % SATEMU_TERMINAL_COUNTERS);
    fold_at++;
    return 1;
}

void satemu_terminals_reset_stats(const struct satemu_hw *hw)
{
    /* (after the STATS CLEAR that zeroed the registers) */
    for (int ch = 0; ch < SATEMU_CHANNELS; ch++)
        for (unsigned set = 0; set < sets(hw, ch); set++)
            for (unsigned k = 0; k < SATEMU_TERMINAL_COUNTERS; k++)
                hw->terms[ch]->counts[set][k] = hw->terms[ch]->raw[set][k] = 0;
    fold_ch = SATEMU_CHANNELS;
}

/* TERMINAL_STATS: channel u8, terminal u8 (SATEMU_NO_ONES: no one's). */
size_t satemu_terminal_stats(const struct satemu_hw *hw, const uint8_t *p, uint8_t *out)
{
    int ch = p[0];
    unsigned n = sets(hw, ch);
    if (!n)
        return status_only(out, SATEMU_STATUS_BAD_OPCODE);
    unsigned set = p[1] == SATEMU_NO_ONES ? hw->limits.terminals : p[1];
    if (p[1] != SATEMU_NO_ONES && p[1] >= hw->limits.terminals) {
        struct satemu_term_verdict v = { SATEMU_STATUS_TERMINAL_BAD, p[1], SATEMU_RULE_TERMINALS,
                                         p[1], 0, hw->limits.terminals - 1 };
        return term_bad(out, &v);
    }
    uint8_t *o = out;
    *o++ = SATEMU_STATUS_OK;
    for (unsigned k = 0; k < SATEMU_TERMINAL_COUNTERS; k++) {
        fold_one(hw, ch, set, k);
        o = satemu_put_le(o, hw->terms[ch]->counts[set][k], 8);
    }
    return (size_t)(o - out);
}
#endif
