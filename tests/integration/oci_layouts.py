"""OCI image layouts and `docker save` tarballs made by tests (no registry is reachable here):
honest ones and liars. Standard library only.

    layer = tar_layer([file("etc/x", b"hi", mode=0o4755), symlink("bin", "usr/bin"), ...])
    write_layout(dir, [layer], config(env=["A=1"]), tag="v1", gzip=True, lie=dict(...))

`lie` breaks one thing after the honest layout is computed: size of a layer descriptor
(layer_size_delta), a layer's bytes (layer_flip), the config's diff_id (diff_id_flip), the
config blob (config_flip), the manifest blob (manifest_flip).
"""
import gzip
import hashlib
import io
import json
import os
import tarfile

EPOCH = 1767225600


def _info(name, kind, mode, uid=0, gid=0, link="", size=0, devmajor=0, devminor=0):
    t = tarfile.TarInfo(name)
    t.type, t.mode, t.uid, t.gid, t.linkname, t.size = kind, mode, uid, gid, link, size
    t.mtime, t.uname, t.gname = EPOCH, "", ""
    t.devmajor, t.devminor = devmajor, devminor
    return t


def file(name, data=b"", mode=0o644, uid=0, gid=0):
    return (_info(name, tarfile.REGTYPE, mode, uid, gid, size=len(data)), data)


def dir(name, mode=0o755, uid=0, gid=0):  # noqa: A001 (the tar word)
    return (_info(name, tarfile.DIRTYPE, mode, uid, gid), None)


def symlink(name, target):
    return (_info(name, tarfile.SYMTYPE, 0o777, link=target), None)


def hardlink(name, target):
    return (_info(name, tarfile.LNKTYPE, 0o644, link=target), None)


def device(name, kind):
    t = {"char": tarfile.CHRTYPE, "block": tarfile.BLKTYPE, "fifo": tarfile.FIFOTYPE}[kind]
    return (_info(name, t, 0o666, devmajor=1, devminor=3), None)


def tar_layer(entries):
    """Uncompressed tar bytes (PAX, sorted as given; names are written as they are)."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.PAX_FORMAT) as tf:
        for info, data in entries:
            tf.addfile(info, io.BytesIO(data) if data is not None else None)
    return buf.getvalue()


def sha(data):
    return "sha256:" + hashlib.sha256(data).hexdigest()


def config(env=None, workdir="", user="", entrypoint=None, cmd=None, layers=()):
    return {"architecture": "amd64", "os": "linux",
            "config": {"Env": env or [], "WorkingDir": workdir, "User": user,
                       "Entrypoint": entrypoint, "Cmd": cmd},
            "rootfs": {"type": "layers", "diff_ids": [sha(t) for t in layers]},
            "history": [{"created_by": "tests"}]}


def _blob(root, data):
    d = sha(data)
    with open(os.path.join(root, "blobs", "sha256", d[7:]), "wb") as f:
        f.write(data)
    return d


def _flip(data):
    b = bytearray(data)
    b[len(b) // 2] ^= 0x01
    return bytes(b)


def write_layout(root, layers, cfg=None, tag="v1", gz=True, lie=None):
    """An OCI layout at root of the uncompressed tars layers. Returns the manifest digest."""
    lie = lie or {}
    os.makedirs(os.path.join(root, "blobs", "sha256"), exist_ok=True)
    with open(os.path.join(root, "oci-layout"), "w") as f:
        json.dump({"imageLayoutVersion": "1.0.0"}, f)
    cfg = dict(cfg or config())
    cfg["rootfs"] = {"type": "layers", "diff_ids": [sha(t) for t in layers]}
    if "diff_id_flip" in lie:
        i = lie["diff_id_flip"]
        cfg["rootfs"]["diff_ids"][i] = sha(_flip(layers[i]))
    descs = []
    for i, t in enumerate(layers):
        blob = gzip.compress(t, mtime=0) if gz else t
        digest = sha(blob)
        size = len(blob) + (lie.get("layer_size_delta", 0) if lie.get("layer") == i else 0)
        if lie.get("layer_flip") == i:
            blob = _flip(blob)
        with open(os.path.join(root, "blobs", "sha256", digest[7:]), "wb") as f:
            f.write(blob)
        mt = "application/vnd.oci.image.layer.v1.tar" + ("+gzip" if gz else "")
        descs.append({"mediaType": mt, "digest": digest, "size": size})
    cfg_bytes = json.dumps(cfg, sort_keys=True).encode()
    cfg_digest = _blob(root, cfg_bytes)
    if lie.get("config_flip"):
        with open(os.path.join(root, "blobs", "sha256", cfg_digest[7:]), "wb") as f:
            f.write(cfg_bytes.replace(b'"linux"', b'"linuX"'))
    manifest = {"schemaVersion": 2, "mediaType": "application/vnd.oci.image.manifest.v1+json",
                "config": {"mediaType": "application/vnd.oci.image.config.v1+json",
                           "digest": cfg_digest, "size": len(cfg_bytes)},
                "layers": descs}
    m_bytes = json.dumps(manifest).encode()
    m_digest = _blob(root, m_bytes)
    if lie.get("manifest_flip"):
        with open(os.path.join(root, "blobs", "sha256", m_digest[7:]), "wb") as f:
            f.write(m_bytes.replace(b'"layers"', b'"layerz"'))
    index = {"schemaVersion": 2, "manifests": [
        {"mediaType": "application/vnd.oci.image.manifest.v1+json", "digest": m_digest,
         "size": len(m_bytes), "annotations": {"org.opencontainers.image.ref.name": tag}}]}
    with open(os.path.join(root, "index.json"), "w") as f:
        json.dump(index, f)
    return m_digest


def docker_archive(path, layers, cfg, tag="test/image:v1"):
    """A `docker save` tarball: manifest.json, <config>.json, <layer>/layer.tar."""
    cfg = dict(cfg)
    cfg["rootfs"] = {"type": "layers", "diff_ids": [sha(t) for t in layers]}
    cfg_bytes = json.dumps(cfg, sort_keys=True).encode()
    cfg_name = hashlib.sha256(cfg_bytes).hexdigest() + ".json"
    members = [(cfg_name, cfg_bytes)]
    names = []
    for t in layers:
        n = hashlib.sha256(t).hexdigest() + "/layer.tar"
        names.append(n)
        members.append((n, t))
    manifest = [{"Config": cfg_name, "RepoTags": [tag], "Layers": names}]
    members.insert(0, ("manifest.json", json.dumps(manifest).encode()))
    with tarfile.open(path, "w", format=tarfile.PAX_FORMAT) as tf:
        for name, data in members:
            info = tarfile.TarInfo(name)
            info.size, info.mtime, info.mode = len(data), EPOCH, 0o644
            tf.addfile(info, io.BytesIO(data))


def read_layout_layers(root, tag):
    """(uncompressed layer tars, config dict) of the image tagged tag in an OCI layout."""
    with open(os.path.join(root, "index.json")) as f:
        index = json.load(f)
    m = next(x for x in index["manifests"]
             if x.get("annotations", {}).get("org.opencontainers.image.ref.name") == tag)

    def blob(d):
        with open(os.path.join(root, "blobs", "sha256", d.split(":")[1]), "rb") as f:
            return f.read()
    manifest = json.loads(blob(m["digest"]))
    cfg = json.loads(blob(manifest["config"]["digest"]))
    layers = []
    for d in manifest["layers"]:
        data = blob(d["digest"])
        layers.append(gzip.decompress(data) if d["mediaType"].endswith("gzip") else data)
    return layers, cfg
