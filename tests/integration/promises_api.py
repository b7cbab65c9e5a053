"""The native v1 API's promises (hostd/api/API.md), one row each; see promises.py.

Most rows need no guest: the bounds are checked before a session is looked up or admitted,
so a well-formed id of no session (NOSUCH) shows both sides of a bound: one past it is 400,
at it the request passes validation and meets 404 "no session". Limits checked only at
admission are shown the same way against a tenant whose quota admits nothing (429 at the
bound, 400 past it): no guest is touched either way. LIVE rows run on one session with a
guest, ENDED rows on the same session once it ended.
"""
import secrets

from promises import Answer, Row, head_only

API = "hostd/api/API.md"
NOSUCH = "ses_" + "a" * 26  # well-formed, never issued
KIB, MIB = 1024, 1 << 20
AUTH_SAME = "401"


def req(method, path, body=None, raw=None, headers=None, token="tenant", unix=False):
    """A request as the ctx's caller: token "tenant" (the default tenant's), "admin", a
    literal token, or None (no Authorization)."""
    def send(ctx):
        d = ctx.d
        tok = {"tenant": d.token, "admin": d.admin_token,
               "other": ctx.other["token"]}.get(token, token)
        st, hdrs, payload = d.request(method, path.format(**ctx.names()), body=body, raw=raw,
                                      headers=headers, token=tok, unix=unix)
        return Answer(st, payload, hdrs)
    return send


def big_head(method, path, length, token="tenant"):
    def send(ctx):
        tok = {"tenant": ctx.d.token, "admin": ctx.d.admin_token}[token]
        return head_only(ctx.d.port, method, path.format(**ctx.names()),
                         {"Authorization": f"Bearer {tok}",
                          "Content-Type": "application/octet-stream"}, length)
    return send


def cache_check(a):
    h = a.headers
    if h.get("cache-control") != "no-store" or h.get("x-content-type-options") != "nosniff":
        return f"Cache-Control {h.get('cache-control')!r}, X-Content-Type-Options " \
            f"{h.get('x-content-type-options')!r}"
    return None


def refusal_check(a):
    e = a.json()["error"]
    want = {"quota": "max_sessions", "limit": 0, "used": 0, "requested": 1, "retry_after": None}
    got = {k: e.get(k, "absent") for k in want}
    if got != want:
        return f"refusal {got}, promised {want}"
    return "Retry-After sent" if "retry-after" in a.headers else None


def exec_body(argc=1, arg_bytes=1, n_env=0):
    return {"argv": ["x" * arg_bytes] * argc,
            "env": {f"V{i}": "v" for i in range(n_env)}}


def sig(value):
    return req("POST", "/v1/sessions/" + NOSUCH + "/execs/1/signal", {"signal": value})


def quota(key, value):
    return req("PUT", "/v1/admin/tenants/{other_id}/quota", {key: value}, token="admin")


def task_at(argv, env=None):
    """POST /v1/tasks as the tenant whose quota admits nothing."""
    def send(ctx):
        st, hdrs, payload = ctx.d.request("POST", "/v1/tasks",
                                          body={"pool": "minimal", "argv": argv,
                                                "env": env or {}},
                                          token=ctx.zero["token"])
        return Answer(st, payload, hdrs)
    return send


def S(doc_quote):
    return (API, doc_quote)


# Each exec row's total: argv entries + 1 byte each, env name=value + 2 bytes each.
HALF = 128 * KIB  # one argv entry at its cap; two of them and "true" overrun 256 KiB

ROWS = [
    # ---- 405 through the real routes (the router, and the HTTP layer for other methods)
    Row("DELETE /v1/sessions (the list): 405", S("| 405 | `method_not_allowed` | known path, "
                                                 "wrong method |"),
        req("DELETE", "/v1/sessions"), 405, "method_not_allowed"),
    Row("PUT /v1/pool: 405", S("| 405 | `method_not_allowed` | known path, wrong method |"),
        req("PUT", "/v1/pool", raw=b"{}"), 405, "method_not_allowed"),
    Row("GET /v1/sessions/{id}/cancel: 405",
        S("| 405 | `method_not_allowed` | known path, wrong method |"),
        req("GET", "/v1/sessions/" + NOSUCH + "/cancel"), 405, "method_not_allowed"),
    Row("PATCH /v1/sessions (a method no route has): 405",
        S("| 405 | `method_not_allowed` | known path, wrong method |"),
        req("PATCH", "/v1/sessions", raw=b"{}"), 405, "method_not_allowed"),
    Row("OPTIONS /v1/sessions: 405", S("| 405 | `method_not_allowed` | known path, wrong method |"),
        req("OPTIONS", "/v1/sessions"), 405, "method_not_allowed"),
    # ---- 400 for malformed JSON through the API
    Row("POST /v1/sessions with a body that is not JSON: 400",
        S("| 400 | `invalid_argument` | malformed JSON"),
        req("POST", "/v1/sessions", raw=b'{"pool": "minimal"',
            headers={"Content-Type": "application/json"}), 400, "invalid_argument",
        "not JSON"),
    Row("POST /v1/sessions with a JSON array: 400", S("| 400 | `invalid_argument` | malformed "
                                                      "JSON"),
        req("POST", "/v1/sessions", raw=b'["minimal"]',
            headers={"Content-Type": "application/json"}), 400, "invalid_argument",
        "JSON object"),
    Row("POST .../exec with a duplicate key: 400", S("| 400 | `invalid_argument` | malformed JSON"),
        req("POST", "/v1/sessions/" + NOSUCH + "/exec", raw=b'{"argv":["a"],"argv":["b"]}',
            headers={"Content-Type": "application/json"}), 400, "invalid_argument"),
    Row("POST /v1/sessions with a timeout_s of the wrong type: 400, naming it",
        S("a field of the wrong type or out of bounds (the message names it)"),
        req("POST", "/v1/sessions", {"pool": "minimal", "timeout_s": "60"}), 400,
        "invalid_argument", "timeout_s"),
    # ---- 401: the same message for all four causes
    Row("no Authorization: 401", S("missing, malformed, unknown or revoked token is `401 "
                                   "unauthorized` on every route (the same message for all four)"),
        req("GET", "/v1/sessions", token=None), 401, "unauthorized", same=AUTH_SAME),
    Row("a malformed token: 401, the same message",
        S("(the same message for all four)"),
        req("GET", "/v1/sessions", token="stk_" + "A" * 64), 401, "unauthorized",
        same=AUTH_SAME),
    Row("an unknown token: 401, the same message", S("(the same message for all four)"),
        req("GET", "/v1/sessions", token="stk_" + secrets.token_hex(32)), 401, "unauthorized",
        same=AUTH_SAME),
    Row("a revoked token: 401, the same message", S("(the same message for all four)"),
        lambda ctx: req("GET", "/v1/sessions", token=ctx.revoked)(ctx), 401, "unauthorized",
        same=AUTH_SAME),
    Row("an unknown token on an unknown path: 401, not 404", S("`401 unauthorized` on every route"),
        req("GET", "/v1/nothing-here", token="stk_" + secrets.token_hex(32)), 401,
        "unauthorized", same=AUTH_SAME),
    Row("an unknown token on a wrong method: 401, not 405", S("`401 unauthorized` on every route"),
        req("DELETE", "/v1/sessions", token="stk_" + secrets.token_hex(32)), 401,
        "unauthorized", same=AUTH_SAME),
    # ---- 431, response headers
    Row("a request head of 40 KiB: 431", S("| 431 | | request head too large |"),
        req("GET", "/v1/sessions", headers={"X-Big": "h" * (40 * KIB)}), 431),
    Row("a request of 65 header lines: 431", S("| 431 | | request head too large |"),
        req("GET", "/v1/sessions", headers={f"X-H{i}": "v" for i in range(65)}), 431),
    Row("an answer of the router (404) carries no-store and nosniff",
        S("Every response carries\n`Cache-Control: no-store` and `X-Content-Type-Options: "
          "nosniff`"),
        req("GET", "/v1/sessions/" + NOSUCH), 404, "not_found",
        check=lambda ctx, a: cache_check(a)),
    Row("an answer of the HTTP layer (405) carries no-store and nosniff",
        S("Every response carries\n`Cache-Control: no-store` and `X-Content-Type-Options: "
          "nosniff`"),
        req("PATCH", "/v1/sessions", raw=b"{}"), 405, check=lambda ctx, a: cache_check(a)),
    Row("a 200 carries no-store and nosniff",
        S("Every response carries\n`Cache-Control: no-store` and `X-Content-Type-Options: "
          "nosniff`"),
        req("GET", "/v1/pool"), 200, check=lambda ctx, a: cache_check(a)),
    # ---- 403
    Row("a tenant token on /v1/admin/tenants: 403",
        S("| 403 | `forbidden` | a tenant token on an operator route"),
        req("GET", "/v1/admin/tenants"), 403, "forbidden"),
    Row("a tenant token on /metrics: 403", S("which are `403 forbidden` to tenant tokens"),
        req("GET", "/metrics"), 403, "forbidden"),
    Row("a tenant token naming another tenant in X-Stockade-Tenant: 403",
        S("A tenant token may send the header only with its own id (else 403)"),
        lambda ctx: req("GET", "/v1/sessions",
                        headers={"X-Stockade-Tenant": ctx.other["id"]})(ctx), 403, "forbidden"),
    Row("an operator acting for a removed tenant: 403 'was removed'",
        S("admits nothing for it afterwards (403 `forbidden`, \"tenant … was removed\", even for "
          "an\n  operator acting for it with `X-Stockade-Tenant`)"),
        lambda ctx: req("POST", "/v1/sessions", {"pool": "minimal"}, token="admin",
                        headers={"X-Stockade-Tenant": ctx.removed["id"]})(ctx), 403,
        "forbidden", "was removed"),
    # ---- 400 for an unknown X-Stockade-Tenant
    Row("an operator naming no tenant in X-Stockade-Tenant: 400",
        S("`X-Stockade-Tenant: <tenant id>` (400 if no such tenant)"),
        req("GET", "/v1/sessions", token="admin",
            headers={"X-Stockade-Tenant": "ten_" + "b" * 26}), 400, "invalid_argument",
        "X-Stockade-Tenant"),
    Row("the unix socket naming no tenant: 400",
        S("`X-Stockade-Tenant: <tenant id>` (400 if no such tenant)"),
        req("GET", "/v1/sessions", unix=True, headers={"X-Stockade-Tenant": "nobody"}), 400,
        "invalid_argument",
        "X-Stockade-Tenant"),
    # ---- 404
    Row("a session that does not exist: 404", S("| 404 | `not_found` | no such session"),
        req("GET", "/v1/sessions/" + NOSUCH), 404, "not_found"),
    Row("/v1/admin/hosts without [cluster]: 404",
        S("404 on a host without `[cluster]`"),
        req("GET", "/v1/admin/hosts", token="admin"), 404, "not_found", "[cluster]"),
    # ---- 413
    Row("PUT a file of 64 MiB + 1: 413 from the head",
        S("| 413 | `too_large` | request body over `[api] max_body_mib` (64 MiB), or a file over "
          "its cap |"),
        big_head("PUT", "/v1/sessions/" + NOSUCH + "/files/big.bin", 64 * MIB + 1), 413,
        "too_large"),
    Row("POST /v1/tasks of 64 MiB + 1: 413 from the head",
        S("request body over `[api] max_body_mib` (64 MiB)"),
        big_head("POST", "/v1/tasks", 64 * MIB + 1), 413, "too_large"),
    # ---- list bounds
    Row("GET /v1/sessions?limit=0: 400", S("`limit` 1..500 (default 100)"),
        req("GET", "/v1/sessions?limit=0"), 400, "invalid_argument", "limit"),
    Row("GET /v1/sessions?limit=501: 400", S("`limit` 1..500 (default 100)"),
        req("GET", "/v1/sessions?limit=501"), 400, "invalid_argument", "limit"),
    Row("GET /v1/sessions?limit=1: 200", S("`limit` 1..500 (default 100)"),
        req("GET", "/v1/sessions?limit=1"), 200),
    Row("GET /v1/sessions?limit=500: 200", S("`limit` 1..500 (default 100)"),
        req("GET", "/v1/sessions?limit=500"), 200),
    # ---- exec limits (validated before the session is looked up: at the bound, 404)
    Row("exec with 256 argv entries: past validation (404)", S("Limits: 256 argv entries"),
        req("POST", "/v1/sessions/" + NOSUCH + "/exec", exec_body(argc=256)), 404, "not_found"),
    Row("exec with 257 argv entries: 400", S("Limits: 256 argv entries"),
        req("POST", "/v1/sessions/" + NOSUCH + "/exec", exec_body(argc=257)), 400,
        "invalid_argument", "argv"),
    Row("exec with an argv entry of 128 KiB: past validation (404)", S("128 KiB each"),
        req("POST", "/v1/sessions/" + NOSUCH + "/exec", exec_body(arg_bytes=128 * KIB)), 404,
        "not_found"),
    Row("exec with an argv entry of 128 KiB + 1: 400", S("128 KiB each"),
        req("POST", "/v1/sessions/" + NOSUCH + "/exec", exec_body(arg_bytes=128 * KIB + 1)),
        400, "invalid_argument", "argv[0]"),
    Row("exec with 128 env variables: past validation (404)", S("128 env variables"),
        req("POST", "/v1/sessions/" + NOSUCH + "/exec", exec_body(n_env=128)), 404, "not_found"),
    Row("exec with 129 env variables: 400", S("128 env variables"),
        req("POST", "/v1/sessions/" + NOSUCH + "/exec", exec_body(n_env=129)), 400,
        "invalid_argument", "env"),
    Row("a task of 256 KiB of argv (at the bound): admitted as far as the quota (429)",
        S("256 KiB together"),
        task_at(["t" * (HALF - 1), "u" * (HALF - 1)]), 429, "quota_exceeded"),
    Row("a task of 256 KiB + 1 of argv: 400", S("256 KiB together"),
        task_at(["t" * (HALF - 1), "u" * HALF]), 400, "invalid_argument", "together"),
    Row("a session of timeout_s 86401 (over max_timeout_s, 86400 by default): 400",
        S("(default `[sessions] default_timeout_s`, at most `max_timeout_s`)"),
        req("POST", "/v1/sessions", {"pool": "minimal", "timeout_s": 86401}), 400,
        "invalid_argument", "timeout_s"),
    Row("a quota refusal: 429 with quota, limit, used, requested; retry_after null, no header",
        S("`retry_after: null` (and no `Retry-After` header): only an operator can lift the limit"),
        task_at(["true"]), 429, "quota_exceeded", check=lambda ctx, a: refusal_check(a)),
    # ---- stdin
    Row("stdin of 64 KiB: past validation (404)", S("Body: raw bytes (at most 64 KiB)"),
        req("POST", "/v1/sessions/" + NOSUCH + "/execs/1/stdin", raw=b"s" * (64 * KIB)), 404,
        "not_found"),
    Row("stdin of 64 KiB + 1: 400", S("Body: raw bytes (at most 64 KiB)"),
        req("POST", "/v1/sessions/" + NOSUCH + "/execs/1/stdin", raw=b"s" * (64 * KIB + 1)),
        400, "invalid_argument", "stdin"),
    # ---- code limits
    Row("code of 1 MiB: past validation (404)", S("`code` is\nat most 1 MiB"),
        req("POST", "/v1/sessions/" + NOSUCH + "/code", {"code": "#" * MIB}), 404, "not_found"),
    Row("code of 1 MiB + 1: 400", S("`code` is\nat most 1 MiB"),
        req("POST", "/v1/sessions/" + NOSUCH + "/code", {"code": "#" * (MIB + 1)}), 400,
        "invalid_argument", "code"),
    Row("code timeout_ms 24 h: past validation (404)", S("`timeout_ms` (0 = none, ≤ 24 h)"),
        req("POST", "/v1/sessions/" + NOSUCH + "/code",
            {"code": "1", "timeout_ms": 24 * 3600 * 1000}), 404, "not_found"),
    Row("code timeout_ms 24 h + 1 ms: 400", S("`timeout_ms` (0 = none, ≤ 24 h)"),
        req("POST", "/v1/sessions/" + NOSUCH + "/code",
            {"code": "1", "timeout_ms": 24 * 3600 * 1000 + 1}), 400, "invalid_argument",
        "timeout_ms"),
    Row("code timeout_ms -1: 400", S("`timeout_ms` (0 = none, ≤ 24 h)"),
        req("POST", "/v1/sessions/" + NOSUCH + "/code", {"code": "1", "timeout_ms": -1}), 400,
        "invalid_argument", "timeout_ms"),
    # ---- egress on a server without [egress]
    Row("a session asking for egress on a server without [egress]: 400",
        S("a server without `[egress]` answers 400 to any egress request"),
        req("POST", "/v1/sessions", {"pool": "minimal", "egress": ["pypi.org"]}), 400,
        "invalid_argument"),
    Row("a task asking for egress: true without [egress]: 400",
        S("a server without `[egress]` answers 400 to any egress request"),
        req("POST", "/v1/tasks", {"pool": "minimal", "argv": ["true"], "egress": True}), 400,
        "invalid_argument"),
    # ---- quota bounds and unknown keys
    Row("a quota with an unknown key: 400", S("an unknown key is 400"),
        quota("max_gpus", 1), 400, "invalid_argument", "max_gpus"),
    Row("max_sessions -1: 400", S("integers\n≥ 0"),
        quota("max_sessions", -1), 400, "invalid_argument", "max_sessions"),
    Row("max_sessions 2^50: 200", S("the others ≤ 2^50"),
        quota("max_sessions", 1 << 50), 200),
    Row("wallet_guest_seconds 2^50 + 1: 400", S("the others ≤ 2^50"),
        quota("wallet_guest_seconds", (1 << 50) + 1), 400, "invalid_argument",
        "wallet_guest_seconds"),
    Row("sessions_per_minute 1000000: 200", S("(`sessions_per_minute` ≤ 1000000"),
        quota("sessions_per_minute", 1000000), 200),
    Row("sessions_per_minute 1000001: 400", S("(`sessions_per_minute` ≤ 1000000"),
        quota("sessions_per_minute", 1000001), 400, "invalid_argument", "sessions_per_minute"),
    Row("max_vcpus as a string: 400", S("integers\n≥ 0"),
        quota("max_vcpus", "2"), 400, "invalid_argument", "max_vcpus"),
    # ---- tenant names
    Row("a tenant named '': 400", S("`{\"name\": \"acme\"}` (1..64 bytes"),
        req("POST", "/v1/admin/tenants", {"name": ""}, token="admin"), 400, "invalid_argument",
        "name"),
    Row("a tenant name of 65 bytes: 400", S("`{\"name\": \"acme\"}` (1..64 bytes"),
        req("POST", "/v1/admin/tenants", {"name": "n" * 65}, token="admin"), 400,
        "invalid_argument", "name"),
    Row("a tenant name of 64 bytes: 201", S("`{\"name\": \"acme\"}` (1..64 bytes"),
        lambda ctx: req("POST", "/v1/admin/tenants", {"name": ctx.tag + "n" * (64 - len(ctx.tag))},
                        token="admin")(ctx), 201),
    Row("a tenant name with a control character: 400", S("no control characters"),
        req("POST", "/v1/admin/tenants", {"name": "a\x07b"}, token="admin"), 400,
        "invalid_argument", "name"),
    Row("a tenant name with DEL: 400", S("no control characters"),
        req("POST", "/v1/admin/tenants", {"name": "a\x7fb"}, token="admin"), 400,
        "invalid_argument", "name"),
    Row("a live tenant's name again: 409", S("unique among live tenants: 409\notherwise"),
        lambda ctx: req("POST", "/v1/admin/tenants", {"name": ctx.other["name"]},
                        token="admin")(ctx), 409, "conflict"),
    Row("a removed tenant's name: 201", S("a removed tenant's name is free"),
        lambda ctx: req("POST", "/v1/admin/tenants", {"name": ctx.removed["name"]},
                        token="admin")(ctx), 201),
    # ---- 409 conflict (no guest)
    Row("removing the built-in tenant: 409", S("`default` (the built-in tenant) is 409"),
        req("DELETE", "/v1/admin/tenants/default", token="admin"), 409, "conflict"),
    Row("a token for a removed tenant: 409",
        S("issues no token for it and takes no quota\n  for it (409)"),
        req("POST", "/v1/admin/tenants/{removed_id}/tokens", token="admin"), 409, "conflict"),
    Row("a quota for a removed tenant: 409",
        S("issues no token for it and takes no quota\n  for it (409)"),
        req("PUT", "/v1/admin/tenants/{removed_id}/quota", {"max_sessions": 1}, token="admin"),
        409, "conflict"),
    Row("?removed=2: 400", S("any other value of `removed` than `0`/`1`/`false`/`true` is 400"),
        req("GET", "/v1/admin/tenants?removed=2", token="admin"), 400, "invalid_argument"),
    Row("?cancel=yes: 400", S("`cancel` other than `0`/`1`/`false`/`true` 400"),
        req("DELETE", "/v1/admin/tenants/{other_id}?cancel=yes", token="admin"), 400,
        "invalid_argument"),
    Row("removing a removed tenant again: 200, the first removed_at",
        S("removing it again answers 200 with the\n  first time and changes nothing"),
        req("DELETE", "/v1/admin/tenants/{removed_id}", token="admin"), 200,
        check=lambda ctx, a: None if a.json().get("removed_at") == ctx.removed["removed_at"]
        else f"removed_at {a.json().get('removed_at')!r}, first {ctx.removed['removed_at']!r}"),
    Row("revoking a revoked token again: 200, the first revoked_at",
        S("Idempotent\n(the first `revoked_at` stays)"),
        req("DELETE", "/v1/admin/tokens/{revoked_id}", token="admin"), 200,
        check=lambda ctx, a: None if a.json().get("revoked_at") == ctx.revoked_at
        else f"revoked_at {a.json().get('revoked_at')!r}, first {ctx.revoked_at!r}"),
    Row("removing an unknown tenant: 404", S("an unknown id\n404"),
        req("DELETE", "/v1/admin/tenants/ten_" + "c" * 26, token="admin"), 404, "not_found"),
]

# Signal names and numbers: each accepted one passes validation (404 for NOSUCH).
for name in "KILL TERM INT HUP QUIT STOP CONT USR1 USR2".split():
    for spelled in (name, "SIG" + name):
        ROWS.append(Row(f"signal {spelled!r}: accepted (404)",
                        S("a name (`KILL TERM INT HUP QUIT STOP CONT USR1 USR2`, with or "
                          "without\n`SIG`)"),
                        sig(spelled), 404, "not_found"))
for n, status in ((1, 404), (64, 404), (0, 400), (65, 400)):
    ROWS.append(Row(f"signal {n}: {status}", S("or a number 1..64"), sig(n), status,
                    "not_found" if status == 404 else "invalid_argument"))
for bad in ("term", "SIGSEGV", "SIG", "9"):
    ROWS.append(Row(f"signal {bad!r}: 400", S("a name (`KILL TERM INT HUP QUIT STOP CONT USR1 "
                                              "USR2`"),
                    sig(bad), 400, "invalid_argument", "signal"))


# On one running session of the scratch tenant ctx.other (ctx.live), made by the driver.
LIVE_ROWS = [
    Row("another tenant's session: 404, never 403",
        S("every session and task route\nanswers `404 not_found` for them, never 403"),
        req("GET", "/v1/sessions/{live}"), 404, "not_found"),
    Row("another tenant's exec on it: 404", S("answers `404 not_found` for them, never 403"),
        req("POST", "/v1/sessions/{live}/exec", {"argv": ["true"]}), 404, "not_found"),
    Row("removing a tenant with a session not ended, without cancel: 409",
        S("a tenant with sessions not ended is refused"),
        req("DELETE", "/v1/admin/tenants/{other_id}", token="admin"), 409, "conflict",
        "not ended"),
    Row("exec of 256 KiB + 1 together on a running session: 400", S("256 KiB together"),
        req("POST", "/v1/sessions/{live}/exec", token="other", body=
            {"argv": ["t" * (HALF - 1), "u" * HALF]}), 400, "invalid_argument", "together"),
    Row("exec of exactly 256 KiB together on a running session: 202", S("256 KiB together"),
        req("POST", "/v1/sessions/{live}/exec", token="other", body=
            {"argv": ["true", "u" * (HALF - 1), "v" * (HALF - 6)]}), 202),
    Row("GET a file the running session does not have: 404",
        S("From the guest while the session runs (up to 64 MiB)"),
        req("GET", "/v1/sessions/{live}/files/no-such-file.txt", token="other"), 404,
        "not_found"),
    Row("GET a running session's file of 64 MiB + 1: 413",
        S("From the guest while the session runs (up to 64 MiB)"),
        req("GET", "/v1/sessions/{live}/files/big.bin", token="other"), 413, "too_large"),
    Row("GET a running session's file of 64 MiB: 200, all of it",
        S("From the guest while the session runs (up to 64 MiB)"),
        req("GET", "/v1/sessions/{live}/files/limit.bin", token="other"), 200,
        check=lambda ctx, a: None if len(a.body) == 64 * MIB else f"{len(a.body)} bytes"),
]

ENDED_ROWS = [
    Row("exec on an ended session: 409", S("| 409 | `conflict` | the session is not in a state "
                                           "that allows this (e.g. exec on an ended session) |"),
        req("POST", "/v1/sessions/{live}/exec", {"argv": ["true"]}, token="other"), 409,
        "conflict"),
    Row("code on an ended session: 409", S("409 when the session\nis not running"),
        req("POST", "/v1/sessions/{live}/code", {"code": "1"}, token="other"), 409, "conflict"),
    Row("closing it again: 200 ended", S("Idempotent: an ended session answers 200 "
                                         "`{\"state\":\"ended\"}`"),
        req("DELETE", "/v1/sessions/{live}", token="other"), 200,
        check=lambda ctx, a: None if a.json().get("state") == "ended" else "not ended"),
]


class Ctx:
    """What the rows share: the daemon, scratch tenants and the live session."""

    def __init__(self, d):
        self.d = d
        self.tag = "p" + secrets.token_hex(4) + "-"
        mk = lambda name: d.unix_call("POST", "/v1/admin/tenants", {"name": self.tag + name})
        self.other = mk("other")
        self.zero = mk("zero")
        d.unix_call("PUT", f"/v1/admin/tenants/{self.zero['id']}/quota", {"max_sessions": 0})
        self.removed = mk("removed")
        self.removed["removed_at"] = d.unix_call(
            "DELETE", f"/v1/admin/tenants/{self.removed['id']}")["removed_at"]
        tok = d.unix_call("POST", f"/v1/admin/tenants/{self.other['id']}/tokens")
        self.revoked_at = d.unix_call("DELETE", f"/v1/admin/tokens/{tok['id']}")["revoked_at"]
        self.revoked, self.revoked_id = tok["token"], tok["id"]
        self.live = None

    def names(self):
        return dict(other_id=self.other["id"], removed_id=self.removed["id"],
                    revoked_id=self.revoked_id,
                    live=self.live or NOSUCH)


def start_live(ctx):
    """A session of ctx.other (it takes a guest); its id, at once."""
    return ctx.d.call("POST", "/v1/sessions", {"pool": "minimal", "timeout_s": 600},
                      token=ctx.other["token"])["id"]


def exec_wait(ctx, sid, argv):
    d, tok = ctx.d, ctx.other["token"]
    ex = d.call("POST", f"/v1/sessions/{sid}/exec", token=tok, body={"argv": argv})["exec_id"]
    for ev in d.events(sid, follow=True, token=tok):
        if ev["type"] in ("exec.exited", "exec.failed") and ev.get("exec_id") == ex:
            assert ev.get("exit_code") == 0, ev
            return
    raise AssertionError(f"exec {argv} never ended")


def prepare_live(ctx, sid):
    """Waits for it to run and writes the files LIVE_ROWS read: 64 MiB + 1 and 64 MiB, sparse (the
    workspace is 128 MiB)."""
    d, tok = ctx.d, ctx.other["token"]
    d.wait(lambda: d.call("GET", f"/v1/sessions/{sid}", token=tok)["state"] == "running", 300,
           f"session {sid} to run")
    ctx.live = sid
    exec_wait(ctx, sid, ["sh", "-c", "dd if=/dev/zero of=big.bin bs=1 count=0 seek=67108865 "
                                     "&& dd if=/dev/zero of=limit.bin bs=1 count=0 seek=67108864"])


def end_live(ctx):
    d, tok = ctx.d, ctx.other["token"]
    exec_wait(ctx, ctx.live, ["rm", "big.bin", "limit.bin"])  # nothing big for the close to fetch
    d.call("DELETE", f"/v1/sessions/{ctx.live}", token=tok)
    d.wait(lambda: d.call("GET", f"/v1/sessions/{ctx.live}", token=tok)["state"] == "ended",
           300, "the live session to end")
