"""Cumulus Linux NVUE (bash over netmiko `cumulus_linux`): patch, diff, apply with a confirm timer.

diff: `nv config show -o json` (the applied revision) against the tree the rendered
`nvue-patch.yaml` sets, inside what the tool owns (`fabric.targets.owned`, `Nos.owned_whole`): the leaves
the render sets, its BGP neighbours and QoS maps as whole objects, and what an earlier apply rendered.
System, users, SNMP, syslog, NTP, the management VRF, other BGP neighbours and static routes stay.
Transaction: refuse when a pending revision already holds changes (`nv config diff` not empty: another
operator's work, never detached or discarded), `nv config patch <yaml>` (set + unset, owned leaves
only), `nv config diff`, `nv config apply --confirm <T> -y`, post-check, then
`nv config apply --confirm-yes` — or `--confirm-no`; the switch itself reverts to the previous
revision when nobody confirms in time.
"""

from __future__ import annotations

import json
import math
import time
import uuid
from typing import Any

import yaml

from fabric.fast.blockyaml import load_block
from fabric.model.running import NO_DOC, check_reply, json_document, taken_document
from fabric.nos import row_of
from fabric.nos.nvue.render import rendered_tree
from fabric.parsers import switch_counters
from fabric.parsers.lldp import Lldp
from fabric.parsers.switch_state import nvue_bgp_peers, nvue_revisions, nvue_roce
from fabric.replies import json_reply, reader
from fabric.targets import shell
from fabric.targets.base import DeviceDiff, Driver, Health, TargetError, Txn, lldp_reply
from fabric.targets.owned import Leaves, Path, ScopedDiff, removal_roots, tree_leaves
from fabric.targets.transceivers import ethtool_modules
from fabric.targets.treediff import _merge, nest


def _lines(path: Path, value: object) -> tuple[str, list[str]]:
    return " ".join(path[:-1]), [f"{path[-1]}: {value if isinstance(value, str) else repr(value)}"]


def _yaml(text: str) -> tuple[Any, bool]:
    """Plain block YAML in one pass (fabric.fast.blockyaml), JSON by the JSON reader (fabric.model.running), anything
    else (flow style) by libyaml; and whether every key is known to be a str or an int (the first two)."""
    if (doc := json_document(text)) is not NO_DOC:
        return doc, True
    try:
        return load_block(text), True
    except LookupError:
        return yaml.load(text, Loader=yaml.CSafeLoader), False


def load_running(text: str) -> dict:
    """`nv config show -o json` (the tree) or `-o yaml` (a list: `- header:`, `- set:`) → the applied tree."""
    return _running_tree(text)[0]


@reader("nv config show -o json")
def applied_reply(text: str) -> dict:
    """`load_running` of the switch's own reply, checked as a saved one is (fabric.model.running)."""
    return load_running(check_reply("nvue", "nv config show -o json", text))


def _running_tree(text: str) -> tuple[dict, bool]:
    """`load_running`, and whether every key of the tree is known to be a str or an int (read in one pass)."""
    read, data, plain = taken_document(text)
    if not read:
        data, plain = _yaml(text) if text.strip() else ({}, True)
    if isinstance(data, list):
        tree: dict = {}
        for doc in data:
            _merge(tree, (doc or {}).get("set") or {})
        return tree, plain
    return data or {}, plain


_KEYS = frozenset((str, int))


def _plain_keys(tree: dict) -> bool:
    """Every key of the nested dicts a str or an int: then equal trees have equal leaf paths (`tree_leaves`
    writes keys with str(), and a YAML key 1.0 or true equals the int 1 but is written otherwise)."""
    todo = [tree]
    for d in todo:
        if not _KEYS.issuperset(map(type, d)):
            return False
        todo += [v for v in d.values() if isinstance(v, dict)]
    return True


class NvueDriver(Driver):
    target = row_of(__name__).name
    has_confirm_timer = True
    bgp_commands = ("nv show vrf default router bgp neighbor -o json",)
    counter_commands = ("nv show interface <swp> counters qos -o json",
                        "nv show interface <swp> qos pfc-watchdog -o json")
    lldp_commands = ("nv show interface <swp> lldp -o json (each port of the intent)",)

    def _applied(self) -> dict:
        return applied_reply(shell.check(self.conn, "nv config show -o json", what="nv config show"))

    def running(self) -> str:
        return json.dumps(self._applied(), indent=2, sort_keys=True)

    def diff(self) -> DeviceDiff:
        """`diff_of(running())`, the applied tree written without indentation: `diff_of` reads both texts to the
        same tree (the same keys in the same order), and only the unindented one is written by the JSON encoder's C
        half (indented, its Python half took a third of the CPU of reading and diffing a leaf)."""
        return self.diff_of(json.dumps(self._applied(), sort_keys=True))

    def saved(self) -> str:
        """As `nv config show -o yaml` prints the applied tree."""
        return yaml.safe_dump(self._applied(), sort_keys=True, default_flow_style=False)

    def _intended(self) -> dict:
        return self._intent()[0]

    def _intent(self) -> tuple[dict, bool]:
        """The intended tree, and whether every key of it is a str or an int."""
        if self._intended_tree is not None and self._intended_tree[0] is self.intended:
            return self._intended_tree[1], self._intended_tree[2]
        tree, plain = self._intended_of(self.intended)
        self._intended_tree = (self.intended, tree, plain)
        return tree, plain

    _intended_tree: tuple[str, dict, bool] | None = None

    @staticmethod
    def _intended_of(text: str) -> tuple[dict, bool]:
        rendered = rendered_tree(text)  # the renderer's own tree of the patch it rendered last: not read again
        if rendered is not None:
            return rendered, True
        data, plain = _yaml(text)
        if isinstance(data, dict):  # a recorded snapshot (fabric rollback): the whole tree
            return data, plain
        tree: dict = {}
        for op in data or []:
            _merge(tree, op.get("set") or {})
        return tree, plain

    @classmethod
    def drained(cls, intended: str, release: str = "") -> str:
        """`nv set router bgp graceful-shutdown on` (5.9) / `enabled` (5.15 renamed on|off to enabled|disabled;
        tests/fixtures/nvue/paths.yaml `bgp-graceful-shutdown`, with the NVIDIA pages of each release)."""
        from fabric.nos.nvue.render import FORMS

        value = FORMS[release or row_of(__name__).releases[-1]].on[1]
        ops = yaml.safe_load(intended) or []
        return yaml.safe_dump([*ops, {"set": {"router": {"bgp": {"graceful-shutdown": value}}}}], sort_keys=True)

    def contradicting(self, intent: Leaves, running: Leaves) -> set[Path]:
        """A port the render breaks out (`interface <swp> link breakout`) stops existing as one port: its
        membership in a bond (`interface <bond> bond member <swp>`), its own addresses and bridge settings
        (`interface <swp> ip|ipv4|bridge …`) contradict the breakout (NVIDIA Cumulus Linux "Switch Port
        Attributes", breakout ports: the parent port is no longer usable) and go with it, marked as lines the
        tool never rendered."""
        split = {p[1] for p in intent if p[:1] == ("interface",) and p[2:4] == ("link", "breakout")}
        return {p for p in running if p[:1] == ("interface",) and len(p) > 2 and (
            (p[2:4] == ("bond", "member") and len(p) > 4 and p[4] in split)
            or (p[1] in split and p[2] in ("ip", "ipv4", "bridge")))}

    def diff_of(self, running: str) -> DeviceDiff:
        """`Driver.diff_of`; a device whose applied tree equals the intent's (every key a str or an int on both
        sides: the same leaves) has nothing to change and nothing unmanaged, which the leaf-by-leaf scope and diff
        (`scoped`) would find at a hundred times the cost (tests/nos/nvue/test_driver.py compares both)."""
        tree, plain = _running_tree(running)
        intent, intent_plain = self._intent()
        if (self.options.get("scope") is None and tree == intent and (plain or _plain_keys(tree))
                and (intent_plain or _plain_keys(intent))):
            return DeviceDiff(device=self.device, target=self.target)
        return self.device_diff(self.scoped_once(running, lambda _text: self._scoped_tree(tree)))

    def unchanged_text(self, running: str) -> DeviceDiff | None:
        """The empty diff where the saved text is byte for byte the patch rendered for this switch (`plan --running`
        against the render itself): reading it gives the renderer's tree, keys of str only (`rendered_tree`), so
        `diff_of` would take its equal-trees path to the same empty diff; any other text is read and diffed."""
        if self.options.get("scope") is None and running == self.intended:
            return DeviceDiff(device=self.device, target=self.target)
        return None

    def scoped(self, running: str) -> ScopedDiff:
        return self.scoped_once(running, lambda text: self._scoped_tree(load_running(text)))

    def _scoped_tree(self, tree: dict) -> ScopedDiff:
        have = ((tree.get("router") or {}).get("bgp") or {}).get("autonomous-system")
        want = ((self._intended().get("router") or {}).get("bgp") or {}).get("autonomous-system")
        if self.options.get("scope") is None and have is not None and want is not None and str(have) != str(want):
            raise TargetError(f"router bgp autonomous-system {have} on the device, the inventory renders {want}; the "
                              "tool never renumbers a router: correct the inventory's ASN, or renumber the switch by "
                              "hand first")
        return self.scoped_from(tree_leaves(tree), tree_leaves(self._intended()), _lines)

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
                out.update(switch_counters.nvue(port, json_reply(qos, f"nv show interface {port} counters qos"),
                                                json_reply(wd, f"nv show interface {port} qos pfc-watchdog")))
            except ValueError:
                continue  # a port NVUE has no counters for
        return out

    def lldp(self) -> Lldp:
        """`nv show interface <swp> lldp -o json` for every front-panel port of the intent, in one round trip, as
        one object of port → its document (fabric.parsers.lldp.parse_nvue)."""
        ports = sorted(p for p in (self._intended().get("interface") or {}) if p.startswith("swp"))
        script = "; ".join(f"echo '@@''@ {p}'; nv show interface {p} lldp -o json" for p in ports)
        docs: dict[str, Any] = {}
        out = shell.check(self.conn, script, what="nv show interface … lldp") if ports else ""
        for chunk in out.split("@@@")[1:]:
            port, _, text = chunk.strip().partition("\n")
            try:
                docs[port] = json_reply(text, "a JSON reply")
            except ValueError as exc:
                raise TargetError(f"nv show interface {port} lldp -o json: not JSON ({exc})") from None
        return lldp_reply("lldp-nvue", json.dumps(docs), self.device, "nv show interface <swp> lldp -o json")

    def health(self) -> Health:
        peers = nvue_bgp_peers(shell.check(self.conn, "nv show vrf default router bgp neighbor -o json",
                                           what="nv show"))
        want = self._intended().get("qos", {}).get("roce")
        problems = []
        if want:
            have = nvue_roce(shell.check(self.conn, "nv show qos roce -o json", what="nv show"))
            problems = [f"RoCE: expected qos roce {k} {v}, actual {have.get(k, 'none')}"
                        for k, v in sorted(want.items()) if have.get(k) != v]
        return Health(bgp_established=sum(s == "Established" for s in peers.values()), bgp_peers=peers,
                      lossless=problems, lossless_checked=bool(want))

    # -- optics ---------------------------------------------------------------------------------------
    def transceivers(self, ports: list[str]) -> dict[str, Any]:
        """`ethtool -m swpN` per port: Cumulus Linux documents ethtool for its module EEPROM and DOM."""
        return ethtool_modules(self.conn, ports)

    def _revisions(self) -> dict:
        return nvue_revisions(shell.check(self.conn, "nv config revision -o json", what="nv config revision"))

    def begin(self) -> Txn:
        applied = self._applied()
        applied_revs = [r for r, v in self._revisions().items() if str(v.get("state", "")).startswith("applied")]
        previous = max(applied_revs, key=lambda r: int(r) if r.isdigit() else -1, default=None)
        sd = self.scoped(json.dumps(applied, sort_keys=True))  # the text `diff` diffed: diffed once (`scoped_once`)
        ops: list[dict] = [{"unset": nest(p, None)}
                           for p in removal_roots(tree_leaves(applied), sd.sets, sd.removes)]
        sets: dict = {}
        for p, v in sorted(sd.sets.items()):
            _merge(sets, nest(p, v))
        ops += [{"set": sets}] if sets else []
        if shell.check(self.conn, "nv config diff", what="nv config diff").strip():
            raise TargetError("a pending revision already holds changes (`nv config diff` is not empty): another "
                              "operator's unapplied work; apply or detach it on the switch first, then re-run")
        path = f"/tmp/roce-fabric-{time.strftime('%Y%m%dT%H%M%S')}-{uuid.uuid4().hex[:4]}.yaml"
        shell.upload(self.conn, path, yaml.safe_dump(ops, sort_keys=True))
        try:
            shell.check(self.conn, f"nv config patch {path}", what="nv config patch")
            if not shell.check(self.conn, "nv config diff", what="nv config diff").strip():
                raise TargetError("nv config diff: the patch changed nothing in the pending revision")
        except TargetError:
            shell.run(self.conn, "nv config detach")  # our own pending revision (it was empty before the patch)
            raise
        txn = Txn(device=self.device, target=self.target, started=time.time(),
                  snapshot=json.dumps(applied, indent=2, sort_keys=True), native={"previous": previous, "patch": path})
        self.record_scope(txn, sd, tree_leaves(self._intended()))
        return txn

    def commit(self, txn: Txn, confirm_seconds: int) -> None:
        txn.committed = True
        spec = f"{confirm_seconds}s" if confirm_seconds < 60 else str(math.ceil(confirm_seconds / 60))
        out = shell.check(self.conn, f"nv config apply --confirm {spec} -y", what="nv config apply")
        rev = next((w.strip("]") for w in out.split() if w.rstrip("]").isdigit()), None)
        txn.native["revision"] = rev

    def confirm(self, txn: Txn) -> None:
        shell.check(self.conn, "nv config apply --confirm-yes", what="nv config apply --confirm-yes")

    def discard(self, txn: Txn) -> None:
        shell.run(self.conn, "nv config detach")  # the pending revision is ours: it was empty before the patch

    def txn_state(self, txn: Txn) -> str | None:
        if "left" in shell.run(self.conn, "nv config apply --confirm-status")[1]:
            return "waiting"
        applied = [r for r, v in self._revisions().items() if str(v.get("state", "")).startswith("applied")]
        current = max(applied, key=lambda r: int(r) if r.isdigit() else -1, default=None)
        if txn.native.get("revision") is not None:
            return "confirmed" if current == txn.native["revision"] else "reverted"
        return "confirmed" if self.scoped(json.dumps(self._applied())).empty else "reverted"

    def rollback(self, txn: Txn) -> None:
        status = shell.run(self.conn, "nv config apply --confirm-status")[1]
        if "left" in status:
            shell.check(self.conn, "nv config apply --confirm-no", what="nv config apply --confirm-no")
        elif txn.native.get("previous") is not None:
            shell.check(self.conn, f"nv config apply {txn.native['previous']} -y", what="nv config apply <previous>")


DRIVER = NvueDriver
