/* SPDX-License-Identifier: BSD-2-Clause */
/* The timeline runner (docs/architecture.md, "Timelines"): TIMELINE_WRITE, _START, _STOP and
 * _STATUS, and the steps run between requests. */
#ifndef SATEMU_TIMELINE_H
#define SATEMU_TIMELINE_H

#include <stddef.h>
#include <stdint.h>

#include "hw.h"

/* The entries the timeline store holds: 0 when the box has none. */
uint32_t satemu_timeline_entries(const struct satemu_hw *hw);

/* No timeline runs. */
void satemu_timeline_init(void);

/* 1 while a timeline runs (SET_PROFILE, COMMIT, TIMELINE_WRITE and TIMELINE_START answer
 * RUNNING). */
int satemu_timeline_running(void);

/* A load staged or committed: an armed run is disarmed by a SET_PROFILE
 * (satemu_timeline_disarm), and starts once the commit of its load has wholly taken effect
 * (satemu_timeline_loaded, with the generation now in force). */
void satemu_timeline_disarm(void);
void satemu_timeline_loaded(const struct satemu_hw *hw, uint32_t generation);

/* Between requests, with no commit applying: counts the step the channels took, stages the
 * next one and commits it once its cycle is near. Returns 1 while a timeline runs. */
int satemu_timeline_poll(const struct satemu_hw *hw);

/* One of the four timeline requests (op), its payload p; the answer into out. */
size_t satemu_timeline_request(const struct satemu_hw *hw, unsigned op, const uint8_t *p,
                               uint8_t *out);

#endif
