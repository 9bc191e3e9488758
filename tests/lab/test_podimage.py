"""The real nodes' pod image, built from this machine's Debian binaries (fabric.lab.podimage): an OCI image layout
that `ctr image import` reads (tests/lab/test_nodes.py imports and runs it on the nodes)."""

from __future__ import annotations

import io
import json
import tarfile
from pathlib import Path

import pytest

from fabric.lab import podimage


def test_the_pod_image_names_itself_and_holds_the_programs(tmp_path: Path) -> None:
    """index.json names the image as ctr reads it; the one layer has busybox's shell tools, ip, iperf3 and
    perftest with their libraries; the same binaries give the same archive."""
    try:
        archives = podimage.build(tmp_path / "a")
    except podimage.ImageError as exc:
        pytest.skip(str(exc))
    again = podimage.build(tmp_path / "b")
    assert archives[podimage.IMAGE].read_bytes() == again[podimage.IMAGE].read_bytes()
    with tarfile.open(archives[podimage.IMAGE]) as tar:
        index = json.load(tar.extractfile("index.json"))  # type: ignore[arg-type]
        manifest_desc = index["manifests"][0]
        assert manifest_desc["annotations"]["io.containerd.image.name"] == podimage.IMAGE
        blob = lambda d: tar.extractfile(f"blobs/sha256/{d['digest'].split(':')[1]}").read()  # noqa: E731
        manifest = json.loads(blob(manifest_desc))
        with tarfile.open(fileobj=io.BytesIO(blob(manifest["layers"][0]))) as layer:
            names = set(layer.getnames())
            assert layer.getmember("bin/sh").linkname == "busybox"
    assert {"bin/busybox", "usr/bin/ip", "usr/bin/iperf3", "usr/bin/ib_write_bw"} <= names
    assert any(n.startswith("lib64/ld-linux") or "/ld-linux" in n for n in names)
