"""frr and host renderers: golden files, FRR's own checker, determinism of whole trees."""

from __future__ import annotations

import filecmp
import json
import os
import shutil
import subprocess
from functools import cache
from pathlib import Path

import pytest
import yaml

from fabric.design.derive import derive
from fabric.design.intent import FabricIntent, HostIntent
from fabric.model.load import load
from fabric.render import _write_files, render_fabric, render_host, render_switch, render_to
from tests.conftest import require
from tests.support.paths import GOLDEN, ROOT

GOLDEN = GOLDEN / "example"
UPDATE = os.environ.get("UPDATE_GOLDEN") == "1"
DEVICES = ["spine1", "leaf-su1-r1", "gpu-su1-01"]


@cache
def fabric(inventory: str = "example", target: str | None = None) -> FabricIntent:
    return derive(load(ROOT / "inventories" / inventory), target)


@pytest.mark.parametrize("device", DEVICES)
def test_golden_example(device: str) -> None:
    """Golden files were checked by hand against shared/reference before they were committed."""
    f = fabric()
    files = render_switch(f.switches[device], f) if device in f.switches else render_host(f.hosts[device], f)
    for name, text in files.items():
        path = GOLDEN / device / name
        if UPDATE:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text)
        assert path.exists(), f"missing golden {path}; run with UPDATE_GOLDEN=1 and review"
        assert text == path.read_text(), f"{path} differs; review, then UPDATE_GOLDEN=1"


def frr_confs() -> list[tuple[str, str]]:
    out = []
    for inv in ("example", "h100-400g", "sonic-example", "eos-example"):
        f = fabric(inv, "frr")
        names = sorted(f.switches)[:3] + sorted(f.switches)[-2:]
        out += [(f"{inv}/{n}", render_switch(f.switches[n], f)["frr.conf"]) for n in sorted(set(names))]
    return out


@pytest.mark.parametrize(("name", "conf"), frr_confs(), ids=lambda x: x if "/" in x else "")
def test_frr_checker_accepts_rendered_conf(name: str, conf: str, tmp_path: Path) -> None:
    """FRR's own parser (`vtysh -C -f`, Debian's frr package) accepts every rendered frr.conf."""
    require(shutil.which("vtysh") is not None, "vtysh (apt install frr)")
    path = tmp_path / "frr.conf"
    path.write_text(conf)
    proc = subprocess.run(["vtysh", "-C", "-f", str(path)], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, f"{name}: {proc.stdout}{proc.stderr}"


def test_frr_checker_rejects_a_broken_conf(tmp_path: Path) -> None:
    """The checker test above can fail: a typo is caught."""
    require(shutil.which("vtysh") is not None, "vtysh (apt install frr)")
    f = fabric()
    conf = render_switch(f.switches["spine1"], f)["frr.conf"].replace("remote-as", "remote-ass", 1)
    path = tmp_path / "frr.conf"
    path.write_text(conf)
    assert subprocess.run(["vtysh", "-C", "-f", str(path)], capture_output=True, timeout=60).returncode != 0


def test_frr_bgp_matches_intent() -> None:
    f = fabric()
    leaf = f.switches["leaf-su1-r1"]
    conf = render_switch(leaf, f)["frr.conf"]
    assert f"router bgp {leaf.bgp.asn}\n" in conf
    for n in leaf.bgp.neighbors:
        assert f" neighbor {n.port} interface peer-group FABRIC\n neighbor {n.port} remote-as 65000\n" in conf
    assert " network 10.100.0.0/24\n" in conf and " maximum-paths 64\n" in conf


def test_rendering_twice_gives_byte_identical_trees(tmp_path: Path) -> None:
    """Determinism over every target: the example plus the sonic, nvue and eos examples."""
    for inv in ("example", "h100-400g", "sonic-example", "eos-example"):
        a, b = tmp_path / inv / "a", tmp_path / inv / "b"
        render_to(a, derive(load(ROOT / "inventories" / inv)), extras=True)
        render_to(b, derive(load(ROOT / "inventories" / inv)), workers=2, extras=True)
        left = sorted(p.relative_to(a) for p in a.rglob("*") if p.is_file())
        right = sorted(p.relative_to(b) for p in b.rglob("*") if p.is_file())
        assert left == right and left
        _, mismatch, errors = filecmp.cmpfiles(a, b, [str(p) for p in left], shallow=False)
        assert not mismatch and not errors, (inv, mismatch, errors)


def host(name: str = "gpu-su1-01") -> HostIntent:
    return fabric().hosts[name]


def test_host_json_round_trips() -> None:
    h = host()
    text = render_host(h, fabric())["host.json"]
    assert HostIntent.model_validate_json(text) == h
    data = json.loads(text)
    assert data["nic_qos"]["pfc"] == [0, 0, 0, 1, 0, 0, 0, 0]
    assert data["nic_qos"]["roce_tos"] == 106 == (26 << 2) | 2


def test_roce_setup_script_is_valid_sh_and_matches_intent() -> None:
    h = host()
    script = render_host(h, fabric())["roce-setup.sh"]
    assert subprocess.run(["sh", "-n"], input=script, text=True, timeout=30).returncode == 0
    for line in ("qos -i rail1 --trust dscp", "qos -i rail1 --pfc 0,0,0,1,0,0,0,0",
                 "qos -i rail1 --prio_tc 0,0,0,3,0,0,6,0",
                 "qos -i rail1 --tsa ets,ets,ets,ets,ets,ets,strict,ets --tcbw 50,0,0,50,0,0,0,0"):
        assert line in script
    for r in h.rails:
        assert f"ip rule add from {r.address.split('/')[0]} table {r.table} priority {r.rule_priority}" in script
        assert f"ip route replace 10.100.0.0/16 via {r.gateway} dev {r.ifname} table {r.table}" in script
    assert "eth0" not in script.replace("The management interface eth0 is never touched", "")


def test_netplan_describes_the_rails() -> None:
    h = host()
    plan = yaml.safe_load(render_host(h, fabric())["netplan.yaml"])["network"]
    assert sorted(plan["ethernets"]) == [r.netdev for r in h.rails]
    r = h.rails[0]
    eth = plan["ethernets"][r.netdev]
    assert eth["addresses"] == [r.address] and eth["mtu"] == 9000
    assert {"from": r.address.split("/")[0], "table": r.table, "priority": r.rule_priority} in eth["routing-policy"]
    assert {"to": "10.100.0.0/16", "via": r.gateway, "table": r.table} in eth["routes"]


def test_tagged_rail_renders_vlan_subinterface(example_copy: Path) -> None:
    hosts = example_copy / "hosts.yaml"
    hosts.write_text(hosts.read_text().replace("netdev: rail1}", "netdev: rail1, vlan: 101}"))
    f = derive(load(example_copy))
    h = f.hosts["gpu-su1-01"]
    assert h.rails[0].ifname == "rail1.101"
    files = render_host(h, f)
    plan = yaml.safe_load(files["netplan.yaml"])["network"]
    assert plan["vlans"]["rail1.101"]["id"] == 101 and plan["vlans"]["rail1.101"]["link"] == "rail1"
    assert "addresses" not in plan["ethernets"]["rail1"]
    assert "ip link add link rail1 name rail1.101 type vlan id 101" in files["roce-setup.sh"]


def test_nccl_env() -> None:
    env = dict(line.split("=", 1) for line in render_host(host(), fabric())["nccl.env"].splitlines())
    assert env == {"NCCL_IB_GID_INDEX": "3", "NCCL_IB_HCA": "=mlx5_0:1,mlx5_1:1,mlx5_2:1,mlx5_3:1",
                   "NCCL_IB_TC": "106", "NCCL_SOCKET_IFNAME": "=eth0"}


def test_k8s_networks_are_one_per_rail_with_the_config_on_each_node() -> None:
    """One NAD per rail without a spec (multus then reads the node's file of that name); the node's file
    holds its SU's address: here the PF itself (vfs: 0, host-device) with the host's own rail address.
    The Kubernetes path in depth: tests/render/test_k8s.py."""
    k8s = render_fabric(fabric())["k8s"]
    docs = [d for d in yaml.safe_load_all(k8s["networks.yaml"]) if d]
    assert [d["metadata"]["name"] for d in docs] == ["rail1", "rail2", "rail3", "rail4"]
    assert all("spec" not in d for d in docs)
    assert docs[0]["metadata"]["annotations"]["k8s.v1.cni.cncf.io/resourceName"] == "nvidia.com/rail1"
    cfg = json.loads(render_host(host(), fabric())["cni/rail1.conflist"])
    assert cfg["name"] == "rail1" and [p["type"] for p in cfg["plugins"]] == ["host-device", "sbr"]
    assert cfg["plugins"][0]["ipam"] == {"type": "static", "addresses": [{"address": "10.100.0.2/24",
                                                                          "gateway": "10.100.0.1"}]}


@pytest.mark.root
def test_roce_setup_script_runs_in_a_namespace(tmp_path: Path) -> None:
    """The rendered roce-setup.sh against a real kernel: veths named like the rail NICs in a namespace
    this test creates; SYSFS points at an empty tree (no RDMA NIC here), so the NIC part only skips."""
    require(os.geteuid() == 0, "root for network namespaces")
    h = host()
    ns = f"rf-t{os.getpid()}"
    script = tmp_path / "roce-setup.sh"
    script.write_text(render_host(h, fabric())["roce-setup.sh"])
    run = lambda *a: subprocess.run(["ip", "netns", "exec", ns, *a], capture_output=True, text=True,  # noqa: E731
                                    timeout=60, env={"SYSFS": str(tmp_path / "sys"), "PATH": os.environ["PATH"]})
    subprocess.run(["ip", "netns", "add", ns], check=True, timeout=30)
    try:
        for r in h.rails:
            subprocess.run(["ip", "-n", ns, "link", "add", r.netdev, "type", "veth", "peer", "name", f"{r.netdev}p"],
                           check=True, timeout=30)
        for _ in range(2):  # idempotent: the second run succeeds and changes nothing
            p = run("sh", str(script))
            assert p.returncode == 0, p.stdout + p.stderr
            assert "skipped: mlnx_qos not installed" in p.stdout
        addrs = json.loads(run("ip", "-j", "addr").stdout)
        got = {a["ifname"]: [f"{x['local']}/{x['prefixlen']}" for x in a["addr_info"] if x["family"] == "inet"]
               for a in addrs}
        for r in h.rails:
            assert got[r.netdev] == [r.address]
            table = run("ip", "route", "show", "table", str(r.table)).stdout
            assert f"10.100.0.0/16 via {r.gateway} dev {r.ifname}" in table
            assert f"{r.subnet} dev {r.ifname} scope link src {r.address.split('/')[0]}" in table
            rules = run("ip", "rule", "show", "priority", str(r.rule_priority)).stdout
            assert rules.count(f"from {r.address.split('/')[0]} lookup {r.table}") == 1
            assert run("sysctl", "-n", f"net.ipv4.conf.{r.netdev}.arp_ignore").stdout.strip() == "1"
            assert run("sysctl", "-n", f"net.ipv4.conf.{r.netdev}.rp_filter").stdout.strip() == "2"
    finally:
        subprocess.run(["ip", "netns", "del", ns], timeout=30)
    assert ns not in subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout


def test_render_writes_what_deployment_needs_and_all_adds_the_copies(tmp_path: Path) -> None:
    """`fabric render` writes the pushed files and the hosts' agent input; `--all` adds the NVUE `nv set`
    lines and the hosts' boot-time files (what `fabric host apply --persist` installs from host.json)."""
    f = derive(load(ROOT / "inventories" / "h100-400g"))
    only = {"leaf-su1-r1", "gpu-su1-01"}
    render_to(tmp_path / "default", f, only)
    render_to(tmp_path / "all", f, only, extras=True)

    def names(root: Path, device: str) -> set[str]:
        return {p.name for p in (root / device).iterdir()}

    assert names(tmp_path / "default", "switches/leaf-su1-r1") == {"nvue-patch.yaml"}
    assert names(tmp_path / "all", "switches/leaf-su1-r1") == {"nvue-patch.yaml", "nv-set.txt", "topology.dot"}
    assert names(tmp_path / "default", "hosts/gpu-su1-01") == {"host.json", "roce-setup.sh", "nccl.env"}
    assert names(tmp_path / "all", "hosts/gpu-su1-01") == {"host.json", "roce-setup.sh", "nccl.env", "netplan.yaml",
                                                          "sysctl.conf", "roce-qos.service", "roce-qos.sh", "cni"}
    assert len(list((tmp_path / "all" / "hosts/gpu-su1-01/cni").iterdir())) == 8  # a CNI config per rail
    for rel in ("switches/leaf-su1-r1/nvue-patch.yaml", "hosts/gpu-su1-01/roce-setup.sh"):
        assert (tmp_path / "default" / rel).read_bytes() == (tmp_path / "all" / rel).read_bytes()


def test_rendering_over_a_tree_rewrites_exactly_the_files_that_differ(tmp_path: Path) -> None:
    """A file already holding the rendered bytes is left alone (same inode, same mtime); a changed one, one of the
    same size with other bytes, a longer and a shorter one are written; a missing directory is made."""
    d = tmp_path / "dev"
    files = {"same": "x" * 100, "other": "abc\n", "longer": "short", "shorter": "a longer text", "new": "",
             "cni/rail1.conflist": "{}"}
    assert _write_files(str(d), files) == len(files)
    assert {str(p.relative_to(d)): p.read_text() for p in d.rglob("*") if p.is_file()} == files
    inode = (d / "same").stat().st_ino
    os.utime(d / "same", ns=(1, 1))
    (d / "other").write_text("abd\n")  # same size, other bytes
    (d / "longer").write_text("short but longer")
    (d / "shorter").write_text("a")
    want = {**files, "new": "now something"}
    assert _write_files(str(d), want) == len(want)
    assert {str(p.relative_to(d)): p.read_text() for p in d.rglob("*") if p.is_file()} == want
    assert (d / "same").stat().st_mtime_ns == 1 and (d / "same").stat().st_ino == inode


def test_indented_json_is_json_dumps() -> None:
    """fabric.serialize.indented_json writes json.dumps(…, indent=2)'s text (sorted or not), every value of the
    rendered CNI configs and SONiC config_db included; what it does not handle goes to json.dumps (same text, same
    error)."""
    import enum
    import random

    from fabric.render.k8s import cni_config
    from fabric.serialize import indented_json

    class Level(enum.IntEnum):
        HIGH = 3

    class Name(str, enum.Enum):  # noqa: UP042 (its str() is "Name.A", a StrEnum's is "a": json uses the value)
        A = "a"

    rng = random.Random(27)
    scalars = [None, True, False, 0, -7, 2**70, Level.HIGH, 1.5, -0.0, 1e-7, 1e22, float("nan"), float("inf"), "",
               "plain", 'quote " and \\ back', "tab\tnew\nline\x01", "é ünïcode ☃ \U0001f600", Name.A]

    def value(depth: int) -> object:
        kind = rng.randrange(5 if depth < 4 else 1)
        if kind == 0:
            return rng.choice(scalars)
        if kind == 1:
            return [value(depth + 1) for _ in range(rng.randrange(4))]
        if kind == 2:
            return tuple(value(depth + 1) for _ in range(rng.randrange(3)))
        keys = ["k", "a b", "Z", "é", "0", "10", "9"] + ([1, None, 2.5, True] if kind == 3 else [])
        return {rng.choice(keys): value(depth + 1) for _ in range(rng.randrange(5))}

    for _ in range(3000):
        v = value(0)
        for sort in (False, True):
            try:
                want: object = json.dumps(v, indent=2, sort_keys=sort)
            except (TypeError, ValueError) as exc:
                want = type(exc)
            try:
                got: object = indented_json(v, sort_keys=sort)
            except (TypeError, ValueError) as exc:
                got = type(exc)
            assert got == want, v
    with pytest.raises(TypeError):
        indented_json({"x": object()})
    for inv in ("example", "h100-400g"):
        f = fabric(inv)
        for h in f.hosts.values():
            for r in h.rails:
                if (cfg := cni_config(h, r)) is not None:
                    assert indented_json(cfg) == json.dumps(cfg, indent=2)
    sonic = fabric("sonic-example")
    from fabric.nos.sonic.render import config_db

    for sw in sonic.switches.values():
        assert indented_json(config_db(sw), sort_keys=True) == json.dumps(config_db(sw), indent=2, sort_keys=True)


def test_rail_addresses_are_ipaddress_text() -> None:
    """The netplan's rail address and networks are what ipaddress writes, for every form it reads."""
    from ipaddress import IPv4Interface

    from fabric.render.host import _interface_ip

    for text in ("10.0.0.2/24", "10.0.0.2/031", "0.0.0.0/0", "255.255.255.255/32", "10.0.0.2", "10.0.0.2/255.0.0.0",
                 "192.168.001.1/24", "10.0.0.2/33", "10.0.0.256/24", "10.0.0/24", "１0.0.0.1/24", "10.0.0.2/２4"):
        try:
            want = str(IPv4Interface(text).ip)
        except ValueError:
            with pytest.raises(ValueError):
                _interface_ip(text)
        else:
            assert _interface_ip(text) == want, text


def test_a_first_render_opens_each_file_once_and_a_rerender_reads_before_writing(tmp_path: Path,
                                                                                  monkeypatch) -> None:
    """Into a new tree every device file is written straight away (no look for one that cannot be there yet);
    over the last render each is read first and, being unchanged, not written again."""
    f = fabric()
    opened: list[tuple[str, bool]] = []
    real_open = os.open

    def counting_open(path, flags, *args):  # the real call, noted with whether it writes
        opened.append((str(path), bool(flags & os.O_WRONLY)))
        return real_open(path, flags, *args)

    monkeypatch.setattr(os, "open", counting_open)
    render_to(tmp_path / "out", f, workers=1)
    devices = [str(p) for p in (tmp_path / "out").rglob("*") if p.is_file() and "k8s" not in p.parts]
    assert len(devices) > 20 and sorted(opened) == sorted((p, True) for p in devices)
    opened.clear()
    render_to(tmp_path / "out", f, workers=1)
    assert sorted(opened) == sorted((p, False) for p in devices)
