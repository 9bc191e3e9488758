"""The EOS stand-in's configuration session (tests.standins.eos): a session kept as a tree while its login is in it
gives what the text merge gave for every line (tests/oracles/eos_session.py), its cost grows with its lines only,
and a session its login leaves or drops keeps its lines.

Inputs are real configurations: the running configs of tests/fixtures/running/eos and Arista AVD's dc1-leaf1a
(tests/fixtures/brownfield/eos, SOURCE.md), and the sessions the real EOS driver makes between them and the
tool's render (a brownfield apply, its rollback, a one-knob change).
"""

from __future__ import annotations

import contextlib
import io
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from fabric.nos.eos.driver import EosDriver, leaves, session_lines
from tests.conftest import ROOT
from tests.oracles import eos_session as oracle
from tests.standins.eos import Cli, Config, session_diff
from tests.standins.harness import seed

FIXTURES = ROOT / "tests" / "fixtures"
RUNNING = FIXTURES / "running" / "eos" / "leaf-su1-r1.cfg"
AVD = FIXTURES / "brownfield" / "eos" / "leaf-su1-r1.cfg"
KNOB = "qos:\n  preset: nvidia-roce\n  ecn:\n    3: {min_bytes: 160000}\n"  # every port's ECN threshold changes


def _typed(cli: Cli, line: str) -> str:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        cli.typed(line + "\n")
    return out.getvalue()


def _render(knob: str = "") -> str:
    """The rendered config of leaf-su1-r1 of inventories/eos-example (`knob`: its qos.yaml instead)."""
    from fabric.access import InventorySite
    from fabric.design.derive import derive
    from fabric.model.inventory import Access
    from fabric.model.load import load

    with tempfile.TemporaryDirectory() as tmp:
        inv = Path(tmp) / "inv"
        inv.mkdir()
        for f in (ROOT / "inventories" / "eos-example").iterdir():
            (inv / f.name).write_text(knob if knob and f.name == "qos.yaml" else f.read_text())
        return InventorySite(derive(load(inv)), Access(known_hosts=__file__)).switch("leaf-su1-r1").intended


def _session(running: str, intended: str) -> list[str]:
    """The lines of the session the EOS driver opens to take `running` to `intended`."""
    return session_lines(EosDriver(None, "leaf-su1-r1", intended).scoped(running), leaves(running))


def _both(text: str, lines: list[str]) -> tuple[list[tuple[list[str], str, str]], list[tuple[list[str], str, str]]]:
    """Each line's (context, error, session text) after it: the text merge's and the kept tree's."""
    old, new, config = [], [], Config(text)
    ctx_old: list[str] = []
    ctx_new: list[str] = []
    for line in lines:
        text, ctx_old, err = oracle.merge_line(text, ctx_old, line)
        old.append((ctx_old, err, text))
        ctx_new, err = config.merge(ctx_new, line)
        new.append((ctx_new, err, config.text()))
    return old, new


def test_the_tools_sessions_give_what_the_text_merge_gave(tmp_path: Path) -> None:
    """The driver's sessions for a brownfield apply (AVD's leaf to the render), its rollback (the render back to
    AVD's leaf, re-entering the corpus's commands), a one-knob change and a fixture's hand change: through the CLI,
    every reply and the session's diffs as the text merge printed them, and its text after every line the same."""
    render, knob = _render(), _render(KNOB)
    fixture = RUNNING.read_text().replace("   mtu 9214\n", "   mtu 1500\n", 1)
    cases = {"apply": (AVD.read_text(), render), "rollback": (render, AVD.read_text()), "knob": (render, knob),
             "hand change": (fixture, render)}
    for what, (running, intended) in cases.items():
        lines = _session(running, intended)
        assert len(lines) > 3, what
        old, new = _both(running, lines)
        assert new == old, what
        d = tmp_path / what.replace(" ", "-")
        (d / "sessions").mkdir(parents=True)
        seed(d, "eos", running, {})
        cli = Cli(d)
        _typed(cli, "enable")
        _typed(cli, "configure session s1")
        replies = [_typed(cli, ln) for ln in lines]
        assert replies == [err + "\n" if err else "" for _ctx, err, _text in old], what
        diffs = session_diff(running, oracle.shown(old[-1][2]), "s1")
        assert _typed(cli, "show session-config diffs") == diffs.rstrip("\n") + "\n", what
        _typed(cli, "commit")
        assert (d / "running.cfg").read_text() == oracle.shown(old[-1][2]), what


def _words() -> list[str]:
    """Lines of the real configs (stripped), a few the CLI refuses, and lines of the brownfield corpus."""
    found = {ln.strip() for f in (RUNNING, AVD) for ln in f.read_text().splitlines()
             if ln.strip() and not ln.strip().startswith("!")}
    return [*sorted(found), "frobnicate now", "mtu 9300", "mtu 9000", "router bgp 65999", "end"]


# a few lines of tests/fixtures/running/eos, two values of some settings: the same text and the same setting met
# again and again in one mode (settings taken out and set again, several of one text)
FEW = ["interface Ethernet1/1", "interface Ethernet2/1", "description rail1", "description rail2", "mtu 9214",
       "mtu 4000", "no switchport", "switchport", "tx-queue 3", "no priority", "priority strict",
       "random-detect ecn minimum-threshold 100000 bytes maximum-threshold 1500000 bytes max-mark-probability 100",
       "random-detect ecn minimum-threshold 160000 bytes maximum-threshold 1500000 bytes max-mark-probability 100",
       "router bgp 65101", "maximum-paths 4 ecmp 4", "maximum-paths 8 ecmp 8", "end"]
LINE = st.tuples(st.integers(0, 2), st.sampled_from(["", "no ", "default "]),  # a line of FEW: 3 in 4
                 st.one_of(st.sampled_from(FEW), st.sampled_from(FEW), st.sampled_from(FEW), st.sampled_from(_words())))
TWO = "interface Ethernet1/1\n   description rail1\n   description rail2\n   mtu 9214\n   mtu 9214\n"
FEW_TEXT = st.lists(st.tuples(st.integers(0, 2), st.sampled_from(FEW)), max_size=30).map(
    lambda lines: "".join("   " * depth + line + "\n" for depth, line in lines))


@settings(max_examples=400, deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow])
@given(base=st.one_of(st.sampled_from([RUNNING, AVD]).map(Path.read_text), FEW_TEXT),
       typed=st.lists(LINE, max_size=60))
@example(base=RUNNING.read_text(), typed=[(0, "no ", "interface Ethernet1/1"), (0, "", "interface Ethernet1/1"),
                                          (1, "", "mtu 4000")])  # a section taken out and entered again
@example(base=TWO, typed=[(0, "", "interface Ethernet1/1"), (1, "no ", "description rail2"),
                          (1, "no ", "description rail1"), (1, "", "description rail1")])  # two holes of one setting
@example(base=TWO, typed=[(0, "", "interface Ethernet1/1"), (1, "no ", "mtu 9214"), (1, "", "mtu 4000"),
                          (1, "default ", "description rail9"), (1, "", "mtu 9214")])  # two of one text
def test_any_lines_give_what_the_text_merge_gave(base: str, typed: list[tuple[int, str, str]]) -> None:
    """Random sessions of real config lines at any depth, taken out with `no`/`default` and set again, refused ones
    among them (unknown words, an MTU above 9214, a second `router bgp`, a line in no mode), on a real config or on
    one of a few lines met many times: the same context, reply and text after every line."""
    old, new = _both(base, ["   " * depth + verb + line for depth, verb, line in typed])
    assert new == old


def _ports(text: str, extra: int) -> str:
    """The render with `extra` more ports, each a copy of its first port's section (Ethernet1/1) renamed."""
    at = text.index("interface Ethernet1/1\n")
    block = text[at:text.index("\n!\n", at) + 3]
    more = "".join(block.replace("Ethernet1/1", f"Ethernet{100 + i}/1") for i in range(extra))
    return text[:at] + more + text[at:]


def _cost(tmp_path: Path, running: str, lines: list[str]) -> float:
    """CPU seconds of the session's lines typed through the CLI."""
    (tmp_path / "sessions").mkdir(parents=True)
    seed(tmp_path, "eos", running, {})
    cli = Cli(tmp_path)
    _typed(cli, "enable")
    _typed(cli, "configure session s1")
    t0 = time.process_time()
    for ln in lines:
        _typed(cli, ln)
    took = time.process_time() - t0
    assert "+      random-detect ecn minimum-threshold 160000" in _typed(cli, "show session-config diffs")
    return took


def test_a_session_costs_its_lines_not_lines_times_its_configuration(tmp_path: Path) -> None:
    """The driver's session for a one-knob change (each port's ECN threshold) on a leaf of 64 ports costs about four
    times that on a leaf of 16, not sixteen: a typed line was merged by reading, parsing and writing the session's
    whole configuration (hundreds of switches of 64 ports shared the stand-in fleet's thread)."""
    render, knob = _render(), _render(KNOB)
    cost = {}
    for ports in (16, 64):
        running = _ports(render, ports - 8)
        lines = _session(running, _ports(knob, ports - 8))
        assert len(lines) == 4 * ports
        cost[ports] = min(_cost(tmp_path / f"{ports}-{i}", running, lines) for i in range(3))
    assert cost[64] < 8 * cost[16], f"{cost[16] * 1000:.0f} → {cost[64] * 1000:.0f} CPU-ms"


def _login(d: Path, lines: list[str]) -> str:
    """One login of the stand-in as sshd runs it (a process reading the typed lines until its input ends)."""
    p = subprocess.run([sys.executable, "-m", "tests.standins.eos"], input="".join(ln + "\n" for ln in lines),
                       cwd=ROOT, env={**os.environ, "STANDIN_DEV": str(d), "PYTHONPATH": str(ROOT)},
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    return p.stdout


def test_a_session_left_or_dropped_keeps_its_lines(tmp_path: Path) -> None:
    """A session its login leaves (`end`) and one whose login ends inside it stay pending with their lines: another
    login lists both and, entering one again, sees its diffs; the running config is untouched."""
    seed(tmp_path, "eos", RUNNING.read_text(), {})
    _login(tmp_path, ["enable", "configure session left", "interface Ethernet1/1", "   no mtu 9214", "   mtu 9000",
                      "end", "configure session dropped", "interface Ethernet2/1", "   description kept"])
    out = _login(tmp_path, ["enable", "show configuration sessions", "configure session left",
                            "show session-config diffs", "abort", "configure session dropped",
                            "show session-config diffs"])
    assert "  left " in out and "  dropped " in out
    left, dropped = out.split("--- system:/running-config")[1:]
    assert "-   mtu 9214" in left and "+   mtu 9000" in left
    assert "+   description kept" in dropped
    assert (tmp_path / "running.cfg").read_text() == RUNNING.read_text()
    assert sorted(p.name for p in (tmp_path / "sessions").glob("*.cfg")) == ["dropped.cfg"]
