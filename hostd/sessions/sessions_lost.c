/* Cluster mode (issue 16): this host's side of "a host that dies". When another host took
 * this one over (hostd/cluster/cluster_takeover.c) it ended this host's sessions in the
 * cluster's index as host_lost and settled their reservations. This host's own records of
 * them must end the same way, and must not touch the ledger again: settlement
 * (session_admit_settle) ends only a reservation it finds open, and the cluster's triggers
 * refuse a second end anyway.
 *
 * Two moments: at start (sessions_adopt: the daemon was killed and came back) and while
 * running (the heartbeat says this host was declared lost: it was cut off from the database
 * for longer than the lease, its guests kept running). */
#include <string.h>

#include "log.h"
#include "session_internal.h"

/* True if the cluster's index says another host ended this session (a takeover). An index
 * that cannot be read says no: the session then ends as host_restart (at start) or keeps
 * running until the next heartbeat asks again. */
static bool
session_taken_over(Sessions *m, const char *id)
{
    _cleanup_error_ Error *err = NULL;
    bool lost = false;
    if (cluster_session_lost(m->cluster, id, &lost, &err) < 0)
        log_warn("session %s: cluster index not read: %s", id, err->message);
    return lost;
}

SessionEndReason
session_adopt_reason(Sessions *m, const char *id)
{
    return m->cluster && session_taken_over(m, id) ? SESSION_END_HOST_LOST
                                                   : SESSION_END_HOST_RESTART;
}

size_t
sessions_end_lost(Sessions *m)
{
    size_t n = 0;
    if (!m->cluster)
        return 0;
    for (Session *s = m->all, *next; s; s = next) {
        next = s->next; /* session_end may free a pending session */
        if (session_state_is_ending(s->state) || !session_taken_over(m, s->rec.id))
            continue;
        session_end(s, SESSION_END_HOST_LOST);
        n++;
    }
    return n;
}
