"""What every cross-line rule shares: the `Rule` base, the table of reserved ids DG9xx (title, sources),
the builder of a rule's finding, and `Ranks` — which host (and NIC) each rank of a job ran on, as the
logs tell it (launcher prefixes, `ncclCommInitRank`, NCCL's channel lines)."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from fabric.diagnose.report import BINDING_KEYS, MAX_SUBJECTS, Finding, Severity

DEFAULT_TOS = 106  # DSCP 26 << 2 | ECT(0): the nvidia-roce preset's RoCE traffic class
TosOf = Callable[[str], int | None]  # a log's host name → the RoCE ToS its inventory gives it (None: unknown)

RULE_TITLES = {
    "DG901": "NCCL_IB_TC differs from the fabric's RoCE traffic class",
    "DG902": "NCCL on RoCE without NCCL_IB_TC (traffic class 0)",
    "DG903": "NCCL_IB_HCA names a device NCCL did not find",
    "DG904": "CNPs sent but never handled (DCQCN not reacting)",
    "DG905": "NIC link flapping",
    "DG906": "Collective straggler: a rank is behind the others",
    "DG907": "Sustained slowdown in iteration times",
    "DG908": "One sender does not react to CNPs while the others do",
}
RULE_SOURCES: dict[str, tuple[str, ...]] = {
    "DG901": ("nccl",), "DG902": ("nccl",), "DG903": ("nccl",), "DG904": ("any",), "DG905": ("kernel",),
    "DG906": ("nccl",), "DG907": ("any",), "DG908": ("any",),
}
RULE_IDS = frozenset(RULE_TITLES)


@dataclass
class RankInfo:
    """Where one rank of a job ran, as far as the logs say."""

    host: str = ""
    devs: list[str] = field(default_factory=list)  # RDMA devices its NET/IB channels used


class Ranks:
    """Rank → host and NIC, learned from every log of a run (ranks are global to the job)."""

    _INIT = re.compile(r"ncclCommInitRank comm \S+ rank (\d+) nranks (\d+)")
    _USING = re.compile(r"NET/IB ?: Using((?: \[\d+\][\w.-]+:\d+(?:/\w+)?)*)")
    _DEV = re.compile(r"\[(\d+)\]([\w.-]+):\d+")
    _CHANNEL = re.compile(r"Channel \d+(?:/\d+)? : (\d+)\[\w+\] -> (\d+)\[\w+\] \[(send|receive)\] via NET/IB/(\d+)")

    def __init__(self) -> None:
        self.info: dict[str, RankInfo] = {}
        self.world = 0  # the largest nranks of any communicator seen
        self._using: dict[str, dict[str, str]] = {}  # host → NET/IB index → device
        self._nets: dict[str, set[str]] = {}  # rank → NET/IB indexes its channels used

    def saw(self, rank: str | None, host: str | None, line: str) -> None:
        """Learn from one line: its launcher rank and host, NCCL's init and channel lines."""
        if rank is not None and host:
            self.info.setdefault(rank, RankInfo()).host = self.info.get(rank, RankInfo()).host or host
        if "ncclCommInitRank" in line and host and (m := self._INIT.search(line)):
            self.world = max(self.world, int(m.group(2)))
            if int(m.group(2)) == self.world:
                self.info.setdefault(m.group(1), RankInfo()).host = host
        elif "NET/IB" in line and host:
            if (m := self._USING.search(line)) and m.group(1):
                self._using.setdefault(host, dict(self._DEV.findall(m.group(1))))
            elif (c := self._CHANNEL.search(line)):
                local = c.group(1) if c.group(3) == "send" else c.group(2)
                self.info.setdefault(local, RankInfo()).host = self.info.get(local, RankInfo()).host or host
                self._nets.setdefault(local, set()).add(c.group(4))

    def host(self, rank: str) -> str:
        info = self.info.get(rank)
        return info.host if info is not None else ""

    def devs(self, rank: str) -> list[str]:
        """The RDMA devices the rank's network channels used (NET/IB/k → the host's k-th device)."""
        using = self._using.get(self.host(rank), {})
        return sorted({using[k] for k in self._nets.get(rank, ()) if k in using})

    def subject(self, rank: str) -> dict[str, str]:
        """A finding subject for `rank`: host and NIC where known (a rank on several NICs gives none)."""
        subject = {"rank": rank}
        if host := self.host(rank):
            subject["host"] = host
        if len(devs := self.devs(rank)) == 1:
            subject["dev"] = devs[0]
        return subject

    def where(self, rank: str) -> str:
        """`rank 5 (gpu-b02, mlx5_1)` for evidence text."""
        s = self.subject(rank)
        extra = ", ".join(s[k] for k in ("host", "dev") if k in s) or ", ".join(self.devs(rank))
        return f"rank {rank}" + (f" ({extra})" if extra else "")


class Rule:
    """A check that needs more than one line. Fed the lines holding a keyword (with the rank that printed
    them, where a launcher prefix or PyTorch says so); reports at the end.

    `expected_tos` is the fabric's RoCE ToS; `tos_of` (from an inventory) gives a host's own, where known;
    `ranks` is the run's rank → host map, filled while the logs are read."""

    keywords: tuple[str, ...] = ()

    def __init__(self, expected_tos: int, tos_of: TosOf | None = None, ranks: Ranks | None = None) -> None:
        self.expected_tos = expected_tos
        self.tos_of = tos_of
        self.ranks = ranks if ranks is not None else Ranks()

    def want_tos(self, host: str) -> int:
        """The ToS expected of `host`: its inventory's, else the fabric's."""
        tos = self.tos_of(host) if self.tos_of is not None and host else None
        return self.expected_tos if tos is None else tos

    def feed(self, file: str, lineno: int, line: str, rank: str | None = None) -> None:
        raise NotImplementedError

    def findings(self) -> list[Finding]:
        raise NotImplementedError


def rule_finding(rule_id: str, severity: Severity, file: str, lines: list[int], evidence: str,
                 subjects: Iterable[dict[str, str]], cause: str, next_step: str,
                 details: dict[str, list[str]] | None = None) -> Finding:
    uniq = list({tuple(sorted(s.items())): s for s in subjects if any(s.values())}.values())[:MAX_SUBJECTS]
    return Finding(id=rule_id, title=RULE_TITLES[rule_id], severity=severity, rule="cross-line",
                   sources=list(RULE_SOURCES[rule_id]), file=file, first_line=min(lines),
                   last_line=max(lines), count=len(lines), evidence=evidence,
                   subjects=[{k: s[k] for k in BINDING_KEYS if s.get(k)} for s in uniq],
                   details=details or {}, cause=cause, next_step=next_step)
