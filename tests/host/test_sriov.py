"""SR-IOV VFs and the RDMA netns mode in the host agent (fabric.host.sriov), and their boot-time files.

No kernel here has an SR-IOV capable netdev (no mlx5, no netdevsim), so the sysfs side runs against
prepared trees (tests/fixtures/sysfs/prepared.py: `sriov_totalvfs`, `sriov_numvfs`, `virtfn<i>` with the
VF netdev and its `mtu`, ib_core's `netns_mode`) and the kernel's part — VF functions appearing after
`sriov_numvfs` is written — is played by the test (`add_vfs`). The firmware query uses a stand-in
`mlxconfig` printing mstflint's format; the netns mode a stand-in `rdma` keeping it in the tree. VF trust
and spoof-check go through netlink: read back from a real pyroute2 ifinfmsg encoded like the kernel's
IFLA_VFINFO_LIST (the request side is pyroute2's own `vf=` encoding)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.host import FABRIC, ROOT, Nic, build, ipj, namespace, need_root

sys.path.insert(0, str(ROOT / "tests" / "fixtures" / "sysfs"))
from prepared import add_vfs

from fabric.design.derive import derive
from fabric.design.intent import HostIntent
from fabric.host import agent, sriov
from fabric.host.model import AgentOptions
from fabric.model.load import load
from fabric.render.host import (
    MODPROBE_PATH,
    SRIOV_SCRIPT_PATH,
    SRIOV_UNIT_PATH,
    boot_files,
    enabled_units,
    sriov_script,
)

INV = ROOT / "tests" / "fixtures" / "inventories" / "k8s-vlan16"
STANDINS = ROOT / "tests" / "fixtures" / "sysfs"
MLXCONFIG, RDMA = str(STANDINS / "mlxconfig"), str(STANDINS / "rdma")


def vlan16(host: str = "gpu-su1-01") -> HostIntent:
    return derive(load(INV)).hosts[host]


def untagged(intent: HostIntent) -> HostIntent:
    """The intent with every rail untagged (this kernel has no 802.1Q for the netns test)."""
    rails = [r.model_copy(update={"vlan": None, "ifname": r.netdev}) for r in intent.rails]
    names = {r.ifname: n.ifname for r, n in zip(intent.rails, rails, strict=True)}
    sysctls = {}
    for k, v in intent.sysctls.items():
        for old, new in names.items():
            k = k.replace(f"/conf/{old}/", f"/conf/{new}/")
        sysctls[k] = v
    return intent.model_copy(update={"rails": rails, "sysctls": sysctls})


def tree(tmp_path: Path, intent: HostIntent, *, numvfs: int = 0, totalvfs: int = 64, netns_mode: str = "Y") -> Path:
    return build(tmp_path / "sys", [Nic(r.netdev, r.rdma, r.address.split("/")[0], r.ifname, totalvfs=totalvfs,
                                        numvfs=numvfs) for r in intent.rails], netns_mode=netns_mode)


@pytest.fixture
def standins(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    state = tmp_path / "mlxconfig.json"
    state.write_text(json.dumps({"SRIOV_EN": 1, "NUM_OF_VFS": 16}))
    monkeypatch.setenv("MLXCONFIG_STATE", str(state))
    monkeypatch.setenv("MLXCONFIG_LOG", str(tmp_path / "mlxconfig.log"))
    monkeypatch.setenv("RDMA_SYSFS", str(tmp_path / "sys"))
    monkeypatch.setattr(sriov, "VF_WAIT_S", 0.0)
    return state


def run_phases(intent: HostIntent, sysfs: Path, *, apply: bool) -> list:
    """The SR-IOV and netns phases alone, as the agent runs them (each planned after the previous ran)."""
    from pyroute2 import IPRoute

    items = []
    with IPRoute() as ipr:
        phases = [p for r in intent.rails for p in sriov.rail_steps(intent, r, sysfs, ipr, sriov.Mlxconfig(MLXCONFIG),
                                                                     apply=apply)]
        phases.append(lambda: sriov.netns_steps(intent, sysfs, RDMA))
        for phase in phases:
            for step in phase():
                if apply and step.action:
                    step.action()
                items.append(step.item)
    return items


def changed(items: list) -> set[tuple[str, str, str]]:
    return {(i.section, i.target, i.name) for i in items if i.status == "changed"}


def test_cli_plan_on_prepared_tree_shows_vfs_mtu_trust_and_netns_mode(tmp_path: Path, standins: Path) -> None:
    """`fabric host plan` (read-only, so in this namespace) on a tree with no VFs and a shared subsystem."""
    intent = vlan16()
    sysfs = tree(tmp_path, intent)
    path = tmp_path / "host.json"
    path.write_text(intent.model_dump_json())
    run = subprocess.run([FABRIC, "host", "plan", "--intent", str(path), "--sysfs-root", str(sysfs),
                          "--mlxconfig", MLXCONFIG, "--rdma", RDMA, "--format", "json"],
                         capture_output=True, text=True, env={**os.environ, "PATH": "/usr/bin:/bin"})
    items = json.loads(run.stdout)["items"]
    by = {(i["section"], i["target"], i["name"]): i for i in items}
    for r in intent.rails:
        create = by[("sriov", r.netdev, "sriov_numvfs")]
        assert (create["status"], create["op"], create["current"], create["desired"]) == ("changed", "create", "0",
                                                                                          "16")
        assert by[("sriov", r.netdev, "firmware SRIOV_EN, NUM_OF_VFS")]["status"] == "unchanged"
        mtu = by[("sriov", f"{r.netdev} vf 0-15", "mtu")]
        assert (mtu["status"], mtu["desired"], mtu["reason"]) == ("changed", "9000", "after the VFs are created")
        trust = by[("sriov", f"{r.netdev} vf 0-15", "trust, spoofchk")]
        assert trust["status"] == "changed" and trust["desired"] == "trust on, spoofchk off"
    netns = by[("rdma", "rdma system", "netns mode")]
    assert (netns["status"], netns["current"], netns["desired"]) == ("changed", "shared", "exclusive")
    assert (sysfs / "class/net/enp26s0np0/device/sriov_numvfs").read_text() == "0\n"  # a plan changes nothing
    text = subprocess.run([FABRIC, "host", "plan", "--intent", str(path), "--sysfs-root", str(sysfs),
                           "--mlxconfig", MLXCONFIG, "--rdma", RDMA], capture_output=True, text=True).stdout
    assert "+ sriov    enp26s0np0     sriov_numvfs: 16" in text and "netns mode: shared -> exclusive" in text


def test_apply_creates_vfs_then_sets_them_and_a_second_apply_changes_nothing(tmp_path: Path,
                                                                            standins: Path) -> None:
    intent = vlan16()
    sysfs = tree(tmp_path, intent)
    first = run_phases(intent, sysfs, apply=True)
    assert {(s, t) for s, t, n in changed(first) if n == "sriov_numvfs"} == {("sriov", r.netdev) for r in intent.rails}
    assert (sysfs / "class/net/enp26s0np0/device/sriov_numvfs").read_text() == "16\n"
    assert (sysfs / "module/ib_core/parameters/netns_mode").read_text().strip() == "N"
    skipped = [i for i in first if i.status == "skipped"]
    assert {i.name for i in skipped} == {"mtu", "trust, spoofchk"}  # the kernel has not probed the VFs yet
    assert all("has no netdev" in i.reason or "netlink reports no VF" in i.reason for i in skipped)
    for r in intent.rails:  # the kernel probes the VFs
        add_vfs(sysfs, r.netdev, r.vfs)
    second = run_phases(intent, sysfs, apply=True)
    assert changed(second) == {("sriov", f"{r.netdev} vf {i} ({r.netdev}v{i})", "mtu")
                               for r in intent.rails for i in range(16)}
    assert (sysfs / "class/net/enp26s0np0v15/mtu").read_text().strip() == "9000"
    trust = [i for i in second if i.name == "trust, spoofchk"]
    assert len(trust) == 128 and all(i.status == "skipped" and "netlink reports no VF" in i.reason for i in trust)
    third = run_phases(intent, sysfs, apply=True)
    assert not changed(third) and not [i for i in third if i.status == "failed"]


def test_firmware_limit_and_a_different_vf_count_fail_with_the_fix(tmp_path: Path, standins: Path) -> None:
    intent = vlan16()
    sysfs = tree(tmp_path, intent, numvfs=8)
    standins.write_text(json.dumps({"SRIOV_EN": 1, "NUM_OF_VFS": 8}))
    items = run_phases(intent, sysfs, apply=True)
    fw = next(i for i in items if i.name.startswith("firmware") and i.target == "enp26s0np0")
    assert fw.status == "failed" and fw.current == "on, 8"
    assert "the firmware offers 8 VFs, 16 wanted: mlxconfig -d 0000:3b:00.0 set SRIOV_EN=1 NUM_OF_VFS=16" in fw.reason
    count = next(i for i in items if i.name == "sriov_numvfs" and i.target == "enp26s0np0")
    assert count.status == "failed" and "drain the node" in count.reason
    assert (sysfs / "class/net/enp26s0np0/device/sriov_numvfs").read_text() == "8\n"  # never re-created
    assert not [i for i in items if i.name == "mtu"]  # nothing is set on VFs that are about to change
    standins.write_text(json.dumps({"SRIOV_EN": 1, "NUM_OF_VFS": 8, "NEXT_NUM_OF_VFS": 16}))
    fw = next(i for i in run_phases(intent, sysfs, apply=False) if i.name.startswith("firmware"))
    assert "NUM_OF_VFS is 16 for the next boot: reboot" in fw.reason
    assert "-e q SRIOV_EN NUM_OF_VFS" in (tmp_path / "mlxconfig.log").read_text()


def test_kernel_limit_pf_without_sriov_and_unmanaged_vfs(tmp_path: Path, standins: Path) -> None:
    intent = vlan16()
    sysfs = tree(tmp_path, intent, totalvfs=8)
    total = next(i for i in run_phases(intent, sysfs, apply=False) if i.name == "sriov_totalvfs")
    assert total.status == "failed" and "the kernel offers 8 VFs" in total.reason
    plain = build(tmp_path / "plain", [Nic(r.netdev, r.rdma, "10.0.0.1") for r in intent.rails])
    item = next(i for i in run_phases(intent, plain, apply=False) if i.name == "sriov_numvfs")
    assert item.status == "failed" and "not SR-IOV capable here" in item.reason
    pf = derive(load(ROOT / "inventories" / "h100-400g")).hosts["gpu-su1-01"]  # vfs: 0 (PF pass-through)
    sysfs = tree(tmp_path / "pf", pf, numvfs=4)
    items = run_phases(pf, sysfs, apply=True)
    assert next(i.warning for i in items if i.warning).startswith("enp24s0np0 has 4 VFs but the inventory says vfs: 0")
    assert not changed(items) and (sysfs / "class/net/enp24s0np0/device/sriov_numvfs").read_text() == "4\n"
    assert pf.rdma_netns is None and not [i for i in items if i.section == "rdma"]  # no VFs: mode left alone


def test_netns_mode_refused_at_runtime_says_it_applies_at_boot(tmp_path: Path, standins: Path,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    intent = vlan16()
    sysfs = tree(tmp_path, intent)
    monkeypatch.setenv("RDMA_BUSY", "1")
    step = sriov.netns_steps(intent, sysfs, RDMA)[0]
    with pytest.raises(RuntimeError, match=r"applies at the next boot from modprobe\.d"):
        step.action()  # type: ignore[misc]
    assert sriov.netns_mode(sysfs) == "shared"
    assert sriov.netns_steps(intent, tmp_path / "no-ib", RDMA)[0].item.reason.startswith("ib_core not loaded")
    assert boot_files(intent)[MODPROBE_PATH][0].endswith("options ib_core netns_mode=0\n")


def test_trust_and_spoofchk_are_read_from_and_set_through_netlink(tmp_path: Path) -> None:
    """The kernel's IFLA_VFINFO_LIST as pyroute2 decodes it (a real ifinfmsg, encoded then decoded), and the
    `vf=` request the setter sends (pyroute2's own encoder, decoded back to the IFLA_VF_* attributes)."""
    from pyroute2.netlink.rtnl.ifinfmsg import ifinfmsg
    from pyroute2.requests.link import LinkIPRouteFilter

    intent = vlan16()
    rail = intent.rails[0].model_copy(update={"vfs": 2})
    msg = ifinfmsg()
    msg["attrs"] = [("IFLA_IFNAME", rail.netdev), ("IFLA_VFINFO_LIST", {"attrs": [
        ("IFLA_VF_INFO", {"attrs": [("IFLA_VF_TRUST", {"vf": 0, "trust": 1}),
                                    ("IFLA_VF_SPOOFCHK", {"vf": 0, "spoofchk": 0})]}),
        ("IFLA_VF_INFO", {"attrs": [("IFLA_VF_TRUST", {"vf": 1, "trust": 0}),
                                    ("IFLA_VF_SPOOFCHK", {"vf": 1, "spoofchk": 1})]})]})]
    msg.encode()
    decoded = ifinfmsg(msg.data)
    decoded.decode()
    sent: list[dict] = []

    class Ipr:  # the netlink socket: link lookup, get (with RTEXT_FILTER_VF) and set
        def link_lookup(self, ifname: str) -> list[int]:
            return [7] if ifname == rail.netdev else []

        def link(self, cmd: str, **kw: object) -> list:
            if cmd == "get":
                assert kw == {"index": 7, "ext_mask": 1}
                return [decoded]
            sent.append(kw)
            return []

    sysfs = tree(tmp_path, intent, numvfs=2)
    steps = [s for s in sriov.vf_steps(rail, sysfs, Ipr(), pending=False, wait=0) if s.item.name != "mtu"]
    assert [(s.item.status, s.item.current) for s in steps] == [("unchanged", "trust on, spoofchk off"),
                                                                 ("changed", "trust off, spoofchk on")]
    steps[1].action()  # type: ignore[misc]
    assert sent == [{"index": 7, "vf": {"vf": 1, "trust": 1, "spoofchk": 0}}]
    request = LinkIPRouteFilter("set").set_vf({}, {"vf": 1, "trust": 1, "spoofchk": 0})
    attrs = {a[0]: a[1] for info in request["IFLA_VFINFO_LIST"]["attrs"] for a in info[1]["attrs"]}
    assert attrs == {"IFLA_VF_TRUST": {"vf": 1, "trust": 1}, "IFLA_VF_SPOOFCHK": {"vf": 1, "spoofchk": 0}}


def test_boot_files_create_the_vfs_and_enable_the_unit(tmp_path: Path) -> None:
    intent = vlan16()
    files = boot_files(intent)
    assert {SRIOV_SCRIPT_PATH, SRIOV_UNIT_PATH, MODPROBE_PATH} <= set(files)
    assert {p for p in files if p.startswith("etc/cni/multus/net.d/")} == {
        f"etc/cni/multus/net.d/rail{r}.conflist" for r in range(1, 9)}
    assert "Before=network-pre.target kubelet.service" in files[SRIOV_UNIT_PATH][0]
    assert set(enabled_units(intent).values()) == {"/etc/systemd/system/roce-qos.service",
                                                    "/etc/systemd/system/roce-sriov.service"}
    script = tmp_path / "roce-sriov.sh"
    script.write_text(sriov_script(intent))
    assert subprocess.run(["sh", "-n", str(script)]).returncode == 0
    sysfs = tree(tmp_path, intent)
    log, ip = tmp_path / "ip.log", tmp_path / "ip"
    ip.write_text(f'#!/bin/sh\necho "$*" >> {log}\n')
    ip.chmod(0o755)
    for r in intent.rails:  # the VFs the kernel makes once sriov_numvfs is written
        add_vfs(sysfs, r.netdev, r.vfs)
        (sysfs / "class/net" / r.netdev / "device/sriov_numvfs").write_text("0\n")
    run = subprocess.run(["sh", str(script)], env={"SYSFS": str(sysfs), "IP": str(ip), "PATH": "/usr/bin:/bin"},
                         capture_output=True, text=True)
    assert run.returncode == 0, run.stdout + run.stderr
    assert (sysfs / "class/net/enp220s0np0/device/sriov_numvfs").read_text().strip() == "16"
    calls = log.read_text().splitlines()
    assert "link set dev enp26s0np0 vf 15 trust on spoofchk off" in calls
    assert "link set dev enp26s0np0v15 mtu 9000" in calls and len(calls) == 8 * 16 * 2
    (sysfs / "class/net/enp26s0np0/device/sriov_numvfs").write_text("4\n")
    run = subprocess.run(["sh", str(script)], env={"SYSFS": str(sysfs), "IP": str(ip), "PATH": "/usr/bin:/bin"},
                         capture_output=True, text=True)
    assert run.returncode == 1 and "refused: enp26s0np0 has 4 VFs, 16 wanted" in run.stdout


@pytest.mark.root
def test_agent_in_a_namespace_second_apply_changes_nothing(tmp_path: Path, standins: Path) -> None:
    """The whole agent: rails on veths named like the PFs (in a namespace this test creates), VFs that exist
    at MTU 1500 (as after a reboot without the unit), ib_core shared; apply, then nothing to change."""
    need_root()
    intent = untagged(vlan16())
    sysfs = tree(tmp_path, intent, numvfs=16)
    with namespace(tuple(r.netdev for r in intent.rails)) as ns:
        plan = agent.plan(intent, AgentOptions(netns=ns, sysfs_root=sysfs, mlxconfig=MLXCONFIG, rdma_tool=RDMA))
        assert ("rdma", "rdma system", "netns mode") in changed(plan.items)
        assert sum(1 for s, _t, n in changed(plan.items) if s == "sriov" and n == "mtu") == 128
        result = agent.apply(intent, AgentOptions(netns=ns, sysfs_root=sysfs, mlxconfig=MLXCONFIG, rdma_tool=RDMA))
        assert result.counts.failed == 0, [i for i in result.items if i.status == "failed"]
        assert ipj(ns, "link", "show", "enp26s0np0")[0]["mtu"] == 9000  # the PF before its VFs
        again = agent.apply(intent, AgentOptions(netns=ns, sysfs_root=sysfs, mlxconfig=MLXCONFIG, rdma_tool=RDMA))
        assert again.counts.changed == 0 and again.counts.failed == 0
