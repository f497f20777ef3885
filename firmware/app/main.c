/* SPDX-License-Identifier: BSD-2-Clause */
/* satemu firmware on the SoC: brings up the DRAM, if any, then serves the host protocol on the UART. */
#include <stdint.h>

#include <generated/csr.h>
#include <generated/mem.h>
#include <generated/soc.h>
#include <liblitedram/sdram.h>
#include <system.h>

#include "requests.h"
#include "satemu_board_gen.h"
#include "stats.h"
#include "terminals.h"

/* The channels' register windows at SATEMU_BASE (LiteX's mem.h), a register a word. */
#define CHANNEL(ch) ((volatile uint32_t *)(SATEMU_BASE) + SATEMU_WINDOW_BYTES / 4 * (ch))
#define BOTH CHANNEL(SATEMU_WINDOW_BOTH)      /* writes reach both channels in one cycle */
#define UART_EV_RX 0x2

void isr(void);
void isr(void) {}                             /* nothing runs on interrupts */

static uint32_t reg_read(void *ctx, int ch, unsigned word) { (void)ctx; return CHANNEL(ch)[word]; }
static void reg_write(void *ctx, int ch, unsigned word, uint32_t v) { (void)ctx; CHANNEL(ch)[word] = v; }
static void commit(void *ctx, unsigned flags) { (void)ctx; BOTH[SATEMU_REG_COMMIT] = flags; }
static void stats(void *ctx, unsigned flags) { (void)ctx; BOTH[SATEMU_REG_STATS] = flags; }
static void log_ctl(void *ctx, unsigned value) { (void)ctx; BOTH[SATEMU_REG_LOG_CTL] = value; }

/* The frame log's rings and the timeline store, through the CPU's bus, DRAM word w at byte
 * LOG_MEM + 8 w: the
 * main RAM where the SoC has one (a board, or its simulated variant: the whole DRAM), else the
 * simulated board's uncached window onto its DRAM (FRAMELOG); without either the firmware
 * cannot read the rings and reports no log. */
#if defined(MAIN_RAM_BASE)
#define LOG_MEM MAIN_RAM_BASE
#elif defined(FRAMELOG_BASE)
#define LOG_MEM FRAMELOG_BASE
#endif

#ifdef LOG_MEM
/* The timeline store, which only the CPU uses: written and read back as two 32-bit words, the
 * lower half first (through the caches, if any: nothing else touches these words). */
static void mem_write(void *ctx, uint32_t word, uint64_t value)
{
    (void)ctx;
    volatile uint32_t *p = (volatile uint32_t *)(uintptr_t)(LOG_MEM + 8u * (uintptr_t)word);
    p[0] = (uint32_t)value;
    p[1] = (uint32_t)(value >> 32);
}

static uint64_t mem_load(void *ctx, uint32_t word)
{
    (void)ctx;
    volatile uint32_t *p = (volatile uint32_t *)(uintptr_t)(LOG_MEM + 8u * (uintptr_t)word);
    uint32_t lo = p[0];
    uint32_t hi = p[1];
    return (uint64_t)hi << 32 | lo;
}
#define MEM_WRITE mem_write
#define MEM_LOAD mem_load

/* The channels write the DRAM behind the CPU's caches: each read first drops what the data
 * cache holds (flush_cpu_dcache does nothing on a CPU without one) and, where the SoC has an
 * L2 cache, refills that from the DRAM, then reads the word as two 32-bit loads, the lower half
 * first. */
static uint64_t mem_read(void *ctx, uint32_t word)
{
    (void)ctx;
    volatile uint32_t *p = (volatile uint32_t *)(uintptr_t)(LOG_MEM + 8u * (uintptr_t)word);
    flush_cpu_dcache();
#ifdef CONFIG_L2_SIZE
    flush_l2_cache();
#endif
    uint32_t lo = p[0];
    uint32_t hi = p[1];
    return (uint64_t)hi << 32 | lo;
}
#define LOG_MEM_READ mem_read
#define LOG_BITS SATEMU_LOG_BITS
#else
#define LOG_MEM_READ NULL
#define LOG_BITS 0u
#define MEM_WRITE NULL
#define MEM_LOAD NULL
#endif

/* The counters of each channel's ingress MAC: frames it discarded for a bad preamble. Forward
 * enters on port B, return on port A. */
static uint32_t port_count(void *ctx, int ch, unsigned counter)
{
    (void)ctx;
    switch ((enum satemu_port_counter)counter) {
    case SATEMU_PORT_DROP_PREAMBLE:
        return ch == SATEMU_CHANNEL_FORWARD ? ethmac_b_mac_rx_datapath_preamble_errors_read()
                                            : ethmac_a_mac_rx_datapath_preamble_errors_read();
    }
    return 0;
}

/* The board's facts come from its generated header (satemu.base.boards): its limits, each
 * channel's delay line (the upper half of the DRAM, which the CPU never uses) and frame-log
 * ring (the lower half, which the firmware only reads), the channels with the BoD block and
 * the statistics counters' width. */
static struct satemu_deframer deframer;

/* Each channel's terminal table and counters (terminals.h), sized by the board. */
#define TERM_SETS (SATEMU_BOARD_TERMINALS + 1)
static struct satemu_terminal terminals[SATEMU_CHANNELS][SATEMU_TERMINALS_MAX];
static struct satemu_level levels[SATEMU_CHANNELS][SATEMU_LEVELS_MAX];
static uint64_t term_counts[SATEMU_CHANNELS][TERM_SETS][SATEMU_TERMINAL_COUNTERS];
static uint64_t term_raw[SATEMU_CHANNELS][TERM_SETS][SATEMU_TERMINAL_COUNTERS];
static struct satemu_term_store term_store[SATEMU_CHANNELS] = {
#define STORE(ch) { .t = terminals[ch], .cap = SATEMU_TERMINALS_MAX, .levels = levels[ch], \
                    .level_cap = SATEMU_LEVELS_MAX, .counts = term_counts[ch], \
                    .raw = term_raw[ch] }
    STORE(0), STORE(1)
#undef STORE
};

static const struct satemu_hw hw = {
    .read = reg_read, .write = reg_write, .commit = commit, .stats = stats,
    .port_count = port_count,
    .limits = SATEMU_BOARD_LIMITS,
    .delay_line = SATEMU_BOARD_DELAY_LINES,
    .bod_mask = SATEMU_BOD_CHANNELS,
    .bod_ring = SATEMU_BOD_RING,
    .counter_bits = SATEMU_COUNTER_BITS,
    .log_bits = LOG_BITS,
    .log = SATEMU_BOARD_LOG_RINGS,
    .mem_read = LOG_MEM_READ,
    .timeline = SATEMU_BOARD_TIMELINE,
    .mem_write = MEM_WRITE,
    .mem_load = MEM_LOAD,
    .log_ctl = log_ctl,
    .link_errors = deframer.errors,
    .terms = { &term_store[0], &term_store[1] },
};

/* Folds the statistics counters into their 64-bit counts once a second (timer0 reloads every
 * f_clk cycles and flags each expiry), far more often than the fastest one can wrap: a
 * snapshot, then a counter each time round the main loop, between the UART's bytes. */
static void fold_timer_start(void)
{
    timer0_en_write(0);
    timer0_load_write(hw.limits.f_clk);
    timer0_reload_write(hw.limits.f_clk);
    timer0_ev_pending_write(timer0_ev_pending_read());
    timer0_en_write(1);
}

static void fold_when_due(void)
{
    if (satemu_fold_step(&hw) || !timer0_ev_pending_read())
        return;
    timer0_ev_pending_write(timer0_ev_pending_read());
    satemu_fold_start(&hw);
}

static int uart_get(void)
{
    if (uart_rxempty_read())
        return -1;
    int c = (int)uart_rxtx_read();
    uart_ev_pending_write(UART_EV_RX);
    return c;
}

static void uart_put(uint8_t c)
{
    while (uart_txfull_read())
        ;
    uart_rxtx_write(c);
}

static uint8_t response[SATEMU_MAX_PAYLOAD];
static uint8_t wire[SATEMU_MAX_ENCODED];

int main(void)
{
#if defined(CSR_SDRAM_BASE) && !defined(SATEMU_SKIP_SDRAM_INIT)
    sdram_init();                              /* a board's DRAM (the simulated board has none) */
#endif
    satemu_deframer_init(&deframer);
    satemu_requests_init(&hw);
    fold_timer_start();
    for (;;) {
        struct satemu_frame req;
        fold_when_due();
        satemu_requests_poll(&hw);
        int c = uart_get();
        if (c < 0 || !satemu_deframe_byte(&deframer, (uint8_t)c, &req))
            continue;
        size_t n = satemu_handle(&hw, &req, response);
        size_t len = satemu_encode_frame(req.seq, (uint8_t)(req.op | SATEMU_RESPONSE_BIT),
                                         response, n, wire);
        uart_put(0);                           /* flush any partial frame at the host */
        for (size_t i = 0; i < len; i++)
            uart_put(wire[i]);
    }
}
