"""`fabric drain` through the device transaction (fabric.push.drain), on the SONiC stand-in (tests/standins/sonic.py,
seeded with the msn2700's real running config; frrcfgd, as the rendered config_db.json runs it)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.standins.harness import StandinNet
from tests.test_push_faults import FAST, LEAVES, LIMIT, run, sonic2  # noqa: F401  (sonic2: the fixture)

pytestmark = [pytest.mark.root]


def test_a_drain_on_a_frrcfgd_switch_reads_its_running_config_once(
        sonic2: tuple[StandinNet, Path, Path]) -> None:  # noqa: F811
    """A drain asks the switch whether BGP is frrcfgd's (the drain is then BGP_GLOBALS graceful_shutdown) and diffs
    the drained intent against the running config: one read of it and one login serve both. The other reads are the
    apply's (the health before the change, the transaction's snapshot, the post-check's health), the other logins
    the counter samples before and after."""
    net, inv, state = sonic2
    d = net.devices[LEAVES[0]]
    assert run(net, "apply", str(inv), *LIMIT, "--yes", *FAST, state=state).returncode == 0
    reads, logins = d / "running-reads", d / "logins"
    before = (len(reads.read_text().splitlines()), len(logins.read_text().splitlines()))
    p = run(net, "drain", str(inv), LEAVES[0], "--yes", "--format", "json", "--interval", "0.2", *FAST, state=state)
    res = json.loads(p.stdout)
    assert p.returncode == 0 and res["status"] == "applied", p.stdout + p.stderr
    assert res["sections"] == {"BGP_GLOBALS|default": ["+ graceful_shutdown=true"]}
    after = (len(reads.read_text().splitlines()), len(logins.read_text().splitlines()))
    assert (after[0] - before[0], after[1] - before[1]) == (4, 3)  # reads of the running config, logins
