/* SPDX-License-Identifier: BSD-2-Clause */
/* Helpers the simulated board's own LiteX sim modules share: their JSON arguments and their pads. */
#ifndef SATEMU_SIMMOD_H
#define SATEMU_SIMMOD_H

#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <netinet/in.h>
#include <event2/listener.h>
#include <json-c/json.h>

#include "error.h"
#include "modules.h"

/* The integer argument `key` of a module's JSON arguments. */
static inline int arg_int(char *args, const char *key, int *value)
{
    json_object *root = json_tokener_parse(args), *obj;
    if (!root || !json_object_object_get_ex(root, key, &obj)) {
        if (root)
            json_object_put(root);
        return RC_JSERROR;
    }
    *value = json_object_get_int(obj);
    json_object_put(root);
    return RC_OK;
}

/* The string argument `key`, copied into `out` (cut to `size` - 1 bytes). */
static inline int arg_str(char *args, const char *key, char *out, size_t size)
{
    json_object *root = json_tokener_parse(args), *obj;
    if (!root || !json_object_object_get_ex(root, key, &obj)) {
        if (root)
            json_object_put(root);
        return RC_JSERROR;
    }
    snprintf(out, size, "%s", json_object_get_string(obj));
    json_object_put(root);
    return RC_OK;
}

/* The signal of pad `name` in a pad list; NULL, with a message naming `module`, if it has none. */
static inline void *find_pad(const char *module, struct pad_s *pads, const char *name)
{
    for (int i = 0; pads[i].name; i++)
        if (!strcmp(pads[i].name, name))
            return pads[i].signal;
    eprintf("%s: no pad %s\n", module, name);
    return NULL;
}

/* Listen on TCP `port` of the loopback interface only (a simulated board's sockets stay on this
 * machine), calling `on_accept(..., arg)` for each client; 0 if the port cannot be bound. */
static inline int listen_loopback(struct event_base *base, int port, evconnlistener_cb on_accept,
                                  void *arg)
{
    struct sockaddr_in sin;
    memset(&sin, 0, sizeof(sin));
    sin.sin_family = AF_INET;
    sin.sin_addr.s_addr = htonl(0x7f000001);
    sin.sin_port = htons((uint16_t)port);
    return evconnlistener_new_bind(base, on_accept, arg, LEV_OPT_CLOSE_ON_FREE | LEV_OPT_REUSEABLE,
                                   -1, (struct sockaddr *)&sin, sizeof(sin)) != NULL;
}

#endif
