"""The findings vocabulary shared by `fabric lint` and `fabric diagnose`: one severity scale and what every
finding has — a stable code (lint: the rule id, RF101; diagnose: the signature id, DG122), a severity, a
one-line title, and the place it points at (`where`: file:line).

Each command's finding adds its own fields (lint: object, item, message, waiver; diagnose: counts, evidence,
subjects, cause, next step) and keeps its JSON shape.
"""

from __future__ import annotations

from enum import StrEnum

from pydantic import BaseModel


class Severity(StrEnum):
    """error > warning > info; iterating gives the most severe first."""

    error = "error"
    warning = "warning"
    info = "info"

    @property
    def rank(self) -> int:
        return {"error": 3, "warning": 2, "info": 1}[self.value]


SEVERITIES: tuple[Severity, ...] = tuple(Severity)


class Finding(BaseModel):
    """The fields every finding has; subclasses say what `code` and `where` are."""

    severity: Severity
    title: str
    file: str = ""

    @property
    def code(self) -> str:
        """The stable id of what found it (a lint rule, a diagnose signature or rule)."""
        raise NotImplementedError

    @property
    def where(self) -> str:
        """`file:line` (or `file:first-last`), or just the file when no line is known."""
        raise NotImplementedError
