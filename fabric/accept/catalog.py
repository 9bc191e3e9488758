"""The check catalog: YAML that selects and parameterizes checks, and the default derived from the inventory.

Format::

    checks:
      - check: rail-bandwidth          # a key of fabric.accept.checks.CHECKS
        name: rail-bw-large             # optional unique name (default: the check name, -2, -3 … if repeated)
        tags: [traffic, bandwidth]      # optional, replaces the check's default tags
        input: {tool: ib_write_bw, fraction_of_link: 0.9, seconds: 5}   # the check's pydantic Input

`fabric accept INV --dump-catalog` prints the default catalog for an inventory as a starting point.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from fabric.accept.checks import CHECKS, Check
from fabric.design.intent import FabricIntent
from fabric.errors import InputError, Problem


class Entry(BaseModel):
    model_config = ConfigDict(extra="forbid")

    check: str
    name: str | None = None
    tags: list[str] | None = None
    input: dict[str, Any] = Field(default_factory=dict)


class Catalog(BaseModel):
    model_config = ConfigDict(extra="forbid")

    checks: list[Entry]


def _problem(file: str, path: str, expected: str, found: str) -> Problem:
    return Problem(file=file, line=None, path=path, expected=expected, found=found)


def build(catalog: Catalog, file: str = "catalog") -> list[Check]:
    """Instantiate every entry; all problems are reported at once (InputError, exit 2)."""
    problems: list[Problem] = []
    checks: list[Check] = []
    seen: dict[str, int] = {}
    for i, e in enumerate(catalog.checks):
        cls = CHECKS.get(e.check)
        if cls is None:
            problems.append(_problem(file, f"checks[{i}].check", f"one of {', '.join(CHECKS)}", repr(e.check)))
            continue
        try:
            inputs = cls.Input.model_validate(e.input)
        except ValidationError as exc:
            for err in exc.errors():
                loc = ".".join(str(x) for x in err["loc"])
                problems.append(_problem(file, f"checks[{i}].input.{loc}", err["msg"], repr(err.get("input"))))
            continue
        name = e.name or e.check
        seen[name] = seen.get(name, 0) + 1
        if seen[name] > 1:
            if e.name:
                problems.append(_problem(file, f"checks[{i}].name", "a name unique in the catalog", repr(e.name)))
                continue
            name = f"{name}-{seen[name]}"
        checks.append(cls(inputs, name=name, tags=e.tags))
    if problems:
        raise InputError(problems)
    return checks


def load_catalog(path: Path) -> list[Check]:
    file = str(path)
    try:
        doc = yaml.safe_load(path.read_text())
    except OSError as exc:
        raise InputError(_problem(file, "", "a readable catalog file", exc.strerror or str(exc))) from None
    except yaml.YAMLError as exc:
        raise InputError(_problem(file, "", "valid YAML", str(exc).splitlines()[0])) from None
    try:
        catalog = Catalog.model_validate(doc)
    except ValidationError as exc:
        raise InputError([_problem(file, ".".join(str(x) for x in e["loc"]), e["msg"], repr(e.get("input")))
                           for e in exc.errors()]) from None
    return build(catalog, file)


def default_catalog(fabric: FabricIntent, *, lab: bool = False) -> Catalog:
    """Every check, parameterized from the inventory. RDMA tools on real hosts; in the lab iperf3 and
    ping stand in (veths have no RDMA) with absolute thresholds for the veth rate."""
    sus = len({h.su for h in fabric.hosts.values()})
    if lab:
        bw = {"tool": "iperf3", "threshold_gbps": 0.5, "seconds": 1, "timeout_s": 15, "parallel": 8}
        lat = {"tool": "ping", "max_p99_us": 5000.0, "timeout_s": 15, "parallel": 8}
    else:
        bw = {"tool": "ib_write_bw", "fraction_of_link": 0.9, "seconds": 5}
        lat = {"tool": "ib_write_lat", "max_p99_us": 5.0}
    entries = [Entry(check="host-config"), Entry(check="bgp"), Entry(check="rail-bandwidth", input=bw)]
    if sus > 1:
        entries.append(Entry(check="cross-su-bandwidth", input=bw))
    entries += [Entry(check="rail-latency", input=lat),
                Entry(check="nccl-allreduce", input={"launcher": "mpirun", "pairs": "quick", "cluster": True}),
                Entry(check="lossless-counters"), Entry(check="pfc-watchdog")]
    return Catalog(checks=entries)


def dump(catalog: Catalog) -> str:
    return yaml.safe_dump(catalog.model_dump(exclude_none=True, exclude_defaults=False), sort_keys=False)


def select(checks: list[Check], tags: list[str] | None) -> list[Check]:
    """Checks having any of `tags` (or whose name is one of them); all when no tags are given."""
    if not tags:
        return checks
    want = set(tags)
    return [c for c in checks if want & set(c.tag_list) or c.id in want or c.name in want]
