"""`fabric export`: Slurm tree/block, Kubernetes labels, Volcano HyperNodes and the MPI hostfile.

Every format is checked against the cabling itself (the links of the derived intent), not against the exporter's own
grouping: each host appears exactly once per tier, a host's SU is the SU of the leaves its NICs are
cabled to, and a spine group holds exactly the SUs whose leaves reach its spines.
"""

from __future__ import annotations

import re
import shlex
import subprocess
from collections import defaultdict
from pathlib import Path

import pytest
import yaml

from fabric.design.derive import derive
from fabric.design.intent import FabricIntent
from fabric.errors import InputError
from fabric.export import export, tiers
from fabric.export.kubernetes import DNS_SUBDOMAIN, LABEL_VALUE
from fabric.export.slurm import block_sizes, hostlist
from fabric.generate import GpuRailSpec, write
from fabric.model.load import load
from tests import inproc
from tests.support.paths import ROOT

EXAMPLE = ROOT / "inventories" / "example"
SPECS = {
    "2su": GpuRailSpec(name="two-su", gpus=512, hosts_per_su=32),
    "8su": GpuRailSpec(name="eight-su", gpus=2048),
    "3tier": GpuRailSpec(name="three-tier", gpus=1024, hosts_per_su=16, pods=2, super_spines=2),
}


@pytest.fixture(scope="module", params=sorted(SPECS))
def generated(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, FabricIntent]:
    path = tmp_path_factory.mktemp(request.param) / "inv"
    write(SPECS[request.param], path)
    return path, derive(load(path))


def expand(expr: str) -> list[str]:
    """A Slurm hostlist expression (prefix[a-b,c] parts joined by commas) as names."""
    names: list[str] = []
    for m in re.finditer(r"([^,\[\]]+)(?:\[([^\]]+)\])?", expr):
        prefix, ranges = m.group(1), m.group(2)
        if ranges is None:
            names.append(prefix)
            continue
        for part in ranges.split(","):
            lo, _, hi = part.partition("-")
            for n in range(int(lo), int(hi or lo) + 1):
                names.append(f"{prefix}{n:0{len(lo)}d}")
    return names


def cabled_su(fabric: FabricIntent) -> dict[str, int]:
    """host → the SU of the leaves its NICs are cabled to, from the links alone."""
    out: dict[str, set[int]] = defaultdict(set)
    for ln in fabric.links:
        if ln.a in fabric.hosts and ln.b in fabric.switches:
            out[ln.a].add(fabric.switches[ln.b].su)  # type: ignore[arg-type]
    assert all(len(s) == 1 for s in out.values())
    return {h: s.pop() for h, s in out.items()}


def spines_of_su(fabric: FabricIntent) -> dict[int, set[str]]:
    out: dict[int, set[str]] = defaultdict(set)
    for ln in fabric.links:
        ends = {fabric.switches[ln.a].role if ln.a in fabric.switches else "host": ln.a,
                fabric.switches[ln.b].role if ln.b in fabric.switches else "host": ln.b}
        if set(ends) == {"leaf", "spine"}:
            out[fabric.switches[ends["leaf"]].su].add(ends["spine"])  # type: ignore[index]
    return out


def test_hostlist_compresses_with_padding_and_expands_back() -> None:
    names = ["gpu-su1-01", "gpu-su1-02", "gpu-su1-03", "gpu-su1-07", "spare", "n9", "n10", "n11"]
    expr = hostlist(names)
    assert expr == "gpu-su1-[01-03,07],n9,n[10-11],spare"
    assert sorted(expand(expr)) == sorted(names)
    assert hostlist(["su1", "su2", "su3"]) == "su[1-3]"
    assert hostlist(["x-7"]) == "x-7"


def test_slurm_tree_every_host_once_per_tier_and_tiers_match_cabling(generated: tuple[Path, FabricIntent]) -> None:
    _, fabric = generated
    text = export(fabric, "slurm")
    switches: dict[str, tuple[str, list[str]]] = {}
    for line in text.splitlines():
        if line.startswith("#"):
            continue
        m = re.fullmatch(r"SwitchName=(\S+) (Nodes|Switches)=(\S+)", line)
        assert m, line
        assert m.group(1) not in switches
        switches[m.group(1)] = (m.group(2), expand(m.group(3)))
    leafs = {n: members for n, (kind, members) in switches.items() if kind == "Nodes"}
    placed = [h for members in leafs.values() for h in members]
    assert sorted(placed) == sorted(fabric.hosts)  # every host exactly once at tier 1
    su = cabled_su(fabric)
    for name, members in leafs.items():
        assert {su[h] for h in members} == {int(name.removeprefix("su"))}
    # every switch except the root is the child of exactly one switch
    children = [c for kind, members in switches.values() if kind == "Switches" for c in members]
    assert sorted(children) == sorted(set(switches) - {n for n in switches if n not in children})
    roots = set(switches) - set(children)
    assert len(roots) == 1
    # spine groups: an SU's spines belong to its group only
    spines = spines_of_su(fabric)
    pods = {n: members for n, (kind, members) in switches.items() if n.startswith("pod")}
    pod_spines = {p: set().union(*(spines[int(s[2:])] for s in sus)) for p, sus in pods.items()}
    for a in pod_spines:
        for b in pod_spines:
            assert a == b or not pod_spines[a] & pod_spines[b]
    for p, sus in pods.items():  # generated pods: the spines' and leaves' pod number is the group's
        assert {fabric.switches[s].pod for s in pod_spines[p]} == {int(p[3:])}
        assert {fabric.switches[r.leaf].pod for h in fabric.hosts.values() if f"su{su[h.name]}" in sus
                for r in h.rails} == {int(p[3:])}
    has_super = any(s.role == "super-spine" for s in fabric.switches.values())
    assert roots == ({"core"} if has_super else {"pod1"})


def test_slurm_block_one_block_per_su_and_valid_sizes(generated: tuple[Path, FabricIntent]) -> None:
    _, fabric = generated
    lines = [ln for ln in export(fabric, "slurm-block").splitlines() if not ln.startswith("#")]
    blocks = [re.fullmatch(r"BlockName=(su\d+) Nodes=(\S+)", ln) for ln in lines[:-1]]
    assert all(blocks)
    placed = [h for m in blocks for h in expand(m.group(2))]  # type: ignore[union-attr]
    assert sorted(placed) == sorted(fabric.hosts)
    su = cabled_su(fabric)
    for m in blocks:
        assert {su[h] for h in expand(m.group(2))} == {int(m.group(1)[2:])}  # type: ignore[union-attr]
    sizes = [int(x) for x in lines[-1].removeprefix("BlockSizes=").split(",")]
    base = min(len(expand(m.group(2))) for m in blocks)  # type: ignore[union-attr]
    assert sizes[0] == base
    assert all(s % base == 0 and (s // base) & (s // base - 1) == 0 for s in sizes)  # powers of two × base
    assert sizes == sorted(set(sizes))


def test_block_sizes_stop_at_pod_boundaries() -> None:
    from fabric.export.tiers import Group, Tiers

    sus = [Group(f"su{i}", 1, [f"h{i}-{j}" for j in range(4)]) for i in range(1, 7)]
    pods = [Group("pod1", 2, ["su1", "su2", "su3"]), Group("pod2", 2, ["su4", "su5", "su6"])]
    t = Tiers("x", [], sus, pods, [Group("core", 3, ["pod1", "pod2"])])
    assert block_sizes(t) == [4]  # su[1-2], su[3-4] would straddle pods: only the base level


def test_slurm_yaml_has_tree_and_block(generated: tuple[Path, FabricIntent]) -> None:
    _, fabric = generated
    doc = yaml.safe_load(export(fabric, "slurm-yaml"))
    assert [t["topology"] for t in doc] == ["tree", "block"]
    assert doc[0]["cluster_default"] is True
    tree_nodes = [h for s in doc[0]["tree"]["switches"] if "nodes" in s for h in expand(s["nodes"])]
    block_nodes = [h for b in doc[1]["block"]["blocks"] for h in expand(b["nodes"])]
    assert sorted(tree_nodes) == sorted(block_nodes) == sorted(fabric.hosts)
    assert all(set(s) in ({"switch", "nodes"}, {"switch", "children"}) for s in doc[0]["tree"]["switches"])


def test_k8s_labels_follow_cabling_and_label_syntax(generated: tuple[Path, FabricIntent]) -> None:
    _, fabric = generated
    doc = yaml.safe_load(export(fabric, "k8s-labels"))
    nodes = doc["nodes"]
    assert sorted(nodes) == sorted(fabric.hosts)
    su = cabled_su(fabric)
    for host, labels in nodes.items():
        assert labels["fabric.roce.io/scalable-unit"] == f"su{su[host]}"
        for r in fabric.hosts[host].rails:
            assert labels[f"fabric.roce.io/rail-{r.rail}-leaf"] == r.leaf
        leaf_pods = {fabric.switches[r.leaf].pod for r in fabric.hosts[host].rails}
        assert labels["fabric.roce.io/spine-group"] == f"pod{leaf_pods.pop()}"
        for key, value in labels.items():
            prefix, name = key.split("/")
            assert DNS_SUBDOMAIN.match(prefix) and len(name) <= 63 and LABEL_VALUE.match(value)
            assert isinstance(value, str)


def test_label_prefix_is_configurable_and_checked() -> None:
    fabric = derive(load(EXAMPLE))
    doc = yaml.safe_load(export(fabric, "k8s-labels", "net.example.com"))
    assert "net.example.com/scalable-unit" in doc["nodes"]["gpu-su1-01"]
    with pytest.raises(InputError):
        export(fabric, "k8s-labels", "Not A Prefix")


def test_label_script_runs_kubectl_once_per_host(tmp_path: Path) -> None:
    fabric = derive(load(EXAMPLE))
    script = tmp_path / "label.sh"
    script.write_text(export(fabric, "k8s-label-script"))
    log = tmp_path / "calls"
    fake = tmp_path / "kubectl"
    fake.write_text(f'#!/bin/sh\nprintf "%s\\n" "$*" >> {shlex.quote(str(log))}\n')
    fake.chmod(0o755)
    subprocess.run(["sh", str(script)], check=True, env={"KUBECTL": str(fake), "PATH": "/usr/bin:/bin"})
    calls = log.read_text().splitlines()
    assert len(calls) == len(fabric.hosts)
    first = calls[0].split()
    assert first[:3] == ["label", "node", "gpu-su1-01"] and first[-1] == "--overwrite"
    assert "fabric.roce.io/rail-1-leaf=leaf-su1-r1" in first


def test_volcano_hypernodes_tiers(generated: tuple[Path, FabricIntent]) -> None:
    _, fabric = generated
    docs = [d for d in yaml.safe_load_all(export(fabric, "volcano")) if d]
    assert all(d["apiVersion"] == "topology.volcano.sh/v1alpha1" and d["kind"] == "HyperNode" for d in docs)
    by_name = {d["metadata"]["name"]: d for d in docs}
    assert len(by_name) == len(docs)
    for d in docs:
        assert DNS_SUBDOMAIN.match(d["metadata"]["name"])
        assert isinstance(d["spec"]["tier"], int) and d["spec"]["members"]
        for m in d["spec"]["members"]:
            assert set(m["selector"]) == {"exactMatch"}
            assert m["type"] == ("Node" if d["spec"]["tier"] == 1 else "HyperNode")
    tier1 = [d for d in docs if d["spec"]["tier"] == 1]
    nodes = [m["selector"]["exactMatch"]["name"] for d in tier1 for m in d["spec"]["members"]]
    assert sorted(nodes) == sorted(fabric.hosts)
    su = cabled_su(fabric)
    for d in tier1:
        assert len({su[m["selector"]["exactMatch"]["name"]] for m in d["spec"]["members"]}) == 1
    tiers_present = sorted({d["spec"]["tier"] for d in docs})
    for tier in tiers_present[1:]:  # every hypernode of the tier below is a member exactly once
        below = sorted(n for n, d in by_name.items() if d["spec"]["tier"] == tier - 1)
        members = sorted(m["selector"]["exactMatch"]["name"] for d in docs if d["spec"]["tier"] == tier
                         for m in d["spec"]["members"])
        assert members == below
    has_super = any(s.role == "super-spine" for s in fabric.switches.values())
    assert tiers_present == ([1, 2, 3] if has_super else [1, 2])


def test_hostfile_order_and_slots(generated: tuple[Path, FabricIntent]) -> None:
    _, fabric = generated
    rows = [ln.split() for ln in export(fabric, "hostfile").splitlines() if not ln.startswith("#")]
    assert sorted(r[0] for r in rows) == sorted(fabric.hosts)
    assert all(r[1] == f"slots={fabric.hosts[r[0]].gpus}" for r in rows)
    su = cabled_su(fabric)
    order = [su[r[0]] for r in rows]
    assert order == sorted(order)  # SU by SU: consecutive ranks stay on one rail-leaf group
    first_su = [r[0] for r in rows if su[r[0]] == order[0]]
    assert first_su == sorted(first_su, key=lambda n: int(n.rsplit("-", 1)[1]))


def test_miscabled_host_is_refused() -> None:
    fabric = derive(load(ROOT / "inventories" / "lab-2su8r"))
    host = next(h for h in fabric.hosts.values() if h.su == 1)
    other = next(s for s in fabric.switches.values() if s.role == "leaf" and s.su == 2)
    host.rails[0].leaf = other.name
    with pytest.raises(InputError, match="one scalable unit"):
        tiers(fabric)


def test_cli_writes_file_and_stdout(tmp_path: Path) -> None:
    out = tmp_path / "topology.conf"
    run = inproc.fabric("export", str(EXAMPLE), "--format", "slurm", "-o", str(out))
    assert run.returncode == 0, run.stderr
    assert "SwitchName=su1 Nodes=gpu-su1-[01-04]" in out.read_text()
    run = inproc.fabric("export", str(EXAMPLE), "--format", "hostfile")
    assert run.stdout.splitlines()[1:] == [f"gpu-su1-0{i} slots=4" for i in range(1, 5)]
    run = inproc.fabric("export", str(EXAMPLE), "--format", "nope")
    assert run.returncode == 2
