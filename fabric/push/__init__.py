"""Plan and rollout against running switches: concurrency, canary and batches, audit, lock, rollback.

`engine` runs the per-device transactions of `fabric.targets` in bounded parallel; `state` keeps the
audit log, the apply lock and the per-device records `fabric rollback` restores from; `cli` holds
the `plan` (online), `apply` and `rollback` commands.
"""
