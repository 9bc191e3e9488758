"""The EOS driver's configuration session reads the switch's output in time linear in its size.

A session's lines go in one write; the driver then reads until the session prompt came back once per line. The
output is what the EOS CLI stand-in (tests.standins.eos, seeded with a real running config of
tests/fixtures/running/eos) prints for those lines, echo, outputs and prompts, handed to the driver a few
characters per read, as a slow link or a loaded switch hands it over.
"""

from __future__ import annotations

import contextlib
import io
import re
import time
from pathlib import Path

import pytest

from fabric.nos.eos.driver import EosDriver
from tests.conftest import ROOT
from tests.standins.eos import Cli
from tests.standins.harness import seed

RUNNING = ROOT / "tests" / "fixtures" / "running" / "eos" / "leaf-su1-r1.cfg"


def _typed(cli: Cli, line: str) -> str:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        cli.typed(line)
    return out.getvalue()


class _Switch:
    """The session's output as the stand-in CLI printed it (the terminal's CR LF), `chunk` characters a read."""

    def __init__(self, d: Path, lines: list[str]) -> None:
        cli = Cli(d)
        _typed(cli, "enable\n")
        _typed(cli, "configure session rf-t\n")
        text = "\n".join(lines) + "\n"  # the echo of the one write, then each line's output and the next prompt
        text += "".join(_typed(cli, ln + "\n") + cli.prompt() for ln in lines)
        self.output, self.chunk, self.at = text.replace("\n", "\r\n"), 1, 0
        self.diffs = _typed(cli, "show session-config diffs\n")

    def check_enable_mode(self) -> bool:
        return True

    def send_command(self, command: str, **_kw: object) -> str:
        return self.diffs if command == "show session-config diffs" else ""

    def write_channel(self, _text: str) -> None:
        pass

    def read_channel(self) -> str:
        out = self.output[self.at:self.at + self.chunk]
        self.at += len(out)
        return out


def _switch(tmp_path: Path, count: int) -> tuple[_Switch, list[str]]:
    d = tmp_path / f"sw-{count}"
    (d / "sessions").mkdir(parents=True)
    seed(d, "eos", RUNNING.read_text(), {})
    lines = [ln for i in range(count // 2) for ln in (f"interface Ethernet{i + 1}/1", f"   description rail-{i}")]
    return _Switch(d, lines), lines


def _read(switch: _Switch, lines: list[str], chunk: int) -> tuple[str, float]:
    """The driver's session over `switch`'s output, `chunk` characters per read: its diffs and its CPU seconds."""
    switch.chunk, switch.at = chunk, 0
    drv = EosDriver(switch, "leaf-su1-r1", RUNNING.read_text())
    t0 = time.process_time()
    diffs = drv._session("rf-t", lines)
    return diffs, time.process_time() - t0


def test_a_session_is_read_once_whatever_the_chunks(tmp_path: Path) -> None:
    """The same diffs however the output is cut (a prompt split between reads is still one prompt), and a session
    four times as long costs about four times as much to read, not sixteen (the whole output was scanned again for
    each chunk)."""
    switch, lines = _switch(tmp_path, 40)
    diffs, _ = _read(switch, lines, 4096)
    assert re.search(r"^\+\s+description rail-19$", diffs, re.M), diffs
    for chunk in (1, 3, 7):
        assert _read(switch, lines, chunk)[0] == diffs
    (short, short_lines), (long, long_lines) = _switch(tmp_path, 300), _switch(tmp_path, 1200)
    t_short = min(_read(short, short_lines, 2)[1] for _ in range(3))
    t_long = min(_read(long, long_lines, 2)[1] for _ in range(3))
    assert t_long < 8 * t_short, f"{t_short * 1000:.0f} → {t_long * 1000:.0f} CPU-ms"


class _Login:
    """A netmiko connection to the EOS CLI stand-in (tests.standins.eos): each command typed, each written line's
    output and next prompt read back."""

    def __init__(self, d: Path) -> None:
        self.cli, self.pending = Cli(d), ""
        _typed(self.cli, "enable\n")

    def check_enable_mode(self) -> bool:
        return True

    def send_command(self, command: str, **_kw: object) -> str:
        return _typed(self.cli, command + "\n")

    def write_channel(self, text: str) -> None:
        self.pending += "".join(_typed(self.cli, ln + "\n") + self.cli.prompt() for ln in text.splitlines())

    def read_channel(self) -> str:
        out, self.pending = self.pending, ""
        return out


def test_a_transaction_reads_each_configuration_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """An apply's plan diffs the running config against the intent, then `begin` diffs it again, writes the session
    from the running config's settings and records the intent's as the next manifest: each text is parsed once (it
    was twice) and the same running text diffed once (it was twice), and the transaction is the one separate
    readings gave."""
    import fabric.nos.eos.driver as eos
    from fabric.design.derive import derive
    from fabric.model.load import load
    from fabric.render import render_switch

    fabric = derive(load(ROOT / "inventories" / "eos-example"))
    intended = render_switch(fabric.switches["leaf-su1-r1"], fabric)["running-config.cfg"]
    seed(tmp_path, "eos", RUNNING.read_text(), {})
    (tmp_path / "sessions").mkdir()
    parsed: list[int] = []
    real = eos.parse_text
    monkeypatch.setattr(eos, "parse_text", lambda text: parsed.append(len(text)) or real(text))
    drv = EosDriver(_Login(tmp_path), "leaf-su1-r1", intended)
    scopes: list[int] = []
    real_scope = drv.scoped_from
    monkeypatch.setattr(drv, "scoped_from", lambda *a: scopes.append(1) or real_scope(*a))
    diff = drv.diff()  # the apply's plan, then its transaction: the same running config, diffed once
    txn = drv.begin()
    assert sorted(parsed) == sorted([len(RUNNING.read_text()), len(intended)]) and len(scopes) == 1
    assert not diff.empty and drv.diff().changes == diff.changes and len(scopes) == 1
    assert drv.scoped(RUNNING.read_text() + "!\n").changes == diff.changes and len(scopes) == 2  # another text
    sd = drv.scoped(RUNNING.read_text())
    assert txn.native["manifest"] == sorted(list(p) for p in eos.leaves(intended))
    assert txn.native["scope"] == sorted(list(p) for p in sd.owned)
    diffs = eos.parse_session_diff(drv.conn.send_command("show session-config diffs"))
    assert diffs and {c.section for c in diffs} <= {c.section.split(" / ")[0] for c in sd.changes} | {"(global)"}
