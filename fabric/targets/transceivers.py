"""Reading a switch's pluggable modules for `fabric optics` (Driver.transceivers()).

Two ways, by what the NOS offers:
- Linux switch OSes (Cumulus Linux / NVUE, a Linux+FRR white box, the lab): `ethtool -m <port>` per front
  panel port — NVIDIA documents it for Cumulus Linux ("Monitoring Interfaces and Transceivers with
  ethtool", https://docs.nvidia.com/networking-ethernet-software/cumulus-linux-57/Monitoring-and-Troubleshooting/Troubleshooting-Network-Interfaces/Monitoring-Interfaces-and-Transceivers-with-ethtool/);
  a port without a module (or a virtual one) answers with an error: "no module".
- EOS: identity only, from `show inventory | json` (`xcvrSlots` by front-panel slot); no diagnostics.
- SONiC: xcvrd's STATE_DB tables TRANSCEIVER_INFO, TRANSCEIVER_DOM_SENSOR and TRANSCEIVER_DOM_THRESHOLD
  (`sonic-db-cli STATE_DB HGETALL 'TABLE|EthernetN'`); field names from the SONiC CMIS diagnostic
  monitoring HLD (https://github.com/sonic-net/SONiC/pull/1828: temperature, voltage, tx{N}power,
  rx{N}power, tx{N}bias) and xcvrd's threshold keys (temphighalarm … rxpowerlowwarning, txbiashighalarm …).
"""

from __future__ import annotations

import ast
import re
import shlex
from typing import Any

from fabric.errors import InputError
from fabric.parsers.transceiver import Lane, Levels, Module, parse_ethtool_module
from fabric.replies import reader
from fabric.targets import shell

Reading = Module | str  # a module, or why there is none ("no module: …")
PORT_MARK = "=== roce-fabric port "


def ethtool_modules(conn: Any, ports: list[str]) -> dict[str, Reading]:
    """`ethtool -m` of every port in one round trip."""
    if not ports:
        return {}
    script = "; ".join(f"echo {shlex.quote(PORT_MARK + p)}; ethtool -m {shlex.quote(p)} 2>&1; echo \"rc=$?\""
                       for p in ports)
    _, out = shell.run(conn, script, timeout=60 + 2 * len(ports))
    return split_ethtool_dump(out)


@reader('ethtool -m <port> (each port)')
def split_ethtool_dump(out: str) -> dict[str, Reading]:
    """The per-port sections of the dump above → module or the reason there is none."""
    result: dict[str, Reading] = {}
    for section in out.split(PORT_MARK)[1:]:
        port, _, body = section.partition("\n")
        text, _, rc = body.rpartition("rc=")
        port = port.strip()
        if rc.strip() != "0":
            why = next((ln.strip() for ln in text.splitlines() if ln.strip()), f"exit {rc.strip()}")
            result[port] = f"no module ({why})"
            continue
        try:
            result[port] = parse_ethtool_module(text, f"ethtool -m {port}")
        except InputError:
            result[port] = "no module (ethtool -m printed no module identifier)"
    return result


@reader('sonic-db-cli STATE_DB HGETALL TRANSCEIVER_*|<port>')
def _hgetall(text: str) -> dict[str, str]:
    """sonic-db-cli HGETALL output: a Python dict literal (or, on older images, `key value` lines)."""
    text = text.strip()
    if len(text) > 1 << 20:  # one transceiver's table is a few KB: more is no reply of sonic-db-cli
        return {}
    if text.startswith("{"):
        try:
            data = ast.literal_eval(text)
            return {str(k)[:200]: str(v)[:200] for k, v in data.items()} if isinstance(data, dict) else {}
        except (ValueError, TypeError, SyntaxError, RecursionError, MemoryError):  # a device's reply: never raise
            return {}
    lines = [ln for ln in text.splitlines() if ln.strip()]
    return dict(zip(lines[0::2], lines[1::2], strict=False))


def _num(text: str | None) -> float | None:
    if text is None:
        return None
    m = re.match(r"^\s*(-?\d+(?:\.\d+)?)", text)
    return float(m.group(1)) if m and text.strip().upper() not in ("N/A", "-INF") else None


def sonic_module(info: dict[str, str], dom: dict[str, str], thr: dict[str, str]) -> Reading:
    """One port's TRANSCEIVER_* STATE_DB rows → a module (no TRANSCEIVER_INFO row: no module)."""
    if not info:
        return "no module (no TRANSCEIVER_INFO in STATE_DB)"
    lanes = []
    for n in range(1, 9):
        if any(f"{k}{n}{s}" in dom for k, s in (("tx", "power"), ("rx", "power"), ("tx", "bias"))):
            lanes.append(Lane(lane=n, bias=_num(dom.get(f"tx{n}bias")), tx_power=_num(dom.get(f"tx{n}power")),
                              rx_power=_num(dom.get(f"rx{n}power"))))
    names = {"temperature": "temp", "voltage": "vcc", "bias": "txbias", "tx_power": "txpower", "rx_power": "rxpower"}
    thresholds = {metric: Levels(**{f"{side}_{lvl}": _num(thr.get(f"{key}{side}{lvl}"))
                                    for side in ("high", "low") for lvl in ("alarm", "warning")})
                  for metric, key in names.items() if any(k.startswith(key) for k in thr)}
    return Module(identifier=info.get("type", ""), vendor=info.get("manufacturer", ""), part=info.get("model", ""),
                  serial=info.get("serial", ""), revision=info.get("hardware_rev", info.get("vendor_rev", "")),
                  firmware=info.get("active_firmware", ""), temperature=_num(dom.get("temperature")),
                  voltage=_num(dom.get("voltage")), lanes=lanes, thresholds=thresholds)


def sonic_modules(conn: Any, ports: list[str], sudo: str = "") -> dict[str, Reading]:
    out: dict[str, Reading] = {}
    for port in ports:
        rows = []
        for table in ("TRANSCEIVER_INFO", "TRANSCEIVER_DOM_SENSOR", "TRANSCEIVER_DOM_THRESHOLD"):
            _, text = shell.run(conn, f"{sudo}sonic-db-cli STATE_DB HGETALL {shlex.quote(f'{table}|{port}')}")
            rows.append(_hgetall(text))
        out[port] = sonic_module(*rows)
    return out


@reader('show inventory | json')
def eos_inventory_modules(inventory: dict[str, Any], ports: list[str]) -> dict[str, Reading]:
    """`show inventory | json` → per port (EthernetN or EthernetN/M: slot N) the module in that slot."""
    slots = inventory.get("xcvrSlots") or {}
    out: dict[str, Reading] = {}
    for port in ports:
        m = re.match(r"^(?:Ethernet|Et)(\d+)", port)
        slot = slots.get(m.group(1)) if m else None
        vendor = (slot.get("mfgName") or "").strip() if isinstance(slot, dict) else ""
        if not vendor or vendor == "Not Present" or m is None or not isinstance(slot, dict):
            out[port] = "no module (empty slot in show inventory)"
            continue
        out[port] = Module(identifier=f"EOS xcvrSlot {m.group(1)}", vendor=vendor,
                           part=slot.get("modelName", ""), serial=slot.get("serialNum", ""),
                           revision=slot.get("hardwareRev", ""))
    return out
