"""A host's rails made with their (SU, rail) block, gateway and subnet text kept per (SU, rail), the PCI
address read once per netdev name and the constants of the loop read once equal the rails of the code as it read
before (tests/oracles/derive_host.py) on every example and fixture inventory (svi and p2p31, explicit hosts, VLANs, VFs,
PCI addresses, cables of links[]) and a generated fabric: the same intents, field for field."""

from __future__ import annotations

from pathlib import Path

import pytest

from fabric.design.derive import Deriver
from fabric.generate import GpuRailSpec
from fabric.generate import write as write_inventory
from fabric.model.load import load
from tests.oracles.derive_host import host_before
from tests.support.paths import ROOT

INVENTORIES = sorted([*ROOT.glob("inventories/*/fabric.yaml"), *ROOT.glob("tests/fixtures/inventories/*/fabric.yaml")])


# -- the tests ----------------------------------------------------------------------------------------------------
def _same(inv: Path) -> int:
    loaded = load(inv)
    new, old = Deriver(loaded), Deriver(loaded)  # each its own shapes validated once
    n = 0
    for i, h in enumerate(new.topo.hosts.values()):
        a, b = new.host(h, i), host_before(old, old.topo.hosts[h.name], i)
        assert a == b
        assert a.model_dump_json() == b.model_dump_json()
        assert a.model_fields_set == b.model_fields_set
        for r, s in zip(a.rails, b.rails, strict=True):
            assert list(r.__dict__) == list(s.__dict__) and r.model_fields_set == s.model_fields_set
        n += 1
    return n


@pytest.mark.parametrize("inv", [p.parent for p in INVENTORIES], ids=lambda p: p.name)
def test_host_equals_before(inv: Path) -> None:
    assert _same(inv) == len(Deriver(load(inv)).topo.hosts)


def test_host_equals_before_generated(tmp_path: Path) -> None:
    out = tmp_path / "g1k"
    write_inventory(GpuRailSpec(gpus=1024, hosts_per_su=16), out)
    assert _same(out) == 128


SETTINGS = """
    dcqcn: {enabled: true, priorities: [3], cc_params: {rp_ai_rate: 5}}
    gid: {policy: auto, index: 1}
    sysctls: {net.core.rmem_max: 268435456, "net.ipv4.conf.{if}.rp_filter": 2}
    nccl_env: {NCCL_IB_QPS_PER_CONNECTION: 4, NCCL_NET_GDR_LEVEL: PHB}
"""


def test_host_equals_before_with_settings(tmp_path: Path) -> None:
    """DCQCN, GID, sysctls and NCCL settings in hosts.defaults (one object each, shared by the generated hosts) and
    in explicit hosts (equal values in other objects, and other values): each host as the code before made it."""
    import shutil

    inv = tmp_path / "inv"
    shutil.copytree(ROOT / "inventories" / "example", inv)
    hosts = inv / "hosts.yaml"
    text = hosts.read_text().replace("  defaults:\n", "  defaults:" + SETTINGS, 1)
    names = [h for h in Deriver(load(ROOT / "inventories" / "example")).topo.hosts][:3]
    text += "  list:\n"
    text += f"    - name: {names[0]}" + SETTINGS.replace("\n    ", "\n      ")  # the defaults' values again
    text += f"    - name: {names[1]}\n      dcqcn: {{enabled: false}}\n      gid: {{index: 2}}\n"
    text += f"    - name: {names[2]}\n      nccl_env: {{NCCL_DEBUG: INFO}}\n      sysctls: {{net.core.wmem_max: 1}}\n"
    hosts.write_text(text)
    d = Deriver(load(inv))
    assert len(d.inv.hosts.entries) == 3 and d.inv.hosts.defaults.nccl_env
    assert _same(inv) == len(d.topo.hosts)
    intents = {n: d.host(d.topo.hosts[n], i) for i, n in enumerate(d.topo.hosts)}
    assert intents[names[1]].gid.index == 2 and not intents[names[1]].dcqcn.np_priorities
    assert intents[names[2]].nccl_env["NCCL_DEBUG"] == "INFO"


def test_p2p31_and_svi_both_seen() -> None:
    """The inventories above hold both addressing modes (the two branches of the address)."""
    modes = {load(p.parent).inv.addressing.mode for p in INVENTORIES}
    assert modes == {"svi", "p2p31"}
