"""Traffic tools behind the checks, and the runner that measures a set of links at once.

A tool is a parameter of a check: `ib_write_bw` / `ib_write_lat` on RDMA hosts, and in the lab,
where veths have no RDMA, `iperf3` (bandwidth) and `ping` (latency, RTT/2 like ib_write_lat's one-way
figure) go through the same runner, scheduler, thresholds and reports. Parsing uses
fabric.parsers (perftest text, iperf3 -J).
"""

from __future__ import annotations

import math
import re
import shlex
import subprocess
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from ipaddress import IPv4Interface

from fabric.accept import transport as tr
from fabric.accept.results import Measurement, Planned
from fabric.access import Site
from fabric.design.intent import FabricIntent
from fabric.parsers import parse_iperf3, parse_perftest, perftest_bw_gbps
from fabric.parsers.perftest import CLOCK_FAILED


@dataclass(frozen=True)
class End:
    """One host's NIC on one rail."""

    host: str
    rail: int
    ip: str
    rdma: str
    netdev: str
    gid_index: int
    tos: int | None = None  # the RoCE ToS (DSCP << 2 | ECN) the traffic must carry; None: the host default


def ends(fabric: FabricIntent) -> dict[tuple[str, int], End]:
    return {(h.name, r.rail): End(h.name, r.rail, str(IPv4Interface(r.address).ip), r.rdma, r.ifname,
                                  h.gid.index, h.nic_qos.roce_tos)
            for h in fabric.hosts.values() for r in h.rails}


def lossless_priority(fabric: FabricIntent, host: str) -> int:
    """The switch/NIC priority the host's RoCE ToS maps to (its DSCP through the host's dscp2prio)."""
    q = fabric.hosts[host].nic_qos
    return q.dscp2prio.get(q.roce_tos >> 2, 0)


def perftest_class(end: End, rdma_cm: bool) -> list[str]:
    """The traffic-class arguments of perftest: `--tclass=<ToS>` on the GRH, or with rdma_cm `-R -T <ToS>`
    (perftest's `-T/--tos` works only with `-R`)."""
    if end.tos is None:
        return ["-R"] if rdma_cm else []
    return ["-R", "-T", str(end.tos)] if rdma_cm else [f"--tclass={end.tos}"]


class Tool:
    """A pair tool: optional server on the receiver, a client on the sender, one number out."""

    name = ""
    unit = ""
    higher_is_better = True
    needs_rdma = False
    base_port = 0
    # the client's words for "no server listening yet" (nothing was measured): the client is started again
    not_connected: tuple[str, ...] = ("refused",)
    # its words for a run that measured nothing and may if run again (perftest's clock calibration): both ends are
    # started once more
    unmeasured: tuple[str, ...] = ()

    def server(self, dst: End, port: int, seconds: float) -> list[str] | None:
        return None

    def client(self, src: End, dst: End, port: int, seconds: float) -> list[str]:
        raise NotImplementedError

    def value(self, client_out: str, server_out: str) -> float:
        raise NotImplementedError


class Iperf3(Tool):
    """TCP bandwidth between rail addresses (the lab's stand-in for ib_write_bw), Gb/s. `-S` carries the RoCE
    ToS, so the switches classify the stand-in like RoCE (the kernel keeps the ECN bits TCP's own)."""

    name, unit, base_port = "iperf3", "Gb/s", 5200
    not_connected = ("unable to connect to server",)  # iperf3 3.x -J "error": refused or --connect-timeout

    def __init__(self, tos: int | None = None, streams: int = 1) -> None:
        self.tos = tos  # None: the End's RoCE ToS; 0: best effort (the ETS check's bulk flow)
        self.streams = streams  # -P: parallel TCP streams

    def server(self, dst: End, port: int, seconds: float) -> list[str]:
        return ["iperf3", "-s", "-1", "-B", dst.ip, "-p", str(port), "-J"]

    def client(self, src: End, dst: End, port: int, seconds: float) -> list[str]:
        tos = self.tos if self.tos is not None else src.tos
        return ["iperf3", "-c", dst.ip, "-B", src.ip, "-p", str(port), "-t", f"{max(1, round(seconds))}",
                "-J", "--connect-timeout", "2000", *(["-S", str(tos)] if tos else []),
                *(["-P", str(self.streams)] if self.streams > 1 else [])]

    def value(self, client_out: str, server_out: str) -> float:
        r = parse_iperf3(client_out, "iperf3 client")
        if r.error:
            raise RuntimeError(f"iperf3: {r.error}")
        s = r.received or r.sent
        if s is None:
            raise RuntimeError("iperf3: no end summary")
        return s.bits_per_second / 1e9


# perftest's client when its TCP rendezvous with the server fails (perftest_communication.c: "Couldn't connect to
# <ip>:<port>", then "Unable to init the socket connection")
PERFTEST_NOT_CONNECTED = ("Couldn't connect to", "Unable to init the socket connection")


class IbWriteBw(Tool):
    """RDMA write bandwidth (perftest), Gb/s at the message size, duration mode."""

    name, unit, needs_rdma, base_port = "ib_write_bw", "Gb/s", True, 18515
    not_connected, unmeasured = PERFTEST_NOT_CONNECTED, (CLOCK_FAILED,)

    def __init__(self, size: int = 1 << 20, qps: int = 4, rdma_cm: bool = False, qp_timeout: int | None = None) -> None:
        """`qp_timeout`: perftest's `-u`, the QPs' local ACK timeout, 4.096 µs × 2^value (None: perftest's 14, 67 ms,
        ample where the path delays an ACK by microseconds; an emulated link can hold one far longer)."""
        self.size, self.qps, self.rdma_cm, self.qp_timeout = size, qps, rdma_cm, qp_timeout

    def _common(self, end: End, port: int, seconds: float) -> list[str]:
        return ["ib_write_bw", "-d", end.rdma, "-x", str(end.gid_index), *perftest_class(end, self.rdma_cm), "-F",
                "--report_gbits", "-s", str(self.size), "-q", str(self.qps), "-D", f"{max(1, round(seconds))}",
                "-p", str(port), *(["-u", str(self.qp_timeout)] if self.qp_timeout is not None else [])]

    def server(self, dst: End, port: int, seconds: float) -> list[str]:
        return self._common(dst, port, seconds)

    def client(self, src: End, dst: End, port: int, seconds: float) -> list[str]:
        return [*self._common(src, port, seconds), dst.ip]

    def value(self, client_out: str, server_out: str) -> float:
        return perftest_bw_gbps(parse_perftest(client_out, "ib_write_bw client"))


class IbWriteLat(Tool):
    """RDMA write latency (perftest), one-way µs at the 99th percentile."""

    name, unit, higher_is_better, needs_rdma, base_port = "ib_write_lat", "us", False, True, 18600
    not_connected, unmeasured = PERFTEST_NOT_CONNECTED, (CLOCK_FAILED,)

    def __init__(self, iterations: int = 5000, rdma_cm: bool = False) -> None:
        self.iterations, self.rdma_cm = iterations, rdma_cm

    def _common(self, end: End, port: int) -> list[str]:
        return ["ib_write_lat", "-d", end.rdma, "-x", str(end.gid_index), *perftest_class(end, self.rdma_cm), "-F",
                "-s", "2", "-n", str(self.iterations), "-p", str(port)]

    def server(self, dst: End, port: int, seconds: float) -> list[str]:
        return self._common(dst, port)

    def client(self, src: End, dst: End, port: int, seconds: float) -> list[str]:
        return [*self._common(src, port), dst.ip]

    def value(self, client_out: str, server_out: str) -> float:
        return lat_p99(parse_perftest(client_out, "ib_write_lat client"))


def lat_p99(result) -> float:
    """p99 one-way latency (µs) of the smallest-size row (-s 2; with -a the 2-byte row); t_max when the
    output has no percentile column."""
    rows = result.lat_rows
    if not rows:
        raise RuntimeError("ib_write_lat: no latency rows")
    row = min(rows, key=lambda r: r.bytes)
    value = row.t_p99 if row.t_p99 is not None else row.t_max
    if value is None:
        raise RuntimeError("ib_write_lat: no p99 or t_max column")
    return value


_RTT = re.compile(r"\btime[=<]([\d.]+) ms")


class Ping(Tool):
    """ICMP echo between rail addresses (the lab's latency stand-in): p99 of RTT/2 in µs."""

    name, unit, higher_is_better = "ping", "us", False

    def __init__(self, count: int = 50, interval: float = 0.01) -> None:
        self.count, self.interval = count, interval

    def client(self, src: End, dst: End, port: int, seconds: float) -> list[str]:
        return ["ping", "-n", "-c", str(self.count), "-i", str(self.interval), "-W", "1", "-I", src.ip, dst.ip]

    def value(self, client_out: str, server_out: str) -> float:
        return ping_p99_us(client_out)


def ping_p99_us(text: str) -> float:
    """p99 (nearest rank) of the per-reply RTT/2 in µs; RuntimeError when nothing came back."""
    rtts = sorted(float(m) for m in _RTT.findall(text))
    if not rtts:
        raise RuntimeError("ping: no replies")
    rank = max(1, math.ceil(0.99 * len(rtts)))
    return rtts[rank - 1] * 1000 / 2


TOOLS: dict[str, type[Tool]] = {t.name: t for t in (Iperf3, IbWriteBw, IbWriteLat, Ping)}


def missing(site: Site, tool: Tool, hosts: list[str], fabric: FabricIntent, *, workers: int = 16) -> str:
    """Why `tool` cannot run on these hosts ('' when it can): binary absent, or no RDMA device; the hosts asked at
    once, the first of them (in order) that cannot run it named."""
    binary = tool.name

    def why(host: str) -> str:
        if not tr.which(site, host, binary):
            return f"{binary} not found on {host}"
        if tool.needs_rdma:
            rails = fabric.hosts[host].rails
            dev = rails[0].rdma if rails else ""
            path = f"{tr.SYSFS}/class/infiniband/{shlex.quote(dev)}"
            if tr.run(site, host, ["sh", "-c", f'test -e "{path}"'], timeout=10).rc != 0:
                return f"no RDMA device {dev} on {host} (/sys/class/infiniband/{dev} missing)"
        return ""

    with ThreadPoolExecutor(max_workers=max(1, min(workers, len(hosts)))) as pool:
        return next((w for w in pool.map(why, hosts) if w), "")


def planned_links(tool: Tool, links: list[tuple[End, End]], *, seconds: float, round_: str) -> list[Planned]:
    """The commands `measure_links` runs for these links: each server, then each client."""
    out = []
    ports = link_ports(tool, links)
    for (_src, dst), port in zip(links, ports, strict=True):
        argv = tool.server(dst, port, seconds)
        if argv:
            out.append(Planned(round=round_, host=dst.host, role="server", command=shlex.join(argv)))
    for (src, dst), port in zip(links, ports, strict=True):
        out.append(Planned(round=round_, host=src.host, role="client",
                           command=shlex.join(tool.client(src, dst, port, seconds))))
    return out


def link_ports(tool: Tool, links: list[tuple[End, End]]) -> list[int]:
    """The server port of each link: the tool's base + rail, + 100 for each earlier link into the same receiver
    NIC (an incast's senders each get their own server)."""
    seen: dict[tuple[str, int], int] = {}
    out = []
    for src, dst in links:
        k = seen.get((dst.host, dst.rail), 0)
        seen[(dst.host, dst.rail)] = k + 1
        out.append(tool.base_port + src.rail + 100 * k)
    return out


# pauses before a client that found no server is started again (None: give up): a server started over SSH on a busy
# host may take seconds to listen, an emulated one (the VM lab on a loaded machine) more than 7.5; about 16.5 s in
# all, within the check's timeout (the loop also stops where the next pause would pass it)
CONNECT_RETRIES = (0.3, 0.6, 1.2, 2.4, 3.0, 3.0, 3.0, 3.0, None)


def measure_links(site: Site, tool: Tool, links: list[tuple[End, End]], *, seconds: float,
                  timeout: float, threshold: float | None, workers: int = 8,
                  rerun_unmeasured: bool = True) -> list[Measurement]:
    """Measure every (src, dst) link at once: all servers up, then all clients; servers always stopped. A link whose
    run measured nothing (`Tool.unmeasured`) is run once more, server too, unless `rerun_unmeasured` is False (links
    judged together, as an incast's senders are: one run later alone is no part of theirs).

    A host may appear once as sender and once as receiver per rail (pairs, rings)."""
    servers: list[subprocess.Popen[str] | None] = []
    ports = link_ports(tool, links)
    server_argvs = [tool.server(dst, port, seconds) for (_src, dst), port in zip(links, ports, strict=True)]
    try:
        for (_src, dst), argv in zip(links, server_argvs, strict=True):
            servers.append(tr.start(site, dst.host, argv, seconds=timeout) if argv else None)
        if any(servers):
            time.sleep(0.3)

        def connect(i: int, argv: list[str], t0: float) -> tr.Completed:
            for pause in CONNECT_RETRIES:  # the server may not listen yet: started again (nothing was measured)
                c = tr.run(site, links[i][0].host, argv, timeout=timeout)
                out = c.stdout + c.stderr
                if (c.rc == 0 or servers[i] is None or not any(w in out for w in tool.not_connected)
                        or pause is None or time.monotonic() - t0 + pause > timeout):
                    break
                time.sleep(pause)
            return c

        def client(i: int) -> tuple[tr.Completed, float]:
            src, dst = links[i]
            argv = tool.client(src, dst, ports[i], seconds)
            t0 = time.monotonic()
            c = connect(i, argv, t0)
            if (rerun_unmeasured and any(w in c.stdout + c.stderr for w in tool.unmeasured)
                    and time.monotonic() - t0 + seconds < timeout):
                if (server := servers[i]) is not None and (again := server_argvs[i]) is not None:
                    tr.stop(server)  # measured nothing: both ends once more
                    servers[i] = tr.start(site, dst.host, again, seconds=timeout)
                c = connect(i, argv, t0)
            return c, time.monotonic() - t0

        with ThreadPoolExecutor(max_workers=max(1, min(workers, len(links)))) as pool:
            done = list(pool.map(client, range(len(links))))
    finally:
        outs = [tr.stop(s) if s is not None else ("", "") for s in servers]
    result = []
    for (src, dst), (c, _took), (s_out, _s_err) in zip(links, done, outs, strict=True):
        m = Measurement(rail=src.rail, src=src.host, dst=dst.host, unit=tool.unit, tool=tool.name,
                        threshold=threshold)
        try:
            if c.rc != 0 and tool.name != "iperf3":
                raise RuntimeError(c.last_error)
            # a run that measured nothing says so on stderr (perftest's calibration): its reader refuses it there
            out = c.stderr + c.stdout if any(w in c.stderr for w in tool.unmeasured) else c.stdout
            m.value = round(tool.value(out, s_out), 3)
        except Exception as exc:  # a failed measurement is a failed link, never a crash
            m.ok, m.detail = False, f"no result: {str(exc).splitlines()[0] if str(exc) else type(exc).__name__}"
            if c.rc != 0 and c.last_error not in m.detail:
                m.detail += f" ({c.last_error})"
            result.append(m)
            continue
        if threshold is not None:
            m.ok = m.value >= threshold if tool.higher_is_better else m.value <= threshold
        result.append(m)
    return result
