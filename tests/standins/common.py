"""State files of one stand-in device: a directory with a lock, JSON/text state and `peers.json`.

Every stand-in command (a Python process each, hundreds per push) imports this module: modules that only some
commands need (subprocess, tempfile, copy) are imported where they are used."""

from __future__ import annotations

import fcntl
import json
import os
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]


# Set where the commands run inside one serving process (tests.standins.fleet): the device a command is for, and
# what starts a confirm timer there (a timer of that process instead of a detached one).
DEVICE: ContextVar[Path | None] = ContextVar("DEVICE", default=None)
TIMER: ContextVar[Callable[[str, tuple[str, ...]], None] | None] = ContextVar("TIMER", default=None)


def dev_dir() -> Path:
    return DEVICE.get() or Path(os.environ["STANDIN_DEV"])


@contextmanager
def locked(d: Path | None = None) -> Iterator[Path]:
    d = d or dev_dir()
    with open(d / ".lock", "w") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        yield d


def read_json(path: Path, default: Any = None) -> Any:
    return json.loads(path.read_text()) if path.exists() else default


def write_json(path: Path, data: Any) -> None:
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text(json.dumps(data, indent=2, sort_keys=True))
    tmp.replace(path)


def peers(d: Path) -> dict[str, int]:
    """peer name → the local ASN that peer is configured to expect."""
    return read_json(d / "peers.json", {})


def on_frrcfgd(config_db: dict) -> bool:
    """A SONiC CONFIG_DB whose bgp container runs frrcfgd (DEVICE_METADATA|localhost frr_mgmt_framework_config), not
    bgpcfgd."""
    return config_db.get("DEVICE_METADATA", {}).get("localhost", {}).get("frr_mgmt_framework_config") == "true"


def tsa_enabled(config_db: dict) -> bool:
    """TSA's mark in a SONiC CONFIG_DB: BGP_DEVICE_GLOBAL|STATE tsa_enabled."""
    return config_db.get("BGP_DEVICE_GLOBAL", {}).get("STATE", {}).get("tsa_enabled") == "true"


def spawn(module: str, *args: str) -> None:
    """A detached helper process (a confirm timer), surviving the SSH session; inside a serving process, its TIMER."""
    if (timer := TIMER.get()) is not None:
        timer(module, args)
        return
    import subprocess  # here: every stand-in command imports this module, few start a process

    subprocess.Popen([sys.executable, "-m", module, *args], cwd=ROOT, start_new_session=True,
                     stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                     env={**os.environ, "PYTHONPATH": str(ROOT)})
