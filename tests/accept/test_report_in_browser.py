"""`fabric accept`'s HTML report as the command writes it, loaded in Debian's real headless chromium
(tests/support/browser.py): no console error, exception or failed load, and the results shown.

No lab: the checks run through `--launcher k8s` against the kubectl stand-in (tests/standins/schedulers.py), as
tests/render/test_k8s.py runs them: pod-rail-bandwidth on rail 1 reads a real ib_write_bw output (a 100G run, below the
400G fabric's threshold: a red heatmap), the MPIJob of nccl-allreduce fails."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest
import yaml

from fabric.accept import k8s
from tests import inproc
from tests.conftest import ROOT, require
from tests.standins.schedulers import install
from tests.support.browser import chromium, load

VLAN16 = ROOT / "tests" / "fixtures" / "inventories" / "k8s-vlan16"
IMAGE = "registry.example/roce-tests:1"
SAMPLES = ROOT / "tests" / "fixtures" / "samples"


@pytest.fixture(autouse=True)
def browser() -> None:
    require(chromium() is not None, "Debian's chromium (make deps)")


def _launcher_log(path: Path) -> Path:
    """The pod-to-pod job's log as its launcher prints it: each pair's ib_write_bw output between its markers."""
    from types import SimpleNamespace

    from fabric.accept.checks.bandwidth import RailBandwidth
    from fabric.accept.checks.base import Context
    from fabric.accept.checks.pods import PodRailBandwidth, PodTrafficInput
    from fabric.design.derive import derive
    from fabric.model.load import load

    fabric = derive(load(VLAN16))
    check = PodRailBandwidth(PodTrafficInput(image=IMAGE, quick=True, rails=[1]))
    ctx = Context(site=SimpleNamespace(fabric=fabric), report_dir=path.parent)  # type: ignore[arg-type]
    job = k8s.perftest_pod_job(fabric, check.id, k8s.pod_pairs(fabric, RailBandwidth(check.inputs).pairs(ctx, True),
                                                                "p"), tool="ib_write_bw", image=IMAGE)
    sample = (SAMPLES / "ib_write_bw_client_bidir_duration_newheader.txt").read_text()
    path.write_text("".join(f"{k8s.MARK} begin {p.tag}\n{sample}{k8s.MARK} end {p.tag} rc=0\n"
                            for rd in job.pairs for p in rd))
    return path


def test_accept_report_loads_clean_and_shows_the_results(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    install(tmp_path / "bin", tmp_path / "sched")
    monkeypatch.setenv("PATH", f"{tmp_path / 'bin'}:{os.environ['PATH']}")
    init = k8s.K8sRunner.__init__
    monkeypatch.setattr(k8s.K8sRunner, "__init__", lambda self, namespace, kubectl=None, poll_s=5.0:
                        init(self, namespace, kubectl, 0.0))  # the stand-in's MPIJob: no wait between polls
    monkeypatch.setenv("KUBECTL_LOGS", str(_launcher_log(tmp_path / "launcher.log")))
    monkeypatch.setenv("KUBECTL_STATE", "Failed")
    monkeypatch.setenv("FABRIC_STATE", str(tmp_path / "state"))
    inv = tmp_path / "inv"
    shutil.copytree(VLAN16, inv)
    catalog = tmp_path / "catalog.yaml"
    catalog.write_text(yaml.safe_dump({"checks": [
        {"check": "pod-rail-bandwidth", "input": {"image": IMAGE, "quick": True, "rails": [1]}},
        {"check": "nccl-allreduce", "input": {"launcher": "k8s", "image": IMAGE, "pairs": "none", "cluster": True}}]}))
    run = inproc.fabric("accept", str(inv), "--catalog", str(catalog), "--format", "html,json", "-o",
                        str(tmp_path / "report"), "--scheduler", "slurm")
    assert run.returncode == 1, run.stdout + run.stderr
    results = json.loads((tmp_path / "report" / "accept.json").read_text())["results"]
    assert [(r["check"], r["status"]) for r in results] == [("pod-rail-bandwidth", "fail"), ("nccl-allreduce", "fail")]
    loaded = load(tmp_path / "report" / "accept.html")
    (tmp_path / "accept.png").write_bytes(loaded.png)
    assert loaded.errors == []
    assert loaded.text > 300 and loaded.height > 300 and loaded.svg == []
    assert loaded.width <= 1280, loaded.width  # the evidence lines wrap in the window
