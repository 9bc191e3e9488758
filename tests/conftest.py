"""Shared fixtures: inventories written to tmp_path, and a CI guard for prerequisites."""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.paths import INVENTORIES, TESTS
from tests.support.paths import ROOT as ROOT  # the tests import it from here too

EXAMPLE = INVENTORIES / "example"
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


@pytest.fixture(scope="session")
def accept_lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The accept modules' lab (tests/support/lab.py accept_lab), one bring-up in a test process for both."""
    from tests.support.lab import accept_lab

    yield from accept_lab(tmp_path_factory.mktemp("acclab"))


# Parallel runs (`pytest -n 8 --dist loadgroup`, what `make test` does): the tests of one xdist group run one
# after another on one worker. Every `lab` test is in group "lab" (the lab's namespaces, management bridge, FRR and
# state base are shared); every other `root` test in group "root" (namespaces, sshd and SSH stand-ins, each named
# per process, but their timers and daemons are kept off each other); every `k8s` test in group "k8s" (one
# control plane at a time: the MPI Operator binds :8080). A new root or lab test is grouped by its marker alone.
# The rest spread over the workers. Without xdist the groups are inert.
# (marker, group): the first marker that matches decides
SERIAL_GROUPS = (("lab", "lab"), ("root", "root"), ("k8s", "k8s"))
# Modules in a group of their own, on another worker than the rest of their marker's group, because they share
# nothing with it: the VM test builds its namespaces inside the guest; the stand-in modules name their namespace
# and sshd per process (tests/standins/harness.py), as accept/test_production.py and nos/test_telemetry.py,
# not marked root, always did beside them.
# The push and fetch modules' labs (tests/nos/frr/test_driver.py, tests/push/test_fetch.py) have a fabric name,
# namespace prefix and management subnet of their own, as every lab of the tests but the example's: their group runs
# beside the lab group, whose chain was the whole run's longest (450 s of 458).
# The real nodes' module (lab/test_nodes.py: its own lab instance and control plane, about 140 s) runs beside the
# lab group too, which would otherwise come near the 10 minutes.
# brownfield/test_standins.py stays in group root: as a group of its own (seven serial groups at once) the lab's
# accept measurements were starved on two cores in two of four runs.
OWN_GROUPS = {"lab/test_vm.py": "vm", "push/test_standins.py": "root-standins", "push/test_faults.py": "root-faults",
              "nos/frr/test_driver.py": "lab-push", "push/test_fetch.py": "lab-push",
              "standins/test_fleet.py": "root-fleet", "lab/test_nodes.py": "lab-nodes"}
# xdist hands out its work in collection order: these groups first, the longest first (measured: docs/development.md
# "The test suite"), each on a worker of its own from the start; then the longest CPU-bound modules, then the rest.
FIRST = ("k8s", "lab", "lab-push", "lab-nodes", "root", "root-standins", "root-faults", "root-fleet", "vm")
# Within the lab group, the modules that measure the lab's bandwidth (iperf3 through veths, which moves bytes with
# this machine's CPUs) run last: at a whole run's start the control plane's jobs and the VM's traffic (both at the
# normal priority) took enough CPU that 2 of 48 links of the healthy lab fell under the floor then used (0.5 Gb/s)
# twice in a row.
MEASURED_LAST = ("accept/test_accept_lab.py", "accept/checks/test_congestion_lab.py")
# (CPU seconds of each, FABRIC_TEST_CPU: docs/development.md "The test suite")
LONG_MODULES = ("accept/test_production.py", "fuzz/test_fuzz.py", "nos/test_retarget.py", "render/test_k8s.py",
                "cli/test_main.py", "project/test_install.py", "nos/sonic/test_yang.py", "nos/test_fidelity.py",
                "nos/eos/test_render.py")


def _module(item: pytest.Item) -> str:
    """The test's module, relative to tests/ (`push/test_faults.py`), as the tables above name it."""
    path = item.path.resolve()
    return path.relative_to(TESTS).as_posix() if path.is_relative_to(TESTS) else path.name


def _group(item: pytest.Item) -> str | None:
    if (mark := item.get_closest_marker("xdist_group")) is not None:  # a group the test names itself
        return mark.args[0] if mark.args else mark.kwargs.get("name", "default")
    group = next((g for marker, g in SERIAL_GROUPS if item.get_closest_marker(marker)), None)
    if group is not None:
        return OWN_GROUPS.get(_module(item), group)
    # a test that uses a module- or session-scoped fixture of its own module runs on the worker of the module's
    # other such tests, so that the fixture (a render of every inventory, a built wheel) is built once, not on
    # every worker
    module = item.nodeid.split("::")[0]
    info = getattr(item, "_fixtureinfo", None)
    shared = info is not None and any(d.baseid == module and d.scope != "function"
                                      for defs in info.name2fixturedefs.values() for d in defs)
    return f"module:{module.removeprefix('tests/')}" if shared else None


def _start_rank(item: pytest.Item, group: str | None) -> tuple[int, bool]:
    if group in FIRST:
        return FIRST.index(group), _module(item) in MEASURED_LAST
    long = LONG_MODULES.index(_module(item)) if _module(item) in LONG_MODULES else len(LONG_MODULES)
    return len(FIRST) + long, False


@pytest.hookimpl(tryfirst=True)  # before xdist reads the groups
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    groups = {}
    for item in items:
        group = groups[item] = _group(item)
        if group is not None and item.get_closest_marker("xdist_group") is None:
            item.add_marker(pytest.mark.xdist_group(group))
    if getattr(config.option, "loadgroup", False):  # on a worker: the start order above (stable: modules stay whole)
        items.sort(key=lambda item: _start_rank(item, groups[item]))


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> None:
    """Under xdist as root: the serial groups' tests (FIRST, and what they start) at the normal priority, every
    other test at nice 10, so the CPU-bound tests fill the cores around the lab, the stand-ins and the control
    plane, which mostly wait on timers and daemons and must not be kept waiting for a core when they wake, and the
    emulated VM, whose guest has a time limit."""
    if os.geteuid() == 0 and os.environ.get("PYTEST_XDIST_WORKER"):
        os.setpriority(os.PRIO_PROCESS, 0, 0 if _group(item) in FIRST else 10)


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
    an audit log; the run gets a lab instance of its own. Tests that need a particular directory still pass their
    own FABRIC_STATE/FABRIC_LAB_STATE."""
    config.pluginmanager.register(_XdistGroupIds(), "fabric-xdist-group-ids")
    if config.getoption("dist", None) == "loadgroup":  # the controller hands out groups in collection order
        config.option.loadscopereorder = False
    base = Path(tempfile.mkdtemp(prefix="fabric-test-state-"))
    config._fabric_state_base = base  # type: ignore[attr-defined]
    os.environ["FABRIC_STATE"] = str(base / "push")
    os.environ["FABRIC_LAB_STATE"] = str(base / "lab")
    # This run's lab instance (the xdist workers inherit the controller's): its labs take no name or management
    # subnet of another run's, nor of `make demo`'s (the default instance).
    os.environ.setdefault("FABRIC_LAB_INSTANCE", f"t{os.getpid()}")


def pytest_unconfigure(config: pytest.Config) -> None:
    base = getattr(config, "_fabric_state_base", None)
    if base is not None:
        shutil.rmtree(base, ignore_errors=True)


# Opt-in CPU profile of the suite: FABRIC_TEST_CPU=build/test-cpu writes, per test process, one JSON line
# per test (module, test, wall s, CPU s of the process and of its waited-for children, user + system) to
# <dir>/<worker>.jsonl; `python -m tests.cpu_profile build/test-cpu` sums them per module.
_CPU_DIR = os.path.abspath(os.environ["FABRIC_TEST_CPU"]) if os.environ.get("FABRIC_TEST_CPU") else None


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None):  # type: ignore[no-untyped-def]
    if not _CPU_DIR:
        yield
        return
    import json
    import resource
    import time

    def cpu() -> tuple[float, float]:
        own, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
        return own.ru_utime + own.ru_stime, kids.ru_utime + kids.ru_stime

    wall0, (own0, kids0) = time.monotonic(), cpu()
    yield
    own1, kids1 = cpu()
    out = Path(_CPU_DIR)
    out.mkdir(parents=True, exist_ok=True)
    line = {"module": item.nodeid.split("::")[0], "test": item.nodeid, "wall": time.monotonic() - wall0,
            "cpu": own1 - own0, "children": kids1 - kids0}
    with (out / f"{os.environ.get('PYTEST_XDIST_WORKER', 'main')}.jsonl").open("a") as f:
        f.write(json.dumps(line) + "\n")
