"""RF111 and RF402 as they read before they judged a switch once per shape; verbatim.
Held against by tests/lint/rules/test_qos.py."""

from __future__ import annotations

from collections.abc import Iterator

from fabric.lint.context import Context
from fabric.lint.core import Finding, Rule, Severity


def _rf111(self: Rule, ctx: Context) -> Iterator[Finding]:
    from fabric.design.effective import settings
    from fabric.nos import NOS

    hits = []
    for sw in ctx.switches:
        for s in settings(ctx.loaded, sw):
            if s.written and s.differs:  # an MTU 2 bytes short still carries the hosts' 9000, and a fabric
                # without AR still forwards (as RF402 says where the platform lacks it): warnings
                hits.append((sw.name, f"{s.key}: requested {s.requested}, {NOS[sw.target].title} runs "
                             f"{s.effective} ({s.how})", ctx.at(*s.loc), s.key,
                             self.severity if s.key.startswith("qos.") else Severity.warning))
    yield from self.grouped(hits, "switches", "switches")


from fabric.model.platforms import PLATFORMS  # noqa: E402 (the rules' own import)


def _rf402(self: Rule, ctx: Context) -> Iterator[Finding]:
    glob = ctx.inv.switching.adaptive_routing.enabled
    hits = []
    for sw in ctx.switches:
        plat = PLATFORMS[sw.platform]
        for p in sw.ports:
            if p.adaptive_routing and p.speed not in plat.adaptive_routing_speeds:
                yield self.finding(
                    sw.name,
                    f"adaptive routing on {p.name} at {p.speed}G: expected only at "
                    f"{', '.join(f'{s}G' for s in plat.adaptive_routing_speeds) or 'no speed'} "
                    f"on {sw.platform}, found enabled",
                    ctx.switch_at(sw.name),
                    p.name,
                    Severity.error,
                )
        over = ctx.topo.switches[sw.name].adaptive_routing if sw.name in ctx.topo.switches else None
        wanted = over if over is not None else glob
        fabric = sorted({p.speed for p in sw.ports if p.kind == "fabric"})
        cannot = [s for s in fabric if s not in plat.adaptive_routing_speeds]
        if wanted and cannot:
            where = (
                ctx.switch_at(sw.name, "adaptive_routing")
                if over is not None
                else ctx.at("switching", "adaptive_routing", "enabled")
            )
            hits.append(
                (
                    sw.name,
                    f"adaptive routing: enabled in the inventory, but {sw.platform} "
                    f"({plat.asic}) supports it at "
                    f"{', '.join(f'{s}G' for s in plat.adaptive_routing_speeds) or 'no speed'}; "
                    f"left off on its {', '.join(f'{s}G' for s in cannot)} fabric ports",
                    where,
                    "platform",
                )
            )
    yield from self.grouped(hits, "switching", "switches")


REFERENCE = {"RF111": _rf111, "RF402": _rf402}
