"""Acceptance without the lab: scheduler, fault location, thresholds on sample outputs, catalog,
launchers (render-only, by content), counter rules, reports."""

from __future__ import annotations

import json
import math
import os
import shlex
import subprocess
import sys
from itertools import combinations
from pathlib import Path
from xml.etree import ElementTree as ET

import pytest
import yaml

from fabric.accept import catalog as cat
from fabric.accept import launchers, report
from fabric.accept.checks import CHECKS, NcclInput, expected_busbw, judge_nccl, lossless_findings
from fabric.accept.counters import delta, parse_host_dump, rates
from fabric.accept.locate import locate, simulated_probe
from fabric.accept.results import AcceptReport, CheckResult, Measurement
from fabric.accept.schedule import circle_rounds, cross_rounds, quick_rounds, schedule
from fabric.accept.tools import lat_p99, ping_p99_us
from fabric.design.derive import derive
from fabric.errors import InputError
from fabric.model.load import load
from fabric.parsers import parse_perftest
from tests import inproc
from tests.support.paths import FIXTURES, ROOT

SAMPLES = FIXTURES / "samples"  # copies of shared/samples


@pytest.fixture(scope="module")
def example():
    return derive(load(ROOT / "inventories" / "example"))


@pytest.fixture(scope="module")
def two_su():
    return derive(load(ROOT / "inventories" / "lab-2su8r"))


def sample(name: str) -> str:
    path = SAMPLES / name
    if not path.exists():
        from tests.conftest import require

        require(False, f"sample {path}")
    return path.read_text()


# -- scheduler -----------------------------------------------------------------------------------

@pytest.mark.parametrize("n", [2, 3, 4, 5, 8, 9, 16, 33])
def test_circle_every_pair_once_no_host_twice_per_round(n: int) -> None:
    hosts = [f"h{i:02d}" for i in range(n)]
    rounds = list(circle_rounds(hosts))
    assert len(rounds) == (n - 1 if n % 2 == 0 else n)
    seen = [frozenset(p) for rd in rounds for p in rd]
    assert len(seen) == len(set(seen)) == n * (n - 1) // 2
    assert set(seen) == {frozenset(p) for p in combinations(hosts, 2)}
    for rd in rounds:
        used = [h for p in rd for h in p]
        assert len(used) == len(set(used))


@pytest.mark.parametrize("n", [2, 4, 7, 10])
def test_quick_pairs_every_host_once(n: int) -> None:
    hosts = [f"h{i}" for i in range(n)]
    rounds = quick_rounds(hosts)
    covered = {h for rd in rounds for p in rd for h in p}
    assert covered == set(hosts)
    assert len(rounds[0]) == n // 2 and len(rounds) == (1 if n % 2 == 0 else 2)
    for rd in rounds:
        used = [h for p in rd for h in p]
        assert len(used) == len(set(used))


def test_schedule_runs_rails_in_parallel(example) -> None:
    per_rail = {r.rail: [] for h in example.hosts.values() for r in h.rails}
    for h in example.hosts.values():
        for r in h.rails:
            per_rail[r.rail].append(h.name)
    rounds = schedule(per_rail)
    assert len(rounds) == 3  # 4 hosts → N−1 rounds, all 4 rails in every round
    for rd in rounds:
        assert sorted(rd.pairs) == [1, 2, 3, 4]
        for pairs in rd.pairs.values():
            used = [h for p in pairs for h in p]
            assert len(used) == len(set(used))
    assert len(schedule(per_rail, quick=True)) == 1


def test_cross_rounds_only_pair_different_units() -> None:
    groups = [["a1", "a2"], ["b1", "b2"], ["c1", "c2"]]
    unit = {h: g[0][0] for g in groups for h in g}
    rounds = list(cross_rounds(groups))
    pairs = [p for rd in rounds for p in rd]
    assert all(unit[a] != unit[b] for a, b in pairs)
    assert {frozenset(p) for p in pairs} == {frozenset((a, b)) for a, b in combinations(unit, 2) if unit[a] != unit[b]}
    for rd in rounds:
        used = [h for p in rd for h in p]
        assert len(used) == len(set(used))
    quick = list(cross_rounds(groups, quick=True))
    assert len(quick) == 1 and all(unit[a] != unit[b] for a, b in quick[0])


# -- fault location ------------------------------------------------------------------------------

@pytest.mark.parametrize(("n", "bad"), [(2, 1), (3, 2), (4, 0), (7, 5), (64, 17), (1000, 999), (4096, 1234)])
def test_bisection_names_slow_host_in_log_rounds(n: int, bad: int) -> None:
    hosts = [f"gpu{i:04d}" for i in range(n)]
    probe = simulated_probe(lambda rail, h: 10.0 if (rail, h) == (3, hosts[bad]) else 400.0, threshold=360)
    loc = locate(3, hosts, probe, known_good=["ref"] if n == 2 else [])
    assert loc.hosts == [hosts[bad]] and not loc.suspects and not loc.between
    assert loc.rounds <= math.ceil(math.log2(n)) + 1
    for step in loc.steps:  # groups of one round are disjoint
        used = [h for g in step.groups for h in g.hosts]
        assert len(used) == len(set(used))


def test_bisection_names_two_faults_and_between_only_faults() -> None:
    hosts = [f"h{i}" for i in range(16)]
    slow = {"h3", "h12"}
    loc = locate(1, hosts, simulated_probe(lambda r, h: 1.0 if h in slow else 100.0, threshold=50))
    assert sorted(loc.hosts) == sorted(slow)
    assert loc.rounds <= 4

    def between(rail, groups):  # only traffic between the halves is slow (a fabric path)
        from fabric.accept.locate import GroupOutcome
        return [GroupOutcome(hosts=g, links=[], value=100.0, ok=True) for g in groups]
    loc = locate(2, hosts, between)
    assert loc.hosts == [] and loc.between == [[hosts[:8], hosts[8:]]] and loc.rounds == 1


# -- thresholds on parser output from the sample files ---------------------------------------------

def test_nccl_judged_on_busbw_at_largest_sizes_not_average(example) -> None:
    text = sample("nccl_all_reduce_2node_h200_v2.18_format.txt")
    ok = judge_nccl(text, expected_gbytes=8 * 400 / 8, fraction=0.9, largest=2)
    assert ok.ok and ok.value is not None and ok.value > 400 and ok.threshold == 360
    assert "not judged" in ok.detail  # the average line is reported, not used
    fail = judge_nccl(text, expected_gbytes=16 * 400 / 8, fraction=0.9, largest=2)  # 16 NICs: 720 GB/s
    assert not fail.ok and fail.value == ok.value
    assert expected_busbw(example, list(example.hosts)) == 4 * 100 / 8


def test_perftest_thresholds_from_samples() -> None:
    from fabric.parsers import perftest_bw_gbps

    bw = perftest_bw_gbps(parse_perftest(sample("ib_write_bw_client_all_sizes_report_gbits.txt")))
    assert 0 < bw < 400
    lat = lat_p99(parse_perftest(sample("ib_write_lat_all_sizes_client.txt")))
    assert 0 < lat < 10  # µs at 2 bytes


def test_ping_p99_is_one_way_microseconds() -> None:
    lines = "".join(f"64 bytes from 10.0.0.2: icmp_seq={i} ttl=64 time={i / 100:.2f} ms\n" for i in range(1, 101))
    assert ping_p99_us(lines) == pytest.approx(0.99 * 1000 / 2)
    with pytest.raises(RuntimeError):
        ping_p99_us("100 packets transmitted, 0 received")


# -- catalog ------------------------------------------------------------------------------------------

def test_default_catalog_round_trips_and_covers_checks(example, two_su, tmp_path: Path) -> None:
    c = cat.default_catalog(example)
    names = [e.check for e in c.checks]
    assert names[0] == "cabling"  # a miswired fabric fails first, with the cable to move
    assert "cross-su-bandwidth" not in names  # one SU
    assert {"host-config", "bgp", "rail-bandwidth", "rail-latency", "nccl-allreduce", "lossless-counters",
            "pfc-watchdog"} <= set(names)
    assert "cross-su-bandwidth" in [e.check for e in cat.default_catalog(two_su).checks]
    lab = cat.default_catalog(example, rdma=False)
    bw = next(e for e in lab.checks if e.check == "rail-bandwidth")
    assert bw.input["tool"] == "iperf3" and bw.input["threshold_gbps"] > 0
    path = tmp_path / "catalog.yaml"
    path.write_text(cat.dump(lab))
    checks = cat.load_catalog(path)
    assert [c.name for c in checks] == [e.check for e in lab.checks]
    assert len({c.id for c in checks}) == len(checks)
    # a lab shaped slower (lab.port_rate, the VM under emulation) scales the stand-ins' absolute floors with it
    slow = {e.check: e.input for e in cat.default_catalog(example, rdma=False, line_gbps=0.02).checks}
    assert slow["rail-bandwidth"]["threshold_gbps"] == 0.005 and slow["incast"]["threshold_gbps"] == 0.016
    assert bw.input["threshold_gbps"] == 0.25


def test_catalog_errors_name_the_entry(tmp_path: Path) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text(yaml.safe_dump({"checks": [{"check": "rail-bandwdith"},
                                               {"check": "rail-bandwidth", "input": {"seconds": -1}},
                                               {"check": "bgp", "name": "x"}, {"check": "bgp", "name": "x"}]}))
    with pytest.raises(InputError) as exc:
        cat.load_catalog(path)
    text = str(exc.value)
    assert "checks[0].check" in text and "rail-bandwidth" in text
    assert "checks[1].input.seconds" in text and "checks[3].name" in text


def test_tags_select_checks(example) -> None:
    checks = cat.build(cat.default_catalog(example))
    assert {c.name for c in cat.select(checks, ["latency"])} == {"rail-latency"}
    assert {c.name for c in cat.select(checks, ["counters"])} == {"lossless-counters", "pfc-watchdog", "traffic-class"}
    # every check but cross-SU (one SU) and the pod checks (only with --launcher k8s)
    assert len(cat.select(checks, None)) == len(checks) == len(CHECKS) - 3
    k8s = cat.build(cat.default_catalog(example, launcher="k8s", image="img"))
    assert [c.name for c in k8s if c.name.startswith("pod-")] == ["pod-rail-bandwidth", "pod-rail-latency"]


# -- launchers (render-only, by content) ---------------------------------------------------------------

def test_launchers_render_nccl_env_hostfile_sbatch_and_mpijob(example, tmp_path: Path) -> None:
    from fabric.render import kubernetes

    inputs = NcclInput(image="registry.example/roce-tests:1")
    hosts = sorted(example.hosts)
    job = launchers.nccl_job(example, hosts, inputs, name="nccl-all")
    env = example.hosts[hosts[0]].nccl_env
    files = launchers.render(job, "mpirun", example, tmp_path)
    hostfile, wrapper, cmd = (p.read_text() for p in files)
    assert hostfile.splitlines() == [f"{example.hosts[h].management_address.split('/')[0]} slots=4" for h in hosts]
    assert "-np 16" in cmd and f"NCCL_IB_HCA={env['NCCL_IB_HCA']}" in wrapper and "all_reduce_perf -b 8 -e 8G" in cmd
    assert wrapper.removeprefix("#!/bin/sh\n") in shlex.split(cmd.removeprefix("#!/bin/sh\n"))  # passed inline
    sb = launchers.render(job, "slurm", example, tmp_path)[1].read_text()
    assert "#SBATCH --nodes=4" in sb and "#SBATCH --ntasks-per-node=4" in sb and "NCCL_IB_TC=106" in sb
    assert "srun --mpi=pmix sh -c" in sb and "nccl-env all_reduce_perf -b 8" in sb
    # k8s: the PodGroup is the gang (launcher and workers), pods find their own NCCL devices
    # (in depth: tests/render/test_k8s.py)
    docs = [d for d in yaml.safe_load_all(launchers.render(job, "k8s", example, tmp_path)[0].read_text()) if d]
    group, mpijob = docs
    assert group["kind"] == "PodGroup" and group["spec"]["minMember"] == 5
    specs = mpijob["spec"]["mpiReplicaSpecs"]
    worker = specs["Worker"]
    assert mpijob["apiVersion"] == "kubeflow.org/v2beta1" and worker["replicas"] == 4
    for role in specs.values():
        assert role["template"]["spec"]["schedulerName"] == "volcano"
        assert role["template"]["metadata"]["annotations"]["scheduling.k8s.io/group-name"] == group["metadata"]["name"]
    limits = worker["template"]["spec"]["containers"][0]["resources"]["limits"]
    nads = [d for d in yaml.safe_load_all(kubernetes(example)["networks.yaml"]) if d]
    nad_resources = {d["metadata"]["annotations"]["k8s.v1.cni.cncf.io/resourceName"] for d in nads}
    assert {k for k in limits if k.startswith("nvidia.com/rail")} == nad_resources
    attached = worker["template"]["metadata"]["annotations"]["k8s.v1.cni.cncf.io/networks"].split(",")
    assert sorted(a.split("@")[0] for a in attached) == sorted(d["metadata"]["name"] for d in nads)
    env_k8s = {e["name"]: e.get("value") for e in worker["template"]["spec"]["containers"][0]["env"]}
    assert "NCCL_IB_HCA" not in env_k8s and "NCCL_IB_GID_INDEX" not in env_k8s  # found in the pod
    assert env_k8s["NCCL_IB_TC"] == env["NCCL_IB_TC"]


# -- counters ------------------------------------------------------------------------------------------

DUMP = """@@ rail1 ethtool
NIC statistics:
     rx_prio3_pause: {pause}
     rx_discards_phy: {disc}
     tx_pause_storm_error_events: 0
@@ rail1 link
[{{"ifname":"rail1","stats64":{{"rx":{{"bytes":{rx},"dropped":0}},"tx":{{"bytes":0,"dropped":0}}}}}}]
@@ rail1 hw
     np_cnp_sent: {cnp}
     rp_cnp_handled: 0
     out_of_sequence: 0
"""


def test_counter_dump_rates_and_cnp_rule(example) -> None:
    h1, h2 = sorted(example.hosts)[:2]
    before = {h1: parse_host_dump(DUMP.format(pause=0, disc=0, rx=0, cnp=0)),
              h2: parse_host_dump(DUMP.format(pause=0, disc=0, rx=0, cnp=0))}
    after = {h1: parse_host_dump(DUMP.format(pause=10, disc=0, rx=10**9, cnp=0)),
             h2: parse_host_dump(DUMP.format(pause=0, disc=3, rx=0, cnp=50))}
    assert before[h1]["rail1"]["hw:np_cnp_sent"] == 0 and "link:rx_bytes" in before[h1]["rail1"]
    r = {x.node: x for x in rates(delta(before, after), 2.0)}
    assert r[h1].pause == 5.0 and r[h1].rx_gbps == pytest.approx(4.0) and r[h2].discards == 1.5
    assert any("rx_discards_phy" in a for a in r[h2].anomalies)
    traffic = [Measurement(rail=1, src=h1, dst=h2, value=1.0)]
    ms, problems = lossless_findings(before, after, traffic, example)
    assert any(f"{h2} rail1: ethtool:rx_discards_phy +3" in p for p in problems)
    assert any("np_cnp_sent +50" in p and h1 in p for p in problems)
    ms, problems = lossless_findings(before, before, traffic, example)
    assert problems == [] and all(m.ok for m in ms)


# -- reports ---------------------------------------------------------------------------------------

def _report() -> AcceptReport:
    ms = [Measurement(rail=1, src="a", dst="b", value=9.0, unit="Gb/s", threshold=5, ok=True),
          Measurement(rail=2, src="a", dst="b", value=0.1, unit="Gb/s", threshold=5, ok=False),
          Measurement(rail=2, src="b", dst="a", value=None, unit="Gb/s", threshold=5, ok=False, detail="refused")]
    return AcceptReport(fabric="t<x>", mode="lab", quick=False, started="2026-01-01T00:00:00+00:00", seconds=3.0,
                        results=[CheckResult(name="rail-bandwidth", check="rail-bandwidth", status="fail",
                                             message="Expected ≥ 5 Gb/s", measurements=ms, evidence=["round 1"]),
                                 CheckResult(name="rail-bandwidth-2", check="rail-bandwidth", status="pass"),
                                 CheckResult(name="pfc-watchdog", check="pfc-watchdog", status="skipped",
                                             message="no counters")])


def test_junit_names_unique_and_counts(tmp_path: Path) -> None:
    root = ET.fromstring(report.to_junit(_report()))
    names = [tc.get("name") for tc in root.iter("testcase")]
    assert len(names) == len(set(names)) == 5
    assert root.get("failures") == "3" and root.get("skipped") == "1" and root.get("tests") == "5"


def test_html_self_contained_with_heatmap_and_other_formats(tmp_path: Path) -> None:
    rep = _report()
    paths = report.write(rep, tmp_path, ["json", "junit", "markdown", "html"])
    assert sorted(p.name for p in paths) == sorted(report.FILES.values())
    page = (tmp_path / "accept.html").read_text()
    assert "<style>" in page and "t&lt;x&gt;" in page
    for external in ("<link", "<script", "src=", "http://", "https://", "@import", "url("):
        assert external not in page
    assert "rail 1" in page and "rail 2" in page and "hsl(0," in page  # a red cell for the slow rail
    hosts, rails, cells = report.heatmap(rep)
    assert hosts == ["a", "b"] and rails == [1, 2] and cells[("a", 2)][0] == 0.0  # received: the refused b→a test
    data = json.loads((tmp_path / "accept.json").read_text())
    assert data["ok"] is False and data["counts"]["fail"] == 1
    assert "| rail-bandwidth | fail |" in (tmp_path / "accept.md").read_text()


def test_heatmap_reddens_only_the_slow_nic() -> None:
    """All pairs of 4 hosts on one rail, host c's NIC slow: the median isolates c; a minimum would
    paint every host red, since each has one test with c."""
    speed = {"a": 10.0, "b": 10.0, "c": 0.1, "d": 10.0}
    ms = [Measurement(rail=1, src=x, dst=y, value=min(speed[x], speed[y]), unit="Gb/s", threshold=5,
                      ok=min(speed[x], speed[y]) >= 5) for x in speed for y in speed if x != y]
    rep = AcceptReport(fabric="f", mode="lab", quick=False, started="2026-01-01T00:00:00+00:00", seconds=1.0,
                       results=[CheckResult(name="rail-bandwidth", check="rail-bandwidth", status="fail",
                                            message="Expected ≥ 5 Gb/s", measurements=ms)])
    _, _, cells = report.heatmap(rep)
    red = sorted(h for (h, _), (value, threshold, _) in cells.items() if value < threshold)
    assert red == ["c"]
    assert cells[("a", 1)][2] == "sent: median of 3 tests, 1 below 5, lowest 0.10"


def test_heatmap_finds_a_one_way_fault() -> None:
    """Host c only transmits slowly (a shaper on its egress): c→x tests are slow, x→c are not."""
    ms = [Measurement(rail=2, src=x, dst=y, value=0.1 if x == "c" else 10.0, unit="Gb/s", threshold=5)
          for x in "abcd" for y in "abcd" if x != y]
    rep = AcceptReport(fabric="f", mode="lab", quick=False, started="2026-01-01T00:00:00+00:00", seconds=1.0,
                       results=[CheckResult(name="rail-bandwidth", check="rail-bandwidth", status="fail",
                                            message="Expected ≥ 5 Gb/s", measurements=ms)])
    _, _, cells = report.heatmap(rep)
    assert sorted(h for (h, _), (v, t, _) in cells.items() if v < t) == ["c"]
    assert cells[("c", 2)][2].startswith("sent: median of 3 tests, 3 below 5")


MIXED = FIXTURES / "inventories" / "mixed-dgx-hgx"


def _rank_env(argv: list[str], env: dict[str, str]) -> dict[str, str]:
    """Run a launcher's per-rank argv (the wrapper, then the test) here with `env`, the test replaced by a
    dump of the NCCL variables the rank would see."""
    i = argv.index("nccl-env")
    probe = [*argv[: i + 1], "sh", "-c", "env | grep ^NCCL_"]
    p = subprocess.run(probe, capture_output=True, text=True, env={"PATH": os.environ["PATH"], **env}, timeout=10)
    assert p.returncode == 0, p.stderr
    return dict(line.split("=", 1) for line in p.stdout.splitlines())


def test_every_launcher_gives_each_rank_its_own_hosts_nccl_env(tmp_path: Path) -> None:
    """DGX H100 (mlx5_0,3,4,5,6,9,10,11) and HGX H100 (mlx5_0..7) in one job: each rank exports its own host's
    NCCL_IB_HCA, under mpirun (rank → node in hostfile order) and Slurm (SLURMD_NODENAME)."""
    fab = derive(load(MIXED))
    hosts = sorted(fab.hosts)
    assert hosts == ["dgx-01", "dgx-02", "hgx-01", "hgx-02"]
    job = launchers.nccl_job(fab, hosts, NcclInput(), name="mixed")
    dgx = "=mlx5_0:1,mlx5_3:1,mlx5_4:1,mlx5_5:1,mlx5_6:1,mlx5_9:1,mlx5_10:1,mlx5_11:1"
    hgx = "=mlx5_0:1,mlx5_1:1,mlx5_2:1,mlx5_3:1,mlx5_4:1,mlx5_5:1,mlx5_6:1,mlx5_7:1"
    argv = launchers.mpirun_argv(job, "mixed.hostfile")
    rank_argv = argv[argv.index("sh"):]
    for rank, want in ((0, dgx), (7, dgx), (8, dgx), (16, hgx), (31, hgx)):  # 8 GPUs per host
        got = _rank_env(rank_argv, {"OMPI_COMM_WORLD_RANK": str(rank)})
        assert got["NCCL_IB_HCA"] == want, rank
        assert got["NCCL_IB_TC"] == "106" and got["NCCL_SOCKET_IFNAME"] == "=eno1"
    sbatch = launchers.render(job, "slurm", fab, tmp_path)[1].read_text()
    srun = shlex.split(sbatch[sbatch.index("\nsrun "):])
    for node, want in (("dgx-02", dgx), ("hgx-01", hgx)):
        assert _rank_env(srun[srun.index("sh"):], {"SLURMD_NODENAME": node})["NCCL_IB_HCA"] == want
    p = subprocess.run(srun[srun.index("sh"):], env={"PATH": os.environ["PATH"], "SLURMD_NODENAME": "other"},
                       capture_output=True, text=True, timeout=10)
    assert p.returncode == 2 and "no NCCL environment for node 'other'" in p.stderr
    # Kubernetes: the pods discover their own NICs, so the manifest forwards no host's NCCL_IB_HCA
    k8s = (tmp_path / "k8s")
    docs = [d for d in yaml.safe_load_all(launchers.render(job, "k8s", fab, k8s)[0].read_text()) if d]
    worker = docs[1]["spec"]["mpiReplicaSpecs"]["Worker"]["template"]["spec"]["containers"][0]
    assert "NCCL_IB_HCA" not in {e["name"] for e in worker["env"]} and "mlx5_9" not in json.dumps(docs)


# -- lossless class: ToS on every perftest line, per-priority counters -----------------------------------

def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return inproc.fabric(*args, cwd=ROOT, env={**os.environ, "PATH": "/nonexistent"})


def test_dry_run_prints_every_command_with_tclass_and_writes_launch_files(tmp_path: Path) -> None:
    """No ssh, mpirun or sbatch on PATH: a dry run needs none, runs nothing and writes what a run writes."""
    p = _cli("accept", "inventories/h100-400g", "--dry-run", "--quick", "-o", str(tmp_path))
    assert p.returncode == 0, p.stderr
    perftest = [ln for ln in p.stdout.splitlines() if "ib_write_" in ln]
    assert len(perftest) > 100 and all("--tclass=106" in ln for ln in perftest)
    first = "  round 1 gpu-su1-02 [server]: ib_write_bw -d mlx5_0 -x 3 --tclass=106"
    assert any(ln.startswith(first) for ln in perftest)
    assert any("[client]: ib_write_lat -d mlx5_7 -x 3 --tclass=106" in ln for ln in perftest)
    sections = [ln[3:].split("  (")[0] for ln in p.stdout.splitlines() if ln.startswith("== ")]
    assert sections[:5] == ["cabling", "host-config", "host-prereqs", "bgp", "counters before traffic"]
    assert "  leaf-su1-r1 [read]: nv show interface <swp> lldp -o json (each port of the intent)" in p.stdout
    assert "  gpu-su1-01 [read]: lldpctl -f json" in p.stdout
    assert sections.index("counters after traffic") < sections.index("lossless-counters")
    assert (tmp_path / "dry-run.txt").read_text() in p.stdout
    launch = tmp_path / "launch" / "nccl-allreduce"
    assert (launch / "nccl-allreduce-0.hostfile").exists() and (launch / "nccl-allreduce-0.nccl-env.sh").exists()
    assert not (tmp_path / "accept.json").exists()  # nothing ran, so no report


def test_an_all_pairs_dry_run_is_written_as_it_is_made(tmp_path: Path) -> None:
    """512 GPUs (64 hosts × 8 rails, 131,000 commands): the first lines reach stdout while the plan is being made
    (dry-run.txt is named only once complete; the plan grows in a temporary file beside it), the kept plan is what
    was printed, and the process's peak memory stays that of the fabric (an unstreamed plan held 184 MiB here,
    10.8 GiB at 4,096 GPUs)."""
    inv, out = tmp_path / "g512", tmp_path / "out"
    assert _cli("generate", "gpu-rail", "--gpus", "512", "-o", str(inv)).returncode == 0
    fabric = str(Path(sys.executable).with_name("fabric"))
    # measured from a small parent of its own: a child of this test process would count this process's memory
    # too (exec records the forking process's high-water mark; a long-lived test worker holds far more than 120 MiB)
    peak = ("import resource, subprocess, sys; r = subprocess.run(sys.argv[1:]); "
            "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss, file=sys.stderr); sys.exit(r.returncode)")
    proc = subprocess.Popen([sys.executable, "-c", peak, fabric, "accept", str(inv), "--dry-run", "-o", str(out)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    first = proc.stdout.readline()
    assert first.startswith("== ")
    assert not (out / "dry-run.txt").exists()  # 16 MB to come, more than a pipe holds: still being written
    assert len(list(out.glob(".dry-run.txt.*.tmp"))) == 1
    rest = proc.stdout.read()
    err = proc.stderr.read() if proc.stderr else ""
    assert proc.wait() == 0, err
    maxrss_kib = int(err.splitlines()[-1])
    text = first + rest
    plan, summary = text[:text.rindex("dry run: ")], text[text.rindex("dry run: "):]
    assert (out / "dry-run.txt").read_text() == plan and not list(out.glob(".*.tmp"))
    commands, steps = (sum(1 for ln in plan.splitlines() if ln.startswith(m)) for m in ("  ", "== "))
    assert commands > 130_000 and summary.startswith(f"dry run: {commands} commands in {steps} steps, nothing run")
    rounds = [ln.split()[1] for ln in plan.splitlines() if ln.startswith("  round ")]
    assert max(map(int, rounds)) == 63 and rounds.count("63") == 32 * 8 * 2 * 3  # N−1 rounds: ib_write_bw both
    # directions and ib_write_lat, 32 pairs on each of 8 rails, a server and a client each
    assert maxrss_kib < 120 * 1024, f"peak RSS {maxrss_kib // 1024} MiB"


def test_a_dry_run_ended_by_sigterm_leaves_no_partial_plan(tmp_path: Path) -> None:
    """`timeout`, a job's time limit or a dropped ssh (SIGTERM, SIGHUP) ends a dry run as Ctrl-C does: the plan
    growing beside dry-run.txt is removed, nothing is named dry-run.txt."""
    inv, out = tmp_path / "g512", tmp_path / "out"
    assert _cli("generate", "gpu-rail", "--gpus", "512", "-o", str(inv)).returncode == 0
    proc = subprocess.Popen([str(Path(sys.executable).with_name("fabric")), "accept", str(inv), "--dry-run", "-o",
                             str(out)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env={**os.environ, "ROCE_FABRIC_CACHE": "off"})
    assert proc.stdout is not None and proc.stdout.readline().startswith("== ")
    assert len(list(out.glob(".dry-run.txt.*.tmp"))) == 1
    proc.terminate()
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 128 + 15 and "Traceback" not in err, err  # handled (not killed): exit 143
    assert not list(out.glob("*dry-run*")) and not list(out.glob(".*.tmp"))


def test_rdma_cm_carries_the_tos_with_T(example) -> None:
    from fabric.accept.tools import IbWriteBw, IbWriteLat, ends

    ep = ends(example)
    a, b = ep[("gpu-su1-01", 1)], ep[("gpu-su1-02", 1)]
    assert IbWriteBw(rdma_cm=True).client(a, b, 18516, 5)[5:8] == ["-R", "-T", "106"]
    assert "--tclass=106" in IbWriteLat().server(b, 18601, 1) and "-R" not in IbWriteLat().server(b, 18601, 1)


def _prio_snapshot(prio_bytes: dict[int, int], rx: bool = False) -> dict[str, int]:
    d = "rx" if rx else "tx"
    return {f"ethtool:{d}_prio{p}_bytes": v for p, v in prio_bytes.items()}


def test_traffic_class_share_on_the_lossless_priority(example) -> None:
    """Sender tx_prio3_bytes and receiver rx_prio3_bytes carry the RoCE bytes; CNPs (priority 6) do not count;
    a sender whose traffic went out on priority 0 (no ToS) fails, named with its NIC."""
    from fabric.accept.checks.lossless import class_shares

    base = {h: {"rail1": {**_prio_snapshot({0: 0, 3: 0, 6: 0}), **_prio_snapshot({0: 0, 3: 0}, rx=True)}}
            for h in ("gpu-su1-01", "gpu-su1-02")}
    after = {"gpu-su1-01": {"rail1": {**_prio_snapshot({0: 10_000, 3: 5_000_000_000, 6: 0}),
                                      **_prio_snapshot({0: 0, 3: 1_000}, rx=True)}},
             "gpu-su1-02": {"rail1": {**_prio_snapshot({0: 4_000_000_000, 3: 0, 6: 9_000_000}),
                                      **_prio_snapshot({0: 2_000, 3: 5_000_000_000}, rx=True)}}}
    traffic = [Measurement(rail=1, src="gpu-su1-01", dst="gpu-su1-02", value=390.0, unit="Gb/s"),
               Measurement(rail=1, src="gpu-su1-02", dst="gpu-su1-01", value=390.0, unit="Gb/s")]
    ms = {(m.src, m.dst): m for m in class_shares(delta(base, after), traffic, example, min_share=0.9,
                                                     min_bytes=1 << 20)}
    assert ms[("gpu-su1-01", "rail1 tx")].ok and ms[("gpu-su1-01", "rail1 tx")].value == 1.0
    assert ms[("gpu-su1-02", "rail1 rx")].ok
    bad = ms[("gpu-su1-02", "rail1 tx")]
    assert not bad.ok and bad.value == 0.0 and "prio0 +4000000000" in bad.detail
    assert ("gpu-su1-01", "rail1 rx") not in ms  # 1,000 B: too little to judge


def test_traffic_class_reads_real_mlx5_counter_names() -> None:
    dump = "@@ ens1np0 ethtool\n" + sample("extra_ethtool_S_mlx5_prio3.txt")
    counters = parse_host_dump(dump)["ens1np0"]
    from fabric.accept.counters import PRIO_BYTES

    assert {k for k in counters if PRIO_BYTES.match(k)} >= {"ethtool:tx_prio3_bytes", "ethtool:rx_prio3_bytes"}


# -- nccl-tests -J JSON ---------------------------------------------------------------------------------------

def test_nccl_json_preferred_text_fallback() -> None:
    from fabric.parsers import parse_nccl_json

    doc = (SAMPLES / "extra_nccl_all_reduce_2node.json").read_text()
    res = parse_nccl_json(doc, "nccl.json")
    assert [r.size for r in res.rows][-1] == 17179869184 and res.rows[-1].in_place.busbw == 485.52
    assert res.out_of_bounds == 0 and res.out_of_bounds_ok is True and res.complete and len(res.ranks) == 16
    text = sample("nccl_all_reduce_2node_h200_v2.18_format.txt")
    m = judge_nccl(text, expected_gbytes=400, fraction=0.9, largest=2, json_text=doc)
    assert m.ok and m.value == 485.01 and m.detail.startswith("JSON")
    cut = judge_nccl(text, expected_gbytes=400, fraction=0.9, largest=2, json_text=doc[: len(doc) // 2])
    assert cut.detail.startswith("text") and cut.value == 485.01  # interrupted JSON: the text decides


@pytest.mark.parametrize("where", ["results[0]", "config", "config.devices", "config.devices[0].pid",
                                   "out_of_bounds", "out_of_bounds.count", "average_bus_bandwidth.bandwidth"])
@pytest.mark.parametrize("value", [None, "x", [1], {"a": 1}, True, 1.5, float("nan")])
def test_nccl_json_of_the_wrong_shape_is_read_or_located(where: str, value: object) -> None:
    """A host's nccl-tests JSON holding anything at any of its objects is read (what is not a number counts as
    absent) or one located InputError, never a traceback."""
    from fabric.parsers import parse_nccl_json

    doc = json.loads((SAMPLES / "extra_nccl_all_reduce_2node.json").read_text())
    *path, last = [int(k) if k.isdigit() else k for k in where.replace("[", ".").replace("]", "").split(".")]
    node = doc
    for key in path:
        node = node[key]
    node[last] = value
    try:
        res = parse_nccl_json(json.dumps(doc), "nccl.json")
    except InputError as exc:
        assert "nccl.json" in str(exc)
    else:
        assert res.rows and all(isinstance(r.rank, int) for r in res.ranks)


def test_runner_detects_json_support_from_usage() -> None:
    assert launchers.supports_json("  -J,--output_file <file> \n  -T,--timeout <time in seconds>")
    assert not launchers.supports_json("USAGE: all_reduce_perf [-t,--nthreads <num threads>]")


def _hw(cnp_sent: int = 0, handled: int = 0, oos: int = 0) -> dict[str, int]:
    return {"hw:np_cnp_sent": cnp_sent, "hw:rp_cnp_handled": handled, "hw:out_of_sequence": oos}


def test_cnp_asymmetry_is_judged_per_sender(example) -> None:
    """Three senders into one receiver that sends CNPs: the one sender that handles none is named, the two
    that do are not (the old rule only fired when every sender was deaf)."""
    r, s1, s2, s3 = sorted(example.hosts)
    before = {h: {"rail1": _hw()} for h in (r, s1, s2, s3)}
    after = {r: {"rail1": _hw(cnp_sent=900)}, s1: {"rail1": _hw(handled=300)}, s2: {"rail1": _hw()},
             s3: {"rail1": _hw(handled=310)}}
    traffic = [Measurement(rail=1, src=s, dst=r, value=30.0) for s in (s1, s2, s3)]
    ms, problems = lossless_findings(before, after, traffic, example)
    deaf = [m for m in ms if m.unit == "CNPs handled"]
    assert [(m.src, m.dst, m.ok) for m in deaf] == [(s2, r, False)]
    assert len(problems) == 1 and f"flat on sender {s2}" in problems[0]


def test_out_of_sequence_tolerated_only_where_adaptive_routing_is_on(example) -> None:
    ar = derive(load(ROOT / "inventories" / "h100-400g"))
    for fab, tolerated in ((ar, True), (example, False)):
        h = sorted(fab.hosts)[0]
        port = fab.hosts[h].rails[0].ifname
        ms, problems = lossless_findings({h: {port: _hw()}}, {h: {port: _hw(oos=1234)}}, [], fab)
        [m] = [m for m in ms if m.src == h]
        assert m.ok is tolerated and ("adaptive routing on" in m.detail) is tolerated, m.detail
        assert bool(problems) is not tolerated


def test_lossless_queue_drops_on_a_pfc_switch_port_fail(example) -> None:
    """Drops on the lossless TC of a switch port that runs PFC fail; a lossy queue's drops and a port without
    PFC counters (the lab's software switch) do not."""
    before = {"leaf-su1-r1": {"swp1": {"pfc:3:rx_pause": 0, "queue:3:drops": 0, "queue:0:drops": 0},
                              "swp2": {"queue:3:drops": 0}}}
    after = {"leaf-su1-r1": {"swp1": {"pfc:3:rx_pause": 9, "queue:3:drops": 5, "queue:0:drops": 40},
                             "swp2": {"queue:3:drops": 7}}}
    ms, problems = lossless_findings(before, after, [], example)
    assert problems == ["leaf-su1-r1 swp1: queue:3:drops +5 (lossless queue)"]
    assert [(m.src, m.dst, m.value) for m in ms if not m.ok] == [("leaf-su1-r1", "swp1", 5)]


def _connect_script(monkeypatch, replies: list[tuple[int, str, str]]) -> list[list[str]]:
    """tr.run answers the client runs with `replies` in order (the last one repeats); tr.start a server that is
    stopped with empty output. Returns the client argvs run; pauses are recorded, not slept."""
    from fabric.accept import tools

    runs: list[list[str]] = []

    def run(site, host, argv, timeout=30, stdin=None):
        runs.append(argv)
        rc, out, err = replies[min(len(runs), len(replies)) - 1]
        return tools.tr.Completed(rc, out, err)

    monkeypatch.setattr(tools.tr, "run", run)
    monkeypatch.setattr(tools.tr, "start", lambda site, host, argv, seconds: object())
    monkeypatch.setattr(tools.tr, "stop", lambda proc: ("", ""))
    monkeypatch.setattr(tools.time, "sleep", lambda s: None)
    return runs


def _bw_link():
    from fabric.accept.tools import End

    return [(End("a", 1, "10.0.1.1", "mlx5_0", "eth1", 3, 106), End("b", 1, "10.0.1.2", "mlx5_0", "eth1", 3, 106))]


def test_client_started_again_while_the_server_does_not_listen_yet(monkeypatch) -> None:
    """perftest's client fails its TCP rendezvous when the server is not up yet (the words of the DG302 log
    sample): it is started again after a pause, and the run that connects is the measurement."""
    from fabric.accept.tools import IbWriteBw, measure_links

    refused = (SAMPLES.parent / "logs" / "signatures" / "DG302.log").read_text()
    ok = (SAMPLES / "ib_write_bw_client_bidir_duration_newheader.txt").read_text().split("\n", 1)[1]
    runs = _connect_script(monkeypatch, [(1, "", refused), (1, "", refused), (0, ok, "")])
    [m] = measure_links(None, IbWriteBw(), _bw_link(), seconds=5, timeout=60, threshold=300)
    assert len(runs) == 3 and m.value is not None and m.detail == "", m


def test_client_not_started_again_for_a_failure_after_connecting(monkeypatch) -> None:
    """A client that connected and then failed (a QP error) measured a broken link: reported, never retried;
    one that never finds its server gives up after the bounded pauses and names perftest's error."""
    from fabric.accept.tools import CONNECT_RETRIES, IbWriteBw, measure_links

    runs = _connect_script(monkeypatch, [(1, "", " Failed to modify QP 1234 to RTR\n Unable to Connect the HCA's "
                                                 "QP to the remote one\n")])
    [m] = measure_links(None, IbWriteBw(), _bw_link(), seconds=5, timeout=60, threshold=300)
    assert len(runs) == 1 and not m.ok and "remote one" in m.detail, m
    refused = (SAMPLES.parent / "logs" / "signatures" / "DG302.log").read_text()
    runs = _connect_script(monkeypatch, [(1, "", refused)])
    [m] = measure_links(None, IbWriteBw(), _bw_link(), seconds=5, timeout=60, threshold=300)
    assert len(runs) == len(CONNECT_RETRIES) and not m.ok and "socket connection" in m.detail, m


def test_a_run_perftest_could_not_time_is_no_result_not_a_slow_link(monkeypatch) -> None:
    """perftest's client exits 0 with zeros in every column when its cycle counter would not calibrate (the CI VM
    lab's output): server and client are started once more; where that run could not time itself either, the link
    is reported without a value, with perftest's r² and the advice to run it again, never as a link measured at
    0 Gb/s."""
    from fabric.accept import tools
    from fabric.accept.tools import IbWriteBw, measure_links

    uncalibrated = (SAMPLES / "extra_ib_write_bw_clock_uncalibrated.txt").read_text()
    runs = _connect_script(monkeypatch, [(0, uncalibrated, "")])
    [m] = measure_links(None, IbWriteBw(), _bw_link(), seconds=5, timeout=60, threshold=300)
    assert len(runs) == 2 and not m.ok and m.value is None, m  # run once more, server too: no result either
    assert m.detail.startswith("no result: ib_write_bw client:1: perftest.clock: expected a run perftest could time")
    assert "found r² 0.668728" in m.detail and "run it again" in m.detail
    # the run again measures: that is the link's figure
    ok = (SAMPLES / "ib_write_bw_client_bidir_duration_newheader.txt").read_text().split("\n", 1)[1]
    runs = _connect_script(monkeypatch, [(0, uncalibrated, ""), (0, ok, "")])
    servers: list[list[str]] = []
    monkeypatch.setattr(tools.tr, "start", lambda site, host, argv, seconds: servers.append(argv) or object())
    [m] = measure_links(None, IbWriteBw(), _bw_link(), seconds=5, timeout=60, threshold=300)
    assert len(runs) == 2 and m.value is not None and m.detail == "", m
    assert len(servers) == 2 and servers[0] == servers[1] and servers[0][0] == "ib_write_bw"  # a new server
    # links judged together (an incast round) are not run again one by one
    runs = _connect_script(monkeypatch, [(0, uncalibrated, ""), (0, ok, "")])
    [m] = measure_links(None, IbWriteBw(), _bw_link(), seconds=5, timeout=60, threshold=300, rerun_unmeasured=False)
    assert len(runs) == 1 and m.value is None, m


def test_an_incast_sender_without_a_result_is_reported_with_its_tools_error(example) -> None:
    """A sender whose iperf3 never reached its server (the VM lab under load, 2026-11-29) is named with the
    tool's error and its port, not as "no result Gb/s, below 0.004"; the senders that measured are judged as
    before."""
    from fabric.accept.checks.congestion import Incast, IncastInput
    from fabric.accept.results import Measurement

    refused = "no result: iperf3: unable to connect to server: Connection refused"
    got = [Measurement(rail=1, src="gpu-su1-02", dst="gpu-su1-01", unit="Gb/s", tool="iperf3", detail=refused),
           Measurement(rail=1, src="gpu-su1-03", dst="gpu-su1-01", value=0.018, unit="Gb/s", tool="iperf3")]
    inputs, problems = IncastInput(), []
    judged = Incast(inputs)._judge(example, {}, inputs, 1, "gpu-su1-01", ["gpu-su1-02", "gpu-su1-03"], got,
                                   problems, [])
    assert problems == [f"gpu-su1-02→gpu-su1-01 rail 1 {refused} (its port leaf-su1-r1:swp2)"], problems
    assert [m.ok for m in judged[:2]] == [False, True]
    assert judged[0].detail == f"{refused}; 2-way incast into gpu-su1-01"


def test_an_ets_round_whose_bulk_never_reached_its_server_is_no_share_not_a_located_port(
        example, monkeypatch: pytest.MonkeyPatch) -> None:
    """The bulk TCP of an ets round that never reached its server (the VM lab under load, 2026-11-30): the RoCE
    class had the port to itself, which says nothing of its share. The check reports the port without a share, with
    the tool's error, and locates nothing; it read "Actual: 100%. Located: leaf-su1-r1:swp1" before."""
    from types import SimpleNamespace

    from fabric.accept.checks import congestion
    from fabric.accept.checks.base import Context

    refused = "no result: iperf3: unable to connect to server: Connection refused"
    check = congestion.Ets(congestion.EtsInput(tool="iperf3", rails=[1]))
    [(src, dst)], [(bulk_src, _)] = check._plan_links(example)

    def measured(bulk: float | None) -> tuple[list[Measurement], list[Measurement], dict]:
        roce = Measurement(rail=1, src=src.host, dst=dst.host, value=0.019, unit="Gb/s", tool="iperf3")
        other = Measurement(rail=1, src=bulk_src.host, dst=dst.host, value=bulk, unit="Gb/s", tool="iperf3",
                            detail="" if bulk is not None else refused)
        port = {"queue:3:tx_bytes": 7909268, "queue:0:tx_bytes": 2129 if bulk is None else 7000000}
        return [roce], [other], {"leaf-su1-r1": {"swp1": port}}

    monkeypatch.setattr(congestion, "missing", lambda *_a, **_k: "")
    ctx = Context(site=SimpleNamespace(fabric=example))  # type: ignore[arg-type]
    monkeypatch.setattr(congestion, "_round", lambda *_a, **_k: measured(None))
    res = check.run(ctx)
    [m] = res.measurements
    assert res.status == "fail" and m.value is None and not m.ok and not res.locations, res
    assert "Located" not in res.message and refused in res.message, res.message
    assert m.detail == f"leaf-su1-r1:swp1: bulk TC0 from {bulk_src.host} {refused}; configured 50%", m.detail
    # with both classes measured, the port's share is judged as before
    monkeypatch.setattr(congestion, "_round", lambda *_a, **_k: measured(0.018))
    res = check.run(ctx)
    assert res.status == "pass" and res.measurements[0].value == round(7909268 / 14909268, 4), res


def test_incast_reports_the_receivers_kernel_ce_count_beside_the_qdisc_marks(example) -> None:
    """A real incast round in the VM lab (tests/fixtures/netstat/SOURCE.md): the receiver's leaf port's `red` counted
    73 CE marks, one per packet it queued, where the iperf3 senders' GSO batches are many wire packets each; the
    receiver's kernel counted 430 CE packets on arrival. The incast check reports both and says which is which."""
    from fabric.accept import counters as cn
    from fabric.accept.checks.congestion import RECEIVED_CE, Incast, IncastInput, received_ce
    from fabric.parsers.iproute import queue_counters

    fx = FIXTURES / "netstat"

    def snap(tag: str) -> cn.Snapshot:
        port = queue_counters((fx / f"incast-leaf-{tag}-class-swp1.txt").read_text(),
                              json.loads((fx / f"incast-leaf-{tag}-qdisc.json").read_text()), "swp1")
        problems: list[str] = []
        kernel = cn.parse_netstat((fx / f"incast-receiver-{tag}.txt").read_text(), "gpu-su1-01", problems)
        assert not problems and kernel
        return {"leaf-su1-r1": {"swp1": port}, "gpu-su1-01": {cn.KERNEL: kernel}}

    d = cn.delta(snap("fault-before"), snap("fault-after"))
    inputs = IncastInput()
    judged = Incast(inputs)._judge(example, d, inputs, 1, "gpu-su1-01", ["gpu-su1-02", "gpu-su1-03"], [], [], [])
    marks = next(m for m in judged if m.unit == "CE-marked packets")
    [received] = received_ce(d, "gpu-su1-01", judged)
    assert (marks.value, received.value, received.unit) == (73, 430, RECEIVED_CE)
    assert "qdiscs counted CE marks leaf-su1-r1:swp1 +73, one per queued packet" in received.detail
    assert "kernel received +430 CE packets (IpExt InCEPkts" in received.detail
    problems: list[str] = []
    assert cn.parse_netstat("IpExt: InNoECTPkts InCEPkts\nIpExt: 1\n", "h1", problems) == {}
    assert problems == ["h1: /proc/net/netstat: expected an IpExt names line and a values line of the same length, "
                        "found 2 names and 1 values"]
