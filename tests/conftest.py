"""Shared fixtures: inventories written to tmp_path, and a CI guard for prerequisites."""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = ROOT / "inventories" / "example"
IN_CI = os.environ.get("CI", "").lower() in ("1", "true", "yes")


def require(condition: bool, what: str) -> None:
    """Skip when a prerequisite is missing on a laptop; fail in CI, where it must exist."""
    if not condition:
        if IN_CI:
            pytest.fail(f"prerequisite missing in CI: {what}")
        pytest.skip(f"prerequisite missing: {what}")


@pytest.fixture
def example_copy(tmp_path: Path) -> Path:
    """A writable copy of inventories/example."""
    dst = tmp_path / "example"
    shutil.copytree(EXAMPLE, dst)
    return dst


# Parallel runs (`pytest -n 3 --dist loadgroup`, what `make test` does): the tests of one xdist group run one
# after another on one worker. Every `lab` test is in group "lab" (the lab's namespaces, management bridge, FRR and
# state base are shared); every other `root` test in group "root" (namespaces, sshd and SSH stand-ins, each named
# per process, but their timers and daemons are kept off each other); every `k8s` test in group "k8s" (one
# control plane at a time on two cores); the rest spread over the workers. A new
# root or lab test is grouped by its marker alone. Without xdist the groups are inert.
# (marker, group): the first marker that matches decides
SERIAL_GROUPS = (("lab", "lab"), ("root", "root"), ("k8s", "k8s"))


@pytest.hookimpl(tryfirst=True)  # before xdist reads the groups
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        group = next((g for marker, g in SERIAL_GROUPS if item.get_closest_marker(marker)), None)
        if group is not None:
            item.add_marker(pytest.mark.xdist_group(group))


class _XdistGroupIds:
    """xdist's loadgroup sends a test to its group's worker by a `@group` suffix on the test id, which xdist ≤ 3.8
    writes to `item._nodeid`; pytest ≥ 9.2 keeps the id in `item._id` (a NodeId) and ignores that. This writes it
    where this pytest reads it, when xdist's own write did not take (a no-op where it did)."""

    @pytest.hookimpl(trylast=True)  # after xdist's own hook
    def pytest_collection_modifyitems(self, config: pytest.Config, items: list[pytest.Item]) -> None:
        if not getattr(config.option, "loadgroup", False):
            return
        for item in items:
            mark = item.get_closest_marker("xdist_group")
            if mark is None or "@" in item.nodeid.rpartition("]")[2].rpartition("::")[2]:
                continue
            group = mark.args[0] if mark.args else mark.kwargs.get("name", "default")
            node_id = getattr(item, "_id", None)
            if node_id is not None and hasattr(type(node_id), "parse"):
                item._id = type(node_id).parse(f"{item.nodeid}@{group}")


def pytest_configure(config: pytest.Config) -> None:
    """Each test process (each xdist worker) gets its own push and lab state base, so no test reads or writes the
    operator's `~/.local/state/roce-fabric` or `/run/roce-fabric/lab`, and workers never share an apply lock or
    an audit log. Tests that need a particular directory still pass their own FABRIC_STATE/FABRIC_LAB_STATE."""
    config.pluginmanager.register(_XdistGroupIds(), "fabric-xdist-group-ids")
    base = Path(tempfile.mkdtemp(prefix="fabric-test-state-"))
    config._fabric_state_base = base  # type: ignore[attr-defined]
    os.environ["FABRIC_STATE"] = str(base / "push")
    os.environ["FABRIC_LAB_STATE"] = str(base / "lab")
    os.environ["ROCE_FABRIC_CACHE"] = str(base / "derive-cache")  # never the operator's ~/.cache (fabric.design.load)


def pytest_unconfigure(config: pytest.Config) -> None:
    base = getattr(config, "_fabric_state_base", None)
    if base is not None:
        shutil.rmtree(base, ignore_errors=True)
