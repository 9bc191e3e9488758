"""Global options: --version, shell completion, and the progress display (stderr only, only on a terminal,
only after a while, never with --quiet)."""

from __future__ import annotations

import io
import os
import select
import subprocess
import sys
import time
from importlib.metadata import version
from pathlib import Path

from rich.console import Console

from fabric.cli import progress
from tests.support.paths import ROOT

H100 = ROOT / "inventories" / "h100-400g"


def fabric(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", "from fabric.cli import main; main()", *args], capture_output=True,
                          text=True, timeout=120, cwd=ROOT, env={**os.environ, **(env or {})})


def fabric_on_tty(*args: str, env: dict[str, str]) -> tuple[int, str, str]:
    """Run with stderr on a pseudo-terminal (stdout a pipe): exit code, stdout, what the terminal got."""
    master, slave = os.openpty()
    env = {**os.environ, "TERM": "xterm", "COLUMNS": "250", **env}
    p = subprocess.Popen([sys.executable, "-c", "from fabric.cli import main; main()", *args], cwd=ROOT,
                         stdout=subprocess.PIPE, stderr=slave, env=env)
    os.close(slave)
    got = b""
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        ready, _, _ = select.select([master], [], [], 1)
        if ready:
            try:
                chunk = os.read(master, 65536)
            except OSError:  # the other end closed (Linux: EIO)
                break
            if not chunk:
                break
            got += chunk
        elif p.poll() is not None:
            break
    out = p.stdout.read().decode() if p.stdout else ""
    rc = p.wait(timeout=30)
    os.close(master)
    return rc, out, got.decode(errors="replace")


def test_version_from_package_metadata() -> None:
    p = fabric("--version")
    assert p.returncode == 0 and p.stdout == f"fabric {version('roce-fabric')}\n" and p.stderr == ""


def test_show_completion_prints_a_script_and_completion_completes() -> None:
    p = fabric("--show-completion", "bash")
    assert p.returncode == 0, p.stderr
    assert "_FABRIC_COMPLETE=complete_bash" in p.stdout
    assert "complete -o default -F _fabric_completion fabric" in p.stdout
    for words, cword, want in (("fabric ren", "1", "render"), ("fabric hosts inv", "2", "inventory"),
                               ("fabric lint --fo", "2", "--format")):
        p = fabric(env={"_FABRIC_COMPLETE": "complete_bash", "COMP_WORDS": words, "COMP_CWORD": cword})
        assert p.returncode == 0 and want in p.stdout.split(), (words, p.stdout, p.stderr)
    assert "--install-completion" in fabric("--help").stdout


# -- progress ---------------------------------------------------------------------------------------------

NOW = {"FABRIC_PROGRESS_DELAY": "0"}  # show at once instead of after 2 s, so that a short run shows it


def test_progress_on_a_terminal_only_on_stderr(tmp_path: Path) -> None:
    rc, out, tty = fabric_on_tty("render", str(H100), "-o", str(tmp_path / "a"), env=NOW)
    assert rc == 0 and out.startswith("rendered ") and out.endswith(f" files for 96 devices into {tmp_path / 'a'}\n")
    assert "render into" in tty and "/96" in tty  # the stage and its device count, on the terminal
    rc, out, tty = fabric_on_tty("lint", str(H100), "--format", "json", env=NOW)
    assert rc == 0 and "run the rules" in tty and out.startswith("{")


def test_no_progress_when_stderr_is_not_a_terminal(tmp_path: Path) -> None:
    for args in (["render", str(H100), "-o", str(tmp_path / "b")], ["lint", str(H100), "--format", "json"],
                 ["plan", "--offline", str(H100), "--format", "json"]):
        p = fabric(*args, env={**NOW, "FORCE_COLOR": "1"})  # a colour request is not a terminal
        assert p.returncode == 0 and p.stderr == "", (args, p.stderr)


def test_no_progress_with_quiet(tmp_path: Path) -> None:
    for flag in ("-q", "--quiet"):
        rc, out, tty = fabric_on_tty(flag, "render", str(H100), "-o", str(tmp_path / flag), env=NOW)
        assert rc == 0 and out.startswith("rendered ") and " files for 96 devices" in out and tty == ""
    rc, out, tty = fabric_on_tty("-q", "lint", str(H100), "--format", "sarif", env=NOW)
    assert rc == 0 and tty == "" and '"version": "2.1.0"' in out


def test_no_progress_for_work_shorter_than_the_delay(tmp_path: Path) -> None:
    rc, _, tty = fabric_on_tty("render", str(ROOT / "inventories" / "example"), "-o", str(tmp_path / "c"),
                               env={"FABRIC_PROGRESS_DELAY": "30"})
    assert rc == 0 and tty == ""


class _Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_tracker_devices_counts_and_result_lines() -> None:
    term = _Tty()
    console = Console(file=term, force_terminal=True, width=100)
    with progress.track("plan", console=console, delay=0) as p:
        assert p.enabled
        p.stage("plan fab", total=2)
        p.item("leaf-1", "connecting")
        p.item("leaf-1", "done", done=True)
        p.advance()
        p.print("gpu-01: ok (:100: stays as written)")
        time.sleep(0.2)
    text = term.getvalue()
    assert "gpu-01: ok (:100: stays as written)" in text  # no emoji or markup substitution
    assert "plan fab" in text and "1/2" in text
    plain = Console(file=io.StringIO(), width=100)  # not a terminal: result lines only
    with progress.track("plan", console=plain, delay=0) as p:
        assert not p.enabled
        p.stage("plan fab", total=1)
        p.print("gpu-01: ok")
    assert plain.file.getvalue() == "gpu-01: ok\n"  # type: ignore[attr-defined]
