"""NCCL check: nccl-tests all_reduce_perf between host pairs and across the cluster, launched by mpirun,
Slurm or Kubernetes with the NCCL environment from the rendering, judged on busbw at the largest sizes."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Literal

from pydantic import Field

from fabric.accept.checks.bandwidth import TrafficInput, add_locations, locate_rails
from fabric.accept.checks.base import Check, Context, Input, register
from fabric.accept.results import CheckResult, Measurement, Planned
from fabric.accept.schedule import schedule
from fabric.accept.tools import TOOLS, missing
from fabric.design.intent import FabricIntent

if TYPE_CHECKING:
    from fabric.accept.launchers import RunOutput


class NcclInput(Input):
    binary: str = "all_reduce_perf"
    launcher: Literal["mpirun", "slurm", "k8s"] = "mpirun"
    pairs: Literal["quick", "all", "none"] = "quick"
    cluster: bool = True
    min_bytes: str = "8"
    max_bytes: str = "8G"
    largest_sizes: int = Field(2, ge=1, description="judge the lowest busbw over the N largest sizes")
    fraction_of_line: float = Field(0.9, gt=0, le=1.5,
                                    description="busbw threshold = fraction × NICs × link speed / 8 (GB/s)")
    min_busbw_gbytes: float | None = Field(None, description="absolute threshold instead")
    gpus_per_host: int | None = None
    timeout_s: float = 600
    image: str | None = Field(None, description="k8s launcher: the container image (requirements: fabric.accept.k8s)")
    nccl_version: str | None = Field(None, pattern=r"^\d+\.\d+(\.\d+)?$", description="k8s launcher: NCCL in the "
                                     "image; below 2.21 a pod whose rails' GIDs are not at one index fails at start")
    locate_tool: str = Field("ib_write_bw", description="rail tool for fault location after a failure")
    json_output: Literal["auto", "on", "off"] = Field("auto", description="nccl-tests -J JSON result (2.17+); auto: "
                                               "when the binary's usage lists --output_file; text is the fallback")


def expected_busbw(fabric: FabricIntent, hosts: list[str]) -> float:
    """Line-rate bus bandwidth in GB/s: the slowest host's NIC count × link speed / 8."""
    return min(sum(r.speed for r in fabric.hosts[h].rails) / 8 for h in hosts)


def busbw_threshold(expected_gbytes: float, fraction: float, absolute: float | None) -> float:
    """The busbw a run must reach (GB/s): `absolute` where given, else `fraction` of the line rate."""
    return absolute if absolute is not None else round(expected_gbytes * fraction, 2)


def judge_nccl(text: str, *, expected_gbytes: float, fraction: float, largest: int, file: str = "nccl",
               absolute: float | None = None, json_text: str = "") -> Measurement:
    """Judge nccl-tests output on busbw at the largest sizes (never the 'Avg bus bandwidth' line): the `-J`
    JSON where there is one, else (or when it is incomplete) the text."""
    from fabric.errors import InputError
    from fabric.parsers import busbw_at_largest, parse_nccl, parse_nccl_json

    source = "text"
    try:
        if not json_text:
            raise InputError([])
        res, source = parse_nccl_json(json_text, file + ".json"), "JSON"
    except InputError:
        res = parse_nccl(text, file)
    threshold = busbw_threshold(expected_gbytes, fraction, absolute)
    if not res.rows:
        return Measurement(unit="GB/s", threshold=threshold, ok=False, tool="all_reduce_perf",
                           detail="no result rows")
    value = busbw_at_largest(res, largest)
    wrong = sum((r.out_of_place.wrong or 0) + (r.in_place.wrong or 0) for r in res.rows)
    ok = value >= threshold and wrong == 0 and res.out_of_bounds_ok is not False
    detail = f"{source}; avg line {res.avg_busbw} GB/s (not judged)" + (f"; {wrong} wrong" if wrong else "")
    return Measurement(value=value, unit="GB/s", threshold=threshold, ok=ok, tool="all_reduce_perf",
                       detail=detail)


def judge_run(got: RunOutput, name: str, hosts: list[str], expected_gbytes: float, inputs: NcclInput) -> Measurement:
    """One launched run judged (`judge_nccl`): a run that failed, or whose output cannot be read, fails with why."""
    threshold = busbw_threshold(expected_gbytes, inputs.fraction_of_line, inputs.min_busbw_gbytes)
    if got.error:
        m = Measurement(unit="GB/s", threshold=threshold, ok=False, tool=inputs.binary, detail=got.error)
    else:
        try:
            m = judge_nccl(got.text, expected_gbytes=expected_gbytes, fraction=inputs.fraction_of_line,
                           largest=inputs.largest_sizes, file=name, absolute=inputs.min_busbw_gbytes,
                           json_text=got.json)
        except Exception as exc:
            m = Measurement(unit="GB/s", threshold=threshold, ok=False, tool=inputs.binary,
                            detail=str(exc).splitlines()[0])
    m.src, m.dst = hosts[0], (hosts[1] if len(hosts) == 2 else f"{len(hosts)} hosts")
    return m


def nccl_verdict(ms: list[Measurement], largest: int) -> tuple[Literal["pass", "fail"], str]:
    """The check's status and message from its runs: the lowest busbw when all passed, else the first failure."""
    bad = [m for m in ms if not m.ok]
    if not bad:
        return "pass", f"{len(ms)} runs; lowest busbw {min(m.value or 0 for m in ms):g} GB/s at the largest sizes"
    w = bad[0]
    return "fail", (f"Expected busbw ≥ {w.expected()} at the {largest} largest sizes. "
                    f"Actual: {w.actual()} ({w.src}, {w.dst})")


@register
class NcclAllReduce(Check):
    """nccl-tests all_reduce_perf between host pairs and across the cluster, NCCL env from the rendering."""

    name = "nccl-allreduce"
    tags = ["traffic", "nccl", "bandwidth"]
    phase = "traffic"
    Input = NcclInput

    @property
    def on_hosts(self) -> bool:
        return self.inputs.launcher == "mpirun"  # Slurm and Kubernetes start the ranks themselves

    def _groups(self, ctx: Context) -> list[list[str]]:
        inputs: NcclInput = self.inputs  # type: ignore[assignment]
        hosts = sorted(ctx.fabric.hosts)
        groups: list[list[str]] = []
        if inputs.pairs != "none":
            for rd in schedule({0: hosts}, quick=inputs.pairs == "quick"):
                groups += [list(p) for p in rd.pairs.get(0, [])]
        if inputs.cluster and len(hosts) > 2:
            groups.append(hosts)
        return groups

    def _render(self, ctx: Context, json_output: bool):
        from fabric.accept import launchers

        inputs: NcclInput = self.inputs  # type: ignore[assignment]
        out_dir = (ctx.report_dir or Path("build/accept")) / "launch" / self.id
        jobs = [launchers.nccl_job(ctx.fabric, g, inputs, name=f"{self.id}-{i}", json_output=json_output)
                for i, g in enumerate(self._groups(ctx))]
        rendered = list(dict.fromkeys(str(p) for j in jobs for p in launchers.render(j, inputs.launcher, ctx.fabric,
                                                                                   out_dir)))
        return jobs, out_dir, rendered

    def plan(self, ctx: Context) -> list[Planned]:
        from fabric.accept import launchers

        inputs: NcclInput = self.inputs  # type: ignore[assignment]
        if len(ctx.fabric.hosts) < 2 or (inputs.launcher == "k8s" and not inputs.image):
            return []
        jobs, out_dir, _ = self._render(ctx, inputs.json_output == "on")
        planned = []
        for k, j in enumerate(jobs, 1):
            where, cmd = launchers.launch_command(j, inputs.launcher, out_dir)
            planned.append(Planned(round=str(k), host=where, role=inputs.launcher, command=cmd))
        return planned

    def run(self, ctx: Context) -> CheckResult:
        from fabric.accept import launchers

        inputs: NcclInput = self.inputs  # type: ignore[assignment]
        hosts = sorted(ctx.fabric.hosts)
        if len(hosts) < 2:
            return self.result("skipped", "fewer than two hosts")
        if inputs.launcher == "k8s" and not inputs.image:
            return self.result("skipped", "k8s: no container image: set the check input `image` (or --image) to an "
                               "image with sshd, OpenMPI and nccl-tests (fabric.accept.k8s)")
        runner = launchers.runner(inputs.launcher, ctx.site, hosts, inputs.binary)
        use_json = inputs.json_output == "on" or (inputs.json_output == "auto" and runner.json)
        jobs, out_dir, rendered = self._render(ctx, use_json)
        if runner.skip:
            return self.result("skipped", f"{inputs.launcher}: {runner.skip} (rendered {len(rendered)} files "
                               f"in {out_dir})", rendered=rendered)
        ms = []
        for j in jobs:
            ctx.progress(f"{self.id}: {j.name} ({len(j.hosts)} hosts)")
            got = runner.run(j, out_dir, inputs.timeout_s)
            ms.append(judge_run(got, j.name, j.hosts, expected_busbw(ctx.fabric, j.hosts), inputs))
        status, message = nccl_verdict(ms, inputs.largest_sizes)
        res = self.result(status, message, measurements=ms, rendered=rendered, rounds=len(jobs))
        if status == "fail":
            self._locate(ctx, res)
        return res

    def _locate(self, ctx: Context, res: CheckResult) -> None:
        """Fault location of a failed run on the rails of its hosts (every host where the cluster run failed), with
        the rail tool over SSH; a Kubernetes run locates with pod-rail-bandwidth instead."""
        inputs: NcclInput = self.inputs  # type: ignore[assignment]
        hosts = sorted(ctx.fabric.hosts)
        tool_cls = TOOLS.get(inputs.locate_tool)
        if inputs.launcher == "k8s" or tool_cls is None or missing(ctx.site, tool_cls(), hosts[:1], ctx.fabric):
            return
        failing = sorted({h for m in res.measurements if not m.ok
                          for h in ([m.src, m.dst] if m.dst in hosts else hosts)})
        rails = sorted({r.rail for h in failing for r in ctx.fabric.hosts[h].rails})
        ti = TrafficInput(tool=inputs.locate_tool, seconds=2)
        add_locations(res, [loc for loc in locate_rails(ctx, tool_cls(), ti, dict.fromkeys(rails, failing))
                            if loc.hosts or loc.between or loc.suspects], ctx.fabric)
