"""fabric lint: every rule fires on a minimal broken fabric and stays quiet on a good one."""

from __future__ import annotations

import dataclasses
import json
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml
from typer.testing import CliRunner

from fabric.cli import app
from fabric.design.derive import Deriver
from fabric.lint.configs import load_configs
from fabric.lint.context import Context
from fabric.lint.core import Severity
from fabric.lint.engine import run
from fabric.lint.rules import all_rules
from fabric.model.load import load
from tests.support.paths import FIXTURES, ROOT

EXAMPLE = ROOT / "inventories" / "example"


def inventory(tmp: Path, **sections: Any) -> Path:
    """The example inventory with top-level sections deep-merged from `sections`."""
    from fabric.model.qos import merge

    out = tmp / "inv"
    shutil.copytree(EXAMPLE, out)
    for f in sorted(out.glob("*.yaml")):
        doc = yaml.safe_load(f.read_text()) or {}
        for key in list(sections):
            if key in doc:
                doc[key] = merge(doc[key], sections.pop(key)) if isinstance(doc[key], dict) else sections.pop(key)
        f.write_text(yaml.safe_dump(doc, sort_keys=False))
    if sections:
        (out / "extra.yaml").write_text(yaml.safe_dump(sections, sort_keys=False))
    return out


def ids(ctx: Context, rule: str, min_sev: Severity = Severity.warning) -> list[str]:
    return [f.rule for f in run(ctx, select=[rule]).findings if f.severity.rank >= min_sev.rank]


@pytest.fixture()
def good() -> Context:
    return Context(load(EXAMPLE))


def test_example_is_clean(good: Context) -> None:
    result = run(good)
    assert not result.failed(Severity.warning), [f.message for f in result.findings]


# -- rules triggered through the inventory -----------------------------------------------------------
INVENTORY_CASES: list[tuple[str, dict[str, Any]]] = [
    ("RF101", {"qos": {"dscp_to_priority": {26: 0}}}),
    ("RF103", {"qos": {"ets_strict": [], "ets_dwrr": {0: 50, 3: 50}}}),
    ("RF104", {"qos": {"ecn": {3: {"enabled": False}}}}),
    ("RF105", {"qos": {"ets_dwrr": {0: 40}}}),
    ("RF106", {"qos": {"pfc_watchdog": {"enabled": False}}}),
    ("RF108", {"hosts": {"defaults": {"dcqcn": {"enabled": False}}}}),
    ("RF110", {"hosts": {"defaults": {"roce_tos": 104}}}),
    ("RF201", {"hosts": {"defaults": {"nccl_env": {"NCCL_IB_TC": 0}}}}),
    ("RF202", {"hosts": {"defaults": {"nccl_env": {"NCCL_IB_HCA": "mlx5_0,mlx5_1,mlx5_2,mlx5_3"}}}}),
    ("RF203", {"hosts": {"defaults": {"nccl_env": {"NCCL_SOCKET_IFNAME": "rail"}}}}),
    ("RF204", {"hosts": {"defaults": {"nccl_env": {"NCCL_IB_ROCE_VERSION_NUM": 1}}}}),
    ("RF302", {"hosts": {"defaults": {"mtu": 4000}}}),
    ("RF304", {"hosts": {"list": [{"name": "gpu-su1-01", "management": "198.18.0.1/24"}]}}),
    ("RF306", {"topology": {"hosts_per_su": 5}, "addressing": {"rail_prefix_length": 29}}),
    ("RF308", {"lint": {"oversubscription_warn": 0.25}}),
    ("RF402", {"switching": {"adaptive_routing": {"enabled": True}}}),
    ("RF404", {"switching": {"neighbor": {"aging": "1200s"}}}),
    ("RF405", {"switching": {"bgp": {"graceful_shutdown": False}}}),
    ("RF311", {"hosts": {"defaults": {"nics": [  # rail 1 tags VLAN 2001; its SVI is VLAN 1001 (vlan_base + rail)
        {"rail": 1, "rdma": "mlx5_0", "netdev": "rail1", "vlan": 2001},
        *({"rail": k, "rdma": f"mlx5_{k - 1}", "netdev": f"rail{k}"} for k in (2, 3, 4))]}}}),
]


@pytest.mark.parametrize(("rule", "sections"), INVENTORY_CASES, ids=[c[0] for c in INVENTORY_CASES])
def test_rule_fires_on_inventory(tmp_path: Path, good: Context, rule: str, sections: dict[str, Any]) -> None:
    assert ids(good, rule) == []
    bad = Context(load(inventory(tmp_path, **sections)))
    found = run(bad, select=[rule]).findings
    assert found and all(f.rule == rule for f in found)
    assert all(f.file.endswith(".yaml") and f.line for f in found), found
    assert any(f.severity.rank >= Severity.warning.rank for f in found)


def test_rf101_names_the_line_and_the_dscp(tmp_path: Path) -> None:
    inv = inventory(tmp_path, qos={"dscp_to_priority": {26: 0}})
    fs = run(Context(load(inv)), select=["RF101"]).findings
    assert len(fs) == 4  # one per rail leaf, each naming the 4 hosts behind it
    f = fs[0]
    assert f.object == "hosts" and f.item == "DSCP 26"
    assert "RoCE ToS 106 → DSCP 26" in f.message and "PFC on 3" in f.message
    assert f.file.endswith("qos.yaml") and f.line == 3  # dscp_to_priority under qos:


def test_rf202_exact_list_is_clean_prefix_list_is_not(tmp_path: Path) -> None:
    inv = inventory(tmp_path, hosts={"defaults": {"nccl_env": {"NCCL_IB_HCA": "mlx5_1"}}})
    (f,) = run(Context(load(inv)), select=["RF202"]).findings
    assert "missing: mlx5_0, mlx5_2, mlx5_3" in f.message


# -- rules whose inputs the loader already guards: mutate the derived intent -------------------------
def _speed(ctx: Context) -> None:
    ctx.intent.switches["spine1"].ports[0].speed = 100


def _pfc(ctx: Context) -> None:
    ctx.intent.hosts["gpu-su1-01"].nic_qos.pfc = [0, 0, 0, 0, 1, 0, 0, 0]


def _buffer(ctx: Context) -> None:
    for sw in ctx.intent.switches.values():
        sw.buffer_bytes = 1_000_000


def _rail(ctx: Context) -> None:
    r = ctx.intent.hosts["gpu-su1-02"].rails
    r[0].leaf, r[1].leaf = r[1].leaf, r[0].leaf


def _loopback(ctx: Context) -> None:
    ctx.intent.switches["spine1"].loopback = "10.100.0.77/32"


def _dup(ctx: Context) -> None:
    ctx.intent.switches["spine1"].loopback = ctx.intent.hosts["gpu-su1-01"].rails[0].address


def _asn(ctx: Context) -> None:
    ctx.intent.switches["spine2"].bgp.asn = 65001


def _drop_session(ctx: Context) -> None:
    ctx.intent.switches["leaf-su1-r1"].bgp.neighbors.pop()


def _ar(ctx: Context) -> None:
    ctx.intent.switches["leaf-su1-r1"].ports[-1].adaptive_routing = True


def _neigh(ctx: Context) -> None:
    ctx.intent.switches["leaf-su1-r1"].neighbor.needed = 5000


INTENT_CASES: list[tuple[str, Callable[[Context], None]]] = [
    ("RF102", _pfc), ("RF107", _buffer), ("RF301", _speed), ("RF303", _rail), ("RF305", _loopback),
    ("RF307", _asn), ("RF309", _drop_session), ("RF310", _drop_session), ("RF401", _ar), ("RF402", _ar),
    ("RF403", _neigh), ("RF304", _dup),
]


@pytest.mark.parametrize(("rule", "mutate"), INTENT_CASES, ids=[c[0] for c in INTENT_CASES])
def test_rule_fires_on_intent(good: Context, rule: str, mutate: Callable[[Context], None]) -> None:
    assert ids(good, rule) == []
    good.__dict__.pop("port", None)
    mutate(good)
    found = run(good, select=[rule]).findings
    assert found and all(f.rule == rule for f in found)


def test_rf109_sonic_without_explicit_map(good: Context) -> None:
    loaded = load(EXAMPLE)
    loaded.qos = loaded.qos.model_copy(update={"dscp_to_priority": {48: 6}})
    ctx = Context(loaded, deriver=Deriver(loaded, "sonic"))
    assert [f.rule for f in run(ctx, select=["RF109"]).findings] == ["RF109"]
    assert run(Context(load(EXAMPLE), deriver=Deriver(load(EXAMPLE), "sonic")), select=["RF109"]).findings == []


def test_every_rule_has_metadata() -> None:
    rules = all_rules()
    assert len({r.id for r in rules}) == len(rules) >= 25
    for r in rules:
        assert r.id[:2] == "RF" and r.id[2] in "1234" and r.title and r.explanation and r.fix


# -- select / ignore / waivers / exit codes ----------------------------------------------------------
def test_select_ignore_prefixes(good: Context) -> None:
    assert run(good, select=["RF2"]).rules == ["RF201", "RF202", "RF203", "RF204", "RF205"]
    assert "RF308" not in run(good, ignore=["RF30"]).rules


def test_waiver_marks_finding(tmp_path: Path) -> None:
    inv = inventory(tmp_path, switching={"neighbor": {"aging": "1200s"}},
                    lint={"waive": [{"rule": "RF404", "objects": ["switching"], "reason": "vendor ticket 42"}]})
    result = run(Context(load(inv)), select=["RF404"])
    assert result.findings and all(f.waived == "vendor ticket 42" for f in result.findings)
    assert not result.failed(Severity.info)


def test_readme_waiver_names_the_objects_of_a_grouped_finding(tmp_path: Path) -> None:
    """docs/lint.md: `lint: {waive: [{rule: RF404, objects: [leaf-su1-*], …}]}` waives the leaves of a finding
    reported once under `switching`; the spines stay a finding of their own."""
    inv = inventory(tmp_path, switching={"neighbor": {"aging": "1200s"}},
                    lint={"waive": [{"rule": "RF404", "objects": ["leaf-su1-*"], "reason": "lab leaves"}]})
    result = run(Context(load(inv)), select=["RF404"])
    got = [(f.object, f.message, f.waived) for f in result.findings]
    assert got == [
        ("switching", "ARP aging: expected at most 600 s, found 1200 s (on 2 switches: spine1, spine2)", None),
        ("switching", "ARP aging: expected at most 600 s, found 1200 s (on 4 switches: leaf-su1-r1, leaf-su1-r2, "
                      "leaf-su1-r3, …)", "lab leaves"),
    ]
    inv2 = inventory(tmp_path / "all", switching={"neighbor": {"aging": "1200s"}},
                     lint={"waive": [{"rule": "RF404", "objects": ["leaf-*", "spine?"], "reason": "lab"}]})
    assert [f.waived for f in run(Context(load(inv2)), select=["RF404"]).findings] == ["lab"]


def test_cli_exit_codes_and_formats(tmp_path: Path) -> None:
    r = CliRunner()
    assert r.invoke(app, ["lint", str(EXAMPLE)]).exit_code == 0
    bad = inventory(tmp_path, qos={"pfc_watchdog": {"enabled": False}})
    res = r.invoke(app, ["lint", str(bad), "--format", "github"])
    assert res.exit_code == 1
    assert res.output.startswith("::error file=") and "title=RF106 " in res.output
    assert r.invoke(app, ["lint", str(bad), "--ignore", "RF106"]).exit_code == 0
    fabric = str(Path(sys.executable).parent / "fabric")  # the real entry point maps InputError to 2
    assert subprocess.run([fabric, "lint", str(tmp_path / "nope")], capture_output=True).returncode == 2
    bad_sel = subprocess.run([fabric, "lint", str(EXAMPLE), "--select", "XX9"], capture_output=True, text=True)
    assert bad_sel.returncode == 2 and "XX9" in bad_sel.stderr
    assert subprocess.run([fabric, "lint", str(bad)], capture_output=True).returncode == 1
    data = json.loads(r.invoke(app, ["lint", str(bad), "--format", "json"]).output)
    assert data["summary"]["error"] >= 1 and data["findings"][0]["rule"] == "RF106"
    assert "RF101" in r.invoke(app, ["lint", "--list"]).output
    assert "Fix:" in r.invoke(app, ["lint", "--explain", "rf101"]).output


def test_junit_and_sarif_shape(tmp_path: Path) -> None:
    from lxml import etree

    from fabric.lint import output

    bad = inventory(tmp_path, qos={"pfc_watchdog": {"enabled": False}}, switching={"neighbor": {"aging": "1200s"}},
                    lint={"waive": [{"rule": "RF404", "objects": ["*"], "reason": "lab only"}]})
    result = run(Context(load(bad)))
    tree = etree.fromstring(output.to_junit(result, Severity.error).encode())
    names = [(c.get("classname"), c.get("name")) for c in tree.iter("testcase")]
    assert len(names) == len(set(names))
    assert tree.get("failures") == "1" and tree.get("skipped") == "1"
    sarif = json.loads(output.to_sarif(result))
    run0 = sarif["runs"][0]
    assert sarif["version"] == "2.1.0"
    assert {r["id"] for r in run0["tool"]["driver"]["rules"]} == set(result.rules)
    loc = run0["results"][0]["locations"][0]["physicalLocation"]
    assert loc["artifactLocation"]["uri"].endswith("qos.yaml") or loc["region"]["startLine"] >= 1
    assert any(r.get("suppressions") for r in run0["results"])


# -- --configs ----------------------------------------------------------------------------------------
def _render(tmp: Path, target: str) -> tuple[Path, Context]:
    from fabric.render import render_switch, write_tree

    loaded = load(EXAMPLE)
    ctx = Context(loaded, deriver=Deriver(loaded, target))
    write_tree(tmp / target, {f"switches/{n}": render_switch(sw, ctx.intent) for n, sw in ctx.intent.switches.items()})
    return tmp / target, ctx


@pytest.mark.parametrize("target", ["frr", "sonic"])
def test_rendered_configs_lint_clean(tmp_path: Path, target: str) -> None:
    root, ctx = _render(tmp_path, target)
    result = run(None, load_configs(root, ctx))
    assert not result.failed(Severity.warning), [(f.rule, f.message) for f in result.findings]
    assert not run(None, load_configs(root)).failed(Severity.warning)


def test_configs_hand_edited_sonic(tmp_path: Path) -> None:
    root, _ = _render(tmp_path, "sonic")
    path = root / "switches" / "leaf-su1-r1" / "config_db.json"
    db = json.loads(path.read_text())
    db["DSCP_TO_TC_MAP"]["ROCE"]["26"] = "0"
    del db["PFC_WD"]["Ethernet0"]
    path.write_text(json.dumps(db, indent=2, sort_keys=True))
    lines = path.read_text().splitlines()
    found = {(f.rule, f.item): f for f in run(None, load_configs(root)).findings}
    f101 = found[("RF101", "DSCP 26")]
    assert f101.object == "leaf-su1-r1" and lines[f101.line - 1].strip().startswith('"ROCE"')
    f106 = found[("RF106", "Ethernet0")]
    assert lines[f106.line - 1].strip().startswith('"Ethernet0"')


def test_configs_eos_nvue_frr_broken(tmp_path: Path) -> None:
    d = tmp_path / "cfg"
    d.mkdir()
    (d / "leaf1.cfg").write_text(
        "hostname leaf1\n"                                       # 1
        "qos map dscp 26 to traffic-class 3\n"                   # 2
        "qos map dscp 48 to traffic-class 6\n"                   # 3
        "arp aging timeout default 14400\n"                      # 4
        "interface Ethernet1/1\n"                                # 5
        "   mtu 1500\n"                                          # 6
        "   priority-flow-control on\n"                          # 7
        "   priority-flow-control priority 3 no-drop\n"          # 8
        "   tx-queue 3\n"                                        # 9
        "      bandwidth percent 50\n"                           # 10
        "      random-detect ecn minimum-threshold 1500 kbytes maximum-threshold 150 kbytes "
        "max-mark-probability 100\n"                             # 11
        "   tx-queue 0\n"                                        # 12
        "      bandwidth percent 50\n"                           # 13
        "   tx-queue 6\n"                                        # 14
        "      priority strict\n"                                # 15
        "router bgp 65101\n"                                     # 16
        "   neighbor interface Ethernet1/1 peer-group F remote-as 65000\n")
    (d / "leaf2.yaml").write_text(
        "- set:\n"                                               # 1
        "    qos:\n"                                             # 2
        "      roce: {enable: on}\n"                             # 3
        "      congestion-control:\n"                            # 4
        "        default-global:\n"                              # 5
        "          traffic-class:\n"                             # 6
        "            3: {ecn: disable}\n"                        # 7
        "    interface:\n"                                       # 8
        "      swp1:\n"                                          # 9
        "        link: {mtu: 9216}\n"                            # 10
        "        qos: {pfc-watchdog: {}}\n"                      # 11
        "      swp2:\n"                                          # 12
        "        link: {mtu: 9216}\n")                           # 13
    frr = "frr defaults datacenter\nrouter bgp 15169\n neighbor swp1 interface remote-as external\n"
    (d / "frr.conf").write_text(frr)
    result = run(None, load_configs(d))
    got = {(f.rule, f.object, f.item, f.line) for f in result.findings}
    assert ("RF104", "leaf1", "TC3", 11) in got  # min > max
    assert ("RF302", "leaf1", "Ethernet1/1", 5) in got
    assert ("RF404", "leaf1", "arp aging", 4) in got
    assert ("RF106", "leaf1", "Ethernet1/1", 5) in got
    assert ("RF104", "leaf2", "TC3", 7) in got
    assert ("RF106", "leaf2", "swp2", 12) in got
    assert ("RF106", "leaf2", "swp1", 9) not in got
    assert ("RF307", "cfg", "asn", 2) in got  # frr.conf takes its directory's name
    assert ("RF405", "cfg", "bgp", 2) in got


FORMATS = ["sarif", "junit", "json", "github"]


@pytest.fixture(scope="module")
def seeded_lint() -> dict[str, list[str]]:
    """`fabric lint` in each format under three hash seeds: one process per seed (the seed is the interpreter's)
    runs the CLI once per format (tests/inproc.py)."""
    import os

    code = ("import json, sys; from tests.inproc import fabric; print(json.dumps([fabric('lint', 'inventories/example',"
            " '--configs', 'tests/fixtures/running', '--format', f).stdout for f in sys.argv[1:]]))")
    return {seed: json.loads(subprocess.run([sys.executable, "-c", code, *FORMATS], capture_output=True, text=True,
                                            cwd=EXAMPLE.parent.parent, timeout=120, check=True,
                                            env={**os.environ, "PYTHONHASHSEED": seed}).stdout)
            for seed in ("1", "2", "3")}


@pytest.mark.parametrize("fmt", FORMATS)
def test_two_runs_give_byte_identical_output_whatever_the_hash_seed(seeded_lint: dict[str, list[str]],
                                                                    fmt: str) -> None:
    """Same input, same bytes: findings of several configs of one device tie on everything but their file,
    and were once ordered by the run's string hash seed (three SARIF digests for one input)."""
    outs = {run[FORMATS.index(fmt)] for run in seeded_lint.values()}
    assert len(outs) == 1 and len(next(iter(outs))) > 1000


def test_config_files_parsed_in_workers_equal_one_process_and_bad_files_are_problems(tmp_path: Path) -> None:
    from fabric.errors import InputError
    from fabric.lint.configs import parse_files

    root = Path("tests/fixtures/running")
    paths = [p for p in sorted(root.rglob("*")) if p.is_file()]
    assert len(paths) >= 2
    def plain(devices: list[Any]) -> list[Any]:  # a view's `at` is its device's method: compared by what it names
        assert all(d.qos is None or d.qos.at.__self__ is d for d in devices)
        return [dataclasses.replace(d, qos=d.qos and dataclasses.replace(d.qos, at=None)) for d in devices]

    assert plain(parse_files(paths, root, per_worker=1)) == plain(parse_files(paths, root, per_worker=10**6))
    bad = [tmp_path / "a" / "nvue.yaml", tmp_path / "b" / "nvue.yaml"]
    for p, text in zip(bad, ("set: [1\n", "set:\n  x: &a 1\n  y: *a\n"), strict=True):
        p.parent.mkdir()
        p.write_text(text)
    with pytest.raises(InputError) as exc:
        parse_files([*paths, *bad], tmp_path, per_worker=1)
    assert [p.file for p in exc.value.problems] == [str(bad[0])]


def test_configs_parser_comes_from_the_nos_table() -> None:
    """The NOS row names the files it renders and how a saved running config is named; nothing else."""
    from fabric.lint.configs import kind_of

    got = {n: kind_of(Path(n)) for n in ("config_db.json", "leaf1.json", "nvue-patch.yaml", "leaf1.yaml",
                                          "running-config.cfg", "leaf1.cfg", "frr.conf", "leaf1.conf",
                                          "sysctl.conf", "nv-set.txt", "interfaces.sh", "qos.sh", "leaf1.yml",
                                          "SOURCE.md")}
    assert got == {"config_db.json": "sonic", "leaf1.json": "sonic", "nvue-patch.yaml": "nvue", "leaf1.yaml": "nvue",
                   "running-config.cfg": "eos", "leaf1.cfg": "eos", "frr.conf": "frr", "leaf1.conf": "frr",
                   "sysctl.conf": None, "nv-set.txt": None, "interfaces.sh": None, "qos.sh": None,
                   "leaf1.yml": None, "SOURCE.md": None}
    assert kind_of(Path("leaf1.conf"), "frr") == "frr" and kind_of(Path("leaf1.json"), "eos") == "sonic"


def test_configs_device_numbers_against_the_policy(tmp_path: Path) -> None:
    """A config_db.json whose watchdog detects after 5000 ms and marks ECN from 500,000 B is not clean."""
    root, ctx = _render(tmp_path, "sonic")
    path = root / "switches" / "leaf-su1-r1" / "config_db.json"
    db = json.loads(path.read_text())
    db["PFC_WD"]["Ethernet0"]["detection_time"] = "5000"
    db["WRED_PROFILE"]["ROCE_TC3"]["green_min_threshold"] = "500000"
    path.write_text(json.dumps(db, indent=2, sort_keys=True))
    lines = path.read_text().splitlines()
    for c in (ctx, None):  # against the inventory's policy, and against the preset without one
        found = {(f.rule, f.item, f.message): f for f in run(None, load_configs(root, c)).findings
                 if f.object == "leaf-su1-r1"}
        wd = found[("RF106", "Ethernet0", "PFC watchdog detection time on Ethernet0: expected 200 ms (the policy), "
                                          "found 5000 ms")]
        assert lines[wd.line - 1].strip().startswith('"Ethernet0"')
        ecn = found[("RF104", "TC3", "ECN min threshold on TC3: expected 150,000 B (the policy), found 500,000 B")]
        assert lines[ecn.line - 1].strip().startswith('"ROCE_TC3"')


def test_configs_sonic_azure_map_defined_and_bound_is_explicit(tmp_path: Path) -> None:
    """RF109 is for a SONiC config that leaves DSCP to the NOS default; the S6000 dump defines AZURE and binds it
    on every port (in the old `[TABLE|name]` reference form too): its content is judged (RF101), not its name."""
    corpus = FIXTURES / "brownfield" / "sonic"
    d = tmp_path / "cfg"
    d.mkdir()
    shutil.copy(corpus / "dell-s6000-tor.json", d / "str-s6000-acs-14.json")
    db = json.loads((corpus / "dell-s6000-tor.json").read_text())
    db["PORT_QOS_MAP"] = {p: {**v, "dscp_to_tc_map": "[DSCP_TO_TC_MAP|AZURE]"} for p, v in db["PORT_QOS_MAP"].items()}
    (d / "old-refs.json").write_text(json.dumps(db, indent=2))
    rules = {(f.object, f.rule) for f in run(None, load_configs(d)).findings}
    assert not {r for r in rules if r[1] == "RF109"}
    assert {("str-s6000-acs-14", "RF102"), ("old-refs", "RF102"), ("str-s6000-acs-14", "RF104")} <= rules
    del db["PORT_QOS_MAP"]["Ethernet4"]["dscp_to_tc_map"]  # one port left to the default: that is RF109
    (d / "old-refs.json").write_text(json.dumps(db, indent=2))
    assert ("old-refs", "RF109") in {(f.object, f.rule) for f in run(None, load_configs(d)).findings}


def test_configs_parsed_while_the_inventory_is_derived_equal_the_parse_after_it(tmp_path: Path) -> None:
    """`lint INV --configs DIR` starts parsing DIR before deriving INV (`EarlyParse`); files several NOS fit wait
    for the switches' targets. The devices, and the problems of malformed files, are the same and in the same
    order as the parse after deriving."""
    from fabric.errors import InputError
    from fabric.lint.configs import EarlyParse, _one_kind, load_configs

    root = tmp_path / "configs"
    shutil.copytree("tests/fixtures/running", root)
    ctx = Context(load(Path("inventories/example")))
    def plain(cs: Any) -> list[Any]:
        return [dataclasses.replace(d, qos=d.qos and dataclasses.replace(d.qos, at=None)) for d in cs.devices]

    want = plain(load_configs(root, ctx))
    for per_worker in (1, 10**6):  # forked workers, and one process
        early = EarlyParse(root, per_worker=per_worker)
        assert plain(load_configs(root, ctx, early)) == want
        early.close()
    assert all(_one_kind(p) for p in root.rglob("*.*"))
    with pytest.MonkeyPatch.context() as m:  # as if several NOS fitted *.yaml: those parsed once targets are known
        m.setattr("fabric.lint.configs._one_kind", lambda p: p.suffix != ".yaml")
        early = EarlyParse(root, per_worker=1)
        assert early.paths != early.early and plain(load_configs(root, ctx, early)) == want
    for p, text in (("leaf9.yaml", "set: [1\n"), ("leaf8.json", "[1, 2"), ("leaf7.yaml", "- 5\n")):
        (root / p).write_text(text)
    with pytest.raises(InputError) as exc:
        load_configs(root, ctx)
    with pytest.raises(InputError) as early_exc:
        load_configs(root, ctx, EarlyParse(root, per_worker=1))
    assert [str(p) for p in early_exc.value.problems] == [str(p) for p in exc.value.problems]
    assert len(exc.value.problems) == 3
