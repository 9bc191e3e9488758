"""Requested and effective values per switch: what the inventory (or its preset) asks for beside what the
switch's NOS does with the rendered configuration, computed from the NOS row (fabric.nos: `watchdog_effect`,
`watchdog` None for a NOS without a PFC watchdog, `mtu_max`, `adaptive_routing`). A value the NOS runs as
written is not listed as a difference; one it cannot express is, with what the NOS does instead — lint RF111
reports the ones the inventory spells out, and `fabric explain` shows every one of them per device."""

from __future__ import annotations

from dataclasses import dataclass

from fabric.design.intent import SwitchIntent
from fabric.design.knobs import WATCHDOG
from fabric.model.load import Loaded
from fabric.model.source import Loc
from fabric.nos import NOS


@dataclass(frozen=True)
class Setting:
    """One inventory value on one switch: requested, effective (None: no setting of this NOS, no effect of its
    own), how the NOS arrives at it, and where the inventory writes it (`written`: spelt out, not a default)."""

    key: str  # qos.pfc_watchdog.detection, switching.mtu, switching.adaptive_routing
    requested: str
    effective: str | None
    how: str
    loc: Loc
    written: bool

    @property
    def differs(self) -> bool:
        return self.effective is not None and self.effective != self.requested


def settings(loaded: Loaded, sw: SwitchIntent) -> list[Setting]:
    """The values of `sw` whose meaning depends on its NOS, requested beside effective."""
    nos = NOS[sw.target]
    lines = loaded.smap.lines
    out: list[Setting] = []
    wd = sw.qos.watchdog
    if wd is not None and nos.watchdog_effect is not None and any(p.watchdog for p in sw.ports):
        req: dict[str, object] = {k.key: getattr(wd, k.fact) for k in WATCHDOG}
        effect = nos.watchdog_effect(req)
        for k in WATCHDOG:
            loc = ("qos", "pfc_watchdog", k.key)
            eff, how = effect.get(k.key, (req[k.key], ""))
            out.append(Setting(f"qos.pfc_watchdog.{k.key}", k.text(req[k.key]),
                               None if eff is None else k.text(eff), how, loc, loc in lines))
    elif wd is not None and nos.watchdog is None and any(p.watchdog for p in sw.ports):
        loc = ("qos", "pfc_watchdog")
        out.append(Setting("qos.pfc_watchdog", f"on (detection {wd.detection_ms} ms)", "off",
                           "no PFC watchdog on this NOS (iproute2 dcb has none): nothing on the switch breaks a PFC "
                           "storm", loc, any((*loc, key) in lines for key in ("enabled", *(w.key for w in WATCHDOG)))))
    mtu = loaded.inv.switching.mtu
    out.append(Setting("switching.mtu", str(mtu), str(sw.mtu),
                       f"the largest MTU {nos.title} takes (fabric.nos: mtu_max)" if sw.mtu != mtu else "",
                       ("switching", "mtu"), ("switching", "mtu") in lines))
    ar = [p.name for p in sw.ports if p.adaptive_routing]
    if ar:
        loc = _ar_loc(loaded, sw.name)
        out.append(Setting("switching.adaptive_routing", f"on ({len(ar)} ports)",
                           f"on ({len(ar)} ports)" if nos.adaptive_routing else "off",
                           "" if nos.adaptive_routing else f"{nos.title} renders no adaptive routing",
                           loc, loc in lines))
    return out


def _ar_loc(loaded: Loaded, name: str) -> Loc:
    """Where the inventory turns adaptive routing on for switch `name`: its own entry, else switching."""
    for i, s in enumerate(loaded.inv.switches):
        if s.name == name and s.adaptive_routing is not None:
            return ("switches", i, "adaptive_routing")
    return ("switching", "adaptive_routing", "enabled")
