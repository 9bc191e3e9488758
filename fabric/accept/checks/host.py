"""Host configuration check: the host agent's plan against the intent derived now is empty everywhere."""

from __future__ import annotations

import json
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
        from fabric.host.model import HostReport

        inputs: HostConfigInput = self.inputs  # type: ignore[assignment]

        def one(name: str) -> Measurement:
            intent = ctx.fabric.hosts[name]
            c = tr.run(ctx.site, name, self.argv(ctx), timeout=60, stdin=intent.model_dump_json())
            try:
                if c.rc not in (0, 1):
                    raise ValueError(c.last_error)
                hp = HostReport.model_validate(json.loads(c.stdout))
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
