"""The rule catalog. Importing this package registers every rule (ids: RF1xx QoS, RF2xx NCCL/host,
RF3xx L1-L3, RF4xx operations)."""

from fabric.lint.rules import host, l3, ops, qos  # noqa: F401
