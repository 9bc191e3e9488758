"""Container acceptance: perftest between pods on each rail, through the Kubernetes launcher.

The K8s RoCE practice tests pod to pod before users get the cluster: the same VF, CNI chain, RDMA netns
and GID the users' pods will get. This check schedules the same host pairs as rail-bandwidth (or, with
`scope: cross-su`, as cross-su-bandwidth), runs them as one gang-scheduled MPIJob (fabric.accept.k8s:
one worker pod per host, each with every rail's network; per round the pairs at once, both directions)
and judges each pair with the host check's tool, argv and threshold. Without a cluster it renders the job
and is skipped, naming the files.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import Field

from fabric.accept.checks.bandwidth import CrossSuBandwidth, RailBandwidth, TrafficInput, _threshold
from fabric.accept.checks.base import Check, Context, hosts_per_rail, register
from fabric.accept.checks.latency import LatencyInput
from fabric.accept.results import CheckResult, Measurement, Planned
from fabric.accept.schedule import schedule
from fabric.safefile import write_private


class PodTrafficInput(TrafficInput):
    tool: Literal["ib_write_bw"] = "ib_write_bw"
    scope: Literal["rail", "cross-su"] = Field("rail", description="pairs as rail-bandwidth or cross-su-bandwidth")
    image: str | None = Field(None, description="container image (requirements: fabric.accept.k8s)")
    job_timeout_s: float = Field(1800, gt=0, description="the whole MPIJob")


@register
class PodRailBandwidth(Check):
    """perftest between pods on every rail (VF or passed-through PF), judged like rail-bandwidth."""

    name = "pod-rail-bandwidth"
    tags = ["traffic", "bandwidth", "k8s", "pods"]
    phase = "traffic"
    Input = PodTrafficInput
    on_hosts = False  # type: ignore[assignment]  # pods, through kubectl
    higher_is_better = True

    def _render(self, ctx: Context):
        """(job, manifest, networks) written to the report's launch directory, or a reason it cannot be."""
        from fabric.accept import k8s

        inputs: PodTrafficInput = self.inputs  # type: ignore[assignment]
        quick = ctx.quick if inputs.quick is None else inputs.quick
        rounds = self._rounds(ctx, quick)
        if isinstance(rounds, str):
            return rounds
        if not inputs.image:
            return ("no container image: set the check input `image` (or --image) to an image with sshd, OpenMPI "
                    "and perftest (fabric.accept.k8s)")
        job = k8s.perftest_pod_job(ctx.fabric, self.id, k8s.pod_pairs(ctx.fabric, rounds, "p"), tool=inputs.tool,
                                   image=inputs.image, timeout_s=inputs.job_timeout_s, **self._tool_args())
        out_dir = (ctx.report_dir or Path("build/accept")) / "launch" / self.id
        manifest = write_private(out_dir / f"{job.name}.k8s.yaml", k8s.manifests_yaml(job, ctx.fabric))
        return job, manifest, k8s.write_networks(ctx.fabric, out_dir)

    def _rounds(self, ctx: Context, quick: bool) -> list[dict[int, list[tuple[str, str]]]] | str:
        inputs: PodTrafficInput = self.inputs  # type: ignore[assignment]
        source = (RailBandwidth if inputs.scope == "rail" else CrossSuBandwidth)(inputs)
        return list(source.pairs(ctx, quick)) or source.no_pairs_reason(ctx)

    def _tool_args(self) -> dict[str, float]:
        inputs: PodTrafficInput = self.inputs  # type: ignore[assignment]
        return {"size": inputs.message_size, "qps": inputs.qps, "seconds": inputs.seconds}

    def _threshold(self, ctx: Context, rail: int) -> float:
        return _threshold(self.inputs, ctx.fabric, rail)  # type: ignore[arg-type]

    def plan(self, ctx: Context) -> list[Planned]:
        got = self._render(ctx)
        if isinstance(got, str):
            return []
        _job, manifest, networks = got
        return [Planned(host="here", role="k8s", command=f"kubectl apply -f {networks} -f {manifest}")]

    def run(self, ctx: Context) -> CheckResult:
        from fabric.accept import k8s

        inputs: PodTrafficInput = self.inputs  # type: ignore[assignment]
        got = self._render(ctx)
        if isinstance(got, str):
            return self.result("skipped", got)
        job, manifest, networks = got
        rendered = [str(manifest), str(networks)]
        runner = k8s.K8sRunner(ctx.fabric.kubernetes.namespace)
        if runner.skip:
            return self.result("skipped", f"k8s: {runner.skip} (rendered {manifest})", rendered=rendered)
        ctx.progress(f"{self.id}: MPIJob {job.name}, {len(job.hosts)} pods, {len(job.pairs)} rounds")
        log, err = runner.run(manifest, job.name, inputs.job_timeout_s, networks=networks, progress=ctx.progress)
        write_private(manifest.parent / f"{job.name}.log", log)
        thr = {rail: self._threshold(ctx, rail) for rd in job.pairs for rail in {p.rail for p in rd}}
        ms = k8s.judge_pairs(job, log, thr, higher_is_better=self.higher_is_better)
        bad = [m for m in ms if not m.ok]
        if not self.higher_is_better:
            return self._latency_result(ms, bad, err, rendered, len(job.pairs))
        res = self.result("pass" if not bad and not err else "fail", measurements=ms, rendered=rendered,
                          rounds=len(job.pairs))
        if not bad and not err:
            low = min(ms, key=lambda m: m.value or 0.0)
            res.message = (f"{len(ms)} pod-to-pod tests ≥ threshold; lowest {low.value:g} {low.unit} "
                           f"({low.src}→{low.dst} rail {low.rail})")
            return res
        if bad:
            worst = min(bad, key=lambda m: m.value or 0.0)
            res.message = (f"Expected ≥ {worst.threshold:g} {worst.unit} between pods on every rail and direction. "
                           f"Actual: {len(bad)}/{len(ms)} below, worst {worst.src}→{worst.dst} rail {worst.rail} "
                           + (f"{worst.value:g} {worst.unit}" if worst.value is not None else worst.detail))
        return _with_error(res, err)


class PodLatencyInput(LatencyInput):
    tool: Literal["ib_write_lat"] = "ib_write_lat"
    image: str | None = Field(None, description="container image (requirements: fabric.accept.k8s)")
    job_timeout_s: float = Field(1800, gt=0, description="the whole MPIJob")


@register
class PodRailLatency(PodRailBandwidth):
    """ib_write_lat between pods on every rail, the pairs and p99 limit of rail-latency: what the pod path (VF,
    CNI chain, RDMA netns) adds to host-to-host latency shows against the same limit."""

    name = "pod-rail-latency"
    tags = ["traffic", "latency", "k8s", "pods"]
    Input = PodLatencyInput
    higher_is_better = False

    def _rounds(self, ctx: Context, quick: bool) -> list[dict[int, list[tuple[str, str]]]] | str:
        inputs: PodLatencyInput = self.inputs  # type: ignore[assignment]
        rounds = [rd.pairs for rd in schedule(hosts_per_rail(ctx.fabric, inputs.rails), quick=quick)]
        return rounds or "fewer than two hosts per rail"

    def _tool_args(self) -> dict[str, float]:
        return {}

    def _threshold(self, ctx: Context, rail: int) -> float:
        return self.inputs.max_p99_us  # type: ignore[attr-defined,no-any-return]

    def _latency_result(self, ms: list[Measurement], bad: list[Measurement], err: str, rendered: list[str],
                        rounds: int) -> CheckResult:
        limit = self.inputs.max_p99_us  # type: ignore[attr-defined]
        res = self.result("pass" if not bad and not err else "fail", measurements=ms, rendered=rendered,
                          rounds=rounds)
        if not bad and not err:
            hi = max(ms, key=lambda m: m.value or 0.0)
            res.message = f"{len(ms)} pod-to-pod tests, highest p99 {hi.value:g} us ({hi.src}→{hi.dst} rail {hi.rail})"
            return res
        if bad:
            worst = max(bad, key=lambda m: m.value if m.value is not None else float("inf"))
            res.message = (f"Expected p99 ≤ {limit:g} us between pods on every rail and direction. Actual: "
                           f"{len(bad)}/{len(ms)} above, worst {worst.src}→{worst.dst} rail {worst.rail} "
                           + (f"{worst.value:g} us" if worst.value is not None else worst.detail))
        return _with_error(res, err)


def _with_error(res: CheckResult, err: str) -> CheckResult:
    """The launcher's own error (if any) after the verdict's message, and as evidence; alone where nothing was
    measured (the job never ran: its cause, not a verdict on empty results)."""
    if err:
        measured = any(m.value is not None for m in res.measurements)
        res.message = (res.message + "; " if res.message and measured else "") + err
        res.evidence.append(err)
    return res
