"""The canary sweep in `make test` (tests/canary.py): every string field of every shipped inventory, once
per field (the first inventory that has it; list items alike), each canary value, through validate, render and the
Ansible inventory. The whole command matrix over every inventory's every field is tests/fuzz/test_canary.py
(`make fuzz`)."""

from __future__ import annotations

from pathlib import Path

from tests.canary import ENV_SECRET, SECRET, Field, check, fields, quick_commands, sweep
from tests.fuzz.harness import Outcome


def representatives() -> list[Field]:
    seen: set[tuple[object, ...]] = set()
    out = []
    for f in fields():
        key = (f.file, *("*" if isinstance(k, int) else k for k in f.path))
        if key not in seen:
            seen.add(key)
            out.append(f)
    return out


def test_canaries_in_every_field_never_run_or_leak(tmp_path: Path) -> None:
    reps = representatives()
    assert len(reps) >= 30 and any(not f.file for f in reps)  # the YAML's fields and the defaults' (access.*)
    problems, runs = [], 0
    for i, field in enumerate(reps):
        got, n = sweep(field, tmp_path / str(i), quick_commands)
        problems += got
        runs += n
    assert not problems, problems[:10]
    assert runs > 6 * len(reps)  # some canaries were accepted (free text, file names) and went past validate


def test_the_sweep_sees_a_command_that_ran_and_a_secret_that_leaked(tmp_path: Path) -> None:
    """The judge of the sweep can fail: a marker file, the operator's password in stdout or in a written file, and
    the planted value of a field that holds a secret by its name."""
    (tmp_path / "marker").mkdir()
    (tmp_path / "out").mkdir()
    plain = Field("example", "fabric.yaml", ("fabric", "description"), "x")
    secret = Field("example", "", ("access", "password"), None)
    inv, ok = tmp_path / "inv", Outcome(0, "", "", 0)
    assert check(plain, tmp_path, inv, ["render"], ok) is None
    assert check(plain, tmp_path, inv, ["render"], Outcome(0, SECRET, "", 0)) is None  # not a secret field
    assert "printed" in (check(secret, tmp_path, inv, ["render"], Outcome(0, SECRET, "", 0)) or "")
    assert "printed" in (check(plain, tmp_path, inv, ["render"], Outcome(0, "", ENV_SECRET, 0)) or "")
    (tmp_path / "out" / "f").write_text(f"x {ENV_SECRET}")
    assert "written" in (check(plain, tmp_path, inv, ["render"], ok) or "")
    (tmp_path / "out" / "f").unlink()
    (tmp_path / "marker" / "dollar").touch()
    assert "canary command ran" in (check(plain, tmp_path, inv, ["render"], ok) or "")
