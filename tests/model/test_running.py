"""Saved and replied running configurations checked before any driver reads them (fabric.model.running)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

import fabric.model.running as running
from fabric.errors import InputError
from tests.conftest import ROOT
from tests.oracles import running as oracle

SONIC = sorted((ROOT / "tests" / "fixtures" / "running" / "sonic").glob("*.json"))
PORT = '{"PORT": {"Ethernet0": {"mtu": "9100", "lanes": "0,1,2,3"}}}'
HOSTILE = {
    "deep": "[" * 100_000 + "]" * 100_000,
    "deep, never closed": "[" * 100_000,
    "deep in a field": '{\n "PORT": {\n  "Ethernet0": {\n   "mtu": ' + "[" * 70 + "]" * 70 + "}}}",
    "deep, then a syntax error": '{"PORT": ' + "[" * 70 + "]" * 70 + ", }",
    "deep past the recursion limit in a field": '{"T": {"k": {"f": ' + "[" * 5000 + "]" * 5000 + "}}}",
    "a syntax error": '{"PORT": {"Ethernet0": {"mtu": "9100",}}}\n',
    "4,301 digits": '{"PORT": {"Ethernet0": {"mtu": ' + "9" * 4301 + "}}}",
    "a list": "[]", "a table of strings": '{"PORT": "x"}', "an entry of strings": '{"PORT": {"Ethernet0": "x"}}',
    "a field of mappings": '{"PORT": {"Ethernet0": {"mtu": {"x": 1}}}}',
    "a field of nested lists": '{"PORT": {"Ethernet0": {"mtu": [["1"]]}}}',
    "64 levels": '{"T": {"k": {"f": ' + "[" * 61 + "]" * 61 + "}}}",
    "65 levels": '{"T": {"k": {"f": ' + "[" * 62 + "]" * 62 + "}}}",
    "strings with brackets": '{"T": {"k": {"f": "' + "[" * 100 + '"}}}',
    "well formed": PORT, "an empty document": "{}", "nothing": "",
}


def _outcome(check, text: str) -> object:
    try:
        return check(Path("show runningconfiguration all"), text)
    except InputError as exc:
        return [str(p) for p in exc.problems]


@pytest.mark.parametrize("name", [*HOSTILE, *(p.name for p in SONIC)])
def test_config_db_check_reads_as_the_scan_first_check(name: str) -> None:
    """Each real CONFIG_DB and each hostile text gets the document or the located problem (deep nesting: its line)
    the check gave when its nesting scan came first (tests/oracles/running.py)."""
    text = HOSTILE[name] if name in HOSTILE else (ROOT / "tests" / "fixtures" / "running" / "sonic" / name).read_text()
    got, want = _outcome(running.config_db_document, text), _outcome(oracle.config_db, text)
    assert got == want
    if "deep" in name or name == "65 levels":
        assert "levels of nesting" in str(got) and f":{4 if name == 'deep in a field' else 1}:" in str(got), got


def test_a_config_db_is_decoded_once_and_scanned_only_when_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    """The SONiC driver's reader of `show runningconfiguration all` decodes a well-formed reply once and never
    scans it for nesting (the shape check bounds an accepted document to four levels); a refused one is scanned."""
    from fabric.nos.sonic.driver import config_db_reply

    scans: list[int] = []
    loads: list[int] = []
    real_scan, real_loads = running.nesting_past, json.loads
    monkeypatch.setattr(running, "nesting_past", lambda text, limit: scans.append(len(text)) or real_scan(text, limit))
    monkeypatch.setattr(json, "loads", lambda text, **kw: loads.append(len(text)) or real_loads(text, **kw))
    text = SONIC[0].read_text()
    assert config_db_reply(text) == real_loads(text)
    assert (scans, loads) == ([], [len(text)])
    with pytest.raises(Exception, match="levels of nesting"):
        config_db_reply(HOSTILE["deep in a field"])
    assert scans == [len(HOSTILE["deep in a field"])]


NVUE = [*sorted((ROOT / "tests" / "fixtures" / "nvue" / "outputs").glob("*.json")),
        *sorted((ROOT / "tests" / "fixtures" / "running" / "nvue").glob("*.yaml"))]
NVUE_HOSTILE = {**HOSTILE, "a duplicate key": '{"a": 1, "a": 2}', "NaN": '{"a": NaN}', "Infinity": "[Infinity]",
                "64 arrays": "[" * 64 + "]" * 64, "65 arrays": "[" * 65 + "]" * 65,
                "65 objects": '{"a": ' * 64 + "{}" + "}" * 64, "64 objects": '{"a": ' * 63 + "{}" + "}" * 63,
                "65 mixed": '{"a": [' * 32 + "{}" + "]}" * 32, "a string": '"x"', "YAML": "- set: {}"}


@pytest.mark.parametrize("name", [*NVUE_HOSTILE, *(p.name for p in NVUE)])
def test_json_document_reads_as_the_scan_first_reader(name: str) -> None:
    """NVUE's JSON reader gives each real output (the saved YAML configs as `-o json` prints them) and each hostile
    text the same document, or NO_DOC (the hardened YAML reader then reads or locates it), as when its nesting scan
    came first (tests/oracles/running.py)."""
    path = next((p for p in NVUE if p.name == name), None)
    text = NVUE_HOSTILE[name] if path is None else path.read_text()
    if path is not None and path.suffix == ".yaml":
        text = json.dumps(yaml.safe_load(text), indent=2)
    got = running.json_document(text)
    assert (got is running.NO_DOC, got) == ((want := oracle.json_document(text)) is running.NO_DOC, want)
    if "65" in name or "deep" in name:
        assert got is running.NO_DOC
    if path is not None:
        assert got is not running.NO_DOC


def test_an_nvue_reply_is_read_without_a_nesting_scan(monkeypatch: pytest.MonkeyPatch) -> None:
    """`nv config show -o json`, read by the NVUE driver's reader, is decoded once and never scanned for nesting
    (counted on the decoded tree); a text nested too deep is still the hardened reader's located problem."""
    from fabric.errors import ReplyError
    from fabric.nos.nvue.driver import applied_reply

    scans: list[int] = []
    real_scan = running.nesting_past
    monkeypatch.setattr(running, "nesting_past", lambda text, limit: scans.append(len(text)) or real_scan(text, limit))
    text = json.dumps(yaml.safe_load(NVUE[-1].read_text())[1]["set"], indent=2)
    assert applied_reply(text) == json.loads(text) and scans == []
    with pytest.raises(ReplyError, match="nest"):
        applied_reply('{"a": ' * 70 + "{}" + "}" * 70)
