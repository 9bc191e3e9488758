"""Host configuration check: the host agent's plan against the intent derived now is empty everywhere."""

from __future__ import annotations

import shlex
from concurrent.futures import ThreadPoolExecutor

from pydantic import Field

from fabric.accept import transport as tr
from fabric.accept.checks.base import Check, Context, Input, register
from fabric.accept.results import CheckResult, Measurement, Planned


class HostConfigInput(Input):
    strict: bool = Field(False, description="skipped agent items count as differences")


@register
class HostConfig(Check):
    """The host agent's plan against the intent derived now is empty on every host (nothing would change).

    Runs `fabric host plan --intent - --format json` on each host with the intent on stdin."""

    name = "host-config"
    tags = ["host", "config"]
    Input = HostConfigInput

    def argv(self, ctx: Context) -> list[str]:
        return [ctx.site.agent, "host", "plan", "--intent", "-", "--format", "json"]

    def plan(self, ctx: Context) -> list[Planned]:
        return [Planned(host=h, role="read", command=shlex.join(self.argv(ctx)) + " < intent.json")
                for h in sorted(ctx.fabric.hosts)]

    def run(self, ctx: Context) -> CheckResult:
        from fabric.host.model import host_report

        inputs: HostConfigInput = self.inputs  # type: ignore[assignment]

        def one(name: str) -> Measurement:
            intent = ctx.fabric.hosts[name]
            c = tr.run(ctx.site, name, self.argv(ctx), timeout=60, stdin=intent.model_dump_json())
            try:
                if c.rc not in (0, 1):
                    raise ValueError(c.last_error)
                hp = host_report(c.stdout)
            except ValueError as exc:
                return Measurement(src=name, ok=False, detail=f"no plan: {str(exc).splitlines()[0][:200]}")
            pending = [i for i in hp.items if i.status in ("changed", "failed")
                       or (inputs.strict and i.status == "skipped")]
            skipped = sum(i.status == "skipped" for i in hp.items)
            detail = "; ".join(f"{i.section} {i.target} {i.name}: {i.current} → {i.desired}"
                               + (f" ({i.reason})" if i.reason else "") for i in pending[:5])
            if skipped and not pending:
                detail = f"{skipped} items not applicable here (e.g. no mlnx_qos/RDMA sysfs)"
            return Measurement(src=name, value=len(pending), unit="changes", threshold=0, ok=not pending,
                               detail=detail)

        with ThreadPoolExecutor(max_workers=8) as pool:
            ms = list(pool.map(one, sorted(ctx.fabric.hosts)))
        bad = [m for m in ms if not m.ok]
        if bad:
            return self.result("fail", "Expected an empty host plan on every host. Actual: "
                               + "; ".join(f"{m.src}: {m.detail}" for m in bad[:3]), measurements=ms)
        return self.result("pass", f"{len(ms)} hosts: nothing to change", measurements=ms)


class HostPrereqsInput(Input):
    nccl_version: str | None = Field(None, description="NCCL the jobs use (default: what each host has installed)")


@register
class HostPrereqs(Check):
    """GPUDirect RDMA prerequisites on every host: GPU↔NIC affinity, ACS, IOMMU, relaxed ordering, ATS, peer
    memory, NCCL version. Runs `fabric host prereqs --intent - --format json` on each host."""

    name = "host-prereqs"
    tags = ["host", "gpudirect"]
    Input = HostPrereqsInput

    def run(self, ctx: Context) -> CheckResult:
        from fabric.host.model import host_report

        inputs: HostPrereqsInput = self.inputs  # type: ignore[assignment]
        argv = [ctx.site.agent, "host", "prereqs", "--intent", "-", "--format", "json"]
        if inputs.nccl_version:
            argv += ["--nccl-version", inputs.nccl_version]

        def one(name: str) -> tuple[Measurement, list[str]]:
            c = tr.run(ctx.site, name, argv, timeout=120, stdin=ctx.fabric.hosts[name].model_dump_json())
            try:
                if c.rc not in (0, 1):
                    raise ValueError(c.last_error)
                hp = host_report(c.stdout)
            except ValueError as exc:
                return Measurement(src=name, ok=False, detail=f"no report: {str(exc).splitlines()[0][:200]}"), []
            failed = [i for i in hp.items if i.status == "failed"]
            checked = [i for i in hp.items if i.status != "skipped"]
            evidence = [f"{name}: {i.name} {i.target}: {i.reason}" for i in failed]
            detail = "; ".join(f"{i.name} {i.target}: {i.current}" for i in failed[:3])
            if not checked:
                detail = "; ".join(i.reason for i in hp.items)[:200]
            return Measurement(src=name, value=len(failed), unit="unmet", threshold=0, ok=not failed,
                               tool="" if checked else "skipped", detail=detail), evidence

        with ThreadPoolExecutor(max_workers=8) as pool:
            outcomes = list(pool.map(one, sorted(ctx.fabric.hosts)))
        ms = [m for m, _ in outcomes]
        evidence = [e for _, ev in outcomes for e in ev]
        bad = [m for m in ms if not m.ok]
        if bad:
            return self.result("fail", "Expected every GPUDirect prerequisite met. Actual: "
                               + "; ".join(f"{m.src}: {m.detail}" for m in bad[:3]), measurements=ms,
                               evidence=evidence)
        if all(m.tool == "skipped" for m in ms):
            return self.result("skipped", f"nothing to check on {len(ms)} hosts: {ms[0].detail}", measurements=ms)
        return self.result("pass", f"{len(ms)} hosts: every GPUDirect prerequisite met", measurements=ms)

