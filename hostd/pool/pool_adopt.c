/* Guests that outlive a daemon (issue 30): a stop with [daemon] shutdown = keep leaves a
 * running session's guest running (pool_keep: its channel closes, its slot is kept out of
 * the final sweep), and the next start takes it back (pool_adopt, before pool_start) instead
 * of destroying it as a leftover. The same works after a kill -9: nothing of the old run's
 * pool is needed but the slot's name, which the session's record holds; the slot's UUID and
 * channel path follow from the state directory and the name.
 *
 * An adopted guest is checked before anything is read from it: its domain must run with the
 * slot's own UUID (a domain of that name with another UUID is not ours, and is destroyed as a
 * leftover), and its channel must sync with a fresh nonce and answer Ready with the protocol
 * version this daemon speaks (channel.c refuses any other). Until both hold, the slot is
 * SLOT_ADOPTING; then it is SLOT_BUSY, exactly as if pool_take had handed it out. A guest
 * that fails either is handed to its owner busy and broken (done with an error): the owner
 * releases it as a lost guest, which destroys the domain and salvages the disk. */
#include <stdlib.h>

#include "log.h"
#include "pool_internal.h"
#include "timeutil.h"

int
pool_keep(Pool *p, Guest *g)
{
    (void) p;
    if (g->state != SLOT_BUSY)
        return -1;
    slot_close_channel(g); /* the runner waits for the next host and keeps its output */
    slot_cancel_timer(g);
    g->ops = NULL;
    g->userdata = NULL;
    g->state = SLOT_KEPT;
    return 0;
}

ssize_t
pool_adopt(Pool *p, const char *domain_name, const GuestOps *ops, void *userdata,
           GuestAdoptedFn done)
{
    Guest *g = NULL;
    for (size_t i = 0; i < p->n_shapes && !g; i++)
        for (unsigned k = 0; k < p->shapes[i].n_slots && !g; k++)
            if (strcmp(p->shapes[i].slots[k].name, domain_name) == 0)
                g = &p->shapes[i].slots[k];
    if (!g || p->started || g->state != SLOT_EMPTY)
        return -1;
    g->state = SLOT_ADOPTING;
    g->ops = ops;
    g->userdata = userdata;
    g->adopt_done = done;
    g->lost_notified = false;
    g->released = false;
    return (ssize_t) g->disk_index;
}

bool
pool_slot_survives_sweep(const Guest *g)
{
    return g->state == SLOT_KEPT || (g->state == SLOT_ADOPTING && !g->adopt_err);
}

void
pool_adopt_check_work(Pool *p)
{
    for (size_t i = 0; i < p->n_shapes; i++)
        for (unsigned k = 0; k < p->shapes[i].n_slots; k++) {
            Guest *g = &p->shapes[i].slots[k];
            if (g->state == SLOT_ADOPTING)
                (void) virt_is_running_uuid(p->virt, g->name, g->uuid, &g->adopt_err);
        }
}

/* The slot is the owner's, busy; done reports what broke (or NULL: it is adopted). */
static void
slot_adopt_finish(Guest *g, const Error *err)
{
    GuestAdoptedFn done = g->adopt_done;
    g->adopt_done = NULL;
    g->state = SLOT_BUSY;
    if (err) {
        slot_close_channel(g);
        slot_cancel_timer(g);
        g->lost_notified = true; /* the owner hears of it here, once */
    }
    if (done)
        done(g, err, g->userdata);
}

void
pool_adopt_continue(Pool *p)
{
    for (size_t i = 0; i < p->n_shapes; i++)
        for (unsigned k = 0; k < p->shapes[i].n_slots; k++) {
            Guest *g = &p->shapes[i].slots[k];
            if (g->state != SLOT_ADOPTING)
                continue;
            if (g->adopt_err) {
                _cleanup_error_ Error *err = g->adopt_err;
                g->adopt_err = NULL;
                g->qemu_pid = -1;
                slot_adopt_finish(g, err);
                continue;
            }
            g->qemu_pid = virt_qemu_pid(g->name);
            slot_open_channel(g, p->cfg.sync_timeout_usec); /* may fail it: slot_fail */
        }
}

void
pool_adopt_on_ready(Guest *g)
{
    log_info("guest %s: adopted (channel synced)", g->name);
    slot_adopt_finish(g, NULL);
}

void
pool_adopt_failed(Guest *g, const char *why)
{
    _cleanup_error_ Error *err = NULL;
    error_set(&err, E_GUEST, 0, "%s", why);
    slot_adopt_finish(g, err);
}
