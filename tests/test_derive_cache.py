"""The content-addressed cache of the derived intent (fabric.design.load): a hit gives what deriving gives, and
any changed byte of the inventory or of the tool's code is a miss."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

import fabric.design.load as fl
from fabric.design.derive import derive
from fabric.model.load import load

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    d = tmp_path / "cache"
    monkeypatch.setenv("ROCE_FABRIC_CACHE", str(d))
    return d


def _loads(monkeypatch: pytest.MonkeyPatch) -> list[Path]:
    """Every inventory the loader reads from now on (a hit reads none)."""
    seen: list[Path] = []

    def counting(directory: Path):  # type: ignore[no-untyped-def]
        seen.append(directory)
        return load(directory)

    monkeypatch.setattr(fl, "load", counting)
    return seen


def test_a_hit_is_what_deriving_gives_and_reads_no_inventory(example_copy: Path, cache: Path,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    seen = _loads(monkeypatch)
    first = fl.load_fabric(example_copy, min_devices=0)
    second = fl.load_fabric(example_copy, min_devices=0)
    assert seen == [example_copy]  # the second came from the cache
    assert second.intent == first.intent == derive(load(example_copy))
    assert second.loaded.smap.files == first.loaded.smap.files
    assert fl.summary(example_copy) == fl.Summary.of(first)
    entries = sorted(cache.iterdir())
    assert [e.suffix for e in entries] == [".json", ".pickle"]
    assert {oct(e.stat().st_mode & 0o777) for e in entries} == {"0o600"}
    assert oct(cache.stat().st_mode & 0o777) == "0o700"


def test_one_changed_byte_of_the_inventory_is_a_miss(example_copy: Path, cache: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    seen = _loads(monkeypatch)
    before = fl.load_fabric(example_copy, min_devices=0)
    f = example_copy / "fabric.yaml"
    data = f.read_bytes()
    i = data.index(before.intent.name.encode()) + len(before.intent.name) - 1
    f.write_bytes(data[:i] + bytes([data[i] ^ 1]) + data[i + 1:])  # the fabric name's last letter, one bit
    after = fl.load_fabric(example_copy, min_devices=0)
    assert len(seen) == 2
    assert after.intent.name != before.intent.name and after.intent == derive(load(example_copy))
    f.write_bytes(data + b"\n")  # a byte that changes nothing the loader keeps is still a different input
    fl.load_fabric(example_copy, min_devices=0)
    assert len(seen) == 3


def test_one_changed_byte_of_the_code_is_another_key(tmp_path: Path) -> None:
    pkg = tmp_path / "fabric"
    shutil.copytree(ROOT / "fabric", pkg, ignore=shutil.ignore_patterns("__pycache__"))
    before = fl.code_digest.__wrapped__(pkg)
    p = pkg / "design" / "headroom.py"
    p.write_bytes(p.read_bytes().replace(b"=", b" =", 1))
    assert fl.code_digest.__wrapped__(pkg) != before


def test_an_entry_others_can_write_is_never_read(example_copy: Path, cache: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    seen = _loads(monkeypatch)
    fl.load_fabric(example_copy, min_devices=0)
    for e in cache.iterdir():
        os.chmod(e, 0o666)
    fl.load_fabric(example_copy, min_devices=0)
    assert len(seen) == 2


def test_small_fabrics_and_off_are_not_cached(example_copy: Path, cache: Path,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    fl.load_fabric(example_copy)  # far below CACHE_MIN_DEVICES
    assert not cache.exists()
    monkeypatch.setenv("ROCE_FABRIC_CACHE", "off")
    fl.load_fabric(example_copy, min_devices=0)
    assert not cache.exists()


def test_explain_reads_the_checked_topology_from_the_cache(example_copy: Path, cache: Path,
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    seen = _loads(monkeypatch)
    first = fl.load_deriver(example_copy, min_devices=0)
    second = fl.load_deriver(example_copy, min_devices=0)
    assert seen == [example_copy]
    intent = derive(load(example_copy))
    for name in [*intent.switches][:2] + [*intent.hosts][:2]:
        assert second.device(name) == first.device(name) == (intent.switches | intent.hosts)[name]


@pytest.mark.parametrize("name", ["example", "fixtures/irregular", "fixtures/dgx-hgx-2su", "fixtures/k8s-vlan16"])
def test_explain_of_one_device_from_its_own_entry_is_what_the_whole_topology_gives(
        name: str, tmp_path: Path, cache: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`explain` reads a device's own entry (its intent, the loaded inventory, its node and links): every row of
    every device, on the miss that writes the entry and on the hit, equals the rows from the whole topology —
    explicit links' and host entries' file:line included."""
    from fabric.explain import explain

    src = ROOT / ("tests/fixtures/inventories/" + name.split("/")[1] if "/" in name else "inventories/" + name)
    inv = tmp_path / "inv"
    shutil.copytree(src, inv)
    whole = fl.Deriver(load(inv))
    seen = _loads(monkeypatch)
    names = [*whole.topo.switches, *whole.topo.hosts]
    for dev in names:
        expected = explain(whole.loaded, whole.device(dev), "", whole.topo)  # type: ignore[arg-type]
        for _ in range(2):  # the miss, then the hit
            one = fl.load_device(inv, dev, min_devices=0)
            assert one.intent == whole.device(dev)
            assert explain(one.loaded, one.intent, "", one.topo) == expected  # type: ignore[arg-type]
    assert seen == [inv]  # the first device's miss loaded it; later ones read the checked topology
    devices = [e for e in cache.iterdir() if e.suffix.startswith(".device-")]
    assert len(devices) == len(names)
    assert {oct(e.stat().st_mode & 0o777) for e in devices} == {"0o600"}
    missing = fl.load_device(inv, "no-such-device", min_devices=0)
    assert missing.intent is None and missing.loaded.inv.fabric.name == whole.loaded.inv.fabric.name


@pytest.mark.parametrize("name", ["example", "fixtures/irregular", "fixtures/k8s-vlan16"])
def test_explain_answered_from_its_kept_rows_is_what_the_whole_topology_gives(
        name: str, tmp_path: Path, cache: Path) -> None:
    """`explain` of a device explained before reads its kept rows (fabric.explained) and filters them: for every
    device and path, on the miss that keeps them and on the hit, the rows and the JSON text equal those made from
    the whole topology, and a device the fabric lacks is still said to be missing."""
    import json

    from fabric import explained
    from fabric.explain import answer, explain

    src = ROOT / ("tests/fixtures/inventories/" + name.split("/")[1] if "/" in name else "inventories/" + name)
    inv = tmp_path / "inv"
    shutil.copytree(src, inv)
    whole = fl.Deriver(load(inv))
    for dev in [*whole.topo.switches, *whole.topo.hosts]:
        intent = whole.device(dev)
        assert explained.read(inv, dev) is None
        missed = answer(inv, dev, min_devices=0)
        hit = explained.read(inv, dev)
        assert hit is not None and hit == missed
        full = explain(whole.loaded, intent, "", whole.topo)  # type: ignore[arg-type]
        paths = {"", "ports", "ports[0]", "qos", "qos.queues.3", "effective", "bgp.asn", "rails[0]", "nccl_env",
                 "no.such.path", *(p for p, _, _ in full[::7]), *(p.rsplit(".", 1)[0] for p, _, _ in full[::11])}
        for path in sorted(paths):
            expected = explain(whole.loaded, intent, path, whole.topo)  # type: ignore[arg-type]
            assert explained.select(hit.rows, path) == expected, (dev, path)  # type: ignore[arg-type]
            text = json.dumps([{"path": p, "value": v, "origin": o} for p, v, o in expected], indent=2,
                              ensure_ascii=False) + "\n"
            assert explained.to_json(expected) == text
    assert answer(inv, "no-such-device", min_devices=0).rows is None
    kept = explained.read(inv, "no-such-device")
    assert kept is not None and kept.rows is None and kept.fabric == whole.loaded.inv.fabric.name
    entries = [e for e in cache.iterdir() if e.suffix.startswith(".explain-")]
    assert entries and {oct(e.stat().st_mode & 0o777) for e in entries} == {"0o600"}


def test_explain_json_text_is_json_dumps_on_odd_text() -> None:
    from fabric.explained import to_json

    odd = ["", "ä", "\u2028", '"', "\\", "\x00\x1f", "€ 😀", "a\nb\tc"]
    rows = [(a, b, c) for a in odd for b in odd[:3] for c in odd[::-1][:3]]
    assert to_json(rows) == json_dumps(rows)
    assert to_json([]) == json_dumps([])


def json_dumps(rows: list[tuple[str, str, str]]) -> str:
    import json

    return json.dumps([{"path": p, "value": v, "origin": o} for p, v, o in rows], indent=2, ensure_ascii=False) + "\n"


def test_a_fifo_at_an_entrys_name_never_blocks(example_copy: Path, cache: Path) -> None:
    """The cache may be shared: a FIFO put at the names of an inventory's entries (validate's summary, the
    derived fabric, the checked topology, one device's) is no entry, never read or written into, and stays."""
    import stat
    import subprocess
    import sys

    from fabric.design.cachekey import answer_path, entry_path

    entry = entry_path(example_copy, None)
    assert entry is not None
    fifos = [entry.with_suffix(s) for s in (".json", ".pickle", ".deriver")]
    fifos.append(answer_path(example_copy, "device", "spine1"))  # type: ignore[arg-type]
    cache.mkdir(mode=0o700)
    for f in fifos:
        os.mkfifo(f, 0o600)
    fabric = str(Path(sys.executable).parent / "fabric")
    for argv in (["validate", str(example_copy)], ["explain", str(example_copy), "spine1"]):
        p = subprocess.run([fabric, *argv], capture_output=True, text=True, timeout=60,
                           env={**os.environ, "ROCE_FABRIC_CACHE": str(cache)})
        assert p.returncode == 0, p.stderr
    assert all(stat.S_ISFIFO(os.lstat(f).st_mode) for f in fifos)


def test_a_file_name_that_is_not_utf8_in_the_inventory(example_copy: Path, cache: Path) -> None:
    """Any bytes make a file name: its key is made of them, and a problem in it names it escaped."""
    from tests import inproc

    odd = example_copy / os.fsdecode(b"x\xff.yaml")
    odd.write_text("x-anchors: {}\n")
    p = inproc.fabric("validate", example_copy)
    assert p.returncode == 0 and "(6 files)" in p.stdout, p.stderr
    odd.write_text("x-anchors: [\n")
    p = inproc.fabric("validate", example_copy)
    assert p.returncode == 2 and "Traceback" not in p.stderr, p.stderr
    assert f"{example_copy}/x\\udcff.yaml:2: expected valid YAML" in p.stderr


def test_an_inventory_that_is_a_symlink_to_itself(tmp_path: Path, cache: Path) -> None:
    from tests import inproc

    loop = tmp_path / "inv"
    loop.symlink_to(loop)
    for argv in (["validate", loop], ["lint", loop], ["render", loop, "-o", tmp_path / "out"]):
        p = inproc.fabric(*argv)
        assert p.returncode == 2 and "Traceback" not in p.stderr, p.stderr
        assert f"{loop}: expected an inventory directory of YAML files, found a symlink that leads nowhere" \
               in p.stderr
