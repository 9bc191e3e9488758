"""`fabric optics`: `ethtool -m` parsing on real SFF-8636 and CMIS outputs, judging against the module's own
thresholds, SONiC's STATE_DB form, and rows located to host, NIC, leaf port and cable."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from fabric.access import Site
from fabric.design.derive import derive
from fabric.errors import InputError
from fabric.model.load import load
from fabric.optics.collect import assess, read
from fabric.optics.judge import Expectations, Expected, judge, load_expectations, mismatches
from fabric.parsers.transceiver import parse_ethtool_module
from fabric.targets.transceivers import sonic_module, split_ethtool_dump
from tests.support.paths import FIXTURES, ROOT

FIX = FIXTURES / "optics"
EXAMPLE = ROOT / "inventories" / "example"
SFF8636 = (FIX / "ethtool_m_qsfp_plus_sff8636_avago.txt").read_text()
CMIS = (FIX / "ethtool_m_qsfpdd_cmis_arista_xdr4.txt").read_text()
# the CMIS module above with lane 2 receiving -10.50 dBm (below its -8.90 dBm low alarm): a dirty connector
CMIS_LOW_RX = CMIS.replace("Rcvr signal avg optical power (Channel 2) : 1.8629 mW / 2.70 dBm",
                           "Rcvr signal avg optical power (Channel 2) : 0.0891 mW / -10.50 dBm")


def test_sff8636_qsfp_plus() -> None:
    m = parse_ethtool_module(SFF8636)
    assert (m.identifier, m.vendor, m.revision, m.temperature, m.voltage) == ("0x0d (QSFP+)", "AVAGO", "01", 42.17,
                                                                               3.2917)
    lane1 = m.lanes[0]
    assert (lane1.lane, lane1.bias, lane1.tx_power, lane1.rx_power) == (1, 6.662, -1.48, -1.15)
    assert [ln.dark for ln in m.lanes] == [False, True, True, True]
    assert m.thresholds["rx_power"].low_alarm == -13.51 and m.thresholds["bias"].high_warning == 9.5
    assert m.thresholds["tx_power"].high_alarm is None  # 0 mW / -inf: not implemented by the module
    assert judge(m) == []


def test_cmis_qsfp_dd() -> None:
    m = parse_ethtool_module(CMIS)
    assert (m.vendor, m.part, m.serial, m.revision) == ("Arista Networks", "QDD-400G-XDR4", "XKT242211481", "41")
    assert len(m.lanes) == 8 and [ln.dark for ln in m.lanes] == [False] * 4 + [True] * 4
    assert m.lanes[3].bias == 110.1 and m.lanes[0].rx_power == 3.52
    assert m.flags_on == ["Module temperature high warning"]
    issues = judge(m)
    temp = next(i for i in issues if i.metric == "temperature")
    assert temp.level == "warning" and temp.text == "temperature 70.49 °C above high warning 70 °C"
    near = next(i for i in issues if i.metric == "rx_power" and i.lane == 1)
    assert near.level == "near" and "near the high warning 4.5 dBm" in near.text
    assert not [i for i in issues if i.lane and i.lane > 4]  # unused lanes are not judged


def test_low_rx_lane_is_an_alarm() -> None:
    (low,) = [i for i in judge(parse_ethtool_module(CMIS_LOW_RX)) if i.level == "alarm"]
    assert (low.metric, low.lane, low.value, low.limit) == ("rx_power", 2, -10.5, -8.9)
    assert low.text == "Rx power lane 2 -10.5 dBm below low alarm -8.9 dBm"


def test_no_module_and_parse_errors_in_a_dump() -> None:
    mark = "=== roce-fabric port "
    dump = (f"{mark}swp1\nnetlink error: Operation not supported\nrc=1\n{mark}swp2\n"
            f"{CMIS.split(chr(10), 1)[1]}rc=0\n{mark}swp3\nOffset 0x00 is empty\nrc=0\n")
    got = split_ethtool_dump(dump)
    assert got["swp1"] == "no module (netlink error: Operation not supported)"
    assert not isinstance(got["swp2"], str) and got["swp2"].part == "QDD-400G-XDR4"
    assert got["swp3"] == "no module (ethtool -m printed no module identifier)"


def test_sonic_state_db_rows() -> None:
    """xcvrd's field names (SONiC CMIS DOM HLD, sonic-platform-common thresholds)."""
    info = {"type": "QSFP-DD Double Density 8X Pluggable Transceiver", "manufacturer": "NVIDIA",
            "model": "MMS4X00-NS400", "serial": "MT2330FT01234", "hardware_rev": "A3", "active_firmware": "46.120"}
    dom = {"temperature": "41.2", "voltage": "3.29", **{f"tx{n}power": "1.5" for n in range(1, 5)},
           **{f"rx{n}power": "0.9" for n in range(1, 5)}, **{f"tx{n}bias": "8.1" for n in range(1, 5)}}
    dom["rx3power"] = "-9.4"
    thr = {"temphighalarm": "75.0", "templowalarm": "-5.0", "temphighwarning": "72.0", "templowwarning": "-2.0",
           "rxpowerhighalarm": "5.0", "rxpowerlowalarm": "-8.901", "rxpowerhighwarning": "4.5",
           "rxpowerlowwarning": "-6.899"}
    m = sonic_module(info, dom, thr)
    assert not isinstance(m, str) and (m.part, m.firmware, len(m.lanes)) == ("MMS4X00-NS400", "46.120", 4)
    (bad,) = [i for i in judge(m) if i.level == "alarm"]
    assert (bad.lane, bad.limit) == (3, -8.901)
    assert sonic_module({}, {}, {}) == "no module (no TRANSCEIVER_INFO in STATE_DB)"


def test_expected_identity_per_link_class(tmp_path: Path) -> None:
    m = parse_ethtool_module(CMIS)
    assert mismatches(m, Expected(vendor="arista", part="QDD-400G")) == []
    assert mismatches(m, Expected(part="MMS4X00", firmware="46.120")) == [
        "part: expected MMS4X00, actual QDD-400G-XDR4", "firmware: expected 46.120, actual not reported"]
    bad = tmp_path / "expect.yaml"
    bad.write_text("host:\n  vendor: NVIDIA\n  colour: blue\n")
    with pytest.raises(InputError) as exc:
        load_expectations(bad)
    assert f"{bad}:3" in str(exc.value) and "colour" in str(exc.value)


def test_host_modules_located_to_nic_leaf_port_and_cable(tmp_path: Path) -> None:
    """A site whose hosts answer `ethtool -m` with real module outputs (one with a low Rx lane); the others have
    no module — as the lab's veths."""
    fabric = derive(load(EXAMPLE))
    fake = tmp_path / "bin"
    fake.mkdir()
    (fake / "ethtool").write_text('#!/bin/sh\nf="$FIX/$FAKE_HOST/$2.txt"\n'
                                  'if [ -f "$f" ]; then grep -v "^#" "$f"; exit 0; fi\n'
                                  'echo "netlink error: Operation not supported"; exit 1\n')
    (fake / "ethtool").chmod(stat.S_IRWXU)
    for host, netdev, text in (("gpu-su1-02", "rail2", CMIS_LOW_RX), ("gpu-su1-01", "rail1", SFF8636)):
        (tmp_path / host).mkdir(exist_ok=True)
        (tmp_path / host / f"{netdev}.txt").write_text(text)

    class Fake(Site):
        kind = "ssh"

        def __init__(self) -> None:
            self.fabric = fabric

        def host_argv(self, host: str, argv: list[str]) -> list[str]:
            return ["env", f"PATH={fake}:{os.environ['PATH']}", f"FIX={tmp_path}", f"FAKE_HOST={host}", *argv]

        def switch(self, name: str):  # type: ignore[override]
            raise NotImplementedError

        def switch_credentials(self):  # type: ignore[override]
            raise NotImplementedError

        def host_credentials(self):  # type: ignore[override]
            raise NotImplementedError

    rows = assess(read(Fake(), switches=False), Expectations(host=Expected(vendor="Arista")))
    by = {(r.device, r.port): r for r in rows}
    assert len(rows) == 4 * len(fabric.hosts)
    bad = by[("gpu-su1-02", "rail2")]
    assert bad.status == "alarm" and (bad.nic, bad.rail, bad.peer, bad.cable_m) == ("mlx5_1", 2, "leaf-su1-r2:swp2", 5)
    assert bad.where == "gpu-su1-02 rail 2 mlx5_1/rail2"
    assert any(i.text == "Rx power lane 2 -10.5 dBm below low alarm -8.9 dBm" for i in bad.issues)
    avago = by[("gpu-su1-01", "rail1")]
    assert avago.status == "mismatch" and avago.mismatch == ["vendor: expected Arista, actual AVAGO"]
    assert by[("gpu-su1-03", "rail1")].status == "no module"
    assert by[("gpu-su1-03", "rail1")].reason == "no module (netlink error: Operation not supported)"


def test_eos_inventory_identity() -> None:
    """`show inventory | json` xcvrSlots as ANTA's hardware tests read them (aristanetworks/anta unit data)."""
    from fabric.targets.transceivers import eos_inventory_modules

    inv = {"xcvrSlots": {"1": {"mfgName": "Arista Networks", "modelName": "QSFP-100G-DR", "serialNum": "XKT203501340",
                               "hardwareRev": "21"}, "2": {"mfgName": "", "modelName": "", "serialNum": ""}}}
    got = eos_inventory_modules(inv, ["Ethernet1/1", "Ethernet2/1", "Ethernet3/1"])
    one = got["Ethernet1/1"]
    assert not isinstance(one, str) and (one.vendor, one.part, one.serial, one.revision) == (
        "Arista Networks", "QSFP-100G-DR", "XKT203501340", "21")
    assert judge(one) == [] and mismatches(one, Expected(part="QSFP-100G-FR")) == [
        "part: expected QSFP-100G-FR, actual QSFP-100G-DR"]
    assert got["Ethernet2/1"] == got["Ethernet3/1"] == "no module (empty slot in show inventory)"
