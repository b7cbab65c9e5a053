#!/usr/bin/env python3
"""Every promised error code and limit of the docs, one table row each (issue 31), checked
against one real stockaded with [e2b] on:

  api   hostd/api/API.md     (promises_api.py: ROWS, LIVE_ROWS on one session, ENDED_ROWS)
  e2b   hostd/e2b/README.md  (promises_e2b.py: ROWS, SANDBOX_ROWS on one sandbox)

Both faces share the daemon (the same pools and [e2b] config as integration_e2b_auth, so a
build's cached snapshots serve both) and use three guests at most: the native suite's one
session, the E2B suite's sandbox and the v1 default-timeout row's sandbox. Most rows need no
guest (validation before admission); they run while the guests start.

    test_promises.py [api] [e2b]     (both when none is named)
"""
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "lib"))
sys.path.insert(0, HERE)
from stockade_fixture import Daemon  # noqa: E402
from test_e2b_hostile import E2B_CONF, e2b_ports  # noqa: E402
from test_e2b_auth import POOLS  # noqa: E402
import promises  # noqa: E402
import promises_api  # noqa: E402
import promises_e2b  # noqa: E402


def main():
    faces = set(sys.argv[1:]) or {"api", "e2b"}
    unknown = faces - {"api", "e2b"}
    if unknown:
        sys.exit(f"unknown face(s): {', '.join(sorted(unknown))} (api, e2b)")
    failures = []
    with Daemon(pools=POOLS, extra_conf=E2B_CONF) as d:
        api_port, envd_port = e2b_ports(d)
        d.wait(d.pool_full, 300, "a full pool")
        actx = promises_api.Ctx(d)
        ectx = promises_e2b.Ctx(d, api_port, envd_port)
        live = promises_api.start_live(actx) if "api" in faces else None
        if "api" in faces:
            failures += promises.run_rows("API.md", promises_api.ROWS, actx,
                                          promises.native_error)
        if "e2b" in faces:
            failures += promises.run_rows("e2b/README.md", promises_e2b.ROWS, ectx,
                                          promises.flat_error)
            promises_e2b.start_sandbox(ectx)
        if live:
            promises_api.prepare_live(actx, live)
            failures += promises.run_rows("API.md, a running session", promises_api.LIVE_ROWS,
                                          actx, promises.native_error)
            promises_api.end_live(actx)
            failures += promises.run_rows("API.md, an ended session", promises_api.ENDED_ROWS,
                                          actx, promises.native_error)
        if ectx.sbx:
            promises_e2b.prepare_sandbox(ectx)
            failures += promises.run_rows("e2b/README.md, a sandbox", promises_e2b.SANDBOX_ROWS,
                                          ectx, promises.flat_error)
            promises.http_request(api_port, "DELETE", f"/sandboxes/{ectx.sbx_id}",
                                  headers={"X-API-KEY": d.token})
    if failures:
        print(f"\n{len(failures)} promise(s) not kept:\n  " + "\n  ".join(failures),
              file=sys.stderr)
        sys.exit(1)
    print("every row holds")


if __name__ == "__main__":
    main()
