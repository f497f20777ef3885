/* SPDX-License-Identifier: BSD-2-Clause */
/* LiteX sim module: the simulated board's Ethernet ports, driven over TCP at exact cycles.
 *
 * Host -> board:  'F' channel u8, err u8, length u16 LE, bytes   a frame for a channel's ingress
 * Board -> host:  'A' channel u8, index u32 LE, cycle u64 LE     its last beat was accepted
 *                 'E' channel u8, cycle u64 LE, length u16 LE, bytes   a frame left the channel;
 *                                                                 cycle: its first valid beat
 * Channel 0 is forward (ingress on port B, egress on port A), channel 1 return (A -> B).
 * Frames enter back to back, one 64-bit beat per cycle; egress is always ready. */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <netinet/in.h>
#include <event2/event.h>
#include <event2/listener.h>
#include <json-c/json.h>

#include "error.h"
#include "modules.h"

#define MAX_FRAME 65536
#define QUEUE 4096

struct frame { uint8_t err; uint16_t len; uint8_t *data; };

struct channel {
    uint8_t *sink_valid, *sink_ready, *sink_last, *sink_nbytes, *sink_err;
    uint64_t *sink_data;
    uint8_t *source_valid, *source_ready, *source_last, *source_nbytes;
    uint64_t *source_data;
    struct frame queue[QUEUE];
    unsigned head, count, beat;          /* frames waiting; beat of the head being driven */
    uint32_t accepted;                   /* frames whose last beat was taken */
    int driving, was_valid, was_ready;
    uint8_t out[MAX_FRAME];
    unsigned out_len;
    int in_frame;
    uint64_t out_start;
};

struct session {
    struct channel ch[2];
    uint64_t *now;
    char *sys_clk;
    int fd;
    struct event *ev;
    uint8_t rx[MAX_FRAME + 8];
    size_t rx_len;
};

static struct event_base *base;

static int arg_int(char *args, const char *key, int *value)
{
    json_object *root = json_tokener_parse(args), *obj;
    if (!root || !json_object_object_get_ex(root, key, &obj))
        return RC_JSERROR;
    *value = json_object_get_int(obj);
    json_object_put(root);
    return RC_OK;
}

static void send_all(struct session *s, const void *buf, size_t len)
{
    const uint8_t *p = buf;
    while (s->fd > 0 && len) {
        ssize_t n = write(s->fd, p, len);
        if (n <= 0) {
            if (n < 0 && errno == EINTR)
                continue;
            return;
        }
        p += n;
        len -= (size_t)n;
    }
}

static void parse_input(struct session *s)
{
    for (;;) {
        if (s->rx_len < 5)
            return;
        if (s->rx[0] != 'F') {              /* not ours: drop one byte and resynchronise */
            memmove(s->rx, s->rx + 1, --s->rx_len);
            continue;
        }
        unsigned ch = s->rx[1] & 1, len = s->rx[3] | (s->rx[4] << 8);
        if (s->rx_len < 5 + len)
            return;
        struct channel *c = &s->ch[ch];
        if (c->count < QUEUE && len > 0) {
            struct frame *f = &c->queue[(c->head + c->count++) % QUEUE];
            f->err = s->rx[2];
            f->len = (uint16_t)len;
            f->data = malloc(len);
            memcpy(f->data, s->rx + 5, len);
        }
        memmove(s->rx, s->rx + 5 + len, s->rx_len - 5 - len);
        s->rx_len -= 5 + len;
    }
}

static void on_read(evutil_socket_t fd, short what, void *arg)
{
    struct session *s = arg;
    (void)what;
    ssize_t n = read(fd, s->rx + s->rx_len, sizeof(s->rx) - s->rx_len);
    if (n <= 0) {
        event_del(s->ev);
        event_free(s->ev);
        s->ev = NULL;
        close(fd);
        s->fd = 0;
        return;
    }
    s->rx_len += (size_t)n;
    parse_input(s);
}

static void on_accept(struct evconnlistener *l, evutil_socket_t fd, struct sockaddr *a, int n, void *arg)
{
    struct session *s = arg;
    (void)l; (void)a; (void)n;
    if (s->fd > 0) {                         /* one host at a time */
        close(fd);
        return;
    }
    s->fd = fd;
    s->rx_len = 0;
    s->ev = event_new(base, fd, EV_READ | EV_PERSIST, on_read, s);
    event_add(s->ev, NULL);
}

static int satemu_eth_start(void *b)
{
    base = (struct event_base *)b;
    return RC_OK;
}

static int satemu_eth_new(void **sess, char *args)
{
    struct session *s = calloc(1, sizeof(*s));
    int port;
    if (!s)
        return RC_NOENMEM;
    if (arg_int(args, "port", &port) != RC_OK) {
        eprintf("satemu_eth: no port given\n");
        return RC_INVARG;
    }
    struct sockaddr_in sin;
    memset(&sin, 0, sizeof(sin));
    sin.sin_family = AF_INET;
    sin.sin_addr.s_addr = htonl(0x7f000001);
    sin.sin_port = htons((uint16_t)port);
    if (!evconnlistener_new_bind(base, on_accept, s, LEV_OPT_CLOSE_ON_FREE | LEV_OPT_REUSEABLE, -1,
                                 (struct sockaddr *)&sin, sizeof(sin))) {
        eprintf("satemu_eth: cannot bind port %d\n", port);
        return RC_ERROR;
    }
    *sess = s;
    return RC_OK;
}

static void *pad(struct pad_s *pads, const char *name)
{
    for (int i = 0; pads[i].name; i++)
        if (!strcmp(pads[i].name, name))
            return pads[i].signal;
    eprintf("satemu_eth: no pad %s\n", name);
    return NULL;
}

static int satemu_eth_add_pads(void *sess, struct pad_list_s *plist)
{
    struct session *s = sess;
    struct pad_s *p = plist->pads;
    if (!strcmp(plist->name, "sys_clk")) {
        s->sys_clk = pad(p, "sys_clk");
        return RC_OK;
    }
    if (strcmp(plist->name, "satemu_eth"))
        return RC_OK;
    s->now = pad(p, "now");
    static const char *names[2] = { "fwd", "ret" };
    for (int i = 0; i < 2; i++) {
        struct channel *c = &s->ch[i];
        char n[64];
#define P(field) (snprintf(n, sizeof(n), "%s_" #field, names[i]), pad(p, n))
        c->sink_valid = P(sink_valid);     c->sink_ready = P(sink_ready);
        c->sink_data = P(sink_data);       c->sink_last = P(sink_last);
        c->sink_nbytes = P(sink_nbytes);   c->sink_err = P(sink_err);
        c->source_valid = P(source_valid); c->source_ready = P(source_ready);
        c->source_data = P(source_data);   c->source_last = P(source_last);
        c->source_nbytes = P(source_nbytes);
#undef P
    }
    return RC_OK;
}

static void put64(uint8_t *p, uint64_t v) { for (int i = 0; i < 8; i++) p[i] = (uint8_t)(v >> (8 * i)); }

static void channel_tick(struct session *s, int i, uint64_t cycle)
{
    struct channel *c = &s->ch[i];
    /* The handshakes of the cycle before: what was driven then against what was read then. */
    if (c->was_valid && c->was_ready) {
        struct frame *f = &c->queue[c->head];
        unsigned beats = (f->len + 7) / 8;
        if (++c->beat == beats) {
            uint8_t msg[14] = { 'A', (uint8_t)i };
            msg[2] = (uint8_t)c->accepted; msg[3] = (uint8_t)(c->accepted >> 8);
            msg[4] = (uint8_t)(c->accepted >> 16); msg[5] = (uint8_t)(c->accepted >> 24);
            put64(msg + 6, cycle - 1);
            send_all(s, msg, sizeof(msg));
            c->accepted++;
            free(f->data);
            c->head = (c->head + 1) % QUEUE;
            c->count--;
            c->beat = 0;
        }
    }
    /* Egress: the first cycle a frame's valid is high is its start; every beat is taken. */
    if (*c->source_valid) {
        if (!c->in_frame) {
            c->in_frame = 1;
            c->out_start = cycle;
            c->out_len = 0;
        }
        unsigned n = *c->source_last ? (*c->source_nbytes & 0xF) : 8;
        for (unsigned k = 0; k < n && k < 8 && c->out_len < MAX_FRAME; k++)
            c->out[c->out_len++] = (uint8_t)(*c->source_data >> (8 * k));
        if (*c->source_last) {
            uint8_t hdr[12] = { 'E', (uint8_t)i };
            put64(hdr + 2, c->out_start);
            hdr[10] = (uint8_t)c->out_len;
            hdr[11] = (uint8_t)(c->out_len >> 8);
            send_all(s, hdr, sizeof(hdr));
            send_all(s, c->out, c->out_len);
            c->in_frame = 0;
        }
    }
    *c->source_ready = 1;
    /* Drive this cycle's ingress beat. */
    c->was_ready = *c->sink_ready;
    c->was_valid = c->count > 0;
    *c->sink_valid = (uint8_t)c->was_valid;
    if (c->was_valid) {
        struct frame *f = &c->queue[c->head];
        unsigned beats = (f->len + 7) / 8, off = 8 * c->beat;
        uint64_t word = 0;
        for (unsigned k = 0; k < 8 && off + k < f->len; k++)
            word |= (uint64_t)f->data[off + k] << (8 * k);
        int last = c->beat == beats - 1;
        *c->sink_data = word;
        *c->sink_last = (uint8_t)last;
        *c->sink_nbytes = (uint8_t)(last ? f->len - off : 8);
        *c->sink_err = (uint8_t)(last && f->err);
    }
}

static int satemu_eth_tick(void *sess, uint64_t time_ps)
{
    static clk_edge_state_t edge;
    struct session *s = sess;
    (void)time_ps;
    if (!clk_pos_edge(&edge, *s->sys_clk))
        return RC_OK;
    uint64_t cycle = *s->now;
    channel_tick(s, 0, cycle);
    channel_tick(s, 1, cycle);
    return RC_OK;
}

static struct ext_module_s ext_mod = {
    "satemu_eth", satemu_eth_start, satemu_eth_new, satemu_eth_add_pads, NULL, satemu_eth_tick
};

int litex_sim_ext_module_init(int (*register_module)(struct ext_module_s *))
{
    return register_module(&ext_mod);
}
