/* SPDX-License-Identifier: BSD-2-Clause */
/* satemu firmware on the SoC: brings up the DRAM, then serves the host protocol on the UART. */
#include <stdint.h>

#include <generated/csr.h>
#include <generated/mem.h>
#include <generated/soc.h>
#include <liblitedram/sdram.h>

#include "fw.h"

#define WINDOW_WORDS 0x100                    /* 0x400 bytes of bus space per window */
#define CHANNEL(ch) ((volatile uint32_t *)(SATEMU_BASE) + WINDOW_WORDS * (ch))
#define BOTH CHANNEL(2)                       /* writes reach both channels in one cycle */
#define UART_EV_RX 0x2

void isr(void);
void isr(void) {}                             /* nothing runs on interrupts */

static uint32_t reg_read(void *ctx, int ch, unsigned word) { (void)ctx; return CHANNEL(ch)[word]; }
static void reg_write(void *ctx, int ch, unsigned word, uint32_t v) { (void)ctx; CHANNEL(ch)[word] = v; }
static void commit(void *ctx, unsigned flags) { (void)ctx; BOTH[SATEMU_REG_COMMIT] = flags; }
static void stats(void *ctx, unsigned flags) { (void)ctx; BOTH[SATEMU_REG_STATS] = flags; }

/* Frames each channel's ingress MAC discarded for a bad preamble: forward enters on port B,
 * return on port A. */
static uint32_t port_drops(void *ctx, int ch)
{
    (void)ctx;
    return ch == 0 ? ethmac_b_mac_rx_datapath_preamble_errors_read()
                   : ethmac_a_mac_rx_datapath_preamble_errors_read();
}

/* Each channel's delay line: the upper half of the DRAM, half each; the CPU never uses it. */
static const struct satemu_hw hw = {
    0, reg_read, reg_write, commit, stats,
    SATEMU_F_CLK, SATEMU_PORT_BPS,
    { SATEMU_MEM_WORDS * 2, SATEMU_MEM_WORDS * 3 }, { SATEMU_MEM_WORDS, SATEMU_MEM_WORDS },
    SATEMU_QUEUE_DEPTH, SATEMU_MAX_FRAME_BYTES, SATEMU_LATENCY_FLOOR, port_drops,
    SATEMU_BOD_CHANNELS, SATEMU_BOD_RING,         /* the board's return channel, or none */
    SATEMU_MEM_WPC,                               /* delay-line words per 65536 cycles; 0: any */
    SATEMU_COUNTER_BITS,                          /* the statistics counters' width */
};

/* Folds the statistics counters into their 64-bit counts once a second (timer0 reloads every
 * SATEMU_F_CLK cycles and flags each expiry), far more often than the fastest one can wrap: a
 * snapshot, then a counter each time round the main loop, between the UART's bytes. */
static void fold_timer_start(void)
{
    timer0_en_write(0);
    timer0_load_write(SATEMU_F_CLK);
    timer0_reload_write(SATEMU_F_CLK);
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

static struct satemu_deframer deframer;
static uint8_t response[SATEMU_MAX_PAYLOAD];
static uint8_t wire[SATEMU_MAX_ENCODED];

int main(void)
{
#ifndef SATEMU_SKIP_SDRAM_INIT
    sdram_init();
#endif
    satemu_deframer_init(&deframer);
    fold_timer_start();
    for (;;) {
        struct satemu_frame req;
        fold_when_due();
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
