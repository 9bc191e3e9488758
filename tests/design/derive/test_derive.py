"""What derivation shares between hosts (sysctls, the NCCL environment, origins made once per fabric) gives every
host what deriving it alone gives, on every example and fixture inventory (hosts of different NICs, VLANs,
settings and cables)."""

from __future__ import annotations

from pathlib import Path

import pytest

from fabric.design.derive import Deriver
from fabric.model.load import load
from tests.support.paths import ROOT

INVENTORIES = sorted([*ROOT.glob("inventories/*/fabric.yaml"), *ROOT.glob("tests/fixtures/inventories/*/fabric.yaml")])


@pytest.mark.parametrize("inv", [p.parent for p in INVENTORIES], ids=lambda p: p.name)
def test_each_host_as_if_derived_alone(inv: Path) -> None:
    loaded = load(inv)
    together = Deriver(loaded).fabric()
    hosts = list(together.hosts)
    for i, name in enumerate(reversed(hosts)):  # another order: nothing of an earlier host leaks into a later one
        alone = Deriver(loaded).device(name)
        assert alone == together.hosts[name], name
        assert list(alone.origins) == list(together.hosts[name].origins)  # the same order too
        assert list(alone.sysctls) == list(together.hosts[name].sysctls)
        assert list(alone.nccl_env) == list(together.hosts[name].nccl_env)
        if i > 40:
            break
