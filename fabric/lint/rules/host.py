"""RF2xx: what each GPU host and its NCCL environment are told."""

from __future__ import annotations

from collections.abc import Iterator

from fabric.design.intent import HostIntent
from fabric.lint.context import Context, Where
from fabric.lint.core import Finding, Rule, Severity, rule


def _env_at(ctx: Context, h: HostIntent, var: str, fallback: str) -> Where:
    if ctx.host_sets(h.name, "nccl_env", var):
        return ctx.host_at(h.name, "nccl_env", var)
    return ctx.host_at(h.name, fallback)


def _entries(value: str) -> tuple[str, list[str]]:
    """An NCCL interface/HCA list → (mode, names): mode '=' exact, '^' exclude, '' prefix match."""
    mode = value[:1] if value[:1] in "=^" else ""
    names = [e.strip().split(":")[0] for e in value[len(mode) :].split(",") if e.strip()]
    return mode, names


@rule
class NcclTc(Rule):
    id = "RF201"
    severity = Severity.error
    title = "NCCL_IB_TC equals the RoCE ToS"
    explanation = (
        "NCCL sets the GRH traffic class of its queue pairs from NCCL_IB_TC (the full ToS byte); "
        "unset it is 0, i.e. DSCP 0, which every switch carries lossy. It must equal the ToS the "
        "switches classify as lossless."
    )
    fix = "Leave NCCL_IB_TC to the tool (it renders the RoCE ToS) or set it to the hosts' roce_tos (106)."

    def check(self, ctx: Context) -> Iterator[Finding]:
        hits = []
        for h in ctx.hosts:
            got = h.nccl_env.get("NCCL_IB_TC")
            if got != str(h.nic_qos.roce_tos):
                hits.append(
                    (
                        h.name,
                        f"NCCL_IB_TC: expected {h.nic_qos.roce_tos} (the RoCE ToS), found "
                        f"{got if got is not None else 'unset (0)'}",
                        _env_at(ctx, h, "NCCL_IB_TC", "roce_tos"),
                        "NCCL_IB_TC",
                    )
                )
        yield from self.grouped(hits, "hosts", "hosts")


@rule
class NcclHca(Rule):
    id = "RF202"
    severity = Severity.error
    title = "NCCL_IB_HCA lists exactly the rail NICs"
    explanation = (
        "NCCL_IB_HCA selects the RDMA devices NCCL uses. Without a leading `=` every entry is a "
        "prefix: `mlx5_1` also selects mlx5_10 … mlx5_19 (storage or management NICs), and a `^` "
        "list excludes instead of selects. A missing rail NIC loses that rail's bandwidth; an extra "
        "device sends collective traffic off the rail-optimized fabric."
    )
    fix = (
        "Set NCCL_IB_HCA to `=` followed by every rail NIC, e.g. `=mlx5_0:1,mlx5_1:1,…` (the tool's default)."
    )

    def check(self, ctx: Context) -> Iterator[Finding]:
        hits = []
        verdicts: dict[tuple[str, tuple[str, ...]], str | None] = {}  # thousands of hosts share one
        for h in ctx.hosts:
            value = h.nccl_env.get("NCCL_IB_HCA", "")
            key = (value, tuple(r.rdma for r in h.rails))
            if key not in verdicts:
                verdicts[key] = self.verdict(value, sorted(key[1]))
            if (message := verdicts[key]) is not None:
                hits.append((h.name, message, _env_at(ctx, h, "NCCL_IB_HCA", "nics"), "NCCL_IB_HCA"))
        yield from self.grouped(hits, "hosts", "hosts")

    @staticmethod
    def verdict(value: str, rails: list[str]) -> str | None:
        """The message for NCCL_IB_HCA `value` on a host of these RDMA devices (sorted); None: right."""
        mode, names = _entries(value)
        if mode == "^" or not names:
            return (f"NCCL_IB_HCA: expected ={','.join(f'{n}:1' for n in rails)}, found "
                    f"{value or 'unset (every RDMA device)'}")
        if sorted(set(names)) != rails:
            extra = sorted(set(names) - set(rails))
            missing = sorted(set(rails) - set(names))
            detail = "; ".join(
                x
                for x in (
                    f"not rail NICs: {', '.join(extra)}" if extra else "",
                    f"missing: {', '.join(missing)}" if missing else "",
                )
                if x
            )
            return f"NCCL_IB_HCA: expected exactly the rail NICs {', '.join(rails)}, found {value} ({detail})"
        if mode != "=":
            shadow = sorted(
                {f"{a} matches {b}" for a in names for b in rails if a != b and b.startswith(a)}
            )
            detail = f" ({'; '.join(shadow)})" if shadow else " (mlx5_1 would also select mlx5_10 …)"
            return f"NCCL_IB_HCA: expected an exact list starting with '=', found the prefix list {value}{detail}"
        return None


@rule
class NcclSocket(Rule):
    id = "RF203"
    severity = Severity.error
    title = "NCCL_SOCKET_IFNAME is not a rail NIC"
    explanation = (
        "NCCL bootstraps over TCP on NCCL_SOCKET_IFNAME. On a rail NIC that traffic lands in the "
        "RoCE rail's queues (and in its routing table); it belongs on the management network. "
        "Without `=` the name is a prefix: `rail` matches every rail NIC."
    )
    fix = "Set NCCL_SOCKET_IFNAME to `=<management interface>` (the tool's default, e.g. =eth0)."

    def check(self, ctx: Context) -> Iterator[Finding]:
        hits = []
        verdicts: dict[tuple[str, tuple[str, ...]], tuple[list[str], bool] | None] = {}  # hosts share one
        for h in ctx.hosts:
            value = h.nccl_env.get("NCCL_SOCKET_IFNAME", "")
            key = (value, tuple(x for r in h.rails for x in (r.netdev, r.ifname)))
            if key not in verdicts:
                mode, names = _entries(value)
                verdicts[key] = None if mode == "^" else (
                    sorted({r for n in names for r in set(key[1]) if r == n or (mode == "" and r.startswith(n))}),
                    not names)
            if (verdict := verdicts[key]) is None:
                continue
            bad, unset = verdict
            if bad:
                hits.append(
                    (
                        h.name,
                        f"NCCL_SOCKET_IFNAME: expected the management interface "
                        f"={h.management_interface}, found {value} (selects rail NIC {', '.join(bad)})",
                        _env_at(ctx, h, "NCCL_SOCKET_IFNAME", "management_interface"),
                        "NCCL_SOCKET_IFNAME",
                    )
                )
            elif unset:
                hits.append(
                    (
                        h.name,
                        f"NCCL_SOCKET_IFNAME: expected ={h.management_interface}, found unset "
                        "(NCCL may pick a rail NIC)",
                        _env_at(ctx, h, "NCCL_SOCKET_IFNAME", "management_interface"),
                        "NCCL_SOCKET_IFNAME",
                    )
                )
        yield from self.grouped(hits, "hosts", "hosts")


@rule
class GidPolicy(Rule):
    id = "RF204"
    severity = Severity.error
    title = "The GID index policy selects RoCE v2"
    explanation = (
        "Each RDMA port has several GIDs: RoCE v1 and v2, link-local and IPv4. Only a RoCE v2 "
        "(UDP/IP, routable, DSCP-classified) IPv4 GID works across a routed rail fabric; RoCE v1 "
        "is L2-only and link-local GIDs time out (ibv_modify_qp … Connection timed out)."
    )
    fix = (
        "Use gid.policy roce-v2-ipv4 with the index the host agent verifies, or auto with "
        "NCCL_IB_ROCE_VERSION_NUM=2 and no NCCL_IB_GID_INDEX."
    )

    def check(self, ctx: Context) -> Iterator[Finding]:
        hits = []
        for h in ctx.hosts:
            env = h.nccl_env
            idx, ver = env.get("NCCL_IB_GID_INDEX"), env.get("NCCL_IB_ROCE_VERSION_NUM", "2")
            if ver != "2":
                hits.append(
                    (
                        h.name,
                        f"NCCL_IB_ROCE_VERSION_NUM: expected 2, found {ver}",
                        _env_at(ctx, h, "NCCL_IB_ROCE_VERSION_NUM", "gid"),
                        "NCCL_IB_ROCE_VERSION_NUM",
                    )
                )
            if h.gid.policy == "roce-v2-ipv4" and idx != str(h.gid.index):
                hits.append(
                    (
                        h.name,
                        f"NCCL_IB_GID_INDEX: expected {h.gid.index} (the verified RoCE v2 IPv4 GID), "
                        f"found {idx if idx is not None else 'unset'}",
                        _env_at(ctx, h, "NCCL_IB_GID_INDEX", "gid"),
                        "NCCL_IB_GID_INDEX",
                    )
                )
            if h.gid.policy == "auto" and idx is not None:
                hits.append(
                    (
                        h.name,
                        f"NCCL_IB_GID_INDEX: expected unset with gid.policy auto, found {idx} (not "
                        "verified to be RoCE v2)",
                        ctx.host_at(h.name, "gid"),
                        "NCCL_IB_GID_INDEX",
                    )
                )
        yield from self.grouped(hits, "hosts", "hosts")


@rule
class PodRails(Rule):
    id = "RF205"
    severity = Severity.warning
    title = "Pods can attach every rail NIC (Kubernetes)"
    explanation = (
        "Where the fabric runs pods (a `kubernetes:` section, or NICs with VFs), each rail needs a device the "
        "device plugin can offer and an address the pod can use. In p2p31 addressing each host port is a /31 to "
        "its leaf: no address is left for a VF. A PF passed through (`vfs: 0`) on a rail tagged on the host would "
        "reach the pod untagged: it gets no pod network. (A passed-through PF needs no PCI address: the device plugin "
        "selects it by its interface name, fabric.render.k8s.device_plugin_config.)"
    )
    fix = "Use svi addressing for VFs; for a tagged rail, give the NIC VFs (`vfs: 8`)."

    def check(self, ctx: Context) -> Iterator[Finding]:
        hosts = ctx.hosts
        if not ctx.intent.kubernetes.explicit and not any(r.vfs for h in hosts for r in h.rails):
            return
        hits = []
        for h in hosts:
            for r in h.rails:
                if r.vfs == 0 and r.vlan is not None:
                    hits.append((h.name, f"rail {r.rail} ({r.netdev}): expected VFs (sriov-cni tags them) or an "
                                 f"untagged rail for a PF passed to pods, found vfs: 0 with host VLAN {r.vlan} "
                                 "(host-device would move the untagged PF into the pod while the leaf port is a "
                                 "tagged member)", ctx.host_at(h.name, "nics"), r.netdev))
                elif r.vfs and r.pod is None:
                    hits.append((h.name, f"rail {r.rail} ({r.netdev}): expected an address pool for {r.vfs} VFs, "
                                 f"found none (addressing.mode {ctx.intent.addressing_mode})",
                                 ctx.host_at(h.name, "nics"), r.netdev))
        yield from self.grouped(hits, "hosts", "hosts")
