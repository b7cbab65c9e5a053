"""Table-driven promise checks (issue 31): one row per promise a doc makes about a status,
an error code or a limit, each citing the doc by file and a quote of the promise.

A row is checked against a real daemon: its `send` makes one request (or a few) and returns
the answer; the row names the status, the error code and, where the doc promises one, the
message. The quote is looked up in the doc when the suite runs, so a row whose promise was
edited away fails (and says so) instead of passing on a promise nobody makes any more; the
line found is printed beside the row.

Add a promise to a doc, add its row (promises_api.py for the native API, promises_e2b.py
for the E2B faces). Standard library only.
"""
import http.client
import json
import os
import re
import socket
import sys
import time
import traceback

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))


class Answer:
    def __init__(self, status, body=b"", headers=None):
        self.status = status
        self.body = body
        self.headers = {k.lower(): v for k, v in (headers or [])}

    def json(self):
        try:
            return json.loads(self.body) if self.body else None
        except ValueError:
            return None

    def __repr__(self):
        return f"{self.status} {self.body[:300]!r}"


class Row:
    """doc: (path from the repo root, a quote of the promise as the doc words it);
    send(ctx) -> Answer; status; code: the error code (None: no error body is promised);
    message: a substring the message must hold, or same="key": every row with that key must
    answer the same message (the first one seen sets it); check(ctx, answer) -> None or why
    it failed, for what a status and code cannot say."""

    def __init__(self, what, doc, send, status, code=None, message=None, same=None,
                 check=None):
        self.what, self.doc, self.send = what, doc, send
        self.status, self.code, self.message, self.same = status, code, message, same
        self.check = check


def doc_line(path, quote):
    """The 1-based line where quote starts (whitespace runs may cross lines), or None."""
    with open(os.path.join(ROOT, path), encoding="utf-8") as f:
        text = f.read()
    pattern = r"\s+".join(re.escape(w) for w in quote.split())
    m = re.search(pattern, text)
    return text.count("\n", 0, m.start()) + 1 if m else None


def native_error(a):
    """(code, message) of a native error body {"error": {"code", "message"}}."""
    j = a.json()
    e = j.get("error") if isinstance(j, dict) else None
    return (e.get("code"), e.get("message")) if isinstance(e, dict) else (None, None)


def flat_error(a):
    """(code, message) of E2B's bodies: control plane {"code": <status>, "message"}, envd and
    the code interpreter {"code": "<connect code>", "message"}."""
    j = a.json()
    return (j.get("code"), j.get("message")) if isinstance(j, dict) else (None, None)


def run_rows(title, rows, ctx, error_of):
    """Checks every row; prints one line per row; returns the failures' descriptions."""
    failures, same = [], {}
    started = time.monotonic()
    print(f"== {title}: {len(rows)} rows")
    for i, row in enumerate(rows, 1):
        line = doc_line(*row.doc)
        where = f"{row.doc[0]}:{line}" if line else f"{row.doc[0]}:?"
        why = None
        ans = None
        if line is None:
            why = f"the doc no longer says {row.doc[1]!r}: update the row with the doc"
        else:
            try:
                ans = row.send(ctx)
                code, message = error_of(ans)
                if ans.status != row.status:
                    why = f"status {ans.status}, promised {row.status}"
                elif row.code is not None and code != row.code:
                    why = f"code {code!r}, promised {row.code!r}"
                elif row.message is not None and (not isinstance(message, str) or
                                                   row.message not in message):
                    why = f"message {message!r} lacks {row.message!r}"
                elif row.same is not None and same.setdefault(row.same, message) != message:
                    why = f"message {message!r}, not the same as {same[row.same]!r}"
                elif row.check is not None:
                    why = row.check(ctx, ans)
            except Exception:  # a row that crashes is a failed row, not a crashed suite
                why = "raised:\n" + traceback.format_exc()
        verdict = "ok  " if why is None else "FAIL"
        print(f"{verdict} {i:3d} {where:28s} {row.what}" +
              ("" if why is None else f"\n         {why}\n         answer: {ans!r}"))
        sys.stdout.flush()
        if why is not None:
            failures.append(f"{title} row {i} ({where}, {row.what}): {why}")
    print(f"== {title}: {len(rows) - len(failures)} of {len(rows)} hold "
          f"({time.monotonic() - started:.1f} s, printed for CI's budget, never checked)")
    return failures


# ---------------------------------------------------------------------- requests

def http_request(port, method, path, body=None, headers=None, timeout=120):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        c.request(method, path, body=body, headers=headers or {})
        r = c.getresponse()
        return Answer(r.status, r.read(), r.getheaders())
    finally:
        c.close()


def head_only(port, method, path, headers, length, timeout=20):
    """Sends only the head of a request announcing a body of length bytes and reads the
    answer the server gives from the head alone (status None if it waited for the body)."""
    sock = socket.create_connection(("127.0.0.1", port), timeout=timeout)
    try:
        head = f"{method} {path} HTTP/1.1\r\nHost: x\r\nContent-Length: {length}\r\n" + \
            "".join(f"{k}: {v}\r\n" for k, v in headers.items()) + "\r\n"
        sock.sendall(head.encode())
        data = b""
        while b"\r\n\r\n" not in data:
            chunk = sock.recv(65536)
            if not chunk:
                break
            data += chunk
        if not data.startswith(b"HTTP/1.1 "):
            return Answer(None, data)
        top, _, rest = data.partition(b"\r\n\r\n")
        lines = top.decode("latin-1").split("\r\n")
        hdrs = [tuple(x.strip() for x in ln.split(":", 1)) for ln in lines[1:] if ":" in ln]
        want = int(dict((k.lower(), v) for k, v in hdrs).get("content-length", "0"))
        while len(rest) < want:
            chunk = sock.recv(65536)
            if not chunk:
                break
            rest += chunk
        return Answer(int(lines[0].split()[1]), rest, hdrs)
    except socket.timeout:
        return Answer(None, b"(the server waited for the body)")
    finally:
        sock.close()
