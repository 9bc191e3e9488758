"""The switch queue tree the frr target renders (from the QoS facts) and the queue counters read back: the
tc egress tree, `tc -s` output of the lab's ports, and the NVUE counter shapes of tests/fixtures/nvue/outputs."""

from __future__ import annotations

import json
from pathlib import Path

from fabric.design.derive import derive
from fabric.model.load import load
from fabric.nos.frr.render import ets_tree
from fabric.parsers import switch_counters
from fabric.parsers.iproute import queue_counters
from tests.support.paths import ROOT

NVUE = ROOT / "tests" / "fixtures" / "nvue" / "outputs"

# `tc -s class show dev swp1` of a lab leaf port (HTB bands, iproute2 6.1), captured in the lab
HTB_CLASSES = """class htb 1:1 parent 1:100 prio 0 rate 1Gbit ceil 1Gbit burst 65375b cburst 65375b
 Sent 0 bytes 0 pkt (dropped 0, overlimits 0 requeues 0)
 backlog 0b 0p requeues 0
class htb 1:100 root rate 1Gbit ceil 1Gbit burst 65375b cburst 65375b
 Sent 2232664644 bytes 248186 pkt (dropped 0, overlimits 0 requeues 0)
 backlog 0b 0p requeues 0
class htb 1:5 parent 1:100 prio 1 rate 500Mbit ceil 1Gbit burst 1500b cburst 1375b
 Sent 374975878 bytes 41607 pkt (dropped 3, overlimits 6690 requeues 0)
 backlog 0b 0p requeues 0
class htb 1:8 parent 1:100 prio 1 rate 500Mbit ceil 1Gbit burst 1500b cburst 1375b
 Sent 8071 bytes 86 pkt (dropped 0, overlimits 0 requeues 0)
 backlog 0b 0p requeues 0
"""


def _facts(tmp_path: Path, qos: dict):
    inv = tmp_path / "inv"
    import shutil

    import yaml

    shutil.copytree(ROOT / "inventories" / "example", inv)
    (inv / "qos.yaml").write_text(yaml.safe_dump({"qos": qos}))
    return derive(load(inv), target="frr").switches["leaf-su1-r1"].qos


def test_ets_tree_follows_the_facts(tmp_path: Path) -> None:
    """Band b = TC 7−b; strict bands first; quanta from the DWRR shares; red only on ECN bands, with the policy's
    thresholds (not re-decided)."""
    q = derive(load(ROOT / "inventories" / "example"), target="frr").switches["leaf-su1-r1"].qos
    tree = ets_tree(q)
    assert tree.strict == 2 and [b.tc for b in tree.bands] == [7, 6, 5, 4, 3, 2, 1, 0]
    assert tree.priomap[:8] == [7, 7, 7, 4, 7, 7, 1, 7] and tree.quanta == [1, 1, 5000, 1, 1, 5000]
    assert [b.tc for b in tree.bands if b.red] == [3, 0]
    assert "min 150000 max 1500000" in tree.bands[4].red and "probability 1 ecn" in tree.bands[4].red
    custom = ets_tree(_facts(tmp_path, {"preset": "nvidia-roce", "ets_dwrr": {3: 70, 0: 30},
                                        "ecn": {3: {"min_bytes": 200000, "max_bytes": 2000000, "probability": 20},
                                                0: {"enabled": False}}}))
    assert custom.quanta[-4] == 7000 and custom.quanta[-1] == 3000
    red = {b.tc: b.red for b in custom.bands if b.red}
    assert set(red) == {3} and "min 200000 max 2000000" in red[3] and "probability 0.2 ecn" in red[3]


def test_queue_counters_from_tc() -> None:
    """HTB/ets classes 1:N are band N−1 = TC 8−N; `marked` of a red qdisc on a band is its TC's CE marks
    (tc -s -j qdisc prints red's xstats beside the generic stats, iproute2 tc/q_red.c)."""
    qdiscs = [{"kind": "htb", "handle": "1:", "dev": "swp1", "root": True, "bytes": 1, "drops": 0},
              {"kind": "red", "handle": "15:", "dev": "swp1", "parent": "1:5", "bytes": 9, "packets": 1, "drops": 2,
               "marked": 4711, "early": 0, "pdrop": 2, "other": 0},
              {"kind": "red", "handle": "15:", "dev": "swp2", "parent": "1:5", "marked": 1}]
    cs = queue_counters(HTB_CLASSES, qdiscs, "swp1")
    assert cs["queue:3:tx_bytes"] == 374975878 and cs["queue:3:tx_packets"] == 41607
    assert cs["queue:3:ecn_marked"] == 4711 and cs["queue:3:drops"] == 3  # the class's drops hold red's
    assert cs["queue:0:tx_bytes"] == 8071 and cs["queue:7:tx_bytes"] == 0 and "queue:0:ecn_marked" not in cs


def test_queue_counters_from_real_ets_and_red_output() -> None:
    """`tc -s` of a leaf port under incast in the Debian 6.12 kernel (tests/fixtures/tc/SOURCE.md): ets classes
    1:1-1:8 with their `leaf` red qdiscs; the red qdiscs' `marked` are the CE marks of TC3 and TC0."""
    tc = ROOT / "tests" / "fixtures" / "tc"
    qdiscs = json.loads((tc / "ets-red-qdisc.json").read_text())
    cs = queue_counters((tc / "ets-red-class-swp1.txt").read_text(), qdiscs, "swp1")
    assert cs["queue:3:tx_bytes"] == 10819994 and cs["queue:3:tx_packets"] == 7149 and cs["queue:3:drops"] == 0
    assert cs["queue:3:ecn_marked"] == 9 and cs["queue:0:ecn_marked"] == 0 and cs["queue:0:tx_packets"] == 86
    assert {k for k in cs if k.endswith(":tx_bytes")} == {f"queue:{t}:tx_bytes" for t in range(8)}
    text = (tc / "ets-red-qdisc.txt").read_text()  # the text form says the same
    assert "qdisc red 15: dev swp1 parent 1:5" in text and " marked 9 early 0 pdrop 0 other 0" in text
    swp2 = queue_counters("", qdiscs, "swp2")  # the port toward a sender (its ACKs only): nothing marked
    assert swp2 == {"queue:3:ecn_marked": 0, "queue:3:drops": 0, "queue:0:ecn_marked": 0, "queue:0:drops": 0}


def test_nvue_counter_shapes() -> None:
    qos = json.loads((NVUE / "interface-counters-qos.json").read_text())
    wd = json.loads((NVUE / "interface-pfc-watchdog.json").read_text())
    cs = switch_counters.nvue("swp1", qos, wd)["swp1"]
    assert cs["queue:3:tx_bytes"] == 19638275530752 and cs["queue:0:drops"] == 2233466
    assert cs["pfc:3:rx_pause"] == 18231 and cs["pfc:3:tx_pause"] == 2210
    assert cs["port:ecn_marked"] == 771204 and cs["pfcwd:3:storm_detected"] == 1


def test_queue_backlog_and_the_backlogged_share() -> None:
    """`backlog …b` per class is what is queued at that moment; the ets share counts only the intervals whose both
    ends found both classes queued (a class alone takes the whole port, whatever its share), and is their median
    (one long interval of a stalled sampler, in which bulk drained unseen, does not move it)."""
    from fabric.accept.checks.congestion import backlogged_share
    from fabric.parsers.iproute import queue_backlog

    tc = ROOT / "tests" / "fixtures" / "tc"
    assert queue_backlog((tc / "ets-red-class-swp1.txt").read_text()) == {t: 0 for t in range(8)}
    text = ("class ets 1:5 root \n Sent 10 bytes 1 pkt (dropped 0, overlimits 0 requeues 0) \n"
            " backlog 4542b 3p requeues 0\n")
    assert queue_backlog(text) == {3: 4542}

    assert queue_backlog(text.replace("4542b", "173Kb")) == {3: 173 * 1024}

    def s(t: float, roce: int, bulk: int, qr: int, qb: int) -> tuple[float, dict[str, int], dict[int, int]]:
        return t, {"queue:3:tx_bytes": roce, "queue:0:tx_bytes": bulk}, {3: qr, 0: qb}

    # RoCE alone first (its flow started earlier), then both queued at 1:1, then bulk alone
    got = [s(0, 0, 0, 9000, 0), s(1, 900, 0, 9000, 9000), s(2, 1400, 500, 9000, 9000), s(3.5, 1900, 1000, 9000, 9000),
           s(4, 1900, 1900, 0, 9000)]
    assert backlogged_share(got, 3, 0) == (0.5, 2.5)
    assert backlogged_share(got[:2], 3, 0) == (None, 0)
    # the sampler stalled for 2.5 s with both classes queued at each end: bulk drained in between and RoCE took
    # 70 % of the interval's bytes (the CI run whose byte sum read 0.589 against a configured 0.5)
    stalled = [*got[:4], s(6, 4000, 1900, 9000, 9000), s(6.5, 4500, 2400, 9000, 9000)]
    assert backlogged_share(stalled, 3, 0) == (0.5, 5.5)
