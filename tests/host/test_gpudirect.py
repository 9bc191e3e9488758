"""GPUDirect RDMA prerequisites (`fabric host prereqs`, accept check `host-prereqs`): parsers on real
`lspci -vvv` and `nvidia-smi topo -m` outputs, checks on prepared sysfs PCIe trees."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from fabric.cli import main
from fabric.design.derive import derive
from fabric.design.intent import HostIntent
from fabric.host.gpudirect import Evidence, check
from fabric.host.pcie import acs_control, relaxed_ordering
from fabric.model.load import load
from fabric.parsers.lspci import parse_lspci
from fabric.parsers.nvidia_smi import parse_topo
from tests.fixtures.sysfs.pcie import Pair, build, config
from tests.support.paths import FIXTURES, ROOT

FIX = FIXTURES / "gpudirect"
EXAMPLE = ROOT / "inventories" / "example"
TOPO = (FIX / "nvidia_smi_topo_m_h100_8nic.txt").read_text()
MLXCONFIG = """
Device #1:
----------

Device type:        ConnectX7
Name:               MCX75310AAS-NEA_Ax
Description:        NVIDIA ConnectX-7 HHHL adapter card; 400GbE / NDR IB (default mode); Single-port OSFP
Device:             {pci}

Configurations:                                      Next Boot
        PCI_WR_ORDERING                             {wr}
        ATS_ENABLED                                 {ats}
"""  # mlxconfig q layout as the SR-IOV samples (tests/fixtures/samples/README.md); names and values from
# NVIDIA's ATS appendix ("ATS_ENABLED False(0)") and PCI_WR_ORDERING per_mkey(0)/force_relax(1)


@pytest.fixture(scope="module")
def intent() -> HostIntent:
    return derive(load(EXAMPLE)).hosts["gpu-su1-01"]


def items(intent: HostIntent, ev: Evidence, name: str) -> list:
    return [i for i in check(intent, ev) if i.name == name]


# ------------------------------------------------------------------------------------------ parsers

def test_lspci_acs_flags_from_real_outputs() -> None:
    amd = parse_lspci((FIX / "lspci_vvv_amd_acs_on.txt").read_text())
    assert set(amd.devices) == {"0000:00:01.0", "0000:00:01.1", "0000:00:01.2"}
    assert amd.devices["0000:00:01.0"].acs_ctl is None  # the dummy host bridge shows no ACS
    assert amd.devices["0000:00:01.1"].acs_redirects == ["ReqRedir", "CmpltRedir"]
    assert amd.devices["0000:00:01.1"].acs_ctl == {"SrcValid": True, "TransBlk": False, "ReqRedir": True,
                                                   "CmpltRedir": True, "UpstreamFwd": True, "EgressCtrl": False,
                                                   "DirectTrans": False}
    off = parse_lspci((FIX / "lspci_vv_acs_off.txt").read_text()).devices["0000:00:00.0"]
    assert off.acs_ctl is not None and off.acs_redirects == []


def test_lspci_relaxed_ordering_on_the_wrapped_devctl_line() -> None:
    text = ("3b:00.0 Ethernet controller: Mellanox Technologies MT2910 Family [ConnectX-7]\n"
            "\t\tDevCtl:\tCorrErr- NonFatalErr- FatalErr- UnsupReq-\n"
            "\t\t\tRlxdOrd- ExtTag+ PhantFunc- AuxPwr- NoSnoop+ FLReset-\n")
    assert parse_lspci(text).devices["0000:3b:00.0"].relaxed_ordering is False


def test_topo_matrix_real_outputs() -> None:
    topo = parse_topo(TOPO)
    assert topo.gpus == [f"GPU{i}" for i in range(8)] and topo.nics == [f"mlx5_{i}" for i in range(8)]
    assert topo.link["GPU3"]["mlx5_3"] == "PIX" and topo.link["GPU3"]["mlx5_4"] == "SYS"
    assert topo.closest("GPU5") == ["mlx5_5"]
    old = parse_topo((FIX / "nvidia_smi_topo_m_old_names.txt").read_text())  # NICs named in the header
    assert old.link["GPU2"]["mlx5_1"] == "PIX" and old.link["GPU2"]["mlx5_0"] == "PXB"


def test_config_space_registers() -> None:
    assert acs_control(config(acs=0x0D))["ReqRedir"] is True
    assert acs_control(config(acs=0)) == dict.fromkeys(acs_control(config(acs=0)) or {}, False)
    assert acs_control(config()[:256]) is None  # not root: extended space unreadable
    assert relaxed_ordering(config(relaxed=False)) is False and relaxed_ordering(config()) is True


# ------------------------------------------------------------------------------------------ checks

def test_healthy_host_meets_every_prerequisite(tmp_path: Path, intent: HostIntent) -> None:
    tree = build(tmp_path, [Pair(r.netdev) for r in intent.rails])
    mlx = {tree.bdfs[f"nic{k}"]: MLXCONFIG.format(pci=tree.bdfs[f"nic{k}"], wr="per_mkey(0)", ats="False(0)")
           for k in range(4)}
    got = check(intent, Evidence(sysfs=tmp_path, topo=TOPO, mlxconfig=mlx, nccl_version="2.21.5"))
    assert [i for i in got if i.status != "unchanged"] == []
    assert {i.name for i in got} == {"affinity", "acs", "iommu", "relaxed-ordering", "ats", "peer-memory",
                                     "nccl-version"}


def test_acs_on_is_named_with_the_bridge_and_the_fix(tmp_path: Path, intent: HostIntent) -> None:
    pairs = [Pair(r.netdev) for r in intent.rails]
    pairs[1].acs_on = True
    tree = build(tmp_path, pairs)
    (bad,) = [i for i in items(intent, Evidence(sysfs=tmp_path), "acs") if i.status == "failed"]
    down = tree.bdfs["down-nic1"]
    assert bad.target == f"GPU1 {tree.bdfs['gpu1']} ↔ rail 2 mlx5_1 {tree.bdfs['nic1']}"
    assert f"{down} (ReqRedir+ CmpltRedir+, {tmp_path}/bus/pci/devices/{down})" in bad.reason
    assert f"setpci -s {down} ECAP_ACS+0x6.w=0000" in bad.reason


def test_acs_falls_back_to_lspci_without_root(tmp_path: Path, intent: HostIntent) -> None:
    tree = build(tmp_path, [Pair(r.netdev) for r in intent.rails])
    for dev in (tmp_path / "bus" / "pci" / "devices").iterdir():
        (dev / "config").write_bytes((dev / "config").read_bytes()[:64])  # what a user may read
    assert {i.status for i in items(intent, Evidence(sysfs=tmp_path), "acs")} == {"skipped"}
    down = tree.bdfs["down-nic0"]
    lspci = (f"{down[5:]} PCI bridge: Broadcom / LSI PEX890xx PCIe Gen 5 Switch (rev b0)\n"
             "\tCapabilities: [2a0 v1] Access Control Services\n"
             "\t\tACSCtl:\tSrcValid+ TransBlk- ReqRedir+ CmpltRedir+ UpstreamFwd+ EgressCtrl- DirectTrans-\n")
    got = items(intent, Evidence(sysfs=tmp_path, lspci=lspci), "acs")
    assert [i.status for i in got] == ["failed", "unchanged", "unchanged", "unchanged"]


def test_relaxed_ordering_off_and_firmware(tmp_path: Path, intent: HostIntent) -> None:
    pairs = [Pair(r.netdev) for r in intent.rails]
    pairs[2].nic_relaxed = False
    tree = build(tmp_path, pairs)
    nic = tree.bdfs["nic2"]
    (bad,) = [i for i in items(intent, Evidence(sysfs=tmp_path), "relaxed-ordering") if i.status == "failed"]
    assert bad.target == f"rail 3 mlx5_2 {nic}" and bad.current == "RlxdOrd-"
    assert f"{tmp_path}/bus/pci/devices/{nic}" in bad.reason
    ok = [i for i in items(intent, Evidence(sysfs=tmp_path, mlxconfig={
        tree.bdfs["nic0"]: MLXCONFIG.format(pci=tree.bdfs["nic0"], wr="force_relax(1)", ats="True(1)")}),
        "relaxed-ordering") if i.target.startswith("rail 1")]
    assert ok[0].status == "unchanged" and ok[0].current == "RlxdOrd+ PCI_WR_ORDERING force_relax(1)"


def test_wrong_affinity_from_the_real_topology_matrix(tmp_path: Path, intent: HostIntent) -> None:
    """The inventory pairs rail 1 with mlx5_1 and rail 2 with mlx5_0: on this host GPU0 sits beside mlx5_0."""
    swapped = intent.model_copy(deep=True)
    swapped.rails[0].rdma, swapped.rails[1].rdma = "mlx5_1", "mlx5_0"
    build(tmp_path, [Pair(r.netdev) for r in swapped.rails])
    got = items(swapped, Evidence(sysfs=tmp_path, topo=TOPO), "affinity")
    assert [i.status for i in got] == ["failed", "failed", "unchanged", "unchanged"]
    assert got[0].current == "NODE" and "GPU0 ↔ mlx5_1 is NODE; GPU0's nearest NIC is mlx5_0" in got[0].reason


def test_wrong_affinity_from_sysfs_without_nvidia_smi(tmp_path: Path, intent: HostIntent) -> None:
    pairs = [Pair(r.netdev) for r in intent.rails]
    pairs[3].nic_switch = 0  # rail 4's NIC is cabled into the slot under GPU0's switch
    tree = build(tmp_path, pairs)
    (bad,) = [i for i in items(intent, Evidence(sysfs=tmp_path), "affinity") if i.status == "failed"]
    assert bad.target.startswith("GPU3 ") and "meet only at the root complex" in bad.reason
    assert tree.bdfs["nic3"] in bad.reason


def test_iommu_peermem_and_nccl_version(tmp_path: Path, intent: HostIntent) -> None:
    pairs = [Pair(r.netdev) for r in intent.rails]
    pairs[0].iommu = "DMA-FQ"
    build(tmp_path, pairs, peermem=False)
    auto = intent.model_copy(update={"gid": intent.gid.model_copy(update={"policy": "auto"})})
    got = {(i.name, i.status) for i in check(auto, Evidence(sysfs=tmp_path, nccl_version="2.18.5"))}
    assert {("iommu", "failed"), ("peer-memory", "failed"), ("nccl-version", "failed")} <= got
    (iommu,) = [i for i in check(auto, Evidence(sysfs=tmp_path)) if i.name == "iommu" and i.status == "failed"]
    assert "iommu=pt" in iommu.reason and "DMA-FQ" in iommu.current
    fixed = [i for i in check(intent, Evidence(sysfs=tmp_path, nccl_version="2.18.5")) if i.name == "nccl-version"]
    assert fixed[0].status == "unchanged"  # the index is set: any NCCL will do


def test_cli_prereqs_json_and_exit_code(tmp_path: Path, intent: HostIntent, capsys, monkeypatch) -> None:
    pairs = [Pair(r.netdev) for r in intent.rails]
    pairs[1].acs_on = True
    build(tmp_path, pairs)
    monkeypatch.setattr(sys, "argv", ["fabric", "host", "prereqs", str(EXAMPLE), "--host", "gpu-su1-01",
                                      "--sysfs-root", str(tmp_path), "--nccl-version", "2.23.4", "--format", "json"])
    with pytest.raises(SystemExit) as exc:
        main()
    assert exc.value.code == 1
    doc = json.loads(capsys.readouterr().out)
    assert doc["ok"] is False and [i["name"] for i in doc["items"] if i["status"] == "failed"] == ["acs"]


# ------------------------------------------------------------------------------------------ accept check

def test_accept_host_prereqs_names_the_host_and_bridge(tmp_path: Path) -> None:
    """`host-prereqs` runs the agent on every host (here: this machine, one prepared tree per host)."""
    import shutil

    from fabric.accept import catalog as cat
    from fabric.accept.checks import Context, run_check
    from fabric.access import Site

    fabric = derive(load(EXAMPLE))
    roots = {}
    for name, h in fabric.hosts.items():
        pairs = [Pair(r.netdev) for r in h.rails]
        pairs[1].acs_on = name == "gpu-su1-03"
        roots[name] = tmp_path / name
        build(roots[name], pairs)
    exe = shutil.which("fabric", path=str(Path(sys.executable).parent))
    assert exe

    class Local(Site):
        kind = "ssh"

        def __init__(self) -> None:
            self.fabric = fabric

        def host_argv(self, host: str, argv: list[str]) -> list[str]:
            return [exe, *argv[1:], "--sysfs-root", str(roots[host]), "--nccl-version", "2.23.4"]

        def switch(self, name: str):  # type: ignore[override]
            raise NotImplementedError

        def switch_credentials(self):  # type: ignore[override]
            raise NotImplementedError

        def host_credentials(self):  # type: ignore[override]
            raise NotImplementedError

    (check_,) = [c for c in cat.build(cat.default_catalog(fabric)) if c.name == "host-prereqs"]
    res = run_check(check_, Context(site=Local()))
    assert res.status == "fail", res.message
    assert res.message.startswith("Expected every GPUDirect prerequisite met. Actual: gpu-su1-03: acs GPU1 ")
    assert [m.src for m in res.measurements if not m.ok] == ["gpu-su1-03"]
    assert any("setpci -s" in e and e.startswith("gpu-su1-03: acs") for e in res.evidence)
    assert "host-prereqs" not in [e.check for e in cat.default_catalog(fabric, rdma=False).checks]
