"""Kubernetes: how pods get the rails (pure rendering; the acceptance jobs are in fabric.accept.k8s).

The path, from the host up (each piece cites the controller code it was checked against):

1. **Host VFs** (fabric.host.sriov): `sriov_numvfs` per rail NIC, VF MTU = the rail MTU, trust and
   spoof-check, the RDMA subsystem in `exclusive` netns mode where pods get VFs.
2. **Device plugin** (`device_plugin_configmap`): sriov-network-device-plugin's `resourceList`, one
   resource per rail (`<prefix>/<name><rail>`, per-rail) or one for all (pooled: each NIC gives one device and
   a worker takes all of them, fabric.design.checks.kubernetes_problems says why; the pod then finds which
   device is which rail, `pod_rail_setup`, from the node's rail map, `node_rail_map`). VFs are selected with
   `pfNames: ["<pf>#0-<vfs-1>"]` (docs/kubernetes.md, "pfNames … range of VFs"), a passed-through PF (`vfs: 0`) with
   `pciAddresses` (`pfNames` matches only functions that have a PF: pkg/resources/deviceSelectors.go),
   always `isRdma: true` (the plugin then mounts the device's /dev/infiniband/uverbsN and rdma_cm into the
   container). The ConfigMap holds one key per node, read with `--config-file=/etc/pcidp/$(NODE_NAME)` as
   sriov-network-operator deploys it (bindata/manifests/plugins/sriov-device-plugin.yaml), because NIC
   names and VF counts may differ per host; `config.json` is added when every node's list is the same (the
   plugin's default `-config-file`).
3. **Networks** (`network_attachments` + `node_cni_configs`): one NetworkAttachmentDefinition per rail with
   the resource annotation and **no spec**; multus then loads the CNI config of the same name from the
   node's `/etc/cni/multus/net.d` (network-attachment-definition-client pkg/utils/cniconfig.go
   GetCNIConfig: "Network Spec empty; generate delegate from CNI JSON config … that has the same network
   name"; multus docs/how-to-use.md; the thick daemonset mounts that directory). That file is rendered per
   host (hosts/<host>/cni/) and installed by `fabric host apply --persist`.

   Why per node: in `svi` addressing every (SU, rail) is its own subnet with the leaf's SVI as gateway, so
   a pod's VF needs an address of *its node's* SU. An MPIJob has one worker template, so every worker names
   the same networks; a NAD spec would give every node the same subnet. NVIDIA's IPAM (nv-ipam) solves the
   per-node part with pools whose blocks are carved per node, but an IPPool has one subnet and gateway for
   all its nodes and a CIDRPool gives each node its own prefix (api/v1alpha1/cidrpool_validate.go refuses a
   prefix on two nodes) — i.e. a routed prefix per host, which the leaves here do not have (the SU shares
   the SVI subnet). Node-affine pod groups per SU need a job per SU. A per-node CNI config keeps one network
   per rail, gives each node its SU's subnet, gateway and VLAN, and lets nodes of one SU share one
   whereabouts pool (whereabouts names its IPPool after the range).

   The chain per rail: `sriov` (VF; `vlan` when the host tags the rail, `trust`, `spoofchk`; no `mtu`,
   which sriov-cni does not set) or `host-device` (the PF, given by the PCI address multus injects as
   `pciBusID`/`deviceID`: multus pkg/types/conf.go delegateAddDeviceID) → `rdma` in exclusive mode
   (rdma-cni moves the VF's RDMA device into the pod; it must be chained and refuses a shared subsystem:
   cmd/rdma/main.go CmdAdd) → `sbr`, which moves the interface's routes into a table of their own with a
   default route via the rail gateway and adds a rule `from <pod address>` to it (containernetworking/plugins
   plugins/meta/sbr doRoutes) — the pod's per-rail routing, as the host has it. IPAM: whereabouts over the
   (SU, rail) subnet after its hosts for VFs; for the PF the host's own rail address (static), so the
   leaf's ARP entry (same IP, same MAC) stays valid while the pod holds the NIC.
4. **NCCL in the pod** (`pod_entrypoint`): NCCL_IB_HCA and the GID index are found at start from the pod's
   own rail interfaces and RDMA devices, never copied from the host (PF names such as mlx5_0 do not exist
   in a pod that sees VFs).
"""

from __future__ import annotations

import json
from typing import Any

import yaml

from fabric.design.intent import FabricIntent, HostIntent, RailIntent
from fabric.render.files import TEMPLATES
from fabric.serialize import indented_json

CNI_DIR = "etc/cni/multus/net.d"  # multus `confDir` default (docs/configuration.md), below the host root
CNI_VERSION = "1.0.0"
CONFIGMAP = "sriovdp-config"
POD_SYSFS_DEFAULT = "/sys"


class _Dumper(yaml.SafeDumper):
    """Block YAML in the key order given (apiVersion, kind, metadata, spec) with multi-line strings (scripts,
    JSON configs) as literal blocks, so a reviewer reads them as they run."""


def _str(dumper: yaml.SafeDumper, value: str) -> yaml.Node:
    style = "|" if "\n" in value else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)


_Dumper.add_representer(str, _str)
_Dumper.ignore_aliases = lambda self, data: True  # type: ignore[method-assign]  # no &id001 anchors


def k8s_yaml(docs: list[dict[str, Any]]) -> str:
    """A multi-document stream for `kubectl apply -f` (deterministic: the documents' own key order)."""
    return "".join("---\n" + yaml.dump(d, Dumper=_Dumper, sort_keys=False, default_flow_style=False, width=120)
                   for d in docs)


def rdma_exclusive(host: HostIntent) -> bool:
    return host.rdma_netns == "exclusive"


def cni_config(host: HostIntent, rail: RailIntent) -> dict[str, Any] | None:
    """The node-local CNI config list of `rail` on `host` (None when pods cannot attach the rail)."""
    pod = rail.pod
    if pod is None:
        return None
    if pod.pooled:  # one config for every rail: the device and its rail are the pod's to find (pod_rail_setup)
        first = {"type": "host-device"} if pod.device == "pf" else {
            "type": "sriov", "vlan": 0, "spoofchk": "on" if rail.vf_spoof_check else "off",
            "trust": "on" if rail.vf_trust else "off"}
        plugins = [first, *([{"type": "rdma"}] if rdma_exclusive(host) else [])]
        return {"cniVersion": CNI_VERSION, "name": pod.network, "plugins": plugins}
    if pod.device == "vf":
        net = rail.subnet
        first: dict[str, Any] = {"type": "sriov"}
        if rail.vlan:
            first["vlan"] = rail.vlan
        first.update({"spoofchk": "on" if rail.vf_spoof_check else "off", "trust": "on" if rail.vf_trust else "off",
                      "ipam": {"type": "whereabouts", "range": net, "range_start": pod.range_start,
                               "range_end": pod.range_end, "gateway": rail.gateway}})
    else:
        first = {"type": "host-device", "ipam": {"type": "static", "addresses": [
            {"address": rail.address, "gateway": rail.gateway}]}}
    plugins = [first]
    if rdma_exclusive(host):
        plugins.append({"type": "rdma"})
    plugins.append({"type": "sbr"})
    return {"cniVersion": CNI_VERSION, "name": pod.network, "plugins": plugins}


def node_cni_configs(host: HostIntent) -> dict[str, str]:
    """`etc/cni/multus/net.d/<network>.conflist` → JSON text, for every rail pods can attach."""
    out: dict[str, str] = {}
    for rail in host.rails:
        cfg = cni_config(host, rail)
        if cfg is not None:
            out[f"{CNI_DIR}/{cfg['name']}.conflist"] = indented_json(cfg) + "\n"  # json.dumps(cfg, indent=2)
    return out


RAIL_MAP = "etc/roce-fabric/pod-rails"  # below the host root; workers of a pooled resource mount it read-only


def node_rail_map(host: HostIntent) -> dict[str, str]:
    """With a pooled resource, `etc/roce-fabric/pod-rails`: one line per rail pods attach, `PCI RAIL VLAN
    ADDRESS/LEN SUBNET GATEWAY TABLE PRIORITY` (VLAN 0: untagged), keyed by the NIC's PCI address because that is all
    a pod sees of it (the granted list, a VF's `physfn`). Empty without one."""
    lines = [f"{r.pci} {r.rail} {r.vlan or 0} {r.pod.address or r.address} {r.subnet} {r.gateway} {r.table} "
             f"{r.rule_priority}"
             for r in host.rails if r.pod is not None and r.pod.pooled and r.pci]
    if not lines:
        return {}
    head = (f"# Rails of {host.name} for pods of a pooled resource (roce-fabric): PCI rail vlan address subnet "
            "gateway table priority\n")
    return {RAIL_MAP: head + "\n".join(lines) + "\n"}


def device_plugin_config(host: HostIntent, prefix: str) -> dict[str, Any]:
    """sriov-network-device-plugin `resourceList` for one node. VFs by `pfNames` with their range; a PF (`vfs: 0`)
    by `pciAddresses` where every PF of the resource has one, else by `pfNames` with the bare netdev (the plugin's
    PF name of a device that is not a VF is its own interface name: pkg/utils/utils.go GetPfName), as slot-style
    names (`ens1np0`) carry no PCI address. Selectors of one entry are ANDed, so one resource never mixes both."""
    per: dict[str, dict[str, Any]] = {}
    pfs: dict[str, list[RailIntent]] = {}
    for rail in host.rails:
        pod = rail.pod
        if pod is None:
            continue
        name = pod.resource.split("/", 1)[1]
        sel = per.setdefault(name, {"resourceName": name, "resourcePrefix": prefix,
                                    "selectors": [{"isRdma": True}]})["selectors"][0]
        if pod.device == "vf":
            sel.setdefault("pfNames", []).append(f"{rail.netdev}#0-{rail.vfs - 1}")
        else:
            pfs.setdefault(name, []).append(rail)
    for name, rails in pfs.items():
        sel = per[name]["selectors"][0]
        if all(r.pci for r in rails):
            sel.setdefault("pciAddresses", []).extend(r.pci for r in rails if r.pci)
        else:
            sel.setdefault("pfNames", []).extend(r.netdev for r in rails)
    return {"resourceList": sorted(per.values(), key=lambda r: r["resourceName"])}


def device_plugin_configmap(fabric: FabricIntent) -> str:
    """The device plugin's ConfigMap: `config.json` when every node has the same resources (the plugin's
    default `-config-file`), else one key per node for `--config-file=/etc/pcidp/$(NODE_NAME)`."""
    k = fabric.kubernetes
    layouts: dict[tuple[object, ...], dict[str, Any]] = {}  # nodes with the same rails have the same config
    configs: dict[str, dict[str, Any]] = {}
    for name, h in sorted(fabric.hosts.items()):
        layout = tuple((r.netdev, r.vfs, r.pci, r.pod.resource, r.pod.device) for r in h.rails if r.pod is not None)
        config = layouts.get(layout)
        if config is None:
            config = layouts[layout] = device_plugin_config(h, k.resource_prefix)
        configs[name] = config
    empty = [name for name, c in configs.items() if not c["resourceList"]]
    configs = {name: c for name, c in configs.items() if c["resourceList"]}  # never an empty resource list
    indented: dict[str, str] = {}  # compact JSON → indented (json's C encoder does compact only; nodes repeat)
    data: dict[str, str] = {}
    compacts: dict[int, str] = {}  # id of a shared config → its compact JSON
    for name, config in configs.items():
        compact = compacts.get(id(config))
        if compact is None:
            compact = compacts[id(config)] = json.dumps(config)
        if compact not in indented:
            indented[compact] = json.dumps(config, indent=2) + "\n"
        data[name] = indented[compact]
    if not data:
        how = "# No node has a rail pods can attach (host-tagged rails in PF mode): nothing for the plugin.\n"
    elif len(set(data.values())) == 1:
        data = {"config.json": next(iter(data.values()))}
        how = ("# Every node has the same resources: the plugin's default --config-file=/etc/pcidp/config.json.\n")
    else:
        how = ("# Nodes differ (NIC names, VF counts): one key per node; run the plugin with\n"
               "# --config-file=/etc/pcidp/$(NODE_NAME) (NODE_NAME from spec.nodeName), as sriov-network-operator\n"
               "# does (bindata/manifests/plugins/sriov-device-plugin.yaml).\n")
    head = (f"# sriov-network-device-plugin resources for fabric {fabric.name} (generated by roce-fabric).\n" + how
            + "# The plugin reads its config at start: restart its pods after a change.\n"
            + (f"# Left out, no rail pods can attach: {', '.join(empty[:5])}"
               + (f" and {len(empty) - 5} more" if len(empty) > 5 else "") + "\n" if empty else ""))
    doc = {"apiVersion": "v1", "kind": "ConfigMap",
           "metadata": {"name": CONFIGMAP, "namespace": k.device_plugin_namespace,
                        "labels": {"app.kubernetes.io/part-of": "roce-fabric"}},
           "data": data}
    return head + k8s_yaml([doc])


def networks(fabric: FabricIntent) -> dict[str, str]:
    """network name → resource, over every host (the same on every node of a fabric)."""
    out: dict[str, str] = {}
    for h in fabric.hosts.values():
        for r in h.rails:
            if r.pod is not None:
                out.setdefault(r.pod.network, r.pod.resource)
    return dict(sorted(out.items(), key=lambda kv: (len(kv[0]), kv[0])))


def network_attachments(fabric: FabricIntent) -> str:
    """One NetworkAttachmentDefinition per rail: the resource annotation, no spec (the CNI config is per node)."""
    k = fabric.kubernetes
    docs = [{"apiVersion": "k8s.cni.cncf.io/v1", "kind": "NetworkAttachmentDefinition",
             "metadata": {"name": name, "namespace": k.namespace,
                          "labels": {"app.kubernetes.io/part-of": "roce-fabric"},
                          "annotations": {"k8s.v1.cni.cncf.io/resourceName": resource}}}
            for name, resource in networks(fabric).items()]
    head = (f"# Rail networks of fabric {fabric.name} (generated by roce-fabric). No spec: multus reads the CNI\n"
            f"# config named like the network from /{CNI_DIR} on each node (hosts/<host>/cni/, installed by\n"
            "# `fabric host apply --persist`), which holds that node's SU subnet, gateway and VLAN.\n")
    return head + k8s_yaml(docs)


def pod_entrypoint() -> str:
    """POSIX sh run in every rank's container before the program: finds the pod's rail interfaces (those with
    an RDMA device behind them), exports NCCL_IB_HCA (exact names) and NCCL_IB_GID_INDEX when every device has
    its RoCE v2 IPv4-mapped GID at one index (otherwise NCCL's own selection, NCCL_IB_GID_INDEX unset with
    NCCL_IB_ROCE_VERSION_NUM=2 and NCCL_IB_ADDR_FAMILY=AF_INET, NCCL ≥ 2.21: src/transport/net_ib
    `NCCL_PARAM(IbGidIndex, "IB_GID_INDEX", -1)`; with `$ROCE_FABRIC_NCCL_VERSION` below 2.21 it fails instead,
    as that NCCL would take GID 0), then runs the program.

    `roce-pod rail N` prints `DEV GID IFNAME` of rail interface N (`$ROCE_FABRIC_IFPREFIX` + N, or the one
    the pooled set-up, pod_rail_setup, recorded); `roce-pod
    perftest ROLE RAIL PEER ARGV…` runs a perftest server (ROLE server) or client (ROLE client, retried until
    the server listens) with `@DEV@`/`@GID@` in ARGV replaced by the rail's device and GID index. The
    sysfs root is `$ROCE_FABRIC_SYSFS` (default /sys) so tests can run it against a prepared tree.
    """
    return _POD_SH


_POD_SH = r"""# roce-fabric pod entrypoint: NCCL_IB_HCA and the GID index from this pod's own rail interfaces.
sys="${ROCE_FABRIC_SYSFS:-/sys}"
run="${ROCE_FABRIC_RUN:-/var/run/roce-fabric}"
say() { echo "roce-pod: $*" >&2; }
# pairs: "IFNAME DEV" of every rail interface: what the pooled set-up found ($run/rails: "IFNAME DEV RAIL" in
# rail order), else every interface with an RDMA device behind it
pairs() {
  if [ -f "$run/rails" ]; then cat "$run/rails"; return 0; fi
  for net in "$sys/class/net/"*; do
    for ib in "$net/device/infiniband/"*; do [ -e "$ib" ] && echo "${net##*/} ${ib##*/}"; done
  done
  return 0
}
dev_of() { pairs | awk -v i="$1" '$1 == i {print $2; exit}'; }
# rail_if N: the interface of rail N
rail_if() {
  if [ -f "$run/rails" ]; then awk -v r="$1" '$3 == r {print $1; exit}' "$run/rails"
  else echo "${ROCE_FABRIC_IFPREFIX:-rail}$1"; fi
}
# gid_of DEV IFNAME: index of the RoCE v2 GID of IFNAME that is an IPv4-mapped address (::ffff:a.b.c.d)
gid_of() {
  for t in "$sys/class/infiniband/$1/ports/1/gid_attrs/types/"*; do
    i=${t##*/}
    [ "$(cat "$t" 2>/dev/null)" = "RoCE v2" ] || continue
    [ "$(cat "$sys/class/infiniband/$1/ports/1/gid_attrs/ndevs/$i" 2>/dev/null)" = "$2" ] || continue
    case "$(cat "$sys/class/infiniband/$1/ports/1/gids/$i" 2>/dev/null)" in
      0000:0000:0000:0000:0000:ffff:*) echo "$i"; return 0 ;;
    esac
  done
  return 1
}
hca=""; gids=""; n=0; table=""
while read -r ifname dev _; do
  [ -n "$dev" ] || continue
  if g=$(gid_of "$dev" "$ifname"); then :; else say "$ifname ($dev): no RoCE v2 IPv4 GID (no address yet?)"; g=""; fi
  hca="${hca:+$hca,}$dev:1"; n=$((n + 1))
  [ -n "$g" ] && gids="$gids $g"
  table="$table $ifname=$dev:${g:-?}"
done <<EOF
$(pairs)
EOF
want="${ROCE_FABRIC_RAILS:-0}"
if [ "$n" -eq 0 ]; then
  say "no RDMA device behind any interface of this pod: NCCL would fall back to TCP sockets"; exit 1
fi
if [ "$want" -gt 0 ] && [ "$n" -ne "$want" ]; then
  say "found $n rail RDMA devices ($table ), expected $want"; exit 1
fi
export NCCL_IB_HCA="=$hca"
uniq=$(printf '%s\n' $gids | sort -u)
if [ -n "$uniq" ] && [ "$(printf '%s\n' "$uniq" | wc -l)" -eq 1 ] && [ "$(printf '%s\n' $gids | wc -l)" -eq "$n" ]; then
  export NCCL_IB_GID_INDEX="$uniq"
else
  # NCCL chooses a GID by RoCE version and address family only from 2.21 on; before, it takes index 0.
  case "${ROCE_FABRIC_NCCL_VERSION:-}" in
    2.[0-9]|2.[0-9].*|2.1[0-9]|2.1[0-9].*|2.20|2.20.*)
      say "rails:$table: the RoCE v2 IPv4 GIDs are not at one index and NCCL" \
        "$ROCE_FABRIC_NCCL_VERSION (before 2.21) cannot choose per device"
      exit 1 ;;
  esac
  unset NCCL_IB_GID_INDEX
  export NCCL_IB_ROCE_VERSION_NUM=2 NCCL_IB_ADDR_FAMILY=AF_INET
fi
[ -n "${ROCE_FABRIC_QUIET:-}" ] ||
  say "rails:$table NCCL_IB_HCA=$NCCL_IB_HCA NCCL_IB_GID_INDEX=${NCCL_IB_GID_INDEX:-auto}"
case "${1:-}" in
  rail)
    ifname=$(rail_if "$2")
    dev=$(dev_of "$ifname")
    [ -n "$dev" ] && { echo "$dev $(gid_of "$dev" "$ifname") $ifname"; exit 0; }
    say "no rail interface $ifname"; exit 1 ;;
  perftest)
    role=$2; rail=$3; peer=$4; shift 4
    ifname=$(rail_if "$rail")
    g=""; dev=$(dev_of "$ifname")
    [ -n "$dev" ] && g=$(gid_of "$dev" "$ifname")
    [ -n "$dev" ] && [ -n "$g" ] || { say "rail $rail: no RDMA device or RoCE v2 IPv4 GID on $ifname"; exit 1; }
    first=1
    for a in "$@"; do
      [ $first -eq 1 ] && { set --; first=0; }
      case "$a" in @DEV@) a=$dev ;; @GID@) a=$g ;; esac
      set -- "$@" "$a"
    done
    if [ "$role" = server ]; then exec "$@" >/dev/null; fi
    tries=0
    while :; do
      out=$("$@" "$peer" 2>&1) && { printf '%s\n' "$out"; exit 0; }
      tries=$((tries + 1))
      [ $tries -ge 20 ] && { printf '%s\n' "$out"; exit 1; }
      sleep 0.5
    done ;;
esac
exec "$@"
"""


def pod_rail_setup() -> str:
    """POSIX sh run once as root (CAP_NET_ADMIN) at the start of a worker of a pooled resource, before sshd.

    Which devices of the pool the pod got is kubelet's choice and which network each one lands on is multus'
    (fabric.design.checks.kubernetes_problems), so the node's CNI config attaches them bare (sriov-cni with
    `vlan: 0`, VLAN guest tagging; no IPAM) and this script makes each one its rail: the granted PCI addresses
    from the device plugin's variable (`$ROCE_FABRIC_DEVICES_VAR`, whose value is
    `PCIDEVICE_<PREFIX>_<NAME>`: sriov-network-device-plugin pkg/resources/pool_stub.go GetEnvs, comma-separated),
    each one's NIC (a VF's `physfn` link, kernel Documentation/PCI/pci-iov-howto.rst; a PF is its own), that
    NIC's line of the node's rail map (node_rail_map, `$ROCE_FABRIC_RAIL_MAP`), then the rail's interface (a VLAN
    sub-interface `$ROCE_FABRIC_IFPREFIX<rail>` where the rail is tagged, else the attached one, never renamed:
    sriov-cni and host-device find it by name at CNI DEL, sriov-cni pkg/sriov/sriov.go ReleaseVF), its address,
    and a routing table with a `from <address>` rule, as sbr gives a per-rail pod. It writes
    `$ROCE_FABRIC_RUN/rails` (`IFNAME DEV RAIL`, in rail order), which the pod entrypoint reads for NCCL_IB_HCA,
    the GID and rail N's interface. Two devices on one rail, a device on no rail of the map, or a rail without a
    device fail the pod.
    """
    return (TEMPLATES / "k8s" / "pod-rails-setup.sh").read_text()


def render(fabric: FabricIntent) -> dict[str, str]:
    """Fabric-wide files below k8s/: the networks, the device plugin's ConfigMap and the pod entrypoint."""
    if not fabric.hosts:
        return {}
    out = {"networks.yaml": network_attachments(fabric), "sriovdp-config.yaml": device_plugin_configmap(fabric),
           "roce-pod-env.sh": "#!/bin/sh\n" + pod_entrypoint()}
    if any(r.pod is not None and r.pod.pooled for h in fabric.hosts.values() for r in h.rails):
        out["roce-pod-setup.sh"] = "#!/bin/sh\n" + pod_rail_setup()
    return out
