"""Whether `fabric cabling` can read this host's end of each rail cable: lldpd answers `lldpctl -f json` and sees
a neighbour on every rail NIC. Where it does not, what the NIC itself exposes that explains it.

Findings are warnings on `check` items (section `lldp`): they never fail a plan or apply.

A NIC firmware LLDP agent takes LLDPDUs before the OS sees them. Intel's drivers expose it as an ethtool private
flag, read here with `ethtool --show-priv-flags IF` (i40e: `disable-fw-lldp`, on when the agent is off; ice:
`fw-lldp-agent`, on when the agent runs; Linux Documentation/networking/device_drivers/ethernet/intel/i40e.rst and
ice.rst, "FW-LLDP"). NVIDIA ConnectX (mlx5) keeps its firmware LLDP agent in non-volatile
firmware settings instead, per port: `LLDP_NB_RX_MODE_P<n>`/`LLDP_NB_TX_MODE_P<n>` (OFF(0) … ALL(2)) and
`LLDP_NB_DCBX_P<n>`, shown by `mlxconfig -d DEV query` (NVIDIA MFT mlxconfig; real query outputs list them next to
`CNP_DSCP_P<n>`); reading them needs the MST device, so the plan does not, and docs/hosts.md says how to check.
"""

from __future__ import annotations

import shutil

from fabric.design.intent import HostIntent
from fabric.errors import InputError
from fabric.host.step import Step, same
from fabric.host.tools import tool_output
from fabric.parsers.lldp import parse_lldpctl

TIMEOUT_S = 10.0
MAX_REPLY = 16 * 2**20
INSTALL = "apt install lldpd; systemctl enable --now lldpd"
CANNOT = "`fabric cabling` cannot read this host's end"
# ethtool private flag → the value at which the NIC's firmware LLDP agent runs, and the command that stops it
FW_AGENT_FLAGS = {"disable-fw-lldp": ("off", "on"), "fw-lldp-agent": ("on", "off")}


def _output(argv: list[str]) -> str | None:
    return tool_output(argv, timeout=TIMEOUT_S, max_chars=MAX_REPLY)


def priv_flags(text: str) -> dict[str, str]:
    """`ethtool --show-priv-flags IF`: `name : on|off` lines after the `Private flags for IF:` header."""
    flags = {}
    for line in text.splitlines()[1:]:
        name, sep, value = line.partition(":")
        if sep and value.strip() in ("on", "off"):
            flags[name.strip()] = value.strip()
    return flags


def firmware_agent(netdev: str, ethtool: str | None) -> str:
    """Why the OS may see no LLDPDU on `netdev`: its firmware LLDP agent, as its ethtool private flag says; ""
    where the NIC has no such flag or ethtool cannot tell."""
    exe = ethtool or shutil.which("ethtool")
    text = _output([exe, "--show-priv-flags", netdev]) if exe else None
    flags = priv_flags(text or "")
    for flag, (running, stop) in FW_AGENT_FLAGS.items():
        if flags.get(flag) == running:
            return (f"; {netdev}'s firmware LLDP agent is on (private flag {flag} {running}) and takes LLDPDUs "
                    f"before the OS sees them (ethtool --set-priv-flags {netdev} {flag} {stop})")
    return ""


def _neighbours(exe: str | None, host: str) -> tuple[dict[str, str], tuple[str, str] | None]:
    """The neighbour lldpd sees per local port ("system port"); or lldpd's state and the finding to report."""
    reply = _output([exe, "-f", "json"]) if exe else None
    if reply is None:
        state = "not running" if exe else "not installed"
        return {}, (state, f"lldpd {state} on {host}: {CANNOT} ({INSTALL})")
    try:
        found = parse_lldpctl(reply, "lldpctl -f json").neighbors
    except InputError as exc:
        detail = exc.problems[0].expected
        return {}, ("unreadable reply", f"lldpd's `lldpctl -f json` on {host} replied unreadably ({detail}): {CANNOT}")
    return {n.port: f"{n.system_name or n.chassis_id} {' '.join(n.remote_ports()[:1])}".strip() for n in found}, None


def lldp_steps(intent: HostIntent, lldpctl: str | None, ethtool: str | None) -> list[Step]:
    """One item for lldpd on this host, one per rail NIC for the neighbour it sees there."""
    netdevs = sorted({r.netdev for r in intent.rails})
    seen, problem = _neighbours(lldpctl or shutil.which("lldpctl"), intent.name)
    base = dict(section="lldp", op="check", target="lldpd", name="lldpd", desired="running")
    if problem:
        notes = "".join(firmware_agent(n, ethtool) for n in netdevs)
        return [same(**base, current=problem[0], warning=problem[1] + notes)]
    steps = [same(**base, current="running")]
    for netdev in netdevs:
        item = dict(section="lldp", op="check", target=netdev, name="neighbour", desired="a neighbour")
        if netdev in seen:
            steps.append(same(**item, current=seen[netdev]))
        else:
            steps.append(same(**item, current="none",
                              warning=f"lldpd sees no neighbour on {netdev}" + firmware_agent(netdev, ethtool)))
    return steps
