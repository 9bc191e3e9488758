"""What the host agent reports: one item per setting, with its status and reason."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

Status = Literal["changed", "unchanged", "skipped", "failed"]
Section = Literal["link", "address", "route", "rule", "sriov", "rdma", "sysctl", "qos", "roce", "dcqcn", "gid",
                  "gpudirect", "persist"]


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
