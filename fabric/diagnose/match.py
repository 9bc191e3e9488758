"""Matching: every line of every log against the catalog's regexes (behind a cheap literal gate) and
the cross-line rules, accumulated into one finding per signature and file."""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

from fabric.diagnose.catalog import Signature
from fabric.diagnose.logs import COMMON_MARKERS, KIND_GATE, MARKER_KIND, host_of, split_rank
from fabric.diagnose.report import BINDING_KEYS, MAX_DETAIL_VALUES, MAX_SUBJECTS, Finding, LogFile, Report
from fabric.diagnose.rulebase import Ranks
from fabric.diagnose.rules import DEFAULT_TOS, RULES, TosOf


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
             expected_tos: int = DEFAULT_TOS, tos_of: TosOf | None = None) -> Report:
    """Match every line of every log against the catalog and the cross-line rules. NCCL_IB_TC is judged
    against `tos_of(host)` where it knows the host (an inventory's hosts), else against `expected_tos`.
    A launcher's rank prefix (Open MPI --tag-output, srun --label) is taken off every line; the rank is kept
    and bound to the host the rank's other lines name."""
    ranks = Ranks()
    bound: set[str] = set()  # ranks whose host is known: no more host_of() for their lines
    rules = [rule(expected_tos, tos_of, ranks) for rule in RULES]
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
    gate = _literal_gate(tuple(map(_trim, [*by_needle, *(k for rule in rules for k in rule.keywords),
                                           *(m for m in MARKER_KIND if m not in COMMON_MARKERS)])))
    files: list[LogFile] = []
    findings: list[Finding] = []
    for name, lines in logs:
        hits: dict[str, _Hits] = {}
        kinds: set[str] = set()
        lineno = 0
        for lineno, raw in enumerate(lines, 1):
            rank, line = split_rank(raw.rstrip("\r\n"))
            if rank is not None and rank not in bound:
                ranks.saw(rank, host_of(line), "")
                if ranks.host(rank):
                    bound.add(rank)
            candidates = always
            if gate.search(line):
                candidates = always + list({m[0].id: m for needle, ms in by_needle.items()
                                            if needle in line for m in ms}.values())
                kinds.update(MARKER_KIND[m] for m in KIND_GATE.findall(line))
                for rule in rules:
                    rule.feed(name, lineno, line, rank)
            for sig, pattern in candidates:
                m = pattern.search(line)
                if m is None or (sig.unless_pattern is not None and sig.unless_pattern.search(line)):
                    continue
                groups = {k: v for k, v in m.groupdict().items() if v is not None}
                if "host" not in groups and (host := host_of(line)):
                    groups["host"] = host
                if rank is not None:
                    groups.setdefault("rank", rank)
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
    findings = [_with_rank_hosts(f, ranks) for f in findings]
    findings.sort(key=lambda f: (-f.severity.rank, f.id, f.file, f.first_line))
    return Report(files=files, findings=findings, expected_tos=expected_tos)


def _with_rank_hosts(finding: Finding, ranks: Ranks) -> Finding:
    """Subjects that name only a rank get the host the job's logs bind that rank to."""
    if not any("rank" in s and "host" not in s for s in finding.subjects):
        return finding
    subjects = [{**s, "host": ranks.host(s["rank"])} if "rank" in s and "host" not in s and ranks.host(s["rank"])
                else s for s in finding.subjects]
    return finding.model_copy(update={"subjects": subjects})


def _trim(literal: str) -> str:
    """A literal without the punctuation at its edges (spaces and colons are everywhere in logs)."""
    return literal.strip(" :()[]")


@lru_cache(maxsize=64)
def _literal_gate(literals: tuple[str, ...]) -> re.Pattern[str]:
    """A regex that finds any of `literals`, built as a trie so re does not try them one by one (cached: the same
    catalog gives the same gate)."""
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
