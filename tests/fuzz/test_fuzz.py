"""The fuzzer: structured mutations of every shipped inventory, of device configs for
`lint --configs`, of tool outputs for `parse` and `diagnose`, and of host intents. Every run is judged by
tests/fuzz/harness.py (no traceback, exit 0/1/2, no hang, bounded memory, every error located, nothing written
outside the output directory). It also mutates saved running configs for `plan --running`, every host and
switch reply a command parses (reply_bases), and user-written job logs for `diagnose --remediate` against the
recording scontrol/kubectl stand-ins (nothing refused by them, no host outside the inventory, at most --max-hosts).
CI runs it with a fixed seed and a small budget; `make fuzz` runs every family long (tests/fuzz/long.py).
Counts go to build/fuzz/*.json."""

from __future__ import annotations

import atexit
import contextlib
import functools
import json
import os
import shutil
import tempfile
import time
from functools import cache
from pathlib import Path
from types import SimpleNamespace
from typing import Any
from unittest import mock

import pytest
import yaml
from hypothesis import HealthCheck, Phase, given, seed, settings
from hypothesis import strategies as st

from tests.fuzz.harness import ROOT, Stats, judge, run, subprocess_run
from tests.fuzz.mutate import SPECIAL, make_special, text_mutation, tree_mutation

EXAMPLES = int(os.environ.get("FUZZ_EXAMPLES", "100"))  # inventory mutations (`make fuzz`: 10000); others in proportion
SHARES = {t: float(s) for t, s in (x.split("=") for x in os.environ.get("FUZZ_SHARES", "").split(",") if x)}
SEED = int(os.environ.get("FUZZ_SEED", "17"))
SUBPROCESS_EVERY = 50


def budget(target: str, share: float) -> Any:
    return settings(max_examples=max(int(EXAMPLES * SHARES.get(target, share)), 5), deadline=None, database=None,
                    phases=[Phase.generate], suppress_health_check=list(HealthCheck))


@cache
def inventories() -> dict[str, dict[str, Any]]:
    """Every shipped inventory: file name → its data."""
    return {d.name: {f.name: yaml.safe_load(f.read_text()) for f in sorted(d.glob("*.yaml"))}
            for d in sorted((ROOT / "inventories").iterdir()) if d.is_dir()}


@cache
def configs() -> list[Path]:
    golden = [p for p in (ROOT / "tests" / "golden").rglob("*")
              if p.name in ("config_db.json", "frr.conf", "running-config.cfg")
              or (p.suffix == ".yaml" and p.parent.name.startswith(("leaf", "spine")))]
    running = [p for p in (ROOT / "tests" / "fixtures" / "running").rglob("*")
               if p.suffix in (".cfg", ".yaml", ".json")]
    return sorted(golden + running)


KINDS = {"ib_": "perftest", "extra_ib_": "perftest", "extra_perftest": "perftest", "nccl": "nccl",
         "extra_nccl": "nccl", "extra_iperf3": "iperf3", "mlnx_qos": "mlnx_qos", "extra_mlnx_qos": "mlnx_qos",
         "show_gids": "show_gids", "extra_show_gids": "show_gids", "ibv_devinfo": "show_gids",
         "extra_ibv_devinfo": "show_gids", "extra_ethtool": "ethtool", "extra_mlxconfig": "mlxconfig"}


@cache
def outputs() -> list[tuple[Path, str | None]]:
    samples = [(p, next((k for prefix, k in sorted(KINDS.items(), key=lambda kv: -len(kv[0]))
                         if p.name.startswith(prefix)), None))
               for p in sorted((ROOT / "tests" / "fixtures" / "samples").iterdir()) if p.is_file()]
    logs = [(p, None) for p in sorted((ROOT / "tests" / "fixtures" / "logs").rglob("*")) if p.is_file()]
    return [s for s in samples if s[1]] + logs


class Case:
    """A scratch directory per case, removed after it unless it showed a defect (then kept by Stats). A case counts
    when its first run is judged: one whose drawing Hypothesis cut short (its data ran out) never ran."""

    def __init__(self, stats: Stats):
        self.stats = stats
        self.dir = Path(tempfile.mkdtemp(prefix=f"fuzz-{stats.target}-"))
        self.counted = False
        if not stats.cases:
            stats.started = time.monotonic()

    def check(self, outcome: Any, located_at: tuple[str, ...], out_dir: Path | None = None) -> None:
        if not self.counted:
            self.counted = True
            self.stats.cases += 1
        self.stats.record(outcome)
        why = judge(outcome, located_at, out_dir, self.dir if out_dir else None)
        if why:
            self.stats.defect(why, self.dir)

    def close(self) -> None:
        if self.counted and self.stats.cases % 25 == 0 and os.environ.get("FUZZ_OUT"):  # long.py: counts so far
            self.stats.save(partial=True)
        if os.environ.get("FUZZ_KEEP"):
            return
        for p in self.dir.rglob("*"):  # a FIFO or a symlink to /dev/zero must not trip rmtree
            if p.is_symlink() or (p.exists() and not p.is_dir() and not p.is_file()):
                p.unlink()
        shutil.rmtree(self.dir, ignore_errors=True)


def _assert_clean(stats: Stats) -> None:
    doc = stats.save()
    assert not stats.defects, json.dumps(doc, indent=2)


INV_STATS = Stats("inventories")


def _yaml(text: str | None) -> Any:
    """The data of a file not yet mutated at the text level (else None: mutate its text instead)."""
    if text is None or "&" in text:  # PyYAML would expand a bomb's aliases here, in the fuzzer
        return None
    try:
        return yaml.safe_load(text)
    except (yaml.YAMLError, RecursionError):
        return None


@cache
def inventory_texts(name: str) -> dict[str, str]:
    """Each file of a shipped inventory as the fuzzer writes it before mutating it (dumped once a process)."""
    return {f: yaml.safe_dump(d, sort_keys=False, allow_unicode=True) for f, d in inventories()[name].items()}


_DUMPER = getattr(yaml, "CSafeDumper", yaml.SafeDumper)  # libyaml's emitter: the same YAML, ~10x faster


def _dump(doc: Any) -> str:
    return yaml.dump(doc, Dumper=_DUMPER, sort_keys=False, allow_unicode=True, width=10**9)


@seed(SEED)
@budget("inventories", 1.0)
@given(st.data())
def _fuzz_inventory(data: st.DataObject) -> None:
    name = data.draw(st.sampled_from(sorted(inventories())), label="inventory")
    case = Case(INV_STATS)
    try:
        inv = case.dir / "inv"
        inv.mkdir()
        texts: dict[str, str | None] = dict(inventory_texts(name))
        docs: dict[str, Any] = dict(inventories()[name])  # each file's data while only tree-mutated (no re-parse)
        for _ in range(data.draw(st.sampled_from([1, 1, 1, 2, 3]), label="mutations")):
            f = data.draw(st.sampled_from(sorted(texts)), label="file")
            kind = data.draw(st.sampled_from(["tree"] * 8 + ["text", "text", "special"]), label="kind")
            # tree_mutation copies: the cached data stays as it is
            if kind == "tree" and isinstance(doc := docs[f] if f in docs else _yaml(texts[f]), dict | list):
                docs[f] = data.draw(tree_mutation(doc))
                texts[f] = _dump(docs[f])
            elif kind in ("text", "tree") and (text := texts[f]) is not None:
                texts[f] = data.draw(text_mutation(text, yaml=True))
                docs.pop(f, None)
            else:
                texts[f] = None
                docs.pop(f, None)
                make_special(inv / f, data.draw(st.sampled_from(SPECIAL)))
        for f, text in texts.items():
            if text is not None:
                (inv / f).write_text(text, errors="surrogatepass")
        located = (str(inv),)
        outcome = run("validate", str(inv))
        case.check(outcome, located)
        if INV_STATS.cases % SUBPROCESS_EVERY == 0:
            case.check(subprocess_run("validate", str(inv)), located)
        if outcome.rc == 0:
            out = case.dir / "out"
            case.check(run("render", str(inv), "-o", str(out)), located, out_dir=out)
            case.check(run("lint", str(inv), "--format", "json"), located)
    finally:
        case.close()


def test_fuzz_inventories() -> None:
    _fuzz_inventory()
    _assert_clean(INV_STATS)


CFG_STATS = Stats("configs")


@seed(SEED)
@budget("configs", 0.3)
@given(st.data())
def _fuzz_config(data: st.DataObject) -> None:
    src = data.draw(st.sampled_from(configs()), label="config")
    case = Case(CFG_STATS)
    try:
        cfg = case.dir / "cfg" / src.parent.name
        cfg.mkdir(parents=True)
        text = src.read_text()
        if src.suffix in (".json", ".yaml") and data.draw(st.booleans(), label="tree"):
            doc = json.loads(text) if src.suffix == ".json" else yaml.safe_load(text)
            doc = data.draw(tree_mutation(doc))
            text = json.dumps(doc, indent=2) if src.suffix == ".json" else yaml.safe_dump(doc, width=10**9)
        else:
            text = data.draw(text_mutation(text, yaml=src.suffix == ".yaml"))
        (cfg / src.name).write_text(text, errors="surrogatepass")
        case.check(run("lint", "--configs", str(case.dir / "cfg"), "--format", "json"), (str(case.dir),))
    finally:
        case.close()


def test_fuzz_configs() -> None:
    _fuzz_config()
    _assert_clean(CFG_STATS)


OUT_STATS = Stats("outputs")


@seed(SEED)
@budget("outputs", 0.4)
@given(st.data())
def _fuzz_output(data: st.DataObject) -> None:
    src, kind = data.draw(st.sampled_from(outputs()), label="output")
    case = Case(OUT_STATS)
    try:
        text = src.read_text(errors="replace")
        for _ in range(data.draw(st.integers(1, 2), label="mutations")):
            text = data.draw(text_mutation(text))
        path = case.dir / (src.name + (".gz" if data.draw(st.integers(0, 9)) == 0 else ""))
        if path.suffix == ".gz":
            import gzip

            path.write_bytes(gzip.compress(text.encode(errors="surrogatepass")))
        else:
            path.write_text(text, errors="surrogatepass")
        located = (str(path),)
        if kind:
            case.check(run("parse", kind, str(path)), located)
        case.check(run("diagnose", str(path)), located)
    finally:
        case.close()


def test_fuzz_outputs() -> None:
    _fuzz_output()
    _assert_clean(OUT_STATS)


INTENT_STATS = Stats("intents")


@cache
def intents() -> list[str]:
    from fabric.design.derive import derive
    from fabric.model.load import load

    return [h.model_dump_json(indent=2) for name in ("example", "lab-2su8r")
            for h in list(derive(load(ROOT / "inventories" / name)).hosts.values())[:2]]


@seed(SEED)
@budget("intents", 0.2)
@given(st.data())
def _fuzz_intent(data: st.DataObject) -> None:
    from fabric.cli.host import load_intent
    from fabric.errors import InputError

    text = data.draw(st.sampled_from(intents()), label="intent")
    if data.draw(st.booleans(), label="tree"):
        text = json.dumps(data.draw(tree_mutation(json.loads(text))), indent=2)
    else:
        text = data.draw(text_mutation(text))
    case = Case(INTENT_STATS)
    try:
        path = case.dir / "host.json"
        path.write_text(text, errors="surrogatepass")
        from tests.fuzz.harness import Outcome

        try:
            load_intent(path, None, None)
            outcome = Outcome(0, "", "", 0)
        except InputError as exc:
            outcome = Outcome(2, "", "".join(f"error: {p}\n" for p in exc.problems), 0)
        except Exception as exc:  # what the fuzzer looks for
            outcome = Outcome(-2, "", "", 0, f"traceback: {type(exc).__name__}: {exc}"[:500])
        case.check(outcome, (str(path),))
    finally:
        case.close()


def test_fuzz_host_intents() -> None:
    _fuzz_intent()
    _assert_clean(INTENT_STATS)


@pytest.mark.parametrize("kind", SPECIAL)
def test_special_files_everywhere(tmp_path: Path, kind: str) -> None:
    """Each special file as an inventory file, a catalog, a config, a log and a tool output, in a real process."""
    inv = tmp_path / "inv"
    shutil.copytree(ROOT / "inventories" / "example", inv)
    make_special(inv / "qos.yaml", kind)
    for f in ("cat.yaml", "log.txt", "out.txt"):
        make_special(tmp_path / f, kind)
    (tmp_path / "cfg").mkdir()
    make_special(tmp_path / "cfg" / "leaf1.cfg", kind)
    for args in (["validate", str(inv)], ["diagnose", str(tmp_path / "log.txt")],
                 ["diagnose", str(tmp_path / "log.txt"), "--catalog", str(tmp_path / "cat.yaml")],
                 ["parse", "perftest", str(tmp_path / "out.txt")], ["parse", "mlnx_qos", str(tmp_path / "out.txt")],
                 ["lint", "--configs", str(tmp_path / "cfg")]):
        outcome = subprocess_run(*args)
        why = judge(outcome, (str(tmp_path),))
        assert why is None, (args, why)


# -- saved running configs, host and switch replies, logs handed to a scheduler -----------------
RUN_STATS = Stats("running")


@cache
def running_bases() -> list[tuple[str, str, str, str]]:
    """(inventory, switch, suffix, text): each target's rendered intent and the realistic fixtures."""
    from fabric.design.derive import derive
    from fabric.model.load import load
    from fabric.nos import NOS
    from fabric.render import render_switch

    out = []
    from tests.support.nos import INVENTORY

    for target, inv in INVENTORY.items():
        fabric = derive(load(ROOT / "inventories" / inv))
        sw = fabric.switches["leaf-su1-r1"]
        out.append((inv, "leaf-su1-r1", NOS[target].running_suffix, render_switch(sw, fabric)[NOS[target].intended]))
    fixtures = {"eos/leaf-su1-r1.cfg": "eos-example", "nvue/leaf-su1-r1.yaml": "h100-400g"}
    for rel, inv in fixtures.items():
        p = ROOT / "tests" / "fixtures" / "running" / rel
        out.append((inv, "leaf-su1-r1", p.suffix, p.read_text()))
    return out


@seed(SEED)
@budget("running", 0.05)
@given(st.data())
def _fuzz_running(data: st.DataObject) -> None:
    inv, switch, suffix, text = data.draw(st.sampled_from(running_bases()), label="running config")
    case = Case(RUN_STATS)
    try:
        if suffix in (".json", ".yaml") and data.draw(st.booleans(), label="tree") and (
                doc := json.loads(text) if suffix == ".json" else _yaml(text)) is not None:
            doc = data.draw(tree_mutation(doc))
            text = json.dumps(doc, indent=2) if suffix == ".json" else yaml.safe_dump(doc, width=10**9)
        else:
            text = data.draw(text_mutation(text, yaml=suffix == ".yaml"))
        saved = case.dir / "running"
        saved.mkdir()
        (saved / f"{switch}{suffix}").write_text(text, errors="surrogatepass")
        outcome = run("plan", str(ROOT / "inventories" / inv), "--running", str(saved), "--limit", switch,
                      "--format", "json")
        case.check(outcome, (str(saved),))
        if outcome.rc == 1 and not outcome.error:  # a malformed file: one problem located at the file
            (dev,) = json.loads(outcome.stdout)["devices"]
            if dev["status"] == "error" and not dev["detail"].startswith(str(saved)):
                RUN_STATS.defect(f"problem not located at the file: {dev['detail'][:300]}", case.dir)
    finally:
        case.close()


def test_fuzz_running_configs() -> None:
    _fuzz_running()
    _assert_clean(RUN_STATS)


REPLY_STATS = Stats("replies")
HOST_DUMP = """@@ rail1 ethtool
NIC statistics:
     rx_prio3_pause: 5
     rx_discards_phy: 0
@@ rail1 link
[{"ifname":"rail1","stats64":{"rx":{"bytes":10,"dropped":0},"tx":{"bytes":0,"dropped":0}}}]
@@ rail1 hw
     np_cnp_sent: 1
     rp_cnp_handled: 0
"""


def _telemetry_replies() -> dict[str, tuple[str, ...]]:
    """Switch replies as the telemetry stand-in (tests/standins/telemetry.py) prints them for two loaded ports."""
    from tests.standins import telemetry

    d = Path(tempfile.mkdtemp(prefix="fuzz-telemetry-"))
    try:
        ports = {p: {"queues": {"3": {"bytes": 10**12, "packets": 10**9, "drops": 7, "ecn": 42}},
                     "pfc": {"3": {"rx": 5, "tx": 9}}, "wd": {"3": {"stuck": 1, "recovered": 1}}}
                 for p in ("Ethernet0", "Ethernet8")}
        (d / "telemetry.json").write_text(json.dumps({"ports": ports, "routes": {"10.0.0.0/24": 2}}))
        sonic = tuple(telemetry.answer_sonic(c, d) or "" for c in ("queuestat -j", "wredstat -j", "pfcstat -s all",
                                                                   "show pfcwd stats"))
        nvue = tuple(telemetry.answer_nvue(["interface", "Ethernet0", *c, "-o", "json"], d) or ""
                     for c in (["counters", "qos"], ["qos", "pfc-watchdog"]))
        eos = tuple(telemetry.answer_eos(c + " | json", d) or "" for c in (
            "show priority-flow-control counters", "show qos interfaces ecn counters queue",
            "show interfaces counters queue drops", "show priority-flow-control counters watchdog"))
        return {"sonic": sonic, "nvue": nvue, "eos": eos, "frr-routes": (telemetry.answer_sonic(
            "show ip route json", d) or "",), "eos-routes": (telemetry.answer_eos("show ip route | json", d) or "",)}
    finally:
        shutil.rmtree(d, ignore_errors=True)


LLDP_KINDS = {"sonic": "lldp-sonic", "lldpctl": "lldpctl", "nvue": "lldp-nvue", "eos": "lldp-eos"}


def _switch_state_replies() -> list[tuple[str, tuple[str, ...]]]:
    """What a plan, a health check and a transaction read back from a switch: FRR's running config (the corpus), its
    frr-reload.py --test, the scripts' state (ip -j, tc -j, sysctl, kept copies) and BGP summary; SONiC's CONFIG_DB;
    NVUE's applied tree, BGP neighbours, qos roce and revisions; EOS's running config, session diff, BGP summary
    and inventory; SONiC's STATE_DB
    transceiver hash; `ethtool -m` per port; the host agent's report."""
    from fabric.host.model import HostReport, Item
    from fabric.targets.transceivers import PORT_MARK
    from tests.standins.eos import session_diff
    from tests.standins.frr import BANNER

    fx = ROOT / "tests" / "fixtures"
    nv = fx / "nvue" / "outputs"
    state = (fx / "frr" / "script-state-reply.txt").read_text()
    eos_running = (fx / "running" / "eos" / "leaf-su1-r1.cfg").read_text()
    optics = sorted((fx / "optics").glob("*.txt"))[:2]
    report = HostReport(host="gpu1", items=[
        Item(section="sysctl", target="-", name="net.ipv4.tcp_ecn", current="2", desired="1", status="changed"),
        Item(section="qos", target="rail1", name="trust", current="dscp", desired="dscp", status="unchanged"),
        Item(section="gid", target="rail1", name="roce v2 ipv4", status="skipped", reason="no RDMA sysfs")])
    peers = {"swp5": {"state": "Established", "pfxRcd": 3}, "swp6": {"state": "Active", "pfxRcd": 0}}
    return [
        *(("frr-running", (BANNER + p.read_text(),)) for p in sorted((fx / "brownfield" / "frr").glob("*.conf"))[:2]),
        ("frr-reload-test", ((fx / "frr" / "reload-test-leaf-su1-r1.txt").read_text(),)),
        ("frr-script-state", (state,)),
        ("sysctl", (state.partition("@@RF@@ sysctl\n")[2].partition("@@RF@@")[0],)),
        ("bgp-summary", (json.dumps({"ipv4Unicast": {"as": 65101, "peers": peers, "totalPeers": 2}}, indent=2),)),
        ("sonic-config-db", ((fx / "running" / "sonic" / "msn2700.json").read_text(),)),
        ("nvue-applied", ((fx / "running" / "nvue" / "spine1.yaml").read_text(),)),
        ("eos-running", (eos_running,)),
        ("eos-session-diff", (session_diff(eos_running, eos_running.replace("mtu 9214", "mtu 9000"), "s1"),)),
        ("nvue-bgp", ((nv / "bgp-neighbor.json").read_text(),)),
        ("nvue-roce", ((nv / "qos-roce.json").read_text(),)),
        ("nvue-revisions", ((nv / "config-revision.json").read_text(),)),
        ("eos-bgp", (json.dumps({"vrfs": {"default": {"asn": "65101", "peers": {
            "10.0.0.1": {"peerState": "Established"}, "10.0.0.3": {"peerState": "Idle"}}}}}),)),
        ("eos-inventory", (json.dumps({"xcvrSlots": {  # aristanetworks/anta unit data (tests/optics/test_optics.py)
            "1": {"mfgName": "Arista Networks", "modelName": "QSFP-100G-DR", "serialNum": "XKT203501340",
                  "hardwareRev": "21"}, "2": {"mfgName": "", "modelName": "", "serialNum": ""}}}),)),
        ("hgetall", (repr({"type": "QSFP28 or later", "manufacturer": "Mellanox", "model": "MFA1A00-C003",
                           "serial": "MT2019FT01234", "hardware_rev": "B2"}),)),
        ("ethtool-dump", ("".join(f"{PORT_MARK}swp{i}\n{p.read_text()}rc=0\n" for i, p in enumerate(optics, 1))
                          + f"{PORT_MARK}swp9\nnetlink error: No such device\nrc=1\n",)),
        ("host-report", (report.model_dump_json(by_alias=True),)),
    ]


@cache
def reply_bases() -> list[tuple[str, tuple[str, ...]]]:
    """(kind, the reply's parts): every reply of a host or a switch that a command parses — `counters` (the host
    script's dump; switch queues/PFC/watchdog of SONiC, NVUE, EOS and FRR's `ip -s -j link`/`tc -s`), `drain` (the
    same counters, FRR's and EOS's routes), `optics` (ethtool -m), `host prereqs` (lspci -vvv, nvidia-smi topo -m,
    mlxconfig, mlnx_qos, show_gids, ibv_devinfo), `accept` (perftest text and JSON, nccl-tests text and JSON,
    ethtool -S, iperf3 -J, tc), what `plan`/`apply` read back (`_switch_state_replies`) and `cabling` (LLDP of
    SONiC, lldpd, NVUE and EOS)."""
    fx = ROOT / "tests" / "fixtures"
    samples = sorted((fx / "samples").glob("*"))
    tc = fx / "tc"
    frr_dump = ('[{"ifname":"swp1","link_type":"ether","stats64":{"rx":{"bytes":10},"tx":{"bytes":20}}}]\n@@qdisc\n'
                + (tc / "ets-red-qdisc.json").read_text() + "\n@@class swp1\n"
                + (tc / "ets-red-class-swp1.txt").read_text())
    by_prefix = {"perftest-json": "extra_perftest_out_json", "nccl-json": "extra_nccl_all_reduce_2node.json",
                 "perftest": ("ib_", "extra_ib_"), "nccl": ("nccl", "extra_nccl"), "ethtool": "extra_ethtool_S",
                 "iperf3": "extra_iperf3", "mlxconfig": "extra_mlxconfig", "mlnx_qos": ("mlnx_qos", "extra_mlnx_qos"),
                 "show_gids": ("show_gids", "extra_show_gids"), "ibv_devinfo": ("ibv_devinfo", "extra_ibv_devinfo")}
    out = [("counters", (HOST_DUMP,)), ("frr-counters", (frr_dump,)),
           *((k, v) for k, v in _telemetry_replies().items()),
           *(("netstat", (p.read_text(),)) for p in sorted((fx / "netstat").glob("incast-receiver-*.txt"))),
           *(("optics", (p.read_text(),)) for p in sorted((fx / "optics").glob("*.txt"))),
           *(("lspci", (p.read_text(),)) for p in sorted((fx / "gpudirect").glob("lspci*"))),
           *(("topo", (p.read_text(),)) for p in sorted((fx / "gpudirect").glob("nvidia_smi*"))),
           *_switch_state_replies(),
           *((LLDP_KINDS[p.name.split("-")[0]], (p.read_text(),)) for p in sorted((fx / "lldp").glob("*.*"))
             if p.suffix != ".md")]
    for kind, prefix in by_prefix.items():
        out += [(kind, (p.read_text(errors="replace"),)) for p in samples if p.name.startswith(prefix)
                and not (kind in ("perftest", "nccl") and p.suffix == ".json")]
    return out


# Each kind of reply → the readers (fabric.replies.READERS) parse_reply feeds it to; every reader is fed by one
# kind at least (tests/fuzz/test_fuzz.py::test_every_reply_reader_is_fed).
FEEDS = {
    "counters": ("fabric.accept.counters.parse_host_dump",),
    "netstat": ("fabric.accept.counters.parse_netstat",),
    "frr-counters": ("fabric.parsers.iproute.port_counters",),
    "sonic": ("fabric.parsers.switch_counters.sonic",),
    "nvue": ("fabric.parsers.switch_counters.nvue",),
    "eos": ("fabric.parsers.switch_counters.eos",),
    "frr-routes": ("fabric.parsers.frr.route_widths",),
    "eos-routes": ("fabric.parsers.switch_counters.eos_route_widths",),
    "optics": ("fabric.parsers.transceiver.parse_ethtool_module",),
    "lspci": ("fabric.parsers.lspci.parse_lspci",),
    "topo": ("fabric.parsers.nvidia_smi.parse_topo",),
    "perftest-json": ("fabric.parsers.perftest.parse_perftest_json",),
    "nccl-json": ("fabric.parsers.nccl.parse_nccl_json",),
    "ibv_devinfo": ("fabric.parsers.gids.parse_ibv_devinfo_gids",),
    "perftest": ("fabric.parsers.perftest.parse_perftest",),
    "nccl": ("fabric.parsers.nccl.parse_nccl",),
    "iperf3": ("fabric.parsers.iperf3.parse_iperf3",),
    "ethtool": ("fabric.parsers.ethtool.parse_ethtool_stats",),
    "mlxconfig": ("fabric.parsers.mlxconfig.parse_mlxconfig",),
    "mlnx_qos": ("fabric.parsers.mlnx_qos.parse_mlnx_qos",),
    "show_gids": ("fabric.parsers.gids.parse_show_gids",),
    "frr-running": ("fabric.nos.frr.driver.clean_running",),
    "frr-reload-test": ("fabric.nos.frr.driver.parse_reload_test",),
    "frr-script-state": ("fabric.nos.frr.scripts.parse_state",),
    "sysctl": ("fabric.targets.shell.sysctl_values",),
    "bgp-summary": ("fabric.parsers.frr.bgp_peers",),
    "sonic-config-db": ("fabric.nos.sonic.driver.config_db_reply",),
    "eos-running": ("fabric.nos.eos.driver.running_reply",),
    "eos-session-diff": ("fabric.nos.eos.driver.parse_session_diff",),
    "nvue-applied": ("fabric.nos.nvue.driver.applied_reply",),
    "nvue-bgp": ("fabric.parsers.switch_state.nvue_bgp_peers",),
    "nvue-roce": ("fabric.parsers.switch_state.nvue_roce",),
    "nvue-revisions": ("fabric.parsers.switch_state.nvue_revisions",),
    "eos-bgp": ("fabric.parsers.switch_state.eos_bgp_peers",),
    "eos-inventory": ("fabric.parsers.switch_state.eos_inventory", "fabric.targets.transceivers.eos_inventory_modules"),
    "hgetall": ("fabric.targets.transceivers._hgetall",),
    "ethtool-dump": ("fabric.targets.transceivers.split_ethtool_dump",),
    "host-report": ("fabric.host.model.host_report",),
    "lldp-sonic": ("fabric.parsers.lldp.parse_sonic_table",),
    "lldpctl": ("fabric.parsers.lldp.parse_lldpctl",),
    "lldp-nvue": ("fabric.parsers.lldp.parse_nvue",),
    "lldp-eos": ("fabric.parsers.lldp.parse_eos",),
}


def reader_of(name: str) -> Any:
    """A registered reader by its READERS name (`module.function`)."""
    import importlib

    module, _, fn = name.rpartition(".")
    return getattr(importlib.import_module(module), fn)


def parse_reply(kind: str, parts: list[str]) -> None:
    """Parse one reply as the command that reads it does (its readers: FEEDS); raises InputError (a located problem)
    or ReplyError (a reply not in its command's form, fabric.replies) for a malformed reply, nothing else."""
    from fabric.accept.counters import rates
    from fabric.replies import json_reply

    j = functools.partial(json_reply, command="a JSON reply")

    first, *more = FEEDS[kind]
    fn = reader_of(first)
    if kind == "counters":
        problems: list[str] = []
        rates({"gpu1": fn(parts[0], "gpu1", problems)}, 1.0)
        if bad := [p for p in problems if not p.startswith("gpu1: ")]:
            raise AssertionError(f"unlocated: {bad[:1]}")
    elif kind == "sonic":
        fn(j(parts[0]), j(parts[1]), parts[2], parts[3])
    elif kind == "nvue":
        fn("swp1", j(parts[0]), j(parts[1]))
    elif kind in ("eos", "frr-routes", "eos-routes"):
        fn(*(j(x) for x in parts))
    elif kind == "frr-reload-test":
        fn(parts[0], "", "datacenter")
    elif kind == "frr-script-state":
        from fabric.nos.frr import scripts

        scripts.changes({"qos.sh": "tc qdisc replace dev swp1 root handle 1: ets bands 8 strict 8\n"}, fn(parts[0]))
    elif kind == "eos-inventory":
        reader_of(more[0])(fn(parts[0]), ["Ethernet1/1", "Ethernet2", "Et3"])
    elif first.startswith("fabric.parsers.") and first.rpartition(".")[2].startswith("parse_"):
        fn(parts[0], "reply")
    else:
        fn(parts[0])


@seed(SEED)
@budget("replies", 0.3)
@given(st.data())
def _fuzz_reply(data: st.DataObject) -> None:
    """Every host and switch reply a command parses (reply_bases), mutated and parsed as the command parses it: a
    located InputError or a ReplyError the reader raised on a check of its own (not the `reader` wrapper's net), never
    another exception, in bounded time."""
    from fabric.errors import InputError, ReplyError
    from tests.fuzz.harness import Outcome

    kind, parts = data.draw(st.sampled_from(reply_bases()), label="reply")
    parts = list(parts)
    for _ in range(data.draw(st.integers(1, 3), label="mutations")):
        i = data.draw(st.integers(0, len(parts) - 1), label="part")
        parts[i] = data.draw(text_mutation(parts[i]))
    case = Case(REPLY_STATS)
    t0 = time.monotonic()
    try:
        try:
            parse_reply(kind, parts)
            outcome = Outcome(0, "", "", 0)
        except InputError as exc:
            outcome = Outcome(2, "", "".join(f"error: {p}\n" for p in exc.problems), 0)
        except ReplyError as exc:
            outcome = Outcome(-2, "", "", 0, f"unchecked ({kind}): {exc}"[:500]) if exc.unchecked else \
                Outcome(2, "", f"error: {exc}\n", 0)
        except Exception as exc:  # what the fuzzer looks for
            import traceback

            where = traceback.extract_tb(exc.__traceback__)[-1]
            outcome = Outcome(-2, "", "", 0, f"traceback ({kind}, {Path(where.filename).name}:{where.lineno}): "
                              f"{type(exc).__name__}: {exc}"[:500])
        if time.monotonic() - t0 > 5:
            outcome = Outcome(-1, "", "", 0, f"hang ({kind}): {time.monotonic() - t0:.1f} s for {sum(map(len, parts))} "
                              "characters")
        case.check(outcome, ("reply", "-"))
    finally:
        case.close()



def test_fuzz_replies() -> None:
    _fuzz_reply()
    _assert_clean(REPLY_STATS)


def test_every_reply_reader_is_fed() -> None:
    """Every reader of a reply (`@reader`, fabric.replies.READERS, each module of fabric that marks one imported) is
    fed by a kind of reply the family mutates, and every kind has a real reply to start from, which its readers
    read with no ReplyError: a new reader without a feed fails here."""
    import importlib

    from fabric.errors import InputError
    from fabric.replies import READERS

    for path in sorted((ROOT / "fabric").rglob("*.py")):
        if "@reader(" in path.read_text():
            importlib.import_module(".".join(path.relative_to(ROOT).with_suffix("").parts))
    fed = {name for names in FEEDS.values() for name in names}
    assert set(READERS) - fed == set(), "readers the fuzzer never feeds"
    assert fed - set(READERS) == set(), "FEEDS names what is no registered reader"
    assert {kind for kind, _ in reply_bases()} == set(FEEDS)
    for kind, parts in reply_bases():  # each real reply, unmutated, reads (a truncated tool output: its InputError)
        with contextlib.suppress(InputError):
            parse_reply(kind, list(parts))


REMEDIATE_STATS = Stats("remediate")


@cache
def job_logs() -> list[str]:
    logs = sorted((ROOT / "tests" / "fixtures" / "logs").rglob("*"))
    return [t for p in logs if p.is_file() and "gpu-su1-0" in (t := p.read_text(errors="replace"))]


@cache
def example_hosts() -> list[str]:
    from fabric.design.derive import derive
    from fabric.model.load import load

    return sorted(derive(load(ROOT / "inventories" / "example")).hosts)


class Standins:
    """The recording scontrol/kubectl stand-ins (tests/standins/schedulers.py), installed once a process and reset
    before each case (its calls, taints and gets removed; the nodes each cluster knows kept). Commands reach them as
    the real processes on PATH every SUBPROCESS_EVERY cases, else in this process through `answer`: the same
    parser, refusals and record, with the exec boundary kept (argv encoded as exec encodes it — a NUL or an
    unencodable character raises what subprocess raises —, output decoded as subprocess.run(text=True) does, an
    exception of the stand-in a traceback on its stderr and exit 1)."""

    def __init__(self, hosts: list[str]) -> None:
        from tests.standins.schedulers import install

        self.dir = Path(tempfile.mkdtemp(prefix="fuzz-standins-"))
        atexit.register(shutil.rmtree, self.dir, ignore_errors=True)
        self.bin, self.state = self.dir / "bin", self.dir / "sched"
        install(self.bin, self.state, {"scontrol": hosts, "kubectl": hosts})

    def reset(self) -> None:
        for p in self.state.iterdir():
            if p.name != "nodes.json":
                p.unlink()

    def calls(self) -> list[dict[str, Any]]:
        log = self.state / "calls.jsonl"
        return [json.loads(x) for x in log.read_text().splitlines()] if log.exists() else []

    def run(self, argv: list[str], **kw: Any) -> Any:
        """subprocess.run for fabric.remediate: a stand-in on PATH answers in this process, anything else runs."""
        import locale
        import subprocess
        import traceback

        from tests.standins.schedulers import answer

        exe = shutil.which(argv[0])
        if exe is None or Path(exe).parent != self.bin:
            return subprocess.run(argv, **kw)
        for arg in argv:  # what exec refuses, subprocess raises before any process starts
            if "\0" in os.fsdecode(arg):
                raise ValueError("embedded null byte")
            os.fsencode(arg)
        try:
            rc, out, err = answer(Path(exe).name, [os.fsdecode(a) for a in argv[1:]])
            out_b = out.encode("utf-8")  # the stand-in's stdout: strict, as Python's is under a UTF-8 locale
        except Exception as exc:  # the stand-in's own traceback, as its process would print it
            rc, out_b, err = 1, b"", "Traceback (most recent call last):\n" + "".join(
                traceback.format_exception(exc)[1:])
        err_b = err.encode("utf-8", "backslashreplace")
        encoding = locale.getpreferredencoding(False)

        def text(b: bytes) -> str:
            return b.decode(encoding).replace("\r\n", "\n").replace("\r", "\n")

        return subprocess.CompletedProcess(argv, rc, text(out_b), text(err_b))


@cache
def standins() -> Standins:
    return Standins(example_hosts())


@seed(SEED)
@budget("remediate", 0.03)
@given(st.data())
def _fuzz_remediate(data: st.DataObject) -> None:
    """A job log (written by users) with its host names mutated, diagnosed with --remediate against the recording
    scontrol/kubectl stand-ins: no argument that starts with `-` or names a host outside the inventory (or more
    than one) ever reaches them, and no run acts on more than --max-hosts hosts."""
    import fabric.remediate

    text = data.draw(st.sampled_from(job_logs()), label="log")
    hosts = example_hosts()
    for h in hosts:
        if data.draw(st.booleans(), label=f"rename {h}"):
            text = text.replace(h, data.draw(st.sampled_from(
                ["ALL", "all", "--all", "-l", "gpu-su1-0[1-4]", "gpu-su1-01,gpu-su1-02", "x-y", h + " " + hosts[0],
                 "gpu-su9-01", "", h.upper(), "$(id)", h + "\x1b[2J"]), label="as"))
    text = data.draw(text_mutation(text))
    case = Case(REMEDIATE_STATS)
    sched = standins()
    sched.reset()
    env = {"PATH": f"{sched.bin}:{os.environ['PATH']}", "FABRIC_STATE": str(case.dir / "state"),
           "SCHED_STANDIN": str(sched.state)}
    in_process = REMEDIATE_STATS.cases % SUBPROCESS_EVERY != 0  # the first case of every 50: real processes
    try:
        sub = SimpleNamespace(**{**vars(fabric.remediate.subprocess), "run": sched.run})
        with mock.patch.dict(os.environ, env), (mock.patch.object(fabric.remediate, "subprocess", sub)
                                                if in_process else contextlib.nullcontext()):
            path = case.dir / "job.log"
            path.write_text(text, errors="surrogatepass")
            outcome = run("diagnose", "--inventory", str(ROOT / "inventories" / "example"), "--scheduler",
                          "slurm,kubernetes,volcano", "--remediate", str(path))
            case.check(outcome, (str(path), "--"))
            calls = sched.calls()
            refused = [c for c in calls if c["refused"]]
            acted = {c["argv"][1].removeprefix("NodeName=") for c in calls if c["tool"] == "scontrol"}
            if refused or not acted <= set(hosts) or len(acted) > 4:
                REMEDIATE_STATS.defect(f"reached a scheduler: {refused[:1] or sorted(acted)}", case.dir)
    finally:
        case.close()


def test_fuzz_remediate() -> None:
    _fuzz_remediate()
    _assert_clean(REMEDIATE_STATS)
