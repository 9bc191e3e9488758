"""The replies of the stand-in GPU hosts' `fabric host plan|apply` (tests.standins.device.HOST_AGENT): the real
agent's own reports.

`record` runs the real agent (this tree's `fabric host plan|apply --intent F --format json`) for one host in a
network namespace of its own whose rail NICs are veth pairs, as tests/host/test_fleet.py's hosts are: a plan and
an apply of the fresh host, then a plan and an apply of the applied one. `replies` turns that host's reports into
another host's: each value in which the two intents differ (name, addresses, gateways...) replaced by the other
host's, as the agent would have written it (an address also without its prefix length). `seed_host` lays a host's
intent, replies and state out in its directory.
"""

from __future__ import annotations

import ipaddress
import json
import re
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import suppress
from pathlib import Path
from typing import Any

from tests.standins.common import ROOT

FABRIC = str(Path(__import__("sys").executable).parent / "fabric")
STATES = ("fresh", "applied")
Replies = dict[str, tuple[int, str]]  # "<mode>-<state>" → (exit code, JSON report)


def record(intent: str, name: str) -> Replies:
    """The real agent's reports for the host of `intent` (its JSON) and their exit codes (root: a namespace)."""
    from tests.support.host import namespace

    rails = tuple(r["ifname"] for r in json.loads(intent)["rails"])
    replies: Replies = {}
    with tempfile.TemporaryDirectory(prefix="hostagent-") as tmp, namespace(rails) as ns:
        path = Path(tmp) / f"{name}.json"
        path.write_text(intent)
        for state in STATES:
            for mode in ("plan", "apply"):
                run = subprocess.run(["ip", "netns", "exec", ns, FABRIC, "host", mode, "--intent", str(path),
                                      "--format", "json"], capture_output=True, text=True, cwd=ROOT)
                if run.returncode not in (0, 1):
                    raise RuntimeError(f"the agent's {mode} failed: {run.stderr}")
                replies[f"{mode}-{state}"] = (run.returncode, run.stdout)
    return replies


def _leaves(a: Any, b: Any) -> Iterator[tuple[str, str]]:
    """The string values of intents `a` and `b`, pairwise: those that differ, and the prefixes alike (kept whole)."""
    if isinstance(a, dict) and isinstance(b, dict):
        for k in a.keys() & b.keys():
            yield from _leaves(a[k], b[k])
    elif isinstance(a, list) and isinstance(b, list):
        for x, y in zip(a, b, strict=False):
            yield from _leaves(x, y)
    elif isinstance(a, str) and isinstance(b, str) and (a != b or "/" in a):
        yield a, b
        if a != b and "/" in a and "/" in b:  # an interface address: also as the agent prints the address alone
            with suppress(ValueError):
                ia, ib = ipaddress.ip_interface(a), ipaddress.ip_interface(b)
                if ia.ip != ia.network.network_address:
                    yield str(ia.ip), str(ib.ip)


def replies(template: str, recorded: Replies, intent: str) -> Replies:
    """`recorded` (the reports for the host of intent `template`) as the host of `intent` gets them."""
    pairs = dict(_leaves(json.loads(template), json.loads(intent)))
    if all(k == v for k, v in pairs.items()):
        return dict(recorded)
    # whole values only: 10.0.0.2 is not replaced inside 10.0.0.21 (the longest value first where two start alike)
    pattern = re.compile(r"(?<![\w.])(" + "|".join(re.escape(k) for k in sorted(pairs, key=len, reverse=True))
                         + r")(?![\w])(?!\.\d)")
    return {key: (rc, pattern.sub(lambda m: pairs[m[1]], text)) for key, (rc, text) in recorded.items()}


def seed_host(d: Path, intent: str, answers: Replies) -> None:
    """Host directory `d`: its intent, the agent's replies, the fresh state."""
    (d / "intent.json").write_text(intent)
    (d / "agent").mkdir(exist_ok=True)
    for key, (rc, text) in answers.items():
        (d / "agent" / f"{key}.json").write_text(text)
        (d / "agent" / f"{key}.rc").write_text(f"{rc}\n")
    (d / "state").write_text("fresh\n")


def fleet_intents(inv: Path) -> tuple[dict[str, str], dict[str, str]]:
    """Each host of inventory `inv`: its intent as `fabric hosts` ships it, and its management address."""
    from fabric.access import InventorySite
    from fabric.design.derive import derive
    from fabric.model.inventory import Access
    from fabric.model.load import load

    site = InventorySite(derive(load(inv)), Access(known_hosts=__file__))
    hosts = site.fabric.hosts
    return ({n: h.model_dump_json(indent=2) + "\n" for n, h in hosts.items()},
            {n: site.host_address(n) for n in hosts})


def seed_fleet(devices: dict[str, Path], intents: dict[str, str], recorded: tuple[str, Replies]) -> None:
    """Every host of `devices` with its intent and the replies `recorded` (a template host's intent and reports)
    become for it."""
    template, reports = recorded
    for name, d in devices.items():
        seed_host(d, intents[name], replies(template, reports, intents[name]))
