"""`fabric discover --lldp DIR --running DIR -o NEWINV` on the shipped inventories: each is rendered, its LLDP
made as each NOS prints it (tests/support/lldp_outputs.py, after the real outputs in tests/fixtures/lldp), its
rendered switch configs saved as `fabric fetch` names them; the draft must validate, `plan --running` must show
every switch unchanged, and the draft's switch configs must be the original's, byte for byte.

What the draft cannot know and so renders differently on hosts (asserted line by line in `_explained`):
- the host management interface and the management network's prefix: neither is in LLDP of the rail ports nor in
  a switch config (the draft says `eth0`-by-default and 198.18.0.0/16, guessed);
- on FRR only, the host link speed: frr.conf sets no port speed (the draft guesses 400G and says so).
Cable lengths, RDMA names, GPUs and host MTU are guessed too, and equal the shipped inventories' by design of the
guesses (5m/40m, mlx5_<rail-1>, one GPU per rail, 9000); nothing of them is in a switch config.
"""

from __future__ import annotations

import filecmp
import json
import shutil
from functools import cache
from pathlib import Path

import pytest

from fabric.design.load import load_deriver
from fabric.design.topology import Topo
from fabric.nos import NOS
from tests.inproc import fabric
from tests.support import lldp_outputs as L

ROOT = Path(__file__).resolve().parents[1]
INVENTORIES = ["example", "sonic-example", "eos-example", "h100-400g"]


@cache
def topo(inv: Path) -> Topo:
    return load_deriver(inv).topo


def saved(inv: Path, tmp: Path) -> tuple[Path, Path, Path]:
    """(rendered tree, LLDP dir, running dir) of the fabric `inv` describes, cabled as it says."""
    rendered, lldp, running = tmp / "rendered", tmp / "lldp", tmp / "running"
    result = fabric("render", inv, "-o", rendered)
    assert result.returncode == 0, result.stderr
    L.write(topo(inv), L.hall(topo(inv)), lldp)
    running.mkdir()
    for name, sw in topo(inv).switches.items():
        nos = NOS[sw.target]
        shutil.copy(rendered / "switches" / name / nos.intended, running / f"{name}{nos.running_suffix}")
    return rendered, lldp, running


def discover(lldp: Path, running: Path, out: Path, *args: str):
    return fabric("discover", "--lldp", lldp, "--running", running, "-o", out, *args)


def refused(lldp: Path, running: Path, out: Path, *messages: str) -> None:
    """`discover` exits 2 without a traceback, says each of `messages`, and writes nothing at `out`."""
    result = discover(lldp, running, out)
    assert result.returncode == 2 and "Traceback" not in result.stderr
    for message in messages:
        assert message in result.stderr, result.stderr
    assert not out.exists()


def same_tree(a: Path, b: Path) -> list[str]:
    """Files that differ or exist on one side only."""
    cmp = filecmp.dircmp(a, b)
    out = [str(a / n) for n in cmp.left_only + cmp.right_only + cmp.diff_files + cmp.funny_files]
    return out + [f for sub in cmp.subdirs for f in same_tree(a / sub, b / sub)]


EXPLAINED = ("management_interface", "management_address", "NCCL_SOCKET_IFNAME", "The management interface")


def _explained(original: Path, draft: Path, frr: bool) -> list[str]:
    """Host lines that differ for a reason other than those of the module docstring."""
    out = []
    for path in sorted(p for p in original.rglob("*") if p.is_file()):
        mine = (draft / path.relative_to(original)).read_text().splitlines()
        for a, b in zip(path.read_text().splitlines(), mine, strict=True):
            speed = frr and ('"speed"' in a or "G to leaf-" in a)
            if a != b and not speed and not any(k in a for k in EXPLAINED):
                out.append(f"{path}: {a!r} != {b!r}")
    return out


@pytest.mark.parametrize("name", INVENTORIES)
def test_the_draft_renders_the_running_fabric(tmp_path: Path, name: str) -> None:
    inv = ROOT / "inventories" / name
    rendered, lldp, running = saved(inv, tmp_path)
    result = discover(lldp, running, tmp_path / "draft", "--name", name)
    assert result.returncode == 0, result.stderr
    n = len(topo(inv).switches)
    assert f"{len(topo(inv).hosts)} hosts, {n} switches, {len(topo(inv).links)} links" in result.stdout
    assert "# guessed: cable lengths 5m host-leaf and 40m leaf-spine, not visible in LLDP" in (
        tmp_path / "draft" / "fabric.yaml").read_text()
    assert fabric("validate", tmp_path / "draft").returncode == 0
    plan = fabric("plan", tmp_path / "draft", "--running", running, "--format", "json")
    assert plan.returncode == 0, plan.stderr
    assert {d["status"] for d in json.loads(plan.stdout)["devices"]} == {"unchanged"}
    assert fabric("render", tmp_path / "draft", "-o", tmp_path / "again").returncode == 0
    assert same_tree(rendered / "switches", tmp_path / "again" / "switches") == []
    frr = topo(inv).switches["spine1"].target == "frr"
    assert _explained(rendered / "hosts", tmp_path / "again" / "hosts", frr) == []


def test_hosts_that_print_no_lldp_are_found_on_the_leaves(tmp_path: Path) -> None:
    """Where hosts run no lldpd, their NICs come from what the leaves show (the port description lldpd sends is
    the netdev on a Linux host; here the leaves' view of the sonic-example hosts)."""
    inv = ROOT / "inventories" / "sonic-example"
    _, lldp, running = saved(inv, tmp_path)
    for host in topo(inv).hosts:
        (lldp / f"{host}.lldpctl").unlink()
    result = discover(lldp, running, tmp_path / "draft")
    assert result.returncode == 0, result.stderr
    hosts = (tmp_path / "draft" / "hosts.yaml").read_text()
    assert "netdev: ens1f0np0\n        rail: 1" in hosts and "netdev: ens1f1np1\n        rail: 2" in hosts


def test_presets_found_and_custom_where_none_fits(tmp_path: Path) -> None:
    """The sonic-example fabric's QoS is the nvidia-roce preset with an ECN override; on the sonic-azure preset
    it is that preset; with RoCE on DSCP 24 and PFC on priority 4 no preset fits: `custom` with the values
    found. Each draft renders the same switch configs."""
    src = ROOT / "inventories" / "sonic-example"
    sonic = (src / "qos.yaml").read_text()
    assert "min_bytes: 100KB" in sonic
    custom = ("qos:\n  preset: custom\n  trust: dscp\n  dscp_to_priority: {24: 4, 48: 6}\n  default_priority: 0\n"
              "  priority_to_tc: {0: 0, 1: 0, 2: 0, 3: 0, 4: 4, 5: 0, 6: 6, 7: 0}\n  lossless_priorities: [4]\n"
              "  roce_dscp: 24\n  cnp_dscp: 48\n  cnp_priority: 6\n  ets_strict: [6]\n  ets_dwrr: {0: 40, 4: 60}\n"
              "  ecn:\n    0: {min_bytes: 150000, max_bytes: 1500000, probability: 100}\n"
              "    4: {min_bytes: 200000, max_bytes: 1000000, probability: 50}\n"
              "  pfc_watchdog: {detection: 200ms, restoration: 200ms, action: drop, poll_interval: 100ms}\n"
              "  headroom: {mode: static, small_packet_percentage: 100, lossless_mtu: 1024}\n")
    for case, qos, found in (("override", sonic, "preset: nvidia-roce"), ("azure", "qos:\n  preset: sonic-azure\n",
                             "preset: sonic-azure"), ("custom", custom, "preset: custom")):
        inv = tmp_path / case / "inv"
        shutil.copytree(src, inv)
        (inv / "qos.yaml").write_text(qos)
        rendered, lldp, running = saved(inv, tmp_path / case)
        result = discover(lldp, running, tmp_path / case / "draft")
        assert result.returncode == 0, result.stderr
        drafted = (tmp_path / case / "draft" / "qos.yaml").read_text()
        assert found in drafted, drafted
        assert fabric("render", tmp_path / case / "draft", "-o", tmp_path / case / "again").returncode == 0
        assert same_tree(rendered / "switches", tmp_path / case / "again" / "switches") == []
    assert "ecn:\n    3:\n      min_bytes: 100000" in (tmp_path / "override" / "draft" / "qos.yaml").read_text()


def test_bad_input_is_located_and_nothing_is_written(tmp_path: Path) -> None:
    inv = ROOT / "inventories" / "example"
    _, lldp, running = saved(inv, tmp_path)
    out = tmp_path / "draft"
    (lldp / "leaf-su1-r2.lldpctl").write_text('{"lldp": {"interface": {"swp1": {"chassis": ')
    refused(lldp, running, out, "leaf-su1-r2.lldpctl:1: json: expected valid JSON")
    L.write(topo(inv), L.hall(topo(inv)), lldp)
    (lldp / "leaf-su1-r1.lldpctl").unlink()  # EOS's text table, saved where its JSON belongs
    (lldp / "leaf-su1-r1.lldp-eos").write_text("Port          Neighbor Device ID       Neighbor Port ID    TTL\n"
                                                "Et1           gpu-su1-01               ens1np0             120\n")
    (lldp / "leaf-su1-r2.lldp-eos").write_text("{}")
    refused(lldp, running, out, "leaf-su1-r1.lldp-eos:1: json: expected valid JSON",
            "leaf-su1-r2.lldpctl: expected one LLDP output of leaf-su1-r2, found leaf-su1-r2.lldp-eos and "
            "leaf-su1-r2.lldpctl")
    L.write(topo(inv), L.hall(topo(inv)), lldp)
    for path in (lldp / "leaf-su1-r1.lldp-eos", lldp / "leaf-su1-r2.lldp-eos"):
        path.unlink()
    (running / "spine1.conf").unlink()
    (running / "spine1.json").write_text("interface swp1\n")  # an FRR config saved under SONiC's name
    refused(lldp, running, out, "spine1.json:1: expected valid JSON")


def test_a_switch_without_its_running_config_is_named(tmp_path: Path) -> None:
    _, lldp, running = saved(ROOT / "inventories" / "eos-example", tmp_path)
    (running / "leaf-su1-r2.cfg").unlink()
    refused(lldp, running, tmp_path / "draft", "leaf-su1-r2: expected a saved running config in --running (its "
            "LLDP output is a switch's: lldp-eos), found none")


def test_a_hostile_neighbour_name_is_refused_not_written(tmp_path: Path) -> None:
    """A system name is whatever a device sends: one that is no inventory name (here with a newline and YAML
    structure) is a located error, never a key of the draft."""
    inv = ROOT / "inventories" / "example"
    _, lldp, running = saved(inv, tmp_path)
    host = lldp / "gpu-su1-01.lldpctl"
    host.write_text(host.read_text().replace('"leaf-su1-r1"', json.dumps("leaf-su1-r1\nqos: {preset: x}")))
    for path in lldp.glob("leaf-su1-r1.*"):
        path.write_text(path.read_text().replace('"gpu-su1-01"', json.dumps("gpu-su1-01\nhosts: []")))
    refused(lldp, running, tmp_path / "draft", "leaf-su1-r1's LLDP, port swp1: expected a device name matching",
            "'gpu-su1-01\\nhosts: []'")


def test_an_existing_inventory_is_kept_without_force(tmp_path: Path) -> None:
    _, lldp, running = saved(ROOT / "inventories" / "eos-example", tmp_path)
    out = tmp_path / "draft"
    out.mkdir()
    (out / "fabric.yaml").write_text("keep\n")
    result = discover(lldp, running, out)
    assert result.returncode == 2 and "--force replaces it" in result.stderr
    assert (out / "fabric.yaml").read_text() == "keep\n"
    assert discover(lldp, running, out, "--force").returncode == 0


def test_a_switch_off_the_asn_plan_gets_its_own(tmp_path: Path) -> None:
    """A leaf whose ASN is not the next of the plan's (renumbered by hand) gets a `switches:` entry with it."""
    inv = tmp_path / "inv"
    shutil.copytree(ROOT / "inventories" / "example", inv)
    (inv / "switches.yaml").write_text("switches:\n  - {name: leaf-su1-r2, asn: 65199}\n")
    rendered, lldp, running = saved(inv, tmp_path)
    result = discover(lldp, running, tmp_path / "draft")
    assert result.returncode == 0, result.stderr
    assert "switches:\n  - asn: 65199\n    name: leaf-su1-r2\n" in (tmp_path / "draft" / "fabric.yaml").read_text()
    assert fabric("render", tmp_path / "draft", "-o", tmp_path / "again").returncode == 0
    assert same_tree(rendered / "switches", tmp_path / "again" / "switches") == []


def test_names_of_the_site_become_topology_names(tmp_path: Path) -> None:
    """A fabric named its own way (zero-padded, other words) is drafted with the `topology.names` that make its
    names; the draft renders the same switch configs."""
    inv = tmp_path / "inv"
    shutil.copytree(ROOT / "inventories" / "eos-example", inv)
    fabric_yaml = (inv / "fabric.yaml").read_text()
    names = ('  names: {leaf: "ld{su:02d}-rail{rail}", spine: "sp-{n}", host: "dgx-{su}-{h:03d}"}\n')
    (inv / "fabric.yaml").write_text(fabric_yaml.replace("uplinks_per_spine: 2\n", "uplinks_per_spine: 2\n" + names))
    rendered, lldp, running = saved(inv, tmp_path)
    assert (running / "ld01-rail2.cfg").exists() and (lldp / "dgx-1-004.lldpctl").exists()
    result = discover(lldp, running, tmp_path / "draft", "--name", "eos-example")
    assert result.returncode == 0, result.stderr
    assert ('  names:\n    host: "dgx-{su}-{h:03d}"\n    leaf: "ld{su:02d}-rail{rail}"\n    spine: "sp-{n}"\n'
            in (tmp_path / "draft" / "fabric.yaml").read_text())
    assert fabric("render", tmp_path / "draft", "-o", tmp_path / "again").returncode == 0
    assert same_tree(rendered / "switches", tmp_path / "again" / "switches") == []


def test_names_that_follow_no_pattern_are_refused(tmp_path: Path) -> None:
    _, lldp, running = saved(ROOT / "inventories" / "eos-example", tmp_path)
    for path in [*lldp.iterdir(), *running.iterdir()]:
        path.write_text(path.read_text().replace("spine2", "core-b"))
        path.rename(path.with_name(path.name.replace("spine2", "core-b")))
    refused(lldp, running, tmp_path / "draft", "LLDP: expected spine names that follow one pattern of numbers (as "
            "topology.names.spine), found core-b, spine1")


def test_a_brownfield_fabric_configured_by_hand(tmp_path: Path) -> None:
    """The EOS running configs of tests/fixtures/running/eos (brought up by hand, with management, AAA, logging,
    a default route in VRF MGMT, and an older render: no graceful shutdown, ECN of 100 KB on some ports): the
    addresses come from the router ids and the announced subnets, never from the management interface or its
    route; the draft validates and `plan --running` lists what the switches have otherwise."""
    inv = ROOT / "inventories" / "eos-example"
    L.write(topo(inv), L.hall(topo(inv)), tmp_path / "lldp")
    running = ROOT / "tests" / "fixtures" / "running" / "eos"
    result = discover(tmp_path / "lldp", running, tmp_path / "draft", "--name", "eos-example")
    assert result.returncode == 0, result.stderr
    draft = tmp_path / "draft"
    assert ('  loopbacks: "10.254.2.0/24"\n  mode: svi\n  rail_prefix_length: 24\n  rails: "10.102.0.0/16"\n'
            in (draft / "addressing.yaml").read_text())
    assert "asn:\n    leaves: 65121\n    spines: 65020\n" in (draft / "addressing.yaml").read_text()
    assert "graceful_shutdown: false" in (draft / "switching.yaml").read_text()
    assert "platform: \"7060x5\"" in (draft / "fabric.yaml").read_text()
    assert "# roles.leaf.platform: 7060x5 guessed, the EOS config does not name its platform" in (
        draft / "fabric.yaml").read_text()
    plan = fabric("plan", draft, "--running", running, "--format", "json")
    assert plan.returncode == 0, plan.stderr
    assert all(d["status"] in ("unchanged", "changed") for d in json.loads(plan.stdout)["devices"])


def test_a_host_with_its_own_nic_names_gets_its_entry(tmp_path: Path) -> None:
    inv = tmp_path / "inv"
    shutil.copytree(ROOT / "inventories" / "sonic-example", inv)
    hosts = (inv / "hosts.yaml").read_text()
    (inv / "hosts.yaml").write_text(hosts + "  list:\n    - name: gpu-su1-03\n      nics:\n"
                                    "        - {rail: 1, rdma: mlx5_0, netdev: eth2}\n"
                                    "        - {rail: 2, rdma: mlx5_1, netdev: eth3}\n")
    rendered, lldp, running = saved(inv, tmp_path)
    result = discover(lldp, running, tmp_path / "draft", "--name", "sonic-example")
    assert result.returncode == 0, result.stderr
    hosts = (tmp_path / "draft" / "hosts.yaml").read_text()
    assert "  list:\n    - name: gpu-su1-03\n      nics:\n        - netdev: eth2\n" in hosts, hosts
    assert "netdev: ens1f0np0" in hosts
    assert fabric("render", tmp_path / "draft", "-o", tmp_path / "again").returncode == 0
    assert same_tree(rendered / "switches", tmp_path / "again" / "switches") == []


def test_rails_follow_the_nic_names_not_the_order_lldpctl_lists_them(tmp_path: Path) -> None:
    """lldpctl lists a host's interfaces in lldpd's order (by interface index, which a NIC's device made again
    changes: the lab's cable faults do): listed last rail first, the draft still puts each leaf on its rail."""
    inv = ROOT / "inventories" / "example"
    rendered, lldp, running = saved(inv, tmp_path)
    for path in lldp.glob("gpu-*.lldpctl"):
        doc = json.loads(path.read_text())
        doc["lldp"]["interface"].reverse()
        path.write_text(json.dumps(doc))
    result = discover(lldp, running, tmp_path / "draft", "--name", "example")
    assert result.returncode == 0, result.stderr
    assert fabric("render", tmp_path / "draft", "-o", tmp_path / "again").returncode == 0
    assert same_tree(rendered / "switches", tmp_path / "again" / "switches") == []
