/* The live sessions: a session's allocation with its parts (each owned by one file, listed
 * once here), its place in Sessions.all, ids, and the lookups the entry points use. The parts'
 * constructors, stop hooks and destructors are reached through the table below, a stop that
 * waits for the last session through Sessions.emptied; nothing else here calls into another
 * of the module's files but the spec's destructor: every file may use this one, it uses none
 * of them back. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "session_internal.h"

#define ID_PREFIX "ses_"
#define ID_RANDOM_CHARS 26 /* 128 bits in base32 */

bool
sessions_id_is_valid(const char *id)
{
    size_t n = strnlen(id, SESSION_ID_BYTES);
    return n == strlen(ID_PREFIX) + ID_RANDOM_CHARS && strncmp(id, ID_PREFIX, 4) == 0 &&
           strspn(id + 4, "abcdefghijklmnopqrstuvwxyz234567") == ID_RANDOM_CHARS;
}

int
session_new_id(char out[SESSION_ID_BYTES])
{
    static const char b32[] = "abcdefghijklmnopqrstuvwxyz234567";
    uint8_t r[ID_RANDOM_CHARS];
    if (getrandom(r, sizeof(r), 0) != (ssize_t) sizeof(r))
        return -1;
    memcpy(out, ID_PREFIX, 4);
    for (int i = 0; i < ID_RANDOM_CHARS; i++)
        out[4 + i] = b32[r[i] & 31];
    out[4 + ID_RANDOM_CHARS] = '\0';
    return 0;
}

Session *
sessions_find(Sessions *m, const char *tenant, const char *id)
{
    for (Session *s = m->all; s; s = s->next)
        if (strcmp(s->rec.id, id) == 0)
            return !tenant || strcmp(s->rec.tenant_id, tenant) == 0 ? s : NULL;
    return NULL;
}

/* ------------------------------------------------------------------ parts */

/* Every part of a session: its constructor (NULL: made on demand), its hook at the end's
 * decision (timers stop, operations fail), its destructor. In this order; destructors in it
 * too (egress before events: closing streams records events). */
static const struct {
    int (*make)(Session *s);
    void (*stop)(Session *s, SessionEndReason reason);
    void (*free)(Session *s);
} parts[] = {
    {NULL, NULL, session_finalize_free},
    {NULL, NULL, session_egress_stop},
    {session_start_new, session_start_stop, session_start_free},
    {session_execs_new, session_execs_stop, session_execs_free},
    {session_ops_new, session_ops_fail_all, session_ops_free},
    {session_mirror_new, NULL, session_mirror_free},
    {session_code_new, NULL, session_code_free},
    {session_grant_new, NULL, session_grant_free},
    {session_events_new, NULL, session_events_free},
    {session_salvage_new, NULL, session_salvage_free},
};

Session *
session_alloc(Sessions *m)
{
    Session *s = calloc(1, sizeof(*s));
    if (!s)
        return NULL;
    s->mgr = m;
    for (size_t i = 0; i < ELEMENTSOF(parts); i++)
        if (parts[i].make && parts[i].make(s) < 0) {
            session_free(s);
            return NULL;
        }
    return s;
}

void
session_parts_stop(Session *s, SessionEndReason reason)
{
    for (size_t i = 0; i < ELEMENTSOF(parts); i++)
        if (parts[i].stop)
            parts[i].stop(s, reason);
}

void
session_free(Session *s)
{
    Sessions *m = s->mgr;
    bool was_live = false;
    for (Session **pp = &m->all; *pp; pp = &(*pp)->next)
        if (*pp == s) {
            *pp = s->next;
            was_live = true;
            break;
        }
    for (size_t i = 0; i < ELEMENTSOF(parts); i++)
        parts[i].free(s);
    session_spec_free(&s->spec);
    session_record_clear(&s->rec);
    free(s);
    if (was_live && !m->all && m->emptied)
        m->emptied(m); /* a stop waits on the last one (sessions_lifecycle.c) */
}

/* ------------------------------------------------------------------ lookups */

/* E_CONFLICT for a session of this tenant that exists but ended, E_NOT_FOUND otherwise. */
static int
session_not_live(Sessions *m, const char *tenant, const char *id, Error **errp)
{
    SessionRecord r;
    if (sessions_id_is_valid(id) && store_session_get(m->store, id, &r, NULL) == 0) {
        bool mine = !tenant || strcmp(r.tenant_id, tenant) == 0;
        session_record_clear(&r);
        if (mine)
            return error_set(errp, E_CONFLICT, 0, "session %s has ended", id);
    }
    return error_set(errp, E_NOT_FOUND, 0, "no session %.40s", id);
}

Session *
session_running(Sessions *m, const char *tenant, const char *id, Error **errp)
{
    Session *s = sessions_find(m, tenant, id);
    if (!s) {
        session_not_live(m, tenant, id, errp);
        return NULL;
    }
    if (s->state == ST_NEW) { /* an earlier run's, its guest being adopted (session_adopt.c) */
        error_set(errp, E_UNAVAILABLE, 0,
                  "session %s is being taken over after a daemon restart; retry in a moment",
                  s->rec.id);
        return NULL;
    }
    if (s->state != ST_RUNNING) {
        error_set(errp, E_CONFLICT, 0, "session %s is %s, not running", s->rec.id,
                  session_state_name(s->state));
        return NULL;
    }
    return s;
}
