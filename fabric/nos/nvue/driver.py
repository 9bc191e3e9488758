"""Cumulus Linux NVUE (bash over netmiko `cumulus_linux`): patch, diff, apply with a confirm timer.

diff: `nv config show -o json` (the applied revision) against the tree the rendered
`nvue-patch.yaml` sets, as a `nv config diff`-like list; removals are leaves of objects the intent
defines. Transaction: `nv config detach`, `nv config patch <yaml>` (set + unset), `nv config diff`,
`nv config apply --confirm <T> -y`, post-check, then `nv config apply --confirm-yes` — or
`--confirm-no`; the switch itself reverts to the previous revision when nobody confirms in time.
"""

from __future__ import annotations

import json
import math
import time
import uuid

import yaml

from fabric.parsers import switch_counters
from fabric.targets import shell
from fabric.targets.base import DeviceDiff, Driver, Health, TargetError, Txn
from fabric.targets.treediff import _merge, tree_diff


class NvueDriver(Driver):
    target = "nvue"
    has_confirm_timer = True
    bgp_commands = ("nv show vrf default router bgp neighbor -o json",)
    counter_commands = ("nv show interface <swp> counters qos -o json",
                        "nv show interface <swp> qos pfc-watchdog -o json")

    def _applied(self) -> dict:
        out = shell.check(self.conn, "nv config show -o json", what="nv config show")
        try:
            return json.loads(out or "{}")
        except ValueError as exc:
            raise TargetError(f"nv config show: not JSON ({exc})") from None

    def running(self) -> str:
        return json.dumps(self._applied(), indent=2, sort_keys=True)

    def _intended(self) -> dict:
        data = yaml.safe_load(self.intended)
        if isinstance(data, dict):  # a recorded snapshot (fabric rollback): the whole tree
            return data
        tree: dict = {}
        for op in data or []:
            _merge(tree, op.get("set") or {})
        return tree

    def diff(self) -> DeviceDiff:
        changes, _ = tree_diff(self._applied(), self._intended())
        return DeviceDiff(device=self.device, target=self.target, changes=changes)

    def counters(self) -> dict[str, dict[str, int]]:
        """Per front-panel port of the intent: QoS counters (queues per TC, PFC per priority, ECN-marked per
        port) and the PFC watchdog's deadlocks, all ports in one round trip
        (fabric.parsers.switch_counters.nvue)."""
        ports = sorted(p for p in (self._intended().get("interface") or {}) if p.startswith("swp"))
        if not ports:
            return {}
        # the marker is quoted apart so that an echoed (wrapped) command line never contains it
        script = "; ".join(f"echo '@@''@ {p}'; nv show interface {p} counters qos -o json; echo '@@''@'; "
                           f"nv show interface {p} qos pfc-watchdog -o json" for p in ports)
        out: dict[str, dict[str, int]] = {}
        chunks = shell.check(self.conn, script, what="nv show interface … counters qos").split("@@@")
        for head, wd in zip(chunks[1::2], chunks[2::2], strict=False):  # "<port>\n<qos json>", "<watchdog json>"
            port, _, qos = head.strip().partition("\n")
            try:
                out.update(switch_counters.nvue(port, json.loads(qos.strip() or "{}"), json.loads(wd.strip() or "{}")))
            except ValueError:
                continue  # a port NVUE has no counters for
        return out

    def health(self) -> Health:
        out = shell.check(self.conn, "nv show vrf default router bgp neighbor -o json", what="nv show")
        peers = {n: ("Established" if str(p.get("state", "")).lower() == "established" else str(p.get("state")))
                 for n, p in (json.loads(out or "{}") or {}).items()}
        want = self._intended().get("qos", {}).get("roce")
        problems = []
        if want:
            have = json.loads(shell.check(self.conn, "nv show qos roce -o json", what="nv show") or "{}")
            problems = [f"RoCE: expected qos roce {k} {v}, actual {have.get(k, 'none')}"
                        for k, v in sorted(want.items()) if have.get(k) != v]
        return Health(bgp_established=sum(s == "Established" for s in peers.values()), bgp_peers=peers,
                      lossless=problems, lossless_checked=bool(want))

    def _revisions(self) -> dict:
        return json.loads(shell.check(self.conn, "nv config revision -o json", what="nv config revision") or "{}")

    def begin(self) -> Txn:
        applied = self._applied()
        previous = next((r for r, v in self._revisions().items() if v.get("state") == "applied"), None)
        _, ops = tree_diff(applied, self._intended())
        path = f"/tmp/roce-fabric-{time.strftime('%Y%m%dT%H%M%S')}-{uuid.uuid4().hex[:4]}.yaml"
        shell.check(self.conn, "nv config detach", what="nv config detach")
        shell.upload(self.conn, path, yaml.safe_dump(ops, sort_keys=True))
        shell.check(self.conn, f"nv config patch {path}", what="nv config patch")
        pending = shell.check(self.conn, "nv config diff", what="nv config diff")
        if not pending.strip():
            raise TargetError("nv config diff: the patch changed nothing in the pending revision")
        return Txn(device=self.device, target=self.target, started=time.time(),
                   snapshot=json.dumps(applied, indent=2, sort_keys=True), native={"previous": previous, "patch": path})

    def commit(self, txn: Txn, confirm_seconds: int) -> None:
        txn.committed = True
        spec = f"{confirm_seconds}s" if confirm_seconds < 60 else str(math.ceil(confirm_seconds / 60))
        out = shell.check(self.conn, f"nv config apply --confirm {spec} -y", what="nv config apply")
        rev = next((w.strip("]") for w in out.split() if w.rstrip("]").isdigit()), None)
        txn.native["revision"] = rev

    def confirm(self, txn: Txn) -> None:
        shell.check(self.conn, "nv config apply --confirm-yes", what="nv config apply --confirm-yes")

    def rollback(self, txn: Txn) -> None:
        status = shell.run(self.conn, "nv config apply --confirm-status")[1]
        if "left" in status:
            shell.check(self.conn, "nv config apply --confirm-no", what="nv config apply --confirm-no")
        elif txn.native.get("previous") is not None:
            shell.check(self.conn, f"nv config apply {txn.native['previous']} -y", what="nv config apply <previous>")


DRIVER = NvueDriver
