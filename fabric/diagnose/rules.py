"""Cross-line rules: failures that one line cannot show — a traffic class that differs from the fabric's,
CNPs that nobody handles, a NCCL_IB_HCA entry NCCL never found, a flapping link. Each is a small `_Rule`,
fed the lines that hold one of its keywords, with its own reserved id DG9xx (kept apart from the catalog).
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from fabric.diagnose.jobs import IterationRule, StragglerRule
from fabric.diagnose.logs import host_of
from fabric.diagnose.regex import linear
from fabric.diagnose.report import Finding, Severity
from fabric.diagnose.rulebase import DEFAULT_TOS, RULE_IDS, RULE_TITLES, Rule, TosOf, rule_finding
from fabric.order import natural


def _ecn(tos: int) -> str:
    return ("Not-ECT", "ECT(1)", "ECT(0)", "CE")[tos & 3]


def _tos_text(tos: int) -> str:
    return f"{tos} (DSCP {tos >> 2}, ECN {_ecn(tos)})"


class _TrafficClassRule(Rule):
    """DG901: NCCL_IB_TC differs from the fabric's RoCE ToS. DG902: NCCL on RoCE without NCCL_IB_TC."""

    keywords = ("set by environment", "/RoCE")
    _SET = linear(r"NCCL_IB_TC set by environment to (\d+)")
    _ROCE = linear(r"NET/IB ?: Using .*?/RoCE")

    def __init__(self, *args: Any) -> None:
        super().__init__(*args)
        self.values: dict[tuple[str, int], list[tuple[int, str]]] = defaultdict(list)  # (file, tc)
        self.tc_hosts: set[tuple[str, str]] = set()
        self.env_hosts: set[tuple[str, str]] = set()  # hosts whose ENV lines are in the log
        self.roce: dict[tuple[str, str], list[int]] = defaultdict(list)

    def feed(self, file: str, lineno: int, line: str, rank: str | None = None) -> None:
        if "set by environment" in line:
            host = host_of(line) or ""
            self.env_hosts.add((file, host))
            if "NCCL_IB_TC" in line and (m := self._SET.search(line)):
                self.values[(file, int(m.group(1)))].append((lineno, host))
                self.tc_hosts.add((file, host))
        elif "/RoCE" in line and self._ROCE.search(line):
            self.roce[(file, host_of(line) or "")].append(lineno)

    def findings(self) -> list[Finding]:
        out = []
        by_want: dict[tuple[str, int, int], list[tuple[int, str]]] = defaultdict(list)
        for (file, tc), seen in self.values.items():
            for lineno, host in seen:
                by_want[(file, tc, self.want_tos(host))].append((lineno, host))
        for (file, tc, want), seen in sorted(by_want.items()):
            if tc == want:
                continue
            if tc >> 2 != want >> 2:
                cause = (f"RoCE traffic is marked DSCP {tc >> 2}, but the fabric's lossless class is DSCP "
                         f"{want >> 2}: it lands in another (usually lossy) queue, so congestion drops it "
                         "instead of pausing — completion errors 12, retransmissions, slow collectives.")
            elif tc & 3 == 0:
                cause = (f"The DSCP is right but the packets are not ECN-capable ({_ecn(tc)} instead of "
                         f"{_ecn(want)}): WRED drops them instead of marking them, so DCQCN never slows "
                         "the senders down.")
            else:
                cause = (f"The DSCP is right but the ECN bits are {_ecn(tc)} instead of {_ecn(want)}, "
                         "which the fabric's ECN/WRED and DCQCN settings were not designed for.")
            out.append(rule_finding(
                "DG901", Severity.error, file, [n for n, _ in seen],
                f"NCCL_IB_TC={_tos_text(tc)}; the fabric expects {_tos_text(want)}",
                ({"host": h, "tc": str(tc)} if h else {"tc": str(tc)} for _, h in seen), cause,
                f"Set NCCL_IB_TC={want} in the job environment (or nccl.conf) on every host; "
                "`fabric render` emits it in hosts/<host>/nccl.env."))
        missing = defaultdict(list)
        for (file, host), lines in sorted(self.roce.items()):
            if (file, host) in self.env_hosts and (file, host) not in self.tc_hosts:
                missing[(file, self.want_tos(host))].append((host, lines[0]))
        for (file, want), hosts in sorted(missing.items()):
            out.append(rule_finding(
                "DG902", Severity.warning, file, [n for _, n in hosts],
                f"NCCL uses RoCE but NCCL_IB_TC is not set: traffic class 0 (DSCP 0); the fabric "
                f"expects {_tos_text(want)}",
                ({"host": h} for h, _ in hosts),
                "Without NCCL_IB_TC NCCL sends with traffic class 0, which maps to the default lossy "
                "queue unless the NIC rewrites it (per-device default traffic_class).",
                f"Set NCCL_IB_TC={want}, or confirm /sys/class/infiniband/<dev>/tc/1/traffic_class is "
                f"{want} on these hosts."))
        return out


class _IbHcaRule(Rule):
    """DG903: NCCL_IB_HCA names a device that NCCL did not find (absent, or its port not ACTIVE)."""

    keywords = ("NCCL_IB_HCA", "Using [", "No device found")
    _HCA = linear(r"NCCL_IB_HCA set (?:by environment )?to (\S+?)\.?\s*$")
    _USING = linear(r"NET/IB ?: Using((?: \[\d+\]\S+)*)")
    _DEV = linear(r"\[\d+\]([\w.-]+):(\d+)")

    def __init__(self, *args: Any) -> None:
        super().__init__(*args)
        self.spec: dict[tuple[str, str], tuple[int, str]] = {}
        self.found: dict[tuple[str, str], list[tuple[str, str]]] = {}

    def feed(self, file: str, lineno: int, line: str, rank: str | None = None) -> None:
        if "NCCL_IB_HCA" in line and (m := self._HCA.search(line)):
            self.spec.setdefault((file, host_of(line) or ""), (lineno, m.group(1)))
        elif "NET/IB" in line:
            key = (file, host_of(line) or "")
            if (m := self._USING.search(line)) and key not in self.found:
                self.found[key] = self._DEV.findall(m.group(1))
            elif "No device found" in line:
                self.found.setdefault(key, [])

    def findings(self) -> list[Finding]:
        per_file: dict[str, list[tuple[int, str, str, str, list[str]]]] = defaultdict(list)
        for key, (lineno, spec) in sorted(self.spec.items()):
            if key not in self.found or spec.startswith("^"):
                continue  # NCCL's pick not in the log, or an exclusion list (absent names are harmless)
            exact = spec.startswith("=")
            found = self.found[key]
            for entry in filter(None, spec.lstrip("=").split(",")):
                name, _, port = entry.partition(":")
                port = port.split(":")[0]
                if not any((dev == name if exact else dev.startswith(name)) and (not port or p == port)
                           for dev, p in found):
                    per_file[key[0]].append((lineno, key[1], name, spec, [d for d, _ in found]))
        out = []
        for file, missing in per_file.items():
            names = sorted({m[2] for m in missing})
            spec, found = missing[0][3], sorted({d for m in missing for d in m[4]}, key=natural)
            out.append(rule_finding(
                "DG903", Severity.error, file, [m[0] for m in missing],
                f"NCCL_IB_HCA={spec} names {', '.join(names)}, which NCCL did not find "
                f"(it uses: {', '.join(found) or 'no RDMA device'})",
                ({"host": h, "dev": n} if h else {"dev": n} for _, h, n, _, _ in missing),
                "The device named in NCCL_IB_HCA does not exist on this host (typo, different mlx5 "
                "numbering, device not passed into the container) or none of its ports is ACTIVE, so "
                "NCCL silently runs on fewer rails — or falls back to sockets.",
                "`ibdev2netdev` and `ibv_devinfo` on the host; derive NCCL_IB_HCA from the inventory "
                "(`fabric render` writes nccl.env) instead of hand-maintaining it."))
        return out


_CnpKey = tuple[str, str, str]  # (file, host, device)


class _CnpRule(Rule):
    """DG904: np_cnp_sent grows but rp_cnp_handled stays flat everywhere: CNPs are never acted on."""

    keywords = ("mlx5_", "_cnp_")
    _COUNTER = linear(r"\b(np_cnp_sent|rp_cnp_handled)\b\s*[:=]?\s*(\d+)")
    _DEV = linear(r"\b(mlx5_(?:bond_)?\d+)\b")

    def __init__(self, *args: Any) -> None:
        super().__init__(*args)
        self.context_dev: dict[str, str] = {}
        # (file, host, dev) -> counter -> [(lineno, value)]
        self.samples: dict[tuple[str, str, str], dict[str, list[tuple[int, int]]]] = defaultdict(
            lambda: defaultdict(list))

    def feed(self, file: str, lineno: int, line: str, rank: str | None = None) -> None:
        dev_m = self._DEV.search(line) if "mlx5_" in line else None
        if dev_m:
            self.context_dev[file] = dev_m.group(1)
        if "_cnp_" not in line:
            return
        key = (file, host_of(line) or "", dev_m.group(1) if dev_m else self.context_dev.get(file, ""))
        for name, value in self._COUNTER.findall(line):
            self.samples[key][name].append((lineno, int(value)))

    def findings(self) -> list[Finding]:
        sent = {k: c["np_cnp_sent"] for k, c in self.samples.items() if c.get("np_cnp_sent")}
        handled = {k: c["rp_cnp_handled"] for k, c in self.samples.items() if c.get("rp_cnp_handled")}
        if not sent or not handled:
            return []
        series = any(len(v) > 1 for v in sent.values())
        growth, reacted = self._growth(sent, handled, series)
        if series and not reacted:
            return []
        if sum(reacted.values()) > 0:
            return self._asymmetry(reacted, handled, series) if sum(growth.values()) > 0 else []
        return [self._unhandled(file, growth, sent, series)
                for file in sorted({k[0] for k, g in growth.items() if g > 0})]

    @staticmethod
    def _growth(sent: dict[_CnpKey, list[tuple[int, int]]], handled: dict[_CnpKey, list[tuple[int, int]]],
                series: bool) -> tuple[dict[_CnpKey, int], dict[_CnpKey, int]]:
        """CNPs sent and handled per device: the growth over snapshots in time, else one snapshot's totals since
        boot."""
        if series:
            return ({k: v[-1][1] - v[0][1] for k, v in sent.items() if len(v) > 1},
                    {k: v[-1][1] - v[0][1] for k, v in handled.items() if len(v) > 1})
        return {k: v[-1][1] for k, v in sent.items()}, {k: v[-1][1] for k, v in handled.items()}

    @staticmethod
    def _unhandled(file: str, growth: dict[_CnpKey, int], sent: dict[_CnpKey, list[tuple[int, int]]],
                   series: bool) -> Finding:
        """DG904 for one file: CNPs sent on its devices, none handled anywhere in the logs."""
        keys = [k for k, g in growth.items() if k[0] == file and g > 0]
        sign = "+" if series else ""
        parts = [f"{sign}{growth[k]} on {k[2] or '?'}{f' ({k[1]})' if k[1] else ''}" for k in keys]
        return rule_finding(
            "DG904", Severity.error if series else Severity.warning, file,
            [n for k in keys for n, _ in sent[k]],
            f"np_cnp_sent {', '.join(parts)}; rp_cnp_handled {sign}0 on every device in the logs",
            ({"host": k[1], "dev": k[2]} for k in keys),
            "Receivers see ECN-marked RoCE packets and send CNPs, but no sender's reaction point "
            "handles them, so DCQCN never reduces rates and congestion turns into PFC pauses and "
            "pause storms. Typical causes: roce_rp not enabled on the RoCE priority, CNPs sent with "
            "a DSCP/priority the switch drops or queues behind data, or a mismatched CNP policy "
            "between NIC firmware settings and the switch.",
            "On the senders: `cat /sys/class/net/<if>/ecn/roce_rp/enable/<prio>` must be 1; compare "
            "CNP DSCP/802.1p (np_cnp_dscp, CNP_DSCP_P1) with the switch's CNP class; check "
            "rp_cnp_ignored.")

    def _asymmetry(self, reacted: dict[tuple[str, str, str], int],
                   handled: dict[tuple[str, str, str], list[tuple[int, int]]], series: bool) -> list[Finding]:
        """DG908: CNPs flow and most senders' reaction points handle them, but some handle none. A device
        is judged only against a clear majority (at least two others handling CNPs, it none at all)."""
        healthy = [v for v in reacted.values() if v > 0]
        flat = [k for k, v in reacted.items() if v == 0]
        if len(healthy) < 2 or not flat or len(flat) >= len(healthy):
            return []
        sign = "+" if series else ""
        typical = sorted(healthy)[len(healthy) // 2]
        out = []
        for file in sorted({k[0] for k in flat}):
            keys = [k for k in flat if k[0] == file]
            names = ", ".join(f"{k[2] or '?'}{f' ({k[1]})' if k[1] else ''}" for k in keys)
            out.append(rule_finding(
                "DG908", Severity.error if series else Severity.warning, file,
                [n for k in keys for n, _ in handled[k]],
                f"rp_cnp_handled {sign}0 on {names}; {len(healthy)} other device(s) handled {sign}{typical} "
                "(median) while CNPs were being sent",
                ({"host": k[1], "dev": k[2]} for k in keys),
                "The fabric marks congestion and the receivers send CNPs; the other senders slow down, "
                "this one does not. Its NIC keeps sending at full rate into congestion, so its flows cause "
                "the PFC pauses everyone else pays for. Typical causes on that host only: roce_rp disabled "
                "on the RoCE priority (the host agent never ran, or a reboot lost the setting), different "
                "NIC firmware defaults, or its traffic marked with another DSCP the switch does not ECN-mark.",
                "On that host: `cat /sys/class/net/<if>/ecn/roce_rp/enable/<prio>` must be 1, compare "
                "`mlxconfig -d <dev> q` with a healthy host, and `fabric host plan` for drift; if it sent no "
                "traffic in the interval, this is not a fault."))
        return out


class _LinkFlapRule(Rule):
    """DG905: the same NIC port went down more than once — a flapping link."""

    keywords = ("Link down",)
    _LINK = linear(r"mlx5_core (?P<pci>[0-9a-fA-F]{4}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.\d)"
                       r"(?: (?P<ifname>[\w.-]+))?: Link down")

    def __init__(self, *args: Any) -> None:
        super().__init__(*args)
        self.downs: dict[tuple[str, str, str, str], list[int]] = defaultdict(list)

    def feed(self, file: str, lineno: int, line: str, rank: str | None = None) -> None:
        if "Link down" in line and (m := self._LINK.search(line)):
            self.downs[(file, host_of(line) or "", m.group("pci"), m.group("ifname") or "")].append(lineno)

    def findings(self) -> list[Finding]:
        flaps: dict[str, list[tuple[str, str, str, list[int]]]] = defaultdict(list)
        for (file, host, pci, ifname), lines in sorted(self.downs.items()):
            if len(lines) > 1:
                flaps[file].append((host, pci, ifname, lines))
        return [rule_finding(
            "DG905", Severity.error, file, [n for *_, lines in ports for n in lines],
            "; ".join(f"{ifname or pci} down {len(lines)} times" + (f" on {host}" if host else "")
                      for host, pci, ifname, lines in ports),
            ({k: v for k, v in (("host", h), ("pci", p), ("ifname", i)) if v} for h, p, i, _ in ports),
            "The link went down repeatedly: a marginal cable or optic (dirty connector, high BER), a "
            "module overheating, or auto-negotiation/FEC mismatch with the leaf port. Every flap "
            "breaks the RDMA connections on that rail.",
            "`mlxlink -d <pci> -m -c -e` (FEC, BER, module temperature, rx power) on the host and the "
            "leaf port's counters; swap the cable/optic of this rail if errors keep counting.")
            for file, ports in flaps.items()]


RULES: tuple[type[Rule], ...] = (_TrafficClassRule, _IbHcaRule, _CnpRule, _LinkFlapRule, StragglerRule,
                                 IterationRule)
__all__ = ["DEFAULT_TOS", "RULES", "RULE_IDS", "RULE_TITLES", "TosOf"]
