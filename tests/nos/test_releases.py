"""What `release:` changes, per NOS (docs/commands.md, "NOS releases"). NVUE 5.9 → 5.15: exactly the renames NVIDIA
lists in "New and Changed NVUE Commands" for 5.15 (tests/fixtures/nvue/paths.yaml, `cl515_changes`), each one
tested; SONiC 202405 → 202411 and FRR 8.4 → 10.2: nothing the tool renders differs, byte for byte (a difference
added later fails here until docs/commands.md and this file name it)."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

from fabric.nos import NOS
from tests import inproc
from tests.conftest import ROOT


def render(name: str, release: str, tmp: Path, *, bfd: bool = False) -> dict[str, str]:
    """inventories/<name> with every role declaring `release`, rendered (every file): {switch/file: text}."""
    inv = tmp / f"{name}-{release}"
    shutil.copytree(ROOT / "inventories" / name, inv)
    text = (inv / "fabric.yaml").read_text()
    (inv / "fabric.yaml").write_text(re.sub(r"(target: \w+)", rf'\1, release: "{release}"', text))
    if bfd:
        sw = inv / "switching.yaml"
        sw.write_text(sw.read_text().replace("  bgp:\n", "  bgp:\n    bfd: true\n"))
    out = tmp / f"out-{name}-{release}"
    p = inproc.fabric("render", str(inv), "-o", str(out), "--all", "--only", "spine1", "--only", "leaf-su1-r1")
    assert p.returncode == 0, p.stderr
    return {f"{f.parent.name}/{f.name}": f.read_text() for f in sorted((out / "switches").glob("*/*"))}


@pytest.mark.parametrize(("target", "inventory"), [("sonic", "sonic-example"), ("frr", "example")])
def test_releases_that_render_the_same_say_so(target: str, inventory: str, tmp_path: Path) -> None:
    old, new = NOS[target].releases
    a, b = render(inventory, old, tmp_path), render(inventory, new, tmp_path)
    assert a and a == b, (f"{target} {old} and {new} now render differently: name the difference in docs/commands.md "
                          "'NOS releases' and test it here")


# NVUE 5.9 line → its 5.15 form (nv-set.txt), one rename each, as NVIDIA's 5.15 "New and Changed NVUE Commands"
# and the 5.15 reference give them (tests/fixtures/nvue/paths.yaml: interface-ipv4-address, router-adaptive-
# routing, bgp-neighbor-bfd / router-bfd-profile).
RENAMES = [
    (r"^(nv set interface \S+) ip address ", r"\1 ipv4 address "),
    (r"^(nv set (?:interface \S+ )?router adaptive-routing) enable on$", r"\1 state enabled"),
]


def test_nvue_releases_differ_in_the_documented_renames_only(tmp_path: Path) -> None:
    old = render("h100-400g", "5.9", tmp_path, bfd=True)
    new = render("h100-400g", "5.15", tmp_path, bfd=True)
    assert old.keys() == new.keys()
    for name in (k for k in old if k.endswith("nv-set.txt")):
        a, b = old[name].splitlines(), new[name].splitlines()
        renamed = []
        for line in a:
            for pattern, repl in RENAMES:
                line = re.sub(pattern, repl, line)
            renamed.append(line)
        used = {p for p, _ in RENAMES if any(re.search(p, line) for line in a)}
        assert used == {p for p, _ in RENAMES}, (name, "each rename is exercised")
        # BFD: 5.9 `bfd enable on` per neighbour; 5.15 one `router bfd profile` (FRR bfdd's timers) the neighbours
        # name, with BFD turned on globally
        bfd59 = [x for x in renamed if " bfd " in x]
        bfd515 = [x for x in b if " bfd " in x]
        neighbours = [x.removesuffix(" bfd enable on") for x in bfd59]
        assert bfd59 and all(x.endswith(" bfd enable on") for x in bfd59), bfd59
        assert sorted(bfd515) == sorted([*(f"{n} bfd profile FABRIC" for n in neighbours),
                                         "nv set router bfd profile FABRIC detect-multiplier 3",
                                         "nv set router bfd profile FABRIC min-rx-interval 300",
                                         "nv set router bfd profile FABRIC min-tx-interval 300",
                                         "nv set router bfd state enabled"]), bfd515
        rest_old = [x for x in renamed if " bfd " not in x]
        rest_new = [x for x in b if " bfd " not in x]
        assert rest_old == rest_new, [x for x in rest_old if x not in rest_new][:5] + \
            [x for x in rest_new if x not in rest_old][:5]
