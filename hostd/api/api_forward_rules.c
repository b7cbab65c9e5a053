/* The pure rules of forwarding: see api_forward.h. No I/O, no allocation. */
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "api_forward.h"

bool
api_forward_is_session_path(char *const *seg, size_t n)
{
    return n >= 3 && strcmp(seg[0], "v1") == 0 &&
           (strcmp(seg[1], "sessions") == 0 || strcmp(seg[1], "tasks") == 0);
}

bool
api_forward_is_create(const char *method, char *const *seg, size_t n)
{
    return n == 2 && strcmp(method, "POST") == 0 && strcmp(seg[0], "v1") == 0 &&
           (strcmp(seg[1], "sessions") == 0 || strcmp(seg[1], "tasks") == 0);
}

/* Bytes that may go into a request line as they are: no space, control, '#' or non-ASCII. */
static bool
target_bytes_ok(const char *s)
{
    for (; *s; s++)
        if ((unsigned char) *s <= ' ' || (unsigned char) *s >= 0x7f || *s == '#')
            return false;
    return true;
}

int
api_forward_url(const char *base, const char *raw_path, const char *raw_query, char *buf,
                size_t cap)
{
    size_t blen = strlen(base);

    if (strncmp(base, "http://", 7) != 0 && strncmp(base, "https://", 8) != 0)
        return -1;
    if (!target_bytes_ok(base) || strchr(base, '?'))
        return -1;
    while (blen > 0 && base[blen - 1] == '/')
        blen--;
    if (raw_path[0] != '/' || !target_bytes_ok(raw_path) || strchr(raw_path, '?'))
        return -1;
    if (raw_query && !target_bytes_ok(raw_query))
        return -1;
    bool q = raw_query && raw_query[0];
    int n = snprintf(buf, cap, "%.*s%s%s%s", (int) blen, base, raw_path, q ? "?" : "",
                     q ? raw_query : "");
    return n < 0 || (size_t) n >= cap ? -1 : 0;
}

bool
api_forward_response_header_kept(const char *name)
{
    static const char *const kept[] = {"Content-Disposition", "X-Stockade-Workspace",
                                       "Retry-After"};
    for (size_t i = 0; i < sizeof(kept) / sizeof(kept[0]); i++)
        if (strcasecmp(name, kept[i]) == 0)
            return true;
    return false;
}

/* RFC 9110 5.6.2: the bytes of a field name. */
static bool
header_tchar(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
           (c != '\0' && strchr("!#$%&'*+-.^_`|~", c));
}

int
api_forward_header_split(const char *line, size_t len,
                         char ret_name[API_FORWARD_HEADER_NAME_MAX_BYTES + 1],
                         const char **ret_value, size_t *ret_value_len)
{
    const char *colon = memchr(line, ':', len);
    if (!colon || len > API_FORWARD_HEADER_LINE_MAX_BYTES)
        return -1;
    size_t nlen = (size_t) (colon - line);
    const char *v = colon + 1, *end = line + len;
    while (v < end && (*v == ' ' || *v == '\t'))
        v++;
    while (end > v && (end[-1] == '\r' || end[-1] == '\n' || end[-1] == ' '))
        end--;
    if (nlen == 0 || nlen > API_FORWARD_HEADER_NAME_MAX_BYTES)
        return -1;
    for (size_t i = 0; i < nlen; i++)
        if (!header_tchar(line[i]))
            return -1; /* a NUL would cut the name short: "Content-Type\0x" read as another */
    for (const char *p = v; p < end; p++)
        if (((unsigned char) *p < 0x20 && *p != '\t') || *p == 0x7f)
            return -1; /* a CR, LF or NUL inside: not a value to repeat */
    memcpy(ret_name, line, nlen);
    ret_name[nlen] = '\0';
    *ret_value = v;
    *ret_value_len = (size_t) (end - v);
    return 0;
}

bool
api_forward_streams(bool chunked, int64_t content_length, uint64_t buffer_bytes, bool refused,
                    bool body_sent)
{
    bool sized = !chunked && content_length >= 0 && (uint64_t) content_length <= buffer_bytes;
    if (refused)
        return false; /* answered by this host (fwd_answer), never streamed through */
    return !sized && body_sent;
}

static bool
tenant_ok(const char *t)
{
    size_t n = strlen(t);
    if (n == 0 || n > API_FORWARD_TENANT_MAX_BYTES)
        return false;
    for (; *t; t++)
        if (!((*t >= 'a' && *t <= 'z') || (*t >= 'A' && *t <= 'Z') || (*t >= '0' && *t <= '9') ||
              *t == '_' || *t == '-'))
            return false;
    return true;
}

int
api_forward_identity(ApiForwardCredentialFn credential_ok, void *userdata, bool hop,
                     const char *presented, const char *tenant, const char *admin,
                     char ret_tenant[API_FORWARD_TENANT_MAX_BYTES + 1], bool *ret_admin)
{
    if (!hop)
        return !presented && !tenant && !admin ? 1 : -1;
    if (!credential_ok || !presented || !tenant)
        return -1;
    if (!credential_ok(userdata, presented))
        return -1;
    if (!tenant_ok(tenant) || (admin && strcmp(admin, "0") != 0 && strcmp(admin, "1") != 0))
        return -1;
    snprintf(ret_tenant, API_FORWARD_TENANT_MAX_BYTES + 1, "%s", tenant);
    *ret_admin = admin && strcmp(admin, "1") == 0;
    return 0;
}

static const char *const face_names[API_HOP_FACES] = {"api", "e2b-api", "e2b-envd"};

const char *
api_hop_face_name(ApiHopFace f)
{
    return (unsigned) f < API_HOP_FACES ? face_names[f] : "";
}

int
api_hop_face_parse(const char *name)
{
    for (int i = 0; name && i < API_HOP_FACES; i++)
        if (strcmp(name, face_names[i]) == 0)
            return i;
    return -1;
}

/* The key's slot, or NULL; *ret_free gets the first free slot (NULL: none). */
static ApiTallySlot *
tally_find(ApiTally *t, const char *key, ApiTallySlot **ret_free)
{
    *ret_free = NULL;
    for (size_t i = 0; i < API_TALLY_KEYS; i++) {
        ApiTallySlot *s = &t->slot[i];
        if (s->n == 0) {
            if (!*ret_free)
                *ret_free = s;
        } else if (strcmp(s->key, key) == 0) {
            return s;
        }
    }
    return NULL;
}

bool
api_tally_enter(ApiTally *t, const char *key, unsigned max)
{
    ApiTallySlot *free_slot;
    if (strlen(key) > API_FORWARD_TENANT_MAX_BYTES)
        return false;
    ApiTallySlot *s = tally_find(t, key, &free_slot);
    if (!s) {
        if (!free_slot || max == 0)
            return false;
        s = free_slot;
        snprintf(s->key, sizeof(s->key), "%s", key);
    } else if (s->n >= max) {
        return false;
    }
    s->n++;
    return true;
}

void
api_tally_leave(ApiTally *t, const char *key)
{
    ApiTallySlot *free_slot;
    ApiTallySlot *s = tally_find(t, key, &free_slot);
    if (s)
        s->n--;
}

unsigned
api_tally_count(const ApiTally *t, const char *key)
{
    ApiTallySlot *free_slot;
    ApiTallySlot *s = tally_find((ApiTally *) t, key, &free_slot);
    return s ? s->n : 0;
}
