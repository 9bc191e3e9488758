"""Community SONiC (bash over netmiko `linux`): checkpoint, JSON Patch, a confirm timer of the tool's own.

diff: `show runningconfiguration all` against the rendered `config_db.json`, inside what the tool owns
(`fabric.targets.owned`; `Nos.owned_whole` for SONiC): the tables, entries and fields the render has,
the QoS maps/profiles and BGP neighbours it names as whole entries, and what an earlier apply rendered.
PORT lanes/fec/index, DEVICE_METADATA's platform fields, platform buffer defaults, AAA, syslog, NTP,
SNMP… are never in a patch.

Transaction: `config checkpoint <name>`, then a detached job on the switch (so a dropped SSH session or
a killed tool cannot leave it half-done): `config apply-patch <file>` (RFC 6902, only the owned
changes), then it waits for a `confirm` file; with it, `config save -y`; without it in time (or on
`cancel`), `config rollback <name>`. SONiC itself has no confirm timer: this job is the tool's, and the
same one answers `fabric rollback`/`--resume` through its `state` file (`~/.roce-fabric/<txn>/`).

Drain: on a switch that runs frrcfgd, BGP_GLOBALS `graceful_shutdown` through the transaction (`drained`). bgpcfgd,
which stock images run, drops that field with the rest of the BGP it does not manage, so there the drain is SONiC's
own traffic shift (`traffic_shift`; sonic-buildimage dockers/docker-fpm-frr/base_image_files/TSA, TSB, TSC, TS):
`TSA` sets CONFIG_DB BGP_DEVICE_GLOBAL|STATE `tsa_enabled` true and bgpcfgd installs the isolation route maps on its
outbound `TO_BGP_PEER_V4/V6` maps (only the loopback is announced, with the traffic-shift community); `TSB` sets it
false; `TSC` prints `System Mode: Normal`, `Maintenance`, `No external neighbors` (no route map TSA could act on) or
`Not consistent`. The tool reads TSC first (no external neighbours: it refuses, nothing done), runs TSA/TSB, reads
TSC again (anything but the asked mode is an error), then `config save -y` (TSA asks for it: the mode survives a
reboot).

Kernel settings: the rendered `sysctl.conf` (neighbour aging and table sizes; CONFIG_DB has no knob for them)
goes through the same transaction. The running document carries them as a pseudo-table `sysctl.conf` beside
the CONFIG_DB tables (the values `sysctl -n` reads, and the persisted file's text); `plan` diffs them like any
leaf. The job persists the file where SONiC keeps its own kernel settings — `/etc/sysctl.d/`, read by
systemd-sysctl at boot (sonic-buildimage files/image_config/sysctl/90-sonic.conf is installed there by
build_templates/sonic_debian_extension.j2), as `95-roce-fabric.conf` so it follows SONiC's `90-sonic.conf` —
and applies it with `sysctl -e -p` (interfaces that do not exist yet inherit `neigh.default` when created),
before the patch; a failed patch, a revert or a cancel restores the previous file and values.
"""

from __future__ import annotations

import hashlib
import json
import re
import time
import uuid
from typing import Any

from fabric.model.running import config_db_reply as checked_config_db
from fabric.nos import row_of
from fabric.nos.sonic.brownfield import adapt, preflight, replaced_pgs, runs_frrcfgd
from fabric.parsers import switch_counters
from fabric.parsers.frr import bgp_peers, route_widths
from fabric.parsers.lldp import Lldp
from fabric.replies import json_reply, reader
from fabric.targets import shell
from fabric.targets.base import DeviceDiff, Driver, Health, Shifted, TargetError, Txn, lldp_reply
from fabric.targets.owned import (
    Leaves,
    Path,
    ScopedDiff,
    apply_leaves,
    json_patch,
    manifest_paths,
    scoped_diff,
    tree_leaves,
)
from fabric.targets.transceivers import sonic_modules

JOB = r"""#!/bin/sh
# roce-fabric SONiC transaction (device side): kernel settings and the patch; save when confirmed, else roll back.
D=$1; T=$2; CP=$3; SUDO=$4
S=${ROCE_FABRIC_SYSCTL_D:-/etc/sysctl.d}/95-roce-fabric.conf
sysctl_set() {  # $1: the file to persist (absent: remove it), $2: the values to apply now
  if [ -e "$1" ]; then $SUDO cp "$1" "$S" || return 1; else $SUDO rm -f "$S" || return 1; fi
  [ ! -e "$2" ] || $SUDO sysctl -q -e -p "$2" > /dev/null
}
sysctl_undo() { [ ! -e "$D/sysctl.apply" ] || sysctl_set "$D/sysctl.prev" "$D/sysctl.undo" >> "$D/sysctl.log" 2>&1; }
echo $$ > "$D/job.pid"
echo applying > "$D/state"
if [ -e "$D/sysctl.apply" ] && ! sysctl_set "$D/sysctl.conf" "$D/sysctl.apply" > "$D/sysctl.log" 2>&1; then
  sysctl_undo; cp "$D/sysctl.log" "$D/apply.log"; echo 1 > "$D/apply.rc"; echo failed > "$D/state"; exit 1
fi
rc=0
[ ! -e "$D/patch.json" ] || { $SUDO config apply-patch "$D/patch.json" > "$D/apply.log" 2>&1; rc=$?; }
echo $rc > "$D/apply.rc"
if [ "$rc" != 0 ]; then sysctl_undo; echo failed > "$D/state"; exit 1; fi
echo waiting > "$D/state"
i=0  # in fifths of a second (as the FRR job): a confirm or cancel is seen within 0.2 s, the timer stays T seconds
while [ "$i" -lt "$((T * 5))" ]; do
  if [ -e "$D/confirm" ]; then
    $SUDO config save -y > "$D/save.log" 2>&1
    echo confirmed > "$D/state"; exit 0
  fi
  [ -e "$D/cancel" ] && break
  sleep 0.2; i=$((i+1))
done
echo reverting > "$D/state"
$SUDO config rollback "$CP" > "$D/revert.log" 2>&1; echo $? > "$D/revert.rc"
sysctl_undo
echo reverted > "$D/state"
"""


SYSTEM_MODE = re.compile(r"System Mode: ([^\n]+)")
NO_NEIGHBORS = "No external neighbors"


def _said(out: str) -> str:
    """TSA/TSB's line about the mode (`System Mode: Normal -> Maintenance`, `System is already in …`)."""
    lines = [ln.strip() for ln in out.splitlines() if "System Mode" in ln or "already" in ln]
    return "; ".join(lines) or "no answer about the system mode"


SYSCTL = "sysctl.conf"  # the running document's pseudo-table of kernel settings (never a CONFIG_DB table name)
SYSCTL_FILE = "file"  # its leaf holding the persisted file's text
SYSCTL_PATH = "/etc/sysctl.d/95-roce-fabric.conf"


def parse_sysctl(text: str) -> dict[str, str]:
    """`key = value` lines of a sysctl.conf (comments and blank lines skipped)."""
    out = {}
    for raw in text.splitlines():
        key, sep, value = raw.partition("=")
        if sep and not raw.lstrip().startswith(("#", ";")):
            out[key.strip()] = value.strip()
    return out


def _lines(path: Path, value: object) -> tuple[str, list[str]]:
    if path[0] == SYSCTL and len(path) == 2:
        if path[1] == SYSCTL_FILE:
            text = str(value)
            digest = hashlib.sha256(text.encode()).hexdigest()[:12]
            return SYSCTL, [f"persisted in {SYSCTL_PATH}: {len(parse_sysctl(text))} settings (sha256 {digest})"]
        return SYSCTL, [f"{path[1]} = {value}"]
    if len(path) >= 3:
        return f"{path[0]}|{path[1]}", [f"{'|'.join(path[2:])}={value if isinstance(value, str) else repr(value)}"]
    return "|".join(path), ["(key)"]


SHOW_RUNNING = "show runningconfiguration all"


@reader(SHOW_RUNNING)
def config_db_reply(text: str) -> dict[str, Any]:
    """CONFIG_DB as the switch printed it, checked as a saved config_db.json is (fabric.model.running), read once."""
    return checked_config_db(SHOW_RUNNING, text)


class SonicDriver(Driver):
    target = row_of(__name__).name
    has_confirm_timer = True  # the device-side job above
    bgp_commands = ("vtysh -c 'show bgp summary json'", "vtysh -c 'show ip route json'")
    counter_commands = ("queuestat -j", "wredstat -j", "pfcstat -s all", "show pfcwd stats")
    lldp_commands = ("show lldp table",)

    @property
    def _sudo(self) -> str:
        return self.options.get("sudo", "sudo -n ")

    @property
    def _workdir(self) -> str:
        return self.options.get("workdir") or ".roce-fabric"  # relative: the login directory

    _read_ahead: dict | None = None  # CONFIG_DB as `traffic_shift` read it, for the next read on this session

    def _running(self) -> dict:
        doc, self._read_ahead = self._read_ahead, None
        return doc if doc is not None else config_db_reply(shell.check(self.conn, SHOW_RUNNING, what=SHOW_RUNNING))

    def running(self) -> str:
        """CONFIG_DB, and under `sysctl.conf` the kernel settings the intent names (module docstring)."""
        return json.dumps(self._running_doc(), indent=2, sort_keys=True)

    def _running_doc(self) -> dict:
        data = self._running()
        keys = sorted(k for k in self._intended().get(SYSCTL, {}) if k != SYSCTL_FILE)
        if keys:
            data[SYSCTL] = self._sysctl_running(keys)
        return data

    def saved(self) -> str:
        return json.dumps(self._running(), indent=2, sort_keys=True)

    def _sysctl_running(self, keys: list[str]) -> dict[str, str]:
        """The values one `sysctl -e` reads (keys the kernel lacks left out) and the persisted file's text."""
        mark = "@@RF@@"
        cmd = (f"{shell.sysctl_read(keys)}; echo {mark}; "
               f"cat \"${{ROCE_FABRIC_SYSCTL_D:-/etc/sysctl.d}}/95-roce-fabric.conf\" 2>/dev/null")
        out = shell.run(self.conn, cmd)[1]
        values, _, persisted = out.partition(mark + "\n")
        if mark not in out:
            raise TargetError("sysctl: no answer from the switch")
        read = shell.sysctl_values(values)
        data = {k: v for k in keys if (v := read.get(shell.sysctl_printed(k))) is not None}
        if persisted.strip():
            data[SYSCTL_FILE] = persisted if persisted.endswith("\n") else persisted + "\n"
        return data

    def _intended(self) -> dict:
        """The rendered config_db.json, and the rendered sysctl.conf under `sysctl.conf` (module docstring); parsed
        once for the same texts (a plan reads it three times, `read_once`): read it, never change it."""
        text = (self.options.get("files") or {}).get("sysctl.conf")
        whole = self.options.get("scope") is None

        def read() -> dict:
            data = json.loads(self.intended)
            if text and SYSCTL not in data and whole:
                data[SYSCTL] = {**parse_sysctl(text), SYSCTL_FILE: text}
            return data

        return self.read_once(("intended", self.intended, text, whole), read)

    def pushed(self) -> set[str]:
        return super().pushed() | ({"sysctl.conf"} if SYSCTL in self._intended() else set())

    @classmethod
    def drained(cls, intended: str, release: str = "") -> str:
        """BGP_GLOBALS|default `graceful_shutdown` (frrcfgd → `bgp graceful-shutdown`)."""
        data = json.loads(intended)
        data.setdefault("BGP_GLOBALS", {}).setdefault("default", {})["graceful_shutdown"] = "true"
        return json.dumps(data, indent=2, sort_keys=True)

    def traffic_shift(self, away: bool) -> Shifted | None:
        """TSA (`away`) or TSB on a switch that runs bgpcfgd, checked with TSC (module docstring); None on frrcfgd,
        where the drain's diff on this session comes next: it takes the running config read here (read once)."""
        running = self._running()
        if runs_frrcfgd(running):
            self._read_ahead = running
            return None
        cmd, want = ("TSA", "Maintenance") if away else ("TSB", "Normal")
        before = self._system_mode()
        if away and before == NO_NEIGHBORS:
            raise TargetError(f"TSC: System Mode: {before}: the switch runs bgpcfgd and has no BGP neighbour with an "
                              "outbound route map for TSA to isolate, so it cannot be drained (BGP_GLOBALS "
                              "graceful_shutdown needs frrcfgd: docs/plan-apply.md, adopting a brownfield SONiC "
                              "switch); device unchanged")
        said = _said(shell.check(self.conn, f"{self._sudo}{cmd}", what=cmd))
        after = self._system_mode()
        if after != want and not (not away and after == NO_NEIGHBORS):
            raise TargetError(f"{cmd}: {said}; TSC then reports System Mode: {after}, expected {want}")
        changed = "->" in said
        if changed:
            shell.check(self.conn, f"{self._sudo}config save -y", what="config save")
        return Shifted(changed=changed, detail=f"{cmd} (the switch runs bgpcfgd): {said}; TSC: System Mode: {after}"
                       + ("; config saved" if changed else ""))

    def _system_mode(self) -> str:
        """The mode `TSC no-stats` prints (`System Mode: …`; several BGP instances that differ: Not consistent)."""
        out = shell.check(self.conn, f"{self._sudo}TSC no-stats", what="TSC")
        modes = {m.group(1).strip() for m in SYSTEM_MODE.finditer(out)}
        if not modes:
            last = next((ln for ln in reversed(out.splitlines()) if ln.strip()), "no output")
            raise TargetError(f"TSC: expected a 'System Mode: …' line, found {last.strip()[:200]!r}")
        return modes.pop() if len(modes) == 1 else f"Not consistent ({', '.join(sorted(modes))})"

    def scoped(self, running: str) -> ScopedDiff:
        """The diff inside the owned scope, of the intent fitted to this switch (fabric.nos.sonic.brownfield);
        TargetError with every pre-flight problem when SONiC would refuse the patch (nothing is touched). Worked
        out once for the same running text (`scoped_once`; with it the `notes` and `fitted` it set)."""
        return self.scoped_once(running, self._scoped)

    def _scoped(self, running: str) -> ScopedDiff:
        have, want = json.loads(running), dict(self._intended())  # its top level changes below
        self.notes = []
        if SYSCTL not in have and want.pop(SYSCTL, None) is not None:
            self.notes = ["sysctl.conf not compared: a saved config_db holds no kernel settings (a plan on the "
                          "switch reads them)"]
        if self.options.get("scope") is not None:  # `fabric rollback`: the recorded snapshot, as it was
            return self.scoped_from(tree_leaves(have), tree_leaves(want), _lines)
        sys_have, sys_want = have.pop(SYSCTL, {}), want.pop(SYSCTL, {})
        fit = adapt(want, have, frozenset(p[1] for p in manifest_paths(self.options.get("manifest"))
                                          if p[0] == "BUFFER_PROFILE" and len(p) > 1))
        # a per-interface key of an interface the switch lacks: it inherits neigh.default when created
        sys_want = {k: v for k, v in sys_want.items() if k in sys_have or k == SYSCTL_FILE or ".default." in k}
        self.notes = [*self.notes, *fit.notes]
        self.fitted = tree_leaves({**fit.intent, **({SYSCTL: sys_want} if sys_want else {})})
        running_leaves = tree_leaves({**have, **({SYSCTL: sys_have} if sys_have else {})})
        owned, target, manifest = self.owned_scope(self.fitted, running_leaves, _lines)
        sd = scoped_diff(running_leaves, target, owned | fit.owned, _lines, earlier=manifest)
        sd.changes = replaced_pgs(sd.changes, fit.owned)
        before = set(preflight(have))
        cfg_sets = {p: v for p, v in sd.sets.items() if p[0] != SYSCTL}
        after = apply_leaves(have, cfg_sets, {p for p in sd.removes if p[0] != SYSCTL})
        problems = fit.problems + [p for p in preflight(after) if p not in before]
        if problems:
            raise TargetError("pre-flight: " + "; ".join(problems))
        return sd

    notes: list[str] = []
    fitted: Leaves = {}

    def device_diff(self, sd: ScopedDiff) -> DeviceDiff:
        return super().device_diff(sd).model_copy(update={"notes": list(self.notes)})

    def health(self) -> Health:
        peers = bgp_peers(shell.check(self.conn, "vtysh -c 'show bgp summary json'", what="vtysh"))
        running = self._running().get("PORT_QOS_MAP", {})  # each table an object (config_db_reply)
        have = {port: str(v.get("pfc_enable", "none")) if isinstance(v, dict) else "none"
                for port, v in running.items()}
        problems = [f"PFC: expected pfc_enable {v['pfc_enable']} on {port}, actual {have.get(port, 'none')}"
                    for port, v in sorted(self._intended().get("PORT_QOS_MAP", {}).items())
                    if "pfc_enable" in v and have.get(port) != v["pfc_enable"]]
        return Health(bgp_established=sum(s == "Established" for s in peers.values()), bgp_peers=peers,
                      lossless=problems, lossless_checked=True)

    # -- optics ---------------------------------------------------------------------------------------
    def transceivers(self, ports: list[str]) -> dict[str, Any]:
        """xcvrd's TRANSCEIVER_* tables in STATE_DB per port."""
        return sonic_modules(self.conn, ports, self._sudo)

    def diff(self) -> DeviceDiff:
        """`diff_of(running())`, the document written without indentation: `scoped` reads both texts to the same
        document, and only the unindented one is written by the JSON encoder's C half."""
        return self.diff_of(json.dumps(self._running_doc(), sort_keys=True))

    def routes(self) -> dict[str, int]:
        return route_widths(json_reply(shell.check(self.conn, "vtysh -c 'show ip route json'", what="vtysh"),
                                       "vtysh -c 'show ip route json'"))

    def counters(self) -> dict[str, dict[str, int]]:
        """Queues (`queuestat -j`, `wredstat -j`: bytes, drops, ECN-marked), PFC frames per priority
        (`pfcstat -s all`) and watchdog storms (`show pfcwd stats`), in one round trip
        (fabric.parsers.switch_counters.sonic)."""
        out = shell.check(self.conn, "queuestat -j; echo '@@''@'; wredstat -j; echo '@@''@'; pfcstat -s all; "
                          "echo '@@''@'; show pfcwd stats", what="queuestat/wredstat/pfcstat/pfcwd")
        parts = [*out.split("@@@"), "", "", ""][:4]
        try:
            q, w = (json_reply(p, c) for p, c in zip(parts[:2], ("queuestat -j", "wredstat -j"), strict=True))
        except ValueError as exc:
            raise TargetError(f"queuestat/wredstat -j: not JSON ({exc})") from None
        return switch_counters.sonic(q, w, parts[2], parts[3])

    def lldp(self) -> Lldp:
        """`show lldp table` (sonic-utilities lldpshow: lldpd's neighbours in the lldp container)."""
        command = self.lldp_commands[0]
        return lldp_reply("lldp-sonic", shell.check(self.conn, command, what=command), self.device, command)

    def begin(self) -> Txn:
        text = json.dumps(self._running_doc(), sort_keys=True)  # `running()`'s document, without its indentation
        doc = json.loads(text)
        sd = self.scoped(text)
        sys_have = doc.pop(SYSCTL, {})
        running = doc
        cfg = ({p: v for p, v in sd.sets.items() if p[0] != SYSCTL}, {p for p in sd.removes if p[0] != SYSCTL})
        sys_sets = {p[1]: v for p, v in sd.sets.items() if p[0] == SYSCTL}
        patch = json_patch(running, apply_leaves(running, *cfg))
        if not patch and not sys_sets and not any(p[0] == SYSCTL for p in sd.removes):
            raise TargetError("nothing to change inside the owned scope")
        name = f"roce-fabric-{time.strftime('%Y%m%dT%H%M%S')}-{uuid.uuid4().hex[:4]}"
        d = f"{self._workdir}/{name}"
        shell.check(self.conn, f"{self._sudo}config checkpoint {name}", what="config checkpoint")
        if patch:
            shell.upload(self.conn, f"{d}/patch.json", json.dumps(patch, indent=2))
        if sys_sets or any(p[0] == SYSCTL for p in sd.removes):
            self._upload_sysctl(d, sys_have, sys_sets, {p[1] for p in sd.removes if p[0] == SYSCTL})
        shell.upload(self.conn, f"{d}/job.sh", JOB)
        snapshot = {**running, **({SYSCTL: sys_have} if sys_have else {})}
        txn = Txn(device=self.device, target=self.target, started=time.time(),
                  snapshot=json.dumps(snapshot, indent=2, sort_keys=True), native={"checkpoint": name, "dir": d})
        self.record_scope(txn, sd, self.fitted or tree_leaves(self._intended()))
        return txn

    def _upload_sysctl(self, d: str, have: dict[str, str], sets: dict[str, str], removes: set[str]) -> None:
        """The job's inputs: the file to persist (none: remove it), the values to apply, and how to undo both."""
        after = {k: v for k, v in {**have, **sets}.items() if k not in removes}
        values = {k: v for k, v in sets.items() if k != SYSCTL_FILE}
        if SYSCTL_FILE in after:
            shell.upload(self.conn, f"{d}/sysctl.conf", after[SYSCTL_FILE])
        shell.upload(self.conn, f"{d}/sysctl.apply", "".join(f"{k} = {v}\n" for k, v in sorted(values.items())))
        shell.upload(self.conn, f"{d}/sysctl.undo", "".join(f"{k} = {have[k]}\n" for k in sorted(values) if k in have))
        if SYSCTL_FILE in have:
            shell.upload(self.conn, f"{d}/sysctl.prev", have[SYSCTL_FILE])

    def _state(self, txn: Txn) -> str:
        return shell.job_state(self.conn, txn.native["dir"])

    def _wait(self, txn: Txn, states: set[str], timeout: float) -> str:
        return shell.wait_job_state(self.conn, txn.native["dir"], states, timeout)

    def commit(self, txn: Txn, confirm_seconds: int) -> None:
        d = txn.native["dir"]
        txn.committed = True  # from here on the device may change: undo by cancel or the job's timer
        job = (f"sh {shell.quote(d + '/job.sh')} {shell.quote(d)} {int(confirm_seconds)} "
               f"{shell.quote(txn.native['checkpoint'])} {shell.quote(self._sudo.strip())}")
        shell.check(self.conn, f"( setsid nohup {job} >/dev/null 2>&1 </dev/null & )", what="start apply job")
        s = self._wait(txn, {"waiting", "failed", "reverting", "reverted"}, 300)
        if s != "waiting":
            log = shell.run(self.conn, f"tail -n 3 {shell.quote(d + '/apply.log')} 2>/dev/null")[1]
            raise TargetError(f"config apply-patch failed: {log.strip()[-300:] or s or 'no state'}")

    def confirm(self, txn: Txn) -> None:
        shell.check(self.conn, f"touch {shell.quote(txn.native['dir'] + '/confirm')}", what="confirm")
        if self._wait(txn, {"confirmed", "reverted"}, 60) != "confirmed":
            raise TargetError("the confirm timer expired before the change was confirmed; the device reverted")

    def rollback(self, txn: Txn) -> None:
        s = self._state(txn)
        if s in ("", "failed", "reverted"):
            return  # the job never changed anything, or it already reverted
        shell.check(self.conn, f"touch {shell.quote(txn.native['dir'] + '/cancel')}", what="cancel")
        s = self._wait(txn, {"reverted", "confirmed"}, 120)
        if s != "reverted":
            raise TargetError(f"revert did not finish (state {s or 'unknown'})")

    def txn_state(self, txn: Txn) -> str:
        """The device-side job's state: applying, waiting, confirmed, reverting, reverted, failed ('' none)."""
        return self._state(txn)


DRIVER = SonicDriver
