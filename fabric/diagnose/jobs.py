"""Cross-line rules over a training job's own logs, across all ranks' files: the rank behind in the
collective sequence when PyTorch's NCCL watchdog fires (DG906), and a sustained slowdown in iteration
times (DG907). Ranks are bound to hosts and NICs through `Ranks` (rulebase.py).

Line formats (all from public logs):
- PyTorch ProcessGroupNCCL: "[Rank 3] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=808,
  OpType=ALLREDUCE, ...)" and "[PG ID 0 PG GUID 0(default_pg) Rank 1] Exception (either an error or timeout)
  detected by watchdog at work: 808, last enqueued NCCL work: 811, last completed NCCL work: 807."
  (https://github.com/XPixelGroup/BasicSR/issues/737), "[PG 0 (default_pg) Rank 3] Timeout at NCCL work:
  2070, ..." (https://github.com/mila-iqia/milabench/pull/269);
- Megatron-LM: " iteration      201/  250000 | consumed samples: ... | elapsed time per iteration (ms):
  139113.4 | ..." (https://github.com/epfLLM/Megatron-LLM/issues/11);
- DeepSpeed: "[2024-07-17 19:53:24,981] [INFO] [timer.py:258:stop] epoch=0/micro_step=4500/global_step=4500,
  RunningAvgSamplesPerSec=16.12, CurrSamplesPerSec=16.80, ..." (https://github.com/deepspeedai/DeepSpeed/issues/5779);
- torchtitan (PyTorch): "[rank0]:[titan] 2025-06-16 22:30:50,322 - root - INFO - step: 200  loss:  6.1384
  memory: ...  tps: 5,856  tflops: ..." (https://github.com/pytorch/torchtitan/pull/1287).
"""

from __future__ import annotations

import re
from collections import defaultdict
from dataclasses import dataclass, field
from statistics import median
from typing import Any

from fabric.diagnose.logs import host_of
from fabric.diagnose.report import Finding, Severity
from fabric.diagnose.rulebase import Rule, rule_finding

SLOWDOWN = 1.25  # a step this much slower than the baseline counts as slow
SUSTAINED = 5  # consecutive slow steps that make a slowdown (not a one-off hiccup: GC, checkpoint)
MIN_BASELINE = 5  # steps needed before a slowdown can be judged


@dataclass
class _Progress:
    """One rank's position in one process group's collective sequence when the watchdog fired."""

    timed_out: int | None = None  # the SeqNum that timed out
    completed: int | None = None  # last completed NCCL work
    op: str = ""
    where: list[tuple[str, int]] = field(default_factory=list)

    @property
    def done(self) -> int | None:
        if self.completed is not None:
            return self.completed
        return None if self.timed_out is None else self.timed_out - 1


class StragglerRule(Rule):
    """DG906: among the ranks whose watchdog fired, those whose last completed collective is behind the
    others' — and, for the default group, ranks of the job that never reported at all."""

    keywords = ("NCCL work", "Watchdog caught", "ncclCommInitRank", "] via NET/IB/", "Using [")
    _CAUGHT = re.compile(r"\[(?:PG (?:ID )?(?P<pg>\w+)[^\]]*?)?Rank (?P<local>\d+)\] Watchdog caught collective "
                         r"operation timeout: WorkNCCL\(SeqNum=(?P<seq>\d+), OpType=(?P<op>\w+)")
    _AT = re.compile(r"\[PG (?:ID )?(?P<pg>\w+)[^\]]*?Rank (?P<local>\d+)\] (?:Exception \(either an error or "
                     r"timeout\) detected by watchdog at work|Timeout at NCCL work): (?P<seq>\d+), last enqueued "
                     r"NCCL work: -?\d+, last completed NCCL work: (?P<done>-?\d+)")

    def __init__(self, *args: Any) -> None:
        super().__init__(*args)
        self.progress: dict[tuple[str, str], _Progress] = {}  # (process group, rank) → progress
        self.global_rank: dict[tuple[str, str], bool] = {}

    def feed(self, file: str, lineno: int, line: str, rank: str | None = None) -> None:
        if "ncclCommInitRank" in line or "] via NET/IB/" in line or ("Using [" in line and "NET/IB" in line):
            self.ranks.saw(rank, host_of(line), line)  # init, device list and channel lines only: host_of is dear
            return
        m = self._AT.search(line) if "NCCL work" in line else None
        c = None if m else self._CAUGHT.search(line) if "Watchdog caught" in line else None
        hit = m or c
        if hit is None:
            return
        pg, who = self._group_and_rank(hit, rank)
        if c is not None:  # fold into the group entry with the same sequence number, if there is one
            pg = next((g for (g, r), p in self.progress.items() if r == who and p.timed_out == int(c.group("seq"))),
                      pg)
        p = self.progress.setdefault((pg, who), _Progress())
        p.timed_out = int(hit.group("seq"))
        if m is not None:
            p.completed = int(m.group("done"))
        if c is not None:
            p.op = c.group("op")
        p.where.append((file, lineno))

    @staticmethod
    def _group_and_rank(hit: re.Match[str], rank: str | None) -> tuple[str, str]:
        """The process group and who: the file's rank when known, else PyTorch's "[Rank N]", which is the job's
        rank only in the default group ("N@PGg" in another)."""
        pg = hit.group("pg") or ""
        if rank is not None:
            return pg, rank
        return pg, hit.group("local") if pg in ("", "0") else f"{hit.group('local')}@PG{pg}"

    def findings(self) -> list[Finding]:
        out = []
        for pg, members in sorted(self._groups().items()):
            if (found := self._group_finding(pg, members)) is not None:
                out.append(found)
        return out

    def _groups(self) -> dict[str, dict[str, _Progress]]:
        """Progress per process group and rank; a rank's group-less lines fold into its entry in a group."""
        groups: dict[str, dict[str, _Progress]] = defaultdict(dict)
        for (pg, who), p in self.progress.items():
            groups[pg][who] = p
        for key in [g for g in groups if g != "" and "" in groups]:
            for who in [w for w in groups[""] if w in groups[key]]:
                lone, p = groups[""].pop(who), groups[key][who]
                p.op, p.where = p.op or lone.op, sorted(lone.where + p.where)
        return {g: m for g, m in groups.items() if m}

    def _silent(self, pg: str, members: dict[str, _Progress], reported: int) -> list[str]:
        """Ranks of the job that never reported, judged on the default group with two reports or more, and
        only while they are fewer than those that reported."""
        if pg not in ("", "0") or not self.ranks.world or reported < 2:
            return []
        silent = [str(r) for r in range(self.ranks.world) if str(r) not in members]
        return silent if len(silent) < reported else []

    def _group_finding(self, pg: str, members: dict[str, _Progress]) -> Finding | None:
        """DG906 for one process group: the ranks behind the lead and those that never reported."""
        done = {who: p.done for who, p in members.items() if p.done is not None}
        if not done:
            return None
        lead = max(done.values())
        behind = sorted((w for w, d in done.items() if d < lead), key=_rank_key)
        silent = self._silent(pg, members, len(done))
        if not behind and not silent:
            return None
        ahead = [w for w, d in done.items() if d == lead]
        evidence = self._evidence(pg, members, done, behind, silent, ahead)
        where = [w for who in behind for w in members[who].where] or [
            w for p in members.values() for w in p.where]
        subjects = [self.ranks.subject(w.split("@")[0]) if "@" not in w else {"rank": w}
                    for w in behind + silent]
        return rule_finding(
            "DG906", Severity.error, where[0][0], [n for f, n in where if f == where[0][0]], evidence,
            subjects,
            "The ranks that are ahead are all waiting in the next collective for the ranks behind; the "
            "one behind (or the one that never timed out) is where the job stopped: a crash or hang "
            "in that process (data loader, CUDA error, GPU Xid), or its network path — a NIC whose "
            "link dropped or whose traffic is stalled by PFC, so its sends never complete.",
            "Read that rank's own log and its host's kernel log around the hang (Xid, mlx5 link down, "
            "module errors); check the NIC's pause and discard counters and the leaf port; with "
            "TORCH_NCCL_TRACE_BUFFER_SIZE set, the flight recorder dump shows the last collective per rank.",
            details={"behind": behind, "silent": silent, "ahead": sorted(ahead, key=_rank_key)[:10]})

    def _evidence(self, pg: str, members: dict[str, _Progress], done: dict[str, int], behind: list[str],
                  silent: list[str], ahead: list[str]) -> str:
        """'PG 1: rank 3 (host) last completed SeqNum 807; … 7 other rank(s) completed 808 and timed out in 809
        (ALLREDUCE)'."""
        op = next((p.op for p in members.values() if p.op), "")
        timed = {members[w].timed_out for w in ahead}
        parts = [f"{self.ranks.where(w)} last completed SeqNum {done[w]}" for w in behind]
        parts += [f"{self.ranks.where(w)} never reported a timeout" for w in silent]
        group = f"PG {pg}: " if pg else ""
        return (f"{group}{'; '.join(parts)}; {len(ahead)} other rank(s) completed {max(done.values())}"
                + (f" and timed out in {'/'.join(map(str, sorted(t for t in timed if t)))}" if timed else "")
                + (f" ({op})" if op else ""))


def _rank_key(rank: str) -> tuple[int, str]:
    head = rank.split("@")[0]
    return (int(head), rank) if head.isdigit() else (1 << 30, rank)


@dataclass
class _Step:
    step: int
    seconds: float  # time per step (a throughput is inverted: only ratios are compared)
    lineno: int
    stamp: str


class IterationRule(Rule):
    """DG907: iteration times that stay well above the job's own early baseline, and when that began."""

    keywords = ("elapsed time per iteration", "SamplesPerSec=", "tps:")
    _STAMP = re.compile(r"(\d{4}-\d\d-\d\d[ T]\d\d:\d\d:\d\d)")
    _FORMATS: tuple[tuple[str, re.Pattern[str], bool], ...] = (
        ("Megatron", re.compile(r"\biteration\s+(\d+)/\s*\d+ \|.*?elapsed time per iteration \(ms\):\s*([\d.]+)"),
         False),
        ("DeepSpeed", re.compile(r"\[timer\.py:\d+:stop\] (?:epoch=\d+/micro_step=\d+/global_step=(\d+)|\d+/(\d+)),"
                                 r".*?(?:CurrSamplesPerSec|\bSamplesPerSec)=([\d.]+)"), True),
        ("PyTorch", re.compile(r"\bstep:\s*(\d+)\s+loss:.*?\btps:\s*([\d,]+)"), True),
    )

    def __init__(self, *args: Any) -> None:
        super().__init__(*args)
        self.series: dict[tuple[str, str], list[_Step]] = defaultdict(list)  # (file, rank or host) → steps
        self.kind: dict[tuple[str, str], str] = {}

    def feed(self, file: str, lineno: int, line: str, rank: str | None = None) -> None:
        if "elapsed time per iteration" not in line and "SamplesPerSec=" not in line and "tps:" not in line:
            return  # fed every line another rule wanted too
        for name, pattern, is_rate in self._FORMATS:
            m = pattern.search(line)
            if not m:
                continue
            numbers = [g for g in m.groups() if g is not None]
            step, value = int(numbers[0]), float(numbers[-1].replace(",", ""))
            if value <= 0:
                return
            stamp = s.group(1) if (s := self._STAMP.search(line)) else ""
            key = (file, rank if rank is not None else host_of(line) or "")
            self.series[key].append(_Step(step, 1 / value if is_rate else value / 1000, lineno, stamp))
            self.kind[key] = name
            return

    def findings(self) -> list[Finding]:
        out = []
        for (file, who), steps in sorted(self.series.items()):
            found = slowdown(steps)
            if found is None:
                continue
            start, base, after = found
            first = steps[start]
            ratio = after / base
            when = f" at {first.stamp}" if first.stamp else ""
            subject = self.ranks.subject(who) if who.isdigit() else ({"host": who} if who else {})
            unit = "s/step" if self.kind[(file, who)] == "Megatron" else "relative"
            evidence = (f"{self.kind[(file, who)]} iterations from step {first.step}{when} (line {first.lineno}) "
                        f"run {ratio:.2f}x the baseline"
                        + (f" ({_fmt(after)} vs {_fmt(base)} s/step)" if unit == "s/step" else "")
                        + f" for {len(steps) - start} logged steps"
                        + (f", {self.ranks.where(who)}" if who.isdigit() else f", {who}" if who else ""))
            out.append(rule_finding(
                "DG907", Severity.warning, file, [s.lineno for s in steps[start:]], evidence, [subject],
                "The job kept running but every step got slower from this point on and stayed slow: one "
                "slow participant paces all the others. On the network side that is a NIC or link at reduced "
                "rate (renegotiated speed, FEC errors, a throttled or congested rail, PFC pauses from a "
                "stuck receiver); on the host side a GPU clocking down (thermal, power) or a slow data path.",
                "Look at what changed at that time: kernel logs (mlx5 link, module temperature, Xid), the "
                "NICs' pause/discard/CNP counters, `fabric accept` bandwidth per rail on the job's hosts; "
                "`nvidia-smi -q -d PERFORMANCE` for clock throttle reasons.",
                details={"began_at_step": [str(first.step)], **({"began_at": [first.stamp]} if first.stamp else {}),
                         "ratio": [f"{ratio:.2f}"]}))
        return out


def slowdown(steps: list[_Step]) -> tuple[int, float, float] | None:
    """(index where a sustained slowdown begins, baseline, median after) or None. The baseline is the
    median of the early steps (the first one is warm-up and skipped); a slowdown is SUSTAINED consecutive
    steps above SLOWDOWN x baseline whose median to the end of the log also stays above it."""
    values = [s.seconds for s in steps[1:]]
    if len(values) < MIN_BASELINE + SUSTAINED:
        return None
    early = values[:max(MIN_BASELINE, len(values) // 5)]
    base = median(early)
    limit = base * SLOWDOWN
    for i in range(len(early), len(values) - SUSTAINED + 1):
        if all(v > limit for v in values[i:i + SUSTAINED]) and median(values[i:]) > limit:
            return i + 1, base, median(values[i:])
    return None


def _fmt(seconds: float) -> str:
    return f"{seconds:.3g}"
