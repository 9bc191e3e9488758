"""Drain and undrain one switch: BGP graceful shutdown (RFC 8326) through the same device transaction
as `apply`, then wait until its fabric ports carry no more than a threshold of traffic.

Draining is the rendered intent plus the NOS's graceful-shutdown setting in the form of the switch's release
(`Driver.drained`): FRR `bgp graceful-shutdown`, SONiC BGP_GLOBALS `graceful_shutdown`, NVUE `router bgp
graceful-shutdown on` (5.9) / `enabled` (5.15), EOS maintenance mode `unit System` / `quiesce`.
The switch then announces its routes with GRACEFUL_SHUTDOWN (65535:0); its peers' inbound policy (rendered
on every target, docs/commands.md "Graceful shutdown") gives them LOCAL_PREF 0, so ECMP moves to the other paths.
The drained intent is recorded like any apply, so `undrain` (the plain intent) removes exactly that
setting, shown as rendered by an earlier apply. A switch whose BGP the tool does not render (SONiC with
bgpcfgd) is drained with its NOS's own traffic shift instead (`Driver.traffic_shift`: SONiC TSA/TSB, checked
with TSC), audited like an apply; one that cannot act is an error, never a drain reported done. Rates are
read through the push driver's `counters()` (bytes in and out of the fabric ports), sampled `interval` seconds
apart.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from pydantic import BaseModel

from fabric.access import Credentials, SwitchEndpoint
from fabric.push import state
from fabric.push.engine import ApplyOptions, DeviceResult, Progress, apply_device, audit_result
from fabric.targets import driver_class
from fabric.targets.base import Driver, TargetError
from fabric.targets.session import close, conn_errors, open_driver


class DrainResult(BaseModel):
    result: DeviceResult
    ports: list[str]
    before_bps: float | None = None  # bits per second in + out over the fabric ports (None: not readable)
    after_bps: float | None = None
    quiet: bool | None = None  # at or under the threshold before the timeout (None: not measured)
    waited: float = 0.0


def fabric_rate(ep: SwitchEndpoint, cred: Credentials, ports: list[str], interval: float,
                timeout: float = 10) -> float | None:
    """Bits per second in + out over `ports`, from two counter reads `interval` apart; None: not readable."""
    drv = None
    try:
        drv = open_driver(ep, cred, timeout=timeout)
        first, t0 = drv.counters(), time.monotonic()
        if first is None:
            return None
        time.sleep(interval)
        second, t1 = drv.counters() or {}, time.monotonic()
    except (TargetError, ValueError, *conn_errors()):  # a reply that is not one: the rate is not readable
        return None
    finally:
        close(drv)

    def port_bytes(c: dict[str, int]) -> int | None:
        """rx + tx of the link where the NOS counts them, else what its egress queues sent."""
        if "link:rx_bytes" in c or "link:tx_bytes" in c:
            return c.get("link:rx_bytes", 0) + c.get("link:tx_bytes", 0)
        queued = [v for k, v in c.items() if k.startswith("queue:") and k.endswith(":tx_bytes")]
        return sum(queued) if queued else None

    def total(c: dict[str, dict[str, int]]) -> int | None:
        got = [b for p in ports if (b := port_bytes(c.get(p, {}))) is not None]
        return sum(got) if got else None

    a, b = total(first), total(second)
    if a is None or b is None:
        return None
    return max(0.0, (b - a) * 8 / max(t1 - t0, 1e-6))


def drain(fabric: str, ep: SwitchEndpoint, cred: Credentials, opts: ApplyOptions, ports: list[str], *,
          release: str = "", undrain: bool = False, threshold_bps: float = 1e6, timeout: float = 300,
          interval: float = 5, progress: Progress = lambda _d, _s: None,
          note: Callable[[str], None] = lambda _s: None) -> DrainResult:
    """Drain (or undrain) `ep`'s switch (`release`: its NOS release, for the form of the setting); after a
    drain, wait until its fabric ports are quiet."""
    target = ep if undrain else ep.model_copy(
        update={"intended": driver_class(ep.target).drained(ep.intended, release)})
    before = fabric_rate(ep, cred, ports, interval)
    note(f"{ep.device}: fabric ports {fmt_rate(before)} before")
    action = "undrain" if undrain else "drain"
    shifted, session = traffic_shift(fabric, target, cred, opts, action)
    res = shifted or apply_device(fabric, target, cred, opts, action=action, progress=progress, session=session)
    out = DrainResult(result=res, ports=ports, before_bps=before)
    if res.status not in ("applied", "unchanged"):
        return out
    t0 = time.monotonic()
    while True:
        rate = fabric_rate(ep, cred, ports, interval)
        out.after_bps, out.waited = rate, time.monotonic() - t0
        if rate is None or undrain:
            return out
        note(f"{ep.device}: fabric ports {fmt_rate(rate)} (threshold {fmt_rate(threshold_bps)})")
        out.quiet = rate <= threshold_bps
        if out.quiet or out.waited >= timeout:
            return out


def traffic_shift(fabric: str, ep: SwitchEndpoint, cred: Credentials, opts: ApplyOptions,
                  action: str) -> tuple[DeviceResult | None, Driver | None]:
    """The drain (or undrain) by the NOS's own traffic shift where the switch needs it, audited; else no result: the
    drain is the intent's graceful-shutdown setting (`Driver.traffic_shift`), and the session that asked, if any,
    is handed on for that transaction (`apply_device`'s `session`: one login, and what it read, serve both)."""
    if driver_class(ep.target).traffic_shift is Driver.traffic_shift:
        return None, None
    t0, drv = time.monotonic(), None
    res = DeviceResult(device=ep.device, target=ep.target, status="error")
    try:
        drv = open_driver(ep, cred, timeout=opts.connect_timeout)
        shifted = drv.traffic_shift(action == "drain")
        if shifted is None:
            session, drv = drv, None  # handed on, not closed here
            return None, session
        res.status, res.detail = ("applied" if shifted.changed else "unchanged"), state.scrub(shifted.detail)
    except TargetError as exc:
        res.detail = state.scrub(str(exc))
    except conn_errors() as exc:
        res.status, res.detail = "unreachable", state.scrub(str(exc) or type(exc).__name__)
    finally:
        close(drv)
    res.seconds = time.monotonic() - t0
    if res.status != "unchanged":
        audit_result(fabric, ep, action, res)
    return res, None


def fmt_rate(bps: float | None) -> str:
    if bps is None:
        return "rate not readable"
    for unit, div in (("Gbit/s", 1e9), ("Mbit/s", 1e6), ("kbit/s", 1e3)):
        if bps >= div:
            return f"{bps / div:.2f} {unit}"
    return f"{bps:.0f} bit/s"
