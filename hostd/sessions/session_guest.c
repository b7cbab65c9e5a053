/* Every message of a session's guest, dispatched to the file that owns what it is about: a
 * finalize's, the egress tunnel's, the Hello's reply (session_start.c), execs
 * (session_exec.c), the live mirror, file round trips (session_ops.c). Nothing is accepted
 * once the session began to stop (but what a finalize asked for). A lost guest ends the
 * session guest_error, or hands a finalize to the salvage. */
#include "log.h"
#include "session_internal.h"

/* An error the runner reports: the Hello refused, an exec that could not start, an operation
 * that failed; else the workload's (counted like other workload events). */
static void
session_on_error(Session *s, const GuestMsg *m)
{
    const Stockade__Runner__Error *er = m->error;

    if (session_ops_on_reply(s, m) || session_start_on_refusal(s, m->req_id, er->message) ||
        session_exec_on_error(s, m))
        return;
    session_guest_event(s, "guest.error",
                        json_pack("{s:s,s:i}", "message", er->message, "code", er->code));
}

static void
session_on_message(Guest *g, const GuestMsg *m, void *userdata)
{
    Session *s = userdata;
    (void) g;

    if (!s->accepting)
        return; /* after a stop event nothing from the guest counts */
    if (s->fin && session_finalize_on_message(s, m))
        return;
    if (session_egress_is_tunnel(m->body_case)) {
        if (session_egress_on_message(s, m) < 0) /* it broke the tunnel: recorded */
            session_end(s, SESSION_END_GUEST_ERROR);
        return;
    }
    switch (m->body_case) {
    case STOCKADE__RUNNER__GUEST_MSG__BODY_ACK:
        if (!session_start_on_ack(s, m->req_id))
            session_ops_on_reply(s, m);
        break;
    case STOCKADE__RUNNER__GUEST_MSG__BODY_EXEC_STARTED:
        session_exec_on_started(s, m);
        break;
    case STOCKADE__RUNNER__GUEST_MSG__BODY_OUTPUT:
        session_exec_on_output(s, m->output);
        break;
    case STOCKADE__RUNNER__GUEST_MSG__BODY_EXEC_EXIT:
        session_exec_on_exit(s, m->exec_exit);
        break;
    case STOCKADE__RUNNER__GUEST_MSG__BODY_FILE_CHANGED:
        session_mirror_on_changed(s, m->file_changed);
        break;
    case STOCKADE__RUNNER__GUEST_MSG__BODY_ERROR:
        session_on_error(s, m);
        break;
    default:
        session_ops_on_reply(s, m);
        break;
    }
}

static void
session_on_lost(Guest *g, const Error *why, void *userdata)
{
    Session *s = userdata;
    (void) g;
    if (s->fin) {
        session_finalize_lost(s); /* the salvage takes over */
        return;
    }
    log_warn("session %s: guest lost: %s", s->rec.id, why->message);
    session_end(s, SESSION_END_GUEST_ERROR);
}

const GuestOps session_guest_ops = {session_on_message, session_on_lost};
