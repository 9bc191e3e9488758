"""Host files: intent JSON (for the host agent), roce-setup.sh, nccl.env and the boot-time files
(netplan, sysctl.d, roce-qos unit and script, from fabric.host.persist); k8s NADs."""

from __future__ import annotations

import json
from ipaddress import IPv4Address, IPv4Network

from fabric.design.intent import FabricIntent, HostIntent
from fabric.host import persist
from fabric.render import Files, dumps_yaml, template


def nccl_env(h: HostIntent) -> str:
    return "".join(f"{k}={v}\n" for k, v in h.nccl_env.items())


def render(h: HostIntent, fabric: FabricIntent) -> Files:
    return {
        "host.json": h.model_dump_json(indent=2) + "\n",
        "roce-setup.sh": template("host/roce-setup.sh.j2", h=h, nic_qos_script=persist.qos_script_body(h)),
        "netplan.yaml": persist.netplan(h),
        "sysctl.conf": persist.sysctl_conf(h),
        "roce-qos.service": persist.qos_unit(h),
        "roce-qos.sh": persist.qos_script(h),
        "nccl.env": nccl_env(h),
    }


def network_attachments(fabric: FabricIntent) -> Files:
    """SR-IOV NetworkAttachmentDefinitions, one per (SU, rail) subnet, whereabouts IPAM after the hosts.

    Only in `svi` mode: pods share the rail subnet with the hosts; `p2p31` has no shared subnet.
    """
    if fabric.addressing_mode != "svi" or not fabric.hosts:
        return {}
    per: dict[tuple[int, int], list] = {}
    for h in fabric.hosts.values():
        for r in h.rails:
            per.setdefault((h.su, r.rail), []).append(r)
    docs = []
    for (su, rail), rails in sorted(per.items()):
        net = IPv4Network(rails[0].subnet)
        last_host = max(int(IPv4Address(r.address.split("/")[0])) for r in rails)
        start, end = last_host + 1, int(net.broadcast_address) - 1
        if start > end:
            continue
        name = f"rail{rail}-su{su}"
        config = {
            "cniVersion": "0.3.1", "name": name, "type": "sriov", "spoofchk": "off", "trust": "on",
            "ipam": {"type": "whereabouts", "range": str(net),
                     "range_start": str(IPv4Address(start)), "range_end": str(IPv4Address(end)),
                     "routes": [{"dst": d, "gw": rails[0].gateway} for d in rails[0].routes]},
        }
        docs.append({
            "apiVersion": "k8s.cni.cncf.io/v1", "kind": "NetworkAttachmentDefinition",
            "metadata": {"name": name, "annotations": {
                "k8s.v1.cni.cncf.io/resourceName": f"nvidia.com/rail{rail}"}},
            "spec": {"config": json.dumps(config, sort_keys=True)},
        })
    text = "".join("---\n" + dumps_yaml(d) for d in docs)
    return {"network-attachments.yaml": text} if docs else {}
