"""The YAML loader (fabric.model.source.load_yaml), shared by inventories, `diagnose --catalog`,
`lint --configs` (NVUE) and the acceptance catalog: regular files only, size and depth caps, aliases and merge
keys within a bound on what they expand to, scalar keys only, every YAML error a located problem — never a
traceback, a hang or a segfault."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from fabric.errors import InputError
from fabric.model.source import MAX_DEPTH, SourceMap, copy_tree, load_yaml
from tests.hostile.helpers import EXAMPLE, ROOT

BOMB = "a: &a [lol, lol, lol, lol, lol, lol, lol, lol, lol]\n" + "".join(
    f"{chr(98 + i)}: &{chr(98 + i)} [{', '.join([f'*{chr(97 + i)}'] * 9)}]\n" for i in range(9))

CASES = {
    "unhashable-key": ("a: 1\n? [a, b]\n: 2\n", 2, "a plain key"),
    "nul": ("a: 1\nb: \"x\0y\"\n", 2, "printable characters"),
    "control": ("a: 1\nb: \x01\n", 2, "printable characters"),
    "deep-flow": ("a: " + "[" * 100_000 + "]" * 100_000 + "\n", 1, f"at most {MAX_DEPTH} levels"),
    "deep-block": ("- " * 5000 + "x\n", 1, f"at most {MAX_DEPTH} levels"),
    "deep-mapping": "".join("  " * i + f"k{i}:\n" for i in range(200)) and (
        "".join("  " * i + f"k{i}:\n" for i in range(200)), 65, f"at most {MAX_DEPTH} levels"),
    "billion-laughs": (BOMB, 6, "an alias bomb"),
    "undefined-alias": ("a: 1\nc:\n  d: *x\n", 3, "an alias to an anchor defined above it"),
    "self-alias": ("a: &x [1, *x]\n", 1, "an alias to an anchor defined above it"),
    "alias-key": ("a: &x k\n*x : 1\n", 2, "a plain key"),
    "merge-scalar": ("a: &x 1\nc:\n  <<: *x\n", 3, "a mapping or a list of mappings after <<"),
    "deep-alias": ("a: &x " + "[" * 40 + "]" * 40 + "\nb: " + "[" * 30 + "*x" + "]" * 30 + "\n", 2,
                   f"at most {MAX_DEPTH} levels"),
    "python-tag": ("a: !!python/object/apply:os.system [true]\n", 1, "no tags"),
    "many-digits": ("a: " + "9" * 5000 + "\n", 1, "a value YAML can read"),
    "two-documents": ("a: 1\n---\nb: 2\n", 2, "one YAML document"),
    "scanner": ("a: 'unterminated\n", 2, "valid YAML"),
    "parser": ("a:\n  - b\n  c: d\n", 3, "valid YAML"),
    "duplicate": ("a: 1\na: 2\n", 2, "each key once"),
    "null-key": ("~: 1\n", 1, "a key"),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_hostile_yaml_is_one_located_problem(tmp_path: Path, case: str) -> None:
    text, line, expected = CASES[case]
    path = tmp_path / "x.yaml"
    path.write_text(text)
    with pytest.raises(InputError) as exc:
        load_yaml(path, SourceMap())
    got = [str(p) for p in exc.value.problems]
    assert len(got) == 1 and got[0].startswith(f"{path}:{line}:") and expected in got[0], got
    assert "\n" not in got[0] and "\0" not in got[0]


def test_anchors_aliases_and_merge_keys_expand(tmp_path: Path) -> None:
    """Per-role defaults and host templates as engineers write them: explicit keys win over merged ones, the
    first merged mapping wins over later ones, and values reached through an alias keep the anchor's lines."""
    path = tmp_path / "x.yaml"
    path.write_text(
        "defaults: &d\n"          # 1
        "  mtu: 9216\n"           # 2
        "  speed: 400G\n"         # 3
        "more: &m {speed: 100G, fec: rs}\n"  # 4
        "nics: &nics\n"           # 5
        "  - {name: eth0, rail: 0}\n"  # 6
        "hosts:\n"                # 7
        "  - <<: [*d, *m]\n"      # 8
        "    name: h1\n"          # 9
        "    nics: *nics\n"       # 10
        "  - name: h2\n"          # 11
        "    <<: *d\n"            # 12
        "    mtu: 1500\n")        # 13
    smap = SourceMap()
    data = load_yaml(path, smap)
    assert data["hosts"] == [{"mtu": 9216, "speed": "400G", "fec": "rs", "name": "h1",
                              "nics": [{"name": "eth0", "rail": 0}]},
                             {"name": "h2", "mtu": 1500, "speed": "400G"}]
    assert copy_tree(data) == data and copy_tree(data)["hosts"][0]["nics"] is not copy_tree(data)["nics"]
    line = {loc: smap.where(loc)[1] for loc in [("hosts", 0, "mtu"), ("hosts", 0, "fec"), ("hosts", 0, "name"),
                                                 ("hosts", 0, "nics"), ("hosts", 0, "nics", 0, "rail"),
                                                 ("hosts", 1, "mtu"), ("hosts", 1, "speed")]}
    assert line == {("hosts", 0, "mtu"): 2, ("hosts", 0, "fec"): 4, ("hosts", 0, "name"): 9,
                    ("hosts", 0, "nics"): 10, ("hosts", 0, "nics", 0, "rail"): 6,
                    ("hosts", 1, "mtu"): 13, ("hosts", 1, "speed"): 3}


def test_an_alias_bomb_stops_within_a_second(tmp_path: Path) -> None:
    """The bound is checked before an alias is copied: the billion laughs cost what the bound allows, no more."""
    import time

    path = tmp_path / "x.yaml"
    path.write_text(BOMB)
    t0 = time.monotonic()
    with pytest.raises(InputError, match="an alias bomb"):
        load_yaml(path, SourceMap())
    assert time.monotonic() - t0 < 1.0


def test_binary_is_located(tmp_path: Path) -> None:
    path = tmp_path / "x.yaml"
    path.write_bytes(b"a: 1\nb: \xff\xfe\n")
    with pytest.raises(InputError, match=r"x.yaml:2: expected a YAML file in UTF-8, found byte 0xff"):
        load_yaml(path, SourceMap())


@pytest.mark.parametrize("kind", ["fifo", "dev-zero", "directory"])
def test_special_files_are_refused_without_reading(tmp_path: Path, kind: str) -> None:
    path = tmp_path / "x.yaml"
    if kind == "fifo":
        os.mkfifo(path)
    elif kind == "dev-zero":
        path.symlink_to("/dev/zero")
    else:
        path.mkdir()
    with pytest.raises(InputError, match=r"expected a YAML file, found a (FIFO|character device|directory)"):
        load_yaml(path, SourceMap())


def test_size_cap(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from fabric.model import source

    monkeypatch.setattr(source, "MAX_BYTES", 1024)
    path = tmp_path / "x.yaml"
    path.write_text("a: " + "x" * 2000 + "\n")
    with pytest.raises(InputError, match=r"of at most 0 MiB"):
        source.read_user_file(path, "a YAML file", source.MAX_BYTES)


def test_a_list_as_qos_preset_is_located(tmp_path: Path) -> None:
    import shutil

    from fabric.model.load import load

    inv = tmp_path / "inv"
    shutil.copytree(EXAMPLE, inv)
    (inv / "qos.yaml").write_text("qos:\n  preset: [a, b]\n")
    with pytest.raises(InputError, match=r"qos.yaml:2: qos.preset: expected one of nvidia-roce"):
        load(inv)


@pytest.mark.parametrize("command", [["validate", "{inv}"], ["diagnose", "{log}", "--catalog", "{bad}"],
                                     ["lint", "{inv}", "--configs", "{cfg}"]])
def test_every_entry_point_exits_2_without_traceback(tmp_path: Path, command: list[str]) -> None:
    """A subprocess sample: the real exit code (a segfault would be 139) and no traceback on stderr."""
    import shutil

    inv = tmp_path / "inv"
    shutil.copytree(EXAMPLE, inv)
    deep = "x: " + "[" * 200_000 + "]" * 200_000 + "\n"
    (tmp_path / "cat.yaml").write_text(deep)
    (tmp_path / "log.txt").write_text("hello\n")
    (tmp_path / "cfg").mkdir()
    (tmp_path / "cfg" / "leaf1.yaml").write_text("- set: " + "{a: " * 100_000 + "1" + "}" * 100_000 + "\n")
    if command[0] == "validate":
        (inv / "zz.yaml").write_text(deep)
    args = [a.format(inv=inv, log=tmp_path / "log.txt", bad=tmp_path / "cat.yaml", cfg=tmp_path / "cfg")
            for a in command]
    r = subprocess.run([sys.executable, "-c", "from fabric.cli.main import main; main()", *args],
                       capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert r.returncode == 2, (r.returncode, r.stderr[-2000:])
    assert "Traceback" not in r.stderr and re.search(r"\.yaml:1: ", r.stderr), r.stderr[-2000:]
