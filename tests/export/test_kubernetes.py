"""HyperNodes checked as a job's tier needs them (fabric.export.kubernetes.hypernode_problems), on what
`fabric export --format volcano` writes for a three-tier fabric, and on that output broken as a hand edit breaks it."""

from __future__ import annotations

import copy
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from fabric.export.kubernetes import hypernode_problems


@pytest.fixture(scope="module")
def exported(tmp_path_factory: pytest.TempPathFactory) -> list[dict]:
    """`fabric export --format volcano` of a generated fabric: 4 SUs of 2 hosts, 2 pods, super-spines."""
    from fabric.generate import GpuRailSpec, write

    inv = tmp_path_factory.mktemp("gen") / "t3"
    write(GpuRailSpec(name="t3", gpus=4 * 2 * 8, hosts_per_su=2, pods=2, super_spines=2), inv)
    fab = str(Path(sys.executable).parent / "fabric")
    out = subprocess.run([fab, "export", str(inv), "--format", "volcano"], capture_output=True, text=True,
                         timeout=120, check=True).stdout
    return [d for d in yaml.safe_load_all(out) if d]


def by_name(objs: list[dict], name: str) -> dict:
    return next(o for o in objs if o["metadata"]["name"] == name)


def test_the_tools_own_hypernodes_are_a_tree_for_every_tier(exported: list[dict]) -> None:
    tiers = sorted({o["spec"]["tier"] for o in exported})
    assert tiers == [1, 2, 3]
    for tier in tiers:
        assert hypernode_problems(exported, tier) == []


def test_a_node_in_two_hypernodes_of_one_tier(exported: list[dict]) -> None:
    objs = copy.deepcopy(exported)
    node = by_name(objs, "t3-su1")["spec"]["members"][0]
    by_name(objs, "t3-su2")["spec"]["members"].append(copy.deepcopy(node))
    name = node["selector"]["exactMatch"]["name"]
    assert hypernode_problems(objs, 1) == [
        f"node {name}: in 2 HyperNodes of tier 1 (t3-su1, t3-su2), expected one"]


def test_a_hypernode_tree_that_is_not_a_tree(exported: list[dict]) -> None:
    objs = copy.deepcopy(exported)
    pods = [o for o in objs if o["spec"]["tier"] == 2]
    assert len(pods) >= 2, [o["metadata"]["name"] for o in objs]
    stolen = pods[0]["spec"]["members"][0]
    pods[1]["spec"]["members"].append(copy.deepcopy(stolen))
    child = stolen["selector"]["exactMatch"]["name"]
    assert hypernode_problems(objs) == [f"HyperNode {child}: in 2 parents ({pods[0]['metadata']['name']}, "
                                        f"{pods[1]['metadata']['name']}), expected one (not a tree)"]
    looped = copy.deepcopy(exported)
    su = next(o for o in looped if o["spec"]["tier"] == 1)
    su["spec"]["members"].append({"type": "HyperNode", "selector": {"exactMatch": {"name": pods[0]["metadata"]
                                                                                   ["name"]}}})
    assert f"HyperNode {su['metadata']['name']} (tier 1): member HyperNode {pods[0]['metadata']['name']} expected " \
           "a lower tier, found tier 2 (not a tree)" in hypernode_problems(looped)


def test_a_tier_that_does_not_exist(exported: list[dict]) -> None:
    assert hypernode_problems(exported, 4) == [
        "networkTopology highestTierAllowed 4: no HyperNode has that tier (the cluster's tiers: 1, 2, 3; "
        "`fabric export --format volcano` writes them)"]
    assert hypernode_problems([], 1)[0].endswith("(the cluster's tiers: none; `fabric export --format volcano` "
                                                 "writes them)")
    objs = copy.deepcopy(exported)
    by_name(objs, "t3-core")["spec"]["tier"] = "three"
    assert "HyperNode t3-core: tier expected a whole number from 1, found 'three'" in hypernode_problems(objs)
