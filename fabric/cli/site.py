"""Open the `Site` a command works on: the inventory's real devices, or the running lab with `--lab`."""

from __future__ import annotations

from pathlib import Path

from fabric.access import InventorySite, Site
from fabric.design.load import load_fabric
from fabric.errors import UsageError
from fabric.model.load import Loaded


def open_site(inventory: Path, *, lab: bool = False, via: str = "netns",
              insecure_lab: bool = False) -> tuple[Loaded, Site]:
    """The lab only when asked for (`--lab`), never because one of the same name happens to run."""
    if not lab:
        f = load_fabric(inventory)
        if insecure_lab:
            raise UsageError("--insecure-lab: expected --lab as well (host keys are skipped for the lab's own "
                             "nodes only), found it alone")
        return f.loaded, InventorySite(f.intent, f.loaded.inv.access)
    f = load_fabric(inventory, target="frr")  # the lab realizes every switch as Linux/FRR
    loaded, fabric = f.loaded, f.intent
    from fabric.lab.sh import require_root
    from fabric.lab.site import lab_site

    require_root()
    return loaded, lab_site(fabric, via=via, insecure=insecure_lab)


def running_lab(fabric_name: str) -> bool:
    """Whether a lab of this fabric is up (for the hint when the inventory's devices do not answer)."""
    from fabric.lab.state import load_state

    try:
        st = load_state(fabric_name, required=False)
    except (OSError, ValueError):
        return False
    return st is not None and st.phase == "up"


def none_answered(site: Site, kind: str, names: list[str]) -> str:
    """The one message when not a single device answered: which, and the likely reason."""
    shown = ", ".join(names[:4]) + (f", … ({len(names)} in all)" if len(names) > 4 else "")
    hint = ("a lab of this fabric is running: add --lab to reach its devices" if site.kind == "ssh"
            and running_lab(site.name) else "check the management network, the addresses and the access section")
    return f"none of the {len(names)} {kind} of {site.name} answered ({shown}); {hint}"
