"""Inventories as engineers write them — anchors, aliases and merge keys load within the hostile-input
bound, problems reached through an alias are located at the anchor's text, and every structural problem names a
file and line."""

from __future__ import annotations

import re
import resource
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from fabric.errors import InputError
from fabric.model.load import load
from tests.hostile.helpers import EXAMPLE, ROOT
from tests.hostile.test_loader import BOMB
from tests.support import docs
from tests.support.nos import retarget

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
    """`x-` keys hold anchors only (see docs/inventory.md); an anchored section and merged host entries are the same
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
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    r = subprocess.run([sys.executable, "-c", "from fabric.cli.main import main; main()", "validate", str(inv)],
                       capture_output=True, text=True, timeout=60, cwd=ROOT)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    assert r.returncode == 2 and "hosts.yaml:6: f[1]: expected aliases that build at most" in r.stderr, r.stderr
    assert "Traceback" not in r.stderr
    # CPU seconds of the process, not wall time (12 s wall on a loaded machine): the interpreter's start and the
    # refusal; the bomb built would take minutes. The loader's own second is in tests/hostile
    assert (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime) < 10


@pytest.mark.parametrize("preset", ["nvidia-roce", "sonic-azure"])
@pytest.mark.parametrize("shipped", ["example", "sonic-example"])
def test_every_shipped_preset_passes_our_own_qos_lint(tmp_path: Path, preset: str, shipped: str) -> None:
    from fabric.lint.context import Context
    from fabric.lint.core import Severity
    from fabric.lint.engine import run

    inv = tmp_path / "inv"
    shutil.copytree(ROOT / "inventories" / shipped, inv)
    (inv / "qos.yaml").write_text(f"qos:\n  preset: {preset}\n")
    result = run(Context(load(inv)), select=["RF1"])
    assert not result.failed(Severity.warning), [f"{f.rule} {f.message}" for f in result.active()]


def test_the_docs_crd_check_runs_as_written(tmp_path: Path) -> None:
    """The docs' k8s_crd_check example, from a checkout with the reference folder beside it, after the
    docs' own `--render-only` command: the same command line, the same output."""
    import os

    from tests.conftest import require
    from tests.render.test_k8s import CHECKER, SHARED

    require(CHECKER.is_file(), f"{CHECKER} (the shared folder beside the checkout)")
    readme = docs.page("kubernetes.md")
    render = re.search(r"^(fabric accept \S+ --launcher k8s .*--render-only -o k8s-accept/)", readme, re.M)
    check = re.search(r"^\$ (\.venv/bin/python \.\./shared/tools/k8s_crd_check\.py (?:.*\\\n)*.*)\n(.*)\n", readme,
                      re.M)
    assert render and check
    checkout = tmp_path / "checkout"
    checkout.mkdir()
    (tmp_path / "shared").symlink_to(SHARED)
    for name in ("tests", ".venv"):
        (checkout / name).symlink_to(ROOT / name if name == "tests" else Path(sys.executable).parents[1])
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}"}
    for command in (render[1], check[1].replace("\\\n", " ")):
        r = subprocess.run(["sh", "-c", command], cwd=checkout, capture_output=True, text=True, timeout=120, env=env)
        assert r.returncode == 0, (command, r.stdout, r.stderr)
    assert r.stdout.strip() == check[2].strip()


# -- every structural problem has a file and line --------------------------------------------------------
LOCATED = [
    ("fabric.yaml", "  rails: 4\n", "", "fabric.yaml:6: topology.rails: expected this required key, found nothing"),
    ("fabric.yaml", "  rails: 4\n", "  1.5: 4\n  rails: 4\n",
     "fabric.yaml:7: topology.1.5: expected a key that is text (a name), found 1.5"),
    ("fabric.yaml", "  rails: 4\n", "  .nan: 4\n  rails: 4\n",
     "fabric.yaml:7: topology.nan: expected a key that is text (a name), found nan"),
    ("fabric.yaml", "fabric:\n", ".nan:\n", "fabric.yaml:2: nan: expected a key that is text (a name), found nan"),
    ("fabric.yaml", "fabric:\n", "1:\n",
     "fabric.yaml:2: fabric: expected this required section, found nothing (an unknown section 1 here instead)"),
    ("fabric.yaml", "topology:\n", "topo:\n",
     "fabric.yaml:6: topology: expected this required section, found nothing (an unknown section 'topo' here"),
    ("hosts.yaml", "{rail: 1, ", "{1: 1, ", "hosts.yaml:7: hosts.defaults.nics[0][1]: expected a key that is text"),
    ("hosts.yaml", "{rail: 1, ", "{", "hosts.yaml:7: hosts.defaults.nics[0].rail: expected this required key"),
    ("addressing.yaml", "  rails: 10.100.0.0/16\n", "",
     "addressing.yaml:1: addressing.rails: expected this required key, found nothing"),
    # a required section no file has: in the file named after it, in the one file that holds
    # nothing, or between the sections before and after it where one file holds both
    ("addressing.yaml", "addressing:\n", "x-addressing:\n", "addressing.yaml:1: addressing: expected this "
     "required section, found nothing (this file holds no addressing: section)"),
    ("fabric.yaml", "roles:\n  spine: {platform: linux-frr, target: frr}\n  leaf: {platform: linux-frr, target: "
     "frr}\n", "", "fabric.yaml:14: roles: expected this required section, found nothing (it belongs before "
     "cabling:)"),
]


@pytest.mark.parametrize(("file", "old", "new", "want"), LOCATED, ids=[w.split(": ")[0] + w.split(":")[-2][-12:]
                                                                         for *_, w in LOCATED])
def test_missing_keys_and_non_text_keys_name_file_and_line(tmp_path: Path, file: str, old: str, new: str,
                                                         want: str) -> None:
    inv = tmp_path / "inv"
    shutil.copytree(EXAMPLE, inv)
    text = (inv / file).read_text()
    assert old in text
    (inv / file).write_text(text.replace(old, new, 1))
    with pytest.raises(InputError) as exc:
        load(inv)
    got = [str(p) for p in exc.value.problems]
    assert any(g.startswith(f"{inv}/" + want.format(inv=inv)) for g in got), got
    assert all(p.line for p in exc.value.problems), got


def test_sections_missing_from_an_emptied_file_are_located_at_it(tmp_path: Path) -> None:
    """fabric.yaml emptied: fabric, topology and roles are missing, and that file is where they were."""
    inv = tmp_path / "inv"
    shutil.copytree(EXAMPLE, inv)
    (inv / "fabric.yaml").write_text("# nothing yet\n")
    with pytest.raises(InputError) as exc:
        load(inv)
    assert [str(p) for p in exc.value.problems] == [
        f"{inv}/fabric.yaml:1: {s}: expected this required section, found nothing (this file holds no fabric: "
        "section)" if s == "fabric" else f"{inv}/fabric.yaml:1: {s}: expected this required section, found nothing "
        "(this file holds no section)" for s in ("fabric", "topology", "roles")]


# -- values by meaning per NOS (RF111, explain effective) --------------------------------------------------
def _retargeted(tmp_path: Path, shipped: str, target: str, platform: str, qos: str = "") -> Path:
    inv = retarget(shipped, target, tmp_path / f"{shipped}-{target}", platform=platform)
    if qos:
        (inv / "qos.yaml").write_text(qos)
    return inv


def test_adaptive_routing_on_a_nos_that_renders_none_is_rf111_and_waivable(tmp_path: Path) -> None:
    """h100-400g turns adaptive routing on (NVUE on SN5600); on SONiC the same inventory runs without it."""
    from fabric.lint.context import Context
    from fabric.lint.engine import run

    inv = _retargeted(tmp_path, "h100-400g", "sonic", "sn5600")
    found = run(Context(load(inv)), select=["RF111"]).active()
    assert [(f.rule, f.severity.value, f.item, f.line) for f in found] == [
        ("RF111", "warning", "switching.adaptive_routing", 4)]
    assert found[0].message.startswith("switching.adaptive_routing: requested on (32 ports), SONiC (community, "
                                       "frrcfgd) runs off (SONiC (community, frrcfgd) renders no adaptive routing)")
    (inv / "lint.yaml").write_text("lint:\n  waive:\n    - {rule: RF111, objects: ['*'], reason: AR comes later}\n")
    assert run(Context(load(inv)), select=["RF111"]).active() == []


def test_explain_shows_requested_and_effective_per_device(tmp_path: Path) -> None:
    from fabric.design.derive import derive
    from fabric.explain import explain

    inv = _retargeted(tmp_path, "h100-400g", "nvue", "sn5600", "qos:\n  preset: nvidia-roce\n"
                      "  pfc_watchdog: {detection: 200ms, poll_interval: 100ms, robustness: 3}\n")
    loaded = load(inv)
    leaf = derive(loaded).switches["leaf-su1-r1"]
    rows = {p: (v, o) for p, v, o in explain(loaded, leaf, "effective")}
    assert rows["effective.qos.pfc_watchdog.detection"] == (
        "300 ms", f"requested 200 ms (inventory ({inv}/qos.yaml:3)); NVUE detects after poll_interval × "
        "robustness = 100 ms × 3")
    assert rows["effective.qos.pfc_watchdog.robustness"][0] == "3"
    assert rows["effective.switching.mtu"][0] == "9216"


def test_explain_shows_the_watchdog_a_nos_without_one_drops() -> None:
    """inventories/example runs on Linux/FRR, which has no PFC watchdog: the preset's is requested, none runs
    (explain says so; lint is silent, since the inventory does not spell it out)."""
    from fabric.design.derive import derive
    from fabric.explain import explain
    from fabric.lint.context import Context
    from fabric.lint.engine import run

    loaded = load(EXAMPLE)
    rows = {p: (v, o) for p, v, o in explain(loaded, derive(loaded).switches["leaf-su1-r1"], "effective")}
    assert rows["effective.qos.pfc_watchdog"] == (
        "off", "requested on (detection 200 ms) (preset or default); no PFC watchdog on this NOS (iproute2 dcb has "
        "none): nothing on the switch breaks a PFC storm")
    assert run(Context(loaded), select=["RF111"]).active() == []
