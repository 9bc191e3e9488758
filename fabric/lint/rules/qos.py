"""RF1xx: the lossless QoS policy, on both sides of every cable."""

from __future__ import annotations

from collections.abc import Iterator
from operator import attrgetter
from typing import TYPE_CHECKING, Any

from fabric.design.knobs import ECN, WATCHDOG
from fabric.lint.context import Context
from fabric.lint.core import Finding, Rule, Severity, rule
from fabric.lint.rules._util import Hit, on_configs, on_policies, policy_groups, prios
from fabric.lint.view import QosView
from fabric.nos import NOS

if TYPE_CHECKING:
    from fabric.lint.configs.model import ConfigSet  # --configs only: not imported by a cold `lint INV`

_AR, _WATCHDOG = attrgetter("adaptive_routing"), attrgetter("watchdog")

#: Headroom above this fraction of the packet buffer leaves too little shared buffer (see RF107).
HEADROOM_BUDGET_FRACTION = 0.5


def _lossless_hits(v: QosView, dscp: int, what: str) -> list[Hit]:
    prio = v.priority_of_dscp(dscp)
    if prio in v.lossless:
        return []
    how = "the default priority" if dscp not in (v.dscp_to_priority or {}) else f"priority {prio}"
    return [
        (
            f"DSCP {dscp}",
            f"{what} DSCP {dscp} is classified to {how} ({prio}): expected a lossless "
            f"priority (PFC on {prios(v.lossless)}), found a lossy one",
            "dscp_map",
        )
    ]


@rule
class RoceDscpLossless(Rule):
    id = "RF101"
    severity = Severity.error
    title = "RoCE DSCP lands in a lossless priority"
    explanation = (
        "The NIC marks RoCE packets with the DSCP of its ToS (tos >> 2; ToS 106 = DSCP 26 + ECT). "
        "Every switch classifies on DSCP; if that DSCP maps to a priority without PFC, RoCE is "
        "carried lossy and drops under congestion turn into go-back-N retransmissions."
    )
    fix = (
        "Map the RoCE DSCP to the lossless priority in qos.dscp_to_priority (nvidia-roce: 26 → 3), or set "
        "the hosts' roce_tos to (lossless DSCP << 2) | 2."
    )
    configs = True

    def check(self, ctx: Context) -> Iterator[Finding]:
        hits = []
        memo: dict[tuple[int, int], list[Hit]] = {}
        views = {sw.name: v for v, sws in policy_groups(ctx) for sw in sws}
        for h in ctx.hosts:
            tos = h.nic_qos.roce_tos
            for r in h.rails:
                v = views.get(r.leaf)
                if v is None:
                    continue
                key = (tos, id(v))
                if key not in memo:
                    memo[key] = _lossless_hits(v, tos >> 2, f"RoCE ToS {tos} →")
                for item, message, _ in memo[key]:
                    where = (
                        ctx.host_at(h.name, "roce_tos")
                        if ctx.host_sets(h.name, "roce_tos")
                        else ctx.qos_at("dscp_to_priority")
                    )
                    hits.append((h.name, f"{message} on {r.leaf}", where, item))
        yield from self.grouped(hits, "hosts", "hosts")

    def check_configs(self, cs: ConfigSet) -> Iterator[Finding]:
        yield from on_configs(self, cs, lambda v: _lossless_hits(v, cs.policy.roce_dscp, "RoCE"))


def _pfc_hits(v: QosView, want: list[int], source: str) -> list[Hit]:
    if sorted(v.lossless) == sorted(want):
        return []
    return [("PFC", f"PFC priorities: expected {prios(want)} ({source}), found {prios(v.lossless)}", "pfc")]


@rule
class PfcConsistent(Rule):
    id = "RF102"
    severity = Severity.error
    title = "PFC priorities are the same on host, leaf and spine"
    explanation = (
        "PFC only works hop by hop when both ends of every cable pause the same priority. A NIC "
        "with PFC on 3 facing a leaf with PFC on 4 gets no pause frames for its RoCE traffic, and "
        "the leaf's pause frames are ignored by the NIC."
    )
    fix = (
        "Use one qos.lossless_priorities for the whole fabric and render it everywhere; on hosts "
        "`mlnx_qos -i IF --pfc` must enable exactly those priorities."
    )
    configs = True

    def check(self, ctx: Context) -> Iterator[Finding]:
        want = sorted(ctx.qos.lossless_priorities)
        yield from on_policies(self, ctx, lambda v: _pfc_hits(v, want, "qos.lossless_priorities"))
        leaf_ll = {sw.name: sorted(sw.qos.lossless_priorities) for sw in ctx.switches}
        hits = []
        for h in ctx.hosts:
            host_ll = [p for p, on in enumerate(h.nic_qos.pfc) if on]
            for r in h.rails:
                leaf = leaf_ll.get(r.leaf)
                if leaf is not None and leaf != host_ll:
                    hits.append(
                        (
                            h.name,
                            f"PFC on {r.netdev}: expected {prios(leaf)} as on {r.leaf}, found "
                            f"{prios(host_ll)}",
                            ctx.host_at(h.name),
                            r.netdev,
                        )
                    )
        yield from self.grouped(hits, "hosts", "hosts")

    def check_configs(self, cs: ConfigSet) -> Iterator[Finding]:
        want = sorted(cs.policy.lossless_priorities)
        yield from on_configs(self, cs, lambda v: _pfc_hits(v, want, "the policy"))
        for dev in cs.devices:
            if dev.qos is None:
                continue
            for p in dev.ports.values():
                if p.pfc is not None and p.pfc and sorted(p.pfc) != sorted(dev.qos.lossless):
                    yield self.finding(
                        dev.name,
                        f"PFC on {p.name}: expected {prios(dev.qos.lossless)} as on the "
                        f"rest of the device, found {prios(p.pfc)}",
                        (dev.file, p.line),
                        p.name,
                    )


def _cnp_hits(v: QosView, dscp: int) -> list[Hit]:
    prio = v.priority_of_dscp(dscp)
    tc = v.tc_of_priority(prio)
    if prio in v.lossless:
        return [
            (
                f"DSCP {dscp}",
                f"CNP DSCP {dscp} → priority {prio}: expected a lossy strict priority, found "
                f"a lossless one (CNPs would be paused behind the congestion they report)",
                "dscp_map",
            )
        ]
    if tc in v.strict_tcs:
        return []
    if not v.strict_tcs and v.dwrr.get(tc, 0) >= max(v.dwrr.values(), default=0) > 0:
        return []
    return [
        (
            f"TC{tc}",
            f"CNP DSCP {dscp} → priority {prio} → TC{tc}: expected a strict traffic class (strict: "
            f"{prios(v.strict_tcs)}), found DWRR {v.dwrr.get(tc, 0)}%",
            "ets",
        )
    ]


@rule
class CnpStrict(Rule):
    id = "RF103"
    severity = Severity.error
    title = "CNPs map to a strict, lossy priority"
    explanation = (
        "Congestion Notification Packets tell the sender to slow down; they must overtake data "
        "traffic. In a lossless or DWRR queue they wait behind the very congestion they report and "
        "DCQCN reacts too late, so PFC storms follow."
    )
    fix = "Map the CNP DSCP (nvidia-roce: 48 → priority 6 → TC6) to a strict, non-PFC traffic class."
    configs = True

    def check(self, ctx: Context) -> Iterator[Finding]:
        yield from on_policies(self, ctx, lambda v: _cnp_hits(v, ctx.qos.cnp_dscp))
        hits = []
        for h in ctx.hosts:
            if h.nic_qos.cnp_dscp != ctx.qos.cnp_dscp:
                hits.append(
                    (
                        h.name,
                        f"CNP DSCP: expected {ctx.qos.cnp_dscp} (qos.cnp_dscp), found {h.nic_qos.cnp_dscp}",
                        ctx.host_at(h.name),
                        "cnp_dscp",
                    )
                )
        yield from self.grouped(hits, "hosts", "hosts")

    def check_configs(self, cs: ConfigSet) -> Iterator[Finding]:
        yield from on_configs(self, cs, lambda v: _cnp_hits(v, cs.policy.cnp_dscp))


def _ecn_hits(v: QosView) -> list[Hit]:
    out: list[Hit] = []
    for tc in v.lossless_tcs:
        e = v.ecn.get(tc)
        key = f"ecn.{tc}"
        if e is None or not e.enabled:
            out.append(
                (
                    f"TC{tc}",
                    f"ECN on lossless TC{tc}: expected enabled, found "
                    f"{'disabled' if e else 'not configured'}",
                    key,
                )
            )
            continue
        if e.min_bytes >= e.max_bytes:
            out.append(
                (
                    f"TC{tc}",
                    f"ECN thresholds on TC{tc}: expected min < max, found min {e.min_bytes:,} B, "
                    f"max {e.max_bytes:,} B",
                    key,
                )
            )
        if v.buffer_bytes and e.max_bytes > v.buffer_bytes:
            out.append(
                (
                    f"TC{tc}",
                    f"ECN max threshold on TC{tc}: expected at most the {v.buffer_bytes:,} B "
                    f"buffer, found {e.max_bytes:,} B",
                    key,
                )
            )
        if not 1 <= e.probability <= 100:
            out.append(
                (f"TC{tc}", f"ECN mark probability on TC{tc}: expected 1-100 %, found {e.probability}", key)
            )
    return out


@rule
class EcnOnLossless(Rule):
    id = "RF104"
    severity = Severity.error
    title = "ECN marks every lossless queue, with sane thresholds"
    explanation = (
        "DCQCN needs the switch to ECN-mark RoCE packets before the queue reaches the PFC xoff "
        "point; without marking, congestion is only ever handled by PFC, which spreads it. Marking "
        "starts at min and reaches the probability at max, so min must be below max, max must fit "
        "in the buffer, and a probability of 0 never marks."
    )
    fix = (
        "Set qos.ecn.<tc> for every lossless traffic class (nvidia-roce: min 150000 B, max 1500000 B, "
        "probability 100)."
    )
    configs = True

    def check(self, ctx: Context) -> Iterator[Finding]:
        yield from on_policies(self, ctx, _ecn_hits)

    def check_configs(self, cs: ConfigSet) -> Iterator[Finding]:
        yield from on_configs(self, cs, lambda v: _ecn_hits(v) + _ecn_policy_hits(v, cs))


def _ecn_policy_hits(v: QosView, cs: ConfigSet) -> list[Hit]:
    """The device's marking numbers against the policy it is judged by (the inventory's, else the preset)."""
    out: list[Hit] = []
    for tc in v.lossless_tcs:
        e, q = v.ecn.get(tc), cs.policy.queues.get(tc)
        want = q.ecn if q is not None else None
        if e is None or not e.enabled or want is None or not want.enabled:
            continue
        for k in ECN:
            got, exp = getattr(e, k.fact), getattr(want, k.fact)
            if got != exp:
                out.append((f"TC{tc}", f"ECN {k.what} on TC{tc}: expected {k.text(exp)} (the policy), found "
                                       f"{k.text(got)}", f"ecn.{tc}"))
    return out


def _ets_hits(v: QosView) -> list[Hit]:
    out: list[Hit] = []
    for tc in v.strict_tcs:
        if v.dwrr.get(tc):
            out.append(
                (f"TC{tc}", f"ETS share of strict TC{tc}: expected none, found {v.dwrr[tc]}%", f"ets.{tc}")
            )
    shares = {tc: w for tc, w in v.dwrr.items() if tc not in v.strict_tcs}
    total = sum(shares.values())
    if shares and total != 100:
        detail = " + ".join(f"TC{tc} {w}" for tc, w in sorted(shares.items()))
        out.append(("ETS", f"ETS shares: expected a sum of 100 %, found {total} % ({detail})", "ets"))
    for tc in v.lossless_tcs:
        if tc not in v.strict_tcs and not shares.get(tc):
            out.append(
                (
                    f"TC{tc}",
                    f"ETS on lossless TC{tc}: expected a DWRR share, found none (starved)",
                    f"ets.{tc}",
                )
            )
    return out


@rule
class EtsShares(Rule):
    id = "RF105"
    severity = Severity.error
    title = "ETS shares sum to 100 and strict queues have no share"
    explanation = (
        "Enhanced Transmission Selection divides the bandwidth left after strict queues among DWRR "
        "queues by percentage. Shares that do not add up to 100 are rescaled differently by every "
        "NOS (and rejected by mlnx_qos on hosts); a share on a strict queue is meaningless and "
        "usually a typo; a lossless queue without a share is starved."
    )
    fix = "Give qos.ets_dwrr a weight for every non-strict traffic class in use, summing to 100."
    configs = True

    def check(self, ctx: Context) -> Iterator[Finding]:
        yield from on_policies(self, ctx, _ets_hits)

    def check_configs(self, cs: ConfigSet) -> Iterator[Finding]:
        yield from on_configs(self, cs, _ets_hits)


@rule
class PfcWatchdog(Rule):
    id = "RF106"
    severity = Severity.error
    title = "PFC watchdog on every lossless port"
    explanation = (
        "A NIC or switch stuck in xoff (a PFC storm) pauses its peer forever, and the pause spreads "
        "upstream until the whole fabric deadlocks. The PFC watchdog detects a queue paused longer "
        "than the detection time and drops (or forwards) its traffic so the rest keeps moving."
    )
    fix = (
        "Keep qos.pfc_watchdog.enabled true (SONiC: PFC_WD per port with detect/restore 200 ms; NVUE: "
        "`nv set interface <if> qos pfc-watchdog`; EOS: `priority-flow-control pause watchdog`)."
    )
    configs = True

    def check(self, ctx: Context) -> Iterator[Finding]:
        def fn(v: QosView) -> list[Hit]:
            return (
                []
                if v.watchdog or not v.lossless
                else [
                    (
                        "lossless ports",
                        "PFC watchdog: expected enabled on every lossless port, found disabled",
                        "pfc_watchdog",
                    )
                ]
            )

        yield from on_policies(self, ctx, fn)

    def check_configs(self, cs: ConfigSet) -> Iterator[Finding]:
        want = cs.policy.watchdog
        knobs = [(k, getattr(want, k.fact)) for k in WATCHDOG] if want is not None else []  # read once
        for dev in cs.devices:
            for p in dev.ports.values():
                pfc = p.pfc if p.pfc is not None else []
                if pfc and not p.watchdog:
                    yield self.finding(
                        dev.name,
                        f"PFC watchdog on {p.name} (PFC on {prios(pfc)}): expected enabled, found none",
                        (dev.file, p.line),
                        p.name,
                    )
                if not pfc or want is None or not p.wd:
                    continue
                for k, exp in knobs:  # the knobs this config sets per port
                    got = p.wd.get(k.key)
                    if got is not None and got != exp:
                        yield self.finding(
                            dev.name,
                            f"PFC watchdog {k.what} on {p.name}: expected {k.text(exp)} (the policy), found "
                            f"{k.text(got)}",
                            dev.at(f"pfc_wd.{p.name}"),
                            p.name,
                        )


@rule
class HeadroomBudget(Rule):
    id = "RF107"
    severity = Severity.warning
    title = "Computed PFC headroom fits the ASIC buffer budget"
    explanation = (
        "Every lossless port reserves headroom per lossless priority group to absorb what is in "
        "flight after it sends a pause (formula of sonic-swss buffer_headroom_mellanox.lua). That "
        "memory is taken out of the shared buffer. Above the whole buffer the configuration cannot "
        f"be applied (error); above {HEADROOM_BUDGET_FRACTION:.0%} of it too little shared buffer is "
        "left for bursts and ECN marking (warning)."
    )
    fix = (
        "Shorten cables (cabling.*.cable), enable qos.headroom.shared_headroom_pool, use fewer lossless "
        "priorities, or a switch with a larger buffer."
    )

    def check(self, ctx: Context) -> Iterator[Finding]:
        hits = []
        for sw in ctx.switches:
            pgs = len(sw.qos.lossless_priorities)
            ports = [p for p in sw.ports if p.lossless and p.headroom]
            total = sum(p.headroom.size for p in ports if p.headroom) * pgs
            if not total or total <= sw.buffer_bytes * HEADROOM_BUDGET_FRACTION:
                continue
            sev = Severity.error if total > sw.buffer_bytes else Severity.warning
            limit = "buffer" if sev is Severity.error else f"budget of {HEADROOM_BUDGET_FRACTION:.0%} of it"
            msg = (
                f"PFC headroom {total:,} B ({len(ports)} lossless ports × {pgs} PG): expected within the "
                f"{sw.platform} {sw.buffer_bytes:,} B {limit}, found {total / sw.buffer_bytes:.0%}"
            )
            hits.append((sw.name, msg, ctx.switch_at(sw.name), "headroom", sev))
        yield from self.grouped(hits, "switches", "switches")


@rule
class Dcqcn(Rule):
    id = "RF108"
    severity = Severity.error
    title = "DCQCN (np and rp) enabled on the lossless priority on every host"
    explanation = (
        "ECN marks are useless unless the receiving NIC answers with CNPs (notification point, "
        "roce_np) and the sending NIC slows down on CNPs (reaction point, roce_rp), on the priority "
        "RoCE uses. Without DCQCN, congestion is handled by PFC alone and spreads."
    )
    fix = "Keep hosts.defaults.dcqcn.enabled true and its priorities equal to the lossless priorities."

    def check(self, ctx: Context) -> Iterator[Finding]:
        hits = []
        want = set(ctx.qos.lossless_priorities)
        for h in ctx.hosts:
            for side, got in (("np", h.dcqcn.np_priorities), ("rp", h.dcqcn.rp_priorities)):
                missing = sorted(want - set(got))
                if missing:
                    hits.append(
                        (
                            h.name,
                            f"DCQCN roce_{side}: expected enabled on priority {prios(missing)}, "
                            f"found {prios(got)}",
                            ctx.host_at(h.name, "dcqcn"),
                            f"roce_{side}",
                        )
                    )
        yield from self.grouped(hits, "hosts", "hosts")


@rule
class SonicDscpMap(Rule):
    id = "RF109"
    severity = Severity.error
    title = "SONiC renders carry their own DSCP map"
    explanation = (
        "SONiC's default DSCP_TO_TC_MAP (AZURE, qos_config.j2) sends every DSCP it does not list to "
        "TC1, including DSCP 26: out of the box RoCE is lossy on SONiC. A SONiC config must define "
        "and bind an explicit map that lists the RoCE and CNP DSCPs."
    )
    fix = (
        "List the RoCE and CNP DSCPs in qos.dscp_to_priority; in config_db.json define DSCP_TO_TC_MAP and "
        "reference it from PORT_QOS_MAP (global and per port)."
    )
    configs = True

    def check(self, ctx: Context) -> Iterator[Finding]:
        explicit = set(ctx.qos.dscp_to_priority)
        missing = [d for d in (ctx.qos.roce_dscp, ctx.qos.cnp_dscp) if d not in explicit]
        if not missing:
            return
        hits = [
            (
                sw.name,
                f"DSCP map: expected DSCP {', '.join(map(str, missing))} listed explicitly, found it "
                "left to the NOS default",
                ctx.qos_at("dscp_to_priority"),
                "DSCP_TO_TC_MAP",
            )
            for sw in ctx.switches
            if NOS[sw.target].dscp_map_complete
        ]
        yield from self.grouped(hits, "qos", "SONiC switches")

    def check_configs(self, cs: ConfigSet) -> Iterator[Finding]:
        for dev in cs.devices:
            if dev.default_dscp_map:
                yield self.finding(
                    dev.name,
                    f"DSCP map: expected an explicit DSCP_TO_TC_MAP bound in PORT_QOS_MAP, "
                    f"found {dev.default_dscp_map}",
                    dev.at("dscp_map"),
                    "DSCP_TO_TC_MAP",
                )


@rule
class RoceTosEct(Rule):
    id = "RF110"
    severity = Severity.warning
    title = "RoCE ToS is ECN-capable (ECT)"
    explanation = (
        "The low two bits of the ToS byte are the ECN field. With Not-ECT (ToS 104 for DSCP 26) "
        "switches must drop instead of mark, so DCQCN never sees congestion; NVIDIA's default is "
        "106 = DSCP 26 << 2 | ECT(0). CE (3) must never be set by a sender."
    )
    fix = "Set roce_tos to (DSCP << 2) | 2, e.g. 106."

    def check(self, ctx: Context) -> Iterator[Finding]:
        hits = []
        for h in ctx.hosts:
            ecn = h.nic_qos.roce_tos & 3
            if ecn in (0, 3):
                hits.append(
                    (
                        h.name,
                        f"RoCE ToS {h.nic_qos.roce_tos}: expected ECT(0) or ECT(1) in the low bits, "
                        f"found {'Not-ECT' if ecn == 0 else 'CE'}",
                        ctx.host_at(h.name, "roce_tos"),
                        "roce_tos",
                    )
                )
        yield from self.grouped(hits, "hosts", "hosts")


@rule
class NosExpresses(Rule):
    id = "RF111"
    severity = Severity.error
    title = "A value the inventory spells out is what the switch's NOS runs"
    explanation = (
        "NOSes express the same setting differently: NVUE's PFC watchdog has only a poll interval and a "
        "robustness count (it detects after their product), EOS takes its timers in 10 ms steps and has no "
        "alert-only action, a Linux/FRR white-box has no PFC watchdog at all, EOS caps the MTU at 9214, only NVUE "
        "renders adaptive routing (those two: warnings). "
        "A value the NOS runs "
        "as written is accepted; one it cannot express is rendered as the NOS does it, and this finding says "
        "what the switch will do instead (`fabric explain DEVICE effective` shows every such value)."
    )
    fix = ("Write the value the NOS runs (the finding computes it), or waive RF111 for those switches "
           "(lint.waive) where the difference is intended.")

    def check(self, ctx: Context) -> Iterator[Finding]:
        from fabric.design.effective import _ar_loc, settings
        from fabric.nos import NOS

        hits = []
        # a switch's settings are those of another with the same NOS, watchdog facts, MTU, whether a port has the
        # watchdog, how many ports run AR and where AR is set (all fabric.design.effective.settings reads): made once
        memo: dict[tuple[object, ...], list[Any]] = {}
        for sw in ctx.switches:
            n_ar = len(list(filter(None, map(_AR, sw.ports))))
            key = (sw.target, id(sw.qos.watchdog), any(map(_WATCHDOG, sw.ports)), sw.mtu, n_ar,
                   _ar_loc(ctx.loaded, sw.name) if n_ar else None)
            differ = memo.get(key)
            if differ is None:  # an MTU 2 bytes short still carries the hosts' 9000, and a fabric without AR still
                # forwards (as RF402 says where the platform lacks it): warnings
                differ = memo[key] = [s for s in settings(ctx.loaded, sw) if s.written and s.differs]
            for s in differ:
                hits.append((sw.name, f"{s.key}: requested {s.requested}, {NOS[sw.target].title} runs "
                             f"{s.effective} ({s.how})", ctx.at(*s.loc), s.key,
                             self.severity if s.key.startswith("qos.") else Severity.warning))
        yield from self.grouped(hits, "switches", "switches")
