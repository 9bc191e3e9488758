"""The fuzzer (issues 17, 21): structured mutations of every shipped inventory, of device configs for
`lint --configs`, of tool outputs for `parse` and `diagnose`, and of host intents. Every run is judged by
tests/fuzz/harness.py (no traceback, exit 0/1/2, no hang, bounded memory, every error located, nothing written
outside the output directory). Issue 21 adds saved running configs for `plan --running`, every host and
switch reply a command parses (reply_bases), and user-written job logs for `diagnose --remediate` against the
recording scontrol/kubectl stand-ins (nothing refused by them, no host outside the inventory, at most --max-hosts).
CI runs it with a fixed seed and a small budget; `make fuzz` runs every family long (tests/fuzz/long.py).
Counts go to build/fuzz/*.json."""

from __future__ import annotations

import atexit
import contextlib
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


# -- issue 21: saved running configs, host and switch replies, logs handed to a scheduler -----------------
RUNNING_INV = {"sonic": "sonic-example", "nvue": "h100-400g", "eos": "eos-example", "frr": "example"}
RUN_STATS = Stats("running")


@cache
def running_bases() -> list[tuple[str, str, str, str]]:
    """(inventory, switch, suffix, text): each target's rendered intent and the realistic fixtures."""
    from fabric.design.derive import derive
    from fabric.model.load import load
    from fabric.nos import NOS
    from fabric.render import render_switch

    out = []
    for target, inv in RUNNING_INV.items():
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


@cache
def reply_bases() -> list[tuple[str, tuple[str, ...]]]:
    """(kind, the reply's parts): every reply of a host or a switch that a command parses — `counters` (the host
    script's dump; switch queues/PFC/watchdog of SONiC, NVUE, EOS and FRR's `ip -s -j link`/`tc -s`), `drain` (the
    same counters, FRR's and EOS's routes), `optics` (ethtool -m), `host prereqs` (lspci -vvv, nvidia-smi topo -m,
    mlxconfig, mlnx_qos, show_gids, ibv_devinfo), `accept` (perftest text and JSON, nccl-tests text and JSON,
    ethtool -S, iperf3 -J, tc) and `cabling` (LLDP of SONiC, lldpd, NVUE and EOS)."""
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
           *(("optics", (p.read_text(),)) for p in sorted((fx / "optics").glob("*.txt"))),
           *(("lspci", (p.read_text(),)) for p in sorted((fx / "gpudirect").glob("lspci*"))),
           *(("topo", (p.read_text(),)) for p in sorted((fx / "gpudirect").glob("nvidia_smi*"))),
           *((LLDP_KINDS[p.name.split("-")[0]], (p.read_text(),)) for p in sorted((fx / "lldp").glob("*.*"))
             if p.suffix != ".md")]
    for kind, prefix in by_prefix.items():
        out += [(kind, (p.read_text(errors="replace"),)) for p in samples if p.name.startswith(prefix)
                and not (kind in ("perftest", "nccl") and p.suffix == ".json")]
    return out


def parse_reply(kind: str, parts: list[str]) -> None:
    """Parse one reply as the command that reads it does; raises InputError (a located problem) or ValueError (what
    a driver turns into `not readable`) for a malformed reply, nothing else."""
    from fabric import parsers as P
    from fabric.accept.counters import parse_host_dump, rates
    from fabric.parsers import frr, iproute, switch_counters
    from fabric.parsers.gids import parse_ibv_devinfo_gids
    from fabric.parsers.lspci import parse_lspci
    from fabric.parsers.nvidia_smi import parse_topo
    from fabric.parsers.transceiver import parse_ethtool_module

    j = frr.reply_json
    if kind == "counters":
        problems: list[str] = []
        rates({"gpu1": parse_host_dump(parts[0], "gpu1", problems)}, 1.0)
        if bad := [p for p in problems if not p.startswith("gpu1: ")]:
            raise AssertionError(f"unlocated: {bad[:1]}")
    elif kind == "frr-counters":
        iproute.port_counters(parts[0])
    elif kind == "sonic":
        switch_counters.sonic(j(parts[0]), j(parts[1]), parts[2], parts[3])
    elif kind == "nvue":
        switch_counters.nvue("swp1", j(parts[0]), j(parts[1]))
    elif kind == "eos":
        switch_counters.eos(*(j(x) for x in parts))
    elif kind == "frr-routes":
        frr.route_widths(j(parts[0]))
    elif kind == "eos-routes":
        switch_counters.eos_route_widths(j(parts[0]))
    else:
        fn = {"optics": parse_ethtool_module, "lspci": parse_lspci, "topo": parse_topo, "perftest-json":
              P.parse_perftest_json, "nccl-json": P.parse_nccl_json, "ibv_devinfo": parse_ibv_devinfo_gids,
              **P.PARSERS}[kind]
        fn(parts[0], "reply")


@seed(SEED)
@budget("replies", 0.3)
@given(st.data())
def _fuzz_reply(data: st.DataObject) -> None:
    """Every host and switch reply a command parses (reply_bases), mutated and parsed as the command parses it: a
    located InputError or a driver's ValueError, never another exception, in bounded time."""
    from fabric.errors import InputError
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
        except ValueError as exc:
            outcome = Outcome(2, "", "", 0) if kind in JSON_REPLIES else Outcome(
                -2, "", "", 0, f"traceback ({kind}): ValueError: {exc}"[:500])
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


JSON_REPLIES = {"frr-counters", "sonic", "nvue", "eos", "frr-routes", "eos-routes"}


def test_fuzz_replies() -> None:
    _fuzz_reply()
    _assert_clean(REPLY_STATS)


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
