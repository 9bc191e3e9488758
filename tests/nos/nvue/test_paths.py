"""Every NVUE path the tool renders, checked against the form NVIDIA documents for the release under test.

The reference is tests/fixtures/nvue/paths.yaml: per Cumulus Linux release, the documented form of each
`nv set` path and the docs.nvidia.com page it comes from. The renders come from the CLI (`fabric render`,
`fabric generate gpu-rail`), so the test sees exactly what an operator would push. A failure prints the
rendered line, the documented form for the release and the page.

Besides the path check, a few tests check meaning the table records: the `qos roce` shortcut only where it equals
the policy, per-port cable lengths, GRACEFUL_SHUTDOWN honoured, host VLAN tagging on the leaf, watchdog overrides
rendered or refused; and the saved running configs of tests/fixtures/running/nvue hold only documented paths.

Each switch renders for a declared Cumulus Linux release: the NOS table's default for its platform
(fabric.nos, the defaults this table's `platforms` recommends) unless the inventory sets `roles.<role>.release`
or `switches[].release`. h100-400g declares none, so its SN5600 switches render for RELEASE (checked through
`fabric explain`); the generated fabric is rendered once per release of the table (`_declare_release`).
"""

from __future__ import annotations

import json
import re
import shlex
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests import inproc
from tests.support.paths import ROOT

RELEASE = "5.15"  # the release h100-400g's SN5600 switches render for (its platform default; checked below)

TABLE_FILE = ROOT / "tests" / "fixtures" / "nvue" / "paths.yaml"
TABLE: dict[str, Any] = yaml.safe_load(TABLE_FILE.read_text())
RELEASES: tuple[str, ...] = tuple(TABLE["releases"])
H100 = ROOT / "inventories" / "h100-400g"
RUNNING = ROOT / "tests" / "fixtures" / "running" / "nvue"
DOCS = "https://docs.nvidia.com/networking-ethernet-software/"


# ------------------------------------------------------------------------------------------ the table


Word = Callable[[str], bool]


def _word(token: str) -> Word:
    """A matcher for one word of a pattern: literal, <placeholder>, <a|b>, <N-M> (and mixes)."""
    if not (token.startswith("<") and token.endswith(">")):
        return lambda w: w == token
    inner = token[1:-1]
    if inner in TABLE["placeholders"]:
        rx = re.compile(TABLE["placeholders"][inner])
        return lambda w: rx.fullmatch(w) is not None
    alternatives: list[Word] = []
    for alt in inner.split("|"):
        if m := re.fullmatch(r"(\d+)-(\d+)", alt):
            lo, hi = int(m.group(1)), int(m.group(2))
            alternatives.append(lambda w, lo=lo, hi=hi: w.isdigit() and lo <= int(w) <= hi)
        else:
            alternatives.append(lambda w, alt=alt: w == alt)
    return lambda w: any(a(w) for a in alternatives)


@dataclass(frozen=True)
class Form:
    entry: str
    release: str
    text: str  # the pattern, as written in the table (after `nv set`)
    url: str
    note: str
    deprecated: bool
    words: tuple[Word, ...]

    def matches(self, tokens: list[str]) -> bool:
        return len(tokens) == len(self.words) and all(m(t) for m, t in zip(self.words, tokens, strict=True))

    def literal_prefix(self, tokens: list[str]) -> int:
        n = 0
        for m, t in zip(self.words, tokens, strict=False):
            if not m(t):
                break
            n += 1
        return n


@dataclass(frozen=True)
class Absence:
    entry: str
    release: str
    url: str
    note: str
    was: tuple[Word, ...]  # the form before it was removed, if the table gives it

    def matches(self, tokens: list[str]) -> bool:
        return len(tokens) == len(self.was) and all(m(t) for m, t in zip(self.was, tokens, strict=True))


@cache
def forms(release: str) -> tuple[Form, ...]:
    out = []
    for e in TABLE["entries"]:
        f = e["forms"][release]
        if "form" in f:
            out.append(Form(e["id"], release, f["form"], f["url"], f.get("note", ""), bool(f.get("deprecated")),
                            tuple(_word(t) for t in f["form"].split())))
    return tuple(out)


@cache
def all_forms() -> tuple[Form, ...]:
    return tuple(f for r in RELEASES for f in forms(r))


@cache
def absences(release: str) -> tuple[Absence, ...]:
    out = []
    for e in TABLE["entries"]:
        f = e["forms"][release]
        if f.get("absent"):
            was = tuple(_word(t) for t in f.get("was", "").split())
            out.append(Absence(e["id"], release, f["url"], f.get("note", ""), was))
    return tuple(out)


def explain_mismatch(tokens: list[str], release: str) -> str:
    """What the docs say instead: the same concept's form in `release`, its absence, or the nearest form."""
    line = "nv set " + shlex.join(tokens)

    def gone(a: Absence) -> str:
        return (f"  line:            {line}\n"
                f"  documented form: none in Cumulus Linux {release} [{a.entry}]\n"
                f"  source:          {a.url}\n"
                f"  note:            {a.note or '-'}")

    for a in absences(release):
        if a.matches(tokens):
            return gone(a)
    for other in (f for f in all_forms() if f.release != release and f.matches(tokens)):
        mine = next((f for f in forms(release) if f.entry == other.entry), None)
        if mine is not None:
            return (f"  line:            {line}\n"
                    f"  documented form: nv set {mine.text}   [{mine.entry}, Cumulus Linux {release}]\n"
                    f"  source:          {mine.url}\n"
                    f"  note:            {mine.note or '-'} (the line uses the {other.release} form)")
        for a in absences(release):
            if a.entry == other.entry:
                return gone(a)
    nearest = max(forms(release), key=lambda f: f.literal_prefix(tokens))
    return (f"  line:            {line}\n"
            f"  documented form: no documented path matches; nearest: nv set {nearest.text}   [{nearest.entry}]\n"
            f"  source:          {nearest.url}")


def check(leaves: Iterator[tuple[str, list[str]]], release: str) -> list[str]:
    """Problems for the leaves (where, tokens after `nv set`), one per distinct shape of line."""
    problems: dict[tuple[str, ...], tuple[str, str, int]] = {}
    for where, tokens in leaves:
        match = next((f for f in forms(release) if f.matches(tokens)), None)
        if match is not None and not match.deprecated:
            continue
        if match is not None:
            text = (f"  line:            nv set {shlex.join(tokens)}\n"
                    f"  documented form: nv set {match.text} is DEPRECATED in Cumulus Linux {release} [{match.entry}]\n"
                    f"  source:          {match.url}\n  note:            {match.note}")
        else:
            text = explain_mismatch(tokens, release)
        shape = tuple(re.sub(r"\d+", "N", t) for t in tokens)
        first_where, first_text, n = problems.get(shape, (where, text, 0))
        problems[shape] = (first_where, first_text, n + 1)
    return [f"{n} line(s) like this one ({where}):\n{text}" for where, text, n in problems.values()]


def report(problems: list[str], release: str, what: str) -> str:
    return (f"{len(problems)} kind(s) of NVUE path in {what} are not documented for Cumulus Linux "
            f"{release} (table: {TABLE_FILE.relative_to(ROOT)}):\n\n" + "\n\n".join(problems))


# ------------------------------------------------------------------------------------------ renders


def fabric_cli(*args: str) -> str:
    proc = inproc.fabric(*args)
    assert proc.returncode == 0, f"fabric {' '.join(args)} exited {proc.returncode}:\n{proc.stdout}\n{proc.stderr}"
    return proc.stdout


def _declare_release(inventory: Path, release: str) -> None:
    """Declare the NOS release of every role of a generated inventory (`roles.<role>.release`)."""
    path = inventory / "fabric.yaml"
    doc = yaml.safe_load(path.read_text())
    for role in doc["roles"].values():
        role["release"] = release
    path.write_text(yaml.safe_dump(doc, sort_keys=False))


@dataclass(frozen=True)
class Render:
    inventory: Path
    out: Path

    def switches(self) -> list[Path]:
        found = sorted(p for p in (self.out / "switches").iterdir() if (p / "nv-set.txt").exists())
        assert found, f"{self.out}: no switch has nv-set.txt (rendered without --all?)"
        return found

    def set_lines(self) -> Iterator[tuple[str, list[str]]]:
        for sw in self.switches():
            for n, line in enumerate((sw / "nv-set.txt").read_text().splitlines(), 1):
                tokens = shlex.split(line)
                assert tokens[:2] == ["nv", "set"], f"{sw.name}/nv-set.txt:{n}: not an `nv set` line: {line}"
                yield f"{sw.name}/nv-set.txt:{n}", tokens[2:]

    def patch_leaves(self) -> Iterator[tuple[str, list[str]]]:
        for sw in self.switches():
            docs = yaml.safe_load((sw / "nvue-patch.yaml").read_text())
            assert isinstance(docs, list), f"{sw.name}/nvue-patch.yaml: not a list of `- set:` documents"
            for doc in docs:
                assert set(doc) == {"set"}, f"{sw.name}/nvue-patch.yaml: a document other than `set`: {set(doc)}"
                for path, value in _leaves(doc["set"]):
                    yield f"{sw.name}/nvue-patch.yaml {'.'.join(path)}", [*path, *([] if value is None else [value])]


def _leaves(tree: dict[str, Any], prefix: tuple[str, ...] = ()) -> Iterator[tuple[tuple[str, ...], str | None]]:
    for key, value in tree.items():
        path = (*prefix, str(key))
        if isinstance(value, dict) and value:
            yield from _leaves(value, path)
        elif isinstance(value, dict) or value is None:
            yield path, None
        else:
            # NVUE prints on/off bare; a YAML 1.1 reader turns them into booleans
            yield path, ("on" if value else "off") if isinstance(value, bool) else str(value)


@pytest.fixture(scope="module")
def h100(tmp_path_factory: pytest.TempPathFactory) -> Render:
    out = tmp_path_factory.mktemp("h100-render")
    fabric_cli("render", str(H100), "-o", str(out), "--all")
    return Render(H100, out)


@pytest.fixture(scope="module", params=RELEASES)
def generated(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> tuple[str, Render]:
    """A generated NVUE fabric that reaches the paths h100-400g does not: routed /31 host ports, explicit QoS
    objects (a policy override makes `qos roce` unusable), BGP BFD, Spectrum-4 ports without breakout."""
    release: str = request.param
    base = tmp_path_factory.mktemp(f"generated-{release}")
    inv = base / "inventory"
    fabric_cli("generate", "gpu-rail", "-o", str(inv), "--gpus", "64", "--rails", "2", "--hosts-per-su", "4",
               "--mode", "p2p31", "--platform", "sn5400", "--breakout", "none", "--target", "nvue",
               "--name", "gen-nvue")
    (inv / "qos.yaml").write_text("qos:\n  preset: nvidia-roce\n  ecn:\n    3: {min_bytes: 100KB}\n")
    switching = yaml.safe_load((inv / "switching.yaml").read_text())
    switching["switching"].setdefault("bgp", {})["bfd"] = True
    (inv / "switching.yaml").write_text(yaml.safe_dump(switching, sort_keys=False))
    _declare_release(inv, release)
    out = base / "render"
    fabric_cli("render", str(inv), "-o", str(out), "--all")
    return release, Render(inv, out)


# ------------------------------------------------------------------------------------------ the table itself


def test_table_is_complete() -> None:
    """Each entry has a documented form (or a documented absence) and an NVIDIA page for every release."""
    assert RELEASE in RELEASES and TABLE["default_release"] in RELEASES
    problems = []
    for e in TABLE["entries"]:
        for release in RELEASES:
            f = e["forms"].get(release)
            if f is None:
                problems.append(f"{e['id']}: no entry for {release}")
            elif not str(f.get("url", "")).startswith(DOCS):
                problems.append(f"{e['id']} {release}: source {f.get('url')!r} is not an NVIDIA docs page")
            elif "form" not in f and not f.get("absent"):
                problems.append(f"{e['id']} {release}: neither a form nor `absent: true`")
    for p in TABLE["platforms"].values():
        if p["default"] not in p["releases"] or not set(p["releases"]) <= set(RELEASES):
            problems.append(f"{p['model']}: default {p['default']} / releases {p['releases']} not supported")
    for c in TABLE["commands"]:
        problems += [f"command {c['id']}: no {r}" for r in RELEASES if r not in c["forms"]]
    assert not problems, "\n".join(problems)


def test_renamed_paths_are_recognised() -> None:
    """The matcher tells a 5.9 form rendered for 5.15 from an unknown path (guards the failure messages)."""
    old = ["router", "adaptive-routing", "enable", "on"]
    assert any(f.matches(old) for f in forms("5.9"))
    assert not any(f.matches(old) for f in forms("5.15"))
    assert "state <enabled|disabled>" in explain_mismatch(old, "5.15")
    gone = ["qos", "roce", "cable-length", "40"]
    assert "none in Cumulus Linux 5.9" in explain_mismatch(gone, "5.9")


# ------------------------------------------------------------------------------------------ the renders


def test_h100_400g_renders_for_the_platform_default(h100: Render) -> None:
    """Without a declaration, an SN5600 renders for the release the table recommends for it."""
    for sw in h100.switches()[:1] + h100.switches()[-1:]:
        assert _explain(h100.inventory, sw.name, "release") == {"release": RELEASE}
    assert TABLE["platforms"]["sn5600"]["default"] == RELEASE


def test_h100_400g_set_lines_documented(h100: Render) -> None:
    problems = check(h100.set_lines(), RELEASE)
    assert not problems, report(problems, RELEASE, "inventories/h100-400g nv-set.txt")


def test_h100_400g_patch_leaves_documented(h100: Render) -> None:
    problems = check(h100.patch_leaves(), RELEASE)
    assert not problems, report(problems, RELEASE, "inventories/h100-400g nvue-patch.yaml")


def test_generated_set_lines_documented(generated: tuple[str, Render]) -> None:
    release, render = generated
    problems = check(render.set_lines(), release)
    assert not problems, report(problems, release, "a generated NVUE fabric (p2p31, explicit QoS, BFD) nv-set.txt")


def test_generated_patch_leaves_documented(generated: tuple[str, Render]) -> None:
    release, render = generated
    problems = check(render.patch_leaves(), release)
    assert not problems, report(problems, release, "a generated NVUE fabric nvue-patch.yaml")


@pytest.mark.parametrize("fixture", sorted(RUNNING.glob("*.yaml")), ids=lambda p: p.stem)
def test_running_fixture_paths_documented(fixture: Path) -> None:
    """The saved running configs hold only paths NVIDIA documents for the release in their header."""
    docs = yaml.safe_load(fixture.read_text())
    assert [list(d) for d in docs] == [["header"], ["set"]], f"{fixture.name}: not the `nv config show` shape"
    release = ".".join(docs[0]["header"]["version"].split()[-1].split(".")[:2])
    assert release in RELEASES, f"{fixture.name}: release {release} is not in the table"
    leaves = ((f"{fixture.name} {'.'.join(p)}", [*p, *([] if v is None else [v])]) for p, v in _leaves(docs[1]["set"]))
    problems = check(leaves, release)
    assert not problems, report(problems, release, fixture.name)


# ------------------------------------------------------------------------------------------ meaning


def _explain(inventory: Path, device: str, path: str) -> dict[str, str]:
    rows = json.loads(fabric_cli("explain", str(inventory), device, path, "--format", "json"))
    return {r["path"]: r["value"] for r in rows}


def _dscp_map(spec: dict[str, int]) -> dict[int, int]:
    out = {}
    for key, prio in spec.items():
        lo, _, hi = str(key).partition("-")
        for d in range(int(lo), int(hi or lo) + 1):
            out[d] = prio
    return out


def test_roce_shortcut_only_when_it_equals_the_policy(h100: Render) -> None:
    """`qos roce mode lossless` is NVIDIA's whole policy; the render may use it only if ours is the same."""
    roce = TABLE["roce_lossless_defaults"]
    problems = []
    for sw in h100.switches():
        lines = (sw / "nv-set.txt").read_text()
        if "nv set qos roce" not in lines:
            continue
        q = _explain(h100.inventory, sw.name, "qos")
        ours = {d: int(q.get(f"qos.dscp_to_priority.{d}", q["qos.default_priority"])) for d in range(64)}
        theirs = _dscp_map(roce["dscp_to_priority"])
        lossless = {int(p) for p in re.findall(r"\d", q["qos.lossless_priorities"])} | {int(q["qos.cnp_priority"])}
        # code points that move between a lossy and a lossless/CNP priority first: those are the ones that hurt
        differ = sorted((d for d in range(64) if ours[d] != theirs[d]),
                        key=lambda d: (not ({ours[d], theirs[d]} & lossless), d))
        if differ:
            sample = ", ".join(f"DSCP {d}: policy priority {ours[d]}, qos roce {theirs[d]}" for d in differ[:8])
            problems.append(f"{sw.name}: renders `qos roce` but its DSCP map differs in {len(differ)} code points "
                            f"({sample}, ...)")
        if q["qos.trust"] != roce["trust"]:
            problems.append(f"{sw.name}: policy trusts {q['qos.trust']}; `qos roce` trusts {roce['trust']}")
        if problems:
            break  # one switch shows it; every switch renders the same QoS
    assert not problems, ("the NVUE RoCE shortcut is not the inventory's policy; render trust, DSCP map, PFC, ETS "
                          f"and ECN explicitly (source: {roce['url_5.9']}):\n" + "\n".join(problems))


def _ports(inventory: Path, device: str) -> dict[str, dict[str, str]]:
    """Port name -> its facts (cable_m, lossless, ...) from `fabric explain DEVICE ports`."""
    by_index: dict[str, dict[str, str]] = {}
    for path, value in _explain(inventory, device, "ports").items():
        if m := re.fullmatch(r"ports\[(\d+)\]\.([a-z_]+)", path):
            by_index.setdefault(m.group(1), {})[m.group(2)] = value
    return {p["name"]: p for p in by_index.values()}


def test_per_port_cable_length_reaches_the_switch(h100: Render) -> None:
    """Each lossless port's PFC headroom must use its own cable length (a per-port PFC profile when they differ)."""
    problems = []
    for sw in h100.switches()[:1] + h100.switches()[-1:]:  # a leaf (5 m to hosts, 40 m up) and a spine
        ports = _ports(h100.inventory, sw.name)
        want = {name: int(p["cable_m"]) for name, p in ports.items() if p["lossless"] == "True"}
        lines = [shlex.split(x)[2:] for x in (sw / "nv-set.txt").read_text().splitlines()]
        length = {t[2]: int(t[4]) for t in lines if t[:2] == ["qos", "pfc"] and t[3:4] == ["cable-length"]}
        profile = {t[1]: t[5] for t in lines if t[0] == "interface" and t[2:5] == ["qos", "pfc", "profile"]}
        wrong = {p: (m, length.get(profile.get(p, "default-global"))) for p, m in want.items()
                 if length.get(profile.get(p, "default-global")) != m}
        if wrong:
            sample = ", ".join(f"{p}: cable {m} m, PFC profile cable-length {got if got is not None else 'not set'}"
                               for p, (m, got) in list(wrong.items())[:3])
            problems.append(f"{sw.name}: {len(wrong)} of {len(want)} lossless ports ({sample}, ...)")
    entry = next(e for e in TABLE["entries"] if e["id"] == "interface-qos-pfc-profile")["forms"][RELEASE]
    assert not problems, (f"per-port cable lengths do not reach the switch; documented: nv set {entry['form']} with "
                          f"`nv set qos pfc <profile> cable-length <m>` (source: {entry['url']}):\n"
                          + "\n".join(problems))


def test_graceful_shutdown_is_honoured(h100: Render) -> None:
    """switching.bgp.graceful_shutdown (default true): routes from peers carrying GRACEFUL_SHUTDOWN (65535:0)
    get LOCAL_PREF 0 (RFC 8326). On NVUE that is a community list, a route-map rule and an inbound policy."""
    gshut = {"65535:0", "graceful-shutdown"}
    problems = []
    for sw in h100.switches()[:1] + h100.switches()[-1:]:
        lines = [shlex.split(x)[2:] for x in (sw / "nv-set.txt").read_text().splitlines()]
        lists = {t[3] for t in lines if t[:3] == ["router", "policy", "community-list"] and t[-2:-1] == ["community"]
                 and t[-1] in gshut}
        # router policy route-map <name> rule <n> match community-list <list> | set local-preference 0
        maps = {t[3] for t in lines if t[:3] == ["router", "policy", "route-map"]
                and t[6:8] == ["match", "community-list"] and t[8:9] and t[8] in lists}
        lp0 = {t[3] for t in lines if t[:3] == ["router", "policy", "route-map"]
               and t[6:] == ["set", "local-preference", "0"]}
        neighbors = {t[5] for t in lines if t[:5] == ["vrf", "default", "router", "bgp", "neighbor"]}
        honoured = {t[5] for t in lines if t[:5] == ["vrf", "default", "router", "bgp", "neighbor"]
                    and t[6:10] == ["address-family", "ipv4-unicast", "policy", "inbound"] and t[-1] in (maps & lp0)}
        if neighbors - honoured:
            problems.append(f"{sw.name}: {len(neighbors - honoured)} of {len(neighbors)} BGP neighbors have no inbound "
                            "route map that matches 65535:0 and sets local-preference 0")
    forms_ = {e["id"]: e["forms"][RELEASE] for e in TABLE["entries"]}
    needed = ["bgp-community-list-community", "route-map-match-community-list", "route-map-set-local-preference",
              "bgp-neighbor-inbound-route-map"]
    assert not problems, ("GRACEFUL_SHUTDOWN is not honoured; documented forms:\n"
                          + "\n".join(f"  nv set {forms_[i]['form']}   ({forms_[i]['url']})" for i in needed)
                          + "\n" + "\n".join(problems))


def _generated_svi(base: Path, name: str) -> Path:
    inv = base / name
    fabric_cli("generate", "gpu-rail", "-o", str(inv), "--gpus", "32", "--rails", "2", "--hosts-per-su", "4",
               "--platform", "sn5400", "--breakout", "none", "--target", "nvue", "--name", name)
    _declare_release(inv, RELEASE)
    return inv


def test_host_tagged_vlan_is_a_tagged_member_on_the_leaf(tmp_path: Path) -> None:
    """A host NIC that tags its rail VLAN needs the leaf port to carry that VLAN tagged, not as access."""
    inv = _generated_svi(tmp_path, "tagged")
    hosts = yaml.safe_load((inv / "hosts.yaml").read_text())
    for nic in hosts["hosts"]["defaults"]["nics"]:
        nic["vlan"] = 1000 + nic["rail"]  # addressing.vlan_base (1000) + rail: the rail's SVI VLAN
    (inv / "hosts.yaml").write_text(yaml.safe_dump(hosts, sort_keys=False))
    out = tmp_path / "render"
    fabric_cli("render", str(inv), "-o", str(out), "--all")
    lines = [shlex.split(x)[2:] for x in (out / "switches" / "leaf-su1-r1" / "nv-set.txt").read_text().splitlines()]
    host_ports = {t[1] for t in lines if t[0] == "interface" and t[2:3] == ["description"] and "gpu-" in t[3]}
    tagged = {t[1] for t in lines if t[0] == "interface" and t[2:5] == ["bridge", "domain", "br_default"]
              and t[5:7] == ["vlan", "1001"]}
    access = sorted(t[1] for t in lines
                    if t[0] == "interface" and t[2:6] == ["bridge", "domain", "br_default", "access"])
    tagged_form = next(e for e in TABLE["entries"] if e["id"] == "port-tagged-vlan")["forms"][RELEASE]
    assert host_ports and host_ports <= tagged and not access, (
        f"leaf-su1-r1: hosts tag VLAN 1001 but {len(host_ports - tagged)} of {len(host_ports)} host ports are not "
        f"tagged members ({len(access)} access ports, e.g. {access[:2]}); documented form: "
        f"nv set {tagged_form['form']} (source: {tagged_form['url']})")


def test_pfc_watchdog_overrides_rendered_or_refused(tmp_path: Path) -> None:
    """NVUE has polling-interval and robustness only; a detection-time override is a lint finding naming the field
    and what NVUE runs, and the two it has must reach the switch."""
    inv = _generated_svi(tmp_path, "wd")
    qos = "qos:\n  preset: nvidia-roce\n  pfc_watchdog: {%s}\n"
    (inv / "qos.yaml").write_text(qos % "poll_interval: 200ms, robustness: 5")
    fabric_cli("render", str(inv), "-o", str(tmp_path / "ok"), "--all")
    text = (tmp_path / "ok" / "switches" / "leaf-su1-r1" / "nv-set.txt").read_text()
    assert "nv set qos pfc-watchdog polling-interval 200" in text and "nv set qos pfc-watchdog robustness 5" in text
    (inv / "qos.yaml").write_text(qos % "detection: 400ms")
    proc = inproc.fabric("lint", str(inv), "--select", "RF111")
    entry = next(e for e in TABLE["entries"] if e["id"] == "qos-pfc-watchdog-polling-interval")["forms"][RELEASE]
    assert proc.returncode == 1 and "pfc_watchdog.detection: requested 400 ms" in proc.stdout + proc.stderr, (
        f"qos.pfc_watchdog.detection = 400ms has no NVUE path (NVUE has only polling-interval and robustness: "
        f"{entry['url']}) but `fabric lint` exited {proc.returncode} without naming the field and what NVUE runs "
        "(a lint finding, RF111, not a load error)")
