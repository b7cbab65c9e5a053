#!/usr/bin/python3
"""Seeds for fuzz_oci_json, fuzz_oci_layer and fuzz_imagecfg (tests/fuzz/oci.cmake):
    python3 tests/fuzz/seeds_oci.py tests/fuzz/corpus
Small honest documents and layers, and one of each hostile case of test_image_import.py."""
import gzip
import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "integration"))
import oci_layouts as L  # noqa: E402

D = "sha256:" + "ab" * 32


def write(folder, name, data):
    os.makedirs(folder, exist_ok=True)
    with open(os.path.join(folder, name), "wb") as f:
        f.write(data)


def main(out):
    j = os.path.join(out, "fuzz_oci_json")
    index = {"schemaVersion": 2, "manifests": [{
        "mediaType": "application/vnd.oci.image.manifest.v1+json", "digest": D, "size": 10,
        "annotations": {"org.opencontainers.image.ref.name": "v1"}}]}
    write(j, "index", b"\0" + json.dumps(index).encode())
    write(j, "index-tag", b"\1" + json.dumps(index).encode())
    manifest = {"schemaVersion": 2, "config": {
        "mediaType": "application/vnd.oci.image.config.v1+json", "digest": D, "size": 3},
        "layers": [{"mediaType": "application/vnd.oci.image.layer.v1.tar+gzip", "digest": D,
                    "size": 7}, {"mediaType": "application/vnd.oci.image.layer.v1.tar+zstd",
                                 "digest": D, "size": 7}]}
    write(j, "manifest", b"\2" + json.dumps(manifest).encode())
    cfg = L.config(env=["A=1", "PATH=/bin"], workdir="/app", user="app:app",
                   entrypoint=["/bin/sh", "-c"], cmd=["echo hi"], layers=[b"x"])
    write(j, "config", b"\3" + json.dumps(cfg).encode())
    write(j, "deep", b"\3" + b"[" * 40 + b"]" * 40)

    lay = os.path.join(out, "fuzz_oci_layer")
    honest = L.tar_layer([L.dir("etc"), L.file("etc/x", b"hello", mode=0o644, uid=5, gid=6),
                          L.symlink("bin", "usr/bin"), L.hardlink("etc/y", "d/f")])
    write(lay, "plain", b"\0" + honest)
    write(lay, "gzip", b"\1" + gzip.compress(honest, mtime=0))
    zst = subprocess.run(["zstd", "-q", "-c"], input=honest, capture_output=True).stdout
    if zst:
        write(lay, "zstd", b"\2" + zst)
    write(lay, "whiteouts", b"\0" + L.tar_layer([L.file("d/.wh..wh..opq", b""),
                                                 L.file(".wh.up", b""), L.file("d/g", b"g")]))
    write(lay, "hostile", b"\0" + L.tar_layer([
        L.device("dev/c", "char"), L.file("s", b"", mode=0o6755), L.file("up/etc/esc", b"x"),
        L.hardlink("h", "../../etc/passwd"), L.file("a/../../b", b""), L.file("/abs", b"")]))
    write(lay, "bomb", b"\1" + gzip.compress(L.tar_layer([L.file("z", b"\0" * (1 << 20))]),
                                            mtime=0))

    dfd = os.path.join(out, "fuzz_dockerfile")
    write(dfd, "template", b"""# syntax=docker/dockerfile:1
ARG BASE=minimal
FROM ${BASE} AS base
ENV GREETING="hello there" \\
    HOME_DIR=/srv/app  B='single $A'
ENV OLD value with spaces
WORKDIR $HOME_DIR
COPY --chown=app:app ["a b", "c", "/dest/"]
ADD app/ ./
RUN apt-get update && \\
    # a comment inside
    apt-get install -y jq
USER ${USERNAME:-app}
ENTRYPOINT ["/bin/sh", "-c"]
CMD echo ${GREETING:+set} \\$literal
EXPOSE 8080
""")
    write(dfd, "bad", b"FROM a\nFROM b\nSHELL [\"x\"]\nADD http://x/y /z\nCOPY --from=x a b\n")

    cfgdir = os.path.join(out, "fuzz_imagecfg")
    write(cfgdir, "full", b"# header\nenv A=1\nenv PATH=/usr/bin:/bin\nenv E=%25%0A\n"
                          b"cwd /srv/app\nuser 4321:4322\nentrypoint /bin/sh\ncmd -c\n")
    write(cfgdir, "bad", b"env 1A=x\nuser 0:0\ncwd relative\n")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "corpus"))
