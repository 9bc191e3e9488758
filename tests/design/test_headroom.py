"""PFC headroom: the SONiC/Mellanox formula reproduces the vendors' static pg_profile_lookup tables."""

from __future__ import annotations

from pathlib import Path

import pytest

from fabric.design.headroom import headroom
from fabric.model.platforms import ASIC_BUFFER
from tests.support.paths import ROOT

# ACS-SN5600 (Spectrum-4) and ACS-MSN2700 (Spectrum-1) pg_profile_lookup.ini rows: (size, xon, xoff),
# reference switch-qos.md §1.5.
SN5600 = {(400000, 5): (250880, 19456, 231424), (400000, 40): (303104, 19456, 283648),
          (400000, 300): (697344, 19456, 677888)}
MSN2700 = {(100000, 5): (50176, 19456, 30720), (100000, 40): (58368, 19456, 38912),
           (100000, 300): (123904, 19456, 104448)}


@pytest.mark.parametrize(("speed", "cable"), sorted(SN5600))
def test_sn5600_static_table(speed: int, cable: int) -> None:
    """Current formula (IEEE 802.3 pause quanta, kB on tile) with port MTU 9216, lossless MTU 1024 and
    100 % small packets (the static tables assume the worst case)."""
    hr = headroom(ASIC_BUFFER["spectrum-4"], speed_mbps=speed, cable_m=cable, port_mtu=9216, lanes=4,
                  lossless_mtu=1024, small_packet_percentage=100)
    assert (hr.size, hr.xon, hr.xoff) == SN5600[(speed, cable)]


def test_sn5600_800g_eight_lanes() -> None:
    """An 8-lane port doubles the pipeline latency (xon) and adds one port MTU to the size."""
    hr = headroom(ASIC_BUFFER["spectrum-4"], speed_mbps=800000, cable_m=40, port_mtu=9216, lanes=8,
                  lossless_mtu=1024, small_packet_percentage=100)
    assert (hr.size, hr.xon, hr.xoff) == (410624, 38912, 362496)


@pytest.mark.parametrize(("speed", "cable"), sorted(MSN2700))
def test_msn2700_static_table(speed: int, cable: int) -> None:
    """The Spectrum-1 table predates the pause-quanta table: it takes the ASIC_TABLE peer response time
    (3.8 KB) at every speed, with port MTU 9100, lossless MTU 1024 and 100 % small packets."""
    hr = headroom(ASIC_BUFFER["spectrum-1"], speed_mbps=speed, cable_m=cable, port_mtu=9100, lanes=4,
                  lossless_mtu=1024, small_packet_percentage=100, use_pause_quanta=False)
    assert (hr.size, hr.xon, hr.xoff) == MSN2700[(speed, cable)]


def test_fewer_small_packets_need_less_headroom() -> None:
    asic = ASIC_BUFFER["spectrum-4"]
    worst = headroom(asic, speed_mbps=400000, cable_m=40, port_mtu=9216, small_packet_percentage=100)
    typical = headroom(asic, speed_mbps=400000, cable_m=40, port_mtu=9216, small_packet_percentage=50)
    assert typical.xoff < worst.xoff and typical.xon == worst.xon


def test_shared_headroom_pool_keeps_only_xon() -> None:
    hr = headroom(ASIC_BUFFER["spectrum-4"], speed_mbps=400000, cable_m=5, port_mtu=9216,
                  shared_headroom_pool=True)
    assert hr.size == hr.xon == 19456


def test_derived_ports_carry_the_formula() -> None:
    """A 400G/5m host port of an SN5600 leaf in the H100 example gets the SN5600 table row."""
    from fabric.design.derive import derive
    from fabric.model.load import load

    f = derive(load(ROOT / "inventories" / "h100-400g"))
    port = next(p for p in f.switches["leaf-su1-r1"].ports if p.kind == "host")
    assert (port.speed, port.cable_m, port.lanes) == (400, 5, 4)
    assert (port.headroom.size, port.headroom.xon, port.headroom.xoff) == SN5600[(400000, 5)]
    uplink = next(p for p in f.switches["leaf-su1-r1"].ports if p.kind == "fabric")
    assert (uplink.headroom.size, uplink.headroom.xoff) == SN5600[(400000, 40)][::2]


def test_headroom_uses_the_lanes_the_render_writes_into_port(tmp_path: Path) -> None:
    """A 100G port on an unsplit 8-lane SN4700 cage: SONiC's PORT keeps the cage's 8 lanes (a real ACS-MSN4700
    CONFIG_DB runs Ethernet0 below 400G on lanes 0-7, tests/fixtures/brownfield/sonic/), and the lua computes
    the headroom from PORT's lane count: 8 lanes (xon doubled, one port MTU more), not 2."""
    import json

    from fabric.design.derive import derive
    from fabric.model.load import load
    from fabric.model.platforms import ASIC_BUFFER as ASICS
    from fabric.render import render_switch
    from tests.nos.sonic.test_brownfield import CORPUS, _inventory

    real = json.loads((CORPUS / "acs-msn4700-t1-dynamic.json").read_text())["PORT"]
    fabric = derive(load(_inventory(tmp_path, "sn4700", "100G")))
    sw = fabric.switches["leaf-su1-r1"]
    db = json.loads(render_switch(sw, fabric)["config_db.json"])
    checked = 0
    for p in sw.ports:
        lanes = db["PORT"][p.name]["lanes"]
        assert lanes == real[p.name]["lanes"] and p.speed == 100, (p.name, lanes)
        profile = db["BUFFER_PROFILE"][db["BUFFER_PG"][f"{p.name}|3"]["profile"]]
        lua = headroom(ASICS[sw.asic], speed_mbps=100000, cable_m=p.cable_m, port_mtu=int(db["PORT"][p.name]["mtu"]),
                       lanes=len(lanes.split(",")), small_packet_percentage=p.headroom.small_packet_percentage,
                       lossless_mtu=p.headroom.lossless_mtu)
        assert (int(profile["size"]), int(profile["xon"]), int(profile["xoff"])) == (lua.size, lua.xon, lua.xoff)
        assert p.headroom.lanes == 8 and lua.xon == 2 * 19456
        checked += 1
    assert checked >= 4
    host = next(p for p in sw.ports if p.kind == "host" and p.cable_m == 5)
    assert host.headroom.size == 157696
