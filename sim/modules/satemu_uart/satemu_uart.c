/* SPDX-License-Identifier: BSD-2-Clause */
/* LiteX sim module: the simulated board's UART on a TCP port of the loopback interface.
 *
 * It takes the place of LiteX's serial2tcp, which shares one event and one socket between all
 * the clients it ever accepted: when a client left after the next had connected, its EOF freed
 * the new client's event, and the board crashed on the next read (seen as "the simulated board
 * exited at start" when a slow boot made the host retry).
 *
 * Here:
 * - one client at a time is attached; a client that connects while another is attached gets
 *   one line, "satemu-uart: busy: ...", and is closed, and the attached one is served on (two
 *   clients interleaving requests would take each other's answers); once it leaves, the next
 *   client is attached;
 * - a client that leaves, or whose socket fails, is detached; the board runs on, and bytes it
 *   sends with no client attached are dropped, as on a UART with nothing plugged in;
 * - so are the bytes a client sent and the board has not taken when it leaves, buffered here
 *   or still in the socket: when a client knocks while the attached one is held back, the
 *   module reads ahead what that one sent (up to RX_RING_BYTES, kept in order for the UART)
 *   to see whether its end follows; one that has left (EOF, or TCP_INFO's CLOSE_WAIT) is
 *   detached at once with all it sent, and the new client attached, rather than the board
 *   reading the burst at its UART's pace, which kept clients out for a minute after 64 KB;
 * - bytes from the client wait in a buffer until the board's UART takes them; when it holds
 *   RX_HELD bytes the socket is not read, so TCP holds the client back and no byte is lost;
 * - bytes to the client leave through a buffer, sent without blocking the simulation; a client
 *   that reads nothing for RX_TX_BYTES bytes loses the ones that do not fit; the board's log
 *   counts them when that client is detached. */
#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <event2/event.h>
#include <event2/listener.h>

#include "../simmod.h"

#define RX_TX_BYTES 65536         /* the ring to the client */
#define RX_RING_BYTES (1u << 20)  /* the ring from it: RX_HELD, and what a read-ahead keeps */
#define READ_AHEAD_MS 20          /* a read-ahead ends when the client sends nothing this long */
/* Client bytes held for the board's UART: several requests' worth (a host sends one and waits
 * for its answer); beyond it TCP holds the client back. */
#define RX_HELD 4096
#define FLUSH_BYTES 1024          /* send the buffer when it holds this much ... */
#define FLUSH_CYCLES 64           /* ... or its oldest byte has waited this many cycles */
#define GONE_CYCLES 4096          /* how often a client held back is asked whether it left */

struct ring {
    uint8_t data[RX_TX_BYTES];
    size_t head, len;
};

struct rx_ring {
    uint8_t data[RX_RING_BYTES];
    size_t head, len;
};

struct session {
    char *sys_clk;
    uint8_t *source_data, *source_valid, *source_ready;   /* the board's UART -> client */
    uint8_t *sink_data, *sink_valid, *sink_ready;         /* client -> the board's UART */
    clk_edge_state_t edge;
    int fd;                       /* the attached client's socket, or -1 */
    struct event *ev;             /* its read event, NULL when none */
    int reading;                  /* the read event is armed */
    struct rx_ring rx;
    struct ring tx;
    unsigned tx_age;              /* cycles the tx buffer's oldest byte has waited */
    unsigned gone_age;            /* cycles since the held-back client was last asked */
    unsigned long long dropped;   /* bytes to the attached client that could not be kept */
};

static struct event_base *base;

static size_t ring_space(const struct ring *r) { return RX_TX_BYTES - r->len; }
static size_t rx_space(const struct rx_ring *r) { return r->len < RX_HELD ? RX_HELD - r->len : 0; }

static void rx_append(struct rx_ring *r, const uint8_t *bytes, size_t n)
{
    for (size_t i = 0; i < n; i++)
        r->data[(r->head + r->len++) % RX_RING_BYTES] = bytes[i];
}

static void detach(struct session *s)
{
    if (s->dropped)
        fprintf(stderr, "satemu_uart: %llu bytes to a client that did not read them were dropped\n",
                s->dropped);
    s->dropped = 0;
    if (s->ev)
        event_free(s->ev);        /* also takes it off the loop */
    s->ev = NULL;
    s->reading = 0;
    if (s->fd >= 0)
        close(s->fd);
    s->fd = -1;
    s->tx.len = 0;
    s->tx_age = 0;
    s->rx.len = 0;                /* what it sent and the board has not taken goes with it */
    s->gone_age = 0;
}

/* Whether the attached client has closed its end (the socket may still hold bytes it sent). */
static int closed_by_client(const struct session *s)
{
    struct tcp_info info;
    socklen_t len = sizeof(info);
    if (s->fd < 0 || getsockopt(s->fd, IPPROTO_TCP, TCP_INFO, &info, &len) < 0)
        return 0;
    return info.tcpi_state == TCP_CLOSE_WAIT;
}

/* Read what fits into the rx buffer; stop reading the socket while the buffer is full. */
static void on_read(evutil_socket_t fd, short what, void *arg)
{
    struct session *s = arg;
    uint8_t buf[4096];
    (void)what;
    if (fd < 0 || fd != s->fd)
        return;
    if (closed_by_client(s)) {    /* gone: its bytes, here and in the socket, are dropped */
        detach(s);
        return;
    }
    size_t want = rx_space(&s->rx);
    if (want > sizeof(buf))
        want = sizeof(buf);
    if (!want) {
        event_del(s->ev);
        s->reading = 0;
        return;
    }
    ssize_t n = read(fd, buf, want);
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR))
        return;
    if (n <= 0) {                 /* the client left (EOF) or its socket failed */
        detach(s);
        return;
    }
    rx_append(&s->rx, buf, (size_t)n);
}

/* The attached client, held back by a full buffer, while another knocks: reads ahead what it
 * sent, into the ring past RX_HELD, to see whether its end follows. Returns 1 when it has left
 * (EOF or a failed socket); the bytes of one still there stay in the ring, in order. */
static int left_behind_bytes(struct session *s)
{
    uint8_t buf[4096];
    for (;;) {
        struct pollfd p = { .fd = s->fd, .events = POLLIN };
        if (poll(&p, 1, READ_AHEAD_MS) <= 0)
            return 0;             /* quiet: still there */
        size_t room = RX_RING_BYTES - s->rx.len;
        if (!room)
            return 0;             /* more than the ring holds: still sending */
        ssize_t n = recv(s->fd, buf, room < sizeof(buf) ? room : sizeof(buf), MSG_DONTWAIT);
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR))
            continue;
        if (n <= 0)
            return 1;
        rx_append(&s->rx, buf, (size_t)n);
    }
}

/* Whether the attached client is still there: its socket may hold an EOF that the loop has
 * not handed to on_read yet (a client that just left, and the next one already knocking). */
static int attached(struct session *s)
{
    for (int tries = 0; s->fd >= 0 && tries < 4; tries++) {
        uint8_t byte;
        ssize_t n = recv(s->fd, &byte, 1, MSG_PEEK | MSG_DONTWAIT);
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
            return 1;             /* connected and quiet */
        if (n > 0 && closed_by_client(s))
            detach(s);            /* gone, with bytes the board has not read */
        else if (n > 0 && !rx_space(&s->rx) && left_behind_bytes(s))
            detach(s);            /* gone behind the bytes it sent */
        else if (n > 0 && !rx_space(&s->rx))
            return 1;             /* connected, and held back by a full buffer */
        else if (n > 0)
            on_read(s->fd, EV_READ, s);   /* take its bytes, then look again */
        else if (!(n < 0 && errno == EINTR))
            detach(s);            /* EOF or a failed socket */
    }
    return s->fd >= 0;
}

static const char busy[] = "satemu-uart: busy: another client is attached to the simulated "
                           "board's UART, which serves one at a time\n";

static void on_accept(struct evconnlistener *l, evutil_socket_t fd, struct sockaddr *a, int n,
                      void *arg)
{
    struct session *s = arg;
    (void)l; (void)a; (void)n;
    if (attached(s)) {            /* turned away; the attached client keeps the port */
        if (send(fd, busy, sizeof(busy) - 1, MSG_NOSIGNAL | MSG_DONTWAIT) < 0)
            fprintf(stderr, "satemu_uart: could not tell a second client the port is busy\n");
        fprintf(stderr, "satemu_uart: a second client was turned away\n");
        close(fd);
        return;
    }
    s->fd = fd;
    int one = 1;                  /* requests and answers are small: never hold them back */
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    s->ev = event_new(base, fd, EV_READ | EV_PERSIST, on_read, s);
    event_add(s->ev, NULL);
    s->reading = 1;
}

static void flush_tx(struct session *s)
{
    while (s->fd >= 0 && s->tx.len) {
        size_t chunk = RX_TX_BYTES - s->tx.head;
        if (chunk > s->tx.len)
            chunk = s->tx.len;
        ssize_t n = send(s->fd, s->tx.data + s->tx.head, chunk, MSG_NOSIGNAL | MSG_DONTWAIT);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
            return;               /* the client is slow: try again on a later cycle */
        if (n <= 0) {             /* the client has gone */
            detach(s);
            return;
        }
        s->tx.head = (s->tx.head + (size_t)n) % RX_TX_BYTES;
        s->tx.len -= (size_t)n;
    }
    s->tx_age = 0;
}

static int satemu_uart_start(void *b)
{
    base = (struct event_base *)b;
    signal(SIGPIPE, SIG_IGN);     /* a client gone must not kill the board */
    return RC_OK;
}

static int satemu_uart_new(void **sess, char *args)
{
    struct session *s = calloc(1, sizeof(*s));
    int port;
    if (!s)
        return RC_NOENMEM;
    s->fd = -1;
    if (arg_int(args, "port", &port) != RC_OK || port <= 0 || port > 65535) {
        eprintf("satemu_uart: no valid port given\n");
        free(s);
        return RC_INVARG;
    }
    if (!listen_loopback(base, port, on_accept, s)) {   /* the control plane stays local */
        eprintf("satemu_uart: cannot bind port %d\n", port);
        free(s);
        return RC_ERROR;
    }
    *sess = s;
    return RC_OK;
}

static int satemu_uart_add_pads(void *sess, struct pad_list_s *plist)
{
    struct session *s = sess;
    struct pad_s *p = plist->pads;
    if (!strcmp(plist->name, "sys_clk"))
        s->sys_clk = find_pad("satemu_uart", p, "sys_clk");
    if (!strcmp(plist->name, "serial")) {
        s->source_data = find_pad("satemu_uart", p, "source_data");
        s->source_valid = find_pad("satemu_uart", p, "source_valid");
        s->source_ready = find_pad("satemu_uart", p, "source_ready");
        s->sink_data = find_pad("satemu_uart", p, "sink_data");
        s->sink_valid = find_pad("satemu_uart", p, "sink_valid");
        s->sink_ready = find_pad("satemu_uart", p, "sink_ready");
    }
    return RC_OK;
}

static int satemu_uart_tick(void *sess, uint64_t time_ps)
{
    struct session *s = sess;
    (void)time_ps;
    if (!clk_pos_edge(&s->edge, *s->sys_clk))
        return RC_OK;
    /* The board's UART -> the client: always ready, as a wire is. */
    *s->source_ready = 1;
    if (*s->source_valid && s->fd >= 0) {
        if (ring_space(&s->tx))
            s->tx.data[(s->tx.head + s->tx.len++) % RX_TX_BYTES] = *s->source_data;
        else
            s->dropped++;
    }
    if (s->tx.len && (s->tx.len >= FLUSH_BYTES || ++s->tx_age >= FLUSH_CYCLES))
        flush_tx(s);
    /* The client -> the board's UART: one byte offered per cycle, taken when the UART is ready
     * (its ready of the cycle before, as LiteX's sim UART expects). */
    *s->sink_valid = 0;
    if (s->rx.len) {
        *s->sink_data = s->rx.data[s->rx.head];
        *s->sink_valid = 1;
        if (*s->sink_ready) {
            s->rx.head = (s->rx.head + 1) % RX_RING_BYTES;
            s->rx.len--;
        }
    }
    if (!s->reading && s->ev && ++s->gone_age >= GONE_CYCLES) {
        s->gone_age = 0;          /* held back by a full buffer: has it left meanwhile? */
        if (closed_by_client(s))
            detach(s);
    }
    if (!s->reading && s->ev && rx_space(&s->rx)) {
        event_add(s->ev, NULL);   /* room again: read the socket again */
        s->reading = 1;
    }
    return RC_OK;
}

static struct ext_module_s ext_mod = {
    "satemu_uart", satemu_uart_start, satemu_uart_new, satemu_uart_add_pads, NULL, satemu_uart_tick
};

int litex_sim_ext_module_init(int (*register_module)(struct ext_module_s *))
{
    return register_module(&ext_mod);
}
