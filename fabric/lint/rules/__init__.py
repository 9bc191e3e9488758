"""The rule catalog: one module per family (ids: RF1xx QoS, RF2xx NCCL/host, RF3xx L1-L3, RF4xx operations)."""

from fabric.lint.core import RULES, Rule
from fabric.lint.rules import host, l3, ops, qos  # noqa: F401  (each registers its rules)


def all_rules() -> list[Rule]:
    """Every rule, ordered by id."""
    return [RULES[k] for k in sorted(RULES)]
