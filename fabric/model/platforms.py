"""Switch platforms: port count, speeds, lanes, ASIC generation and its buffer parameters."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict


class AsicBuffer(BaseModel):
    """ASIC_TABLE values of platform/mellanox/asic_table.j2 (latencies in KB as there)."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    cell_size: int
    pipeline_latency_kb: float
    mac_phy_delay_kb: float
    peer_response_time_kb: float
    kb_on_tile: bool = False  # Spectrum-4/5 add speed/1000*120/8 bytes on tile
    extra_xoff: int = 0  # Spectrum-6 adds 18 KiB


Asic = Literal["spectrum-1", "spectrum-2", "spectrum-3", "spectrum-4", "spectrum-5", "spectrum-6",
               "tomahawk-4", "tomahawk-5", "generic"]

# platform/mellanox/asic_table.j2 (reference switch-qos.md §1.6); others use Spectrum-4-like defaults.
ASIC_BUFFER: dict[str, AsicBuffer] = {
    "spectrum-1": AsicBuffer(cell_size=96, pipeline_latency_kb=19, mac_phy_delay_kb=0.8, peer_response_time_kb=3.8),
    "spectrum-2": AsicBuffer(cell_size=144, pipeline_latency_kb=19, mac_phy_delay_kb=0.8, peer_response_time_kb=3.8),
    "spectrum-3": AsicBuffer(cell_size=144, pipeline_latency_kb=19, mac_phy_delay_kb=0.8, peer_response_time_kb=3.8),
    "spectrum-4": AsicBuffer(cell_size=192, pipeline_latency_kb=19, mac_phy_delay_kb=0.8, peer_response_time_kb=3.8,
                             kb_on_tile=True),
    "spectrum-5": AsicBuffer(cell_size=192, pipeline_latency_kb=19, mac_phy_delay_kb=0.8, peer_response_time_kb=3.8,
                             kb_on_tile=True),
    "spectrum-6": AsicBuffer(cell_size=256, pipeline_latency_kb=42, mac_phy_delay_kb=0.8, peer_response_time_kb=3.8,
                             extra_xoff=18 * 1024),
}
ASIC_BUFFER["tomahawk-4"] = ASIC_BUFFER["tomahawk-5"] = ASIC_BUFFER["generic"] = ASIC_BUFFER["spectrum-4"]


class Platform(BaseModel):
    """A switch model as far as the fabric design needs it."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    name: str
    asic: Asic
    ports: int  # physical front-panel ports
    max_speed: int  # Gb/s of one physical port
    lanes: int  # SerDes lanes of one physical port
    buffer_bytes: int  # packet buffer, for the headroom budget
    adaptive_routing_speeds: tuple[int, ...] = ()  # speeds (Gb/s) where AR is supported

    @property
    def buffer(self) -> AsicBuffer:
        return ASIC_BUFFER[self.asic]


PLATFORMS: dict[str, Platform] = {p.name: p for p in [
    Platform(name="sn5600", asic="spectrum-4", ports=64, max_speed=800, lanes=8, buffer_bytes=160 * 2**20,
             adaptive_routing_speeds=(200, 400)),
    Platform(name="sn5400", asic="spectrum-4", ports=64, max_speed=400, lanes=8, buffer_bytes=160 * 2**20,
             adaptive_routing_speeds=(200, 400)),
    Platform(name="sn4700", asic="spectrum-3", ports=32, max_speed=400, lanes=8, buffer_bytes=64 * 2**20),
    Platform(name="sn4600c", asic="spectrum-3", ports=64, max_speed=100, lanes=4, buffer_bytes=64 * 2**20),
    Platform(name="msn2700", asic="spectrum-1", ports=32, max_speed=100, lanes=4, buffer_bytes=16 * 2**20),
    Platform(name="7060x5", asic="tomahawk-4", ports=64, max_speed=400, lanes=8, buffer_bytes=113 * 2**20),
    Platform(name="7060x6", asic="tomahawk-5", ports=64, max_speed=800, lanes=8, buffer_bytes=165 * 2**20),
    Platform(name="linux-frr", asic="generic", ports=256, max_speed=800, lanes=8, buffer_bytes=160 * 2**20),
]}
