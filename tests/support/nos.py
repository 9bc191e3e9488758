"""The NOS rows as the tests use them: the shipped inventory of each NOS, and copies of an inventory re-targeted to
another NOS."""

from __future__ import annotations

import re
import shutil
from collections.abc import Callable
from pathlib import Path

from fabric.model.platforms import PLATFORMS
from tests.support.paths import FIXTURES, INVENTORIES

# the shipped inventory written for each NOS (its switches' renders are what the running fixtures hold)
INVENTORY = {"sonic": "sonic-example", "nvue": "h100-400g", "eos": "eos-example", "frr": "example"}
SPECTRUM = {name for name, p in PLATFORMS.items() if p.asic.startswith("spectrum")}


def platform_for(target: str, platform: str) -> str:
    """A platform of `target` for an inventory written for `platform`: the same where the NOS runs on it (SONiC
    and NVUE on Spectrum, EOS on Arista, FRR on a Linux white-box), else one with the same port speed."""
    fast = PLATFORMS[platform].max_speed >= 800
    if target in ("sonic", "nvue"):
        return platform if platform in SPECTRUM else ("sn5600" if fast else "sn5400")
    if target == "eos":
        return platform if platform.startswith("7060") else ("7060x6" if fast else "7060x5")
    return "linux-frr"


def keep(platform: str) -> str:
    """The role's own platform (retarget's `platform=keep`)."""
    return platform


def retarget(name: str, target: str, dst: Path, *, platform: str | Callable[[str], str] | None = None,
             release: str | None = None) -> Path:
    """A copy at `dst` of the shipped inventory `name` (or of tests/fixtures/inventories/`name`) with every role's
    target changed to `target`, its platform to `platform` (a name, or a function of the role's platform; by default
    one the NOS runs on: platform_for) and, where given, its release — nothing else."""
    src = INVENTORIES / name if (INVENTORIES / name).is_dir() else FIXTURES / "inventories" / name
    shutil.copytree(src, dst)
    pick = platform if callable(platform) else (lambda _old: platform) if platform else (
        lambda old: platform_for(target, old))
    tail = f', release: "{release}"' if release else ""
    text = (dst / "fabric.yaml").read_text()
    new = re.sub(r"\{platform: ([\w-]+), target: \w+", lambda m: f"{{platform: {pick(m[1])}, target: {target}{tail}",
                 text)
    assert new != text or f"target: {target}" in text
    (dst / "fabric.yaml").write_text(new)
    return dst
