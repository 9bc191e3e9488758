"""One verdict per inventory: what `render` would refuse, `validate` refuses first, located, and `lint`, `render`
and `plan` refuse with the same words (each runs the design checks before anything else)."""

from __future__ import annotations

import ast
import re
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

from tests import inproc
from tests.conftest import ROOT

VLAN16 = ROOT / "tests" / "fixtures" / "inventories" / "k8s-vlan16"
PODS = "expected at least one rail pods can attach (a VF or the NIC in PF mode) on every node, found none on "
PF_TAGGED = ("vfs: 0 with a host VLAN (host-device would move the untagged PF into the pod while its leaf port is a "
             "tagged member; give the NIC VFs, which sriov-cni tags)")
P2P31_VFS = "VFs in p2p31 addressing (a /31 per host port leaves no address for a VF)"
SIXTEEN = "gpu-su1-01, gpu-su1-02, gpu-su1-03, gpu-su1-04, gpu-su1-05 and 11 more"


def edit(name: str, pattern: str, repl: str) -> Callable[[Path], None]:
    def apply(inv: Path) -> None:
        text = (inv / name).read_text()
        (inv / name).write_text(re.sub(pattern, repl, text))
    return apply


# What only `render` refused before (the Kubernetes device plugin config of a node with no rail pods can attach),
# each way an inventory gets there: file:line and the words every command says.
REFUSALS = {
    "pf-with-host-vlan": (edit("hosts.yaml", r"vfs: 16", "vfs: 0"),
                          f"hosts.yaml:8: hosts.defaults.nics: {PODS}{SIXTEEN}: {PF_TAGGED}"),
    "vfs-in-p2p31": (edit("addressing.yaml", r"mode: svi", "mode: p2p31"),
                     f"hosts.yaml:8: hosts.defaults.nics: {PODS}{SIXTEEN}: {P2P31_VFS}"),
    "one-hosts-own-nics": (edit("hosts.yaml", r"\n\nkubernetes:", "\n  list:\n    - name: gpu-su1-03\n      nics:\n"
                                "        - {rail: 1, rdma: mlx5_0, netdev: enp26s0np0, vlan: 1001, vfs: 0}\n\n"
                                "kubernetes:"),
                           f"hosts.yaml:19: hosts.list[0].nics: {PODS}gpu-su1-03: {PF_TAGGED}"),
}


@pytest.mark.parametrize("case", sorted(REFUSALS))
def test_what_render_refuses_validate_refuses_first_with_the_same_words(tmp_path: Path, case: str) -> None:
    change, said = REFUSALS[case]
    inv = tmp_path / "inv"
    shutil.copytree(VLAN16, inv)
    change(inv)
    out = tmp_path / "out"
    verdicts = {" ".join(c): inproc.fabric(c[0], inv, *c[1:]) for c in (
        ("validate",), ("lint",), ("render", "-o", str(out)), ("plan", "--offline"))}
    for command, p in verdicts.items():
        assert (p.returncode, p.stderr) == (2, f"error: {inv}/{said}\n"), (command, p.returncode, p.stderr)
    assert not out.exists()  # nothing written, switches included


def test_rendering_refuses_nothing_of_its_own() -> None:
    """Render code raises no InputError or UsageError: a refusal there would be a verdict validate does not give
    (the design checks, fabric/design/checks.py, are where one goes)."""
    files = [*(ROOT / "fabric" / "render").rglob("*.py"), *(ROOT / "fabric" / "nos").glob("*/render.py")]
    raised = [f"{f.relative_to(ROOT)}:{node.lineno}" for f in files for node in ast.walk(ast.parse(f.read_text()))
              if isinstance(node, ast.Raise) and node.exc is not None
              and any(isinstance(n, ast.Name) and n.id in ("InputError", "UsageError") for n in ast.walk(node.exc))]
    assert len(files) > 5 and not raised, raised
