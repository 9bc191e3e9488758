"""`fabric host plan --intent`: a hostile host.json (IPv6 or malformed rail address, a 5,000-character
netdev, the management interface as a rail) gives every problem at its line, never a traceback."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from fabric.cli.host import load_intent
from fabric.design.derive import derive
from fabric.errors import InputError
from fabric.model.load import load
from tests.hostile.helpers import EXAMPLE


def intent_file(tmp_path: Path, edit) -> Path:  # type: ignore[no-untyped-def]
    data = next(iter(derive(load(EXAMPLE)).hosts.values())).model_dump(mode="json")
    edit(data)
    path = tmp_path / "host.json"
    path.write_text(json.dumps(data, indent=2))
    return path


def test_every_intent_error_is_shown_at_its_line(tmp_path: Path) -> None:
    def edit(d: dict) -> None:  # type: ignore[type-arg]
        d["rails"][0]["address"] = "fd00::1/64"
        d["rails"][1]["address"] = "10.0.0.300/24"
        d["rails"][2]["netdev"] = "x" * 5000
        d["rails"][3]["gateway"] = "not an address"
    path = intent_file(tmp_path, edit)
    with pytest.raises(InputError) as exc:
        load_intent(path, None, None)
    got = [str(p) for p in exc.value.problems]
    text = path.read_text().splitlines()
    assert len(got) == 4, got
    for p, field in zip(got, ["rails[0].address", "rails[1].address", "rails[2].netdev", "rails[3].gateway"],
                        strict=True):
        line = int(p.split(":")[1])
        assert f": {field}: expected " in p and text[line - 1].strip().startswith(f'"{field.rsplit(".")[1]}"'), p
        assert len(p) < 400


def test_the_management_interface_cannot_be_a_rail(tmp_path: Path) -> None:
    def edit(d: dict) -> None:  # type: ignore[type-arg]
        d["rails"][0]["netdev"] = d["rails"][0]["ifname"] = d["management_interface"]
    with pytest.raises(InputError, match="expected rails other than the management interface eth0"):
        load_intent(intent_file(tmp_path, edit), None, None)


@pytest.mark.parametrize("text", ["", "{", "[]", "{" * 100_000 + "}" * 100_000, "\0"])
def test_junk_is_located(tmp_path: Path, text: str) -> None:
    path = tmp_path / "host.json"
    path.write_text(text)
    with pytest.raises(InputError) as exc:
        load_intent(path, None, None)
    assert all(str(p).startswith(str(path)) for p in exc.value.problems)
