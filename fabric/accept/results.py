"""What an acceptance run produces: one result per check, with measurements, evidence and location."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict

from fabric.accept.locate import Location

Status = Literal["pass", "fail", "skipped", "error"]


class Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Measurement(Model):
    """One measured value: a pair on a rail (or a host, or the cluster), judged against a threshold."""

    rail: int | None = None
    src: str = ""
    dst: str = ""
    value: float | None = None  # None: nothing measured (tool failed, link down)
    unit: str = ""
    threshold: float | None = None
    ok: bool = True
    tool: str = ""
    detail: str = ""

    def expected(self) -> str:
        """`360 Gb/s`, or what was expected when no threshold applies (a check that passes or fails as a whole)."""
        return f"{self.threshold:g} {self.unit}".strip() if self.threshold is not None else "a result"

    def actual(self) -> str:
        """`120 Gb/s`, or why nothing was measured."""
        return f"{self.value:g} {self.unit}".strip() if self.value is not None else self.detail or "nothing measured"


class Planned(Model):
    """One command a check would run (`fabric accept --dry-run`): where, in which round, in which role."""

    round: str = ""  # "1", "1 reverse", "" when the check has no rounds
    host: str  # host or switch it runs on ("here": this machine)
    role: str = ""  # server, client, launcher, read
    command: str


class CheckResult(Model):
    """One catalog entry's outcome. `message` reads "Expected … Actual …" on failure."""

    name: str  # unique in a run (the JUnit testcase name)
    check: str
    tags: list[str] = []
    status: Status
    message: str = ""
    measurements: list[Measurement] = []
    evidence: list[str] = []
    locations: list[Location] = []
    rendered: list[str] = []  # files written for launchers (sbatch, MPIJob, hostfile)
    rounds: int = 0
    seconds: float = 0.0


class CounterChange(Model):
    """A switch port counter before and after the traffic checks."""

    node: str
    port: str
    counter: str
    before: int
    after: int


class AcceptReport(Model):
    fabric: str
    mode: Literal["lab", "ssh"]
    quick: bool
    started: str
    seconds: float
    results: list[CheckResult]
    switch_counters: list[CounterChange] = []  # queue/PFC/watchdog counters of switch ports that moved
    launchers: list[str] = []  # what started the nccl-tests jobs that ran (mpirun, slurm, k8s)

    @property
    def how(self) -> str:
        """The run in words for a report's header: `lab run` or `production run`, and what launched nccl-tests."""
        words = "lab run" if self.mode == "lab" else "production run"
        return words + (" (quick)" if self.quick else "") + (
            f", nccl-tests through {' and '.join(self.launchers)}" if self.launchers else "")

    @property
    def ok(self) -> bool:
        return not any(r.status in ("fail", "error") for r in self.results)

    def counts(self) -> dict[str, int]:
        c = {"pass": 0, "fail": 0, "skipped": 0, "error": 0}
        for r in self.results:
            c[r.status] += 1
        return c
