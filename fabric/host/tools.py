"""A host tool run for what it prints: no shell, bounded in time (and, where asked, in size)."""

from __future__ import annotations

import shutil
import subprocess


def tool_output(argv: list[str], *, timeout: float, max_chars: int | None = None) -> str | None:
    """stdout of `argv` (argv[0] a name on PATH or a path); None when the tool is not there, cannot run, fails,
    runs past `timeout` seconds or prints more than `max_chars`."""
    exe = shutil.which(argv[0])
    if exe is None:
        return None
    try:
        proc = subprocess.run([exe, *argv[1:]], capture_output=True, text=True, timeout=timeout, check=False)
    except (OSError, subprocess.SubprocessError, UnicodeDecodeError):
        return None
    if proc.returncode != 0 or (max_chars is not None and len(proc.stdout) > max_chars):
        return None
    return proc.stdout
