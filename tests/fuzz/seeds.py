#!/usr/bin/env python3
"""Writes the seed corpus of fuzz_frame (hand-encoded protobuf, no dependencies).

Run from anywhere: python3 tests/fuzz/seeds.py. Seeds are inputs, not code; the fuzzer and
crash reproducers add more files beside them. First byte of each seed = chunking seed."""
import os
import struct

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "corpus", "fuzz_frame")


def varint(n):
    out = b""
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out += bytes([b | 0x80])
        else:
            return out + bytes([b])


def field(num, wire, payload):
    key = varint(num << 3 | wire)
    if wire == 0:
        return key + varint(payload)
    return key + varint(len(payload)) + payload


def frame(msg):
    return struct.pack(">I", len(msg)) + msg


def sync(nonce):
    return b"\0\0\0\0STKS" + struct.pack(">Q", nonce)


config = (field(1, 2, b"s-1") + field(2, 0, 1000) + field(3, 0, 1000)
          + field(5, 2, b"/dev/vdb"))
hello = field(1, 0, 1_700_000_000_000_000_000) + field(2, 2, bytes(range(64))) + field(3, 2, config)
host_hello = field(1, 0, 1) + field(2, 2, hello)
execm = (field(1, 0, 1) + field(2, 2, b"python3") + field(2, 2, b"-c")
         + field(2, 2, b"print(6*7)") + field(4, 2, b"/workspace"))
host_exec = field(1, 0, 2) + field(3, 2, execm)
host_put = field(1, 0, 3) + field(6, 2, field(1, 2, b"dir/a.txt") + field(3, 2, b"hello")
                                  + field(4, 0, 1))
host_ping = field(1, 0, 4) + field(10, 2, field(1, 0, 99))
guest_ready = field(2, 2, field(1, 0, 7) + field(2, 0, 1) + field(3, 2, b"0.1.0"))
guest_out = field(5, 2, field(1, 0, 1) + field(2, 0, 1) + field(3, 2, b"42\n"))
guest_exit = field(6, 2, field(1, 0, 1) + field(4, 0, 1234) + field(6, 0, 2048))
guest_err = field(1, 0, 9) + field(10, 2, field(1, 0, 2) + field(2, 2, b"bad"))

# Protocol 3: the egress tunnel (config.egress, then a stream's whole life both ways).
hello_egress = (field(1, 0, 1_700_000_000_000_000_000) + field(2, 2, bytes(range(64)))
                + field(3, 2, config + field(8, 2, field(1, 0, 32))))
host_hello_egress = field(1, 0, 1) + field(2, 2, hello_egress)
guest_topen = field(12, 2, field(1, 0, 1) + field(2, 2, b"0x7f.1") + field(3, 0, 80))
guest_tdata = field(13, 2, field(1, 0, 1) + field(2, 2, b"GET / HTTP/1.1\r\n\r\n"))
guest_teof = field(13, 2, field(1, 0, 1) + field(3, 0, 1))
guest_tcredit = field(14, 2, field(1, 0, 1) + field(2, 0, 32768))
guest_tclose = field(15, 2, field(1, 0, 1) + field(2, 0, 1))
host_tresult = field(12, 2, field(1, 0, 1) + field(2, 0, 2) + field(3, 2, b"denied"))
host_tdata = field(13, 2, field(1, 0, 1) + field(2, 2, b"HTTP/1.1 302 Found\r\n\r\n")
                   + field(3, 0, 1))
host_tcredit = field(14, 2, field(1, 0, 1) + field(2, 0, 131072))
host_tclose = field(15, 2, field(1, 0, 1))
bad_tcredit = field(14, 2, field(1, 0, 1) + field(2, 0, 131073))  # over the window
bad_tdata = field(13, 2, field(1, 0, 1))                            # empty without eof
bad_topen = field(12, 2, field(1, 0, 2) + field(2, 2, b"a b") + field(3, 0, 70000))

seeds = {
    "hello_egress": b"\x07" + frame(host_hello_egress),
    "tunnel_guest": b"\x13" + frame(guest_topen) + frame(guest_tdata) + frame(guest_teof)
    + frame(guest_tcredit) + frame(guest_tclose),
    "tunnel_host": b"\x21" + frame(host_tresult) + frame(host_tdata) + frame(host_tcredit)
    + frame(host_tclose),
    "tunnel_bad": b"\x02" + frame(bad_tcredit) + frame(bad_tdata) + frame(bad_topen),
    "hello": b"\x03" + frame(host_hello),
    "exec": b"\x11" + frame(host_exec),
    "put_ping": b"\x05" + frame(host_put) + frame(host_ping),
    "sync_then_frames": b"\x2a" + b"junk" + sync(7) + frame(guest_ready) + frame(guest_out)
    + frame(guest_exit),
    "error": b"\x01" + frame(guest_err),
    "bad_len_then_sync": b"\x09" + b"\x7f\xff\xff\xff\x01\x02" + sync(1) + frame(host_ping),
    "zero_len_not_sync": b"\x00" + b"\0\0\0\0XXXX" + frame(host_ping),
    "unknown_field": b"\x04" + frame(field(99, 0, 1)),
}
if __name__ == "__main__":  # seeds_manifest.py imports the encoders
    os.makedirs(OUT, exist_ok=True)
    for name, data in seeds.items():
        with open(os.path.join(OUT, name), "wb") as f:
            f.write(data)
    print(f"wrote {len(seeds)} seeds to {OUT}")
