"""The scheduling tiers of a fabric, read from its cabling: scalable unit, spine group (pod), core.

In a rail-optimized fabric a host has one NIC per rail, each cabled to that rail's leaf of its
scalable unit (SU). No single leaf holds all of a host's traffic, so the closest group of hosts is
the *rail-leaf group* of an SU: every host of the SU reaches every other host of the SU one leaf hop
away on every rail. The tiers are therefore:

1. `suN` — the hosts whose NICs are cabled to the leaves of scalable unit N (the SU of those
   leaves, not of the host's name: a mis-cabled host is refused rather than guessed);
2. `podN` — the SUs whose leaves share spines (connected components of the leaf-spine cabling;
   named after the leaves' pod when that is unambiguous);
3. `core` — the pods joined by super-spines (only when the fabric has super-spines).

Every host is in exactly one group per tier; every group of a tier is in exactly one group of the
tier above.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field

from fabric.design.intent import FabricIntent, HostIntent
from fabric.errors import InputError, Problem
from fabric.order import natural


@dataclass(slots=True)
class HostPlace:
    """Where one host sits: its groups per tier and the leaf of each of its rails."""

    name: str
    gpus: int
    su: str
    pod: str
    core: str | None
    leaves: dict[int, str]  # rail → leaf


@dataclass(slots=True)
class Group:
    """A scheduling domain: `members` are host names (tier 1) or group names of the tier below."""

    name: str
    tier: int
    members: list[str] = field(default_factory=list)


@dataclass(slots=True)
class Tiers:
    """The fabric's hosts in scheduling order (core, pod, SU, host) and its groups per tier."""

    fabric: str
    hosts: list[HostPlace]
    sus: list[Group]
    pods: list[Group]
    cores: list[Group]  # empty in a two-tier fabric

    @property
    def levels(self) -> list[list[Group]]:
        """Groups from tier 1 up, without empty tiers."""
        return [level for level in (self.sus, self.pods, self.cores) if level]


def _components(nodes: list[int], edges: dict[int, set[str]]) -> list[list[int]]:
    """Nodes joined when they share any neighbour (union-find over the shared switch names)."""
    parent = {n: n for n in nodes}

    def find(n: int) -> int:
        while parent[n] != n:
            parent[n] = parent[parent[n]]
            n = parent[n]
        return n

    owner: dict[str, int] = {}
    for n in nodes:
        for switch in edges.get(n, ()):
            if switch in owner:
                a, b = find(owner[switch]), find(n)
                if a != b:
                    parent[max(a, b)] = min(a, b)
            else:
                owner[switch] = n
    groups: dict[int, list[int]] = defaultdict(list)
    for n in nodes:
        groups[find(n)].append(n)
    return sorted(groups.values(), key=min)


def _host_su(host: HostIntent, fabric: FabricIntent) -> int:
    sus = {fabric.switches[r.leaf].su for r in host.rails if r.leaf in fabric.switches}
    sus.discard(None)
    if len(sus) > 1:
        cabling = ", ".join(f"rail {r.rail} → {r.leaf} (SU {fabric.switches[r.leaf].su})" for r in host.rails)
        raise InputError(Problem(fabric.name, None, f"hosts.{host.name}",
                                 "every rail NIC of a host cabled to a leaf of one scalable unit", cabling))
    return sus.pop() if sus else host.su  # type: ignore[return-value]


def tiers(fabric: FabricIntent) -> Tiers:
    """Group the hosts of `fabric` by SU, spine group and core, from the leaves their NICs are cabled to."""
    switches = fabric.switches
    host_su = {name: _host_su(h, fabric) for name, h in fabric.hosts.items()}
    su_leaves: dict[int, set[str]] = defaultdict(set)
    for name, h in fabric.hosts.items():
        su_leaves[host_su[name]].update(r.leaf for r in h.rails if r.leaf in switches)
    for sw in switches.values():  # leaves without hosts still join their SU to its spines
        if sw.role == "leaf" and sw.su in su_leaves:
            su_leaves[sw.su].add(sw.name)

    def uplinks(names: set[str], role: str) -> set[str]:
        return {p.peer for n in names for p in switches[n].ports
                if p.kind == "fabric" and p.peer in switches and switches[p.peer].role == role}

    su_numbers = sorted(su_leaves)
    su_spines = {su: uplinks(su_leaves[su], "spine") for su in su_numbers}
    pod_sus = _components(su_numbers, su_spines)
    leaf_pods = [{switches[leaf].pod for su in sus for leaf in su_leaves[su]} for sus in pod_sus]
    by_pod = [next(iter(p)) if len(p) == 1 and None not in p else None for p in leaf_pods]
    if len(set(by_pod)) != len(by_pod) or None in by_pod:
        by_pod = list(range(1, len(pod_sus) + 1))
    pod_names = [f"pod{p}" for p in by_pod]
    pod_index = list(range(len(pod_sus)))
    pod_supers = {i: uplinks(su_spines_of(pod_sus[i], su_spines), "super-spine") for i in pod_index}
    core_pods = _components(pod_index, pod_supers) if any(pod_supers.values()) else []
    core_names = ["core"] if len(core_pods) == 1 else [f"core{i}" for i in range(1, len(core_pods) + 1)]
    core_of = {i: core_names[k] for k, pods in enumerate(core_pods) for i in pods}

    order = sorted(pod_index, key=lambda i: (core_names.index(core_of[i]) if i in core_of else 0, by_pod[i]))
    hosts_of: dict[int, list[str]] = defaultdict(list)
    for name in sorted(fabric.hosts, key=natural):
        hosts_of[host_su[name]].append(name)
    places: list[HostPlace] = []
    sus: list[Group] = []
    pods: list[Group] = []
    for i in order:
        pod = Group(pod_names[i], 2)
        for su in pod_sus[i]:
            group = Group(f"su{su}", 1, list(hosts_of[su]))
            if not group.members:
                continue
            sus.append(group)
            pod.members.append(group.name)
            for name in group.members:
                h = fabric.hosts[name]
                places.append(HostPlace(name, h.gpus, group.name, pod.name, core_of.get(i),
                                        {r.rail: r.leaf for r in sorted(h.rails, key=lambda r: r.rail)}))
        if pod.members:
            pods.append(pod)
    cores = [Group(core_names[k], 3, [pod_names[i] for i in order if i in pods_k and
                                      any(p.name == pod_names[i] for p in pods)])
             for k, pods_k in enumerate(map(set, core_pods))]
    return Tiers(fabric.name, places, sus, pods, [c for c in cores if c.members])


def su_spines_of(sus: list[int], su_spines: dict[int, set[str]]) -> set[str]:
    """The spines above a set of SUs."""
    return set().union(*(su_spines[su] for su in sus)) if sus else set()
