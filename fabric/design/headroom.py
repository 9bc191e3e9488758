"""PFC headroom from the SONiC/Mellanox dynamic formula (sonic-swss cfgmgr/buffer_headroom_mellanox.lua).

See shared reference switch-qos.md §1.6. All sizes in bytes. Pure and deterministic.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from pydantic import BaseModel, ConfigDict

if TYPE_CHECKING:  # an argument's type only: the host intent (fabric.design.intent) imports no platform table
    from fabric.model.platforms import AsicBuffer

# IEEE 802.3 31B.3.7 pause quanta per operating speed (Mb/s), as in the lua script.
PAUSE_QUANTA = {800000: 905, 400000: 905, 200000: 453, 100000: 394, 50000: 147,
                40000: 118, 25000: 80, 10000: 67, 1000: 2, 100: 1}
SPEED_OF_LIGHT_IN_CABLE = 198_000_000  # m/s
MIN_PACKET = 64


class Headroom(BaseModel):
    """Result of the formula for one port, with every input that produced it."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    size: int
    xon: int
    xoff: int
    speed_mbps: int
    cable_m: int
    port_mtu: int
    lanes: int
    lossless_mtu: int
    small_packet_percentage: int
    cell_size: int
    pipeline_latency_kb: float
    mac_phy_delay_kb: float
    pause_quanta: int | None  # IEEE 802.3 quanta at this speed; None: the ASIC's peer response time
    peer_response_bytes: float
    kb_on_tile: bool
    shared_headroom_pool: bool

    def explain(self) -> str:
        peer = (f"pause quanta {self.pause_quanta} ({self.peer_response_bytes:g} B)" if self.pause_quanta is not None
                else f"peer response {self.peer_response_bytes:g} B")
        extras = (", kB on tile" if self.kb_on_tile else "") + (", shared headroom pool" if self.shared_headroom_pool
                                                                 else "")
        return (f"formula buffer_headroom_mellanox.lua: speed {self.speed_mbps // 1000}G, cable {self.cable_m}m "
                f"(198,000 km/s), port MTU {self.port_mtu}, {self.lanes} lanes, lossless MTU {self.lossless_mtu}, "
                f"small packets {self.small_packet_percentage}%, cell {self.cell_size} B, pipeline latency "
                f"{self.pipeline_latency_kb:g} KB, MAC/PHY delay {self.mac_phy_delay_kb:g} KB, {peer}"
                f"{extras} → xon {self.xon}, xoff {self.xoff}, size {self.size}")


def _ceil_kib(value: float) -> int:
    return math.ceil(value / 1024) * 1024


def headroom(asic: AsicBuffer, *, speed_mbps: int, cable_m: int, port_mtu: int, lanes: int = 4,
             lossless_mtu: int = 1024, small_packet_percentage: int = 100, gearbox_delay_ns: float = 0,
             shared_headroom_pool: bool = False, use_pause_quanta: bool = True) -> Headroom:
    """xon/xoff/size for one lossless PG, step for step as the SONiC lua computes it.

    `use_pause_quanta=False` takes the ASIC-table peer response time for every speed, as SONiC did
    before the IEEE quanta table was added (the MSN2700 static tables were generated that way).
    """
    pipeline = asic.pipeline_latency_kb * 1024
    mac_phy = asic.mac_phy_delay_kb * 1024
    overhead = 0
    if lanes == 8:
        pipeline *= 2
        overhead = port_mtu
    cell = asic.cell_size
    worst = cell / MIN_PACKET if cell > 2 * MIN_PACKET else (2 * cell) / (1 + cell)
    worst = math.ceil(worst)
    spp = small_packet_percentage
    by_byte = 100 * MIN_PACKET / ((spp * MIN_PACKET + (100 - spp) * lossless_mtu) / 100)
    occupancy = (100 - by_byte + by_byte * worst) / 100
    quanta = PAUSE_QUANTA.get(speed_mbps) if use_pause_quanta else None
    peer = quanta * 512 / 8 if quanta is not None else asic.peer_response_time_kb * 1024
    gearbox = speed_mbps * gearbox_delay_ns / (8 * 1024) if gearbox_delay_ns else 0
    on_cable = 2 * cable_m * speed_mbps * 1_000_000_000 / SPEED_OF_LIGHT_IN_CABLE / (8 * 1000)
    on_tile = speed_mbps / 1000 * 120 / 8 if asic.kb_on_tile else 0
    propagation = port_mtu + on_cable + 2 * gearbox + mac_phy + peer + on_tile
    xoff = _ceil_kib(lossless_mtu + propagation * occupancy) + asic.extra_xoff
    xon = _ceil_kib(pipeline)
    size = _ceil_kib(xon if shared_headroom_pool else xoff + xon + overhead)
    return Headroom(size=size, xon=xon, xoff=xoff, speed_mbps=speed_mbps, cable_m=cable_m, port_mtu=port_mtu,
                    lanes=lanes, lossless_mtu=lossless_mtu, small_packet_percentage=spp, cell_size=cell,
                    pipeline_latency_kb=asic.pipeline_latency_kb, mac_phy_delay_kb=asic.mac_phy_delay_kb,
                    pause_quanta=quanta, peer_response_bytes=peer, kb_on_tile=asic.kb_on_tile,
                    shared_headroom_pool=shared_headroom_pool)
