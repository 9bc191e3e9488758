"""The EOS stand-in's session merge as it read before a session was kept as a tree with its modes' lines looked up at
once: every typed line parsed the session's whole text into a tree and printed it back. Held against by
tests/standins/test_eos.py."""

from __future__ import annotations

from tests.standins.eos import HOLE, KNOWN, MTU_MAX, _key


def _tree(text: str) -> list:
    """[line, children] nodes by indentation; `!` separators and `end` are nodes too, so that an untouched
    configuration prints back byte for byte (EOS prints its running-config in one canonical form)."""
    root: list = []
    stack: list[tuple[int, list]] = [(-1, root)]
    for raw in text.splitlines():
        s = raw.strip()
        if not s:
            continue
        indent = len(raw) - len(raw.lstrip())
        while stack[-1][0] >= indent:
            stack.pop()
        node = [s, []]
        stack[-1][1].append(node)
        stack.append((indent, node[1]))
    return root


def _text(nodes: list, depth: int = 0) -> str:
    out = []
    for line, children in nodes:
        out.append("   " * depth + line)
        if children:
            out.append(_text(children, depth + 1).rstrip("\n"))
    return "\n".join(out) + "\n"


def shown(text: str) -> str:
    """A session's text as the configuration it holds (no holes)."""
    return "".join(ln + "\n" for ln in text.splitlines() if not ln.lstrip().startswith(HOLE))


def merge_line(cfg: str, ctx: list[str], raw: str) -> tuple[str, list[str], str]:
    """Apply one session line: (new config text, new context, error or '')."""
    line = raw.strip()
    words = line.split()
    if words[0] not in KNOWN:
        return cfg, ctx, f"% Invalid input (at token 0: '{words[0]}')"
    if words[0] == "mtu" and len(words) == 2 and words[1].isdigit() and not 68 <= int(words[1]) <= MTU_MAX:
        return cfg, ctx, f"% Invalid input (at token 1: '{words[1]}')"
    depth = (len(raw) - len(raw.lstrip())) // 3
    ctx = ctx[:depth]
    nodes = _tree(cfg)
    siblings = nodes
    for sec in ctx:
        node = next((n for n in siblings if n[0] == sec), None)
        if node is None:
            return cfg, ctx, "% Invalid input (not in that mode)"
        siblings = node[1]
    other = next((n[0] for n in nodes if n[0].startswith("router bgp ") and n[0] != line), None)
    if not ctx and line.startswith("router bgp ") and other:
        return cfg, ctx, f"% BGP is already running with AS number {other.split()[2]}"
    rest = " ".join(words[1:])
    if words[0] in ("no", "default") and len(words) > 1 and not any(n[0] == line for n in siblings):
        # `no X` takes a configured X out; of a setting that is on by default it is itself the setting and
        # shows as `no X` (`no switchport`, `no priority`, `no autostate`); `default X` takes out both forms
        hit = [n for n in siblings if n[0] == rest] or [n for n in siblings if _key(n[0]) == _key(rest)
                                                        and (words[0] == "default" or not n[0].startswith("no "))]
        for i, n in enumerate(hit):
            if i == 0 and not n[1]:
                siblings[siblings.index(n)] = [HOLE + _key(rest), []]
            else:
                siblings.remove(n)
        if not hit and words[0] == "no":
            _add(siblings, ctx, line)
    elif words[0] not in ("no", "default") and not any(n[0] == line for n in siblings):
        _add(siblings, ctx, line)
    return _text(nodes), [*ctx, line], ""


def _add(siblings: list, ctx: list[str], line: str) -> None:
    hole = next((i for i, n in enumerate(siblings) if n[0] == HOLE + _key(line)), None)
    if hole is not None:  # a new value of a setting the session took out: in its place, as EOS prints it
        siblings[hole] = [line, []]
    elif not ctx and siblings and siblings[-1][0] == "end":  # a new section: before `end`
        siblings.insert(len(siblings) - 1, [line, []])
    else:
        siblings.append([line, []])
