"""Other entry points: `diagnose` matches in linear time (every catalog pattern and the whole pipeline
on 1 MB adversarial lines under a time bound), keeps one line and a gzip bomb bounded; `parse` results say
whether their table is complete."""

from __future__ import annotations

import contextlib
import gzip
import io
import os
import time
from pathlib import Path

import pytest

from fabric.diagnose.catalog import load_catalog
from fabric.diagnose.logs import read_lines
from fabric.diagnose.match import diagnose
from fabric.errors import InputError
from fabric.parsers._common import MAX_LINE, capped_lines

MB = 1_000_000
UNITS = ["NET/IB: Got completion with error 12 ", "NET/IB : Got completion with error 12 vendor err ", "a", " ", "1",
         ":", "1.1.1.1 ", "x: ", "mlx5_core 0000:00:00.0: ", "NCCL WARN ", "Test NCCL failure a:1 '", "a:1:2 [0] ",
         "Port module event[error]: module 1, ", "NCCL_IB_HCA set to ", "NET/IB : Using [0]", "np_cnp_sent "]


def adversarial(unit: str, size: int = MB) -> str:
    return (unit * (size // len(unit) + 1))[:size]


def test_every_catalog_pattern_is_linear_on_a_1mb_line() -> None:
    """Each unit repeated to 1 MB made a backtracking pattern of the catalog quadratic (minutes)."""
    lines = [adversarial(unit) for unit in UNITS]
    for sig in load_catalog():
        t0 = time.process_time()  # this process's CPU time: the work, whatever else the machine runs
        for line in lines:
            sig.pattern.search(line)
        assert time.process_time() - t0 < len(lines) * 0.25, sig.id


@pytest.mark.parametrize("unit", UNITS[:2] + UNITS[4:6])
def test_a_1mb_adversarial_line_is_diagnosed_in_under_a_second(unit: str) -> None:
    t0 = time.process_time()  # CPU time: a loaded machine's wall clock once read 1 s (2026-11-26)
    diagnose([("adv.log", [adversarial(unit) + "\n"])], load_catalog())
    assert time.process_time() - t0 < 1.0


def test_a_catalog_pattern_with_lookaround_is_refused_at_its_line(tmp_path: Path) -> None:
    cat = tmp_path / "cat.yaml"
    cat.write_text("signatures:\n  - id: X1\n    title: t\n    severity: error\n    sources: [any]\n"
                   "    regex: '(?!a)b'\n    cause: c\n    next_step: n\n")
    with pytest.raises(InputError, match=r"cat.yaml:6: signatures\[0\].regex: expected a regular expression RE2"):
        load_catalog(cat)


def test_unless_vetoes_a_hit() -> None:
    sigs = load_catalog()
    report = diagnose([("k.log", ["mlx5_core 0000:01:00.0: Port module event[error]: module 1, Cable error, "
                                  "High Temperature\n"])], sigs)
    assert "DG204" not in {f.id for f in report.findings}
    report = diagnose([("n.log", ["x NET/IB : Got completion from peer 1.2.3.4<5> with error 12, opcode 1, "
                                  "len 0, vendor err 129 (Send) localGid ::ffff:1.1.1.1\n"])], sigs)
    assert "DG105" not in {f.id for f in report.findings}


def test_one_line_is_capped() -> None:
    lines = list(capped_lines(io.StringIO("a" * (5 * MAX_LINE) + "\nb\n")))
    assert [len(x) for x in lines] == [MAX_LINE + 1, 2]


def test_a_gzip_bomb_stays_bounded(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import tracemalloc

    from fabric.diagnose import logs

    bomb = tmp_path / "bomb.log.gz"
    with gzip.open(bomb, "wb", compresslevel=9) as fh:
        for _ in range(16):
            fh.write(b"\0" * (4 * 2**20))  # 64 MiB of NUL, no newline
    assert bomb.stat().st_size < 2**20
    # what the reader allocates, not the process's peak RSS: a test worker's high-water mark from earlier tests hides
    # any growth below it (a reader that held the whole 128 MiB line moved ru_maxrss by 0 after a 300 MiB test)
    tracemalloc.start()
    try:
        assert sum(1 for _ in read_lines(bomb)) == 1
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 100 * 2**20, f"peak {peak >> 20} MiB"
    monkeypatch.setattr(logs, "MAX_GZIP", 2**20)
    with pytest.raises(InputError, match="decompressed"):
        list(read_lines(bomb))


SAMPLES = Path(__file__).resolve().parents[1] / "fixtures" / "samples"


def test_perftest_says_whether_its_table_is_complete() -> None:
    from fabric.parsers import parse_perftest

    text = (SAMPLES / "ib_write_lat_all_sizes_client.txt").read_text()
    assert parse_perftest(text).complete
    table_end = text.rindex("---")
    cut = text[:text.rindex("\n", 0, table_end - 1) - 10]  # the last row cut in the middle, no closing line
    res = parse_perftest(cut)
    assert not res.complete and res.skipped and res.skipped[-1].reason.startswith("no newline")
    res = parse_perftest(text[:table_end])  # every row whole, the closing line missing
    assert not res.complete and res.lat_rows


@pytest.mark.parametrize(("kind", "sample", "marker"), [
    ("perftest", "ib_write_lat_all_sizes_client.txt", "#bytes"),
    ("nccl", "nccl_all_reduce_2node_h200_v2.18_format.txt", "(elements)")])
def test_parse_streams_and_caps_rows(tmp_path: Path, kind: str, sample: str, marker: str) -> None:
    from fabric.parsers import parse_file

    lines = (SAMPLES / sample).read_text().splitlines(keepends=True)
    start = next(i for i, ln in enumerate(lines) if marker in ln) + 1
    big = tmp_path / "big.txt"
    big.write_text("".join(lines[:start]) + "".join(lines[start:start + 2]) * 6000 + "".join(lines[start:]))
    with pytest.raises(InputError, match=r"big.txt:\d+: \w+.row: expected at most 10000 result rows"):
        parse_file(kind, str(big))
    noisy = tmp_path / "noisy.txt"
    noisy.write_text("".join(lines[:start]) + ("junk " * 40_000 + "\n") * 5 + "".join(lines[start:]))
    assert parse_file(kind, str(noisy)).complete
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    with pytest.raises(InputError, match="a FIFO or device"):
        parse_file(kind, str(fifo))


@pytest.mark.parametrize(("kind", "sample", "after"), [
    ("perftest", "extra_ib_write_lat_duration.txt", "Mtu"),  # the info block: a lazy key: value regex
    ("nccl", "nccl_all_reduce_2node_h200_v2.18_format.txt", "nThread"),  # the settings line
    ("mlnx_qos", "mlnx_qos_trust_dscp_os_controlled.txt", "DCBX"),
    ("show_gids", "show_gids_single_dev_tabs.txt", "DEV"),
])
def test_a_long_line_in_a_tool_output_is_not_matched_by_a_regex(tmp_path: Path, kind: str, sample: str,
                                                                  after: str) -> None:
    """The fuzzer found a 200,000-character line in perftest's info block took 60 s (a quadratic regex)."""
    from fabric.parsers import parse_file

    lines = (SAMPLES / sample).read_text().splitlines(keepends=True)
    i = next((n for n, ln in enumerate(lines) if after in ln), 1)
    path = tmp_path / "out.txt"
    for junk in ("x" * 200_000, "# nThread " + "a " * 100_000, "a:" * 100_000):
        path.write_text("".join([*lines[:i + 1], junk + "\n", *lines[i + 1:]]))
        t0 = time.monotonic()
        with contextlib.suppress(InputError):
            parse_file(kind, str(path))
        assert time.monotonic() - t0 < 1.0, (kind, junk[:20])


@pytest.mark.parametrize("kind", ["perftest", "iperf3"])
def test_deeply_nested_json_output_is_located(tmp_path: Path, kind: str) -> None:
    """The fuzzer found `[[[[…` in a perftest --out_json file ended in RecursionError."""
    from fabric.parsers import parse_file

    path = tmp_path / "out.json"
    path.write_text('{"results": ' + "[" * 100_000 + "]" * 100_000 + "}\n")
    with pytest.raises(InputError, match=r"out.json: json: expected JSON nested at most"):
        parse_file(kind, str(path))
