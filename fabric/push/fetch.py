"""`fabric fetch`: every switch's running configuration saved as `<switch><suffix>` in one directory.

The suffix is the NOS row's `running_suffix` (`.json` SONiC `show runningconfiguration all`, `.yaml` NVUE
`nv config show -o yaml`, `.cfg` EOS `show running-config`, `.conf` FRR `show running-config`): the layout
`fabric lint --configs DIR` reads. The configuration is read through the push driver, as `plan` reads it.
Running configs hold secrets: files are 0600 in a 0700 directory, written through fabric.safefile.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Literal

from pydantic import BaseModel

from fabric.access import Credentials, SwitchEndpoint
from fabric.nos import NOS
from fabric.push import state
from fabric.push.engine import connect
from fabric.safefile import private_dir, write_private
from fabric.targets.base import TargetError
from fabric.targets.session import close, conn_errors, reason

Progress = Callable[[str, str], None]  # (device, stage)


class Fetched(BaseModel):
    device: str
    target: str
    status: Literal["saved", "unreachable", "error"]
    path: str = ""
    bytes: int = 0
    detail: str = ""
    seconds: float = 0.0


def fetch_device(ep: SwitchEndpoint, cred: Credentials, out: Path, *, timeout: float = 10,
                 progress: Progress = lambda _d, _s: None) -> Fetched:
    """Read one switch's running configuration and write it to `out/<switch><suffix>`."""
    t0 = time.monotonic()
    drv, why = connect(ep, cred, timeout=timeout, progress=progress)
    if drv is None:
        return Fetched(device=ep.device, target=ep.target, status="unreachable", detail=why,
                       seconds=time.monotonic() - t0)
    try:
        progress(ep.device, "reading")
        text = drv.saved()
    except (TargetError, *conn_errors()) as exc:
        progress(ep.device, "failed")
        return Fetched(device=ep.device, target=ep.target, status="error", detail=state.scrub(reason(exc)),
                       seconds=time.monotonic() - t0)
    finally:
        close(drv)
    path = out / f"{ep.device}{NOS[ep.target].running_suffix}"
    write_private(path, text if text.endswith("\n") else text + "\n")
    progress(ep.device, "done")
    return Fetched(device=ep.device, target=ep.target, status="saved", path=str(path), bytes=len(text.encode()),
                   seconds=time.monotonic() - t0)


def fetch_all(eps: list[SwitchEndpoint], cred: Credentials, out: Path, *, workers: int = 8, timeout: float = 10,
              progress: Progress = lambda _d, _s: None) -> list[Fetched]:
    """Every endpoint, at most `workers` at a time; results in the order of `eps`."""
    private_dir(out)
    with ThreadPoolExecutor(max_workers=max(1, workers)) as pool:
        futs = [pool.submit(fetch_device, ep, cred, out, timeout=timeout, progress=progress) for ep in eps]
        return [f.result() for f in futs]
