"""The masking of EOS and FRR config text (fabric.secrets `eos_cli`, `frr_cli`) as it read before a line without
any word its patterns need was passed over with one search: every pattern searched every line. Held against by
tests/test_secrets.py."""

from __future__ import annotations

import re

from fabric.secrets import EOS_SECRET, FRR_SECRET, MASK

Masked = tuple[str, str, bool]


def _mask_spans(line: str, patterns: list[re.Pattern[str]]) -> tuple[str, bool]:
    spans = sorted({m.span(1) for p in patterns for m in p.finditer(line)})
    if not spans:
        return line, False
    out, at = [], 0
    for a, b in spans:
        if a >= at:
            out += [line[at:a], MASK]
            at = b
    return "".join(out) + line[at:], True


def mask_text(patterns: list[re.Pattern[str]], section: str, line: str) -> Masked:
    sec, hit_s = _mask_spans(section, patterns)
    ln, hit_l = _mask_spans(line, patterns)
    return sec, ln, hit_s or hit_l


PATTERNS = {"eos_cli": EOS_SECRET, "frr_cli": FRR_SECRET}
