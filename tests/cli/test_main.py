"""The foundation commands end to end through the console entry point."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import jsonschema
import pytest
import typer
import yaml

from tests import inproc
from tests.support.paths import ROOT

EXAMPLE = ROOT / "inventories" / "example"


def fabric(*args: str, timeout: int = 120) -> subprocess.CompletedProcess[str]:
    """The command in this process (tests.inproc: the same entry point, without a Python start-up per call)."""
    return inproc.fabric(*args)


def test_validate() -> None:
    p = fabric("validate", str(EXAMPLE))
    assert p.returncode == 0, p.stderr
    assert "example: valid — 6 switches, 4 hosts, 24 links, 16 rail NICs" in p.stdout


def test_render_only_and_unknown_device(tmp_path: Path) -> None:
    p = fabric("render", str(EXAMPLE), "-o", str(tmp_path), "--only", "spine1", "--only", "gpu-su1-02")
    assert p.returncode == 0, p.stderr
    assert sorted(str(x.relative_to(tmp_path)) for x in tmp_path.rglob("*") if x.is_file()) == [
        *(f"hosts/gpu-su1-02/{f}" for f in ("host.json", "nccl.env", "roce-setup.sh")),
        "switches/spine1/frr.conf", "switches/spine1/interfaces.sh", "switches/spine1/qos.sh"]
    bad = fabric("render", str(EXAMPLE), "-o", str(tmp_path), "--only", "spine9")
    assert bad.returncode == 2 and bad.stderr.strip() == "error: --only: expected a device of example, found spine9"


def test_offline_plan_json() -> None:
    p = fabric("plan", "--offline", str(EXAMPLE), "--format", "json")
    assert p.returncode == 0, p.stderr
    rows = {r["device"]: r for r in json.loads(p.stdout)}
    assert rows["leaf-su1-r1"]["asn"] == 65101 and rows["spine2"]["asn"] == 65000
    assert rows["leaf-su1-r1"]["l3"] == "10.100.0.1/24"
    assert rows["gpu-su1-04"]["l3"].split(", ")[0] == "10.100.0.5/24"


def test_explain_origins(example_copy: Path) -> None:
    (example_copy / "qos.yaml").write_text("qos:\n  preset: nvidia-roce\n  ecn:\n    3:\n      min_bytes: 200KB\n")
    p = fabric("explain", str(example_copy), "leaf-su1-r1", "qos.queues.3", "--format", "json")
    assert p.returncode == 0, p.stderr
    rows = {r["path"]: r for r in json.loads(p.stdout)}
    assert rows["qos.queues.3.ecn.min_bytes"]["value"] == "200000"
    assert rows["qos.queues.3.ecn.min_bytes"]["origin"] == f"override ({example_copy}/qos.yaml:5)"
    assert rows["qos.queues.3.ecn.max_bytes"]["origin"].startswith("preset nvidia-roce")
    assert rows["qos.queues.3.weight"] == {"path": "qos.queues.3.weight", "value": "50",
                                           "origin": rows["qos.queues.3.ecn.max_bytes"]["origin"]}
    assert rows["qos.queues.3.lossless"]["value"] == "True"
    hr = json.loads(fabric("explain", str(EXAMPLE), "spine1", "ports[0].headroom.xoff", "--format", "json").stdout)
    assert hr[0]["origin"].startswith("formula buffer_headroom_mellanox.lua: speed 400G, cable 40m")
    for needed in ("cell 192 B", "pipeline latency 19 KB", "pause quanta 905", "lossless MTU 1024", "small packets"):
        assert needed in hr[0]["origin"], needed
    rows = {r["path"]: r["origin"] for r in json.loads(fabric("explain", str(EXAMPLE), "leaf-su1-r1", "--format",
                                                              "json").stdout)}
    assert rows["bgp.keepalive"] == f"inventory ({EXAMPLE}/switching.yaml:6)"  # values the inventory sets: file:line
    assert rows["ports[0].cable_m"] == f"inventory ({EXAMPLE}/fabric.yaml:18)"
    assert rows["bgp.max_paths"] == "default (switching.bgp.max_paths)"
    host = {r["path"]: r["origin"] for r in json.loads(fabric("explain", str(EXAMPLE), "gpu-su1-01", "--format",
                                                              "json").stdout)}
    assert host["rails[1].netdev"] == f"inventory ({EXAMPLE}/hosts.yaml:8)" and host["gpus"].startswith("inventory")
    tos = json.loads(fabric("explain", str(EXAMPLE), "gpu-su1-01", "nic_qos.roce_tos", "--format", "json").stdout)
    assert tos == [{"path": "nic_qos.roce_tos", "value": "106",
                    "origin": "formula: qos.roce_dscp 26 << 2 | ECT(0) 2 = 106"}]
    bad = fabric("explain", str(EXAMPLE), "spine7")
    assert bad.returncode == 2 and "found 'spine7'" in bad.stderr


def test_schema_validates_the_examples() -> None:
    p = fabric("schema")
    assert p.returncode == 0
    schema = json.loads(p.stdout)
    files = sorted((ROOT / "inventories").glob("*/*.yaml"))
    assert len(files) >= 25
    for f in files:  # every file on its own, as an editor's YAML language server checks it
        jsonschema.validate(yaml.safe_load(f.read_text()) or {}, schema)
    roles = schema["$defs"]["RoleSettings"]["properties"]
    assert "sn5600" in roles["platform"]["enum"] and set(roles["target"]["enum"]) == {"sonic", "nvue", "eos", "frr"}
    with pytest.raises(jsonschema.ValidationError, match="sn9999"):
        jsonschema.validate({"roles": {"leaf": {"platform": "sn9999", "target": "frr"}}}, schema)
    for inv in (ROOT / "inventories").iterdir():
        doc: dict = {}
        for f in sorted(inv.glob("*.yaml")):
            doc.update(yaml.safe_load(f.read_text()) or {})
        jsonschema.validate(doc, schema)
    doc["switching"]["mtux"] = 1
    try:
        jsonschema.validate(doc, schema)
    except jsonschema.ValidationError as exc:
        assert "mtux" in exc.message
    else:
        raise AssertionError("unknown key accepted by the schema")


def test_explain_of_a_large_device_is_one_row_a_line(tmp_path: Path) -> None:
    """A device of thousands of rows (a leaf of 512 GPUs: 2,395) is written as aligned lines, one row a line, the
    same rows as JSON (rich's table folded them into 7,561 lines, at 0.2 ms a row); a small one stays rich's table."""
    inv = tmp_path / "g512"
    assert fabric("generate", "gpu-rail", "--gpus", "512", "-o", str(inv)).returncode == 0
    rows = json.loads(fabric("explain", str(inv), "leaf-su1-r1", "--format", "json").stdout)
    p = fabric("explain", str(inv), "leaf-su1-r1")
    assert p.returncode == 0, p.stderr
    lines = p.stdout.splitlines()
    assert lines[0] == f"leaf-su1-r1 ({len(rows):,} rows)" and len(rows) > 2000
    assert lines[1].split() == ["path", "value", "origin"] and set(lines[2].replace(" ", "")) == {"-"}
    assert len(lines) == 3 + len(rows)
    for line, row in zip(lines[3:], rows, strict=True):
        assert line.startswith(row["path"] + " ") and line.endswith("  " + row["origin"]), line
        assert f"  {row['value']}  " in line or not row["value"], line
    value_at = lines[1].index("value")  # the columns line up: every short path and value at its column
    assert all(ln[value_at - 2:value_at] == "  " for ln in lines[3:] if len(ln.split("  ")[0]) < value_at - 2)
    small = fabric("explain", str(EXAMPLE), "leaf-su1-r1")
    assert small.returncode == 0 and "┃ path" in small.stdout  # 298 rows: the rich table


def test_generate_small_fabric(tmp_path: Path) -> None:
    out = tmp_path / "g2k"
    p = fabric("generate", "gpu-rail", "--gpus", "2048", "-o", str(out))
    assert p.returncode == 0, p.stderr
    assert "256 hosts, 96 switches (64 leaves, 32 spines, 0 super-spines)" in p.stdout
    assert fabric("validate", str(out)).returncode == 0


def test_generate_32k_needs_three_tiers(tmp_path: Path) -> None:
    out = tmp_path / "g32k"
    p = fabric("generate", "gpu-rail", "--gpus", "32768", "-o", str(out), timeout=300)
    assert p.returncode == 0, p.stderr
    # (the line names the output directory, so where the terminal wraps it depends on the path: join the words)
    assert "4096 hosts, 1792 switches (1024 leaves, 512 spines, 256 super-spines)" in " ".join(p.stdout.split())
    topo = yaml.safe_load((out / "fabric.yaml").read_text())["topology"]
    assert topo["pods"] == 16 and topo["super_spines"] == 8


def test_generate_refuses_with_arithmetic(tmp_path: Path) -> None:
    p = fabric("generate", "gpu-rail", "--gpus", "32768", "--spines", "200", "-o", str(tmp_path / "x"))
    assert p.returncode == 2 and "Traceback" not in p.stderr
    assert "spines × uplinks ≤ 96 free leaf ports (128-port leaf − 32 hosts), found 200 × 1 = 200" in p.stderr


def test_generate_two_pods_of_a_256_port_switch_stays_within_64_links_per_super_spine(tmp_path: Path) -> None:
    """Two pods of linux-frr (256 ports): a spine has 224 ports up; the generator spreads them over enough super-spines
    that each takes at most 64 parallel links (the model's limit), so the inventory it writes validates; a
    --super-spines too few for that is refused with the arithmetic."""
    out = tmp_path / "frr2"
    p = fabric("generate", "gpu-rail", "--gpus", "4096", "--pods", "2", "--platform", "linux-frr", "-o", str(out))
    assert p.returncode == 0, p.stderr
    assert fabric("validate", str(out)).returncode == 0
    topo = yaml.safe_load((out / "fabric.yaml").read_text())["topology"]
    assert topo["pods"] == 2 and topo["uplinks_per_super_spine"] <= 64, topo
    p = fabric("generate", "gpu-rail", "--gpus", "4096", "--pods", "2", "--platform", "linux-frr", "--super-spines",
               "2", "-o", str(tmp_path / "x"))
    assert p.returncode == 2 and p.stderr == (
        "error: fabric generate: expected links from a spine to each super-spine ≤ 64, found 448 free spine ports / 2 "
        "super-spines = 224; use more --super-spines\n"), p.stderr


def test_generate_validates_before_it_writes_and_never_overwrites(tmp_path: Path) -> None:
    """Impossible input is refused with the arithmetic and leaves nothing on disk; an existing inventory
    is replaced only with --force."""
    out = tmp_path / "g"
    p = fabric("generate", "gpu-rail", "--gpus", "512", "--pods", "3", "-o", str(out))
    assert p.returncode == 2 and "Traceback" not in p.stderr
    assert p.stderr == ("error: fabric generate: expected --pods a divisor of the 2 scalable units (512 GPUs / 8 per "
                        "host / 32 hosts per SU), found 3\n")
    p = fabric("generate", "gpu-rail", "--gpus", "512", "--target", "junos", "-o", str(out))
    assert p.returncode == 2
    assert p.stderr == "error: fabric generate: --target: expected 'sonic', 'nvue', 'eos' or 'frr', found 'junos'\n"
    assert not out.exists() and list(tmp_path.iterdir()) == []  # no inventory, no staging left behind
    assert fabric("generate", "gpu-rail", "--gpus", "512", "-o", str(out)).returncode == 0
    before = (out / "fabric.yaml").read_text()
    p = fabric("generate", "gpu-rail", "--gpus", "1024", "-o", str(out))
    assert p.returncode == 2 and "expected a new or empty directory (--force replaces it)" in p.stderr
    assert (out / "fabric.yaml").read_text() == before
    assert fabric("generate", "gpu-rail", "--gpus", "1024", "-o", str(out), "--force").returncode == 0
    assert "1024 GPUs" in (out / "fabric.yaml").read_text() and sorted(p.name for p in tmp_path.iterdir()) == ["g"]


def test_two_tier_that_cannot_be_cabled_is_refused(example_copy: Path) -> None:
    text = (example_copy / "fabric.yaml").read_text()
    text = text.replace("hosts_per_su: 4", "hosts_per_su: 40").replace(
        "leaf: {platform: linux-frr, target: frr}", "leaf: {platform: sn4700, target: frr}")
    (example_copy / "fabric.yaml").write_text(text)
    p = fabric("validate", str(example_copy))
    assert p.returncode == 2
    assert p.stderr == (f"error: {example_copy}/fabric.yaml:15: roles.leaf.platform: expected at most 32 ports per "
                        "leaf (sn4700 32 ports × 1), found 42 needed = 40 hosts + 2 spines × 1 uplinks; add a tier "
                        "(pods and super_spines) or use higher-radix switches or a breakout\n")


def test_usage_error_exit_2() -> None:
    p = fabric("render")
    assert p.returncode == 2 and "Traceback" not in p.stderr


def test_show_prints_one_device_as_render_writes_it(tmp_path: Path) -> None:
    """`fabric show` prints a device's file byte for byte as `fabric render --all` writes it."""
    assert fabric("render", str(EXAMPLE), "-o", str(tmp_path), "--all", "--only", "leaf-su1-r1",
                  "--only", "gpu-su1-01").returncode == 0
    p = fabric("show", str(EXAMPLE), "leaf-su1-r1")
    assert p.returncode == 0 and p.stdout == (tmp_path / "switches/leaf-su1-r1/frr.conf").read_text()
    p = fabric("show", str(EXAMPLE), "gpu-su1-01", "netplan.yaml")
    assert p.returncode == 0 and p.stdout == (tmp_path / "hosts/gpu-su1-01/netplan.yaml").read_text()
    p = fabric("show", str(EXAMPLE), "spine1", "--list")
    assert p.stdout.split() == ["frr.conf", "interfaces.sh", "qos.sh"]
    p = fabric("show", str(EXAMPLE), "spine1", "config_db.json")
    assert p.returncode == 2
    assert p.stderr == ("error: file: expected one of frr.conf, interfaces.sh, qos.sh for spine1, "
                        "found 'config_db.json'\n")
    assert fabric("show", str(EXAMPLE), "spine9").returncode == 2


def test_help_lists_every_command_without_importing_them() -> None:
    """`fabric --help` and `--version` import no command module (start-up), and the listing read from
    source names every command and group with the short help the full app gives it."""
    from fabric.cli import app
    from fabric.cli.main import build

    full = {c.name: c.get_short_help_str(limit=300) for c in typer.main.get_command(app).commands.values()}
    listed = {c.name: c.get_short_help_str(limit=300)
              for c in typer.main.get_command(build(listing=True)).commands.values()}
    assert listed == full and len(full) >= 23
    probe = ("import atexit, json, sys; from fabric.cli import main; atexit.register(lambda: print(json.dumps("
             "[m for m in sys.modules if m.startswith(('fabric.', 'pydantic'))]))); "
             "main()")
    for args in (["--help"], ["--version"], []):
        p = subprocess.run([sys.executable, "-c", probe, *args], capture_output=True, text=True, timeout=60, cwd=ROOT)
        assert p.returncode in (0, 2), p.stderr
        loaded = json.loads(p.stdout.strip().splitlines()[-1])
        light = {"fabric.cli", "fabric.cli.main", "fabric.cli.console", "fabric.errors", "fabric.fast",
                 "fabric.fast.batch"}
        assert set(loaded) <= light, (args, loaded)


def test_the_host_agents_commands_do_not_import_the_site_layer() -> None:
    """`fabric host plan|apply`, the agent every acceptance run and fleet push starts on each host, imports neither
    the site layer (fabric.access, what opens an inventory's devices) nor the renderers and jinja2 behind it: they
    cost it about 0.3 CPU-s of its 0.6 per start; only the fleet commands (`hosts …`) open a site."""
    probe = ("import atexit, json, sys; from fabric.cli import main; atexit.register(lambda: print(json.dumps("
             "sorted(sys.modules)))); main()")
    for command in ("plan", "apply"):
        p = subprocess.run([sys.executable, "-c", probe, "host", command, "--help"], capture_output=True, text=True,
                           timeout=60, cwd=ROOT)
        assert p.returncode == 0, p.stderr
        loaded = set(json.loads(p.stdout.strip().splitlines()[-1]))
        assert "fabric.cli.host" in loaded
        assert not loaded & {"fabric.access", "fabric.render", "fabric.cli.site", "jinja2"}, command


def test_the_host_agents_run_imports_one_hosts_intent_and_the_parsers_it_reads(tmp_path: Path) -> None:
    """A host agent's run (`host plan --intent host.json`) validates one host's intent and reads this host: it
    imports neither the inventory's models, the YAML loader and PyYAML, the platform table, the parsers of outputs
    it never reads, nor rich (each 10-60 ms of every start on every host)."""
    from fabric.design.load import load_fabric

    intent = tmp_path / "host.json"
    intent.write_text(load_fabric(EXAMPLE).intent.hosts["gpu-su1-01"].model_dump_json())
    probe = ("import atexit, json, sys; from fabric.cli import main; atexit.register(lambda: print(json.dumps("
             "sorted(sys.modules)))); main()")
    # a plan reads this machine and changes nothing (its rails are missing here: exit 1), sysfs from an empty tree
    p = subprocess.run([sys.executable, "-c", probe, "host", "plan", "--sysfs-root", str(tmp_path), "--intent",
                        str(intent)], capture_output=True, text=True, timeout=60, cwd=ROOT)
    assert p.returncode in (0, 1) and "host gpu-su1-01: plan" in p.stdout and "Traceback" not in p.stderr, p.stderr
    loaded = set(json.loads(p.stdout.strip().splitlines()[-1]))
    assert {"fabric.host.agent", "fabric.design.intent", "fabric.parsers.mlnx_qos", "pyroute2"} <= loaded
    never = {"yaml", "fabric.model.inventory", "fabric.model.source", "fabric.model.platforms", "fabric.access",
             "fabric.parsers.nccl", "fabric.parsers.perftest", "fabric.parsers.iperf3", "fabric.parsers.ethtool",
             "rich.console", "fabric.cli.progress"}  # it prints through typer; rich only for an error line
    assert not loaded & never, loaded & never


def assert_prints_ok(code: str) -> None:
    """`code` in a fresh interpreter (what it imports is the point) ends by printing `ok`."""
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert p.returncode == 0 and p.stdout.strip() == "ok", p.stderr


def test_netmiko_is_imported_without_invoke() -> None:
    """paramiko imports invoke (about 0.08 CPU-s) for `Match exec` in an ssh_config file alone, which netmiko reads
    only when given `ssh_config_file`: the tool never gives it, imports netmiko without invoke (every process that
    reaches a switch), and `import invoke` still works afterwards."""
    code = ("import sys; from fabric.access import Credentials, SwitchEndpoint, load_netmiko, netmiko_params\n"
            "load_netmiko(); import netmiko, paramiko.config\n"
            "assert 'invoke' not in sys.modules and paramiko.config.invoke is None\n"
            "ep = SwitchEndpoint(device='leaf1', target='frr', address='192.0.2.1', device_type='linux', intended='')\n"
            "for kh in ('/dev/null', None):\n"
            "    assert 'ssh_config_file' not in netmiko_params(Credentials(username='u', known_hosts=kh), ep, "
            "timeout=1)\n"
            "import invoke; print('ok')")
    assert_prints_ok(code)


def test_a_push_to_sonic_or_nvue_imports_no_jinja() -> None:
    """SONiC and NVUE configs are written without templates: rendering their switches, as a push does for each
    endpoint, imports no Jinja (about 0.02 CPU-s); FRR's templates still import it."""
    code = ("import sys; from pathlib import Path; from fabric.design.load import load_fabric\n"
            "from fabric.render import render_switch\n"
            "for inv in ('sonic-example', 'h100-400g'):\n"
            "    f = load_fabric(Path('inventories') / inv).intent\n"
            "    for sw in f.switches.values():\n"
            "        assert render_switch(sw, f, extras=False)\n"
            "assert 'jinja2' not in sys.modules\n"
            "f = load_fabric(Path('inventories/example')).intent\n"
            "render_switch(next(iter(f.switches.values())), f)\n"
            "assert 'jinja2' in sys.modules; print('ok')")
    assert_prints_ok(code)


LOGS = ROOT / "tests" / "fixtures" / "logs"


def _flaps(tmp_path: Path) -> str:
    """A kernel log (tests/fixtures/logs/kernel_link_flap.log) with the flaps of an inventory host and of a host of
    another domain: diagnose --scheduler has remediation lines and a refusal to say."""
    flap = (LOGS / "kernel_link_flap.log").read_text()
    log = tmp_path / "kern.log"
    log.write_text(flap.replace("gpu-c12", "gpu-su1-02") + flap.replace("gpu-c12", "gpu-su1-01.evil.example"))
    return str(log)


def _github(text: str) -> list[str]:
    """GitHub workflow commands: every line `::notice|warning|error file=…::message`."""
    assert text and all(line.startswith(("::notice ", "::warning ", "::error ")) for line in text.splitlines()), text
    return text.splitlines()


def _junit(text: str) -> object:
    from xml.etree import ElementTree

    root = ElementTree.fromstring(text.encode())
    assert root.tag in ("testsuite", "testsuites"), text[:200]
    return root


def _sarif(text: str) -> object:
    doc = json.loads(text)
    assert doc["version"] == "2.1.0" and doc["runs"], text[:200]
    return doc


@pytest.mark.parametrize(("args", "parse"), [
    (["lint", "{inv}", "-f", "json"], json.loads),
    (["lint", "{inv}", "-f", "junit"], _junit),
    (["lint", "{inv}", "-f", "sarif"], _sarif),
    (["lint", "{inv}", "-f", "github"], _github),
    (["plan", "{inv}", "--offline", "--format", "json"], json.loads),
    (["explain", "{inv}", "leaf-su1-r1", "qos", "--format", "json"], json.loads),
    (["diagnose", "-f", "json", "{log}"], json.loads),
    (["diagnose", "-f", "json", "--inventory", "{inv}", "--scheduler", "slurm,kubernetes", "{log}"], json.loads),
    (["parse", "nccl", str(ROOT / "tests/fixtures/samples/extra_nccl_all_reduce_legacy_format.txt")], json.loads),
])
def test_machine_formats_keep_stdout_machine_readable(args: list[str], parse, tmp_path: Path) -> None:
    """stdout of a machine format is that format and nothing else (parsed whole, strictly); what a person reads
    (remediation commands, refusals, summaries) goes to stderr."""
    p = fabric(*(a.format(inv=EXAMPLE, log=_flaps(tmp_path)) for a in args))
    assert p.returncode in (0, 1) and "Traceback" not in p.stderr, p.stderr
    parse(p.stdout)
    if "--scheduler" in args:
        assert "gpu-su1-01.evil.example: not remediated: not an inventory host" in p.stderr
        assert "scontrol update NodeName=gpu-su1-02 State=DRAIN" in p.stderr
