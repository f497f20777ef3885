/* SPDX-License-Identifier: BSD-2-Clause */
/* LiteX sim module: the wire of the simulated board's two Ethernet ports, over TCP, at exact cycles.
 *
 * The wire is the 64-bit PHY of hw/ethport.py: eight bytes per cycle. A frame on it is its
 * bytes from the preamble to the FCS, in beats; at least GAP idle cycles separate two frames.
 * Port 0 is A (terminal side), port 1 is B (gateway side). Channel 0 is forward (in on B, out
 * on A), channel 1 return (in on A, out on B).
 *
 * Host -> board:  'F' port u8, at u64, length u16, bytes   send a frame into a port: it starts
 *                                                          on the wire at cycle max(at, wire free)
 *                 'T'                                      ask for the present cycle
 *                 'R' limit u64, flags u8                  lock-step: run while the next cycle
 *                      is below `limit`; with flags bit 0, also halt after every cycle in which
 *                      a frame's last beat left a port. limit 0: run freely again.
 * Board -> host:  'T' cycle u64                           the present cycle
 *                 'W' port u8, index u32, cycle u64        frame `index` of a port started then
 *                 'A' channel u8, cycle u64                the channel took a frame: its arrival
 *                 'O' channel u8, cycle u64                the channel discarded one (overrun)
 *                 'D' channel u8, fate u8, cycle u64       the channel decided the fate of the
 *                      next frame it took (satemu.base.params.Fate: 0 delivered, else why dropped;
 *                      bit 3 set: the decision is the copy of the frame before, duplication)
 *                 'H' cycle u64                            halted (lock-step): every cycle
 *                      before `cycle` has run, and every report of them has been sent; a frame
 *                      sent now with at >= cycle starts exactly at max(at, wire free)
 *                 'E' port u8, start u64, wire u64, length u16, bytes
 *                      a frame left the port: `start` is the cycle it started to leave its
 *                      channel, `wire` the cycle its first beat was on the port's wire, the
 *                      bytes are the wire's, preamble to FCS.
 * Integers are little-endian. A cycle is the value of the board's timebase in that cycle.
 *
 * TAP bridge (optional args "tap_a", "tap_b": interface names): frames the kernel sends on a
 * TAP go onto that port's wire as soon as it is free (padded to 60 bytes, with preamble and
 * FCS), and frames leaving the port are written to the TAP (without them). The simulation runs
 * freely then, so the link's times are stretched by the simulation's speed (see
 * docs/architecture.md). */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <fcntl.h>
#include <net/if.h>
#include <sys/ioctl.h>
#include <linux/if_tun.h>
#include <event2/event.h>
#include <event2/listener.h>

#include "../simmod.h"

#define MAX_FRAME 65536
#define QUEUE 4096
#define GAP 2                     /* idle cycles after a frame: 12 bytes, in whole beats */
#define F_HEADER 12

struct frame { uint64_t at; uint16_t len; uint8_t *data; };

struct port {
    int tap;                      /* TAP bridge fd, or -1 */
    struct event *tap_ev;
    uint8_t *rx_valid, *rx_last, *rx_last_be, *tx_valid, *tx_last, *tx_last_be;
    uint64_t *rx_data, *tx_data;
    struct frame queue[QUEUE];
    unsigned head, count, beat;   /* frames waiting; next beat of the head while driving */
    int driving;
    uint64_t free_at;             /* first cycle the wire may carry the next frame */
    uint32_t sent;                /* frames started on the wire */
    uint8_t out[MAX_FRAME];
    unsigned out_len;
    int in_frame;
    uint64_t out_start;
};

struct channel {
    uint8_t *arrived, *overrun, *start, *fate_valid, *fate;
    uint64_t starts[QUEUE];       /* start cycles of frames not yet off the wire */
    unsigned head, count;
};

struct session {
    struct port port[2];
    struct channel ch[2];
    uint64_t *now;
    char *sys_clk;
    int fd;
    struct event *ev;
    uint8_t rx[MAX_FRAME + F_HEADER];
    size_t rx_len;
    uint64_t limit;               /* lock-step: the cycle to halt before (0: run freely) */
    int halt_on_egress, egress_ended;
    unsigned r_count;             /* 'R' messages received */
};

static struct event_base *base;

/* IEEE 802.3 CRC-32 (reflected, polynomial 0xEDB88320), for the FCS of bridged frames. */
static uint32_t crc32_ieee(const uint8_t *p, size_t n)
{
    uint32_t c = 0xFFFFFFFFu;
    while (n--) {
        c ^= *p++;
        for (int k = 0; k < 8; k++)
            c = (c >> 1) ^ (0xEDB88320u & (0u - (c & 1u)));
    }
    return ~c;
}

/* A frame from a TAP onto its port's wire: preamble and SFD, the frame padded to 60 bytes, FCS. */
static void on_tap(evutil_socket_t fd, short what, void *arg)
{
    struct port *q = arg;
    uint8_t buf[MAX_FRAME];
    (void)what;
    for (;;) {
        ssize_t n = read(fd, buf, 2048);
        if (n <= 0)
            return;
        size_t len = n < 60 ? 60 : (size_t)n;
        if (n < 60)
            memset(buf + n, 0, 60 - (size_t)n);
        if (q->count >= QUEUE)
            continue;                            /* the wire's queue is full: the frame is lost */
        struct frame *f = &q->queue[(q->head + q->count++) % QUEUE];
        f->at = 0;
        f->len = (uint16_t)(8 + len + 4);
        f->data = malloc(f->len);
        memcpy(f->data, "\x55\x55\x55\x55\x55\x55\x55\xd5", 8);
        memcpy(f->data + 8, buf, len);
        uint32_t fcs = crc32_ieee(buf, len);
        for (int k = 0; k < 4; k++)
            f->data[8 + len + k] = (uint8_t)(fcs >> (8 * k));
    }
}

static int open_tap(const char *name)
{
    struct ifreq ifr;
    int fd = open("/dev/net/tun", O_RDWR | O_NONBLOCK);
    if (fd < 0)
        return -1;
    memset(&ifr, 0, sizeof(ifr));
    ifr.ifr_flags = IFF_TAP | IFF_NO_PI;
    snprintf(ifr.ifr_name, IFNAMSIZ, "%s", name);
    if (ioctl(fd, TUNSETIFF, &ifr) < 0) {
        close(fd);
        return -1;
    }
    return fd;
}

static void send_all(struct session *s, const void *buf, size_t len)
{
    const uint8_t *p = buf;
    while (s->fd > 0 && len) {
        ssize_t n = send(s->fd, p, len, MSG_NOSIGNAL);    /* a host gone must not kill the board */
        if (n <= 0) {
            if (n < 0 && errno == EINTR)
                continue;
            if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
                struct pollfd pfd = { s->fd, POLLOUT, 0 };
                poll(&pfd, 1, 1000);
                continue;
            }
            return;
        }
        p += n;
        len -= (size_t)n;
    }
}

static void put64(uint8_t *p, uint64_t v) { for (int i = 0; i < 8; i++) p[i] = (uint8_t)(v >> (8 * i)); }

static uint64_t get64(const uint8_t *p)
{
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--)
        v = (v << 8) | p[i];
    return v;
}

static void parse_input(struct session *s)
{
    for (;;) {
        if (s->rx_len >= 10 && s->rx[0] == 'R') {
            s->limit = get64(s->rx + 1);
            s->halt_on_egress = s->rx[9] & 1;
            s->r_count++;
            memmove(s->rx, s->rx + 10, s->rx_len -= 10);
            continue;
        }
        if (s->rx_len && s->rx[0] == 'R')
            return;                          /* incomplete */
        if (s->rx_len && s->rx[0] == 'T') {
            uint8_t msg[9] = { 'T' };
            put64(msg + 1, s->now ? *s->now : 0);
            send_all(s, msg, sizeof(msg));
            memmove(s->rx, s->rx + 1, --s->rx_len);
            continue;
        }
        if (s->rx_len < F_HEADER)
            return;
        if (s->rx[0] != 'F') {              /* not ours: drop one byte and resynchronise */
            memmove(s->rx, s->rx + 1, --s->rx_len);
            continue;
        }
        unsigned p = s->rx[1] & 1, len = s->rx[10] | (s->rx[11] << 8);
        if (s->rx_len < F_HEADER + len)
            return;
        struct port *port = &s->port[p];
        if (port->count < QUEUE && len > 0) {
            struct frame *f = &port->queue[(port->head + port->count++) % QUEUE];
            f->at = get64(s->rx + 2);
            f->len = (uint16_t)len;
            f->data = malloc(len);
            memcpy(f->data, s->rx + F_HEADER, len);
        }
        memmove(s->rx, s->rx + F_HEADER + len, s->rx_len - F_HEADER - len);
        s->rx_len -= F_HEADER + len;
    }
}

static void on_read(evutil_socket_t fd, short what, void *arg)
{
    struct session *s = arg;
    (void)what;
    ssize_t n = read(fd, s->rx + s->rx_len, sizeof(s->rx) - s->rx_len);
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR))
        return;
    if (n <= 0) {
        event_del(s->ev);
        event_free(s->ev);
        s->ev = NULL;
        close(fd);
        s->fd = 0;
        s->limit = 0;                        /* a host that leaves releases the simulation */
        return;
    }
    s->rx_len += (size_t)n;
    parse_input(s);
}

/* Lock-step: after cycle `cycle` has run, halt if the host asked to, and serve the host (frames,
 * time, a new limit) until it lets the simulation go on. */
static void maybe_halt(struct session *s, uint64_t cycle)
{
    int egress = s->egress_ended;
    s->egress_ended = 0;
    if (!s->limit || s->fd <= 0 || (cycle + 1 < s->limit && !(egress && s->halt_on_egress)))
        return;
    /* Report the halt; go on when an 'R' arrives that lets the next cycle run (one that does
     * not is answered with the halt again), or the host leaves. */
    for (;;) {
        uint8_t msg[9] = { 'H' };
        put64(msg + 1, cycle + 1);
        send_all(s, msg, sizeof(msg));
        unsigned seen = s->r_count;
        while (s->fd > 0 && s->r_count == seen) {
            struct pollfd pfd = { s->fd, POLLIN, 0 };
            if (poll(&pfd, 1, -1) < 0 && errno != EINTR)
                return;
            on_read(s->fd, EV_READ, s);
        }
        if (s->fd <= 0 || !s->limit || s->limit > cycle + 1)
            return;
    }
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
    int one = 1;                   /* lock-step exchanges are small: never hold them back */
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    s->ev = event_new(base, fd, EV_READ | EV_PERSIST, on_read, s);
    event_add(s->ev, NULL);
}

static int satemu_eth_start(void *b)
{
    base = (struct event_base *)b;
    signal(SIGPIPE, SIG_IGN);      /* no socket of the board's (UART or wire) may kill it */
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
    if (!listen_loopback(base, port, on_accept, s)) {
        eprintf("satemu_eth: cannot bind port %d\n", port);
        return RC_ERROR;
    }
    static const char *taps[2] = { "tap_a", "tap_b" };
    for (int i = 0; i < 2; i++) {
        char name[IFNAMSIZ];
        s->port[i].tap = -1;
        if (arg_str(args, taps[i], name, sizeof(name)) != RC_OK)
            continue;
        s->port[i].tap = open_tap(name);
        if (s->port[i].tap < 0) {
            eprintf("satemu_eth: cannot open TAP %s: %s\n", name, strerror(errno));
            return RC_ERROR;
        }
        s->port[i].tap_ev = event_new(base, s->port[i].tap, EV_READ | EV_PERSIST, on_tap,
                                      &s->port[i]);
        event_add(s->port[i].tap_ev, NULL);
    }
    *sess = s;
    return RC_OK;
}

static void *pad(struct pad_s *pads, const char *name) { return find_pad("satemu_eth", pads, name); }

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
    static const char *ports[2] = { "a", "b" }, *chans[2] = { "fwd", "ret" };
    char n[64];
#define P(prefix, field) (snprintf(n, sizeof(n), "%s_" #field, prefix), pad(p, n))
    for (int i = 0; i < 2; i++) {
        struct port *q = &s->port[i];
        q->rx_valid = P(ports[i], rx_valid);   q->rx_data = P(ports[i], rx_data);
        q->rx_last = P(ports[i], rx_last);     q->rx_last_be = P(ports[i], rx_last_be);
        q->tx_valid = P(ports[i], tx_valid);   q->tx_data = P(ports[i], tx_data);
        q->tx_last = P(ports[i], tx_last);     q->tx_last_be = P(ports[i], tx_last_be);
        struct channel *c = &s->ch[i];
        c->arrived = P(chans[i], arrived);     c->overrun = P(chans[i], overrun);
        c->start = P(chans[i], start);
        c->fate_valid = P(chans[i], fate_valid);
        c->fate = P(chans[i], fate);
    }
#undef P
    return RC_OK;
}


static void report(struct session *s, char kind, int index, uint64_t cycle)
{
    uint8_t msg[10] = { (uint8_t)kind, (uint8_t)index };
    put64(msg + 2, cycle);
    send_all(s, msg, sizeof(msg));
}

static void channel_tick(struct session *s, int i, uint64_t cycle)
{
    struct channel *c = &s->ch[i];
    if (*c->arrived)
        report(s, 'A', i, cycle);
    if (*c->overrun)
        report(s, 'O', i, cycle);
    if (*c->fate_valid) {
        uint8_t msg[11] = { 'D', (uint8_t)i, *c->fate };
        put64(msg + 3, cycle);
        send_all(s, msg, sizeof(msg));
    }
    if (*c->start && c->count < QUEUE)
        c->starts[(c->head + c->count++) % QUEUE] = cycle;
}

static void port_tick(struct session *s, int i, uint64_t cycle)
{
    struct port *q = &s->port[i];
    /* Transmit: collect the port's wire beats; channel i is the one that leaves by port i. */
    if (*q->tx_valid) {
        if (!q->in_frame) {
            q->in_frame = 1;
            q->out_start = cycle;
            q->out_len = 0;
        }
        unsigned n = 8;
        if (*q->tx_last)
            for (unsigned k = 0; k < 8; k++)
                if (*q->tx_last_be & (1u << k))
                    n = k + 1;
        for (unsigned k = 0; k < n && q->out_len < MAX_FRAME; k++)
            q->out[q->out_len++] = (uint8_t)(*q->tx_data >> (8 * k));
        if (*q->tx_last) {
            struct channel *c = &s->ch[i];
            uint64_t start = UINT64_MAX;
            if (c->count) {
                start = c->starts[c->head];
                c->head = (c->head + 1) % QUEUE;
                c->count--;
            }
            uint8_t hdr[20] = { 'E', (uint8_t)i };
            put64(hdr + 2, start);
            put64(hdr + 10, q->out_start);
            hdr[18] = (uint8_t)q->out_len;
            hdr[19] = (uint8_t)(q->out_len >> 8);
            send_all(s, hdr, sizeof(hdr));
            send_all(s, q->out, q->out_len);
            if (q->tap >= 0 && q->out_len > 12) {     /* to the TAP, without preamble and FCS */
                ssize_t w = write(q->tap, q->out + 8, q->out_len - 12);
                (void)w;                                /* a full TAP queue loses the frame */
            }
            q->in_frame = 0;
            s->egress_ended = 1;
        }
    }
    /* Receive: drive this cycle's beat of the frame on the wire, if any. */
    if (!q->driving && q->count && cycle >= q->free_at && cycle >= q->queue[q->head].at) {
        q->driving = 1;
        q->beat = 0;
        uint8_t msg[14] = { 'W', (uint8_t)i };
        msg[2] = (uint8_t)q->sent; msg[3] = (uint8_t)(q->sent >> 8);
        msg[4] = (uint8_t)(q->sent >> 16); msg[5] = (uint8_t)(q->sent >> 24);
        put64(msg + 6, cycle);
        send_all(s, msg, sizeof(msg));
        q->sent++;
    }
    *q->rx_valid = (uint8_t)q->driving;
    if (q->driving) {
        struct frame *f = &q->queue[q->head];
        unsigned beats = (f->len + 7) / 8, off = 8 * q->beat;
        uint64_t word = 0;
        for (unsigned k = 0; k < 8 && off + k < f->len; k++)
            word |= (uint64_t)f->data[off + k] << (8 * k);
        int last = q->beat == beats - 1;
        *q->rx_data = word;
        *q->rx_last = (uint8_t)last;
        *q->rx_last_be = (uint8_t)(last ? 1u << ((f->len - 1) % 8) : 0);
        if (last) {
            q->driving = 0;
            q->free_at = cycle + 1 + GAP;
            free(f->data);
            q->head = (q->head + 1) % QUEUE;
            q->count--;
        } else {
            q->beat++;
        }
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
    for (int i = 0; i < 2; i++)
        channel_tick(s, i, cycle);
    for (int i = 0; i < 2; i++)
        port_tick(s, i, cycle);
    maybe_halt(s, cycle);
    return RC_OK;
}

static struct ext_module_s ext_mod = {
    "satemu_eth", satemu_eth_start, satemu_eth_new, satemu_eth_add_pads, NULL, satemu_eth_tick
};

int litex_sim_ext_module_init(int (*register_module)(struct ext_module_s *))
{
    return register_module(&ext_mod);
}
