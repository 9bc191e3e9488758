"""LLDP outputs of a fabric as each source prints them, for the cabling tests and bench/cabling_scale.py.

The hall is a list of cables (pairs of (device, port)): the model's links, or a copy with faults applied
(`swap_far`, `pull`). `write` renders what every device's LLDP shows of it, in the formats of the real outputs in
tests/fixtures/lldp (SOURCE.md): SONiC `show lldp table` (tabulate "simple", rule widths as in sonic-utilities'
test), NVUE interface → `nv show interface <if> lldp -o json`, EOS `show lldp neighbors detail | json`, and lldpd's
`lldpctl -f json` with its folding (one interface: an object; several: a list of `{name: body}`) for hosts and FRR.

What each end sends follows its software: a host's and an FRR switch's lldpd send the MAC as port id and the
interface name as description; Cumulus' lldpd the interface name (ifname); SONiC's lldpmgrd the port alias (local);
EOS the interface name.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from fabric.design.cabling import alias_of
from fabric.design.topology import Topo

End = tuple[str, str]
Cable = tuple[End, End]
EXT = {"sonic": "lldp-sonic", "nvue": "lldp-nvue", "eos": "lldp-eos", "frr": "lldpctl"}


def hall(topo: Topo) -> list[Cable]:
    """The cables as the model has them."""
    return [((ln.a, ln.a_port), (ln.b, ln.b_port)) for ln in topo.links]


def find(cables: list[Cable], end: End) -> int:
    return next(i for i, (a, b) in enumerate(cables) if end in (a, b))


def swap_far(cables: list[Cable], one: End, other: End) -> list[Cable]:
    """The two cables of the ends `one` and `other` swapped at those ends (a person plugged each in the other's
    port)."""
    out = list(cables)
    i, j = find(out, one), find(out, other)
    (a, b), (c, d) = out[i], out[j]
    far_i, far_j = (b if a == one else a), (d if c == other else c)
    out[i], out[j] = (other, far_i), (one, far_j)
    return out


def pull(cables: list[Cable], end: End) -> list[Cable]:
    return [c for c in cables if end not in c]


def mac(end: End) -> str:
    digest = hashlib.sha1(f"{end[0]}:{end[1]}".encode()).digest()
    return "02:" + ":".join(f"{b:02x}" for b in digest[:5])


def sends(topo: Topo, end: End) -> tuple[str, str, str]:
    """(port id, its type as lldpd names it, port description) that `end` sends."""
    sw = topo.switches.get(end[0])
    if sw is None or sw.target == "frr":
        return mac(end), "mac", end[1]
    if sw.target == "sonic":
        return alias_of(sw).get(end[1], end[1]), "local", ""
    return end[1], "ifname", end[1] if sw.target == "nvue" else ""


def neighbours(cables: list[Cable]) -> dict[str, list[tuple[str, End]]]:
    """Device → [(local port, far end)]: what each device sees."""
    out: dict[str, list[tuple[str, End]]] = {}
    for a, b in cables:
        out.setdefault(a[0], []).append((a[1], b))
        out.setdefault(b[0], []).append((b[1], a))
    return out


def sonic_table(topo: Topo, seen: list[tuple[str, End]]) -> str:
    header = ["LocalPort", "RemoteDevice", "RemotePortID", "Capability", "RemotePortDescr"]
    rows = []
    for port, far in seen:
        pid, _, descr = sends(topo, far)
        rows.append([port, far[0], pid, "BR" if far[0] in topo.switches else "O", descr])
    widths = [max(len(h) + 2, *(len(r[i]) for r in rows)) for i, h in enumerate(header)]

    def line(cells: list[str]) -> str:
        return "  ".join(c.ljust(w) for c, w in zip(cells[:-1], widths, strict=False)) + "  " + cells[-1]

    return "\n".join(["Capability codes: (R) Router, (B) Bridge, (O) Other", line(header),
                      "  ".join("-" * w for w in widths), *(line(r).rstrip() for r in rows), "-" * 50,
                      f"Total entries displayed:  {len(rows)}"]) + "\n"


def lldpctl_json(topo: Topo, seen: list[tuple[str, End]]) -> str:
    items = []
    for i, (port, far) in enumerate(seen, 1):
        pid, kind, descr = sends(topo, far)
        capability = [{"type": "Bridge", "enabled": far[0] in topo.switches},
                      {"type": "Router", "enabled": far[0] in topo.switches}]
        p: dict = {"id": {"type": kind, "value": pid}, "ttl": "120"}
        if descr:
            p["descr"] = descr
        items.append({port: {"via": "LLDP", "rid": str(i), "age": "0 day, 02:41:07",
                             "chassis": {far[0]: {"id": {"type": "mac", "value": mac((far[0], ""))},
                                                  "descr": "fabric test", "capability": capability}},
                             "port": p}})
    lldp = {} if not items else {"interface": items[0] if len(items) == 1 else items}
    return json.dumps({"lldp": lldp}, indent=2) + "\n"


def nvue_json(topo: Topo, seen: list[tuple[str, End]]) -> str:
    doc: dict = {}
    for port, far in seen:
        pid, kind, descr = sends(topo, far)
        neighbor = {"chassis": {"chassis-id": mac((far[0], "")), "system-name": far[0]},
                    "port": {"name": pid, "type": kind, "description": descr, "ttl": 120}}
        doc.setdefault(port, {"neighbor": {}})["neighbor"][far[0]] = neighbor
    return json.dumps(doc, indent=2) + "\n"


def eos_json(topo: Topo, seen: list[tuple[str, End]]) -> str:
    ports: dict = {}
    for port, far in seen:
        pid, kind, descr = sends(topo, far)
        chassis = mac((far[0], "")).replace(":", "")
        info = {"interfaceIdType": {"mac": "macAddress", "local": "local"}.get(kind, "interfaceName"),
                "interfaceId": f'"{pid}"', "interfaceId_v2": pid, "interfaceDescription": descr}
        ports.setdefault(port, {"lldpNeighborInfo": []})["lldpNeighborInfo"].append({
            "chassisIdType": "macAddress", "chassisId": f"{chassis[:4]}.{chassis[4:8]}.{chassis[8:12]}",
            "systemName": far[0], "neighborInterfaceInfo": info})
    return json.dumps({"lldpNeighbors": ports}) + "\n"


RENDER = {"lldp-sonic": sonic_table, "lldpctl": lldpctl_json, "lldp-nvue": nvue_json, "lldp-eos": eos_json}


def write(topo: Topo, cables: list[Cable], directory: Path, skip: frozenset[str] = frozenset()) -> Path:
    """DIR/<device>.<ext> for every device of `topo` but those in `skip` (devices not read)."""
    directory.mkdir(parents=True, exist_ok=True)
    seen = neighbours(cables)
    for device in (*topo.switches, *topo.hosts):
        if device in skip:
            continue
        ext = EXT[topo.switches[device].target] if device in topo.switches else "lldpctl"
        (directory / f"{device}.{ext}").write_text(RENDER[ext](topo, seen.get(device, [])))
    return directory
