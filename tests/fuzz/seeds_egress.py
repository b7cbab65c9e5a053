#!/usr/bin/env python3
"""Writes the seed corpora of fuzz_egress_host and fuzz_proxyreq (issue 7) and
fuzz_egress_sni (issue 14: real ClientHellos from python3's ssl, whole, cut into small records,
truncated, and HTTP request heads).

Run from anywhere: python3 tests/fuzz/seeds_egress.py. Seeds are inputs, not code; the fuzzer
and crash reproducers add more files beside them."""
import os
import ssl

HERE = os.path.dirname(os.path.abspath(__file__))

HOSTS = [
    "127.0.0.1", "127.1", "0x7f.1", "0x7f000001", "017700000001", "0177.0.0.1", "2852039166",
    "0251.0376.0251.0376", "0xa9.0xfe.0xa9.0xfe", "169.16689662", "127.0.0.1.", "1.2.3.256",
    "4294967296", "0x", "1..2", " 127.0.0.1", "[::1]", "[::ffff:169.254.169.254]",
    "[64:ff9b::a9fe:a9fe]", "[2002:a9fe:a9fe::]", "[2001:0:4136:e378:8000:63bf:5601:5601]",
    "[fe80::1%25eth0]", "[64:ff9b:1:808:8:808:808:808]", "pypi.org", "Files.PythonHosted.org.",
    "localhost", "a-.b", "x" * 64 + ".com", "1.2.3.4a",
]

REQUESTS = [
    b"CONNECT pypi.org:443 HTTP/1.1\r\nHost: pypi.org:443\r\n\r\n",
    b"CONNECT [::ffff:169.254.169.254]:80 HTTP/1.1\r\n\r\n\x16\x03\x01",
    b"GET http://10.213.0.2:8080/file.bin?x=1 HTTP/1.1\r\nHost: 10.213.0.2:8080\r\n"
    b"Connection: keep-alive\r\nProxy-Connection: keep-alive\r\nAccept: */*\r\n\r\n",
    b"POST http://0x7f.1/ HTTP/1.0\r\nContent-Length: 3\r\n\r\nabc",
    b"GET / HTTP/1.1\r\nHost: x\r\n\r\n",
    b"GET http://user@x/ HTTP/1.1\r\n\r\n",
    b"CONNECT a:1 HTTP/1.1\r\n folded\r\n\r\n",
    b"CONNECT a:1 HTTP/1.1\nX: y\n\n",
    b"GET http://a/ HTTP/1.1\r\n" + b"".join(b"X-%d: v\r\n" % i for i in range(70)) + b"\r\n",
]


def hello_of(name):
    incoming, outgoing = ssl.MemoryBIO(), ssl.MemoryBIO()
    ctx = ssl.create_default_context()
    ctx.check_hostname = False
    obj = ctx.wrap_bio(incoming, outgoing, server_hostname=name)
    try:
        obj.do_handshake()
    except ssl.SSLWantReadError:
        pass
    return outgoing.read()


def records(hello, size):
    """The same handshake bytes re-cut into records of size bytes."""
    body, out = hello[5:], b""
    for i in range(0, len(body), size):
        chunk = body[i:i + size]
        out += b"\x16\x03\x01" + len(chunk).to_bytes(2, "big") + chunk
    return out


GOOD = hello_of("a.example")
HELLOS = [
    GOOD, hello_of("other.example"), hello_of(None), records(GOOD, 1), records(GOOD, 7),
    records(GOOD, 300), GOOD[:len(GOOD) // 2], GOOD + b"\x17\x03\x03\x00\x01x",
    b"\x16\x03\x01\x40\x00\x01\x00\x3f\xfb",
    b"GET / HTTP/1.1\r\nHost: a.example\r\nConnection: close\r\n\r\n",
    b"GET / HTTP/1.1\r\nHost: a.example\r\nHost: b.example\r\nConnection: close\r\n\r\n",
    b"GET http://b.example/ HTTP/1.1\r\nHost: a.example:443\r\nConnection: close\r\n\r\n",
    b"SSH-2.0-OpenSSH_9.2\r\n", b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n",
]


def write(target, items):
    out = os.path.join(HERE, "corpus", target)
    os.makedirs(out, exist_ok=True)
    for i, data in enumerate(items):
        with open(os.path.join(out, f"seed-{i:02d}"), "wb") as f:
            f.write(data if isinstance(data, bytes) else data.encode())
    print(f"wrote {len(items)} seeds to {out}")


write("fuzz_egress_host", HOSTS)
write("fuzz_proxyreq", REQUESTS)
write("fuzz_egress_sni", HELLOS)
