"""Boot-time files generated from the host intent (fabric/render/host.py): netplan YAML, sysctl.d,
the roce-qos unit and its POSIX script. The script is run for real with `sh` against a prepared sysfs
tree and the stand-in `mlnx_qos` (no mlx5 NIC here); `--persist` is exercised in a test namespace."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
import yaml

from fabric.host import agent
from fabric.host.model import AgentOptions
from fabric.render import host as hostfiles
from tests.support.host import FABRIC, MLNX_QOS, Nic, build, example_intent, namespace, need_root, tagged


def test_netplan_has_rails_tables_and_rules_but_never_the_management_nic() -> None:
    intent = example_intent()
    doc = yaml.safe_load(hostfiles.netplan(intent))["network"]
    assert doc["version"] == 2 and set(doc["ethernets"]) == {"rail1", "rail2", "rail3", "rail4"}
    assert "eth0" not in hostfiles.netplan(intent)
    rail1 = doc["ethernets"]["rail1"]
    assert rail1["mtu"] == 9000 and rail1["addresses"] == ["10.100.0.2/24"] and rail1["dhcp4"] is False
    assert rail1["routes"] == [
        {"to": "10.100.0.0/24", "scope": "link", "from": "10.100.0.2", "table": 101},
        {"to": "10.100.0.0/16", "via": "10.100.0.1", "table": 101},
    ]
    assert rail1["routing-policy"] == [{"from": "10.100.0.2", "table": 101, "priority": 1001}]
    assert hostfiles.netplan(intent) == hostfiles.netplan(example_intent())  # deterministic


def test_netplan_tagged_rail_is_a_vlan_on_the_nic() -> None:
    doc = yaml.safe_load(hostfiles.netplan(tagged(example_intent(), rail=2, vlan=1002)))["network"]
    assert doc["ethernets"]["rail2"] == {"dhcp4": False, "dhcp6": False, "link-local": [], "mtu": 9000}
    vlan = doc["vlans"]["rail2.1002"]
    assert (vlan["id"], vlan["link"], vlan["addresses"]) == (1002, "rail2", ["10.100.1.2/24"])
    assert vlan["routing-policy"] == [{"from": "10.100.1.2", "table": 102, "priority": 1002}]


def test_sysctl_conf_and_unit() -> None:
    intent = tagged(example_intent(), rail=1, vlan=1001)
    conf = hostfiles.sysctl_conf(intent).splitlines()
    assert "net/ipv4/conf/rail1.1001/arp_ignore = 1" in conf and "net/ipv4/tcp_ecn = 1" in conf
    unit = hostfiles.qos_unit(intent)
    assert f"ExecStart=/{hostfiles.SCRIPT_PATH}" in unit and "Type=oneshot" in unit
    assert "After=sys-subsystem-net-devices-rail1.device" in unit and "WantedBy=multi-user.target" in unit


def _run_script(tmp_path: Path, intent, sysfs: Path) -> subprocess.CompletedProcess[str]:
    script = tmp_path / "roce-qos.sh"
    script.write_text(hostfiles.qos_script(intent))
    env = {**os.environ, "SYSFS": str(sysfs), "MLNX_QOS": str(MLNX_QOS), "MLNX_QOS_STATE": str(tmp_path / "q.json")}
    return subprocess.run(["sh", str(script)], capture_output=True, text=True, env=env)


def test_qos_script_sets_prepared_tree_and_stand_in(tmp_path: Path) -> None:
    intent = example_intent()
    intent = intent.model_copy(update={"dcqcn": intent.dcqcn.model_copy(update={"cc_params": {"rp_ai_rate": 9}})})
    sysfs = build(tmp_path / "sys", [Nic(r.netdev, r.rdma, r.address.split("/")[0]) for r in intent.rails])
    run = _run_script(tmp_path, intent, sysfs)
    assert run.returncode == 0, run.stdout + run.stderr
    state = json.loads((tmp_path / "q.json").read_text())
    assert state["rail3"]["trust"] == "dscp" and state["rail3"]["pfc"] == [0, 0, 0, 1, 0, 0, 0, 0]
    assert state["rail3"]["dscp2prio"] == {"26": 3, "48": 6} and state["rail3"]["tcbw"][3] == 50
    assert (sysfs / "class/infiniband/mlx5_2/tc/1/traffic_class").read_text().strip() == "106"
    assert (sysfs / "kernel/config/rdma_cm/mlx5_2/ports/1/default_roce_tos").read_text().strip() == "106"
    assert (sysfs / "class/net/rail3/ecn/roce_rp/enable/3").read_text().strip() == "1"
    cc = sysfs / "kernel/debug/mlx5/0000:3d:00.0/cc_params"
    assert (cc / "rp_ai_rate").read_text().strip() == "9" and (cc / "np_cnp_prio").read_text().strip() == "6"


def test_qos_script_skips_what_is_missing(tmp_path: Path) -> None:
    empty = tmp_path / "sys"
    empty.mkdir()
    script = tmp_path / "roce-qos.sh"
    script.write_text(hostfiles.qos_script(example_intent()))
    run = subprocess.run(
        ["sh", str(script)], capture_output=True, text=True, env={"PATH": "/usr/bin:/bin", "SYSFS": str(empty)}
    )
    assert run.returncode == 0 and "skipped: mlnx_qos not installed" in run.stdout
    assert "skipped: none of" in run.stdout


@pytest.mark.root
def test_script_result_matches_agent_and_persist_install_is_idempotent(tmp_path: Path) -> None:
    need_root()
    intent = example_intent()
    sysfs = build(tmp_path / "sys", [Nic(r.netdev, r.rdma, r.address.split("/")[0]) for r in intent.rails])
    assert _run_script(tmp_path, intent, sysfs).returncode == 0
    os.environ["MLNX_QOS_STATE"] = str(tmp_path / "q.json")
    try:
        with namespace() as ns:
            plan = agent.plan(intent, AgentOptions(netns=ns, sysfs_root=sysfs, mlnx_qos=str(MLNX_QOS)))
            nic = [i for i in plan.items if i.section in ("qos", "roce", "dcqcn")]
            assert nic and all(i.status == "unchanged" for i in nic), [i for i in nic if i.status != "unchanged"]
            hj = tmp_path / "host.json"
            hj.write_text(intent.model_dump_json())
            root = tmp_path / "root"
            cmd = [
                FABRIC,
                "host",
                "apply",
                "--intent",
                str(hj),
                "--netns",
                ns,
                "--sysfs-root",
                str(sysfs),
                "--mlnx-qos",
                str(MLNX_QOS),
                "--persist",
                "--persist-root",
                str(root),
                "--format",
                "json",
            ]
            first = json.loads(subprocess.run(cmd, capture_output=True, text=True, check=True).stdout)
            files = [i for i in first["items"] if i["section"] == "persist"]
            # netplan, sysctl.d, the QoS script and unit, its enable link, a CNI config per rail (vfs: 0: the PF)
            assert len(files) == 5 + len(intent.rails) and all(i["status"] == "changed" for i in files)
            assert (root / hostfiles.NETPLAN_PATH).read_text() == hostfiles.netplan(intent)
            assert (root / hostfiles.NETPLAN_PATH).stat().st_mode & 0o777 == 0o600
            assert (root / hostfiles.SCRIPT_PATH).stat().st_mode & 0o777 == 0o755
            assert os.readlink(root / hostfiles.WANTS_PATH) == f"/{hostfiles.UNIT_PATH}"
            second = json.loads(subprocess.run(cmd, capture_output=True, text=True, check=True).stdout)
            assert second["counts"]["changed"] == 0 and second["ok"]
    finally:
        os.environ.pop("MLNX_QOS_STATE", None)


def test_persist_writes_through_no_fixed_temporary_name(tmp_path: Path) -> None:
    """`host apply --persist`'s file steps: a symlink planted at a predictable temporary name beside a file
    (`.<file>.tmp`) is never written through, and no temporary file is left."""
    from fabric.host.persist import install_steps

    intent = example_intent()
    root = tmp_path / "root"
    victim = tmp_path / "victim"
    victim.write_text("untouched\n")
    steps = [s for s in install_steps(intent, root) if s.item.name == "file"]
    for s in steps:
        path = Path(s.item.target)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.with_name(f".{path.name}.tmp").symlink_to(victim)
    for s in steps:
        assert s.action is not None
        s.action()
    assert victim.read_text() == "untouched\n"
    for rel, (text, mode) in hostfiles.boot_files(intent).items():
        assert (root / rel).read_text() == text and (root / rel).stat().st_mode & 0o777 == mode
    written = {root / rel for rel in hostfiles.boot_files(intent)}
    planted = {p.with_name(f".{p.name}.tmp") for p in written}
    for d in {p.parent for p in written}:
        assert {q for q in d.iterdir() if not q.is_dir()} <= written | planted  # no temporary file left
