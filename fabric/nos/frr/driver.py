"""FRR on a Linux white-box (what the lab runs): `frr-reload.py --test` for the diff, `--reload` to apply.

What the tool owns (`fabric.targets.owned`): the settings (line keys) of the sections its `frr.conf` has,
its route-maps as a whole, and what an earlier apply rendered. The file given to frr-reload.py is the
running configuration with only those lines changed, so a hand `ip route`, another VRF, `log` or
`line vty` settings and anything else the render lacks stay.

The transaction runs on the device as a detached job, so a dropped SSH connection cannot leave FRR
half-reloaded: the job reloads the new file, then waits for a `confirm` file; without it in time
(or on `cancel`) it reloads the previous running configuration, kept in the job directory. A
confirmed change is written to `<confdir>/frr.conf` (the old one kept as `frr.conf.previous`).

The rendered `interfaces.sh` and `qos.sh` (options `files`) go in the same transaction (fabric.nos.frr.scripts):
the plan shows their changed command lines against the copies the last confirmed apply ran (kept in
`<confdir>/roce-fabric/`); the job runs the changed ones before the reload, and on a script or reload failure,
a revert or a cancel runs the undo the driver wrote from the state it read before — so the switch is left as
it was. `fabric rollback` runs that recorded undo.
"""

from __future__ import annotations

import re
import time
import uuid
from typing import Any

from fabric.model.running import check_reply
from fabric.nos import row_of
from fabric.nos.frr import scripts
from fabric.parsers.frr import bgp_peers, bgp_peers_of, route_widths
from fabric.parsers.iproute import port_counters
from fabric.parsers.lldp import Lldp
from fabric.replies import json_replies, json_reply, reader
from fabric.targets import shell
from fabric.targets.base import Change, DeviceDiff, Driver, Health, TargetError, Txn, lldp_reply
from fabric.targets.owned import (
    Leaves,
    Node,
    Path,
    ScopedDiff,
    apply_text,
    line_key,
    parse_text,
    render_text,
    text_leaves,
)
from fabric.targets.transceivers import ethtool_modules

RELOAD = "/usr/lib/frr/frr-reload.py"

# Lines frr-reload.py reports that change nothing FRR shows: the OS owns the hostname; vtysh.conf owns
# the integrated-config switch; `frr defaults datacenter` already means no ebgp-requires-policy.
NOISE = ("hostname ", "service integrated-vtysh-config", "frr version ")
DEFAULTS = {"datacenter": {"no bgp ebgp-requires-policy", "timers bgp 3 9"}}

JOB = r"""#!/bin/sh
# roce-fabric FRR transaction (device side): reload new.conf; revert to previous.conf unless confirmed.
D=$1; T=$2; CONF=$3; shift 3
echo $$ > "$D/job.pid"
echo reloading > "$D/state"
undo() { [ ! -e "$D/undo.sh" ] || sh "$D/undo.sh" >> "$D/undo.log" 2>&1; }
for s in $(cat "$D/run" 2>/dev/null); do
  if ! sh "$D/scripts/$s" > "$D/scripts.log" 2>&1; then
    undo; { echo "$s failed:"; tail -n 3 "$D/scripts.log"; } > "$D/reload.log"; echo 1 > "$D/reload.rc"
    echo reverted > "$D/state"; exit 1
  fi
done
"$@" --reload "$D/new.conf" > "$D/reload.log" 2>&1; echo $? > "$D/reload.rc"
echo waiting > "$D/state"
i=0  # in fifths of a second: a confirm or cancel is seen within 0.2 s, the timer stays T seconds
while [ "$i" -lt "$((T * 5))" ]; do
  if [ -e "$D/confirm" ]; then
    [ -f "$CONF/frr.conf" ] && cp -p "$CONF/frr.conf" "$CONF/frr.conf.previous"
    cp "$D/new.conf" "$CONF/frr.conf.tmp" && mv -f "$CONF/frr.conf.tmp" "$CONF/frr.conf"
    for f in "$D"/keep/*; do
      [ -e "$f" ] || continue
      mkdir -p "$CONF/roce-fabric"
      if [ -s "$f" ]; then cp "$f" "$CONF/roce-fabric/${f##*/}"; else rm -f "$CONF/roce-fabric/${f##*/}"; fi
    done
    echo confirmed > "$D/state"; exit 0
  fi
  [ -e "$D/cancel" ] && break
  sleep 0.2; i=$((i+1))
done
echo reverting > "$D/state"
"$@" --reload "$D/previous.conf" > "$D/revert.log" 2>&1; echo $? > "$D/revert.rc"
undo
echo reverted > "$D/state"
"""


SHOW_RUNNING = "vtysh -c 'show running-config'"


@reader(SHOW_RUNNING)
def clean_running(text: str) -> str:
    """`show running-config` as a file frr-reload.py accepts (no banner lines), checked as a saved one is."""
    keep = [ln for ln in check_reply("frr", SHOW_RUNNING, text).splitlines()
            if ln.strip() not in ("Building configuration...", "Current configuration:")]
    while keep and not keep[0].strip():
        keep.pop(0)
    return "\n".join(keep) + "\n"


@reader("frr-reload.py --test")
def parse_reload_test(output: str, running: str, defaults: str = "", intended: str = "") -> list[Change]:
    """frr-reload.py --test output → changes under their section, noise and no-ops dropped. A `no X` line to
    add is a removal of X, unless the `intended` file holds `no X` itself (a negated setting the render sets:
    `no ipv6 nd suppress-ra`), which is an addition. Under "Lines To Delete" frr-reload.py prints the command
    that removes a line (its `lines_to_config`): `no X` removes X, and a plain `X` removes the negated line
    `no X` the running configuration holds."""
    negated = {ln.strip() for ln in intended.splitlines() if ln.strip().startswith("no ")}
    present = {ln.rstrip() for ln in running.splitlines()}
    quiet = DEFAULTS.get(defaults, set())
    changes: list[Change] = []
    mode = ""
    block: list[str] = []

    def flush() -> None:
        ctx: list[str] = []  # context line per indentation level
        for i, line in enumerate(block):
            level = len(line) - len(line.lstrip())
            nxt = block[i + 1] if i + 1 < len(block) else ""
            if nxt and len(nxt) - len(nxt.lstrip()) > level:  # opens a context
                del ctx[level:]
                ctx.append(line.strip())
                continue
            section = " / ".join(ctx[:level])
            orig = line.strip()
            if mode == "del":
                op, text = "-", orig[3:] if orig.startswith("no ") else f"no {orig}"
            else:
                neg = orig.startswith("no ") and orig not in negated
                op, text = ("-", orig[3:]) if neg else ("+", orig)
            if text.startswith(NOISE) or orig in quiet or (op == "+" and not section and line.rstrip() in present):
                continue
            changes.append(Change(section=section or "(global)", op=op, line=text))
        block.clear()

    def paired() -> list[Change]:
        """A removal and an addition of the same setting in one section: one change, old → new; a removal
        of a setting whose `frr defaults` value is quiet: a change to that default."""
        out: list[Change] = []
        adds = {}
        for c in changes:
            if c.op == "+":
                adds.setdefault((c.section, line_key(c.line)), []).append(c)
        used: set[int] = set()
        for c in changes:
            if c.op != "-":
                continue
            key = (c.section, line_key(c.line))
            new = next((a for a in adds.get(key, []) if id(a) not in used), None)
            if new is None and (dflt := next((q for q in sorted(quiet) if line_key(q) == key[1]), None)):
                new = Change(section=c.section, op="+", line=f"{dflt} (the `frr defaults {defaults}` value)")
            if new is None:
                out.append(c)
            else:
                used.add(id(new))
                out.append(Change(section=c.section, op="~", old=c.line, line=new.line))
        return out + [c for c in changes if c.op == "+" and id(c) not in used]

    for raw in output.splitlines():
        line = raw.rstrip()
        if line == "Lines To Delete":
            flush(); mode = "del"  # noqa: E702
            continue
        if line == "Lines To Add":
            flush(); mode = "add"  # noqa: E702
            continue
        if not line or set(line) == {"="} or not mode:
            continue
        if not line.startswith(" "):
            flush()
        block.append(line)
    flush()
    return paired()


def _lines(path: Path, value: tuple[str, ...]) -> tuple[str, list[str]]:
    return " / ".join(path[:-1]) or "(global)", list(value)


_LISTS = ("bgp community-list", "ip prefix-list", "ipv6 prefix-list")
_SEQ = re.compile(rf"^((?:{'|'.join(_LISTS)}) .*?) seq \d+ ")


def _leaves(text: str) -> Leaves:
    """Text leaves without noise lines; list entries without the `seq N` FRR numbers them with itself."""
    text = "\n".join(_SEQ.sub(r"\1 ", ln) if ln.startswith(_LISTS) else ln for ln in text.splitlines())
    return {p: v for p, v in text_leaves(parse_text(text)).items() if not all(ln.startswith(NOISE) for ln in v)}


class FrrDriver(Driver):
    """frr: options `confdir`, `vty_socket`, `workdir`, `reload` (frr-reload.py path)."""

    target = row_of(__name__).name
    has_confirm_timer = True
    bgp_commands = ("vtysh -c 'show bgp summary json' -c 'show ip route json'",)
    counter_commands = ("ip -s -j link show", "tc -s -j qdisc show", "tc -s class show dev <port> (each port)")
    lldp_commands = ("lldpctl -f json",)

    # -- helpers ------------------------------------------------------------------------------------
    @property
    def _sock(self) -> str:
        s = self.options.get("vty_socket")
        return f" --vty_socket {shell.quote(s)}" if s else ""

    @property
    def _confdir(self) -> str:
        return self.options.get("confdir") or "/etc/frr"

    @property
    def _workdir(self) -> str:
        return f"{self.options.get('workdir') or '/var/tmp/roce-fabric'}/{self.device}"

    def _vtysh(self, *commands: str) -> str:
        cs = "".join(f" -c {shell.quote(c)}" for c in commands)
        return shell.check(self.conn, f"vtysh{self._sock}{cs}", what="vtysh")

    def _reload_argv(self, rundir: str) -> str:
        sock = f" --vty_socket {shell.quote(self.options['vty_socket'])}" if self.options.get("vty_socket") else ""
        return (f"{shell.quote(self.options.get('reload') or RELOAD)} --stdout --bindir /usr/bin "
                f"--confdir {shell.quote(self._confdir)} --rundir {shell.quote(rundir)}{sock}")

    def _defaults(self) -> str:
        for ln in self.intended.splitlines():
            if ln.startswith("frr defaults "):
                return ln.split()[2]
        return ""

    @classmethod
    def drained(cls, intended: str, release: str = "") -> str:
        """`bgp graceful-shutdown` in the default instance (FRR: announce GRACEFUL_SHUTDOWN, RFC 8326; the same
        command in every FRR release the tool renders for, 8.4 and 10.2: docs.frrouting.org bgp.html
        "Graceful Shutdown")."""
        return re.sub(r"^(router bgp \d+)$", r"\1\n bgp graceful-shutdown", intended, count=1, flags=re.M)

    # -- plan ---------------------------------------------------------------------------------------
    def running(self) -> str:
        return clean_running(self._vtysh("show running-config"))

    def scoped(self, running: str) -> ScopedDiff:
        """The owned diff; a line `frr defaults <x>` already implies (DEFAULTS) counts as present."""
        self.check_renumber(running, self.intended)
        have, want = _leaves(running), _leaves(self.intended)
        quiet = DEFAULTS.get(self._defaults(), set())
        sections = {p[:-1] for p in have}
        have |= {p: v for p, v in want.items() if p not in have and set(v) <= quiet and p[:-1] in sections}
        return self.scoped_from(have, want, _lines)

    def merged(self, running: list[Node], sd: ScopedDiff) -> str:
        """The running configuration (parsed) with only the owned changes made: the file frr-reload.py gets."""
        return render_text(apply_text(running, sd.sets, sd.removes, key=lambda ln: line_key(_SEQ.sub(r"\1 ", ln))))

    def diff(self) -> DeviceDiff:
        """frr-reload.py --test of the merged file against the running configuration. A merged file that is the
        running configuration itself (the owned changes change nothing) is not sent: frr-reload.py compares a
        configuration with itself as no change (checked on the brownfield corpus), and the plan of a switch in
        sync then costs no upload, no frr-reload.py and none of its three vtysh calls."""
        running = self.running()
        sd = self.scoped(running)
        tree = parse_text(running)
        merged = self.merged(tree, sd)
        out = "" if merged == render_text(tree) else self._reload_test(merged)
        foreign = {(c.section, c.line) for c in sd.changes if c.foreign}
        changes = [c.model_copy(update={"foreign": True}) if c.op == "-" and (c.section, c.line) in foreign else c
                   for c in parse_reload_test(out, "", self._defaults(), merged)]
        restore = self.options.get("scripts_restore") or {}
        if self.options.get("scope") is None:
            changes += scripts.changes(self._rendered_scripts(), self._script_state())
        elif restore.get("undo"):  # `fabric rollback`: the scripts go back to the copies kept before that apply
            changes += scripts.changes(restore.get("kept") or {}, self._script_state())
        return DeviceDiff(device=self.device, target=self.target, unmanaged=sd.unmanaged, changes=changes)

    def _reload_test(self, merged: str) -> str:
        d = f"{self._workdir}/plan"
        shell.upload(self.conn, f"{d}/intended.conf", merged)
        return shell.check(self.conn, f"{self._reload_argv(d)} --test {shell.quote(d + '/intended.conf')} 2>/dev/null",
                           what="frr-reload.py --test")

    def health(self) -> Health:
        return self._health(bgp_peers(self._vtysh("show bgp summary json")))

    @staticmethod
    def _health(peers: dict[str, str]) -> Health:
        return Health(bgp_established=sum(s == "Established" for s in peers.values()), bgp_peers=peers)

    def routes(self) -> dict[str, int]:
        return route_widths(json_reply(self._vtysh("show ip route json"), "vtysh -c 'show ip route json'"))

    def bgp_state(self) -> tuple[Health, dict[str, int] | None]:
        """Both replies from one vtysh (it prints one JSON document per `-c`)."""
        docs = json_replies(self._vtysh("show bgp summary json", "show ip route json"),
                         "vtysh -c 'show bgp summary json' -c 'show ip route json'")
        if len(docs) != 2 or not all(isinstance(d, dict) for d in docs):  # one printed nothing: ask separately
            return super().bgp_state()
        return self._health(bgp_peers_of(docs[0])), route_widths(docs[1])

    def counters(self) -> dict[str, dict[str, int]]:
        """Per front-panel port: kernel link statistics (`ip -s -j link`; switchdev ports carry the ASIC's) and the
        egress queues of the rendered tc tree (`queue:<tc>:…`, fabric.parsers.iproute.queue_counters), in one
        round trip."""
        out = shell.check(self.conn, "ip -s -j link show; echo '@@''qdisc'; tc -s -j qdisc show; "
                          "for d in /sys/class/net/*; do echo \"@@\"\"class ${d##*/}\"; tc -s class show dev "
                          "\"${d##*/}\"; done", what="ip -s link / tc -s")
        return port_counters(out)

    def lldp(self) -> Lldp:
        """lldpd's `lldpctl -f json` (a Linux white box runs lldpd as Cumulus Linux does); option `lldp_socket`:
        the control socket of an lldpd that does not listen on the default /run/lldpd.socket."""
        s = self.options.get("lldp_socket")
        command = f"lldpctl -u {shell.quote(s)} -f json" if s else self.lldp_commands[0]
        return lldp_reply("lldpctl", shell.check(self.conn, command, what="lldpctl"), self.device, command)

    # -- optics ---------------------------------------------------------------------------------------
    def transceivers(self, ports: list[str]) -> dict[str, Any]:
        """`ethtool -m` per port (a Linux white box; the lab's veths have none: "no module")."""
        return ethtool_modules(self.conn, ports)

    # -- the Linux setup scripts (fabric.nos.frr.scripts) --------------------------------------------
    def _rendered_scripts(self) -> dict[str, str]:
        files = self.options.get("files") or {}
        return {n: files[n] for n in scripts.SCRIPTS if n in files}

    def pushed(self) -> set[str]:
        return super().pushed() | set(self._rendered_scripts())

    def device_diff(self, sd: ScopedDiff) -> DeviceDiff:
        """`plan --running`: the saved frr.conf alone (the scripts' state is read on the switch, `diff`)."""
        names = ", ".join(self._rendered_scripts())
        notes = [f"{names} not compared: a saved frr.conf holds no Linux interface or QoS state (a plan on the "
                 "switch compares them)"] if names else []
        return super().device_diff(sd).model_copy(update={"notes": notes})

    def _script_state(self) -> scripts.State:
        rendered = self._rendered_scripts()
        return scripts.parse_state(shell.check(self.conn, scripts.reads(rendered, self._confdir),
                                               what="read the state the setup scripts touch"), rendered)

    def _stage_scripts(self, d: str, txn: Txn) -> None:
        """Upload the scripts to run, their undo and the copies to keep on confirm; record the undo for
        `fabric rollback`. A rollback runs the recorded undo and keeps the copies that were there before."""
        restore = self.options.get("scripts_restore")
        if self.options.get("scope") is not None:
            if not restore or not restore.get("undo"):
                return
            st = scripts.parse_state(shell.check(self.conn, scripts.reads({}, self._confdir), what="read kept scripts"))
            keep = restore.get("kept") or {}
            # undone itself (a failed rollback) by running again what the apply ran
            run = {"undo": restore["undo"]}
            undo = "".join(st.installed.get(n, "") for n in scripts.SCRIPTS if n in keep)
        else:
            st = self._script_state()
            run = scripts.to_run(self._rendered_scripts(), st)
            if not run:
                return
            undo, problems = scripts.undo(run, st)
            if problems:
                raise TargetError("setup scripts: " + "; ".join(problems))
            keep = run
            txn.native["scripts_restore"] = {"undo": undo, "kept": {n: st.installed.get(n, "") for n in run}}
        for name, text in run.items():
            shell.upload(self.conn, f"{d}/scripts/{name}", text)
        shell.upload(self.conn, f"{d}/run", " ".join(run) + "\n")
        shell.upload(self.conn, f"{d}/undo.sh", undo)
        for name, text in keep.items():
            shell.upload(self.conn, f"{d}/keep/{name}", text)

    # -- transaction --------------------------------------------------------------------------------
    def begin(self) -> Txn:
        busy = shell.run(self.conn, f"grep -l -E '^(reloading|waiting|reverting)$' "
                                    f"{shell.quote(self._workdir)}/txn-*/state 2>/dev/null")[1].strip()
        for path in busy.splitlines():
            pid = shell.run(self.conn, f"cat {shell.quote(path.rsplit('/', 1)[0] + '/job.pid')} 2>/dev/null")[1].strip()
            if pid.isdigit() and shell.run(self.conn, f"kill -0 {pid} 2>/dev/null")[0] == 0:
                raise TargetError(f"an earlier transaction is still pending on the device ({path.rsplit('/', 2)[-2]}); "
                                  "wait for its confirm timer")
        snapshot = self.running()
        sd = self.scoped(snapshot)
        d = f"{self._workdir}/txn-{time.strftime('%Y%m%dT%H%M%S')}-{uuid.uuid4().hex[:6]}"
        shell.check(self.conn, f"mkdir -p {shell.quote(d)}", what="mkdir")
        shell.upload(self.conn, f"{d}/previous.conf", snapshot)
        shell.upload(self.conn, f"{d}/new.conf", self.merged(parse_text(snapshot), sd))
        shell.upload(self.conn, f"{d}/job.sh", JOB)
        txn = Txn(device=self.device, target=self.target, started=time.time(), snapshot=snapshot,
                  native={"dir": d})
        self._stage_scripts(d, txn)
        self.record_scope(txn, sd, _leaves(self.intended))
        return txn

    def _state(self, txn: Txn) -> str:
        return shell.job_state(self.conn, txn.native["dir"])

    def _wait(self, txn: Txn, states: set[str], timeout: float) -> str:
        return shell.wait_job_state(self.conn, txn.native["dir"], states, timeout)

    def commit(self, txn: Txn, confirm_seconds: int) -> None:
        d = txn.native["dir"]
        txn.committed = True  # from here on the device may change: undo by cancel or its own timer
        # a subshell, so the interactive shell prints no job-control lines; setsid, so a dropped SSH
        # session (SIGHUP) cannot stop the job half-way
        job = f"sh {shell.quote(d + '/job.sh')} {shell.quote(d)} {int(confirm_seconds)} {shell.quote(self._confdir)}"
        shell.check(self.conn, f"( setsid nohup {job} {self._reload_argv(d)} >/dev/null 2>&1 </dev/null & )",
                    what="start reload job")
        s = self._wait(txn, {"waiting", "reverting", "reverted"}, 120)
        rc = shell.run(self.conn, f"cat {shell.quote(d + '/reload.rc')} 2>/dev/null")[1].strip()
        if s != "waiting" or rc != "0":
            log = shell.run(self.conn, f"tail -n 3 {shell.quote(d + '/reload.log')} 2>/dev/null")[1]
            raise TargetError(f"frr-reload.py --reload failed (rc {rc or '?'}): {log.strip()[-200:]}")

    def txn_state(self, txn: Txn) -> str:
        return self._state(txn)

    def confirm(self, txn: Txn) -> None:
        d = txn.native["dir"]
        shell.check(self.conn, f"touch {shell.quote(d + '/confirm')}", what="confirm")
        if self._wait(txn, {"confirmed", "reverted"}, 30) != "confirmed":
            raise TargetError("the confirm timer expired before the change was confirmed; the device reverted")

    def rollback(self, txn: Txn) -> None:
        d = txn.native["dir"]
        if not self._state(txn):
            return  # the job never started: nothing changed
        shell.check(self.conn, f"touch {shell.quote(d + '/cancel')}", what="cancel")
        s = self._wait(txn, {"reverted", "confirmed"}, 120)
        if s != "reverted":
            raise TargetError(f"revert did not finish (state {s or 'unknown'})")


DRIVER = FrrDriver
