"""The `fabric` command run inside the test process: the same entry point (`fabric.cli.main`, argv, exit code,
stdout, stderr, stdin, environment, working directory) without a new Python each time.

A subprocess pays Python's start-up and the CLI's imports (about 0.4 CPU-s) on every call; a module that runs the
command a hundred times spends most of its CPU there. Tests about the process itself (a real exit
status, signals, the installed entry point, what a fresh interpreter imports)
keep a subprocess.

What differs from a subprocess, and why it does not matter to the tests that use this: the streams are not a
terminal in either (the progress display is off, the width 160); an exception that escapes `main()` is printed as
Python would print it, with exit status 1; there is no timeout (a hung command hangs the test, which the suite's
per-test timeout then reports).
"""

from __future__ import annotations

import contextlib
import io
import os
import subprocess
import sys
import traceback
from collections.abc import Iterator, Mapping
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


@contextlib.contextmanager
def _environment(env: Mapping[str, str] | None) -> Iterator[None]:
    if env is None:
        yield
        return
    saved = dict(os.environ)
    os.environ.clear()
    os.environ.update(env)
    try:
        yield
    finally:
        os.environ.clear()
        os.environ.update(saved)


def fabric(*args: str | Path, cwd: Path | str = ROOT, env: Mapping[str, str] | None = None,
           stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    """`fabric ARGS` as `subprocess.run([... 'fabric', *args], capture_output=True, text=True, cwd=cwd, env=env,
    input=stdin)` would return it (env: the whole environment, as subprocess takes it; None: this process's)."""
    argv = ["fabric", *map(str, args)]
    out, err = io.BytesIO(), io.BytesIO()
    streams = (io.TextIOWrapper(out, "utf-8", newline="", write_through=True),
               io.TextIOWrapper(err, "utf-8", newline="", write_through=True),
               io.TextIOWrapper(io.BytesIO((stdin or "").encode()), "utf-8", newline=""))
    saved = sys.argv, sys.stdout, sys.stderr, sys.stdin, Path.cwd()
    code: int = 0
    with _environment(env):
        sys.argv, (sys.stdout, sys.stderr, sys.stdin) = argv, streams
        try:
            os.chdir(cwd)
            from fabric.cli import main  # imported with the streams in place: a console made at import sees no tty

            main()
        except SystemExit as exc:
            if exc.code is None or isinstance(exc.code, int):
                code = exc.code or 0
            else:  # sys.exit("message"): printed to stderr, status 1
                print(exc.code, file=sys.stderr)
                code = 1
        except Exception:
            traceback.print_exc()
            code = 1
        finally:
            for s in streams[:2]:
                s.flush()
            sys.argv, sys.stdout, sys.stderr, sys.stdin = saved[:4]
            os.chdir(saved[4])
    return subprocess.CompletedProcess(argv, code, out.getvalue().decode(), err.getvalue().decode())
