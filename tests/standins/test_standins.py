"""Self-tests of the stand-ins (tests/standins/): each reproduces the documented outputs and argument syntax it
claims in its docstring, checked here without sshd or root — so a test that passes against a stand-in passes
because the tool handled what the real device or program says.

- switch counters (telemetry.py): the NVUE answers have exactly the key structure of the documented outputs
  (tests/fixtures/nvue/outputs, SOURCE.md), and every NOS's answers read back through the product's own parsers
  (fabric.parsers.switch_counters) as the numbers the test wrote;
- SONiC (sonic.py): `config apply-patch` is all-or-nothing (Generic Config Updater), `checkpoint`/`rollback`
  restore, an unknown command is refused with click's usage error;
- kubectl/scontrol (schedulers.py): every command the tool emits (fabric.remediate, fabric.accept.k8s) is taken;
  a wrong flag, taint or state is refused with the tool's own message, and what the real tools would read as many
  nodes (a hostlist, `--all`, a selector, a name before `--`) or a node the cluster lacks is refused and logged;
- sbatch (slurm.py): a batch script without the `#SBATCH` lines the tool writes is refused.
- GPU host (host.py): perftest's report (read back by fabric.parsers.perftest as the speed set) and mlx5's
  `ethtool -S`; a perftest call without the lossless class or on a NIC the host lacks is refused;
- NVUE (nvue.py): `nv config diff` and `nv config revision -o json` in the documented shapes.
- EOS (eos.py): a session kept apart from the running-config, its diff, `% Invalid input` (the commit timer is
  checked through sshd in tests/push/test_standins.py).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

from fabric.design.derive import derive
from fabric.model.load import load
from fabric.parsers import switch_counters
from fabric.remediate import Fault, actions
from tests.conftest import EXAMPLE, ROOT
from tests.standins import sonic, telemetry
from tests.standins.schedulers import calls, install

NVUE_OUT = ROOT / "tests" / "fixtures" / "nvue" / "outputs"


def _paths(x: object, pre: str = "") -> set[str]:
    """Key paths of a JSON document, numbered keys (queues, priorities) as N."""
    out: set[str] = set()
    if isinstance(x, dict):
        for k, v in x.items():
            p = f"{pre}/{'N' if re.fullmatch(r'[0-9]+', k) else k}"
            out |= _paths(v, p) or {p}
    return out


@pytest.mark.parametrize(("fixture", "args"), [
    ("interface-counters-qos.json", ["interface", "swp1", "counters", "qos", "-o", "json"]),
    ("interface-pfc-watchdog.json", ["interface", "swp1", "qos", "pfc-watchdog", "-o", "json"]),
])
def test_nvue_counters_have_the_documented_shape(tmp_path: Path, fixture: str, args: list[str]) -> None:
    answer = telemetry.answer_nvue(args, tmp_path)
    assert answer is not None
    assert _paths(json.loads(answer)) == _paths(json.loads((NVUE_OUT / fixture).read_text()))


STATE = {"routes": {}, "ports": {"PORT": {"queues": {"3": {"bytes": 123456, "packets": 789, "drops": 5, "ecn": 42}},
                                          "pfc": {"3": {"rx": 1234, "tx": 7}}, "wd": {"3": {"stuck": 2,
                                                                                            "recovered": 1}}}}}


def _state(tmp_path: Path, port: str) -> Path:
    (tmp_path / "telemetry.json").write_text(json.dumps(STATE).replace("PORT", port))
    return tmp_path


def test_sonic_counters_read_back_through_the_product_parser(tmp_path: Path) -> None:
    d = _state(tmp_path, "Ethernet0")
    got = switch_counters.sonic(json.loads(telemetry.answer_sonic("queuestat -j", d) or ""),
                                json.loads(telemetry.answer_sonic("wredstat -j", d) or ""),
                                telemetry.answer_sonic("pfcstat -s all", d) or "",
                                telemetry.answer_sonic("show pfcwd stats", d) or "")["Ethernet0"]
    assert {k: got[k] for k in ("queue:3:tx_bytes", "queue:3:tx_packets", "queue:3:drops", "queue:3:ecn_marked",
                                "pfc:3:rx_pause", "pfc:3:tx_pause", "pfcwd:3:storm_detected",
                                "pfcwd:3:storm_restored")} == {
        "queue:3:tx_bytes": 123456, "queue:3:tx_packets": 789, "queue:3:drops": 5, "queue:3:ecn_marked": 42,
        "pfc:3:rx_pause": 1234, "pfc:3:tx_pause": 7, "pfcwd:3:storm_detected": 2, "pfcwd:3:storm_restored": 1}


def test_nvue_and_eos_counters_read_back_through_the_product_parsers(tmp_path: Path) -> None:
    d = _state(tmp_path, "swp1")
    qos = json.loads(telemetry.answer_nvue(["interface", "swp1", "counters", "qos", "-o", "json"], d) or "")
    wd = json.loads(telemetry.answer_nvue(["interface", "swp1", "qos", "pfc-watchdog", "-o", "json"], d) or "")
    got = switch_counters.nvue("swp1", qos, wd)["swp1"]
    assert (got["queue:3:tx_bytes"], got["queue:3:drops"], got["pfc:3:rx_pause"], got["pfc:3:tx_pause"],
            got["port:ecn_marked"], got["pfcwd:3:storm_detected"]) == (123456, 5, 1234, 7, 42, 2)
    d = _state(tmp_path, "Ethernet1/1")
    cmds = ("show priority-flow-control counters | json", "show qos interfaces ecn counters queue | json",
            "show interfaces counters queue drops | json", "show priority-flow-control counters watchdog | json")
    got = switch_counters.eos(*(json.loads(telemetry.answer_eos(c, d) or "") for c in cmds))["Ethernet1/1"]
    assert (got["queue:3:ecn_marked"], got["queue:3:drops"], got["pfc:all:rx_pause"], got["pfc:all:tx_pause"],
            got["pfcwd:3:storm_detected"], got["pfcwd:3:storm_restored"]) == (42, 5, 1234, 7, 2, 1)


def test_sonic_apply_patch_is_all_or_nothing_and_rollback_restores(tmp_path: Path, monkeypatch, capsys) -> None:
    monkeypatch.setenv("STANDIN_DEV", str(tmp_path))
    running = {"PORT": {"Ethernet0": {"mtu": "9100"}}, "DEVICE_METADATA": {"localhost": {"hostname": "leaf"}}}
    (tmp_path / "running.json").write_text(json.dumps(running))
    assert sonic.main(["config", "checkpoint", "cp1"]) == 0
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps([{"op": "replace", "path": "/PORT/Ethernet0/mtu", "value": "9216"},
                               {"op": "remove", "path": "/PORT/Ethernet8"}]))
    assert sonic.main(["config", "apply-patch", str(bad)]) == 1
    assert "Failed to apply patch" in capsys.readouterr().out
    assert json.loads((tmp_path / "running.json").read_text()) == running  # the first op was not applied
    good = tmp_path / "good.json"
    good.write_text(json.dumps([{"op": "replace", "path": "/PORT/Ethernet0/mtu", "value": "9216"}]))
    assert sonic.main(["config", "apply-patch", str(good)]) == 0
    assert json.loads((tmp_path / "running.json").read_text())["PORT"]["Ethernet0"]["mtu"] == "9216"
    assert sonic.main(["config", "rollback", "cp1"]) == 0
    assert json.loads((tmp_path / "running.json").read_text()) == running
    assert sonic.main(["config", "frobnicate"]) == 2 and "No such command" in capsys.readouterr().out


def test_the_sonic_sysctl_reads_as_procps_does(tmp_path: Path, monkeypatch, capsys) -> None:
    """sonic.py `sysctl` against this machine's procps `sysctl` on the same read-only calls: every key read, a key
    the kernel lacks an error and exit 1 (none with -e), `key = value` lines (values differ: the stand-in's kernel
    is SONiC's)."""
    monkeypatch.setenv("STANDIN_DEV", str(tmp_path))
    keys = ["net.ipv4.neigh.default.base_reachable_time_ms", "net.ipv4.no_such_key",
            "net/ipv6/neigh/default/gc_thresh1"]
    for flags in ([], ["-e"], ["-n"], ["-e", "-n"]):
        real = subprocess.run(["sysctl", *flags, *keys], capture_output=True, text=True, timeout=30)
        rc = sonic.main(["sysctl", *flags, *keys])
        out = capsys.readouterr()
        assert (rc, bool(out.err)) == (real.returncode, bool(real.stderr)), flags
        shape = [ln.partition(" = ")[0] if "-n" not in flags else "value" for ln in out.out.splitlines()]
        assert shape == [ln.partition(" = ")[0] if "-n" not in flags else "value" for ln in real.stdout.splitlines()]
    assert sonic.main(["sysctl", "-e", *keys]) == 0
    assert capsys.readouterr().out == ("net.ipv4.neigh.default.base_reachable_time_ms = 1800000\n"
                                       "net.ipv6.neigh.default.gc_thresh1 = 1024\n")


def _sched(tmp_path: Path, tool: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(tmp_path / "bin" / tool), *args], capture_output=True, text=True, timeout=30)


def test_the_scheduler_standins_take_every_command_the_tool_emits(tmp_path: Path) -> None:
    install(tmp_path / "bin", tmp_path / "sched")
    fabric = derive(load(EXAMPLE))
    faults = [Fault(host="gpu-su1-02", reason="Xid 79", token="Xid-79")]
    cmds = [c for a in actions(fabric, faults, ["slurm", "kubernetes", "volcano"]) for c in [*a.apply, *a.revert]]
    assert {c[0] for c in cmds} == {"scontrol", "kubectl"} and len(cmds) >= 6
    for argv in cmds:
        p = _sched(tmp_path, *argv)
        assert p.returncode == 0, (argv, p.stderr)


@pytest.mark.parametrize(("argv", "error"), [
    (["kubectl", "cordon", "gpu-su1-02", "--force"], "error: unknown flag: --force"),
    (["kubectl", "taint", "nodes", "--", "gpu-su1-02", "fabric.roce.io/fault=Xid 79:NoSchedule"], "invalid taint spec"),
    (["kubectl", "taint", "nodes", "--", "gpu-su1-02", "fabric.roce.io/fault=x:NoScheduleX"], "invalid taint effect"),
    (["kubectl", "taint", "nodes", "--", "gpu-su1-02", "fabric.roce.io/fault:NoSchedule-"], "not found"),
    (["kubectl", "patch", "hypernode", "--type=json", "-p", '{"op": "remove"}', "--", "su1"], "RFC 6902"),
    (["kubectl", "get", "mpijob", "x", "-o", "jsn"], "error:"),
    (["scontrol", "update", "NodeName=gpu-su1-02", "State=DRAIN"], "You must specify a reason"),
    (["scontrol", "update", "NodeName=gpu-su1-02", "State=SLEEP"], "Invalid node state"),
    (["scontrol", "update", "NodeName=gpu-su1-02", "Colour=red"], "not supported: Colour=red"),
    # what the real tools read as many nodes, or a node name read as a flag
    (["kubectl", "cordon", "--all"], "stand-in refuses --all: it selects many nodes"),
    (["kubectl", "taint", "nodes", "-l", "x=y", "--", "gpu-su1-01", "k=v:NoSchedule"], "stand-in refuses -l"),
    (["kubectl", "uncordon", "--selector=x=y"], "stand-in refuses --selector=x=y"),
    (["kubectl", "cordon", "gpu-su1-01"], "before `--`"),
    (["scontrol", "update", "NodeName=ALL", "State=RESUME"], "a hostlist"),
    (["scontrol", "update", "NodeName=gpu-su1-0[1-2]", "State=RESUME"], "a hostlist"),
    (["scontrol", "update", "NodeName=gpu-su1-01,gpu-su1-02", "State=RESUME"], "a hostlist"),
    (["scontrol", "-o", "update", "NodeName=gpu-su1-01", "State=RESUME"], "unrecognized option '-o'"),
])
def test_the_scheduler_standins_refuse_what_the_real_tools_refuse(tmp_path: Path, argv: list[str],
                                                                    error: str) -> None:
    install(tmp_path / "bin", tmp_path / "sched")
    p = _sched(tmp_path, *argv)
    assert p.returncode == 1 and error in p.stderr, p.stderr
    (call,) = [json.loads(x) for x in (tmp_path / "sched" / "calls.jsonl").read_text().splitlines()]
    assert call == {"tool": argv[0], "argv": argv[1:], "refused": p.stderr.strip()}


def test_the_scheduler_standins_know_only_their_clusters_nodes(tmp_path: Path) -> None:
    install(tmp_path / "bin", tmp_path / "sched", {"kubectl": ["gpu-su1-01"], "scontrol": ["gpu-su1-02"]})
    assert _sched(tmp_path, "kubectl", "cordon", "--", "gpu-su1-01").returncode == 0
    p = _sched(tmp_path, "kubectl", "cordon", "--", "gpu-su1-02")
    assert p.returncode == 1 and 'Error from server (NotFound): nodes "gpu-su1-02" not found' in p.stderr
    p = _sched(tmp_path, "scontrol", "update", "NodeName=gpu-su1-01", "State=RESUME")
    assert p.returncode == 1 and "slurm_update error: Invalid node name specified (gpu-su1-01)" in p.stderr
    assert _sched(tmp_path, "scontrol", "update", "NodeName=gpu-su1-02", "State=RESUME").returncode == 0
    assert calls(tmp_path / "sched", "kubectl") == ["cordon -- gpu-su1-01", "cordon -- gpu-su1-02"]
    assert len(calls(tmp_path / "sched")) == 4


def test_a_taint_is_set_once_unless_overwritten(tmp_path: Path) -> None:
    install(tmp_path / "bin", tmp_path / "sched")
    taint = ["kubectl", "taint", "nodes", "--", "gpu-su1-02", "fabric.roce.io/fault=a:NoSchedule"]
    assert _sched(tmp_path, *taint).returncode == 0
    assert "--overwrite is false" in _sched(tmp_path, *taint).stderr
    assert _sched(tmp_path, "kubectl", "taint", "nodes", "--overwrite", *taint[3:]).returncode == 0


def test_sbatch_refuses_a_script_without_the_placement_lines(tmp_path: Path) -> None:
    script = tmp_path / "job.sh"
    script.write_text("#!/bin/sh\n#SBATCH --nodelist=gpu-su1-01\nsrun --mpi=pmix true\n")
    p = subprocess.run([sys.executable, "-m", "tests.standins.slurm", "--wait", "--parsable", str(script)],
                       capture_output=True, text=True, timeout=30, cwd=ROOT,
                       env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert p.returncode == 1 and "lacks --nodelist/--ntasks-per-node/--output" in p.stderr


def test_a_sonic_flow_counts_until_the_switch_is_drained(tmp_path: Path) -> None:
    """RFC 8326: once graceful shutdown is set, the peers route around the switch and its queues stop counting."""
    import time

    frrcfgd = {"DEVICE_METADATA": {"localhost": {"frr_mgmt_framework_config": "true"}}}  # else TSA drains it
    (tmp_path / "running.json").write_text(json.dumps({**frrcfgd, "BGP_GLOBALS": {"default": {"local_asn": "65101"}}}))
    (tmp_path / "telemetry.json").write_text(json.dumps({"routes": {}, "ports": {"Ethernet0": {
        "flow": {"tc": 3, "bps": 8e6, "since": time.time() - 1}}}}))

    def sent() -> int:
        return int(json.loads(telemetry.answer_sonic("queuestat -j", tmp_path) or "")["Ethernet0"]["UC3"]["totalbytes"])

    first = sent()
    assert 0.9e6 <= first <= 2e6  # one second (and a little) at 1 MB/s
    time.sleep(0.2)
    assert sent() > first
    (tmp_path / "running.json").write_text(json.dumps({**frrcfgd, "BGP_GLOBALS": {"default": {
        "graceful_shutdown": "true"}}}))
    drained = sent()
    time.sleep(0.2)
    assert sent() == drained


def _host(tmp_path: Path, *argv: str, wait: bool = True) -> subprocess.CompletedProcess[str] | subprocess.Popen:
    env = {**os.environ, "STANDIN_DEV": str(tmp_path / "dev"), "STANDIN_ROOT": str(tmp_path / "root"),
           "PYTHONPATH": str(ROOT)}
    cmd = [sys.executable, "-m", "tests.standins.host", *argv]
    if not wait:
        return subprocess.Popen(cmd, env=env, cwd=ROOT, stdout=subprocess.DEVNULL)
    return subprocess.run(cmd, env=env, cwd=ROOT, capture_output=True, text=True, timeout=60)


def test_the_host_standin_prints_what_perftest_and_ethtool_print(tmp_path: Path) -> None:
    """host.py: a client run after its server prints perftest's report, which the product's parser reads as the
    speed the test set; `ethtool -S` is mlx5's list with the storm counter the test set; a perftest call without
    the lossless class, with -T but no -R, or on another host's NIC is refused as the docstring says."""
    from fabric.parsers.ethtool import parse_ethtool_stats
    from fabric.parsers.perftest import parse_perftest

    (tmp_path / "dev").mkdir()
    (tmp_path / "root").mkdir()
    (tmp_path / "dev" / "name").write_text("gpu-1\n")
    (tmp_path / "dev" / "nics.json").write_text('["mlx5_0"]')
    (tmp_path / "root" / "addresses.json").write_text('{"10.0.0.2": "gpu-1"}')
    (tmp_path / "root" / "speed.json").write_text('{"gpu-1:mlx5_0": 123.45}')
    (tmp_path / "root" / "storm.json").write_text('{"gpu-1": 7}')
    args = ["ib_write_bw", "-d", "mlx5_0", "-x", "3", "-p", "18515", "--tclass=106"]
    server = _host(tmp_path, *args, wait=False)
    try:
        deadline = time.monotonic() + 30
        while not (tmp_path / "root" / "rdv" / "ib_write_bw-gpu-1-18515").exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        client = _host(tmp_path, *args, "10.0.0.2")
    finally:
        assert server.wait(timeout=60) == 0
    assert client.returncode == 0, client.stderr
    res = parse_perftest(client.stdout)
    assert res.complete and res.device == "mlx5_0" and [r.bw_average for r in res.bw_rows] == [123.45]
    stats = parse_ethtool_stats(_host(tmp_path, "ethtool", "-S", "rail1").stdout)
    assert stats.counters["tx_pause_storm_error_events"] == 7 and stats.counters["rx_prio3_pause"] >= 0
    for argv, error in ((args[:-1], "no --tclass"), ([*args[:-1], "-T", "106"], "-T/--tos works only with -R"),
                        (["ib_write_bw", "-d", "mlx5_9", "-x", "3", "-p", "1", "--tclass=106", "10.0.0.2"],
                         "IB device mlx5_9 not found")):
        p = _host(tmp_path, *argv)
        assert p.returncode == 1 and error in p.stderr, p.stderr


def test_the_nvue_standin_answers_in_the_documented_shapes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    """nvue.py: `nv config diff` is a list of `- set:` / `- unset:` documents with valueless unset leaves, and
    `nv config revision -o json` the revision object, as tests/fixtures/nvue/outputs (SOURCE.md) documents them."""
    import yaml

    from tests.standins import nvue
    from tests.standins.harness import seed

    seed(tmp_path, "nvue", json.dumps({"interface": {"swp1": {"link": {"mtu": 1500}, "description": "x"}}}), {})
    monkeypatch.setenv("STANDIN_DEV", str(tmp_path))
    patch = tmp_path / "p.yaml"
    patch.write_text(yaml.safe_dump([{"set": {"interface": {"swp1": {"link": {"mtu": 9216}}}}},
                                     {"unset": {"interface": {"swp1": {"description": None}}}}]))
    assert nvue.main(["nv", "config", "patch", str(patch)]) == 0
    capsys.readouterr()
    assert nvue.main(["nv", "config", "diff"]) == 0
    diff = yaml.safe_load(capsys.readouterr().out)
    documented = yaml.safe_load((NVUE_OUT / "config-diff.yaml").read_text())
    assert {k for doc in diff for k in doc} <= {k for doc in documented for k in doc} == {"set", "unset"}
    assert all(len(doc) == 1 for doc in diff)
    assert {"set": {"interface": {"swp1": {"link": {"mtu": 9216}}}}} in diff
    assert {"unset": {"interface": {"swp1": {"description": None}}}} in diff
    assert nvue.main(["nv", "config", "revision", "-o", "json"]) == 0
    revs = json.loads(capsys.readouterr().out)
    documented = json.loads((NVUE_OUT / "config-revision.json").read_text())
    assert {k for r in revs.values() for k in r} == {k for r in documented.values() for k in r}
    assert {r["state"] for r in revs.values()} == {"applied_and_saved", "pending"}


def test_the_eos_standin_keeps_a_session_apart_and_refuses_what_eos_refuses(tmp_path: Path) -> None:
    """eos.py: a session is the running-config plus its lines (`show session-config diffs` is a unified diff of the
    two; a value the session took out and set again stays in its place), `abort` drops it, and `% Invalid input`
    answers an unknown command and an MTU above EOS's 9214, with the prompt of the running hostname (the EOS User
    Manual chapters its docstring names). (A new value without `no` first is added beside the old line, where EOS
    replaces it: the tool's sessions say `no <old line>` before each changed line, fabric/nos/eos/driver.py
    session_lines, so the stand-in does not model that.)"""
    running = (ROOT / "tests" / "fixtures" / "running" / "eos" / "leaf-su1-r1.cfg").read_text()
    (tmp_path / "running.cfg").write_text(running)
    lines = ["enable", "configure session s1", "interface Ethernet1/1", "   mtu 9300", "   no mtu 9214", "   mtu 9000",
             "frobnicate now", "show session-config diffs", "abort", "exit"]
    p = subprocess.run([sys.executable, "-m", "tests.standins.eos"], input="\n".join(lines) + "\n", cwd=ROOT,
                       env={**os.environ, "STANDIN_DEV": str(tmp_path), "PYTHONPATH": str(ROOT)},
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    assert "leaf-su1-r1(config-s-s1)#% Invalid input (at token 1: '9300')" in p.stdout
    assert "% Invalid input (at token 0: 'frobnicate')" in p.stdout
    diff = p.stdout[p.stdout.index("--- system:/running-config"):]
    assert "+++ session:/s1-session-config" in diff and "-   mtu 9214" in diff and "+   mtu 9000" in diff
    assert "9300" not in diff
    assert (tmp_path / "running.cfg").read_text() == running  # never committed: the running-config as it was


def test_the_nv_shim_gives_a_kept_counter_answer_only_while_telemetry_is_unchanged(tmp_path: Path) -> None:
    """device.NV_CACHED: the second per-port counter read is the first answer, byte for byte, without Python; a new
    telemetry.json is answered anew; a port name outside [A-Za-z0-9_.-] never reaches a file name."""
    from tests.standins.device import shims

    dev = tmp_path / "dev"
    dev.mkdir()
    shims(tmp_path / "bin", "nvue")
    first = (tmp_path / "bin" / "nv").stat()
    shims(tmp_path / "bin", "nvue")  # every session installs the shims: one already there is left alone
    assert (tmp_path / "bin" / "nv").stat().st_ino == first.st_ino and first.st_mode & 0o111
    env = {**os.environ, "STANDIN_DEV": str(dev)}

    def nv(*args: str) -> str:
        p = subprocess.run([str(tmp_path / "bin" / "nv"), "show", "interface", *args, "-o", "json"], env=env,
                           capture_output=True, text=True, timeout=60)
        assert p.returncode == 0, p.stderr
        return p.stdout

    def frames(text: str) -> int:
        return json.loads(text)["pfc-stats"]["3"]["rx-pause-frames"]

    assert frames(nv("swp1", "counters", "qos")) == 0 == frames(nv("swp1", "counters", "qos"))  # no telemetry.json
    time.sleep(0.01)
    (dev / "telemetry.json").write_text(json.dumps({"ports": {"swp1": {"pfc": {"3": {"rx": 5}}}}}))
    first = nv("swp1", "counters", "qos")
    kept = dev / "answers" / "swp1.counters.qos"
    assert kept.read_text() == first and frames(first) == 5
    kept.write_text(first.replace('"rx-pause-frames": 5', '"rx-pause-frames": 6'))  # given by the shim: no Python
    assert frames(nv("swp1", "counters", "qos")) == 6
    time.sleep(0.01)
    (dev / "telemetry.json").write_text(json.dumps({"ports": {"swp1": {"pfc": {"3": {"rx": 7}}}}}))
    assert frames(nv("swp1", "counters", "qos")) == 7
    assert json.loads(nv("swp1", "qos", "pfc-watchdog"))["state"] == "enabled"
    assert (dev / "answers" / "swp1.qos.pfc-watchdog").exists()
    nv("../swp1", "counters", "qos")
    assert sorted(p.name for p in (dev / "answers").iterdir()) == ["swp1.counters.qos", "swp1.qos.pfc-watchdog"]
