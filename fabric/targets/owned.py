"""What the tool owns on a switch, and the diff restricted to it: one mechanism for every NOS.

A configuration is seen as leaves, path → value:
- SONiC CONFIG_DB and NVUE: the leaves of the nested tree — (`PORT`, `Ethernet0`, `mtu`) → "9216";
- EOS and FRR text: (section line, …, key) → the lines with that key, where a line's key is the line
  without a leading `no` and without its last word (`mtu 9214` → `mtu`; `neighbor swp5 remote-as 65000`
  → `neighbor swp5 remote-as`), so `mtu 1500` on the device and `mtu 9214` in the intent are one setting.

The tool owns (`scope`):
1. every leaf the intent has — the entries it renders (its ports, BGP neighbours, QoS maps and profiles,
   keyed as the inventory names them) and only the fields it renders: platform fields such as a SONiC
   PORT's `lanes`/`fec` or an NVUE port's breakout stay as they are;
2. every leaf under an entry the intent has whose path matches a pattern the NOS row declares wholly owned
   (`Nos.owned_whole`, e.g. a QoS map the tool defines: a mapping the intent lacks is removed); in text
   configurations the lines of each BGP neighbour or peer group the render names, in its own instance
   (`Nos.owned_objects`) — never a whole `router bgp`: other neighbours, peer groups, VRF instances,
   EVPN, `redistribute` stay — and device settings that contradict a rendered one (`Nos.owned_implied`);
   a device whose `router bgp <asn>` differs from the intent's is an error, never renumbered
   (`Nos.no_renumber`);
3. every leaf an earlier apply rendered (`manifest`, kept in the push state): removing it is in scope and
   the plan marks it `(rendered by an earlier apply)` — a port dropped from the inventory, a renamed profile.

Everything else on the device is unmanaged: never changed, and counted (`ScopedDiff.unmanaged`). A removal
of a line the tool never rendered (cases 2, not 1 or 3) is marked `foreign`: `apply` refuses it unless
the operator passes --allow-unowned-removal. Settings a NOS row declares never owned (`Nos.never_owned`, FRR
`log`) are outside the scope even where the render has them.

A name is not ownership (`namesakes`): an object the render names that the device holds and that configuration
the tool never rendered uses (a peer group with other members, a route-map another neighbour uses) is someone
else's, and the switch is refused before any diff.
"""

from __future__ import annotations

import copy
import fnmatch
import operator
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

from pydantic import BaseModel, ConfigDict


class Change(BaseModel):
    """One line of a section-aware diff under a section path: `+` to add, `-` to remove, `~` a setting
    changed from `old` to `line` (the same key on both sides: `timers bgp 5 15` → `timers bgp 3 9`)."""

    model_config = ConfigDict(frozen=True)
    section: str
    op: str  # "+", "-" or "~"
    line: str
    old: str = ""  # with "~": the value on the device before
    earlier: bool = False  # a removal of what an earlier apply rendered and the inventory no longer has
    foreign: bool = False  # a removal (or change) of a line the tool never rendered: `apply` wants
    # --allow-unowned-removal for it (a setting that contradicts a rendered one, a line of an owned object)

    def text(self) -> str:
        """As the plan prints it."""
        body = f"~ {self.old} → {self.line}" if self.op == "~" else f"{self.op} {self.line}"
        return body + (EARLIER if self.earlier else FOREIGN if self.foreign else "")


EARLIER = "  (rendered by an earlier apply, no longer in the inventory)"
FOREIGN = "  (never rendered by the tool)"


class ScopeError(ValueError):
    """The device runs something the tool must not take over (a router under another ASN): one located line."""


Path = tuple[str, ...]
Leaves = dict[Path, Any]


# -- trees (SONiC CONFIG_DB, NVUE) ------------------------------------------------------------------
def tree_leaves(tree: Any, path: Path = ()) -> Leaves:
    """Leaves of a nested dict by path; an empty dict is a leaf (a SONiC key without fields, NVUE `{}`)."""
    out: Leaves = {}
    if isinstance(tree, dict) and tree:
        _tree_into(out, tree, path)
    elif path:
        out[path] = tree
    return out


def _tree_into(out: Leaves, tree: dict, path: Path) -> None:
    for k, v in tree.items():
        if isinstance(v, dict) and v:
            _tree_into(out, v, (*path, str(k)))
        else:
            out[(*path, str(k))] = v


def apply_leaves(tree: dict, sets: Leaves, removes: Iterable[Path]) -> dict:
    """`tree` with leaves set and removed, containers that only the removals emptied gone too, as a new tree that
    copies the containers on the changed paths and shares every other one with `tree` (read it; never change it)."""
    out = dict(tree)
    own = {id(out)}  # the containers this call made (each stays referenced from `out`)

    def inner(node: dict, key: str) -> dict:
        """node[key], a container, made this call's own first (node is)."""
        child = node[key]
        if id(child) not in own:
            child = node[key] = dict(child)
            own.add(id(child))
        return child

    for path in removes:
        chain = [out]
        for p in path[:-1]:
            if not isinstance(chain[-1].get(p), dict):
                break
            chain.append(inner(chain[-1], p))
        else:
            chain[-1].pop(path[-1], None)
            for i in range(len(chain) - 1, 0, -1):  # prune what became empty
                if chain[i]:
                    break
                chain[i - 1].pop(path[i - 1], None)
    for path, value in sets.items():
        node = out
        for p in path[:-1]:
            if not isinstance(node.get(p), dict):
                node[p] = {}
                own.add(id(node[p]))
            node = inner(node, p)
        node[path[-1]] = copy.deepcopy(value)
    return out


def removal_roots(running: Leaves, sets: Leaves, removes: Iterable[Path]) -> list[Path]:
    """The highest paths to unset so that every removed leaf goes and the objects left empty go too
    (NVUE keeps an object whose last leaf is unset)."""
    stay = [p for p in running if p not in set(removes)] + list(sets)
    keep = {p[:i] for p in stay for i in range(1, len(p) + 1)}
    roots = {next(p[:i] for i in range(1, len(p) + 1) if p[:i] not in keep) for p in removes}
    return sorted(r for r in roots if not any(r[:i] in roots for i in range(1, len(r))))


def _ptr(path: Iterable[str]) -> str:
    return "".join("/" + p.replace("~", "~0").replace("/", "~1") for p in path)


def json_patch(old: dict, new: dict, path: Path = ()) -> list[dict]:
    """The RFC 6902 operations that turn `old` into `new`, as deep as both sides are non-empty dicts."""
    ops: list[dict] = []
    for k in sorted(set(old) | set(new)):
        p = (*path, k)
        if k not in new:
            ops.append({"op": "remove", "path": _ptr(p)})
        elif k not in old:
            ops.append({"op": "add", "path": _ptr(p), "value": new[k]})
        elif isinstance(old[k], dict) and isinstance(new[k], dict) and old[k] and new[k]:
            ops += json_patch(old[k], new[k], p)
        elif old[k] != new[k]:
            ops.append({"op": "replace", "path": _ptr(p), "value": new[k]})
    return ops


# -- text configurations (EOS, FRR) -----------------------------------------------------------------
@dataclass
class Node:
    line: str
    children: list[Node] = field(default_factory=list)


CLOSERS = frozenset({"exit", "exit-address-family", "exit-vrf", "exit-vni", "end", "!"})
BANNERS = ("Building configuration...", "Current configuration:")


def parse_text(text: str) -> list[Node]:
    """Indentation → nesting; comments (`!`…), closers (`exit`, `end`) and banners dropped."""
    root = Node("")
    stack: list[tuple[int, Node]] = [(-1, root)]
    for raw in text.splitlines():
        s = raw.strip()
        if not s or s[0] == "!" or s in CLOSERS or s in BANNERS:
            continue
        indent = len(raw) - len(raw.lstrip())
        while stack[-1][0] >= indent:
            stack.pop()
        node = Node(s, [])
        stack[-1][1].children.append(node)
        stack.append((indent, node))
    return root.children


LISTED = frozenset({"network"})
FREE_TEXT = frozenset({"description", "hostname"})
VALUED = frozenset({"hostname", "description", "priority", "speed", "mtu"})  # `<setting> <word>`: a value


def line_key(line: str, settings: tuple[str, ...] = ()) -> str:
    """The setting a line sets: without a leading `no`, its last word and the plain numbers before it
    (`timers bgp 3 9` → `timers bgp`; `ip route 192.0.2.0/24 Null0` → `ip route 192.0.2.0/24`).
    `settings`: regexes of settings whose key is the match whatever follows (EOS `maximum-paths 4 ecmp 4`
    and `maximum-paths 64` are one setting: `Nos.setting_keys`)."""
    if settings:
        bare = line[3:] if line.startswith("no ") else line
        for match in _matchers(settings):
            if m := match(bare):
                return m.group(0)
    words = line.split()
    if words and words[0] == "no" and len(words) > 1:
        words = words[1:]
    if words and words[0] in FREE_TEXT:
        return words[0]  # `description <any words>`: one setting
    if words and words[0] in LISTED:
        return " ".join(words)  # one entry of a list (`network 10.0.0.1/32`): each line its own setting
    if len(words) == 2 and not any(c.isdigit() for c in words[1]) and words[0] not in VALUED:
        return " ".join(words)  # a flag (`bgp disable-ebgp-connected-route-check`, `ipv6 enable`), not a value
    end = len(words) - 1 if len(words) > 1 else len(words)  # without the last word and the numbers before it
    while end > 1 and words[end - 1].isdigit():
        end -= 1
    return " ".join(words[:end])


@lru_cache(maxsize=16)
def _matchers(patterns: tuple[str, ...]) -> tuple[Callable[[str], Any], ...]:
    """Each regex of `patterns` compiled once: its `match`."""
    return tuple(re.compile(pat).match for pat in patterns)


def text_leaves(nodes: list[Node], path: Path = (), settings: tuple[str, ...] = ()) -> Leaves:
    """(section lines…, key) → the lines with that key (a section with children is a path element)."""
    lines: dict[Path, list[str]] = {}
    _text_into(lines, {}, nodes, path, settings)
    return {p: tuple(v) for p, v in lines.items()}


def _text_into(lines: dict[Path, list[str]], keys: dict[str, str], nodes: list[Node], path: Path,
               settings: tuple[str, ...]) -> None:
    """Each line of `nodes` appended under its path; `keys`: each line's key once read (the same line recurs: each
    port's `mtu 9214`)."""
    for n in nodes:
        if n.children:
            _text_into(lines, keys, n.children, (*path, n.line), settings)
            continue
        if (key := keys.get(n.line)) is None:
            key = keys[n.line] = line_key(n.line, settings)
        lines.setdefault((*path, key), []).append(n.line)


def render_text(nodes: list[Node], indent: str = " ", depth: int = 0) -> str:
    """FRR-style text: children indented, `exit` after each section (`exit-address-family` for one)."""
    out: list[str] = []
    for n in nodes:
        out.append(indent * depth + n.line)
        if n.children:
            out.append(render_text(n.children, indent, depth + 1).rstrip("\n"))
            if n.line.startswith("address-family"):
                out.append(indent * depth + "exit-address-family")
            elif depth == 0 or n.line.startswith("vrf "):
                out.append(indent * depth + ("exit-vrf" if depth and n.line.startswith("vrf ") else "exit"))
        if depth == 0:
            out.append("!")
    return "\n".join(out) + "\n"


def apply_text(nodes: list[Node], sets: Leaves, removes: Iterable[Path], settings: tuple[str, ...] = (),
               key: Callable[[str], str] | None = None) -> list[Node]:
    """The text tree with each changed key's lines replaced (or dropped), new ones appended; a section that loses its
    last line goes too. `key`: a line's key as the leaves were made (default `line_key` with `settings`). A new tree
    that copies the sections on the changed paths and shares every other one with `nodes` (read it; never change
    it)."""
    key = key or (lambda ln: line_key(ln, settings))
    out = list(nodes)
    own: set[int] = set()  # the sections this call made (each stays referenced from `out`)
    todo = {**{p: () for p in removes}, **sets}
    for path, lines in todo.items():
        chain: list[tuple[list[Node], Node]] = []  # (siblings, section) from the top
        siblings = out
        for sec in path[:-1]:
            at = next((i for i, n in enumerate(siblings) if n.line == sec and n.children), None)
            if at is None:
                if not lines:
                    break
                node = Node(sec)
                siblings.append(node)
            elif id(node := siblings[at]) not in own:
                node = siblings[at] = Node(node.line, list(node.children))
            own.add(id(node))
            chain.append((siblings, node))
            siblings = node.children
        else:
            idx = [i for i, n in enumerate(siblings) if not n.children and key(n.line) == path[-1]]
            at = idx[0] if idx else len(siblings)
            for i in reversed(idx):
                del siblings[i]
            siblings[at:at] = [Node(ln) for ln in lines]
            for parent, node in reversed(chain):
                if node.children:
                    break
                parent.remove(node)
    return out


# -- the scope and the diff inside it ---------------------------------------------------------------
_Glob = tuple[int, tuple[Callable[[str], Any], ...]]


@lru_cache(maxsize=64)
def _globs(patterns: tuple[str, ...]) -> tuple[dict[str, tuple[_Glob, ...]], tuple[_Glob, ...]]:
    """Each `a/b*/c` pattern as its length and one compiled matcher per part (fnmatchcase's own translation),
    in order, looked up by a path's first part: (first part → the patterns that can match, those of any other)."""
    split = [pat.split("/") for pat in patterns]
    compiled = [(len(parts), tuple(re.compile(fnmatch.translate(q)).match for q in parts)) for parts in split]
    literal = {parts[0] for parts in split if not any(c in parts[0] for c in "*?[")}
    by_first = {first: tuple(g for parts, g in zip(split, compiled, strict=True) if g[1][0](first))
                for first in literal}
    others = tuple(g for parts, g in zip(split, compiled, strict=True) if parts[0] not in literal)
    return by_first, others


def whole_entries(paths: Iterable[Path], patterns: tuple[str, ...]) -> dict[Path, Path]:
    """Each path under an entry that one of `patterns` names (`route-map *`) → that entry, by the first pattern that
    matches it; paths under none are left out. A path's first part is matched once for all paths that share it."""
    out: dict[Path, Path] = {}
    if not patterns:
        return out
    by_first, others = _globs(patterns)
    candidates: dict[str, tuple[_Glob, ...]] = {}  # a first part → the patterns whose first part matches it
    for path in paths:
        if not path:
            continue
        if (globs := candidates.get(path[0])) is None:
            globs = candidates[path[0]] = tuple(g for g in by_first.get(path[0], others) if g[1][0](path[0]))
        for k, parts in globs:
            if len(path) >= k and all(map(operator.call, parts[1:], path[1:k])):
                out[path] = path[:k]
                break
    return out


Objects = tuple[tuple[str, str], ...]  # (section regex, key regex whose group 1 names the object)
Object = tuple[Path, str]  # an object of `Objects`: (the instance it is in, its name)
Lines = Callable[[Path, Any], tuple[str, list[str]]]  # a leaf → (section, its lines as the plan prints them)
Implied = tuple[tuple[str, str, str], ...]  # (section glob, rendered key regex, device line regex)


def _instance(path: Path) -> Path:
    """The sections a line belongs to, without address families: one BGP instance (`router bgp N`, or EOS
    `router bgp N` / `vrf X`) holds a neighbour's lines in every address family."""
    return tuple(p for p in path[:-1] if not p.startswith("address-family"))


def _held_objects(paths: Iterable[Path], objects: Objects) -> dict[Path, set[Object]]:
    """Each path that is a line of objects of `objects` → those objects; paths of none are left out. A path's
    section is matched once for all paths that share it."""
    out: dict[Path, set[Object]] = {}
    if not objects:
        return out
    compiled = _compiled(objects)
    keys: dict[str, tuple[Callable[[str], Any], ...]] = {}  # a section → the key regexes of the objects it holds
    for p in paths:
        if not p:
            continue
        if (matchers := keys.get(p[0])) is None:
            matchers = keys[p[0]] = tuple(key for sec, key in compiled if sec(p[0]))
        for key in matchers:
            if m := key(p[-1]):
                out.setdefault(p, set()).add((_instance(p), m.group(1)))
    return out


@dataclass(frozen=True)
class Reading:
    """What `scope` and `namesakes` both read of the intent and the device (`reading`): read once per switch."""

    entries: set[Path]  # the intent's entries that `whole` names
    named: set[Object]  # the objects of `objects` the intent has lines of
    held: dict[Path, set[Object]]  # each device leaf that is a line of objects of `objects` → those objects


def reading(intent: Leaves, running: Leaves, whole: tuple[str, ...] = (), objects: Objects = ()) -> Reading:
    """The intent's entries of `whole` and objects of `objects`, and the device leaves' objects."""
    return Reading(entries=set(whole_entries(intent, whole).values()),
                   named=set().union(*_held_objects(intent, objects).values()), held=_held_objects(running, objects))


@lru_cache(maxsize=16)
def _compiled(objects: Objects) -> tuple[tuple[Callable[[str], Any], Callable[[str], Any]], ...]:
    """Each (section regex, key regex) of `objects` compiled once: its `fullmatch` and its `match`."""
    return tuple((re.compile(sec).fullmatch, re.compile(key).match) for sec, key in objects)


def scope(intent: Leaves, running: Leaves, whole: tuple[str, ...] = (), manifest: Iterable[Path] = (),
          objects: Objects = (), implied: Implied = (), never: tuple[str, ...] = (), *,
          read: Reading | None = None) -> set[Path]:
    """The leaves the tool owns on this device (see the module docstring).

    `objects`: text objects the tool owns whole where its render names them — a BGP neighbour or peer group
    (`neighbor FABRIC …`): every line of that object in the same BGP instance, in any address family, is the
    tool's; other neighbours, peer groups, VRF instances, `redistribute`, EVPN… are not.
    `implied`: settings the device may hold that contradict a rendered one and so belong to it — in a section
    matching the glob where the render has a key matching the regex, every device line matching the line regex
    (EOS: a switched port's `no switchport`, L3 `ip address`, `channel-group`, `shutdown`).
    `never`: path patterns (`owned_whole`'s form) the tool never owns, even where its render has them (FRR `log *`:
    a new switch gets the rendered line, a running one keeps its own).
    `read`: `reading(intent, running, whole, objects)`, where the caller has it already (for `namesakes` too)."""
    read = reading(intent, running, whole, objects) if read is None else read
    owned = set(intent) | set(manifest)
    if empty := {p for p in _empty(running) if p not in owned}:
        owned |= empty & _prefixes(intent)  # an empty object it fills
    entry_of = whole_entries((p for p in running if p not in owned), whole)  # the device's leaves not owned yet
    owned |= {p for p, entry in entry_of.items() if entry in read.entries}
    owned |= {p for p, obs in read.held.items() if not obs.isdisjoint(read.named)}
    for in_section, sets_key, contradicts in _implied(implied):
        sections = {p[:-1] for p in intent if len(p) > 1 and in_section(p[-2]) and sets_key(p[-1])}
        if sections:
            owned |= {p for p, v in running.items() if p[:-1] in sections and isinstance(v, tuple)
                      and any(contradicts(ln) for ln in v)}
    return owned.difference(whole_entries(owned, never)) if never else owned


@lru_cache(maxsize=16)
def _implied(implied: Implied) -> tuple[tuple[Callable[[str], Any], Callable[[str], Any], Callable[[str], Any]], ...]:
    """Each (section glob, key regex, line regex) of `implied` compiled once: the glob's `match` (fnmatchcase's own
    translation), the regexes' `fullmatch`."""
    return tuple((re.compile(fnmatch.translate(glob)).match, re.compile(key).fullmatch, re.compile(line).fullmatch)
                 for glob, key, line in implied)


def _ports(intent: Leaves) -> set[str]:
    """The port names the render configures (`interface swp5` in text; `PORT`/`interface` entries in trees)."""
    out = {e[len("interface "):] for p in intent for e in p if e.startswith("interface ")}
    out.update(p[1] for p in intent if len(p) > 1 and p[0] in ("PORT", "interface"))
    return out


def _entry_name(entry: Path, ports: set[str]) -> str | None:
    """The name the render gave a wholly owned entry (`route-map FABRIC-IN permit 10` → FABRIC-IN, SONiC
    `FABRIC-IN|10` → FABRIC-IN, NVUE `qos/mapping/default-global` → default-global); None for an entry keyed by
    a port (a BGP neighbour on an inventory port, an interface's tx-queue): the inventory names those."""
    words = [w for e in entry for w in _words(e)]
    if any(w in ports for w in words):
        return None
    last = entry[-1]
    return last.split()[1] if " " in last else last.split("|")[0]


_WORD_SEP = re.compile(r"[ |]")  # words of a text section or key, and of a SONiC `name|key`


def _words(text: str) -> list[str]:
    return _WORD_SEP.split(text)


def _showing(running: Leaves, rendered: set[Path], names: set[str]) -> dict[str, list[Path]]:
    """Each of `names` → the device leaves the tool never rendered that show it: as a word of a section or key of the
    path (`route-map FABRIC-IN permit 30`, SONiC `FABRIC-IN|30`), a word of a text line, a tree value or an item of
    one. One pass for every object a namesake check looks for."""
    out: dict[str, list[Path]] = {}
    words: dict[str, set[str]] = {}  # a part of a path → its words among `names` (a section's parts recur)
    for p, v in running.items():
        if p in rendered:
            continue
        shown = names.intersection(_shown(v))
        for part in p:
            if (ws := words.get(part)) is None:
                ws = words[part] = names.intersection(_words(part))
            shown |= ws
        for name in shown:
            out.setdefault(name, []).append(p)
    return out


def _shown(value: Any) -> list[str]:
    """The names a leaf's value shows: the words of its text lines, a tree value, the text items of a list."""
    if isinstance(value, tuple):
        return [w for ln in value for w in ln.split()]
    if isinstance(value, list):
        return [item for item in value if isinstance(item, str)]
    return [value] if isinstance(value, str) else []


def namesakes(intent: Leaves, running: Leaves, whole: tuple[str, ...] = (), manifest: Iterable[Path] = (),
              objects: Objects = (), *, read: Reading | None = None) -> dict[str, list[Path]]:
    """Objects the render names (a peer group, a route-map, a QoS map or profile) that the device already holds
    for someone else: the object (as `section / name`) → the device leaves that show it. Such an object is used
    by device configuration the tool never rendered (a peer group's members, the neighbours, `redistribute` or
    ports that use a map, another clause of a route-map): a name is not ownership, and changing the object would
    change what uses it. The object's own settings the tool never rendered are listed with those users. An object
    only the tool's own configuration uses is its own (a setting of it the tool never rendered is then a marked,
    refused-by-default removal, as anywhere in the scope). Objects keyed by an inventory port are the
    inventory's and are not checked; what an earlier apply rendered (`manifest`) counts as rendered.
    `read`: `reading(intent, running, whole, objects)`, where the caller has it already (for `scope` too)."""
    read = reading(intent, running, whole, objects) if read is None else read
    ports = _ports(intent)
    asked: list[tuple[str, str, set[Path]]] = []  # each object the render names: (label, name, its device leaves)
    lines: dict[Object, set[Path]] = {}  # each object the device holds → its lines
    for p, obs in read.held.items():
        for o in obs:
            lines.setdefault(o, set()).add(p)
    for inst, name in sorted(read.named):
        if name.removeprefix("interface ") not in ports:
            asked.append((" / ".join((*inst, name)), name, lines.get((inst, name), set())))
    names = [(entry, name) for entry in sorted(read.entries) if (name := _entry_name(entry, ports)) is not None]
    under: dict[Path, set[Path]] = {entry: set() for entry, _ in names}  # each entry → the device leaves under it
    for k in {len(entry) for entry in under}:
        for p in running:
            if (pre := p[:k]) in under:
                under[pre].add(p)
    asked += [(" / ".join(entry), name, under[entry]) for entry, name in names]
    asked = [(label, name, mine) for label, name, mine in asked if mine]  # one the device lacks: the tool adds its own
    rendered = set(intent) | set(manifest)
    shown = _showing(running, rendered, {name for _, name, _ in asked}) if asked else {}
    found: dict[str, list[Path]] = {}
    for label, name, mine in asked:
        if refs := [p for p in shown.get(name, ()) if p not in mine]:
            found[label] = sorted(refs) + sorted(p for p in mine if p not in rendered)
    return found


def namesake_error(found: dict[str, list[Path]], running: Leaves, lines: Lines,
                   mask: Callable[[str, str], tuple[str, str]], shown: int = 8) -> str:
    """Why the tool refuses a switch that holds objects with its names (`namesakes`): each object with the device
    lines that show it is someone else's, as the plan prints them (`lines`), secrets masked (`mask`: section,
    line → both masked)."""
    parts = []
    for label, paths in found.items():
        shown_lines = [": ".join(mask(sec, ln)) for p in paths for sec, lns in (lines(p, running[p]),) for ln in lns]
        more = f"; and {len(shown_lines) - shown} more" if len(shown_lines) > shown else ""
        parts.append(f"`{label}` is used by, or set with, what the inventory never rendered: "
                     + "; ".join(shown_lines[:shown]) + more)
    return ("the switch already has objects with the names the tool gives its own, and they are not the tool's "
            "(a name is not ownership; changing them would change what uses them): " + " | ".join(parts)
            + ". Rename or remove them on the switch first; the tool then adds its own beside the rest")


def renumbered(running: str, intent: str, pattern: str) -> str | None:
    """Why the device's one instance of `pattern` (`router bgp (\\d+)`) is not the intent's, with its line
    in the running configuration; None when they agree or either side lacks it."""
    want = re.search(rf"(?m)^{pattern}[ \t]*$", intent)
    if want is None:
        return None
    instance = re.compile(pattern).fullmatch
    for n, ln in enumerate(running.splitlines(), 1):
        if (m := instance(ln.rstrip())) and m.group(0) != want.group(0):
            return (f"running config line {n}: `{m.group(0)}` on the device, the inventory renders `{want.group(0)}`; "
                    "the tool never renumbers a router: correct the inventory's ASN, or renumber the switch by hand "
                    "first")
    return None


@dataclass
class ScopedDiff:
    """Running vs target inside the owned scope: what to set, what to remove, and what was left alone."""

    sets: Leaves
    removes: set[Path]
    changes: list[Change]
    owned: set[Path]
    unmanaged: int  # leaves on the device outside the scope (never touched)

    @property
    def empty(self) -> bool:
        return not self.changes


def scoped_diff(running: Leaves, target: Leaves, owned: set[Path], lines: Lines, *,
                earlier: Iterable[Path] = (), rendered: set[Path] | None = None) -> ScopedDiff:
    """Set the owned leaves `target` has and the device differs on; remove owned leaves `target` lacks.

    `earlier`: manifest paths (rendered by an earlier apply) — their removals are marked as such.
    `rendered`: what the tool rendered (default: `target` and `earlier`); a removal outside it is marked
    `foreign` (never rendered by the tool). A key on both sides whose lines differ is a change (`~`).
    """
    earlier = set(earlier).difference(target)
    rendered = earlier.union(target) if rendered is None else rendered
    if removes := {p for p in running if p in owned and p not in target}:
        filled = _prefixes(target)  # an object the target fills is no removal
        removes = {p for p in removes if p not in filled}
    sets = {p: v for p, v in target.items() if p in owned and running.get(p, _MISSING) != v}
    if any(v == {} for v in sets.values()):  # an empty object the device holds, non-empty, is no change
        present = _prefixes(p for p in running if p not in removes)
        sets = {p: v for p, v in sets.items() if not (v == {} and p in present)}
    changes: list[Change] = []
    for p in sorted(set(sets) | removes):
        sec, old = lines(p, running[p]) if p in running else ("", [])
        sec2, new = lines(p, sets[p]) if p in sets else (sec, [])
        section = sec or sec2
        mark = p in earlier and p in removes
        foreign = p in removes and p not in rendered
        gone, added = [ln for ln in old if ln not in new], [ln for ln in new if ln not in old]
        pairs = min(len(gone), len(added))
        changes += [Change(section=section, op="~", old=o, line=n) for o, n in zip(gone, added, strict=False)]
        changes += [Change(section=section, op="-", line=ln, earlier=mark, foreign=foreign) for ln in gone[pairs:]]
        changes += [Change(section=sec2 or sec, op="+", line=ln) for ln in added[pairs:]]
    changes.sort(key=lambda c: c.section)  # stable: `~`, then `-`, then `+` within a section
    return ScopedDiff(sets=sets, removes=removes, changes=changes, owned=owned,
                      unmanaged=sum(1 for p in running if p not in owned))


_MISSING = object()


def _prefixes(paths: Iterable[Path]) -> set[Path]:
    """Every proper prefix of `paths` (the objects that hold them), each path's from the longest down to the first
    one already there (its shorter ones are there with it)."""
    out: set[Path] = set()
    for p in paths:
        for i in range(len(p) - 1, 0, -1):
            if (pre := p[:i]) in out:
                break
            out.add(pre)
    return out


def _empty(leaves: Leaves) -> set[Path]:
    return {p for p, v in leaves.items() if v == {}}


def manifest_paths(data: Iterable[Iterable[str]] | None) -> set[Path]:
    """The JSON form (lists of strings) of a manifest or scope back as paths."""
    return {tuple(p) for p in data or ()}
