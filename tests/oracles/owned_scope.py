"""The owned-scope engine (fabric/targets/owned.py) and `Driver.owned_scope` (fabric/targets/base.py) as they read
before the running side's objects and wholly owned entries were read once per leaf and shared between `scope` and
`namesakes`, the setting regexes compiled once and the leaves built in one pass (the helpers that did not change
with it are imported). Held against by tests/targets/test_owned_equivalence.py."""

from __future__ import annotations

import copy
import fnmatch
import re
from collections.abc import Callable, Iterable
from functools import cached_property
from typing import Any

from fabric.fast.plain import deep_copy
from fabric.nos import NOS
from fabric.secrets import mask_change
from fabric.targets.base import Driver, TargetError
from fabric.targets.owned import (
    BANNERS,
    CLOSERS,
    FREE_TEXT,
    LISTED,
    VALUED,
    Change,
    Implied,
    Leaves,
    Lines,
    Node,
    Objects,
    Path,
    ScopedDiff,
    _compiled,
    _empty,
    _entry_name,
    _globs,
    _instance,
    _words,
    manifest_paths,
    namesake_error,
)


# -- trees (SONiC CONFIG_DB, NVUE) ------------------------------------------------------------------
def tree_leaves(tree: Any, path: Path = ()) -> Leaves:
    """Leaves of a nested dict by path; an empty dict is a leaf (a SONiC key without fields, NVUE `{}`)."""
    if not isinstance(tree, dict) or not tree:
        return {path: tree} if path else {}
    out: Leaves = {}
    for k, v in tree.items():
        out.update(tree_leaves(v, (*path, str(k))))
    return out


def parse_text(text: str) -> list[Node]:
    """Indentation → nesting; comments (`!`…), closers (`exit`, `end`) and banners dropped."""
    root = Node("")
    stack: list[tuple[int, Node]] = [(-1, root)]
    for raw in text.splitlines():
        line = raw.rstrip()
        s = line.strip()
        if not s or s.startswith("!") or s in CLOSERS or s in BANNERS:
            continue
        indent = len(line) - len(line.lstrip())
        while stack[-1][0] >= indent:
            stack.pop()
        node = Node(s)
        stack[-1][1].children.append(node)
        stack.append((indent, node))
    return root.children


def line_key(line: str, settings: tuple[str, ...] = ()) -> str:
    """The setting a line sets: without a leading `no`, its last word and the plain numbers before it
    (`timers bgp 3 9` → `timers bgp`; `ip route 192.0.2.0/24 Null0` → `ip route 192.0.2.0/24`).
    `settings`: regexes of settings whose key is the match whatever follows (EOS `maximum-paths 4 ecmp 4`
    and `maximum-paths 64` are one setting: `Nos.setting_keys`)."""
    bare = line[3:] if line.startswith("no ") else line
    for pat in settings:
        if m := re.match(pat, bare):
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
    if len(words) > 1:
        words = words[:-1]
        while len(words) > 1 and words[-1].isdigit():
            words = words[:-1]
    return " ".join(words)


def text_leaves(nodes: list[Node], path: Path = (), settings: tuple[str, ...] = ()) -> Leaves:
    """(section lines…, key) → the lines with that key (a section with children is a path element)."""
    out: Leaves = {}
    for n in nodes:
        if n.children:
            for p, v in text_leaves(n.children, (*path, n.line), settings).items():
                out[p] = out.get(p, ()) + v
        else:
            p = (*path, line_key(n.line, settings))
            out[p] = (*out.get(p, ()), n.line)
    return out


def _whole_prefix(path: Path, patterns: tuple[str, ...]) -> Path | None:
    if not path:
        return None
    by_first, others = _globs(patterns)
    n = len(path)
    for k, parts in by_first.get(path[0], others):
        if n >= k and all(m(p) for m, p in zip(parts, path, strict=False)):
            return path[:k]
    return None


def _objects(leaves: Leaves, objects: Objects) -> set[tuple[Path, str]]:
    out = set()
    compiled = _compiled(objects)
    for p in leaves:
        for sec, key in compiled:
            if p and sec(p[0]) and (m := key(p[-1])):
                out.add((_instance(p), m.group(1)))
    return out


def scope(intent: Leaves, running: Leaves, whole: tuple[str, ...] = (), manifest: Iterable[Path] = (),
          objects: Objects = (), implied: Implied = (), never: tuple[str, ...] = ()) -> set[Path]:
    """The leaves the tool owns on this device (see the module docstring).

    `objects`: text objects the tool owns whole where its render names them — a BGP neighbour or peer group
    (`neighbor FABRIC …`): every line of that object in the same BGP instance, in any address family, is the
    tool's; other neighbours, peer groups, VRF instances, `redistribute`, EVPN… are not.
    `implied`: settings the device may hold that contradict a rendered one and so belong to it — in a section
    matching the glob where the render has a key matching the regex, every device line matching the line regex
    (EOS: a switched port's `no switchport`, L3 `ip address`, `channel-group`, `shutdown`).
    `never`: path patterns (`owned_whole`'s form) the tool never owns, even where its render has them (FRR `log *`:
    a new switch gets the rendered line, a running one keeps its own)."""
    entries = {pre for p in intent if (pre := _whole_prefix(p, whole)) is not None}
    owned = set(intent) | set(manifest) | (_empty(running) & _prefixes(intent))  # an empty object it fills
    owned |= {p for p in running if (pre := _whole_prefix(p, whole)) is not None and pre in entries}
    if objects:
        named = _objects(intent, objects)
        owned |= {p for p in running if any(o in named for o in _objects({p: None}, objects))}
    for glob, key, line in implied:
        sections = {p[:-1] for p in intent if p[:-1] and fnmatch.fnmatchcase(p[-2], glob) and re.fullmatch(key, p[-1])}
        owned |= {p for p, v in running.items() if p[:-1] in sections and isinstance(v, tuple)
                  and any(re.fullmatch(line, ln) for ln in v)}
    return {p for p in owned if _whole_prefix(p, never) is None} if never else owned


def _ports(intent: Leaves) -> set[str]:
    """The port names the render configures (`interface swp5` in text; `PORT`/`interface` entries in trees)."""
    out = set()
    for p in intent:
        out |= {e[len("interface "):] for e in p if e.startswith("interface ")}
        if len(p) > 1 and p[0] in ("PORT", "interface"):
            out.add(p[1])
    return out


class _Unrendered:
    """The device leaves the tool never rendered, each with the words of its path, read once for every object a
    namesake check looks for (`_collect`)."""

    def __init__(self, running: Leaves, rendered: set[Path]) -> None:
        self.running, self.rendered = running, rendered

    @cached_property
    def leaves(self) -> list[tuple[Path, Any, set[str]]]:
        return [(p, v, {w for e in p for w in _words(e)}) for p, v in self.running.items() if p not in self.rendered]

    def naming(self, name: str, mine: set[Path]) -> list[Path]:
        """The leaves outside `mine` that name `name`: in a section or key of the path (`route-map FABRIC-IN
        permit 30`, SONiC `FABRIC-IN|30`), as a word of a text line, or as a tree value (or an item of one)."""
        return [p for p, v, words in self.leaves if p not in mine and (name in words or _names(v, name))]


def _names(value: Any, name: str) -> bool:
    if isinstance(value, tuple):
        return any(name in ln.split() for ln in value)
    return value == name or (isinstance(value, list) and name in value)


def namesakes(intent: Leaves, running: Leaves, whole: tuple[str, ...] = (), manifest: Iterable[Path] = (),
              objects: Objects = ()) -> dict[str, list[Path]]:
    """Objects the render names (a peer group, a route-map, a QoS map or profile) that the device already holds
    for someone else: the object (as `section / name`) → the device leaves that show it. Such an object is used
    by device configuration the tool never rendered (a peer group's members, the neighbours, `redistribute` or
    ports that use a map, another clause of a route-map): a name is not ownership, and changing the object would
    change what uses it. The object's own settings the tool never rendered are listed with those users. An object
    only the tool's own configuration uses is its own (a setting of it the tool never rendered is then a marked,
    refused-by-default removal, as anywhere in the scope). Objects keyed by an inventory port are the
    inventory's and are not checked; what an earlier apply rendered (`manifest`) counts as rendered."""
    unrendered = _Unrendered(running, set(intent) | set(manifest))
    ports = _ports(intent)
    found: dict[str, list[Path]] = {}
    if objects:
        held = {p: _objects({p: None}, objects) for p in running}
        for inst, name in sorted(_objects(intent, objects)):
            if name.removeprefix("interface ") not in ports:
                mine = {p for p, obs in held.items() if (inst, name) in obs}
                _collect(found, " / ".join((*inst, name)), name, mine, unrendered)
    under: dict[int, dict[Path, set[Path]]] = {}  # a prefix's length → each prefix → the device leaves under it
    for entry in sorted({pre for p in intent if (pre := _whole_prefix(p, whole)) is not None} if whole else ()):
        if (name := _entry_name(entry, ports)) is not None:
            if len(entry) not in under:
                under[len(entry)] = {}
                for p in running:
                    under[len(entry)].setdefault(p[:len(entry)], set()).add(p)
            _collect(found, " / ".join(entry), name, under[len(entry)].get(entry, set()), unrendered)
    return found


def _collect(found: dict[str, list[Path]], label: str, name: str, mine: set[Path], unrendered: _Unrendered) -> None:
    if not mine:
        return  # the device does not hold it: the tool adds its own
    if refs := unrendered.naming(name, mine):
        found[label] = sorted(refs) + sorted(p for p in mine if p not in unrendered.rendered)


def scoped_diff(running: Leaves, target: Leaves, owned: set[Path], lines: Lines, *,
                earlier: Iterable[Path] = (), rendered: set[Path] | None = None) -> ScopedDiff:
    """Set the owned leaves `target` has and the device differs on; remove owned leaves `target` lacks.

    `earlier`: manifest paths (rendered by an earlier apply) — their removals are marked as such.
    `rendered`: what the tool rendered (default: `target` and `earlier`); a removal outside it is marked
    `foreign` (never rendered by the tool). A key on both sides whose lines differ is a change (`~`).
    """
    earlier = set(earlier) - set(target)
    rendered = set(target) | earlier if rendered is None else rendered
    filled = _prefixes(target)
    removes = {p for p in running if p in owned and p not in target and p not in filled}
    present = _prefixes({p: v for p, v in running.items() if p not in removes})  # objects that stay non-empty
    sets = {p: v for p, v in target.items()
            if p in owned and running.get(p, _MISSING) != v and not (v == {} and p in present)}
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


def _prefixes(leaves: Leaves) -> set[Path]:
    return {p[:i] for p in leaves for i in range(1, len(p))}


def owned_scope(drv: Driver, intent: Leaves, running: Leaves, lines: Lines) -> tuple[set[Path], Leaves, set[Path]]:
    """`Driver.owned_scope` of `drv`."""
    if drv.options.get("scope") is not None:
        owned = manifest_paths(drv.options["scope"])
        return owned, {p: v for p, v in intent.items() if p in owned}, set()
    manifest = manifest_paths(drv.options.get("manifest"))
    nos = NOS[drv.target]
    if found := namesakes(intent, running, nos.owned_whole, manifest, nos.owned_objects):
        raise TargetError(namesake_error(found, running, lines,
                                         lambda sec, ln: mask_change(nos.secrets, sec, ln)[:2]))
    owned = scope(intent, running, nos.owned_whole, manifest, nos.owned_objects, nos.owned_implied,
                  nos.never_owned)
    return owned | drv.contradicting(intent, running), intent, manifest


def renumbered(running: str, intent: str, pattern: str) -> str | None:
    """Why the device's one instance of `pattern` (`router bgp (\\d+)`) is not the intent's, with its line
    in the running configuration; None when they agree or either side lacks it."""
    want = re.search(rf"(?m)^{pattern}[ \t]*$", intent)
    if want is None:
        return None
    for n, ln in enumerate(running.splitlines(), 1):
        if (m := re.fullmatch(pattern, ln.rstrip())) and m.group(0) != want.group(0):
            return (f"running config line {n}: `{m.group(0)}` on the device, the inventory renders `{want.group(0)}`; "
                    "the tool never renumbers a router: correct the inventory's ASN, or renumber the switch by hand "
                    "first")
    return None


def apply_leaves(tree: dict, sets: Leaves, removes: Iterable[Path]) -> dict:
    """A copy of `tree` with leaves set and removed; containers that only the removals emptied go too."""
    out = deep_copy(tree)
    for path in removes:
        chain = [out]
        for p in path[:-1]:
            nxt = chain[-1].get(p)
            if not isinstance(nxt, dict):
                break
            chain.append(nxt)
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
            node = node[p]
        node[path[-1]] = copy.deepcopy(value)
    return out


def apply_text(nodes: list[Node], sets: Leaves, removes: Iterable[Path], settings: tuple[str, ...] = (),
               key: Callable[[str], str] | None = None) -> list[Node]:
    """A copy of the text tree with each changed key's lines replaced (or dropped), new ones appended;
    a section that loses its last line goes too."""
    from fabric.targets.owned import line_key

    key = key or (lambda ln: line_key(ln, settings))
    out = copy.deepcopy(nodes)
    todo = {**{p: () for p in removes}, **sets}
    for path, lines in todo.items():
        chain: list[tuple[list[Node], Node]] = []
        siblings = out
        for sec in path[:-1]:
            node = next((n for n in siblings if n.line == sec and n.children), None)
            if node is None:
                if not lines:
                    break
                node = Node(sec)
                siblings.append(node)
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
