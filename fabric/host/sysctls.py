"""Sysctls: keys are /proc/sys-relative paths (net/ipv4/conf/rail1/arp_ignore), read and written there."""

from __future__ import annotations

from pathlib import Path

from fabric.design.intent import HostIntent
from fabric.host.step import Step, change, fail, same


def _norm(value: str) -> str:
    return " ".join(value.split())


def plan_sysctls(intent: HostIntent, procfs_root: Path, pending: set[str]) -> list[Step]:
    """One step per sysctl; `pending` names interfaces this run creates (their files appear later)."""
    steps: list[Step] = []
    base = procfs_root / "sys"
    for key, value in intent.sysctls.items():
        parts = key.split("/")
        if key.startswith("/") or ".." in parts or "" in parts:
            steps.append(fail("not a /proc/sys-relative path", section="sysctl", target=key, name="value"))
            continue
        path = base / key

        def write(path: Path = path, value: str = value) -> None:
            path.write_text(f"{value}\n")

        try:
            current = _norm(path.read_text())
        except FileNotFoundError:
            if len(parts) > 3 and parts[2] == "conf" and parts[3] in pending:
                steps.append(
                    change(
                        write,
                        section="sysctl",
                        target=key,
                        name="value",
                        current=None,
                        desired=value,
                        reason=f"after {parts[3]} is created",
                    )
                )
            else:
                steps.append(
                    fail(f"no such sysctl ({path})", section="sysctl", target=key, name="value", desired=value)
                )
            continue
        except OSError as exc:
            steps.append(fail(f"cannot read {path}: {exc.strerror}", section="sysctl", target=key, name="value"))
            continue
        if current == _norm(value):
            steps.append(same(section="sysctl", target=key, name="value", current=current))
        else:
            steps.append(change(write, section="sysctl", target=key, name="value", current=current, desired=value))
    return steps
