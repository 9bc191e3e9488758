"""The output framing of `fabric.targets.shell.run` against the terminal transcripts a loaded device gives.

The device side is real bash: the fake connection runs the line the tool sends in `bash`, with a `show` on its PATH
that prints a real SONiC `show runningconfiguration all` (tests/fixtures/running/sonic), and wraps bash's output the
way a pseudo-terminal hands it to netmiko: the echo of the typed line (once; twice when the line was typed ahead of
the prompt, the kernel's echo and then readline's; cut into pieces by a terminal that wraps or scrolls long lines),
then the output, then the prompt, which netmiko strips.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from fabric.targets import shell
from fabric.targets.base import TargetError
from tests.support.paths import FIXTURES

RUNNING = FIXTURES / "running" / "sonic" / "sn4600c.json"
PROMPT = "admin@leaf-su1-r1:~$ "


def _wrapped(text: str, width: int = 32) -> str:
    """The echo as a terminal that wraps at `width` columns shows it (readline's ` \\r` at each wrap)."""
    return " \r".join(text[i:i + width] for i in range(0, len(text), width))


ECHOES: dict[str, Callable[[str], str]] = {
    "plain": lambda line: f"{line}\r\n",
    "typed-ahead": lambda line: f"{line}\r\n{PROMPT}{line}\r\n",
    "wrapped": lambda line: f"{_wrapped(line)}\r\n",
    "stale-earlier-output": lambda line: f"__RF_BEGIN_00000000\r\nold\r\n__RF_RC=0\r\n{PROMPT}{line}\r\n",
}


class Device:
    """A netmiko connection's `send_command` (strip_command=False, strip_prompt=True) over real bash."""

    def __init__(self, bindir: Path, echo: Callable[[str], str]) -> None:
        self.bindir, self.echo, self.sent = bindir, echo, []

    def send_command(self, line: str, **_: object) -> str:
        self.sent.append(line)
        ran = subprocess.run(["bash", "--norc", "--noprofile", "-c", line], stdout=subprocess.PIPE,
                             stderr=subprocess.STDOUT, text=True, env={"PATH": f"{self.bindir}:/usr/bin:/bin"},
                             timeout=30)
        return self.echo(line) + ran.stdout.replace("\n", "\r\n")


@pytest.fixture
def bindir(tmp_path: Path) -> Path:
    show = tmp_path / "show"
    show.write_text(f"#!/bin/sh\n[ \"$1 $2\" = 'runningconfiguration all' ] && exec cat {RUNNING}\nexit 1\n")
    show.chmod(0o755)
    return tmp_path


@pytest.mark.parametrize("echo", list(ECHOES))
def test_output_is_what_the_command_printed(bindir: Path, echo: str) -> None:
    """Whatever the echo looks like, the output is the command's own, byte for byte, and parses as JSON."""
    dev = Device(bindir, ECHOES[echo])
    out = shell.check(dev, "show runningconfiguration all", what="show runningconfiguration all")
    assert out == RUNNING.read_text().rstrip("\n")
    assert json.loads(out) == json.loads(RUNNING.read_text())


@pytest.mark.parametrize("echo", list(ECHOES))
def test_exit_status_and_stderr(bindir: Path, echo: str) -> None:
    dev = Device(bindir, ECHOES[echo])
    assert shell.run(dev, "echo first; echo second >&2; exit_with() { return $1; }; exit_with 3") == (
        3, "first\nsecond")
    assert shell.run(dev, "show nothing") == (1, "")
    assert shell.run(dev, "true") == (0, "")


def test_begin_line_never_in_the_echo(bindir: Path) -> None:
    """The begin line the shell prints is not in the typed line, and each call has its own."""
    dev = Device(bindir, ECHOES["plain"])
    shell.run(dev, "true")
    shell.run(dev, "true")
    first, second = dev.sent
    assert first != second
    token = first.split("__RF_BEGIN ", 1)[1].split(";", 1)[0]
    assert f"__RF_BEGIN_{token}" not in first


def test_no_begin_line_is_an_error(bindir: Path) -> None:
    """A reply without the shell's begin line (not a shell, a line cut off) is a TargetError, not a wrong output."""

    class Eaten(Device):
        def send_command(self, line: str, **kw: object) -> str:
            return super().send_command(line).split("__RF_BEGIN_", 1)[0] + "__RF_RC=0\r\n"

    with pytest.raises(TargetError, match="no output framing from 'show'"):
        shell.run(Eaten(bindir, ECHOES["plain"]), "show runningconfiguration all")
