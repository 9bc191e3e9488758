"""Match logs line by line against the signature catalog, plus a few cross-line rules.

The catalog (catalog.yaml, extendable with --catalog) is data: one regex per signature. Some
failures cannot be seen in one line — a traffic class that differs from the fabric's, CNPs that
nobody handles, a NCCL_IB_HCA entry NCCL never found, a flapping link — so they are small rules
(`_Rule` subclasses below), kept apart from the catalog, with their own reserved ids DG9xx.
"""

from __future__ import annotations

import gzip
import re
import sys
from collections import defaultdict
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from re import _constants as _sre_c  # type: ignore[attr-defined]  # regex parse tree, for needles
from re import _parser as _sre  # type: ignore[attr-defined]
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, ValidationError, field_validator

from fabric.design.intent import FabricIntent
from fabric.diagnose.bind import FabricIndex, Located, bind_subjects
from fabric.errors import InputError, Problem
from fabric.model.source import SourceMap, dotted, load_yaml

Severity = Literal["error", "warning", "info"]
SourceKind = Literal["nccl", "kernel", "perftest", "nccl-tests", "any"]

SEVERITIES: tuple[Severity, ...] = ("error", "warning", "info")
DEFAULT_TOS = 106  # DSCP 26 << 2 | ECT(0): the nvidia-roce preset's RoCE traffic class
# Named groups an inventory binding resolves to a host, NIC, rail, leaf port or cable (or checks
# against the intended GID index / traffic class). Every other named group is a detail.
BINDING_KEYS = ("host", "dev", "port", "ifname", "pci", "addr", "peer_addr", "oob_addr", "peer_host",
                "gid_index", "tc", "switch_port")
MAX_SUBJECTS = 50
MAX_DETAIL_VALUES = 20


# ------------------------------------------------------------------------------------------ catalog

class Signature(BaseModel):
    """One known failure signature: a regex over a log line, and what it means."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    id: str = Field(pattern=r"^[A-Za-z][A-Za-z0-9_.-]*$")
    title: str = Field(min_length=1)
    severity: Severity
    sources: list[SourceKind] = Field(min_length=1)
    regex: str = Field(min_length=1)
    cause: str = Field(min_length=1)
    next_step: str = Field(min_length=1)
    _pattern: re.Pattern[str] = PrivateAttr()

    @field_validator("regex")
    @classmethod
    def _compiles(cls, value: str) -> str:
        try:
            re.compile(value)
        except re.error as exc:
            raise ValueError(f"a valid Python regular expression ({exc})") from None
        return value

    _needles: tuple[str, ...] = PrivateAttr()

    def model_post_init(self, context: Any) -> None:
        self._pattern = re.compile(self.regex)
        self._needles = required_literals(self.regex)

    @property
    def pattern(self) -> re.Pattern[str]:
        return self._pattern

    @property
    def needles(self) -> tuple[str, ...]:
        """Literals of which every match contains one: lines without any skip the regex."""
        return self._needles


def required_literals(regex: str) -> tuple[str, ...]:
    """Literal strings of which every match contains at least one; () if none can be derived."""
    try:
        tree = _sre.parse(regex)
    except Exception:  # pragma: no cover - the regex compiled, so this is only a guard
        return ()
    if tree.state.flags & re.IGNORECASE:
        return ()
    return tuple(_required(list(tree)) or ())


def _required(items: list[Any]) -> list[str] | None:
    """The most selective required literal (or set of alternatives) in a parsed sequence."""
    best: list[str] | None = None
    run = ""

    def consider(candidates: list[str] | None) -> None:
        nonlocal best
        if candidates and (best is None or min(map(len, candidates)) > min(map(len, best))):
            best = candidates

    for op, arg in items:
        if op is _sre_c.LITERAL:
            run += chr(arg)
            continue
        consider([run] if run else None)
        run = ""
        if op is _sre_c.SUBPATTERN:
            consider(_required(list(arg[-1])))
        elif op is _sre_c.BRANCH:
            alternatives = [_required(list(branch)) for branch in arg[1]]
            if all(alternatives):
                consider([lit for alt in alternatives if alt for lit in alt])
        elif op in (_sre_c.MAX_REPEAT, _sre_c.MIN_REPEAT) and arg[0] >= 1:
            consider(_required(list(arg[2])))
    consider([run] if run else None)
    return best


class CatalogFile(BaseModel):
    """The shape of catalog.yaml and of a user --catalog file."""

    model_config = ConfigDict(extra="forbid")

    version: Literal[1] = 1
    signatures: list[Signature] = Field(default_factory=list)


def load_catalog(extra: Path | None = None) -> list[Signature]:
    """The shipped catalog; entries in `extra` replace shipped ones with the same id or are added."""
    with resources.as_file(resources.files("fabric.diagnose") / "catalog.yaml") as shipped:
        signatures = _load_catalog_file(shipped)
    if extra is None:
        return signatures
    by_id = {s.id: s for s in signatures}
    for sig in _load_catalog_file(extra, user=True):
        by_id[sig.id] = sig  # dicts keep insertion order: overrides stay in place, new ones go last
    return list(by_id.values())


def _load_catalog_file(path: Path, user: bool = False) -> list[Signature]:
    smap = SourceMap()
    data = load_yaml(path, smap)
    if not isinstance(data, dict):
        raise InputError(Problem(str(path), 1, "", "a mapping with a 'signatures' list",
                                 type(data).__name__))
    try:
        catalog = CatalogFile.model_validate(data)
    except ValidationError as exc:
        raise InputError([_problem(smap, err) for err in exc.errors()]) from None
    problems: list[Problem] = []
    seen: dict[str, int] = {}
    for i, sig in enumerate(catalog.signatures):
        loc = ("signatures", i, "id")
        if sig.id in seen:
            problems.append(smap.problem(loc, f"a unique id (signatures[{seen[sig.id]}] has it)", sig.id))
        elif user and sig.id in RULE_IDS:
            problems.append(smap.problem(loc, "an id not reserved for a built-in cross-line rule "
                                              f"({', '.join(sorted(RULE_IDS))})", sig.id))
        seen.setdefault(sig.id, i)
    if problems:
        raise InputError(problems)
    return catalog.signatures


def _problem(smap: SourceMap, err: Any) -> Problem:
    """A pydantic error as a one-line problem at the line of the offending key."""
    loc = tuple(err["loc"])
    kind, msg = err["type"], err["msg"]
    if kind == "extra_forbidden":
        allowed = ", ".join(Signature.model_fields if "signatures" in loc else CatalogFile.model_fields)
        return smap.problem(loc, f"one of the keys {allowed}", f"unknown key {loc[-1]!r}")
    if kind == "missing":
        file, line = smap.where(loc)
        return Problem(file, line, dotted(loc), "this key (it is required)", "nothing")
    msg = msg.removeprefix("Value error, ").removeprefix("Input should be ")
    msg = msg.replace("String should match pattern", "a string matching")
    return smap.problem(loc, msg, repr(err.get("input"))[:120])


# ------------------------------------------------------------------------------------------ findings

class Finding(BaseModel):
    """Repeated hits of one signature (or one cross-line rule) in one log file."""

    model_config = ConfigDict(frozen=True)

    id: str
    title: str
    severity: Severity
    rule: Literal["catalog", "cross-line"]
    sources: list[str]
    file: str
    first_line: int
    last_line: int
    count: int
    evidence: str  # the first matching line, or what a cross-line rule compared
    # distinct combinations of BINDING_KEYS seen in the hits, e.g. {"host": "gpu-a01", "dev": "mlx5_3"}
    subjects: list[dict[str, str]]
    details: dict[str, list[str]]  # distinct values of the other named groups
    cause: str
    next_step: str
    located: list[Located] = []  # with --inventory: the hosts, rail NICs, leaf ports and cables named


class LogFile(BaseModel):
    """One input: its name, how many lines it had, which tools' output it looked like."""

    name: str
    lines: int
    kinds: list[str]


class Report(BaseModel):
    """Everything `fabric diagnose` found."""

    files: list[LogFile]
    findings: list[Finding]
    expected_tos: int
    inventory: str | None = None  # the fabric the findings were bound to

    def counts(self) -> dict[str, int]:
        return {sev: sum(f.severity == sev for f in self.findings) for sev in SEVERITIES}

    @property
    def has_errors(self) -> bool:
        return any(f.severity == "error" for f in self.findings)


def bind(report: Report, fabric: FabricIntent) -> Report:
    """The report with every finding's subjects resolved to places in `fabric` (`located`)."""
    index = FabricIndex(fabric)
    findings = [f.model_copy(update={"located": bind_subjects(f.subjects, index)}) for f in report.findings]
    return report.model_copy(update={"findings": findings, "inventory": fabric.name})


# ------------------------------------------------------------------------------------------ reading

def read_lines(path: Path) -> Iterator[str]:
    """Lines of a log file (`-` is stdin, `.gz` is decompressed); unreadable files are user errors."""
    if str(path) == "-":
        yield from sys.stdin
        return
    try:
        opener = gzip.open if path.suffix == ".gz" else open
        with opener(path, "rt", encoding="utf-8", errors="replace") as fh:
            yield from fh
    except (OSError, EOFError) as exc:
        raise InputError(Problem(str(path), None, "", "a readable log file",
                                 getattr(exc, "strerror", None) or str(exc))) from None


def log_name(path: Path) -> str:
    return "<stdin>" if str(path) == "-" else str(path)


# Cheap substring markers that tell which tools' output a file holds. A signature applies to a file
# if one of its sources was detected there, if it says `any`, or if nothing was detected at all.
_KIND_MARKERS: dict[str, tuple[str, ...]] = {
    "nccl": ("NCCL INFO", "NCCL WARN", "NCCL version", "ProcessGroupNCCL", "NCCL error", "NCCL failure"),
    "kernel": ("kernel:", "mlx5_core", "mlx5_ib", "NETDEV WATCHDOG", "PCIe Bus Error"),
    "perftest": (" BW Test", "Latency Test", "#bytes", "Data ex. method", "Completion with error at",
                 "Couldn't connect to", "Unable to init the socket", "Failed to modify QP",
                 "ethernet_read_keys", "IB device", "GID types"),
    "nccl-tests": ("# nThread", "Avg bus bandwidth", "Out of bounds values", "#wrong", "Test NCCL failure",
                   "# Collective test"),
}

_MARKER_KIND = {marker: kind for kind, markers in _KIND_MARKERS.items() for marker in markers}
_COMMON_MARKERS = frozenset({"NCCL INFO"})  # on most lines of an NCCL log: not worth a gate pass
_KIND_GATE = re.compile("|".join(map(re.escape, sorted(_MARKER_KIND, key=len, reverse=True))))

_NCCL_PREFIX = re.compile(r"(?:^|[\s\]])(?P<host>[A-Za-z0-9][\w.-]*):\d+:\d+ \[\d+\]")
_SYSLOG_PREFIX = re.compile(
    r"^(?:[A-Z][a-z]{2}\s+\d+\s+\d\d:\d\d:\d\d(?:\.\d+)?|\d{4}-\d\d-\d\d[T ]\d\d:\d\d:\d\d\S*)\s+"
    r"(?!(?:INFO|WARN|WARNING|ERROR|DEBUG|NOTICE|CRITICAL)\b)(?P<host>[A-Za-z0-9][\w.-]*)\s")
# pdsh/clush output: "gpu-a01: " before a dmesg timestamp or a sysfs path
_PDSH_PREFIX = re.compile(r"^(?P<host>[A-Za-z0-9][\w.-]*): (?=\[\s*\d+\.\d+\]|/sys/)")


def host_of(line: str) -> str | None:
    """The host that logged `line`: NCCL `host:pid:tid [dev]`, syslog/journal or pdsh prefix."""
    m = _NCCL_PREFIX.search(line) or _SYSLOG_PREFIX.search(line) or _PDSH_PREFIX.search(line)
    return m.group("host") if m else None


# ------------------------------------------------------------------------------------------ matching

@dataclass
class _Hits:
    """Accumulates the hits of one signature in one file."""

    first: int
    evidence: str
    last: int = 0
    count: int = 0
    subjects: dict[tuple[tuple[str, str], ...], None] = field(default_factory=dict)
    details: dict[str, dict[str, None]] = field(default_factory=lambda: defaultdict(dict))

    def add(self, lineno: int, groups: dict[str, str]) -> None:
        self.last, self.count = lineno, self.count + 1
        subject = tuple((k, groups[k]) for k in BINDING_KEYS if k in groups)
        if subject and len(self.subjects) < MAX_SUBJECTS:
            self.subjects[subject] = None
        for key, value in groups.items():
            if key not in BINDING_KEYS and len(self.details[key]) < MAX_DETAIL_VALUES:
                self.details[key][value] = None


def diagnose(logs: Iterable[tuple[str, Iterable[str]]], signatures: list[Signature],
             expected_tos: int = DEFAULT_TOS) -> Report:
    """Match every line of every log against the catalog and the cross-line rules."""
    rules = [rule(expected_tos) for rule in RULES]
    by_id = {s.id: s for s in signatures}
    # Most lines hold nothing of interest. One gate regex over every literal a signature needs, every
    # rule keyword and the rarer kind markers skips them cheaply (kinds are taken from gated lines:
    # every hit line is one). Signatures without a usable literal run on every line. Plain tuples,
    # because pydantic attribute access is slow in a hot loop.
    always = [(s, s.pattern) for s in signatures if not s.needles or not all(map(_trim, s.needles))]
    by_needle: dict[str, list[tuple[Signature, re.Pattern[str]]]] = defaultdict(list)
    for sig in signatures:
        if all(map(_trim, sig.needles)):
            for needle in sig.needles:
                by_needle[needle].append((sig, sig.pattern))
    gate = _literal_gate(map(_trim, [*by_needle, *(k for rule in rules for k in rule.keywords),
                                     *(m for m in _MARKER_KIND if m not in _COMMON_MARKERS)]))
    files: list[LogFile] = []
    findings: list[Finding] = []
    for name, lines in logs:
        hits: dict[str, _Hits] = {}
        kinds: set[str] = set()
        lineno = 0
        for lineno, raw in enumerate(lines, 1):
            line = raw.rstrip("\r\n")
            candidates = always
            if gate.search(line):
                candidates = always + list({m[0].id: m for needle, ms in by_needle.items()
                                            if needle in line for m in ms}.values())
                kinds.update(_MARKER_KIND[m] for m in _KIND_GATE.findall(line))
                for rule in rules:
                    rule.feed(name, lineno, line)
            for sig, pattern in candidates:
                m = pattern.search(line)
                if m is None:
                    continue
                groups = {k: v for k, v in m.groupdict().items() if v is not None}
                if "host" not in groups and (host := host_of(line)):
                    groups["host"] = host
                hits.setdefault(sig.id, _Hits(lineno, _clip(line.strip()))).add(lineno, groups)
        files.append(LogFile(name=name, lines=lineno, kinds=sorted(kinds)))
        for sig_id, h in hits.items():
            sig = by_id[sig_id]
            if kinds and "any" not in sig.sources and not kinds.intersection(sig.sources):
                continue
            findings.append(Finding(
                id=sig.id, title=sig.title, severity=sig.severity, rule="catalog", sources=list(sig.sources),
                file=name, first_line=h.first, last_line=h.last, count=h.count, evidence=h.evidence,
                subjects=[dict(s) for s in h.subjects],
                details={k: sorted(v) for k, v in sorted(h.details.items())},
                cause=sig.cause, next_step=sig.next_step))
    for rule in rules:
        findings.extend(rule.findings())
    findings.sort(key=lambda f: (SEVERITIES.index(f.severity), f.id, f.file, f.first_line))
    return Report(files=files, findings=findings, expected_tos=expected_tos)


def _trim(literal: str) -> str:
    """A literal without the punctuation at its edges (spaces and colons are everywhere in logs)."""
    return literal.strip(" :()[]")


def _literal_gate(literals: Iterable[str]) -> re.Pattern[str]:
    """A regex that finds any of `literals`, built as a trie so re does not try them one by one."""
    trie: dict[str, Any] = {}
    for literal in filter(None, literals):
        node = trie
        for ch in literal:
            node = node.setdefault(ch, {})
        node[""] = {}

    def build(node: dict[str, Any]) -> str:
        if "" in node:  # a literal ends here: that is enough, longer ones need not be tried
            return ""
        alternatives = [re.escape(ch) + build(child) for ch, child in sorted(node.items())]
        return alternatives[0] if len(alternatives) == 1 else "(?:" + "|".join(alternatives) + ")"

    return re.compile(build(trie) or r"(?!)")


def _clip(text: str, limit: int = 400) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


# ------------------------------------------------------------------------------------------ cross-line rules

class _Rule:
    """A check that needs more than one line. Fed the lines holding a keyword; reports at the end."""

    keywords: tuple[str, ...] = ()

    def __init__(self, expected_tos: int) -> None:
        self.expected_tos = expected_tos

    def feed(self, file: str, lineno: int, line: str) -> None:
        raise NotImplementedError

    def findings(self) -> list[Finding]:
        raise NotImplementedError


def _rule_finding(rule_id: str, severity: Severity, file: str, lines: list[int], evidence: str,
                  subjects: Iterable[dict[str, str]], cause: str, next_step: str,
                  details: dict[str, list[str]] | None = None) -> Finding:
    uniq = list({tuple(sorted(s.items())): s for s in subjects if any(s.values())}.values())[:MAX_SUBJECTS]
    return Finding(id=rule_id, title=RULE_TITLES[rule_id], severity=severity, rule="cross-line",
                   sources=list(RULE_SOURCES[rule_id]), file=file, first_line=min(lines),
                   last_line=max(lines), count=len(lines), evidence=evidence,
                   subjects=[{k: s[k] for k in BINDING_KEYS if s.get(k)} for s in uniq],
                   details=details or {}, cause=cause, next_step=next_step)


def _natural(name: str) -> list[int | str]:
    """Sort key so that mlx5_2 comes before mlx5_10."""
    return [int(t) if t.isdigit() else t for t in re.split(r"(\d+)", name)]


def _ecn(tos: int) -> str:
    return ("Not-ECT", "ECT(1)", "ECT(0)", "CE")[tos & 3]


def _tos_text(tos: int) -> str:
    return f"{tos} (DSCP {tos >> 2}, ECN {_ecn(tos)})"


class _TrafficClassRule(_Rule):
    """DG901: NCCL_IB_TC differs from the fabric's RoCE ToS. DG902: NCCL on RoCE without NCCL_IB_TC."""

    keywords = ("set by environment", "/RoCE")
    _SET = re.compile(r"NCCL_IB_TC set by environment to (\d+)")
    _ROCE = re.compile(r"NET/IB ?: Using .*?/RoCE")

    def __init__(self, expected_tos: int) -> None:
        super().__init__(expected_tos)
        self.values: dict[tuple[str, int], list[tuple[int, str]]] = defaultdict(list)  # (file, tc)
        self.tc_hosts: set[tuple[str, str]] = set()
        self.env_hosts: set[tuple[str, str]] = set()  # hosts whose ENV lines are in the log
        self.roce: dict[tuple[str, str], list[int]] = defaultdict(list)

    def feed(self, file: str, lineno: int, line: str) -> None:
        if "set by environment" in line:
            host = host_of(line) or ""
            self.env_hosts.add((file, host))
            if "NCCL_IB_TC" in line and (m := self._SET.search(line)):
                self.values[(file, int(m.group(1)))].append((lineno, host))
                self.tc_hosts.add((file, host))
        elif "/RoCE" in line and self._ROCE.search(line):
            self.roce[(file, host_of(line) or "")].append(lineno)

    def findings(self) -> list[Finding]:
        out = []
        want = self.expected_tos
        for (file, tc), seen in sorted(self.values.items()):
            if tc == want:
                continue
            if tc >> 2 != want >> 2:
                cause = (f"RoCE traffic is marked DSCP {tc >> 2}, but the fabric's lossless class is DSCP "
                         f"{want >> 2}: it lands in another (usually lossy) queue, so congestion drops it "
                         "instead of pausing — completion errors 12, retransmissions, slow collectives.")
            elif tc & 3 == 0:
                cause = (f"The DSCP is right but the packets are not ECN-capable ({_ecn(tc)} instead of "
                         f"{_ecn(want)}): WRED drops them instead of marking them, so DCQCN never slows "
                         "the senders down.")
            else:
                cause = (f"The DSCP is right but the ECN bits are {_ecn(tc)} instead of {_ecn(want)}, "
                         "which the fabric's ECN/WRED and DCQCN settings were not designed for.")
            out.append(_rule_finding(
                "DG901", "error", file, [n for n, _ in seen],
                f"NCCL_IB_TC={_tos_text(tc)}; the fabric expects {_tos_text(want)}",
                ({"host": h, "tc": str(tc)} if h else {"tc": str(tc)} for _, h in seen), cause,
                f"Set NCCL_IB_TC={want} in the job environment (or nccl.conf) on every host; "
                "`fabric render` emits it in hosts/<host>/nccl.env."))
        missing = defaultdict(list)
        for (file, host), lines in sorted(self.roce.items()):
            if (file, host) in self.env_hosts and (file, host) not in self.tc_hosts:
                missing[file].append((host, lines[0]))
        for file, hosts in missing.items():
            out.append(_rule_finding(
                "DG902", "warning", file, [n for _, n in hosts],
                f"NCCL uses RoCE but NCCL_IB_TC is not set: traffic class 0 (DSCP 0); the fabric "
                f"expects {_tos_text(want)}",
                ({"host": h} for h, _ in hosts),
                "Without NCCL_IB_TC NCCL sends with traffic class 0, which maps to the default lossy "
                "queue unless the NIC rewrites it (per-device default traffic_class).",
                f"Set NCCL_IB_TC={want}, or confirm /sys/class/infiniband/<dev>/tc/1/traffic_class is "
                f"{want} on these hosts."))
        return out


class _IbHcaRule(_Rule):
    """DG903: NCCL_IB_HCA names a device that NCCL did not find (absent, or its port not ACTIVE)."""

    keywords = ("NCCL_IB_HCA", "Using [", "No device found")
    _HCA = re.compile(r"NCCL_IB_HCA set (?:by environment )?to (\S+?)\.?\s*$")
    _USING = re.compile(r"NET/IB ?: Using((?: \[\d+\]\S+)*)")
    _DEV = re.compile(r"\[\d+\]([\w.-]+):(\d+)")

    def __init__(self, expected_tos: int) -> None:
        super().__init__(expected_tos)
        self.spec: dict[tuple[str, str], tuple[int, str]] = {}
        self.found: dict[tuple[str, str], list[tuple[str, str]]] = {}

    def feed(self, file: str, lineno: int, line: str) -> None:
        if "NCCL_IB_HCA" in line and (m := self._HCA.search(line)):
            self.spec.setdefault((file, host_of(line) or ""), (lineno, m.group(1)))
        elif "NET/IB" in line:
            key = (file, host_of(line) or "")
            if (m := self._USING.search(line)) and key not in self.found:
                self.found[key] = self._DEV.findall(m.group(1))
            elif "No device found" in line:
                self.found.setdefault(key, [])

    def findings(self) -> list[Finding]:
        per_file: dict[str, list[tuple[int, str, str, str, list[str]]]] = defaultdict(list)
        for key, (lineno, spec) in sorted(self.spec.items()):
            if key not in self.found or spec.startswith("^"):
                continue  # NCCL's pick not in the log, or an exclusion list (absent names are harmless)
            exact = spec.startswith("=")
            found = self.found[key]
            for entry in filter(None, spec.lstrip("=").split(",")):
                name, _, port = entry.partition(":")
                port = port.split(":")[0]
                if not any((dev == name if exact else dev.startswith(name)) and (not port or p == port)
                           for dev, p in found):
                    per_file[key[0]].append((lineno, key[1], name, spec, [d for d, _ in found]))
        out = []
        for file, missing in per_file.items():
            names = sorted({m[2] for m in missing})
            spec, found = missing[0][3], sorted({d for m in missing for d in m[4]}, key=_natural)
            out.append(_rule_finding(
                "DG903", "error", file, [m[0] for m in missing],
                f"NCCL_IB_HCA={spec} names {', '.join(names)}, which NCCL did not find "
                f"(it uses: {', '.join(found) or 'no RDMA device'})",
                ({"host": h, "dev": n} if h else {"dev": n} for _, h, n, _, _ in missing),
                "The device named in NCCL_IB_HCA does not exist on this host (typo, different mlx5 "
                "numbering, device not passed into the container) or none of its ports is ACTIVE, so "
                "NCCL silently runs on fewer rails — or falls back to sockets.",
                "`ibdev2netdev` and `ibv_devinfo` on the host; derive NCCL_IB_HCA from the inventory "
                "(`fabric render` writes nccl.env) instead of hand-maintaining it."))
        return out


class _CnpRule(_Rule):
    """DG904: np_cnp_sent grows but rp_cnp_handled stays flat everywhere: CNPs are never acted on."""

    keywords = ("mlx5_", "_cnp_")
    _COUNTER = re.compile(r"\b(np_cnp_sent|rp_cnp_handled)\b\s*[:=]?\s*(\d+)")
    _DEV = re.compile(r"\b(mlx5_(?:bond_)?\d+)\b")

    def __init__(self, expected_tos: int) -> None:
        super().__init__(expected_tos)
        self.context_dev: dict[str, str] = {}
        # (file, host, dev) -> counter -> [(lineno, value)]
        self.samples: dict[tuple[str, str, str], dict[str, list[tuple[int, int]]]] = defaultdict(
            lambda: defaultdict(list))

    def feed(self, file: str, lineno: int, line: str) -> None:
        dev_m = self._DEV.search(line) if "mlx5_" in line else None
        if dev_m:
            self.context_dev[file] = dev_m.group(1)
        if "_cnp_" not in line:
            return
        key = (file, host_of(line) or "", dev_m.group(1) if dev_m else self.context_dev.get(file, ""))
        for name, value in self._COUNTER.findall(line):
            self.samples[key][name].append((lineno, int(value)))

    def findings(self) -> list[Finding]:
        sent = {k: c["np_cnp_sent"] for k, c in self.samples.items() if c.get("np_cnp_sent")}
        handled = [c["rp_cnp_handled"] for c in self.samples.values() if c.get("rp_cnp_handled")]
        if not sent or not handled:
            return []
        series = any(len(v) > 1 for v in sent.values())
        if series:  # snapshots over time: compare growth
            growth = {k: v[-1][1] - v[0][1] for k, v in sent.items() if len(v) > 1}
            handled_growth = sum(v[-1][1] - v[0][1] for v in handled if len(v) > 1)
            if not any(len(v) > 1 for v in handled) or handled_growth > 0:
                return []
        else:  # one snapshot: cumulative since boot
            growth = {k: v[-1][1] for k, v in sent.items()}
            if sum(v[-1][1] for v in handled) > 0:
                return []
        out = []
        for file in sorted({k[0] for k, g in growth.items() if g > 0}):
            keys = [k for k, g in growth.items() if k[0] == file and g > 0]
            sign = "+" if series else ""
            parts = [f"{sign}{growth[k]} on {k[2] or '?'}{f' ({k[1]})' if k[1] else ''}" for k in keys]
            out.append(_rule_finding(
                "DG904", "error" if series else "warning", file,
                [n for k in keys for n, _ in sent[k]],
                f"np_cnp_sent {', '.join(parts)}; rp_cnp_handled {sign}0 on every device in the logs",
                ({"host": k[1], "dev": k[2]} for k in keys),
                "Receivers see ECN-marked RoCE packets and send CNPs, but no sender's reaction point "
                "handles them, so DCQCN never reduces rates and congestion turns into PFC pauses and "
                "pause storms. Typical causes: roce_rp not enabled on the RoCE priority, CNPs sent with "
                "a DSCP/priority the switch drops or queues behind data, or a mismatched CNP policy "
                "between NIC firmware settings and the switch.",
                "On the senders: `cat /sys/class/net/<if>/ecn/roce_rp/enable/<prio>` must be 1; compare "
                "CNP DSCP/802.1p (np_cnp_dscp, CNP_DSCP_P1) with the switch's CNP class; check "
                "rp_cnp_ignored."))
        return out


class _LinkFlapRule(_Rule):
    """DG905: the same NIC port went down more than once — a flapping link."""

    keywords = ("Link down",)
    _LINK = re.compile(r"mlx5_core (?P<pci>[0-9a-fA-F]{4}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.\d)"
                       r"(?: (?P<ifname>[\w.-]+))?: Link down")

    def __init__(self, expected_tos: int) -> None:
        super().__init__(expected_tos)
        self.downs: dict[tuple[str, str, str, str], list[int]] = defaultdict(list)

    def feed(self, file: str, lineno: int, line: str) -> None:
        if "Link down" in line and (m := self._LINK.search(line)):
            self.downs[(file, host_of(line) or "", m.group("pci"), m.group("ifname") or "")].append(lineno)

    def findings(self) -> list[Finding]:
        flaps: dict[str, list[tuple[str, str, str, list[int]]]] = defaultdict(list)
        for (file, host, pci, ifname), lines in sorted(self.downs.items()):
            if len(lines) > 1:
                flaps[file].append((host, pci, ifname, lines))
        return [_rule_finding(
            "DG905", "error", file, [n for *_, lines in ports for n in lines],
            "; ".join(f"{ifname or pci} down {len(lines)} times" + (f" on {host}" if host else "")
                      for host, pci, ifname, lines in ports),
            ({k: v for k, v in (("host", h), ("pci", p), ("ifname", i)) if v} for h, p, i, _ in ports),
            "The link went down repeatedly: a marginal cable or optic (dirty connector, high BER), a "
            "module overheating, or auto-negotiation/FEC mismatch with the leaf port. Every flap "
            "breaks the RDMA connections on that rail.",
            "`mlxlink -d <pci> -m -c -e` (FEC, BER, module temperature, rx power) on the host and the "
            "leaf port's counters; swap the cable/optic of this rail if errors keep counting.")
            for file, ports in flaps.items()]


RULES: tuple[type[_Rule], ...] = (_TrafficClassRule, _IbHcaRule, _CnpRule, _LinkFlapRule)
RULE_TITLES = {
    "DG901": "NCCL_IB_TC differs from the fabric's RoCE traffic class",
    "DG902": "NCCL on RoCE without NCCL_IB_TC (traffic class 0)",
    "DG903": "NCCL_IB_HCA names a device NCCL did not find",
    "DG904": "CNPs sent but never handled (DCQCN not reacting)",
    "DG905": "NIC link flapping",
}
RULE_SOURCES: dict[str, tuple[str, ...]] = {
    "DG901": ("nccl",), "DG902": ("nccl",), "DG903": ("nccl",), "DG904": ("any",), "DG905": ("kernel",),
}
RULE_IDS = frozenset(RULE_TITLES)
