"""The report model of `fabric diagnose`: findings (repeated hits of one signature or rule in one log),
the log files read, and the binding of findings to places in a fabric (`bind`, with --inventory)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict

from fabric.design.intent import FabricIntent
from fabric.diagnose.bind import FabricIndex, Located, bind_subjects
from fabric.findings import SEVERITIES, Severity
from fabric.findings import Finding as BaseFinding

__all__ = ["BINDING_KEYS", "SEVERITIES", "Finding", "LogFile", "Report", "Severity", "bind"]
# Named groups an inventory binding resolves to a host, NIC, rail, leaf port or cable (or checks
# against the intended GID index / traffic class). Every other named group is a detail.
BINDING_KEYS = ("host", "rank", "dev", "port", "ifname", "pci", "addr", "peer_addr", "oob_addr", "peer_host",
                "gid_index", "tc", "switch_port")
MAX_SUBJECTS = 50
MAX_DETAIL_VALUES = 20


class Finding(BaseFinding):
    """Repeated hits of one signature (or one cross-line rule) in one log file (severity, title, file: the
    shared fields of fabric.findings). `rule` says where it came from: the catalog or a cross-line rule."""

    model_config = ConfigDict(frozen=True)

    id: str
    rule: Literal["catalog", "cross-line"]
    sources: list[str]
    file: str
    first_line: int
    last_line: int
    count: int
    evidence: str  # the first matching line, or what a cross-line rule compared
    # distinct combinations of BINDING_KEYS seen in the hits, e.g. {"host": "gpu-a01", "dev": "mlx5_3"}
    subjects: list[dict[str, str]]
    details: dict[str, list[str]]  # distinct values of the other named groups
    cause: str
    next_step: str
    located: list[Located] = []  # with --inventory: the hosts, rail NICs, leaf ports and cables named

    @property
    def code(self) -> str:
        return self.id

    @property
    def host_fault(self) -> bool:
        """The finding names the faulty host itself — a kernel/NIC/GPU signature on that host (DG2xx), a flapping
        link (DG905), the straggler (DG906), the sender that ignores CNPs (DG908) — not a symptom every peer of
        a failed job logs (completion errors, watchdog timeouts), which would drain the healthy hosts too."""
        return self.id.startswith("DG2") or self.id in ("DG905", "DG906", "DG908")

    @property
    def where(self) -> str:
        span = f"{self.first_line}" if self.first_line == self.last_line else f"{self.first_line}-{self.last_line}"
        return f"{self.file}:{span}"


class LogFile(BaseModel):
    """One input: its name, how many lines it had, which tools' output it looked like."""

    name: str
    lines: int
    kinds: list[str]


class Report(BaseModel):
    """Everything `fabric diagnose` found."""

    files: list[LogFile]
    findings: list[Finding]
    expected_tos: int
    inventory: str | None = None  # the fabric the findings were bound to

    def counts(self) -> dict[str, int]:
        return {sev: sum(f.severity == sev for f in self.findings) for sev in SEVERITIES}

    @property
    def has_errors(self) -> bool:
        return any(f.severity is Severity.error for f in self.findings)


def bind(report: Report, fabric: FabricIntent) -> Report:
    """The report with every finding's subjects resolved to places in `fabric` (`located`)."""
    index = FabricIndex(fabric)
    findings = [f.model_copy(update={"located": bind_subjects(f.subjects, index)}) for f in report.findings]
    return report.model_copy(update={"findings": findings, "inventory": fabric.name})
