"""The foundation commands end to end through the console entry point."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import jsonschema
import yaml

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = ROOT / "inventories" / "example"


def fabric(*args: str, timeout: int = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", "from fabric.cli import main; main()", *args],
                          capture_output=True, text=True, timeout=timeout, cwd=ROOT)


def test_validate() -> None:
    p = fabric("validate", str(EXAMPLE))
    assert p.returncode == 0, p.stderr
    assert "example: valid — 6 switches, 4 hosts, 24 links, 16 rail NICs" in p.stdout


def test_render_only_and_unknown_device(tmp_path: Path) -> None:
    p = fabric("render", str(EXAMPLE), "-o", str(tmp_path), "--only", "spine1", "--only", "gpu-su1-02")
    assert p.returncode == 0, p.stderr
    assert sorted(str(x.relative_to(tmp_path)) for x in tmp_path.rglob("*") if x.is_file()) == [
        *(f"hosts/gpu-su1-02/{f}" for f in ("host.json", "nccl.env", "netplan.yaml", "roce-qos.service",
                                            "roce-qos.sh", "roce-setup.sh", "sysctl.conf")),
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
    p = fabric("explain", str(example_copy), "leaf-su1-r1", "qos.ecn.3", "--format", "json")
    assert p.returncode == 0, p.stderr
    rows = {r["path"]: r for r in json.loads(p.stdout)}
    assert rows["qos.ecn.3.min_bytes"]["value"] == "200000"
    assert rows["qos.ecn.3.min_bytes"]["origin"] == f"override ({example_copy}/qos.yaml:5)"
    assert rows["qos.ecn.3.max_bytes"]["origin"].startswith("preset nvidia-roce")
    hr = json.loads(fabric("explain", str(EXAMPLE), "spine1", "ports[0].headroom.xoff", "--format", "json").stdout)
    assert hr[0]["origin"].startswith("formula buffer_headroom_mellanox.lua: speed 400G, cable 40m")
    tos = json.loads(fabric("explain", str(EXAMPLE), "gpu-su1-01", "nic_qos.roce_tos", "--format", "json").stdout)
    assert tos == [{"path": "nic_qos.roce_tos", "value": "106",
                    "origin": "formula: qos.roce_dscp 26 << 2 | ECT(0) 2 = 106"}]
    bad = fabric("explain", str(EXAMPLE), "spine7")
    assert bad.returncode == 2 and "found 'spine7'" in bad.stderr


def test_schema_validates_the_examples() -> None:
    p = fabric("schema")
    assert p.returncode == 0
    schema = json.loads(p.stdout)
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
    assert "4096 hosts, 1792 switches (1024 leaves, 512 spines, 256 super-spines)" in p.stdout
    topo = yaml.safe_load((out / "fabric.yaml").read_text())["topology"]
    assert topo["pods"] == 16 and topo["super_spines"] == 8


def test_generate_refuses_with_arithmetic(tmp_path: Path) -> None:
    p = fabric("generate", "gpu-rail", "--gpus", "32768", "--spines", "200", "-o", str(tmp_path / "x"))
    assert p.returncode == 2 and "Traceback" not in p.stderr
    assert "spines × uplinks ≤ 96 free leaf ports (128-port leaf − 32 hosts), found 200 × 1 = 200" in p.stderr


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
