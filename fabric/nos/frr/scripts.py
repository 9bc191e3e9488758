"""The rendered Linux setup of an FRR white-box — `interfaces.sh`, then `qos.sh` — as part of the push transaction.

The scripts set state (sysctls, links, addresses, bridges, dcb, tc) and keep no record of their own, so:

- **plan**: the copy the last confirmed apply ran is kept on the switch (`<confdir>/roce-fabric/<script>`); the
  plan shows each command line the rendered script adds (`+`) or no longer has (`-`, marked as rendered by an
  earlier apply: a dropped line changes nothing on the switch, the scripts only set).
- **undo**: before a script runs, the driver reads the state each of its commands touches (`ip -j -d link`,
  `ip -j addr`, `sysctl -e`, `tc -j qdisc`, `dcb -N app/pfc show`) and writes the commands that put it back
  (`undo()`), run when the script or the FRR reload fails, on a revert and by `fabric rollback`. Each undo
  restores what the command changed: the old sysctl value, MTU, admin state and bridge master; an address, bridge
  or VLAN link the script created is deleted; dcb DSCP→priority rules and PFC priorities are set back; the port's
  root qdisc is deleted (the kernel's default comes back) and, when it was the tool's own `ets` tree, the installed
  `qos.sh` lines of that port replay it. A root qdisc the tool did not install is refused: qos.sh would replace it.
- A command form the undo does not know is refused too, so a template change cannot slip in an irreversible line.

Device replies are data: every value read back is checked against the form the command takes (digits, `N:M`,
`N:on|off`, an interface name) before it is written into the undo script.
"""

from __future__ import annotations

import contextlib
import re
import shlex
from dataclasses import dataclass, field
from functools import lru_cache

from fabric.errors import ReplyError
from fabric.replies import json_reply, reader
from fabric.targets import shell
from fabric.targets.owned import Change

SCRIPTS = ("interfaces.sh", "qos.sh")  # the order they run in; the undo runs in reverse
KEPT = "roce-fabric"  # under the FRR confdir: the copies the last confirmed apply ran
MARK = "@@RF@@ "
_IFNAME = re.compile(r"^[A-Za-z0-9_.:@-]{1,15}$")
_INT = re.compile(r"^-?\d+$")
MAX_LINE = 4096  # characters of a line of a kept script: the rendered ones are under 200
READS = "ip -j -d link show; ip -j addr show; tc -j qdisc show; sysctl; dcb; cat the kept scripts"


@dataclass
class State:
    """What the scripts' commands touch, as read before they run."""

    links: dict[str, dict] = field(default_factory=dict)  # ifname → {"mtu", "up", "master"}
    addrs: dict[str, set[str]] = field(default_factory=dict)  # ifname → {"a.b.c.d/len"}
    sysctl: dict[str, str] = field(default_factory=dict)  # key as procps prints it (shell.sysctl_printed) → value
    root: dict[str, tuple[str, str]] = field(default_factory=dict)  # ifname → (kind, handle) of its root qdisc
    dcb_app: dict[str, list[str]] = field(default_factory=dict)  # ifname → ["24:3", …]
    dcb_pfc: dict[str, list[str]] = field(default_factory=dict)  # ifname → ["0:off", …]
    installed: dict[str, str] = field(default_factory=dict)  # script → the copy the last apply ran


def commands(script: str) -> list[list[str]]:
    """The effectful commands of a rendered script, in order (`x || y`: `y`; comments, `set`, `if`/`fi` and
    read-only `ip link show` left out)."""
    return [list(argv) for argv in _commands(script)]


@lru_cache(maxsize=128)
def _commands(script: str) -> tuple[tuple[str, ...], ...]:
    """`commands` of one text, read once: a plan and an apply read each script several times."""
    return tuple(tuple(argv) for argv in _read_commands(script))


def _read_commands(script: str, named: tuple[str, ...] = ()) -> list[list[str]]:
    """`named`: only the commands of those names (a line whose text does not hold one is not split)."""
    out = []
    for raw in script.splitlines():
        line = raw.strip()
        if not line or line.startswith("#") or line in ("fi", "set -eu") or line.startswith("if "):
            continue
        part = line.rpartition("||")[2] if "||" in line else line
        if named and not any(n in part for n in named):
            continue
        argv = [a for a in shell_words(part) if a not in (">/dev/null", "2>&1")]
        if not argv or argv[:3] == ["ip", "link", "show"] or (named and argv[0] not in named):
            continue
        out.append(argv)
    return out


_PLAIN = re.compile(r"[ \t]*[^'\"\\\s]+(?:[ \t]+[^'\"\\\s]+)*[ \t]*")  # words: no quote, backslash, other space


def shell_words(line: str) -> list[str]:
    """`shlex.split(line)`: a line of plain words (no quote or backslash, only spaces and tabs between them) split at
    C speed, as shlex splits it; any other through shlex (pure Python: half of a plan's CPU on an FRR switch)."""
    return line.split() if _PLAIN.fullmatch(line) else shlex.split(line)


def _dev(argv: list[str]) -> str:
    return argv[argv.index("dev") + 1] if "dev" in argv else ""


def _created(argv: list[str]) -> str:
    """The link `ip link add …` creates."""
    return argv[argv.index("name") + 1] if "name" in argv else argv[3]


def reads(scripts: dict[str, str], confdir: str) -> str:
    """One shell command printing, after `MARK` lines, the state `parse_state` reads."""
    keys, qos_ports = set(), set()
    for text in scripts.values():
        for argv in _read_commands(text, ("sysctl", "dcb")):
            if argv[0] == "sysctl":
                keys |= {a.partition("=")[0] for a in argv[1:] if "=" in a}
            if argv[0] == "dcb":
                qos_ports.add(_dev(argv))
    q = shlex.quote
    parts = [f"echo '{MARK}link'; ip -j -d link show 2>/dev/null", f"echo '{MARK}addr'; ip -j addr show 2>/dev/null",
             f"echo '{MARK}qdisc'; tc -j qdisc show 2>/dev/null", f"echo '{MARK}sysctl'"]
    if keys:
        parts.append(shell.sysctl_read(sorted(keys)))
    if qos_ports:  # one loop, not two commands a port: the line the shell reads stays short (a spine has 128 ports);
        # dcb only on a port the kernel has (its answer for one it lacks: nothing)
        parts.append(f"for p in {' '.join(q(p) for p in sorted(qos_ports))}; do "
                     f"echo \"{MARK}dcbapp $p\"; [ -e \"/sys/class/net/$p\" ] && "
                     "dcb -N app show dev \"$p\" dscp-prio 2>/dev/null; "
                     f"echo \"{MARK}dcbpfc $p\"; [ -e \"/sys/class/net/$p\" ] && "
                     "dcb pfc show dev \"$p\" prio-pfc 2>/dev/null; done")
    for name in SCRIPTS:
        parts.append(f"echo '{MARK}kept {name}'; cat {q(f'{confdir}/{KEPT}/{name}')} 2>/dev/null")
    # a closing mark: the last copy keeps its final newline (the reply's end is trimmed), so an unchanged copy is
    # the rendered text itself and is not split into commands to compare (`changes`, `to_run`)
    return "; ".join([*parts, f"echo '{MARK}end'", "true"])  # a missing file or tool is an empty answer


@reader(READS)
def parse_state(out: str, rendered: dict[str, str] | None = None) -> State:
    """The answer of `reads`; a kept copy equal to its script in `rendered` is the tool's own text, not read again
    as commands."""
    st = State()
    chunks: dict[str, str] = {}
    for part in out.split(MARK)[1:]:
        head, _, body = part.partition("\n")
        chunks[head.strip()] = body
    for lk in _json(chunks.get("link", ""), "ip -j -d link show"):
        flags = lk.get("flags")
        st.links[str(lk.get("ifname"))] = {"mtu": lk.get("mtu"), "up": isinstance(flags, list) and "UP" in flags,
                                          "master": lk.get("master")}
    for lk in _json(chunks.get("addr", ""), "ip -j addr show"):
        addrs = lk.get("addr_info")
        st.addrs[str(lk.get("ifname"))] = {f"{a.get('local')}/{a.get('prefixlen')}" for a in
                                          (addrs if isinstance(addrs, list) else []) if isinstance(a, dict)}
    for q in _json(chunks.get("qdisc", ""), "tc -j qdisc show"):
        if q.get("root"):
            st.root[str(q.get("dev"))] = (str(q.get("kind")), str(q.get("handle")))
    st.sysctl = shell.sysctl_values(chunks.get("sysctl", ""))
    for head, body in chunks.items():
        kind, _, rest = head.partition(" ")
        words = body.split()
        if kind == "dcbapp" and words[:1] == ["dscp-prio"]:
            st.dcb_app[rest] = words[1:]
        elif kind == "dcbpfc" and "prio-pfc" in words:
            st.dcb_pfc[rest] = [w for w in words[words.index("prio-pfc") + 1:] if ":" in w]
        elif kind == "kept" and body:
            if body != (rendered or {}).get(rest):
                _kept_commands(rest, body)
            st.installed[rest] = body
    return st


def _kept_commands(name: str, body: str) -> None:
    """The copy of `name` kept on the switch reads as shell words line by line, each line at most MAX_LINE
    characters (shlex takes time quadratic in a quoted word's length); else a ReplyError at its line. Read whole
    first (`_commands`, kept for the comparison that follows), line by line only to find the line that fails."""
    lines = body.splitlines()
    if all(len(line) <= MAX_LINE for line in lines):
        with contextlib.suppress(ValueError):
            _commands(body)
            return
    for n, line in enumerate(lines, 1):
        try:
            if len(line) > MAX_LINE:
                raise ValueError(f"at most {MAX_LINE} characters")
            _read_commands(line)
        except ValueError as exc:
            raise ReplyError(f"cat {KEPT}/{name}", f"a command line of the rendered {name} ({exc})", line,
                             where=f"line {n}") from None


def _json(text: str, command: str) -> list[dict]:
    """The objects of a JSON list reply; nothing where the tool printed nothing (absent: `2>/dev/null`)."""
    data = json_reply(text, command, "[]")
    return [d for d in data if isinstance(d, dict)] if isinstance(data, list) else []


def _checked(values: list[str], pattern: str, what: str) -> list[str]:
    bad = [v for v in values if not re.fullmatch(pattern, v)]
    if bad:
        raise ValueError(f"{what}: unexpected value {bad[0]!r} read from the switch")
    return values


def undo(run: dict[str, str], st: State) -> tuple[str, list[str]]:
    """(the undo script of running the scripts in `run`, in SCRIPTS order; problems that refuse the change)."""
    blocks: list[list[str]] = []
    problems: list[str] = []
    rooted: set[str] = set()
    for name in (n for n in SCRIPTS if n in run):
        for argv in commands(run[name]):
            try:
                blocks.append(_undo_one(argv, st, rooted))
            except ValueError as exc:
                problems.append(f"{name}: {exc}")
    # every step runs (best effort), a failed one is the script's failure; one whose object may already be gone
    # (an address or link the script never got to create) is not
    lines = ["#!/bin/sh", "# roce-fabric: puts back what the scripts changed (generated before they ran)", "rc=0"]
    for block in reversed(blocks):
        lines += [f"{ln} || true" if ln.endswith("2>/dev/null") else f"{ln} || rc=1" for ln in block]
    return "\n".join([*lines, "exit $rc"]) + "\n", problems


def _undo_one(argv: list[str], st: State, rooted: set[str]) -> list[str]:
    q = shlex.quote
    cmd = " ".join(argv[:3])
    dev = _dev(argv)
    if argv[0] == "sysctl":
        out = []
        for a in argv[1:]:
            k, sep, _ = a.partition("=")
            if sep and (before := st.sysctl.get(shell.sysctl_printed(k))) is not None:
                # a key absent before belongs to a link the undo deletes
                old = _checked([before], _INT.pattern, k)[0]
                out.append(f"sysctl -qw {q(k + '=' + old)}")
        return out
    if cmd == "ip addr replace":
        return [] if argv[3] in st.addrs.get(dev, set()) else [f"ip addr del {q(argv[3])} dev {q(dev)} 2>/dev/null"]
    if cmd == "ip link add":
        name = _created(argv)
        return [] if name in st.links else [f"ip link del {q(name)} 2>/dev/null"]
    if cmd == "ip link set":
        was = st.links.get(dev)
        if was is None:
            return []  # created by the script: deleted by the undo of its `ip link add`
        out = []
        if "mtu" in argv:
            mtu = _checked([str(was["mtu"])], _INT.pattern, f"{dev} mtu")[0]
            out.append(f"ip link set dev {q(dev)} mtu {mtu}")
        if "up" in argv and not was["up"]:
            out.append(f"ip link set dev {q(dev)} down")
        if "master" in argv:
            m = was["master"]
            out.append(f"ip link set dev {q(dev)} " +
                       (f"master {q(_checked([m], _IFNAME.pattern, f'{dev} master')[0])}" if m else "nomaster"))
        return out
    if cmd == "dcb app replace" and "dscp-prio" in argv:
        old = _checked(st.dcb_app.get(dev, []), r"\d+:\d+", f"{dev} dscp-prio")
        return [f"dcb app flush dev {q(dev)} dscp-prio"] + ([f"dcb app add dev {q(dev)} dscp-prio {' '.join(old)}"]
                                                            if old else [])
    if cmd == "dcb pfc set" and "prio-pfc" in argv:
        old = _checked(st.dcb_pfc.get(dev, []), r"\d:(on|off)", f"{dev} prio-pfc")
        return [f"dcb pfc set dev {q(dev)} prio-pfc {' '.join(old)}"] if old else []
    if cmd == "tc qdisc replace":
        if dev in rooted:
            return []  # a child of the root this undo deletes
        rooted.add(dev)
        kind, handle = st.root.get(dev, ("", "0:"))
        out = [f"tc qdisc del dev {q(dev)} root 2>/dev/null"]
        if handle in ("0:", ""):
            return out  # the kernel's default qdisc comes back
        kept = [a for a in commands(st.installed.get("qos.sh", "")) if a[:3] == ["tc", "qdisc", "replace"]
                and _dev(a) == dev]
        if kind != "ets" or handle != "1:" or not kept:
            raise ValueError(f"{dev} runs a root qdisc {kind} {handle} the tool did not install; qos.sh would replace "
                             "it: remove it on the switch first")
        return out + [shlex.join(a) for a in kept]
    raise ValueError(f"no undo known for `{shlex.join(argv)}`")


def changes(rendered: dict[str, str], st: State) -> list[Change]:
    """Per script, the command lines the render adds and those it no longer has (vs the copy kept on the switch)."""
    out: list[Change] = []
    for name in (n for n in SCRIPTS if n in rendered and rendered[n] != st.installed.get(n, "")):
        new, old = _commands(rendered[name]), _commands(st.installed.get(name, ""))
        new_set, old_set = set(new), set(old)  # argv compared as the lines they join to (shlex.join is one-to-one)
        out += [Change(section=name, op="-", line=shlex.join(a), earlier=True) for a in old if a not in new_set]
        out += [Change(section=name, op="+", line=shlex.join(a)) for a in new if a not in old_set]
    return out


def to_run(rendered: dict[str, str], st: State) -> dict[str, str]:
    """The scripts whose rendered text differs from the copy kept on the switch (an unchanged one is not re-run)."""
    return {n: t for n, t in rendered.items() if n in SCRIPTS and t != st.installed.get(n, "")
            and _commands(t) != _commands(st.installed.get(n, ""))}
