"""Open the `Site` a command works on: the inventory's real devices, or the running lab with `--lab`."""

from __future__ import annotations

from pathlib import Path

from fabric.access import InventorySite, Site
from fabric.design.derive import derive
from fabric.errors import UsageError
from fabric.model.load import Loaded, load


def open_site(inventory: Path, *, lab: bool = False, via: str = "netns",
              insecure_lab: bool = False) -> tuple[Loaded, Site]:
    """The lab only when asked for (`--lab`), never because one of the same name happens to run."""
    loaded = load(inventory)
    if not lab:
        if insecure_lab:
            raise UsageError("--insecure-lab: expected --lab as well (host keys are skipped for the lab's own "
                             "nodes only), found it alone")
        return loaded, InventorySite(derive(loaded), loaded.inv.access)
    from fabric.lab.sh import require_root
    from fabric.lab.site import LabSite
    from fabric.lab.state import load_state

    if via not in ("netns", "ssh"):
        raise UsageError(f"--via: expected netns or ssh, found {via!r}")
    require_root()
    fabric = derive(loaded, target="frr")  # the lab realizes every switch as Linux/FRR
    st = load_state(fabric.name)
    assert st is not None
    if st.phase != "up":
        raise UsageError(f"--lab: expected a running lab of {fabric.name}, found one in phase {st.phase!r} "
                         "(fabric lab up)")
    return loaded, LabSite(st, fabric, via=via, insecure=insecure_lab)
