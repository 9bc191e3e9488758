"""`fabric plan/apply/rollback` onto the SONiC stand-in seeded whole with each brownfield corpus config.

The stand-in (tests/standins/sonic.py) takes the real CONFIG_DB as it is, validates every patch with SONiC's YANG
models (../shared/tools/sonic_yang_check.py) as `config apply-patch` does, and keeps the kernel's neighbour
sysctls and its /etc/sysctl.d. Per corpus config: a switch the inventory describes is planned, applied (CONFIG_DB
patch and the rendered sysctl.conf, persisted and applied in the same transaction), planned again (empty), and
`fabric rollback` gives back `show runningconfiguration all` byte for byte, the kernel values and the sysctl.d
as they were; a switch of another platform is refused at the pre-flight and left exactly as it was. On the
Mellanox-SN2700 dumps (traditional buffer model) the stand-in's buffermgrd answers every change with that hwsku's
pg_profile_lookup.ini, as swss does when it starts: the plan after the apply is still empty.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
import yaml

from tests.conftest import ROOT, require
from tests.nos.sonic.test_brownfield import ADOPT, CORPUS, LOOKUP
from tests.nos.sonic.test_brownfield import _inventory as corpus_inventory
from tests.standins.common import read_json, write_json
from tests.standins.harness import StandinNet, seed, standins

pytestmark = [pytest.mark.root]
FABRIC = str(Path(os.sys.executable).with_name("fabric"))
SWITCH = "leaf-su1-r1"
FAST = ("--settle", "0.5", "--postcheck-timeout", "3", "--confirm-timer", "30")


def _inventory(tmp: Path, platform: str, speed: str | None) -> Path:
    """The corpus test's inventory for `platform`, with the stand-ins' key and known_hosts."""
    dst = corpus_inventory(tmp, platform, speed)
    fab = dst / "fabric.yaml"
    doc = yaml.safe_load(fab.read_text())
    doc["access"] = {"username": "root", "key_file": str(tmp / "id_ed25519"), "known_hosts": str(tmp / "known_hosts")}
    fab.write_text(yaml.safe_dump(doc, sort_keys=False))
    return dst


def _run(net: StandinNet, state: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "FABRIC_STATE": str(state), "COLUMNS": "200", "FABRIC_LAB_STATE": str(state / "no-lab")}
    env.pop("SSH_AUTH_SOCK", None)
    return subprocess.run(net.argv([FABRIC, *args]), capture_output=True, text=True, timeout=300, env=env,
                          cwd=ROOT, stdin=subprocess.DEVNULL)


def _show(d: Path) -> str:
    """`show runningconfiguration all` as the stand-in prints it."""
    env = {**os.environ, "STANDIN_DEV": str(d), "PYTHONPATH": str(ROOT)}
    return subprocess.run([os.sys.executable, "-m", "tests.standins.sonic", "show", "runningconfiguration", "all"],
                          env=env, cwd=ROOT, capture_output=True, text=True, check=True).stdout


def _device(d: Path) -> tuple[str, dict[str, str], list[str]]:
    """What the switch holds: `show runningconfiguration all`, the kernel's neighbour sysctls, its sysctl.d."""
    from tests.standins.sonic import _kernel

    return _show(d), _kernel(d), sorted(p.name for p in (d / "sysctl.d").glob("*"))


@contextmanager
def _seeded(tmp_path: Path, name: str) -> Iterator[tuple[StandinNet, Path, Path]]:
    require(os.geteuid() == 0, "root (network namespaces)")
    require(Path("/usr/sbin/sshd").exists(), "/usr/sbin/sshd (openssh-server)")
    from tests.nos.sonic.test_yang import CHECKER, YANG_PY, _prerequisites

    _prerequisites()
    platform, speed = ADOPT[name] or ("msn2700", None)
    inv = _inventory(tmp_path, platform, speed)
    from fabric.design.derive import derive
    from fabric.model.load import load

    address = derive(load(inv)).switches[SWITCH].management.split("/")[0]
    with standins(tmp_path, {SWITCH: ("sonic", address)}) as net:
        d = net.devices[SWITCH]
        seed(d, "sonic", (CORPUS / name).read_text(), {})  # the corpus config whole, as the switch holds it
        if json.loads((CORPUS / name).read_text())["DEVICE_METADATA"]["localhost"]["hwsku"] == "Mellanox-SN2700":
            shutil.copy(LOOKUP, d / "pg_profile_lookup.ini")  # its buffermgrd (traditional model) answers each change
        write_json(d / "yang.json", {"python": str(YANG_PY), "checker": str(CHECKER)})
        (d / "sysctl.d").mkdir()
        yield net, inv, tmp_path / "state"


def _result(p: subprocess.CompletedProcess[str]) -> dict:
    assert p.stdout.strip().startswith("{"), p.stdout + p.stderr
    return {x["device"]: x for x in json.loads(p.stdout)["devices"]}[SWITCH]


@pytest.mark.parametrize("name", sorted(ADOPT))
def test_corpus_config_applies_plans_empty_and_rolls_back_byte_identical(tmp_path: Path, name: str) -> None:
    with _seeded(tmp_path, name) as (net, inv, state):
        _apply_plan_rollback(net, inv, state, name)


def _apply_plan_rollback(net: StandinNet, inv: Path, state: Path, name: str) -> None:
    d = net.devices[SWITCH]
    before = _device(d)
    plan = _result(_run(net, state, "plan", str(inv), "--limit", SWITCH, "--format", "json"))
    if ADOPT[name] is None:  # another platform: refused with the reason, nothing touched, no checkpoint taken
        assert plan["status"] == "error" and "pre-flight: DEVICE_METADATA|localhost platform" in plan["detail"]
        res = _result(_run(net, state, "apply", str(inv), "--limit", SWITCH, "--yes", "--format", "json", *FAST))
        assert res["status"] == "error" and "pre-flight" in res["detail"]
        assert _device(d) == before and not (d / "checkpoints").exists()
        return
    assert plan["status"] == "changed", plan
    sysctl = plan["sections"]["sysctl.conf"]
    assert any(s.startswith("~ net.ipv4.neigh.default.base_reachable_time_ms = 1800000 → ")  # SONiC's 90-sonic.conf
               for s in sysctl)
    assert any(s.startswith("+ persisted in /etc/sysctl.d/95-roce-fabric.conf: ") for s in sysctl)
    assert "buffer model dynamic" in plan["detail"] or "traditional" in name
    if plan.get("never_rendered_removals"):  # a `3-4` lossless PG replaced by the rendered `3`: refused unless asked
        res = _result(_run(net, state, "apply", str(inv), "--limit", SWITCH, "--yes", "--format", "json", *FAST))
        assert res["status"] == "error" and _device(d) == before, res
    p = _run(net, state, "apply", str(inv), "--limit", SWITCH, "--yes", "--allow-unowned-removal", "--format", "json",
             *FAST)
    assert _result(p)["status"] == "applied", p.stdout + p.stderr
    after = read_json(d / "running.json")
    meta_b = json.loads((CORPUS / name).read_text())["DEVICE_METADATA"]["localhost"]
    assert after["DEVICE_METADATA"]["localhost"]["buffer_model"] == meta_b["buffer_model"]
    kernel = read_json(d / "sysctl.json")
    rendered = (d / "sysctl.d" / "95-roce-fabric.conf").read_text()
    want = {k.strip(): v.strip() for ln in rendered.splitlines() if "=" in ln and not ln.startswith("#")
            for k, _, v in [ln.partition("=")]}
    assert want and all(kernel[k] == v for k, v in want.items() if k in kernel)
    assert kernel["net.ipv4.neigh.default.gc_thresh3"] == want["net.ipv4.neigh.default.gc_thresh3"]
    again = _result(_run(net, state, "plan", str(inv), "--limit", SWITCH, "--format", "json"))
    assert again["status"] == "unchanged", again
    p = _run(net, state, "rollback", str(inv), SWITCH, "--yes", *FAST)
    assert p.returncode == 0, p.stdout + p.stderr
    assert _device(d) == before  # CONFIG_DB byte for byte, the kernel values, /etc/sysctl.d without our file


def test_failed_patch_restores_the_kernel_settings(tmp_path: Path) -> None:
    """The sysctls go first; a patch SONiC refuses puts them back: the device is as it was."""
    with _seeded(tmp_path, "acs-msn2700-t1-dynamic.json") as (net, inv, state):
        d = net.devices[SWITCH]
        before = _device(d)
        (d / "refuse-patch").write_text("")  # the stand-in's apply-patch fails (a fault the test injects)
        res = _result(_run(net, state, "apply", str(inv), "--limit", SWITCH, "--yes", "--allow-unowned-removal",
                           "--format", "json", *FAST))
        assert res["status"] == "rolled-back" and "config apply-patch failed" in res["detail"], res
        assert _device(d) == before
