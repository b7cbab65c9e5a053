/* A fake of what the sessions ask of the host (sessions_host.h): a pool of token guests that
 * a test makes idle, says things through and lets go, a channel that records what was sent
 * and answers nothing, and a salvage the test completes. Around it, a world: the real sessions
 * module on a real loop, worker queue, SQLite store and event hub in a temporary folder.
 * One world at a time (the fake is global). */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "session_internal.h"

#define FAKE_GUESTS_MAX 8
#define FAKE_BODY_CASES 64

typedef struct FakeGuest {
    char name[32];
    size_t disk_index;
    bool idle, taken, released, recycled;
    const GuestOps *ops; /* its owner's (the session's) */
    void *userdata;
    GuestGoneFn gone; /* set by a release that waits for the disk */
    void *gone_userdata;
} FakeGuest;

typedef struct FakeHost {
    FakeGuest guests[FAKE_GUESTS_MAX];
    size_t n_guests;
    unsigned takes, releases, recycles, holds, unholds, hellos, salvages;
    unsigned sent[FAKE_BODY_CASES]; /* HostMsg body cases sent */
    uint32_t next_req;
    uint32_t hello_req; /* the last Hello's */
    bool hello_fails;
    char hold_name[STORE_GUEST_MAX_BYTES]; /* the one slot hold_disk() knows (an earlier run's
                                              guest) */
    ssize_t hold_result;                   /* its disk index; any other name: -1 */
    char workspace_path[512];
    Loop *quit_on_release; /* set: a release ends loop_run() */
    bool salvage_pending;
    ExtractRequest salvage;
    char salvage_dest[1024];
    void (*on_idle)(void *userdata);
    void *on_idle_userdata;
} FakeHost;

extern FakeHost fake;
extern const SessionsHostOps fake_host_ops;

typedef struct FakeWorld {
    char *dir;
    Loop *loop;
    WorkQueue *q;
    Store *store;
    EventHub *hub;
    Sessions *m;
} FakeWorld;

/* A world whose config is the defaults, changed by tune (may be NULL) before sessions_new. */
void fake_world_open(FakeWorld *w, void (*tune)(SessionsConfig *c));
void fake_world_close(FakeWorld *w);
/* A cmocka teardown: *state is a FakeWorld, or a fixture whose first member is one. */
int fake_teardown(void **state);
/* The daemon is killed (its sessions freed as they are, nothing ended) and starts again on the
 * same state folder, with a new pool (the fake's guests and counters reset). sessions_start()
 * is the caller's. */
void fake_world_restart(FakeWorld *w, void (*tune)(SessionsConfig *c));

/* A new guest, idle; the pool's on-idle hook runs (pending sessions take it). */
FakeGuest *fake_guest_idle(void);
FakeGuest *fake_guest_of(const Guest *g);
/* The guest says m (through its owner's GuestOps), or is lost. */
void fake_say(const Guest *g, GuestMsg *m);
void fake_ack(const Guest *g, uint32_t req_id);
void fake_lost(const Guest *g);
/* A released guest's QEMU is gone: its owner hears it (and asks for the salvage). */
void fake_gone(const Guest *g);
/* The salvage asked for ends: its after_work runs (here, on the loop thread), then done. */
void fake_salvage_done(const Error *err);

/* A session of tenant "default" on pool "minimal" (the fake's one shape): spec may be NULL
 * (a plain session). Returns it (live), or fails the test. */
Session *fake_create(FakeWorld *w, const SessionSpec *spec);
/* The same, given a guest and its Hello acknowledged: running. */
Session *fake_running(FakeWorld *w, const SessionSpec *spec);
/* Runs the loop until quit, or guard_usec passed (then returns 1). */
int fake_run(FakeWorld *w, uint64_t guard_usec);
/* Events of the session after seq `after`, in order (free with event_records_free). */
EventRecord *fake_events(FakeWorld *w, const char *id, uint64_t after, size_t *ret_n);
