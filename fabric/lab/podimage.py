"""The test image of the lab's real nodes, built here from this machine's Debian binaries (no registry is reachable).

An OCI image layout in one tar (the `ctr image import` input, OCI image-spec image-layout.md): `oci-layout`,
`index.json` naming the image (`io.containerd.image.name`, which ctr reads, and `org.opencontainers.image.ref.name`),
the manifest, the config (entrypoint a shell) and one uncompressed layer. The layer holds busybox (Debian
`busybox-static`: sh, awk, sort, wc, sleep, printenv, the POSIX tools the pod scripts use, ping) and the programs the
rendered pods run, each with the shared libraries `ldd` names and the dynamic loader: `ip` (iproute2, the pooled
set-up), `iperf3`, perftest's `ib_write_bw`/`ib_write_lat` and `ibv_devices` with rdma-core's providers.
Deterministic: the same binaries give the same digest. The pause image of each pod sandbox is the same busybox
running `sleep`.
"""

from __future__ import annotations

import hashlib
import io
import json
import shutil
import subprocess
import tarfile
from pathlib import Path

IMAGE = "localhost/roce-fabric/pod:lab"
PAUSE_IMAGE = "localhost/roce-fabric/pause:lab"
BUSYBOX = Path("/bin/busybox")
BUSYBOX_APPLETS = ("sh", "awk", "sort", "wc", "sleep", "printenv", "cat", "grep", "sed", "mkdir", "hostname", "ls",
                   "true", "false", "env", "tr", "head", "tail", "cut", "uniq", "echo", "kill", "ps", "id", "test",
                   "ping")
PROGRAMS = ("ip", "iperf3", "ib_write_bw", "ib_write_lat", "ibv_devices")
VERBS_PROVIDERS = Path("/usr/lib/x86_64-linux-gnu/libibverbs")
VERBS_DRIVERS = Path("/etc/libibverbs.d")


class ImageError(RuntimeError):
    """A program the image needs is not installed here."""


def _libraries(binary: Path) -> set[Path]:
    """The shared objects `ldd` resolves for `binary`, and the loader."""
    p = subprocess.run(["ldd", str(binary)], capture_output=True, text=True, timeout=30, check=False)
    libs = set()
    for line in p.stdout.splitlines():
        parts = line.split()
        path = parts[2] if "=>" in parts and len(parts) > 2 else parts[0] if parts and parts[0].startswith("/") else ""
        if path.startswith("/"):
            libs.add(Path(path))
    return libs


def _files(programs: tuple[str, ...]) -> dict[str, Path]:
    """path in the image → file here, for busybox, `programs` and their libraries (the verbs providers too)."""
    if not BUSYBOX.exists():
        raise ImageError(f"{BUSYBOX} is missing (Debian package busybox-static; make deps)")
    files: dict[str, Path] = {"bin/busybox": BUSYBOX}
    binaries = []
    for name in programs:
        found = shutil.which(name, path="/usr/sbin:/usr/bin:/sbin:/bin")
        if found is None:
            raise ImageError(f"{name} is not installed here (Debian packages iproute2, iperf3, perftest; make deps)")
        files[f"usr/bin/{name}"] = Path(found)
        binaries.append(Path(found))
    binaries += sorted(VERBS_PROVIDERS.glob("*.so")) if VERBS_PROVIDERS.is_dir() else []
    for b in binaries:
        if b.parent == VERBS_PROVIDERS:
            files[str(b).lstrip("/")] = b
        for lib in _libraries(b):
            files[str(lib).lstrip("/")] = lib.resolve()
    if VERBS_DRIVERS.is_dir():
        for d in sorted(VERBS_DRIVERS.glob("*.driver")):
            files[str(d).lstrip("/")] = d
    return files


def _layer(files: dict[str, Path], applets: tuple[str, ...]) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.PAX_FORMAT) as tar:
        dirs = sorted({str(Path(p).parents[i]) for p in files for i in range(len(Path(p).parts) - 1)}
                      | {"bin", "tmp", "etc", "root", "var/run", "usr/bin"})
        for d in dirs:
            info = tarfile.TarInfo(d)
            info.type, info.mode = tarfile.DIRTYPE, 0o1777 if d == "tmp" else 0o755
            tar.addfile(info)
        for path, src in sorted(files.items()):
            data = src.read_bytes()
            info = tarfile.TarInfo(path)
            info.size, info.mode = len(data), 0o755 if src.stat().st_mode & 0o111 else 0o644
            tar.addfile(info, io.BytesIO(data))
        for applet in applets:
            info = tarfile.TarInfo(f"bin/{applet}")
            info.type, info.linkname, info.mode = tarfile.SYMTYPE, "busybox", 0o777
            tar.addfile(info)
        for name, text in (("etc/passwd", "root:x:0:0:root:/root:/bin/sh\n"), ("etc/group", "root:x:0:\n")):
            info = tarfile.TarInfo(name)
            info.size, info.mode = len(text), 0o644
            tar.addfile(info, io.BytesIO(text.encode()))
    return buf.getvalue()


def _blob(tar: tarfile.TarFile, data: bytes) -> dict[str, object]:
    digest = hashlib.sha256(data).hexdigest()
    info = tarfile.TarInfo(f"blobs/sha256/{digest}")
    info.size, info.mode = len(data), 0o644
    tar.addfile(info, io.BytesIO(data))
    return {"digest": f"sha256:{digest}", "size": len(data)}


def _json(obj: object) -> bytes:
    return json.dumps(obj, sort_keys=True, separators=(",", ":")).encode()


def oci_archive(out: Path, name: str, layer: bytes, cmd: list[str]) -> Path:
    """Writes the OCI image layout tar of one layer and `cmd` as the default command to `out`."""
    diff_id = "sha256:" + hashlib.sha256(layer).hexdigest()
    config = {"architecture": "amd64", "os": "linux", "config": {"Cmd": cmd, "Env": [
        "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"], "WorkingDir": "/"},
        "rootfs": {"type": "layers", "diff_ids": [diff_id]}}
    with tarfile.open(out, "w") as tar:
        layout = _json({"imageLayoutVersion": "1.0.0"})
        info = tarfile.TarInfo("oci-layout")
        info.size = len(layout)
        tar.addfile(info, io.BytesIO(layout))
        layer_desc = {"mediaType": "application/vnd.oci.image.layer.v1.tar", **_blob(tar, layer)}
        config_desc = {"mediaType": "application/vnd.oci.image.config.v1+json", **_blob(tar, _json(config))}
        manifest = {"schemaVersion": 2, "mediaType": "application/vnd.oci.image.manifest.v1+json",
                    "config": config_desc, "layers": [layer_desc]}
        manifest_desc = {"mediaType": "application/vnd.oci.image.manifest.v1+json", **_blob(tar, _json(manifest)),
                         "platform": {"architecture": "amd64", "os": "linux"},
                         "annotations": {"io.containerd.image.name": name,
                                         "org.opencontainers.image.ref.name": name.rsplit(":", 1)[1]}}
        index = _json({"schemaVersion": 2, "mediaType": "application/vnd.oci.image.index.v1+json",
                       "manifests": [manifest_desc]})
        info = tarfile.TarInfo("index.json")
        info.size = len(index)
        tar.addfile(info, io.BytesIO(index))
    return out


def build(out_dir: Path) -> dict[str, Path]:
    """The pod image and the pause image as OCI archives in `out_dir`: image name → archive."""
    out_dir.mkdir(parents=True, exist_ok=True)
    pod = oci_archive(out_dir / "pod.oci.tar", IMAGE, _layer(_files(PROGRAMS), BUSYBOX_APPLETS), ["/bin/sh"])
    pause = oci_archive(out_dir / "pause.oci.tar", PAUSE_IMAGE, _layer({"bin/busybox": BUSYBOX}, ("sh", "sleep")),
                        ["/bin/sleep", "2147483647"])
    return {IMAGE: pod, PAUSE_IMAGE: pause}
