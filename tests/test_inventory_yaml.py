"""Issue 24: inventories as engineers write them — anchors, aliases and merge keys load within the hostile-input
bound, problems reached through an alias are located at the anchor's text, and every structural problem names a
file and line."""

from __future__ import annotations

import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from fabric.errors import InputError
from fabric.model.load import load
from tests.hostile.helpers import EXAMPLE, ROOT
from tests.hostile.test_loader import BOMB

HOSTS = """\
x-nic: &nic {vfs: 0}
hosts:
  defaults: &dgx
    gpus: 4
    management_interface: eth0
    mtu: 9000
    nics: &nics
      - {<<: *nic, rail: 1, rdma: mlx5_0, netdev: rail1}
      - {<<: *nic, rail: 2, rdma: mlx5_1, netdev: rail2}
      - {<<: *nic, rail: 3, rdma: mlx5_2, netdev: rail3}
      - {<<: *nic, rail: 4, rdma: mlx5_3, netdev: rail4}
  list:
    - <<: *dgx
      name: gpu-su1-01
      su: 1
    - {<<: *dgx, name: gpu-su1-02, su: 1, gpus: 8}
"""


def _inventory(tmp_path: Path, hosts: str) -> Path:
    inv = tmp_path / "inv"
    shutil.copytree(EXAMPLE, inv)
    (inv / "hosts.yaml").write_text(hosts)
    return inv


def test_anchors_and_merge_keys_load_like_the_written_out_inventory(tmp_path: Path) -> None:
    """`x-` keys hold anchors only (see README); an anchored section and merged host entries are the same
    inventory as one written out."""
    inv = _inventory(tmp_path, HOSTS)
    loaded = load(inv)
    hosts = loaded.inv.hosts
    assert [h.name for h in hosts.entries] == ["gpu-su1-01", "gpu-su1-02"]
    assert [h.gpus for h in hosts.entries] == [4, 8]
    assert hosts.entries[0].nics == hosts.defaults.nics and len(hosts.defaults.nics or []) == 4
    assert load(_inventory(tmp_path / "plain", HOSTS.replace("<<: *nic, ", "vfs: 0, ").replace(
        "x-nic: &nic {vfs: 0}\n", ""))).inv == loaded.inv
    assert loaded.smap.where(("hosts", "list", 0, "mtu")) == (str(inv / "hosts.yaml"), 6)  # the anchor's text
    assert ("hosts", "list", 1, "nics", 3, "netdev") in loaded.smap.lines


def test_a_bad_value_through_an_alias_is_located_at_the_anchor(tmp_path: Path) -> None:
    inv = _inventory(tmp_path, HOSTS.replace("rail: 3, rdma", "rail: 33, rdma"))
    with pytest.raises(InputError) as exc:
        load(inv)
    got = [str(p) for p in exc.value.problems]
    assert got == [f"{inv / 'hosts.yaml'}:10: hosts.{at}.nics[2].rail: expected less than or equal to 16, found 33"
                   for at in ("defaults", "list[0]", "list[1]")]


def test_an_alias_bomb_in_an_inventory_exits_2_within_a_second(tmp_path: Path) -> None:
    inv = _inventory(tmp_path, BOMB)
    t0 = time.monotonic()
    r = subprocess.run([sys.executable, "-c", "from fabric.cli.main import main; main()", "validate", str(inv)],
                       capture_output=True, text=True, timeout=60, cwd=ROOT)
    assert r.returncode == 2 and "hosts.yaml:6: f[1]: expected aliases that build at most" in r.stderr, r.stderr
    assert "Traceback" not in r.stderr
    assert time.monotonic() - t0 < 10  # the interpreter's start; the loader's own second is in tests/hostile
