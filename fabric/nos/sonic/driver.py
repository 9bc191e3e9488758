"""Community SONiC (bash over netmiko `linux`): checkpoint, JSON Patch, rollback.

diff: `show runningconfiguration all` against the rendered `config_db.json`, table by table (only
tables the intent has), as `TABLE|key` field changes. Transaction: `config checkpoint <name>`,
`config apply-patch <file>` (RFC 6902, computed from the diff), post-check, then `config save -y`
— or `config rollback <name>`. SONiC has no confirm timer: a dropped connection is handled by
reconnecting and rolling back to the checkpoint.
"""

from __future__ import annotations

import json
import time
import uuid

from fabric.parsers import switch_counters
from fabric.parsers.frr import route_widths
from fabric.targets import shell
from fabric.targets.base import DeviceDiff, Driver, Health, TargetError, Txn
from fabric.targets.treediff import configdb_diff


class SonicDriver(Driver):
    target = "sonic"
    has_confirm_timer = False
    bgp_commands = ("vtysh -c 'show bgp summary json'", "vtysh -c 'show ip route json'")
    counter_commands = ("queuestat -j", "wredstat -j", "pfcstat -s all", "show pfcwd stats")

    @property
    def _sudo(self) -> str:
        return self.options.get("sudo", "sudo -n ")

    def _running(self) -> dict:
        out = shell.check(self.conn, "show runningconfiguration all", what="show runningconfiguration all")
        try:
            return json.loads(out)
        except ValueError as exc:
            raise TargetError(f"show runningconfiguration all: not JSON ({exc})") from None

    def running(self) -> str:
        return json.dumps(self._running(), indent=2, sort_keys=True)

    def _intended(self) -> dict:
        return json.loads(self.intended)

    def diff(self) -> DeviceDiff:
        changes, _ = configdb_diff(self._running(), self._intended())
        return DeviceDiff(device=self.device, target=self.target, changes=changes)

    def health(self) -> Health:
        data = json.loads(shell.check(self.conn, "vtysh -c 'show bgp summary json'", what="vtysh") or "{}")
        peers = {n: p.get("state", "") for af in data.values() if isinstance(af, dict)
                 for n, p in (af.get("peers") or {}).items()}
        running = self._running().get("PORT_QOS_MAP", {})
        problems = [f"PFC: expected pfc_enable {v['pfc_enable']} on {port}, actual "
                    f"{running.get(port, {}).get('pfc_enable', 'none')}"
                    for port, v in sorted(self._intended().get("PORT_QOS_MAP", {}).items())
                    if "pfc_enable" in v and running.get(port, {}).get("pfc_enable") != v["pfc_enable"]]
        return Health(bgp_established=sum(s == "Established" for s in peers.values()), bgp_peers=peers,
                      lossless=problems, lossless_checked=True)

    def routes(self) -> dict[str, int]:
        return route_widths(json.loads(shell.check(self.conn, "vtysh -c 'show ip route json'", what="vtysh") or "{}"))

    def counters(self) -> dict[str, dict[str, int]]:
        """Queues (`queuestat -j`, `wredstat -j`: bytes, drops, ECN-marked), PFC frames per priority
        (`pfcstat -s all`) and watchdog storms (`show pfcwd stats`), in one round trip
        (fabric.parsers.switch_counters.sonic)."""
        out = shell.check(self.conn, "queuestat -j; echo '@@''@'; wredstat -j; echo '@@''@'; pfcstat -s all; "
                          "echo '@@''@'; show pfcwd stats", what="queuestat/wredstat/pfcstat/pfcwd")
        parts = [*out.split("@@@"), "", "", ""][:4]
        try:
            q, w = (json.loads(p.strip() or "{}") for p in parts[:2])
        except ValueError as exc:
            raise TargetError(f"queuestat/wredstat -j: not JSON ({exc})") from None
        return switch_counters.sonic(q, w, parts[2], parts[3])

    def begin(self) -> Txn:
        running = self._running()
        name = f"roce-fabric-{time.strftime('%Y%m%dT%H%M%S')}-{uuid.uuid4().hex[:4]}"
        shell.check(self.conn, f"{self._sudo}config checkpoint {name}", what="config checkpoint")
        _, patch = configdb_diff(running, self._intended())
        path = f"/tmp/{name}.json-patch"
        shell.upload(self.conn, path, json.dumps(patch, indent=2))
        return Txn(device=self.device, target=self.target, started=time.time(),
                   snapshot=json.dumps(running, indent=2, sort_keys=True),
                   native={"checkpoint": name, "patch": path})

    def commit(self, txn: Txn, confirm_seconds: int) -> None:
        txn.committed = True
        shell.check(self.conn, f"{self._sudo}config apply-patch {txn.native['patch']}", what="config apply-patch")

    def confirm(self, txn: Txn) -> None:
        shell.check(self.conn, f"{self._sudo}config save -y", what="config save")

    def rollback(self, txn: Txn) -> None:
        shell.check(self.conn, f"{self._sudo}config rollback {txn.native['checkpoint']}", what="config rollback")


DRIVER = SonicDriver
