#!/usr/bin/env python3
"""Writes the seed corpora of fuzz_e2b_connect and fuzz_e2b_multipart (issue 9): what the E2B
SDK 2.51.0 sends (captured shapes), plus broken variants.

Run from anywhere: python3 tests/fuzz/seeds_e2b.py. Seeds are inputs, not code; the fuzzer
and crash reproducers add more files beside them."""
import json
import os
import struct

HERE = os.path.dirname(os.path.abspath(__file__))


def env(flags, payload):
    return struct.pack(">BI", flags, len(payload)) + payload


MESSAGES = [
    {"process": {"cmd": "/bin/bash", "args": ["-l", "-c", "python3 -c 'print(1)'"]},
     "stdin": False},
    {"process": {"cmd": "/bin/bash", "args": ["-l", "-c", "cat"], "envs": {"A": "b"},
                 "cwd": "/home/user/x"}, "stdin": True, "tag": "srv"},
    {"process": {"pid": 3}},
    {"process": {"tag": "srv"}, "signal": "SIGNAL_SIGKILL"},
    {"process": {"pid": 1}, "input": {"stdin": "aGkK"}},
    {"path": "/home/user", "recursive": True, "includeEntry": True},
    {"path": "~/../etc", "depth": 2},
    {"templateID": "base", "timeout": 300, "metadata": {"k": "v"}, "envVars": {"K": "v"}},
    {"templateID": "base", "autoPause": True},
    {"timeout": 86401},
    # the code interpreter's (@e2b/code-interpreter 2.8.0; its bodies are plain JSON, enveloped
    # here like the rest so one target parses them) and event attrs
    {"code": "x + 1", "context_id": "2", "env_vars": {"A": "b"}},
    {"code": "print(1)", "language": "python"},
    {"code": "1", "language": "r", "context_id": "01"},
    {"language": "python", "cwd": "/home/user"},
    {"main": True, "data": {"text/plain": "42", "image/png": "iVBOR", "text/html": "<table>"},
     "name": "ZeroDivisionError", "value": "division by zero", "traceback": "", "run": 3,
     "execution_count": 4},
    # issue 28: a user named by Authorization (Basic), and cwds the process map takes or refuses
    {"authorization": "Basic cm9vdDo=", "path": "sub/./x"},
    {"authorization": "Basic dXNlcjo=", "path": "/home/user/../etc"},
]


def connect_seeds():
    out = {}
    for i, m in enumerate(MESSAGES):
        p = json.dumps(m).encode()
        out[f"msg{i:02}"] = env(0, p)
        out[f"msg{i:02}-end"] = env(0, p) + env(2, b"{}")
    out["compressed"] = env(1, b"\x1f\x8b")
    out["two"] = env(0, b"{}") + env(0, b"{}")
    out["short"] = env(0, b"{\"process\":{}}")[:-3]
    out["huge-length"] = b"\x00\xff\xff\xff\xff{}"
    out["bad-flags"] = env(0x80, b"{}")
    out["not-json"] = env(0, b"\xff\xfe")
    out["array"] = env(0, b"[1,2]")
    return out


def part(name, filename, data, extra=b""):
    d = f'Content-Disposition: form-data; name="{name}"'
    if filename is not None:
        d += f'; filename="{filename}"'
    return b"--XyZ\r\n" + d.encode() + b"\r\n" + extra + b"\r\n" + data + b"\r\n"


def multipart_seeds():
    ct = b"multipart/form-data; boundary=XyZ\n"
    return {
        "one": ct + part("file", "/home/user/a.txt", b"hello\n",
                         b"Content-Type: application/octet-stream\r\n") + b"--XyZ--\r\n",
        "two": ct + part("file", "a/b.bin", bytes(range(256))) + part("file", "c %22q%22", b"")
        + b"--XyZ--",
        "rfc5987": ct + b"--XyZ\r\nContent-Disposition: form-data; name=file; "
        b"filename*=UTF-8''%C3%A5.txt\r\n\r\nx\r\n--XyZ--",
        "escape": ct + part("file", "../../etc/passwd", b"x") + part("file", "/etc/shadow", b"y")
        + b"--XyZ--",
        "preamble": ct + b"junk\r\n" + part("note", None, b"n") + b"--XyZ--epilogue",
        "unclosed": ct + part("file", "x", b"data")[:-2],
        "quoted-boundary": b'multipart/form-data; boundary="a b"\n--a b\r\n'
        b'Content-Disposition: form-data; name="file"; filename="q"\r\n\r\nz\r\n--a b--',
        "host": b"49983-abcdefghijklmnopqrstuvwxyz.stockade.local:49983\n",
        "metadata": b"suite=e2b%2520it&k=v%253D1\n",
        "time": b"2026-11-29T23:13:38.759Z\n",
    }


def write(target, seeds):
    d = os.path.join(HERE, "corpus", target)
    os.makedirs(d, exist_ok=True)
    for name, data in seeds.items():
        with open(os.path.join(d, "seed-" + name), "wb") as f:
            f.write(data)


if __name__ == "__main__":
    write("fuzz_e2b_connect", connect_seeds())
    write("fuzz_e2b_multipart", multipart_seeds())
