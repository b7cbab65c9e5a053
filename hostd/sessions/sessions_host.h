/* What the sessions ask of the rest of the host: the warm pool (a guest for a pending session,
 * its release, its slot's recycling, an earlier run's disk held for salvage), each guest's
 * channel, and the salvage of a released guest's disk. The state machine drives these and
 * nothing else outside the daemon's own loop, store and workers, so a fake of this one
 * interface runs every transition without libvirt or libguestfs (tests/unit/sessions_fake.c).
 *
 * The daemon fills it with the real functions (pool.h, extract_service.h: daemon.c), whose
 * contracts are the ones that apply; pool and extract come back as the first argument. Every
 * call is made on the loop thread. */
#pragma once

#include "extract_service.h"
#include "pool.h"

typedef struct SessionsHostOps {
    /* the pool */
    void (*status)(Pool *p, PoolStatus *ret);
    void (*set_on_idle)(Pool *p, void (*fn)(void *userdata), void *userdata);
    Guest *(*take)(Pool *p, const char *shape, const GuestOps *ops, void *userdata, Error **errp);
    void (*release)(Pool *p, Guest *g, GuestGoneFn gone, void *userdata);
    void (*recycle)(Pool *p, Guest *g);
    ssize_t (*hold_disk)(Pool *p, const char *domain_name);
    void (*unhold_disk)(Pool *p, size_t disk_index);
    int (*keep)(Pool *p, Guest *g); /* a stop that keeps the session: g stays running */
    ssize_t (*adopt)(Pool *p, const char *domain_name, const GuestOps *ops, void *userdata,
                     GuestAdoptedFn done); /* an earlier run's guest, before the pool starts */
    /* a guest it handed out */
    int (*hello)(Guest *g, const Stockade__Runner__SessionConfig *cfg, uint32_t *ret_req_id,
                 Error **errp);
    int (*send)(Guest *g, HostMsg *m, uint32_t *ret_req_id, Error **errp);
    size_t (*send_backlog_bytes)(const Guest *g);
    const char *(*name)(const Guest *g);
    const char *(*workspace_path)(const Guest *g);
    size_t (*disk_index)(const Guest *g);
    /* the salvage of a released guest's disk */
    void (*salvage)(ExtractService *x, const ExtractRequest *r);
    void (*salvage_status)(const ExtractService *x, ExtractServiceStatus *ret);
} SessionsHostOps;

struct SessionsHost {
    const SessionsHostOps *ops;
    Pool *pool;              /* borrowed: outlives the sessions */
    ExtractService *extract; /* borrowed: started by the daemon, stopped after the sessions */
};
