"""The single-host agent against real kernel state: veth pairs named like rail NICs inside network
namespaces the test creates (pyroute2 → kernel, asserted with `ip -j`). mlx5-only parts use a prepared
sysfs tree (tests/fixtures/sysfs/prepared.py, documented file names) and a stand-in `mlnx_qos` that
keeps state in a file and prints the documented format. This kernel has no 802.1Q: the tagged-rail
path is asserted through the planned changes and the per-item failure of the VLAN create."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from fabric.design.intent import HostIntent
from fabric.host import agent
from fabric.host.model import AgentOptions
from tests.support.host import (
    FABRIC,
    MLNX_QOS,
    Nic,
    build,
    example_intent,
    ip,
    ipj,
    namespace,
    need_root,
    sysctl,
    tagged,
)
from tests.support.paths import ROOT

pytestmark = pytest.mark.root


@pytest.fixture(autouse=True)
def _root() -> None:
    need_root()


def _routes(ns: str, table: int) -> set[tuple[str, str | None, str | None]]:
    return {(r["dst"], r.get("gateway"), r.get("prefsrc")) for r in ipj(ns, "route", "show", "table", str(table))}


def _rules(ns: str) -> set[tuple[int, str | None, str]]:
    return {(r["priority"], r.get("src"), str(r["table"])) for r in ipj(ns, "rule", "show")}


def test_apply_configures_rails_then_second_apply_changes_nothing() -> None:
    intent = example_intent()
    with namespace() as ns:
        result = agent.apply(intent, AgentOptions(netns=ns))
        assert result.counts.failed == 0 and result.counts.changed > 0
        for rail in intent.rails:
            link = ipj(ns, "addr", "show", "dev", rail.ifname)[0]
            assert link["mtu"] == 9000 and "UP" in link["flags"]
            assert [f"{a['local']}/{a['prefixlen']}" for a in link["addr_info"] if a["family"] == "inet"] == [
                rail.address
            ]
            ipaddr = rail.address.split("/")[0]
            assert _routes(ns, rail.table) == {
                (rail.subnet.split("/")[0] if rail.subnet.endswith("/32") else rail.subnet, None, ipaddr),
                ("10.100.0.0/16", rail.gateway, None),
            }
            assert (rail.rule_priority, ipaddr, str(rail.table)) in _rules(ns)
        for key, value in intent.sysctls.items():
            assert sysctl(ns, key) == value
        again = agent.apply(intent, AgentOptions(netns=ns))
        assert again.counts.changed == 0 and again.counts.failed == 0
        assert agent.plan(intent, AgentOptions(netns=ns)).counts.changed == 0


def test_plan_changes_nothing_and_lists_the_diff() -> None:
    intent = example_intent()
    with namespace() as ns:
        before = (ipj(ns, "addr"), _rules(ns), sysctl(ns, "net/ipv4/conf/rail1/arp_ignore"))
        plan = agent.plan(intent, AgentOptions(netns=ns))
        after = (ipj(ns, "addr"), _rules(ns), sysctl(ns, "net/ipv4/conf/rail1/arp_ignore"))
        assert before == after
        changes = {(i.section, i.target, i.name) for i in plan.items if i.status == "changed"}
        assert ("address", "rail1", "10.100.0.2/24") in changes
        assert ("route", "table 101", "10.100.0.0/16") in changes
        assert ("rule", "rail1", "pref 1001 from 10.100.0.2 lookup 101") in changes
        assert ("link", "rail1", "mtu") in changes
        assert ("sysctl", "net/ipv4/conf/rail1/arp_ignore", "value") in changes


def test_drift_is_removed_and_unrelated_state_is_left_alone() -> None:
    intent = example_intent()
    with namespace((*[f"rail{i}" for i in range(1, 5)], "eth0")) as ns:
        ip("-n", ns, "addr", "add", "198.18.0.7/24", "dev", "eth0")
        ip("-n", ns, "link", "set", "eth0", "up")
        agent.apply(intent, AgentOptions(netns=ns))
        ip("-n", ns, "addr", "add", "10.9.9.9/24", "dev", "rail1")
        ip("-n", ns, "route", "add", "10.77.0.0/16", "via", "10.100.0.1", "dev", "rail1", "table", "101")
        ip("-n", ns, "rule", "add", "from", "10.100.0.2", "lookup", "102", "priority", "900")
        ip("-n", ns, "link", "set", "rail2", "mtu", "1500")
        ip("-n", ns, "route", "add", "10.88.0.0/16", "via", "198.18.0.1", "dev", "eth0")
        plan = agent.plan(intent, AgentOptions(netns=ns))
        changed = {(i.op, i.section, i.name) for i in plan.items if i.status == "changed"}
        assert changed == {
            ("remove", "address", "10.9.9.9/24"),
            ("remove", "route", "10.77.0.0/16"),
            ("remove", "rule", "pref 900 from 10.100.0.2 lookup 102"),
            ("set", "link", "mtu"),
        }
        result = agent.apply(intent, AgentOptions(netns=ns))
        assert result.counts.changed == 4 and result.counts.failed == 0
        assert [
            a["local"] for a in ipj(ns, "addr", "show", "dev", "rail1")[0]["addr_info"] if a["family"] == "inet"
        ] == ["10.100.0.2"]
        assert "10.77.0.0/16" not in {d for d, _, _ in _routes(ns, 101)}
        assert (900, "10.100.0.2", "102") not in _rules(ns)
        assert ipj(ns, "link", "show", "rail2")[0]["mtu"] == 9000
        assert any(r["dst"] == "10.88.0.0/16" for r in ipj(ns, "route", "show"))  # main table untouched
        assert ipj(ns, "addr", "show", "dev", "eth0")[0]["addr_info"][0]["local"] == "198.18.0.7"
        assert agent.apply(intent, AgentOptions(netns=ns)).counts.changed == 0


def test_missing_rail_nic_fails_that_rail_only() -> None:
    intent = example_intent()
    with namespace(("rail1", "rail2", "rail3")) as ns:
        result = agent.apply(intent, AgentOptions(netns=ns))
        failed = [i for i in result.items if i.status == "failed"]
        assert {(i.target, i.name) for i in failed} == {
            ("rail4", "exists"),
            *{(k, "value") for k in intent.sysctls if "/rail4/" in k},
        }
        assert "no such interface rail4" in failed[0].reason
        assert _routes(ns, 103) and not _routes(ns, 104)
        assert not result.ok()


def test_tagged_rail_plans_vlan_subinterface_and_reports_kernel_refusal() -> None:
    intent = tagged(example_intent(), rail=1, vlan=1001)
    with namespace() as ns:
        plan = agent.plan(intent, AgentOptions(netns=ns))
        by = {(i.section, i.target, i.name): i for i in plan.items}
        create = by[("link", "rail1.1001", "vlan")]
        assert (create.status, create.op, create.desired) == ("changed", "create", "vlan 1001 on rail1")
        assert by[("link", "rail1", "mtu")].desired == "9000"  # the parent NIC carries the MTU too
        assert by[("address", "rail1.1001", "10.100.0.2/24")].status == "changed"
        assert by[("route", "table 101", "10.100.0.0/24")].desired == "dev rail1.1001 src 10.100.0.2 scope link"
        assert by[("route", "table 101", "10.100.0.0/16")].desired == "via 10.100.0.1 dev rail1.1001"
        assert by[("rule", "rail1.1001", "pref 1001 from 10.100.0.2 lookup 101")].status == "changed"
        sysctl_item = by[("sysctl", "net/ipv4/conf/rail1.1001/arp_ignore", "value")]
        assert sysctl_item.status == "changed" and "after rail1.1001 is created" in sysctl_item.reason
        assert not ip("-n", ns, "link", "show", "rail1.1001", check=False)
        result = agent.apply(intent, AgentOptions(netns=ns))
        vlan = next(i for i in result.items if i.name == "vlan")
        if vlan.status == "failed":  # this machine: no 802.1Q in the kernel
            assert "802.1Q" in vlan.reason
            dependent = [i for i in result.items if i.section == "route" and i.target == "table 101"]
            dependent += [i for i in result.items if i.section == "address" and i.target == "rail1.1001"]
            assert dependent and all(i.status == "failed" for i in dependent)
            assert all("no such interface rail1.1001" in i.reason for i in dependent)
        else:
            assert ipj(ns, "-d", "link", "show", "rail1.1001")[0]["linkinfo"]["info_data"]["id"] == 1001
        assert _routes(ns, 102) and ipj(ns, "link", "show", "rail1")[0]["mtu"] == 9000  # the rest applied


def _tree(tmp_path: Path, intent: HostIntent, **kw: str) -> Path:
    return build(
        tmp_path / "sys",
        [Nic(r.netdev, r.rdma, r.address.split("/")[0], r.ifname) for r in intent.rails],
        **kw,
    )


def test_nic_qos_dcqcn_roce_tos_and_gid_on_prepared_tree(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    intent = example_intent()
    intent = intent.model_copy(update={"dcqcn": intent.dcqcn.model_copy(update={"cc_params": {"rp_ai_rate": 10}})})
    sysfs = _tree(tmp_path, intent)
    state, log = tmp_path / "qos.json", tmp_path / "qos.log"
    monkeypatch.setenv("MLNX_QOS_STATE", str(state))
    monkeypatch.setenv("MLNX_QOS_LOG", str(log))
    with namespace() as ns:
        result = agent.apply(intent, AgentOptions(netns=ns, sysfs_root=sysfs, mlnx_qos=str(MLNX_QOS)))
        assert result.counts.failed == 0 and result.counts.skipped == 0, [
            i for i in result.items if i.status in ("failed", "skipped")
        ]
        qos = json.loads(state.read_text())
        for rail in intent.rails:
            st = qos[rail.netdev]
            assert st["trust"] == "dscp" and st["pfc"] == [0, 0, 0, 1, 0, 0, 0, 0]
            assert st["dscp2prio"] == {"26": 3, "48": 6} and st["prio_tc"] == intent.nic_qos.prio_tc
            assert st["tsa"][6] == "strict" and st["tcbw"] == [50, 0, 0, 50, 0, 0, 0, 0] and st["cable_len"] == 5
            ib = sysfs / "class/infiniband" / rail.rdma
            assert (ib / "tc/1/traffic_class").read_text().strip() == "106"
            assert (
                sysfs / "kernel/config/rdma_cm" / rail.rdma / "ports/1/default_roce_tos"
            ).read_text().strip() == "106"
            ecn = sysfs / "class/net" / rail.netdev / "ecn"
            assert (ecn / "roce_np/enable/3").read_text().strip() == "1"
            assert (ecn / "roce_rp/enable/3").read_text().strip() == "1"
            assert (ecn / "roce_rp/enable/0").read_text().strip() == "0"
        cc = next((sysfs / "kernel/debug/mlx5").iterdir()) / "cc_params"
        assert (cc / "rp_ai_rate").read_text().strip() == "10"
        assert (cc / "np_cnp_dscp").read_text().strip() == "48"
        gids = [i for i in result.items if i.section == "gid"]
        assert [(i.current, i.warning) for i in gids] == [("3", "")] * 4
        calls = log.read_text().splitlines()
        log.write_text("")
        assert any("--trust dscp" in c for c in calls) and any("--pfc 0,0,0,1,0,0,0,0" in c for c in calls)
        again = agent.apply(intent, AgentOptions(netns=ns, sysfs_root=sysfs, mlnx_qos=str(MLNX_QOS)))
        assert again.counts.changed == 0
        assert all(c.endswith(" -a") for c in log.read_text().splitlines())  # reads only


def test_cnp_through_ecn_files_and_gid_index_warning(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    intent = example_intent()
    nics = [
        Nic(r.netdev, r.rdma, r.address.split("/")[0], r.ifname, v2_ipv4_index=5 if r.rail == 2 else 3)
        for r in intent.rails
    ]
    sysfs = build(tmp_path / "sys", nics, cnp_files="ecn")
    monkeypatch.setenv("MLNX_QOS_STATE", str(tmp_path / "qos.json"))
    with namespace() as ns:
        plan = agent.plan(intent, AgentOptions(netns=ns, sysfs_root=sysfs, mlnx_qos=str(MLNX_QOS)))
        cnp = {(i.target, i.name): i for i in plan.items if i.name in ("cnp_dscp", "cnp_802p_prio")}
        assert (cnp[("rail1", "cnp_dscp")].current, cnp[("rail1", "cnp_dscp")].desired) == ("26", "48")
        assert (cnp[("rail1", "cnp_802p_prio")].current, cnp[("rail1", "cnp_802p_prio")].desired) == (
            "7",
            "6",
        )
        result = agent.apply(intent, AgentOptions(netns=ns, sysfs_root=sysfs, mlnx_qos=str(MLNX_QOS)))
        assert (sysfs / "class/net/rail1/ecn/roce_np/cnp_dscp").read_text().strip() == "48"
        gid = next(i for i in result.items if i.section == "gid" and i.target == "mlx5_1")
        assert gid.current == "5" and "NCCL_IB_GID_INDEX is 3" in gid.warning
        assert [i.warning for i in result.items if i.warning and i.section != "lldp"] == [gid.warning]


def test_cli_skips_what_this_host_cannot_do_and_strict_fails(tmp_path: Path) -> None:
    intent = example_intent()
    path = tmp_path / "host.json"
    path.write_text(intent.model_dump_json())
    empty = tmp_path / "empty-sys"
    empty.mkdir()
    with namespace() as ns:
        base = [
            FABRIC,
            "host",
            "apply",
            "--intent",
            str(path),
            "--netns",
            ns,
            "--sysfs-root",
            str(empty),
            "--mlnx-qos",
            "/nonexistent/mlnx_qos",
        ]
        bad = subprocess.run(base, capture_output=True, text=True)
        assert bad.returncode == 2 and bad.stderr.startswith("error: --mlnx-qos") and "Traceback" not in bad.stderr
        run = subprocess.run(
            [*base[:-2], "--format", "json"], capture_output=True, text=True, env={"PATH": "/usr/bin:/bin"}
        )
        assert run.returncode == 0, run.stderr
        data = json.loads(run.stdout)
        skipped = [i for i in data["items"] if i["status"] == "skipped"]
        assert {i["section"] for i in skipped} == {"qos", "roce", "dcqcn", "gid"}
        assert all(i["reason"] for i in skipped) and data["counts"]["changed"] > 0
        assert any("mlnx_qos not found" in i["reason"] for i in skipped)
        strict = subprocess.run([*base[:-2], "--strict"], capture_output=True, text=True, env={"PATH": "/usr/bin:/bin"})
        assert strict.returncode == 1
        assert "no changes: the host already matches its intent" in strict.stdout
        plan = subprocess.run(
            [
                FABRIC,
                "host",
                "plan",
                str(ROOT / "inventories/example"),
                "--host",
                "gpu-su1-01",
                "--netns",
                ns,
                "--sysfs-root",
                str(empty),
            ],
            capture_output=True,
            text=True,
            env={"PATH": "/usr/bin:/bin"},
        )
        assert plan.returncode == 0 and "0 to change" in plan.stdout


def test_bad_input_is_one_line_exit_2(tmp_path: Path) -> None:
    bad = tmp_path / "host.json"
    bad.write_text('{"name": "x"}')
    run = subprocess.run([FABRIC, "host", "plan", "--intent", str(bad)], capture_output=True, text=True)
    errors = run.stderr.strip().splitlines()
    assert run.returncode == 2 and "Traceback" not in run.stderr
    # every missing key, one line each, at the line of the object that lacks it
    assert len(errors) > 5 and all(e.startswith(f"error: {bad}:1: ") for e in errors), errors
    assert f"error: {bad}:1: rails: expected this required key, found nothing" in errors
    run = subprocess.run(
        [FABRIC, "host", "plan", "--netns", "no-such-ns-here", "--intent", str(bad)],
        capture_output=True,
        text=True,
    )
    assert run.returncode == 2
    good = tmp_path / "good.json"
    good.write_text(example_intent().model_dump_json())
    run = subprocess.run(
        [FABRIC, "host", "plan", "--netns", "no-such-ns-here", "--intent", str(good)],
        capture_output=True,
        text=True,
    )
    assert run.returncode == 2 and "no network namespace" in run.stderr and "Traceback" not in run.stderr
