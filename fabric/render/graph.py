"""The fabric as a graphviz DOT picture: spines on top, rail leaves and hosts grouped by scalable unit, host cables
coloured by rail; or, for a cabling report, every link coloured by what LLDP shows of it.

Two views. The detail view draws one node per device (the whole fabric, or one SU with the spines its leaves reach);
the overview, for fabrics too large to read device by device, draws one node per SU (its rails as coloured cells),
one per pod's spines and one for the super-spines, joined by one edge per pair with the count of links. Every name
reaches the DOT text through `dot_id` or `html.escape`; `fabric.cli.graph` runs graphviz's `dot` on it.
"""

from __future__ import annotations

import html
from collections import Counter
from itertools import pairwise

from fabric.design.cabling import Cabling, LinkState, Status
from fabric.design.intent import Link
from fabric.design.topology import Topo
from fabric.order import natural
from fabric.render.files import dot_id

DETAIL_MAX = 300  # devices up to which the whole fabric is drawn device by device
RAILS = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#17becf")
STATE = {Status.ok: ("#2e7d32", "solid"), Status.miswired: ("#c62828", "dashed"),
         Status.unexpected: ("#6a1b9a", "solid"), Status.missing: ("#c62828", "dotted"),
         Status.half_seen: ("#f9a825", "solid"), Status.unread: ("#9e9e9e", "dotted")}
HEAD = ['graph fabric {',
        '  graph [rankdir=TB, fontname="Helvetica", fontsize=12, nodesep=0.15, ranksep=1.2, newrank=true, '
        'outputorder=edgesfirst, forcelabels=true];',
        '  node [fontname="Helvetica", fontsize=10, shape=box, style="rounded,filled", fillcolor=white];',
        '  edge [color="#9e9e9e", penwidth=0.8, fontname="Helvetica", fontsize=10];']
LEGEND = ((Status.ok, "ok"), (Status.miswired, "miswired: where the model has it"), (None, "miswired: where it is"),
          (Status.missing, "missing"), (Status.unexpected, "unexpected"), (Status.half_seen, "half-seen"),
          (Status.unread, "unread (neither end read)"))
STROKE = {"solid": "━━━", "dashed": "╍╍╍", "dotted": "┈┈┈"}


def rail_colour(rail: int | None) -> str:
    return RAILS[(rail - 1) % len(RAILS)] if rail else "#616161"


def devices(topo: Topo, su: int | None) -> set[str]:
    """The devices of SU `su` and the spines its leaves reach (None: every device)."""
    if su is None:
        return set(topo.switches) | set(topo.hosts)
    leaves = {n for n, s in topo.switches.items() if s.role == "leaf" and s.su == su}
    hosts = {n for n, h in topo.hosts.items() if h.su == su}
    uplinked = {end for ln in topo.links if ln.kind == "leaf-spine" and {ln.a, ln.b} & leaves for end in (ln.a, ln.b)}
    return leaves | hosts | uplinked  # uplinked: both ends of the leaves' uplinks, their spines among them


def detail(topo: Topo, su: int | None = None, cabling: Cabling | None = None) -> str:
    """One node per device of `devices(topo, su)`; links coloured by rail, or by state when `cabling` is given."""
    shown = devices(topo, su)
    lines = [*HEAD, f'  label={dot_id(_title(topo, su, cabling))}; labelloc=t;']
    lines += _switch_nodes(topo, shown)
    lines += _su_clusters(topo, shown)
    lines += [legend()] if cabling else []
    states = link_states(cabling)
    numbers = fault_numbers(cabling)
    for ln in topo.links:
        if ln.a in shown and ln.b in shown:
            key = ends(ln)
            lines += _edge(topo, ln, states.get(key), shown, numbers.get(key, 0))
    return "\n".join([*lines, "}", ""])


def ends(ln: Link) -> frozenset[str]:
    """A model link by its two ends, `device:port` each, in either order."""
    return frozenset((f"{ln.a}:{ln.a_port}", f"{ln.b}:{ln.b_port}"))


def link_states(cabling: Cabling | None) -> dict[frozenset[str], LinkState]:
    """What LLDP shows of each model link (`ends`)."""
    return {frozenset((s.a, s.b)): s for s in (cabling.links if cabling else ())}


def fault_numbers(cabling: Cabling | None) -> dict[frozenset[str], int]:
    """A model link (`ends`) → the number of its fault in the report (1-based, the report's order)."""
    return {frozenset(link.split(" — ")): i for i, f in enumerate(cabling.faults if cabling else (), 1)
            for link in f.links}


def _title(topo: Topo, su: int | None, cabling: Cabling | None) -> str:
    where = f"SU {su}" if su is not None else f"{len(topo.switches)} switches, {len(topo.hosts)} hosts"
    if cabling is None:
        return f"fabric — {where}"
    counts = ", ".join(f"{n} {s}" for s, n in cabling.counts.items() if n)
    return f"cabling — {where}: {counts}"


def _switch_nodes(topo: Topo, shown: set[str]) -> list[str]:
    """Spines and super-spines, each tier on one rank above the leaves."""
    out = []
    for role in ("super-spine", "spine"):
        names = sorted((n for n, s in topo.switches.items() if s.role == role and n in shown), key=natural)
        if names:
            out.append(_row(names, 'fillcolor="#eceff1", penwidth=1.5'))
    other = sorted(n for n, s in topo.switches.items() if s.role not in ("leaf", "spine", "super-spine") and n in shown)
    out += [f"  {dot_id(n)};" for n in other]
    return out


def _su_clusters(topo: Topo, shown: set[str]) -> list[str]:
    """One cluster per SU: its rail leaves on one rank (framed in their rail's colour), its hosts below."""
    out = []
    for su in sorted({s.su for n, s in topo.switches.items() if s.role == "leaf" and n in shown and s.su}):
        leaves = sorted((n for n, s in topo.switches.items() if s.role == "leaf" and s.su == su and n in shown),
                        key=lambda n: (topo.switches[n].rail or 0, n))
        hosts = sorted((n for n, h in topo.hosts.items() if h.su == su and n in shown), key=natural)
        out += [f"  subgraph {dot_id(f'cluster_su{su}')} {{", f'    label="SU {su}"; style=rounded; color="#b0bec5";']
        out += [f'    {dot_id(n)} [color="{rail_colour(topo.switches[n].rail)}", penwidth=2];' for n in leaves]
        out += ["  " + _row(leaves, ""), "  " + _row(hosts, 'fillcolor="#fafafa"'), "  }"]
    leafless = sorted(n for n in topo.switches if topo.switches[n].role == "leaf" and not topo.switches[n].su
                      and n in shown)
    out += [f"  {dot_id(n)};" for n in leafless]
    return out


TIER = {"super-spine": 0, "spine": 1, "leaf": 2}


def _ends(topo: Topo, ln: Link) -> tuple[str, str]:
    """The link's ends, upper tier first: dot ranks an edge's first node above its second."""
    def tier(name: str) -> int:
        sw = topo.switches.get(name)
        return TIER.get(sw.role, 2) if sw else 3
    return (ln.a, ln.b) if tier(ln.a) <= tier(ln.b) else (ln.b, ln.a)


def _row(names: list[str], attrs: str) -> str:
    """Nodes on one rank, kept in the given order by an invisible chain."""
    nodes = " ".join(f"{dot_id(n)} [{attrs}];" for n in names)
    chain = " -- ".join(dot_id(n) for n in names) + " [style=invis];" if len(names) > 1 else ""
    return f"  {{ rank=same; {nodes} {chain} }}"


def _edge(topo: Topo, ln: Link, state: LinkState | None, shown: set[str], fault: int = 0) -> list[str]:
    """The link in its rail's colour, or in its state's with the number of its fault in the report."""
    up, down = _ends(topo, ln)
    tip = dot_id(f"{ln.a}:{ln.a_port} — {ln.b}:{ln.b_port}" + (f" ({state.status}: {state.found})"
                                                                if state and state.found else ""))
    if state is None:
        leaf = topo.switches.get(ln.b) if ln.kind == "host-leaf" else None
        colour = rail_colour(leaf.rail) if leaf else "#9e9e9e"
        return [f"  {dot_id(up)} -- {dot_id(down)} [color=\"{colour}\", tooltip={tip}];"]
    colour, style = STATE[state.status]
    number = f'xlabel="{fault}", fontcolor="{colour}", fontsize=9, ' if fault else ""
    out = [f'  {dot_id(up)} -- {dot_id(down)} [color="{colour}", style={style}, penwidth=1.6, {number}'
           f"class={dot_id(state.status.value)}, tooltip={tip}];"]
    actual = state.a_cabled_to.split(":", 1)[0] if state.status == Status.miswired else ""
    if actual in shown:  # where the cable is, beside where the model has it
        out.append(f'  {dot_id(ln.a)} -- {dot_id(actual)} [color="#c62828", penwidth=2.4, class="actual", '
                   f"{number}constraint=false, tooltip={dot_id(state.found)}];")
    return out


def legend() -> str:
    """The key of a cabling picture: each state's line."""
    rows = []
    for status, text in LEGEND:
        colour, style = STATE[status] if status else (STATE[Status.miswired][0], "solid")
        rows.append(f'<TR><TD><FONT COLOR="{colour}">{STROKE[style]}</FONT></TD>'
                    f'<TD ALIGN="LEFT">{html.escape(text)}</TD></TR>')
    rows.append('<TR><TD><FONT COLOR="#c62828">1</FONT></TD><TD ALIGN="LEFT">the fault of that number</TD></TR>')
    return f'  legend [shape=plain, label=<<TABLE BORDER="1" COLOR="#b0bec5" CELLBORDER="0">{"".join(rows)}</TABLE>>];'



def overview(topo: Topo, cabling: Cabling | None = None) -> str:
    """One node per SU (its rails as cells in their colours, its hosts, leaves and uplinks counted) stacked in its
    pod's frame under the pod's spines, one node for the super-spines; the only edges join spine groups, labelled
    with their links. With `cabling`, each group counts the links of it that are not ok, in red."""
    group = {n: _group(topo, n) for n in (*topo.switches, *topo.hosts)}
    links: Counter[str] = Counter()
    bad: Counter[str] = Counter()
    pairs: Counter[tuple[str, str]] = Counter()
    faulty = {link for link, s in link_states(cabling).items() if s.status != Status.ok}
    for ln in topo.links:
        lower = group[ln.a] if ln.a in topo.hosts or topo.switches[ln.a].role == "leaf" else group[ln.b]
        owner = group[ln.a] if ln.kind == "host-leaf" else lower
        links[owner] += ln.kind != "host-leaf"
        bad[owner] += ends(ln) in faulty
        if ln.kind == "spine-super-spine":
            pairs[(group[ln.b], group[ln.a]) if group[ln.b] == "super-spine" else (group[ln.a], group[ln.b])] += 1
    lines = [*HEAD, f'  label={dot_id(_title(topo, None, cabling) + " (overview: one node per SU and spine group)")};'
             " labelloc=t; ranksep=0.4;"]
    lines += _group_nodes(topo, set(group.values()), links, bad)
    for (up, down), n in sorted(pairs.items(), key=lambda kv: natural(kv[0][1])):
        label = f"{n} links" + (f", {bad[down]} to fix" if bad[down] else "")
        lines.append(f'  {dot_id(up)} -- {dot_id(down)} [label={dot_id(label)}, color="#78909c", '
                     f"penwidth={1 + min(n, 4096) / 1024:.1f}];")
    return "\n".join([*lines, "}", ""])


def _group(topo: Topo, name: str) -> str:
    if name in topo.hosts:
        return f"SU {topo.hosts[name].su}"
    sw = topo.switches[name]
    if sw.role == "leaf" and sw.su:
        return f"SU {sw.su}"
    if sw.role == "spine":
        return f"spines-pod{sw.pod}" if sw.pod else "spines"
    return sw.role


def _group_nodes(topo: Topo, groups: set[str], links: Counter[str], bad: Counter[str]) -> list[str]:
    """The super-spines on top, then one frame per pod: its spines over its SUs, stacked (invisible edges)."""
    roles = Counter(_group(topo, n) for n in topo.switches)
    hosts = Counter(_group(topo, n) for n in topo.hosts)
    rails: dict[str, set[int]] = {}
    pod_of: dict[str, int | None] = {}
    for s in topo.switches.values():
        if s.role == "leaf" and s.su:
            rails.setdefault(f"SU {s.su}", set()).update({s.rail} if s.rail else set())
            pod_of[f"SU {s.su}"] = s.pod
    out = []
    for g in sorted(groups - {g for g in groups if g.startswith(("SU ", "spines"))}, key=natural):
        out.append(f"  {dot_id(g)} [label={dot_id(_group_label(g, roles[g], bad[g]))}, fillcolor=\"#eceff1\"];")
    for pod in sorted({pod_of.get(g) for g in groups if g.startswith("SU ")}, key=lambda p: p or 0):
        sus = sorted((g for g in groups if g.startswith("SU ") and pod_of.get(g) == pod), key=natural)
        spines = f"spines-pod{pod}" if f"spines-pod{pod}" in groups else ("spines" if "spines" in groups else "")
        out += [f"  subgraph {dot_id(f'cluster_pod{pod}')} {{", f'    label="pod {pod}"; style=rounded; '
                'color="#b0bec5";'] if pod else []
        if spines:
            out.append(f'    {dot_id(spines)} [label={dot_id(_group_label(spines, roles[spines], bad[spines]))}, '
                       'fillcolor="#eceff1"];')
        out += [f"    {dot_id(g)} [shape=plain, label={_su_label(g, hosts[g], roles[g], links[g], bad[g], rails)}];"
                for g in sus]
        chain = ([spines] if spines else []) + sus
        out += [f"    {dot_id(a)} -- {dot_id(b)} [style=invis];" for a, b in pairwise(chain)]
        out += ["  }"] if pod else []
    return out


def _group_label(group: str, count: int, bad: int) -> str:
    name = "super-spines" if group == "super-spine" else group.replace("spines-pod", "spines of pod ")
    return f"{name}: {count}" + (f"\n{bad} links to fix" if bad else "")


def _su_label(group: str, hosts: int, leaves: int, uplinks: int, bad: int, rails: dict[str, set[int]]) -> str:
    """An HTML-like label: `SU n`, its counts, and one cell per rail in the rail's colour (numbers only)."""
    cells = "".join(f'<TD WIDTH="22" BGCOLOR="{rail_colour(r)}"><FONT COLOR="white">r{r}</FONT></TD>'
                    for r in sorted(rails.get(group, ())))
    width = max(len(rails.get(group, ())), 1)
    fix = f'<TR><TD COLSPAN="{width}"><FONT COLOR="#c62828">{bad} links to fix</FONT></TD></TR>' if bad else ""
    title = html.escape(f"{group}: {hosts} hosts, {leaves} leaves, {uplinks} uplinks")
    border = "#c62828" if bad else "#90a4ae"
    return (f'<<TABLE BORDER="1" COLOR="{border}" STYLE="rounded" CELLBORDER="0" CELLSPACING="2">'
            f'<TR><TD COLSPAN="{width}">{title}</TD></TR><TR>{cells or "<TD></TD>"}</TR>{fix}</TABLE>>')
