"""Remediation handed to the scheduler: Slurm drain/resume, Kubernetes cordon + NoSchedule taint, Volcano
HyperNode membership; printed by default, run with --remediate/--execute against stand-in `scontrol` and
`kubectl` (they record their argv; the syntax is scontrol(1)'s and kubectl's), audited."""

from __future__ import annotations

import datetime as dt
import json
import os
import sys
from pathlib import Path

import pytest

from fabric.cli import main
from fabric.design.derive import derive
from fabric.model.load import load
from fabric.remediate import Fault, actions, command_lines, merge
from tests.standins.schedulers import calls as sched_calls
from tests.standins.schedulers import install

EXAMPLE = Path(__file__).resolve().parent.parent / "inventories" / "example"
LOGS = Path(__file__).parent / "fixtures" / "logs"


def cli(capsys, monkeypatch, *args: object) -> tuple[int, str, str]:
    monkeypatch.setattr(sys, "argv", ["fabric", *map(str, args)])
    try:
        main()
        code = 0
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else int(exc.code is not None)
    got = capsys.readouterr()
    return code, got.out, got.err


@pytest.fixture
def standins(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """`scontrol` and `kubectl` on PATH (tests/standins/schedulers.py): they record every call in calls.jsonl,
    know the example's hosts and refuse what the real tools would read as many nodes or a flag; kubectl's cluster
    lacks gpu-su1-04 (NotFound). Returns the log."""
    hosts = list(derive(load(EXAMPLE)).hosts)
    install(tmp_path / "bin", tmp_path / "sched", {"scontrol": hosts, "kubectl": [h for h in hosts
                                                                                  if h != "gpu-su1-04"]})
    monkeypatch.setenv("PATH", f"{tmp_path / 'bin'}:{os.environ['PATH']}")
    monkeypatch.setenv("FABRIC_STATE", str(tmp_path / "state"))
    return tmp_path / "sched" / "calls.jsonl"


def calls(log: Path) -> list[str]:
    """The argv that reached the stand-ins, one `tool arg …` line per call (words joined by one space)."""
    return sched_calls(log.parent)


def test_commands_per_scheduler_and_their_undo() -> None:
    fabric = derive(load(EXAMPLE))
    faults = [Fault(host="gpu-su1-03", rail=2, nic="mlx5_1", reason="rail-bandwidth: rail 2 mlx5_1/rail2 failed",
                    token="rail2-rail-bandwidth")]
    slurm, k8s, volcano = actions(fabric, faults, ["slurm", "kubernetes", "volcano"])
    assert command_lines(slurm) == ["scontrol update NodeName=gpu-su1-03 State=DRAIN "
                                    "'Reason=roce-fabric: rail-bandwidth: rail 2 mlx5_1/rail2 failed'"]
    assert command_lines(slurm, revert=True) == ["scontrol update NodeName=gpu-su1-03 State=RESUME"]
    assert command_lines(k8s) == ["kubectl cordon -- gpu-su1-03", "kubectl taint nodes --overwrite -- gpu-su1-03 "
                                  "fabric.roce.io/fault=rail2-rail-bandwidth:NoSchedule"]
    assert command_lines(k8s, revert=True) == ["kubectl uncordon -- gpu-su1-03",
                                               "kubectl taint nodes -- gpu-su1-03 fabric.roce.io/fault:NoSchedule-"]
    patch = json.loads(volcano.apply[0][-3])
    assert volcano.apply[0][:5] == ["kubectl", "patch", "hypernode", "--type=json", "-p"]
    assert volcano.apply[0][-2:] == ["--", "example-su1"]
    assert patch == [{"op": "test", "path": "/spec/members/2/selector/exactMatch/name", "value": "gpu-su1-03"},
                     {"op": "remove", "path": "/spec/members/2"}]
    # the index is where `fabric export --format volcano` lists the node
    from fabric.export.kubernetes import hypernodes
    from fabric.export.tiers import tiers

    su1 = next(h for h in hypernodes(tiers(fabric)) if h["metadata"]["name"] == "example-su1")  # type: ignore[index]
    assert su1["spec"]["members"][2]["selector"]["exactMatch"]["name"] == "gpu-su1-03"  # type: ignore[index]


def test_faults_of_one_host_are_merged_and_taint_values_are_valid() -> None:
    merged = merge([Fault(host="h", reason="a", token="DG906"), Fault(host="h", reason="b", token="x y/z"),
                    Fault(host="g", reason="c", token="-c-")])
    assert [(f.host, f.reason, f.token) for f in merged] == [("h", "a; b", "DG906.x y/z"), ("g", "c", "-c-")]
    fabric = derive(load(EXAMPLE))
    (k8s,) = actions(fabric, [Fault(host="gpu-su1-01", reason="r", token="--bad token/" + "x" * 80)], ["kubernetes"])
    value = k8s.apply[1][-1].split("=", 1)[1].removesuffix(":NoSchedule")
    assert value[0].isalnum() and value[-1].isalnum() and len(value) <= 63 and " " not in value


def test_remediate_prints_by_default_and_executes_with_audit(standins: Path, capsys, monkeypatch) -> None:
    code, out, _ = cli(capsys, monkeypatch, "remediate", EXAMPLE, "--host", "gpu-su1-02", "--reason", "Xid 79")
    assert code == 0 and "(printed only: --execute runs them)" in out and not standins.exists()
    code, out, _ = cli(capsys, monkeypatch, "remediate", EXAMPLE, "--host", "gpu-su1-02", "--host", "gpu-su1-04",
                       "--reason", "Xid 79", "--execute")
    assert code == 1  # kubectl refused gpu-su1-04
    seen = calls(standins)
    assert "scontrol update NodeName=gpu-su1-02 State=DRAIN Reason=roce-fabric: Xid 79" in seen
    assert "kubectl taint nodes --overwrite -- gpu-su1-02 fabric.roce.io/fault=Xid-79:NoSchedule" in seen
    assert "kubectl cordon -- gpu-su1-04" in seen
    assert "FAILED: kubectl cordon -- gpu-su1-04: Error from server (NotFound)" in out
    audit = [json.loads(x) for x in (Path(os.environ["FABRIC_STATE"]) / "example" / "audit.jsonl").read_text()
             .splitlines()]
    assert {(a["device"], a["target"], a["action"], a["result"]) for a in audit} == {
        ("gpu-su1-02", "slurm", "remediate", "executed"), ("gpu-su1-02", "kubernetes", "remediate", "executed"),
        ("gpu-su1-04", "slurm", "remediate", "executed"), ("gpu-su1-04", "kubernetes", "remediate", "failed")}
    code, out, _ = cli(capsys, monkeypatch, "remediate", EXAMPLE, "--host", "gpu-su1-02", "--revert", "--execute",
                       "--scheduler", "kubernetes")
    assert code == 0 and calls(standins)[-2:] == [
        "kubectl uncordon -- gpu-su1-02", "kubectl taint nodes -- gpu-su1-02 fabric.roce.io/fault:NoSchedule-"]


def test_diagnose_hands_over_only_the_faulty_host(standins: Path, capsys, monkeypatch) -> None:
    """Every rank logs the watchdog timeout; only the straggler's host is drained."""
    code, out, _ = cli(capsys, monkeypatch, "diagnose", "--inventory", EXAMPLE, "--scheduler", "slurm",
                       LOGS / "job_straggler_tagged.log")
    assert code == 1
    tail = out[out.index("remediation for"):]
    assert tail.startswith("remediation for 1 host(s) (slurm):") and "gpu-su1-02 [slurm] DG906" in tail
    assert "gpu-su1-01" not in tail
    code, _, err = cli(capsys, monkeypatch, "diagnose", "--scheduler", "slurm", LOGS / "job_straggler_tagged.log")
    assert code == 2 and "expected --inventory as well" in err
    code, _, err = cli(capsys, monkeypatch, "remediate", EXAMPLE, "--host", "gpu-su1-02", "--scheduler", "pbs")
    assert code == 2 and "--scheduler: expected some of slurm, kubernetes, volcano, found 'pbs'" in err


HOSTILE = ["ALL", "all", "--all", "-l", "gpu-su1-0[1-4]", "gpu-su1-01,gpu-su1-03", "gpu-su9-99", "gpu-su1-*",
           "gpu-su1-01\x1b[2J"]


@pytest.mark.parametrize("name", HOSTILE)
def test_a_host_named_by_a_log_acts_only_on_that_inventory_host(name: str, standins: Path, tmp_path: Path, capsys,
                                                                 monkeypatch) -> None:
    """A user-written job log names the straggler host `name`: never an inventory host, so nothing reaches a
    scheduler, the host is reported as not remediated and the run exits non-zero."""
    log = tmp_path / "job.log"
    log.write_text((LOGS / "job_straggler_tagged.log").read_text().replace("gpu-su1-02", name))
    _, report, _ = cli(capsys, monkeypatch, "diagnose", "--format", "json", log)
    named = {s.get("host") for f in json.loads(report)["findings"] for s in f["subjects"]}
    code, out, _ = cli(capsys, monkeypatch, "diagnose", "--inventory", EXAMPLE, "--scheduler",
                       "slurm,kubernetes,volcano", "--remediate", log)
    assert code == 1
    seen = calls(standins) if standins.exists() else []
    assert seen == [], seen
    if name in named:  # the log's host field held the hostile name: it is refused by name
        assert f"{name}: not remediated: not an inventory host" in out


def test_screen_refuses_every_name_that_is_not_exactly_an_inventory_host() -> None:
    from fabric.remediate import screen

    fabric = derive(load(EXAMPLE))
    faults = [Fault(host=h, reason="r", token="t") for h in [*HOSTILE, "gpu-su1-02", " gpu-su1-02", "GPU-SU1-02",
                                                                 "gpu-su1-01 gpu-su1-03"]]
    ok, refused = screen(fabric, faults)
    assert [f.host for f in ok] == ["gpu-su1-02"]
    assert len(refused) == len(HOSTILE) + 3 and {r.why for r in refused} == {"not remediated: not an inventory host"}
    assert all(a.host == "gpu-su1-02" for a in actions(fabric, faults, ["slurm", "kubernetes", "volcano"]))


def test_max_hosts_caps_one_run(standins: Path, capsys, monkeypatch) -> None:
    hosts = [f"gpu-su1-0{i}" for i in (1, 2, 3, 4)]
    args = [a for h in hosts for a in ("--host", h)]
    code, out, _ = cli(capsys, monkeypatch, "remediate", EXAMPLE, *args, "--scheduler", "slurm", "--execute",
                       "--max-hosts", "3")
    assert code == 1 and "budget 3 host(s) per 24h (--max-hosts, --window): 0 used, 3 left" in out
    assert "gpu-su1-04: not remediated: 4 new host(s) exceed the 3 left in the budget (nothing was run)" in out
    assert not standins.exists()
    code, out, _ = cli(capsys, monkeypatch, "remediate", EXAMPLE, *args, "--scheduler", "slurm", "--execute")
    assert code == 0 and [c.split()[2] for c in calls(standins)] == [f"NodeName={h}" for h in hosts]


def _ledger() -> Path:
    return Path(os.environ["FABRIC_STATE"]) / "example" / "remediated.json"


def test_the_budget_holds_across_runs(standins: Path, capsys, monkeypatch) -> None:
    """Two runs of 2 with --max-hosts 2: the second is refused, with the first run named; a host the window
    already counts is acted on again without taking more; once the window has passed, the budget is back. The
    diagnose path (a real-looking kernel log) counts against the same budget."""
    def run(*hosts: str, more: tuple[str, ...] = ()) -> tuple[int, str]:
        code, out, _ = cli(capsys, monkeypatch, "remediate", EXAMPLE, *[a for h in hosts for a in ("--host", h)],
                           "--scheduler", "slurm", "--execute", "--max-hosts", "2", *more)
        return code, out

    code, out = run("gpu-su1-01", "gpu-su1-02")
    assert code == 0 and "budget 2 host(s) per 24h (--max-hosts, --window): 0 used, 2 left" in out
    code, out = run("gpu-su1-03", "gpu-su1-04")
    assert code == 1
    first = json.loads(_ledger().read_text())["hosts"][0]
    assert (f"budget 2 host(s) per 24h (--max-hosts, --window): 2 used (gpu-su1-01, gpu-su1-02 by {first['who']} "
            f"at {first['time'].replace('Z', '+00:00')}), 0 left") in out
    assert "  gpu-su1-03: not remediated: 2 new host(s) exceed the 0 left in the budget (nothing was run)" in out
    assert [c.split()[2] for c in calls(standins)] == ["NodeName=gpu-su1-01", "NodeName=gpu-su1-02"]
    code, out = run("gpu-su1-02")  # counted already: drained again, nothing more taken
    assert code == 0 and calls(standins)[-1].startswith("scontrol update NodeName=gpu-su1-02 State=DRAIN")
    log = standins.parent.parent / "flap.log"
    log.write_text((LOGS / "kernel_link_flap.log").read_text().replace("gpu-c12", "gpu-su1-04"))
    code, out, _ = cli(capsys, monkeypatch, "diagnose", "--inventory", EXAMPLE, "--scheduler", "slurm",
                       "--remediate", "--max-hosts", "2", log)
    assert code == 1 and "gpu-su1-04: not remediated: 1 new host(s) exceed the 0 left" in out
    assert len(calls(standins)) == 3
    ledger = json.loads(_ledger().read_text())  # a day later: the runs so far are out of the 24 h window
    for e in ledger["hosts"]:
        e["time"] = (dt.datetime.fromisoformat(e["time"]) - dt.timedelta(hours=25)).isoformat()
    month_ago = (dt.datetime.now(dt.UTC) - dt.timedelta(days=31)).isoformat()  # past the longest window: dropped
    ledger["hosts"].append({"host": "gpu-su1-04", "time": month_ago, "who": "ops@old"})
    _ledger().write_text(json.dumps(ledger))
    code, out = run("gpu-su1-03", more=("--window", "7d"))  # the window is the user's: a week still counts them
    assert code == 1 and "budget 2 host(s) per 7d (--max-hosts, --window): 2 used (gpu-su1-01, gpu-su1-02 by" in out
    code, out = run("gpu-su1-03")
    assert code == 0 and "budget 2 host(s) per 24h (--max-hosts, --window): 0 used, 2 left" in out
    assert calls(standins)[-1].startswith("scontrol update NodeName=gpu-su1-03 State=DRAIN")
    assert [e["host"] for e in json.loads(_ledger().read_text())["hosts"]] == [
        "gpu-su1-01", "gpu-su1-02", "gpu-su1-02", "gpu-su1-03"]


def test_printing_takes_nothing_from_the_budget_and_says_what_a_run_would_do(standins: Path, capsys,
                                                                              monkeypatch) -> None:
    args = ["remediate", EXAMPLE, "--host", "gpu-su1-01", "--host", "gpu-su1-02", "--scheduler", "slurm",
            "--max-hosts", "1"]
    code, out, _ = cli(capsys, monkeypatch, *args)
    assert code == 0 and not _ledger().exists() and not standins.exists()
    assert "gpu-su1-02: not remediated: 2 new host(s) exceed the 1 left in the budget (--remediate/--execute " \
           "would run nothing)" in out


def test_concurrent_runs_share_one_budget(standins: Path, tmp_path: Path) -> None:
    """Two `fabric remediate --execute` processes at once, 2 hosts each, 3 allowed: one runs, the other is refused
    (the ledger is read and taken under its lock before any command runs). The test holds the lock while both
    start, so they contend for it the moment it is released."""
    import fcntl
    import subprocess
    import time

    _ledger().parent.mkdir(parents=True)
    held = os.open(_ledger().parent / "remediated.lock", os.O_RDWR | os.O_CREAT, 0o600)
    fcntl.flock(held, fcntl.LOCK_EX)
    fabric = Path(sys.executable).with_name("fabric")
    procs = [subprocess.Popen([str(fabric), "remediate", str(EXAMPLE), "--host", a, "--host", b, "--scheduler",
                               "slurm", "--execute", "--max-hosts", "3"], stdout=subprocess.PIPE, text=True)
             for a, b in (("gpu-su1-01", "gpu-su1-02"), ("gpu-su1-03", "gpu-su1-04"))]
    time.sleep(3)  # both load the inventory and wait for the budget
    assert not standins.exists() and all(p.poll() is None for p in procs)  # nothing runs while it is held
    os.close(held)
    results = [(p.wait(timeout=120), p.stdout.read()) for p in procs]  # type: ignore[union-attr]
    assert sorted(code for code, _ in results) == [0, 1], results
    refused = next(out for code, out in results if code == 1)
    assert "2 used (" in refused and "exceed the 1 left in the budget (nothing was run)" in refused
    assert len(calls(standins)) == 2 and len(json.loads(_ledger().read_text())["hosts"]) == 2


@pytest.mark.parametrize(("text", "why"), [
    ("{", "(document): expected the remediation ledger"),
    ('{"hosts": [{"host": "gpu-su1-01", "time": "yesterday", "who": "a@b"}]}', "hosts.0.time: expected"),
])
def test_a_damaged_ledger_is_refused_and_kept(text: str, why: str, standins: Path, capsys, monkeypatch) -> None:
    _ledger().parent.mkdir(parents=True)
    _ledger().write_text(text)
    code, _, err = cli(capsys, monkeypatch, "remediate", EXAMPLE, "--host", "gpu-su1-01", "--scheduler", "slurm",
                       "--execute")
    assert code == 2 and f"{_ledger()}: {why}" in " ".join(err.split()) and "nothing was run" in err
    assert _ledger().read_text() == text and not standins.exists()


def test_a_planted_lock_link_is_refused(standins: Path, tmp_path: Path, capsys, monkeypatch) -> None:
    _ledger().parent.mkdir(parents=True)
    (_ledger().parent / "remediated.lock").symlink_to(tmp_path / "elsewhere")
    code, _, err = cli(capsys, monkeypatch, "remediate", EXAMPLE, "--host", "gpu-su1-01", "--scheduler", "slurm",
                       "--execute")
    assert code == 2 and "remediated.lock: expected a lock file of this user" in " ".join(err.split())
    assert not (tmp_path / "elsewhere").exists() and not standins.exists()


@pytest.mark.parametrize("window", ["0h", "24", "1w", "31d", "-1h", "24 hours"])
def test_window_is_checked(window: str, standins: Path, capsys, monkeypatch) -> None:
    code, _, err = cli(capsys, monkeypatch, "remediate", EXAMPLE, "--host", "gpu-su1-01", "--window", window)
    assert code == 2 and "--window: expected minutes, hours or days up to 30d (90m, 24h, 7d)" in err


def _fqdn_inventory(tmp_path: Path) -> Path:
    """The example with its hosts named by FQDN under prod.example (`topology.names.host`)."""
    import shutil

    inv = tmp_path / "fq"
    shutil.copytree(EXAMPLE, inv)
    text = (inv / "fabric.yaml").read_text()
    names = '  names:\n    host: "gpu-su{su}-{h:02d}.prod.example"\n'
    (inv / "fabric.yaml").write_text(text.replace("  uplinks_per_spine: 1\n", "  uplinks_per_spine: 1\n" + names))
    return inv


@pytest.mark.parametrize(("short_names", "logged"), [
    (True, "gpu-su1-01.evil.example"), (True, "gpu-su1-01.cluster.local"), (True, "gpu-su1-01."),
    (False, "gpu-su1-01.evil.example"), (False, "gpu-su1-01.prod.example.evil.example"),
    (False, "gpu-su1-01.PROD.example"), (False, "gpu-su1-01.other.prod.example"),
])
def test_a_log_host_of_another_domain_is_no_inventory_host(short_names: bool, logged: str, standins: Path,
                                                           tmp_path: Path, capsys, monkeypatch) -> None:
    """A kernel log of a flapping NIC on `logged`: only an exact inventory name, or an FQDN under the inventory's
    own domain (its FQDN host names'; none for short names), is a host. This one is neither: nothing is located
    there, nothing reaches a scheduler, the name is refused."""
    inv = EXAMPLE if short_names else _fqdn_inventory(tmp_path)
    log = tmp_path / "kern.log"
    log.write_text((LOGS / "kernel_link_flap.log").read_text().replace("gpu-c12", logged))
    code, report, _ = cli(capsys, monkeypatch, "diagnose", "--inventory", inv, "-f", "json", log)
    assert [loc for f in json.loads(report)["findings"] for loc in f["located"]] == []
    code, out, _ = cli(capsys, monkeypatch, "diagnose", "--inventory", inv, "--scheduler", "slurm,kubernetes",
                       "--remediate", log)
    assert code == 1 and f"  {logged}: not remediated: not an inventory host" in out
    assert not standins.exists() and "remediation for" not in out


@pytest.mark.parametrize("logged", ["gpu-su1-02.prod.example", "gpu-su1-02"])
def test_an_fqdn_under_the_inventory_domain_or_its_short_name_is_that_host(logged: str, standins: Path,
                                                                           tmp_path: Path, capsys,
                                                                           monkeypatch) -> None:
    inv = _fqdn_inventory(tmp_path)
    install(tmp_path / "bin", tmp_path / "sched", {"scontrol": ["gpu-su1-02"], "kubectl": ["gpu-su1-02.prod.example"]})
    log = tmp_path / "kern.log"
    log.write_text((LOGS / "kernel_link_flap.log").read_text().replace("gpu-c12", logged))
    code, out, _ = cli(capsys, monkeypatch, "diagnose", "--inventory", inv, "--scheduler", "slurm,kubernetes",
                       "--remediate", log)
    assert code == 1 and "not remediated" not in out  # exit 1: the error finding
    assert calls(standins) == [
        "scontrol update NodeName=gpu-su1-02 State=DRAIN Reason=roce-fabric: DG905 NIC link flapping",
        "kubectl cordon -- gpu-su1-02.prod.example",
        "kubectl taint nodes --overwrite -- gpu-su1-02.prod.example fabric.roce.io/fault=DG905:NoSchedule"]


def test_a_refused_name_beside_an_inventory_host_is_reported(standins: Path, tmp_path: Path, capsys,
                                                             monkeypatch) -> None:
    """One kernel log with the flaps of two hosts (one finding): the inventory host is drained, the other name is
    printed as not remediated and the run exits 1."""
    flap = (LOGS / "kernel_link_flap.log").read_text()
    log = tmp_path / "kern.log"
    log.write_text(flap.replace("gpu-c12", "gpu-su1-02") + flap.replace("gpu-c12", "gpu-su1-01.evil.example"))
    code, out, _ = cli(capsys, monkeypatch, "diagnose", "--inventory", EXAMPLE, "--scheduler", "slurm",
                       "--remediate", log)
    assert code == 1 and "  gpu-su1-01.evil.example: not remediated: not an inventory host" in out
    assert calls(standins) == ["scontrol update NodeName=gpu-su1-02 State=DRAIN Reason=roce-fabric: DG905 NIC link "
                               "flapping"]


@pytest.mark.parametrize(("tool", "argv"), [
    ("scontrol", ["update", "NodeName=ALL", "State=DRAIN", "Reason=x"]),
    ("scontrol", ["update", "NodeName=gpu-su1-0[1-2]", "State=DRAIN", "Reason=x"]),
    ("scontrol", ["update", "NodeName=gpu-su1-01,gpu-su1-02", "State=RESUME"]),
    ("scontrol", ["update", "NodeName=gpu-su9-01", "State=RESUME"]),
    ("kubectl", ["cordon", "--all"]),
    ("kubectl", ["cordon", "gpu-su1-01"]),
    ("kubectl", ["taint", "nodes", "--all", "--", "k=v:NoSchedule"]),
    ("kubectl", ["taint", "nodes", "-l", "x=y", "--", "gpu-su1-01", "k=v:NoSchedule"]),
])
def test_standins_refuse_what_the_real_tools_read_as_many_nodes(tool: str, argv: list[str], standins: Path) -> None:
    import subprocess

    p = subprocess.run([tool, *argv], capture_output=True, text=True)
    (call,) = [json.loads(x) for x in standins.read_text().splitlines()]
    assert p.returncode != 0 and call["refused"] and call["refused"] in p.stderr
