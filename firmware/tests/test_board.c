/* SPDX-License-Identifier: BSD-2-Clause */
/* A board's generated header on the host: the struct satemu_hw main.c fills from it, and what
 * the firmware reports from it (tests/firmware/test_generated_tables.py holds it to
 * satemu.base.boards). */
#include <stdio.h>

#include "requests.h"
#include "satemu_board_gen.h"

/* The DRAM and LOG_CTL, as main.c has them where the CPU reads the DRAM (HELLO only asks
 * whether they exist). */
static uint64_t mem_read(void *ctx, uint32_t word) { (void)ctx; return word; }
static void log_ctl(void *ctx, unsigned value) { (void)ctx; (void)value; }
static void mem_write(void *ctx, uint32_t word, uint64_t value) { (void)ctx; (void)word; (void)value; }
static uint64_t mem_load(void *ctx, uint32_t word) { (void)ctx; return word; }

/* As main.c has it, less the register access HELLO does not use. */
static const struct satemu_hw hw = {
    .limits = SATEMU_BOARD_LIMITS,
    .delay_line = SATEMU_BOARD_DELAY_LINES,
    .bod_mask = SATEMU_BOD_CHANNELS,
    .bod_ring = SATEMU_BOD_RING,
    .counter_bits = SATEMU_COUNTER_BITS,
    .log_bits = SATEMU_LOG_BITS,
    .log = SATEMU_BOARD_LOG_RINGS,
    .mem_read = mem_read,
    .log_ctl = log_ctl,
    .timeline = SATEMU_BOARD_TIMELINE,
    .mem_write = mem_write,
    .mem_load = mem_load,
};

int main(void)
{
    uint8_t version[2] = { SATEMU_PROTOCOL_VERSION & 0xFF, SATEMU_PROTOCOL_VERSION >> 8 };
    struct satemu_frame req = { 1, SATEMU_OP_HELLO, sizeof(version), version };
    uint8_t out[SATEMU_MAX_PAYLOAD];
    size_t n = satemu_handle(&hw, &req, out);
    printf("board %s\nhello ", SATEMU_BOARD_NAME);
    for (size_t i = 0; i < n; i++)
        printf("%02x", out[i]);
    printf("\n");
    for (int ch = 0; ch < SATEMU_CHANNELS; ch++)
        printf("delay_line %d %lu %lu\n", ch, (unsigned long)hw.delay_line[ch].base,
               (unsigned long)hw.delay_line[ch].words);
    printf("bod_mask %lu\nbod_ring %lu\ncounter_bits %lu\n", (unsigned long)hw.bod_mask,
           (unsigned long)hw.bod_ring, (unsigned long)hw.counter_bits);
    printf("log_bits %lu\n", (unsigned long)hw.log_bits);
    for (int ch = 0; ch < SATEMU_CHANNELS; ch++)
        printf("log_ring %d %lu %lu\n", ch, (unsigned long)hw.log[ch].base,
               (unsigned long)hw.log[ch].words);
    printf("timeline %lu %lu\n", (unsigned long)hw.timeline.base,
           (unsigned long)hw.timeline.words);
    return 0;
}
