"""What the host agent and the fleet run take (their options) and what the agent reports: one item per setting,
with its status and reason."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from fabric.errors import ReplyError
from fabric.replies import json_reply, reader

Status = Literal["changed", "unchanged", "skipped", "failed"]
Section = Literal["link", "address", "route", "rule", "sriov", "rdma", "sysctl", "qos", "roce", "dcqcn", "gid",
                  "gpudirect", "persist", "lldp"]


@dataclass(frozen=True)
class AgentOptions:
    """Where the agent works on this host and with which tools: the network namespace, the roots of sysfs
    and procfs (a prepared tree in tests), where boot-time files go (`persist_root`, None: not installed), and
    `mlnx_qos`, `mlxconfig` (or `mstconfig`), iproute2 `rdma`, lldpd's `lldpctl` and `ethtool` (None: the one on
    PATH)."""

    netns: str | None = None
    sysfs_root: Path = Path("/sys")
    procfs_root: Path = Path("/proc")
    mlnx_qos: str | None = None
    persist_root: Path | None = None
    mlxconfig: str | None = None
    rdma_tool: str | None = None
    lldpctl: str | None = None
    ethtool: str | None = None


@dataclass(frozen=True)
class FleetOptions:
    """How a fleet run goes: `limit` (an Ansible host pattern), `forks` hosts at once, in batches of `serial`;
    `agent` is the fabric executable on the hosts and `python` their interpreter (None: the site's), called
    with `agent_args`; intents go to `remote_dir`; `become` sudo (None: unless the user is root); a host may take
    `timeout` seconds (its intent shipped, the agent run) before it is reported failed (one that hangs)."""

    limit: str | None = None
    forks: int = 50
    serial: int | None = None
    agent: str | None = None
    agent_args: list[str] = field(default_factory=list)
    remote_dir: str = "/var/lib/roce-fabric"
    become: bool | None = None
    python: str | None = None
    timeout: int = 600


class Item(BaseModel):
    """One setting. In a plan `changed` means "would change"; in a result it means it was changed.

    `op` is what the change does (add/remove/set/create/check); `current` and `desired` are the
    values as text; `reason` says why it was skipped or failed; `warning` flags a mismatch that is
    not an error (a GID index that differs from what NCCL is told).
    """

    model_config = ConfigDict(extra="forbid")

    section: Section
    target: str
    name: str
    op: Literal["add", "remove", "set", "create", "check"] = "set"
    current: str | None = None
    desired: str | None = None
    status: Status
    reason: str = ""
    warning: str = ""


class Counts(BaseModel):
    changed: int = 0
    unchanged: int = 0
    skipped: int = 0
    failed: int = 0


class HostPlan(BaseModel):
    """The diff between a host's live state and its intent; nothing was changed."""

    model_config = ConfigDict(extra="forbid")

    host: str
    mode: Literal["plan", "apply"] = "plan"
    netns: str | None = None
    items: list[Item]
    warnings: list[str] = []

    @property
    def counts(self) -> Counts:
        c = Counts()
        for it in self.items:
            setattr(c, it.status, getattr(c, it.status) + 1)
        return c

    def ok(self, strict: bool = False) -> bool:
        """No failed item (and, when strict, no skipped item)."""
        bad = {"failed", "skipped"} if strict else {"failed"}
        return not any(it.status in bad for it in self.items)

    def summary(self) -> dict[str, object]:
        return {"host": self.host, "mode": self.mode, **self.counts.model_dump(), "ok": self.ok()}


class HostResult(HostPlan):
    """What apply did: `changed` items were changed, `failed` items were attempted and failed."""

    mode: Literal["plan", "apply"] = "apply"


class HostReport(HostPlan):
    """What `fabric host plan|apply --format json` prints: the plan or result with its counts and verdict."""

    counts_: Counts | None = Field(None, alias="counts")
    ok_: bool | None = Field(None, alias="ok")
    strict: bool = False


AGENT_REPORT = "fabric host plan|apply --format json"


@reader(AGENT_REPORT)
def host_report(text: str) -> HostReport:
    """The agent's report as a host printed it; a reply of another shape is a ReplyError at its first wrong field."""
    data = json_reply(text, AGENT_REPORT)
    try:
        return HostReport.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        raise ReplyError(AGENT_REPORT, first["msg"].removeprefix("Input should be "), repr(first.get("input"))[:80],
                         where=".".join(map(str, first["loc"])) or "the document") from None
