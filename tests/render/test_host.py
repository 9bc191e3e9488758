"""The boot-time files the host path writes (`fabric host apply --persist`, fabric/render/host.py), checked by the
real tools: `systemd-analyze verify` on the units (against this machine's own unit files, copied into a scratch
root beside ours, so ExecStart and the targets resolve) and `netplan generate` in a scratch root (its networkd
output must carry every rail's address and route table). Both tools print problems as warnings and still exit 0,
so their stderr must be empty.

Not checked by a real tool: the `dcb` lines of the FRR target's qos.sh — `dcb` reads the device's DCB attributes
before it parses a command, and no device here (veth, loopback) has them (Operation not supported).
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from fabric.design.derive import derive
from fabric.model.load import load
from fabric.render.host import NETPLAN_PATH, boot_files
from tests.conftest import ROOT, require

CASES = [("inventories", "example"), ("inventories", "h100-400g"), ("tests/fixtures/inventories", "k8s-vlan16")]
SYSTEM_UNITS = next((p for p in (Path("/usr/lib/systemd/system"), Path("/lib/systemd/system")) if p.is_dir()), None)


def _root(tmp_path: Path, where: str, inv: str) -> tuple[Path, object, dict[str, tuple[str, int]]]:
    fabric = derive(load(ROOT / where / inv))
    host = fabric.hosts[sorted(fabric.hosts)[0]]
    files = boot_files(host)
    for rel, (text, mode) in files.items():
        path = tmp_path / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        path.chmod(mode)
    return tmp_path, host, files


@pytest.mark.parametrize(("where", "inv"), CASES, ids=[c[1] for c in CASES])
def test_units_pass_systemd_analyze_verify(tmp_path: Path, where: str, inv: str) -> None:
    require(shutil.which("systemd-analyze") is not None and SYSTEM_UNITS is not None, "systemd (apt install systemd)")
    root, _host, files = _root(tmp_path, where, inv)
    shutil.copytree(SYSTEM_UNITS, root / "usr" / "lib" / "systemd" / "system", symlinks=True)
    units = sorted(rel for rel in files if rel.endswith(".service"))
    assert units
    p = subprocess.run(["systemd-analyze", "verify", f"--root={root}", *(str(root / u) for u in units)],
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 0 and p.stderr == "", p.stderr


@pytest.mark.parametrize(("where", "inv"), CASES[:2], ids=[c[1] for c in CASES[:2]])
def test_netplan_generates_networkd_files_for_every_rail(tmp_path: Path, where: str, inv: str) -> None:
    require(shutil.which("netplan") is not None, "netplan (apt install netplan.io)")
    root, host, files = _root(tmp_path, where, inv)
    assert NETPLAN_PATH in files
    p = subprocess.run(["netplan", "generate", "--root-dir", str(root)], capture_output=True, text=True, timeout=60)
    assert p.returncode == 0 and p.stderr == "", p.stderr
    networks = {f.name: f.read_text() for f in (root / "run" / "systemd" / "network").glob("*.network")}
    for rail in host.rails:  # type: ignore[attr-defined]
        text = networks.get(f"10-netplan-{rail.ifname}.network", "")
        assert f"Address={rail.address}" in text and f"Table={rail.table}" in text, (rail.ifname, sorted(networks))
