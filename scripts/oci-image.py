#!/usr/bin/env python3
"""Writes an OCI image tarball from files of this machine, without a registry
or a container tool: what scripts/k8s-check.sh imports into containerd
(ctr images import) for the hymn worker pods and the pause sandbox.

  oci-image.py OUT.tar NAME:TAG ENTRYPOINT [--env K=V]... SRC[:DEST]...

Each SRC is copied to DEST (default: the same path), with, for dynamically
linked programs, the shared libraries ldd names and the dynamic loader, so
Debian's bash, ip and ping run in the image. A SRC of the form @DIR makes
an empty directory, LINK=TARGET a symbolic link. The image config's entrypoint is ENTRYPOINT; PATH is
/bin:/sbin:/usr/bin:/usr/sbin.
"""
import gzip
import hashlib
import io
import json
import os
import subprocess
import sys
import tarfile


def libs(path):
    try:
        out = subprocess.run(["ldd", path], capture_output=True, text=True).stdout
    except OSError:
        return []
    found = []
    for line in out.splitlines():
        parts = line.split()
        if "=>" in parts:
            i = parts.index("=>")
            if i + 1 < len(parts) and parts[i + 1].startswith("/"):
                found.append(parts[i + 1])
        elif parts and parts[0].startswith("/"):
            found.append(parts[0])  # the loader
    return found


def add_file(tar, src, dest, seen):
    dest = dest.lstrip("/")
    if dest in seen:
        return
    # Parent directories first.
    parts = dest.split("/")[:-1]
    for i in range(1, len(parts) + 1):
        d = "/".join(parts[:i])
        if d not in seen:
            info = tarfile.TarInfo(d)
            info.type, info.mode = tarfile.DIRTYPE, 0o755
            tar.addfile(info)
            seen.add(d)
    real = os.path.realpath(src)
    info = tarfile.TarInfo(dest)
    info.mode = os.stat(real).st_mode & 0o7777
    data = open(real, "rb").read()
    info.size = len(data)
    tar.addfile(info, io.BytesIO(data))
    seen.add(dest)


def main(argv):
    if len(argv) < 4:
        sys.stderr.write(__doc__)
        return 2
    out, name, entry = argv[0], argv[1], argv[2]
    env = ["PATH=/bin:/sbin:/usr/bin:/usr/sbin"]
    rest = argv[3:]
    files = []
    while rest:
        a = rest.pop(0)
        if a == "--env":
            env.append(rest.pop(0))
        else:
            files.append(a)
    if ":" not in name:
        sys.stderr.write("oci-image: NAME must be name:tag\n")
        return 2
    raw = io.BytesIO()
    seen = set()
    with tarfile.open(fileobj=raw, mode="w", format=tarfile.GNU_FORMAT) as tar:
        for spec in files:
            if "=" in spec:
                link, _, target = spec.partition("=")
                info = tarfile.TarInfo(link.lstrip("/"))
                info.type, info.linkname = tarfile.SYMTYPE, target
                tar.addfile(info)
                continue
            if spec.startswith("@"):
                d = spec[1:].lstrip("/")
                info = tarfile.TarInfo(d)
                info.type, info.mode = tarfile.DIRTYPE, 0o755
                tar.addfile(info)
                seen.add(d)
                continue
            src, _, dest = spec.partition(":")
            if not os.path.exists(src):
                sys.stderr.write("oci-image: %s does not exist\n" % src)
                return 1
            add_file(tar, src, dest or src, seen)
            for lib in libs(src):
                add_file(tar, lib, lib, seen)
    layer = raw.getvalue()
    diff_id = "sha256:" + hashlib.sha256(layer).hexdigest()
    gz = gzip.compress(layer, mtime=0)
    config = json.dumps({
        "architecture": "amd64", "os": "linux",
        "config": {"Entrypoint": [entry], "Env": env},
        "rootfs": {"type": "layers", "diff_ids": [diff_id]},
    }).encode()
    blobs = {}

    def blob(data):
        d = hashlib.sha256(data).hexdigest()
        blobs[d] = data
        return {"digest": "sha256:" + d, "size": len(data)}

    cfg, lay = blob(config), blob(gz)
    manifest = json.dumps({
        "schemaVersion": 2,
        "mediaType": "application/vnd.oci.image.manifest.v1+json",
        "config": dict(mediaType="application/vnd.oci.image.config.v1+json", **cfg),
        "layers": [dict(mediaType="application/vnd.oci.image.layer.v1.tar+gzip", **lay)],
    }).encode()
    man = blob(manifest)
    index = json.dumps({
        "schemaVersion": 2,
        "manifests": [dict(mediaType="application/vnd.oci.image.manifest.v1+json",
                           annotations={"io.containerd.image.name": name}, **man)],
    }).encode()
    with tarfile.open(out, "w") as t:
        def put(path, data):
            info = tarfile.TarInfo(path)
            info.size = len(data)
            t.addfile(info, io.BytesIO(data))
        put("oci-layout", b'{"imageLayoutVersion":"1.0.0"}')
        for d, data in blobs.items():
            put("blobs/sha256/" + d, data)
        put("index.json", index)
    print("%s: %s, layer %d bytes" % (out, name, len(gz)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
