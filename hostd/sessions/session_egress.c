/* A session's egress (hostd/egress): the allow-list it asks for, checked against the
 * operator's allowed set when it is created; the EgressConfig its Hello carries; the
 * EgressSession that serves its guest's tunnel from Hello until the guest is released; and
 * the events that records. A guest that sends tunnel messages without egress, or breaks the
 * tunnel protocol, is told (-1: the dispatch ends the session guest_error). */
#include <stdlib.h>
#include <string.h>

#include "egress.h"
#include "log.h"
#include "session_internal.h"

int
sessions_egress_init(Sessions *m, Error **errp)
{
    if (egress_policy_is_empty(&m->cfg.egress.allowed))
        return 0; /* egress is off on this server: no resolver threads */
    return egress_resolver_new(m->loop, &m->egress_resolver, errp);
}

void
sessions_egress_free(Sessions *m)
{
    egress_resolver_free(m->egress_resolver);
    m->egress_resolver = NULL;
}

static bool
spec_wants_egress(const SessionSpec *sp)
{
    return sp->egress_all || sp->n_egress > 0;
}

/* The session's allow-list: its entries, or the operator's whole set for "egress": true. */
static int
session_egress_policy(const Sessions *m, const SessionSpec *sp, EgressPolicy *ret, Error **errp)
{
    if (sp->egress_all) {
        *ret = m->cfg.egress.allowed;
        return 0;
    }
    memset(ret, 0, sizeof(*ret));
    for (size_t i = 0; i < sp->n_egress; i++)
        if (egress_policy_add(ret, sp->egress[i], errp) < 0)
            return error_prefix(errp, "egress[%zu]", i);
    return 0;
}

int
session_egress_check_spec(Sessions *m, const SessionSpec *sp, Error **errp)
{
    if (!spec_wants_egress(sp))
        return 0;
    if (!m->egress_resolver)
        return error_set(errp, E_INVALID, 0, "egress is not enabled on this server");
    if (sp->n_egress > SESSION_EGRESS_ENTRIES_MAX)
        return error_set(errp, E_INVALID, 0, "egress: at most %d entries",
                         SESSION_EGRESS_ENTRIES_MAX);
    _cleanup_free_ EgressPolicy *p = malloc(sizeof(*p));
    if (!p)
        return error_set(errp, E_INTERNAL, ENOMEM, "egress");
    if (session_egress_policy(m, sp, p, errp) < 0)
        return -1;
    return egress_policy_check_subset(&m->cfg.egress.allowed, p, errp);
}

int
session_egress_copy_spec(SessionSpec *dst, const SessionSpec *src)
{
    dst->egress_all = src->egress_all;
    dst->egress = calloc(src->n_egress + 1, sizeof(char *));
    if (!dst->egress)
        return -1;
    for (; dst->n_egress < src->n_egress; dst->n_egress++)
        if (!(dst->egress[dst->n_egress] = strdup(src->egress[dst->n_egress])))
            return -1;
    return 0;
}

void
session_egress_free_spec(SessionSpec *sp)
{
    for (size_t i = 0; i < sp->n_egress; i++)
        free(sp->egress[i]);
    free(sp->egress);
    sp->egress = NULL;
    sp->n_egress = 0;
}

json_t *
session_egress_spec_json(const SessionSpec *sp)
{
    if (sp->egress_all)
        return json_true();
    json_t *list = json_array();
    for (size_t i = 0; i < sp->n_egress; i++)
        json_array_append_new(list, json_string(sp->egress[i]));
    return list;
}

/* ------------------------------------------------------------------ the running session */

static int
egress_op_send(void *userdata, HostMsg *m, Error **errp)
{
    return session_send(userdata, m, NULL, errp);
}

static size_t
egress_op_backlog(void *userdata)
{
    Session *s = userdata;
    return s->mgr->host.ops->send_backlog_bytes(s->guest);
}

static void
egress_op_event(void *userdata, const char *type, json_t *attrs)
{
    session_event(userdata, type, 0, NULL, 0, attrs);
}

static const EgressOps session_egress_ops = {egress_op_send, egress_op_backlog, egress_op_event};

int
session_egress_start(Session *s, Stockade__Runner__SessionConfig *cfg,
                     Stockade__Runner__EgressConfig *ec, Error **errp)
{
    Sessions *m = s->mgr;
    _cleanup_free_ EgressPolicy *p = NULL;

    if (!spec_wants_egress(&s->spec) || !m->egress_resolver)
        return 0;
    if (!(p = malloc(sizeof(*p))))
        return error_set(errp, E_INTERNAL, ENOMEM, "egress policy");
    if (session_egress_policy(m, &s->spec, p, errp) < 0 ||
        egress_session_new(m->loop, m->egress_resolver, p, &m->cfg.egress.limits,
                           &session_egress_ops, s, &s->egress, errp) < 0)
        return error_prefix(errp, "egress");
    stockade__runner__egress_config__init(ec);
    ec->max_streams = MIN(m->cfg.egress.limits.max_streams, TUNNEL_STREAMS_MAX);
    cfg->egress = ec;
    return 0;
}

void
session_egress_stop(Session *s)
{
    egress_session_free(s->egress);
    s->egress = NULL;
}

bool
session_egress_is_tunnel(int body_case)
{
    return body_case == STOCKADE__RUNNER__GUEST_MSG__BODY_TUNNEL_OPEN ||
           body_case == STOCKADE__RUNNER__GUEST_MSG__BODY_TUNNEL_DATA ||
           body_case == STOCKADE__RUNNER__GUEST_MSG__BODY_TUNNEL_CREDIT ||
           body_case == STOCKADE__RUNNER__GUEST_MSG__BODY_TUNNEL_CLOSE;
}

int
session_egress_on_message(Session *s, const GuestMsg *m)
{
    _cleanup_error_ Error *err = NULL;

    if (!s->egress)
        error_set(&err, E_GUEST, 0, "tunnel message in a session without egress");
    else if (egress_session_on_message(s->egress, m, &err) == 0)
        return 0;
    log_warn("session %s: guest broke the tunnel protocol: %s", s->rec.id, err->message);
    session_event(s, "guest.error", 0, NULL, 0,
                  json_pack("{s:s,s:s}", "message", err->message, "code", "tunnel"));
    return -1;
}
