/* The v1 HTTP API on top of the server layer (http.h): routes, request bodies, tenant
 * resolution, and the hand-off to the loop thread. Reference: hostd/api/README.md.
 *
 * Read-only routes (get, list, events, files of ended sessions, workspace tar) run on the
 * connection's thread against store readers. Everything that changes state is posted to the
 * loop thread, which answers at once: no request waits on a guest, except file transfers
 * with a running guest, which are bounded by their own chunk deadlines. */
#pragma once

#include "error.h"
#include "eventhub.h"
#include "http.h"
#include "loop.h"
#include "pool.h"
#include "sessions.h"
#include "store.h"

#define API_TENANT_DEFAULT "default"

typedef struct Api Api;

typedef struct ApiDeps {
    Loop *loop;
    Sessions *sessions;
    Pool *pool;
    StoreReaders *readers;
    EventHub *hub;
    const char *state_dir;
} ApiDeps;

int api_start(const ApiDeps *deps, const HttpConfig *http, Api **ret, Error **errp);
void api_stop(Api *a);
