"""`fabric accept`'s HTML report as the command writes it, loaded in Debian's real headless chromium
(tests/support/browser.py): no console error, exception or failed load, and the results shown.

No lab: the nccl check runs through `--launcher k8s` against the kubectl stand-in (tests/standins/schedulers.py),
as tests/test_k8s.py runs it; the MPIJob fails, so the report has a failed check with what it expected."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from fabric.accept import k8s
from tests import inproc
from tests.conftest import ROOT, require
from tests.standins.schedulers import install
from tests.support.browser import chromium, load

VLAN16 = ROOT / "tests" / "fixtures" / "inventories" / "k8s-vlan16"
IMAGE = "registry.example/roce-tests:1"


@pytest.fixture(autouse=True)
def browser() -> None:
    require(chromium() is not None, "Debian's chromium (make deps)")


def test_accept_report_loads_clean_and_shows_the_results(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    install(tmp_path / "bin", tmp_path / "sched")
    monkeypatch.setenv("PATH", f"{tmp_path / 'bin'}:{os.environ['PATH']}")
    init = k8s.K8sRunner.__init__
    monkeypatch.setattr(k8s.K8sRunner, "__init__", lambda self, namespace, kubectl=None, poll_s=5.0:
                        init(self, namespace, kubectl, 0.0))  # the stand-in's MPIJob: no wait between polls
    (tmp_path / "launcher.log").write_text("roce-fabric: the image lacks: all_reduce_perf\n")
    monkeypatch.setenv("KUBECTL_LOGS", str(tmp_path / "launcher.log"))
    monkeypatch.setenv("KUBECTL_STATE", "Failed")
    monkeypatch.setenv("FABRIC_STATE", str(tmp_path / "state"))
    inv = tmp_path / "inv"
    shutil.copytree(VLAN16, inv)
    run = inproc.fabric("accept", str(inv), "--launcher", "k8s", "--image", IMAGE, "--tags", "nccl-allreduce",
                        "--format", "html", "-o", str(tmp_path / "report"), "--scheduler", "slurm")
    assert run.returncode == 1, run.stdout + run.stderr
    loaded = load(tmp_path / "report" / "accept.html")
    (tmp_path / "accept.png").write_bytes(loaded.png)
    assert loaded.errors == []
    assert loaded.text > 100 and loaded.height > 100 and loaded.svg == []
