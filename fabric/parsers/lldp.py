"""LLDP neighbours as each source prints them → one model (`Lldp`: the neighbours seen on a device's ports).

Sources and the shapes read (fixtures and their origins: tests/fixtures/lldp/SOURCE.md):
- SONiC `show lldp table` (sonic-utilities `scripts/lldpshow`): `Capability codes: …`, a tabulate "simple" table
  `LocalPort  RemoteDevice  RemotePortID  Capability  RemotePortDescr` under a rule of dashes, then a rule of 50
  dashes and `Total entries displayed:  N`. Columns are cut where the rule's dashes are; RemoteDevice is empty
  where the neighbour sends no system name. A SONiC neighbour sends its port *alias* as RemotePortID
  (sonic-buildimage `dockers/docker-lldp/lldpmgrd`: `portidsubtype local <alias>`).
- lldpd's `lldpctl -f json` (hosts, FRR/Linux, SONiC's lldp container, Cumulus): lldpd's json_writer.c folds
  every one-member array into its member and every object with a `name` into `{name: object}`, so one interface
  is `"interface": {"eth0": {…}}` and several are `"interface": [{"eth0": {…}}, {"eth1": {…}}]` (a port with two
  neighbours appears twice); a chassis with a system name is `{"<name>": {"id": …}}`, one without is
  `{"id": …}`. `-f json0` (no folding: lists of `{"value": …}` everywhere, `name` kept) is read too.
- NVUE `nv show interface <if> lldp -o json`: `{"neighbor": {"<id>": {"chassis": {"chassis-id", "system-name",
  "system-description", …}, "port": {"name", "description", "type", "ttl"}}}}`; the saved form is an object of
  interface → that document (or `nv show interface -o json`, whose interfaces hold it under `lldp`).
- EOS `show lldp neighbors detail | json`: `lldpNeighbors` → port → `lldpNeighborInfo` (a list) → chassisIdType,
  chassisId, systemName, neighborInterfaceInfo (interfaceIdType, interfaceId quoted, interfaceId_v2,
  interfaceDescription).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from fabric.parsers._common import Model, fail, json_shaped, load_json, require_text
from fabric.replies import reader

MAX_REPLY = 16 * 2**20  # a 512-port switch's lldpctl JSON is ~1 MiB
MAX_NEIGHBORS = 4096  # no switch has more ports; a longer reply is no switch's LLDP table
MAX_FIELD = 255  # LLDP TLV strings are at most 255 octets (IEEE 802.1AB)


@dataclass(slots=True)
class Neighbor:
    """One neighbour seen on a local port. A plain dataclass, its fields typed by the parser that reads them (a
    fabric of 32,768 GPUs reports 200,000 neighbours; a pydantic model each took most of `fabric cabling`'s time)."""

    port: str  # the local port it was seen on
    system_name: str = ""  # "" where the neighbour sends no system name
    chassis_id: str = ""
    chassis_id_type: str = ""  # mac, local, ifname… (as the source names it)
    port_id: str = ""
    port_id_type: str = ""
    port_description: str = ""
    system_description: str = ""
    management: list[str] = field(default_factory=list)
    ttl: int | None = None

    def remote_ports(self) -> list[str]:
        """What may name the neighbour's port: the port id unless it is a MAC address, then the description
        (lldpd on Linux sends the MAC as port id and the interface name as description)."""
        if self.port_id and self.port_id_type not in _MAC_TYPES:
            return [self.port_id, self.port_description] if self.port_description else [self.port_id]
        return [self.port_description] if self.port_description else []


_MAC_TYPES = frozenset({"mac", "macAddress", "MAC", "macaddress"})

class Lldp(Model):
    """Every neighbour a device reported, in the order read."""

    source: str  # lldp-sonic | lldpctl | lldp-nvue | lldp-eos
    neighbors: list[Neighbor]


def _text(value: Any) -> str:
    """A string field: a string, a number, `{"value": …}` or a one-member list of those (lldpctl json0)."""
    if type(value) is str:
        return value[:MAX_FIELD * 4]
    while isinstance(value, list) and value:
        value = value[0]
    if isinstance(value, dict):
        value = value.get("value", "")
        return _text(value)
    if isinstance(value, bool) or value is None:
        return ""
    text = str(value) if isinstance(value, int | float | str) else ""
    return text[:MAX_FIELD * 4]


def _ttl(value: Any) -> int | None:
    text = _text(value)
    return int(text) if text.isascii() and text.isdigit() and len(text) <= 6 else None


def _capped(neighbors: list[Neighbor], file: str) -> list[Neighbor]:
    if len(neighbors) > MAX_NEIGHBORS:
        raise fail(file, None, "", f"at most {MAX_NEIGHBORS} LLDP neighbours (a switch's ports)",
                   "more")
    return neighbors


def _check_size(text: str, file: str, what: str) -> None:
    if len(text) > MAX_REPLY:
        raise fail(file, None, "", f"{what} of at most {MAX_REPLY >> 20} MiB", f"{len(text) >> 20} MiB")


def _document(text: str, file: str, what: str) -> Any:
    """The JSON document of a reply: bounded in size, not empty, valid (each a located problem)."""
    _check_size(text, file, what)
    require_text(text, file, what)
    return load_json(text, file)


# -- SONiC `show lldp table` ------------------------------------------------------------------------------------

_SONIC_HEADER = ("LocalPort", "RemoteDevice", "RemotePortID", "Capability", "RemotePortDescr")


def _spans(rule: str) -> list[tuple[int, int]]:
    """Column spans from a tabulate rule (`-----  ----`): where each run of dashes starts and ends."""
    spans, start = [], None
    for i, ch in enumerate(rule + " "):
        if ch == "-" and start is None:
            start = i
        elif ch != "-" and start is not None:
            spans.append((start, i))
            start = None
    return spans


def _sonic_header(lines: list[str], file: str) -> int:
    for i, line in enumerate(lines):
        if tuple(line.split()) == _SONIC_HEADER:
            return i
        if line.startswith("Error:"):
            raise fail(file, i + 1, "", "show lldp table output", line.strip()[:120])
    raise fail(file, None, "", "show lldp table output (a 'LocalPort  RemoteDevice  RemotePortID  Capability  "
               "RemotePortDescr' header)", "none")


@reader("show lldp table")
def parse_sonic_table(text: str, file: str = "-") -> Lldp:
    """SONiC `show lldp table`; a table without its `Total entries displayed` line, or with another count, was cut
    short."""
    _check_size(text, file, "show lldp table output")
    lines = require_text(text, file, "show lldp table output")
    head = _sonic_header(lines, file)
    if head + 1 >= len(lines) or set(lines[head + 1].strip()) - {"-", " "}:
        raise fail(file, head + 2, "", "a rule of dashes under the header", "none")
    spans = _spans(lines[head + 1])
    if len(spans) != len(_SONIC_HEADER):
        raise fail(file, head + 2, "", f"{len(_SONIC_HEADER)} columns", str(len(spans)))
    neighbors: list[Neighbor] = []
    total = None
    for lineno, line in enumerate(lines[head + 2:], head + 3):
        if line.startswith("Total entries displayed:"):
            total = (lineno, line.split(":", 1)[1].strip())
            break
        if not line.strip() or not set(line.strip()) - {"-"}:
            continue
        cells = [line[a:b].strip() for a, b in spans[:-1]] + [line[spans[-1][0]:].strip()]
        if not cells[0] or " " in cells[0] or len(line) > 4 * MAX_FIELD:
            raise fail(file, lineno, "LocalPort", "a port name in the first column", repr(line[:80]))
        neighbors.append(Neighbor(port=cells[0], system_name=cells[1], port_id=cells[2],
                                   port_description=cells[4]))
        _capped(neighbors, file)
    if total is None:
        raise fail(file, len(lines), "", "a last line 'Total entries displayed:  N'", "none (truncated?)")
    if total[1] != str(len(neighbors)):
        raise fail(file, total[0], "Total entries displayed", f"{len(neighbors)} (the rows above)", total[1])
    return Lldp.model_construct(source="lldp-sonic", neighbors=neighbors)


# -- lldpd: lldpctl -f json / json0 -----------------------------------------------------------------------------

def _members(value: Any) -> list[Any]:
    return value if isinstance(value, list) else [] if value is None else [value]


def _named(item: Any) -> Iterator[tuple[str, dict]]:
    """(name, body) of a folded `{name: body}` or a json0 `{"name": …, …}` object."""
    if not isinstance(item, dict):
        raise ValueError(f"an object per entry, found {type(item).__name__}")
    if "name" in item and not isinstance(item["name"], dict):
        yield _text(item["name"]), item
        return
    for name, body in item.items():
        if not isinstance(body, dict):
            raise ValueError(f"an object for {str(name)[:40]!r}, found {type(body).__name__}")
        yield str(name), body


def _chassis(value: Any) -> tuple[str, dict]:
    """(system name, chassis body): `{"<name>": {…}}`, `{"id": …}` (no name) or json0's `[{"name": […], …}]`."""
    ch = _members(value)[0] if _members(value) else {}
    if not isinstance(ch, dict):
        raise ValueError("a chassis object")
    if "id" in ch or "name" in ch:
        return _text(ch.get("name")), ch
    if len(ch) == 1:
        name, body = next(iter(ch.items()))
        if isinstance(body, dict):
            return str(name), body
    return "", ch


def _id(value: Any) -> tuple[str, str]:
    """(value, type) of an lldpd id: `{"type": "mac", "value": "…"}` (json) or a list of it (json0)."""
    value = _members(value)[0] if _members(value) else {}
    return (_text(value.get("value")), _text(value.get("type"))) if isinstance(value, dict) else (_text(value), "")


def _lldpd_neighbor(port: str, body: dict) -> Neighbor:
    name, ch = _chassis(body.get("chassis"))
    chassis_id, chassis_type = _id(ch.get("id"))
    p = _members(body.get("port"))
    pbody = p[0] if p and isinstance(p[0], dict) else {}
    port_id, port_type = _id(pbody.get("id"))
    mgmt = [_text(m) for m in _members(ch.get("mgmt-ip"))[:16]]
    return Neighbor(port=port, system_name=name, chassis_id=chassis_id, chassis_id_type=chassis_type,
                    port_id=port_id, port_id_type=port_type, port_description=_text(pbody.get("descr")),
                    system_description=_text(ch.get("descr")), management=[m for m in mgmt if m],
                    ttl=_ttl(pbody.get("ttl")))


@reader("lldpctl -f json")
@json_shaped("lldpctl -f json output: {\"lldp\": {\"interface\": …}}")
def parse_lldpctl(text: str, file: str = "-") -> Lldp:
    """lldpd's `lldpctl -f json` (or `-f json0`): one neighbour per interface entry."""
    doc = _document(text, file, "lldpctl -f json output")
    if not isinstance(doc, dict) or "lldp" not in doc:
        raise fail(file, None, "lldp", "lldpctl -f json output: an object with an 'lldp' key",
                   type(doc).__name__ if not isinstance(doc, dict) else f"keys {', '.join(list(doc)[:5])}")
    lldp = doc["lldp"]
    lldp = (lldp[0] if lldp else {}) if isinstance(lldp, list) else lldp
    if not isinstance(lldp, dict):
        raise ValueError("an object under 'lldp'")
    neighbors: list[Neighbor] = []
    for item in _members(lldp.get("interface")):
        for port, body in _named(item):
            neighbors.append(_lldpd_neighbor(port, body))
            _capped(neighbors, file)
    return Lldp.model_construct(source="lldpctl", neighbors=neighbors)


# -- NVUE -------------------------------------------------------------------------------------------------------

_LLDP_KEYS = {"neighbor", "lldp"}


def _nvue_neighbors(port: str, lldp: Any) -> Iterator[Neighbor]:
    if not isinstance(lldp, dict):
        raise ValueError(f"an lldp object for {port[:40]!r}")
    found = lldp.get("neighbor") or {}
    if not isinstance(found, dict):
        raise ValueError(f"an object of neighbours for {port[:40]!r}")
    for key, n in found.items():
        if not isinstance(n, dict):
            raise ValueError(f"an object for neighbour {str(key)[:40]!r}")
        ch, p = n.get("chassis") or {}, n.get("port") or {}
        if not isinstance(ch, dict) or not isinstance(p, dict):
            raise ValueError(f"chassis and port objects for neighbour {str(key)[:40]!r}")
        mgmt = [_text(ch.get(k)) for k in ("management-address-ipv4", "management-address-ipv6")]
        yield Neighbor(port=port, system_name=_text(ch.get("system-name")) or str(key)[:MAX_FIELD],
                       chassis_id=_text(ch.get("chassis-id")), port_id=_text(p.get("name")),
                       port_id_type=_text(p.get("type")), port_description=_text(p.get("description")),
                       system_description=_text(ch.get("system-description")), management=[m for m in mgmt if m],
                       ttl=_ttl(p.get("ttl")))


@reader("nv show interface <swp> lldp -o json")
@json_shaped("NVUE LLDP: an object of interface → `nv show interface <if> lldp -o json`")
def parse_nvue(text: str, file: str = "-", port: str | None = None) -> Lldp:
    """NVUE: an object of interface → its `nv show interface <if> lldp -o json` (or `nv show interface -o json`,
    each interface's under `lldp`); with `port`, the one document of that interface."""
    doc = _document(text, file, "NVUE LLDP output")
    if not isinstance(doc, dict):
        raise fail(file, None, "", "a JSON object", type(doc).__name__)
    if port is None and "neighbor" in doc:
        raise fail(file, None, "neighbor", "an object of interface → its LLDP document (one interface's "
                   "`nv show interface <if> lldp -o json` does not say which interface it is)", "one document")
    per_port = {port: doc} if port is not None else doc
    if per_port and not any(isinstance(b, dict) and (_LLDP_KEYS & set(b) or any(str(k).startswith("dcbx")
                                                                                for k in b))
                            for b in per_port.values()):
        raise fail(file, None, "", "an object of interface → its LLDP document (`neighbor`, `dcbx-…`) or its "
                   "`nv show interface` document (`lldp`)", f"keys {', '.join(map(str, list(per_port)[:5]))}")
    neighbors: list[Neighbor] = []
    for name, body in per_port.items():
        lldp = body.get("lldp", {}) if isinstance(body, dict) and "neighbor" not in body else body
        for n in _nvue_neighbors(str(name), lldp):
            neighbors.append(n)
            _capped(neighbors, file)
    return Lldp.model_construct(source="lldp-nvue", neighbors=neighbors)


# -- EOS --------------------------------------------------------------------------------------------------------

def _eos_neighbor(port: str, n: Any) -> Neighbor:
    if not isinstance(n, dict):
        raise ValueError(f"an object per neighbour of {port[:40]!r}")
    info = n.get("neighborInterfaceInfo") or {}
    if not isinstance(info, dict):
        raise ValueError(f"neighborInterfaceInfo of {port[:40]!r}")
    port_id = _text(info.get("interfaceId_v2")) or _text(info.get("interfaceId")).strip('"')
    return Neighbor(port=port, system_name=_text(n.get("systemName")), chassis_id=_text(n.get("chassisId")),
                    chassis_id_type=_text(n.get("chassisIdType")), port_id=port_id,
                    port_id_type=_text(info.get("interfaceIdType")),
                    port_description=_text(info.get("interfaceDescription")),
                    system_description=_text(n.get("systemDescription")), ttl=_ttl(n.get("ttl")))


@reader("show lldp neighbors detail | json")
@json_shaped("show lldp neighbors detail | json: {\"lldpNeighbors\": {port: {\"lldpNeighborInfo\": […]}}}")
def parse_eos(text: str, file: str = "-") -> Lldp:
    """EOS `show lldp neighbors detail | json`."""
    doc = _document(text, file, "show lldp neighbors detail | json output")
    if not isinstance(doc, dict) or not isinstance(doc.get("lldpNeighbors"), dict):
        raise fail(file, None, "lldpNeighbors", "show lldp neighbors detail | json: an object with "
                   "'lldpNeighbors'", "none")
    neighbors: list[Neighbor] = []
    for port, entry in doc["lldpNeighbors"].items():
        if not isinstance(entry, dict):
            raise ValueError(f"an object for port {str(port)[:40]!r}")
        for n in _members(entry.get("lldpNeighborInfo")):
            neighbors.append(_eos_neighbor(str(port), n))
            _capped(neighbors, file)
    return Lldp.model_construct(source="lldp-eos", neighbors=neighbors)


PARSERS: dict[str, Callable[[str, str], Lldp]] = {
    "lldp-sonic": parse_sonic_table, "lldpctl": parse_lldpctl, "lldp-nvue": parse_nvue, "lldp-eos": parse_eos}
