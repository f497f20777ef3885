/* SPDX-License-Identifier: BSD-2-Clause */
/* Helpers the simulated board's own LiteX sim modules share: their JSON arguments and their pads. */
#ifndef SATEMU_SIMMOD_H
#define SATEMU_SIMMOD_H

#include <stdio.h>
#include <string.h>
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

#endif
