"""The lint rules that look ports up per switch (`Context.ports_of`), share the fabric's address list, parse an
address's network from an octet table, and judge NCCL settings once per distinct value: their findings equal those
of the rules as they read before (tests/oracles/lint_rules.py) on every example and fixture inventory, each broken
in the ways the rules look for — a speed or MTU mismatch, a NIC on the wrong leaf, a missing or numbered session, a
duplicate or overlapping address, a wrong VLAN, NCCL lists of every mode, a GID policy — and on ports named twice."""

from __future__ import annotations

import dataclasses
import random
from collections.abc import Callable
from ipaddress import IPv4Interface

import pytest

from fabric.lint.context import Context
from fabric.lint.core import RULES, Finding
from fabric.lint.engine import run
from fabric.lint.rules import all_rules
from fabric.lint.rules.l3 import _network as network
from fabric.model.load import load
from tests.oracles.lint_rules import REFERENCE
from tests.oracles.lint_rules import _network as network_before
from tests.support.paths import ROOT

INVENTORIES = sorted([*(ROOT / "inventories").iterdir(), *(ROOT / "tests/fixtures/inventories").iterdir()])


# -- ways to break a derived fabric ---------------------------------------------------------------------------------
def _leaf(ctx: Context) -> str:
    return next(n for n, s in ctx.intent.switches.items() if s.role == "leaf")


def _host(ctx: Context, i: int = 0) -> str:
    return list(ctx.intent.hosts)[i]


def _speed(ctx: Context) -> None:
    sw = ctx.intent.switches[_leaf(ctx)]
    sw.ports[0].speed, sw.ports[-1].speed = 100, 25


def _rail_speed(ctx: Context) -> None:
    ctx.intent.hosts[_host(ctx)].rails[0].speed = 25


def _mtu(ctx: Context) -> None:
    sw = ctx.intent.switches[_leaf(ctx)]
    for p in sw.ports:
        if p.kind == "fabric":
            p.mtu = 1500
            break
    ctx.intent.hosts[_host(ctx)].rails[-1].mtu = 9500
    ctx.intent.hosts[_host(ctx, -1)].roce_mtu = 9000


def _peer_mtu(ctx: Context) -> None:
    for sw in ctx.intent.switches.values():
        for p in sw.ports:
            if p.kind == "fabric" and sw.name > p.peer:
                p.mtu += 8
                return


def _swap_rails(ctx: Context) -> None:
    r = ctx.intent.hosts[_host(ctx, 1)].rails
    if len(r) > 1:
        r[0].leaf, r[1].leaf = r[1].leaf, r[0].leaf
    r[-1].leaf_port = "nonexistent"


def _wrong_peer(ctx: Context) -> None:
    sw = ctx.intent.switches[_leaf(ctx)]
    for p in sw.ports:
        if p.kind == "host":
            p.peer_port = "elsewhere"
            break


def _no_leaf(ctx: Context) -> None:
    ctx.intent.hosts[_host(ctx)].rails[0].leaf = "no-such-switch"


def _twice(ctx: Context) -> None:  # a port name twice on a switch, a host NIC twice: the last of a name wins
    sw = ctx.intent.switches[_leaf(ctx)]
    sw.ports.append(dataclasses.replace(sw.ports[0], speed=1, mtu=1000, peer="x", unnumbered=True, vlan=7))
    h = ctx.intent.hosts[_host(ctx)]
    h.rails.append(h.rails[0].model_copy(update={"speed": 10, "vlan": 5}))


def _session(ctx: Context) -> None:
    sw = max(ctx.intent.switches.values(), key=lambda s: len(s.bgp.neighbors))
    if len(sw.bgp.neighbors) < 2:
        return
    sw.bgp.neighbors.pop()
    n = sw.bgp.neighbors[0]
    sw.bgp.neighbors[0] = dataclasses.replace(n, remote_asn=n.remote_asn + 1)
    if len(sw.bgp.neighbors) > 2:
        sw.bgp.neighbors[1] = dataclasses.replace(sw.bgp.neighbors[1], peer="ghost")
    for p in ctx.intent.switches[n.peer].ports:
        if p.kind == "fabric":
            p.unnumbered = False
            break


def _addresses_clash(ctx: Context) -> None:
    switches = list(ctx.intent.switches.values())
    h = ctx.intent.hosts[_host(ctx)]
    switches[0].loopback = h.rails[0].address.split("/")[0] + "/32"
    switches[-1].loopback = "10.0.0.0/8"
    h.management_address = switches[1].management
    ctx.intent.hosts[_host(ctx, -1)].rails[0].address = "172.31.255.1/16"


def _vlan(ctx: Context) -> None:
    for i, r in enumerate(ctx.intent.hosts[_host(ctx)].rails):
        r.vlan = None if i == 0 else 4000 + i


def _nccl(ctx: Context) -> None:
    values = ["", "^mlx5_0", "mlx5_1", "=mlx5_0:1", "mlx5", "mlx5_0,mlx5_1,mlx5_2,mlx5_3,mlx5_4,mlx5_5,mlx5_6,mlx5_7,x"]
    sockets = ["", "rail", "=rail1", "^eth", "eth0", "=eth0"]
    for i, h in enumerate(ctx.intent.hosts.values()):
        env = dict(h.nccl_env)
        env["NCCL_IB_HCA"] = values[i % len(values)]
        env["NCCL_SOCKET_IFNAME"] = sockets[i % len(sockets)]
        if i % 3 == 0:
            env["NCCL_IB_GID_INDEX"] = "1"
            env["NCCL_IB_ROCE_VERSION_NUM"] = "1"
        h.nccl_env = env
        if i % 4 == 1:
            h.gid = h.gid.model_copy(update={"policy": "auto"})


def _ar(ctx: Context) -> None:
    for sw in list(ctx.intent.switches.values())[::3]:
        fabric = [p for p in sw.ports if p.kind == "fabric"]
        if fabric:
            fabric[0].adaptive_routing = not fabric[0].adaptive_routing


def _vfs(ctx: Context) -> None:
    for h in list(ctx.intent.hosts.values())[::2]:
        h.rails[0].vfs = 250


MUTATIONS: dict[str, Callable[[Context], None]] = {
    "as-is": lambda ctx: None, "speed": _speed, "rail-speed": _rail_speed, "mtu": _mtu, "peer-mtu": _peer_mtu,
    "swap-rails": _swap_rails, "wrong-peer": _wrong_peer, "no-leaf": _no_leaf, "twice": _twice,
    "session": _session, "addresses": _addresses_clash, "vlan": _vlan, "nccl": _nccl, "ar": _ar, "vfs": _vfs,
}


@pytest.fixture(scope="module", params=INVENTORIES, ids=lambda p: p.name)
def loaded(request: pytest.FixtureRequest):
    return load(request.param)


def assert_rules_find_what_the_oracle_finds(ctx: Context, oracle: dict, change: str) -> None:
    """Each rule of `oracle` (rule id → its frozen reference) finds on `ctx` what its reference finds."""
    all_rules()
    for rule_id, reference in oracle.items():
        rule = RULES[rule_id]
        ctx.reset()
        want = sorted(set(reference(rule, ctx)), key=Finding.sort_key)
        ctx.reset()
        got = sorted(set(rule.check(ctx)), key=Finding.sort_key)
        assert got == want, (rule_id, change)
    # and through the engine, which resets what the rules share at every run
    assert run(ctx, select=list(oracle)).findings == run(ctx, select=list(oracle)).findings


@pytest.mark.parametrize("mutation", list(MUTATIONS))
def test_rules_find_what_they_found_before(loaded, mutation: str) -> None:
    ctx = Context(loaded)
    MUTATIONS[mutation](ctx)
    assert_rules_find_what_the_oracle_finds(ctx, REFERENCE, mutation)


def test_a_run_after_the_intent_changed_sees_the_change() -> None:
    ctx = Context(load(ROOT / "inventories" / "example"))
    assert not run(ctx, select=["RF301", "RF304"]).findings
    _speed(ctx)
    _addresses_clash(ctx)
    found = {f.rule for f in run(ctx, select=["RF301", "RF304"]).findings}
    assert found == {"RF301", "RF304"}


def test_network_equals_ipaddress() -> None:
    """The octet-table parse gives IPv4Interface's network, or raises as it does, on well-formed and malformed
    addresses (an empty prefix after `/` is the one form read as /32, as before)."""
    rng = random.Random(27)
    octets = ["0", "1", "9", "10", "99", "100", "199", "254", "255", "256", "01", "00", "1000", "-1", "", "a",
              "\u0663", "\u00b2"]
    cases = ["10.0.0.1/24", "10.0.0.1", "0.0.0.0/0", "255.255.255.255/32", "10.0.0.1/33", "10.0.0.1/0x1",
             "1.2.3/24", "1.2.3.4.5/24", " 10.0.0.1/24", "10.0.0.1/24 ", "10.0.0.1/-1", "10.0.0.1/08"]
    for _ in range(20000):
        quad = ".".join(rng.choice([*octets, str(rng.randint(0, 300))]) for _ in range(4))
        prefix = rng.choice([str(rng.randint(0, 34)), "", "x", "\u0663", "\u00b2", "024"])
        cases.append(f"{quad}/{prefix}" if rng.random() < 0.8 else quad)
    for addr in cases:
        try:
            net = IPv4Interface(addr).network
            want: object = (int(net.network_address), net.prefixlen)
        except ValueError:
            want = ValueError
        try:
            got: object = network(addr)
        except ValueError:
            got = ValueError
        if addr.endswith("/") and got is not ValueError:
            assert got == network_before(addr), addr
            continue
        assert got == want, addr


def test_a_large_fabric_is_held_to_the_end_of_the_command_and_only_the_last(monkeypatch: pytest.MonkeyPatch) -> None:
    """`lint` is done with the derived fabric before it exits: `fabric.fast.batch` still holds it (frozen objects
    a module references are left to the operating system at exit, not freed one by one), the last two only (a
    fabric and the configs linted against it)."""
    import gc

    from fabric.design.load import load_fabric
    from fabric.fast import batch

    monkeypatch.setattr(batch, "LARGE", 1)  # the example counts as large
    monkeypatch.setattr(batch, "_HELD", [])  # what an earlier test held
    try:
        first = load_fabric(ROOT / "inventories" / "example")
        assert len(batch._HELD) == 1 and batch._HELD[0] is first
        second = load_fabric(ROOT / "inventories" / "eos-example")
        third = load_fabric(ROOT / "inventories" / "example")
        assert len(batch._HELD) == 2 and batch._HELD[0] is second and batch._HELD[1] is third
    finally:
        gc.unfreeze()
