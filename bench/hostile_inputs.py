"""Peak memory and time of `fabric parse` and `fabric diagnose` on ~200 MB inputs (< 300 MiB), and of
`fabric diagnose` on a 1 MB adversarial line (< 1 s). Each run is a fresh `fabric` process; its peak RSS is the
child's ru_maxrss. Usage: python bench/hostile_inputs.py [SIZE_MB] (default 200)."""

from __future__ import annotations

import gzip
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SAMPLES = ROOT / "tests" / "fixtures" / "samples"


def grow(src: Path, dst: Path, size: int, marker: str, noise: str | None = None) -> None:
    """The sample up to the line with `marker`, then `noise` (default: the sample's next 5 lines, its rows)
    repeated up to `size` bytes, then the rest of the sample."""
    lines = src.read_text().splitlines(keepends=True)
    start = next(i for i, ln in enumerate(lines) if marker in ln) + 1
    head, body = "".join(lines[:start]), noise or "".join(lines[start:start + 5])
    with dst.open("w") as fh:
        fh.write(head)
        n = len(head)
        while n < size:
            fh.write(body)
            n += len(body)
        fh.write("".join(lines[start:]))


# The child reports its own VmHWM (the peak RSS of its address space since exec) at exit: ru_maxrss would count
# the forked parent's pages too.
CHILD = ("import atexit, sys\n"
         "def hwm():\n"
         "    for line in open('/proc/self/status'):\n"
         "        if line.startswith('VmHWM:'):\n"
         "            sys.stderr.write('VmHWM ' + line.split()[1] + '\\n')\n"
         "atexit.register(hwm)\n"
         "from fabric.cli.main import main\n"
         "main()\n")


def run(*args: str) -> tuple[int, float, float]:
    """Exit code, seconds and peak RSS (MiB) of one `fabric` process."""
    t0 = time.monotonic()
    r = subprocess.run([sys.executable, "-c", CHILD, *args], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                       text=True, timeout=900)
    kib = [int(line.split()[1]) for line in r.stderr.splitlines() if line.startswith("VmHWM ")]
    return r.returncode, time.monotonic() - t0, (kib[-1] / 1024 if kib else float("nan"))


def main() -> None:
    size = int(sys.argv[1]) * 1_000_000 if len(sys.argv) > 1 else 200_000_000
    with tempfile.TemporaryDirectory() as tmp:
        d = Path(tmp)
        perf, nccl, log = d / "perftest.txt", d / "nccl.txt", d / "nccl.log"
        perf_rows, nccl_rows = d / "perftest-rows.txt", d / "nccl-rows.txt"
        info = "gpu-a01:1234:1300 [3] NCCL INFO Channel 00/0 : 0[3] -> 1[3] [send] via NET/IB/3/GDRDMA\n"
        grow(SAMPLES / "ib_write_bw_client_all_sizes_report_gbits.txt", perf, size, "#bytes",
             " local address: LID 0000 QPN 0x0108 PSN 0x2c6a2c RKey 0x1fefed VAddr 0x007f8ba4a00000\n")
        grow(SAMPLES / "ib_write_bw_client_all_sizes_report_gbits.txt", perf_rows, size, "#bytes")
        grow(SAMPLES / "nccl_all_reduce_2node_h200_v2.18_format.txt", nccl, size, "(elements)", info)
        grow(SAMPLES / "nccl_all_reduce_2node_h200_v2.18_format.txt", nccl_rows, size, "(elements)")
        with log.open("w") as fh:  # a verbose NCCL log: INFO lines, and a completion error every 1,000 lines
            error = "gpu-a01:1234:1300 [3] NCCL INFO NET/IB : Got completion from peer 10.0.0.2<44> with error 12, " \
                    "opcode 0, len 0, vendor err 129 (Send) localGid ::ffff:10.0.0.1 hca mlx5_3\n"
            block = info * 999 + error
            fh.write(block * (size // len(block)))
        gz = d / "nccl.log.gz"
        with log.open("rb") as src, gzip.open(gz, "wb", compresslevel=1) as out:
            while chunk := src.read(1 << 20):
                out.write(chunk)
        adv = d / "adversarial.log"
        adv.write_text("NET/IB : Got completion with error 12 " * (1_000_000 // 38) + "\n")
        print(f"{'command':<40} {'input MB':>9} {'rc':>3} {'seconds':>8} {'peak MiB':>9}")
        for label, args, path in (("parse perftest (noise, one table)", ("parse", "perftest", str(perf)), perf),
                                  ("parse perftest (rows: refused)", ("parse", "perftest", str(perf_rows)), perf_rows),
                                  ("parse nccl (INFO noise, one table)", ("parse", "nccl", str(nccl)), nccl),
                                  ("parse nccl (rows: refused)", ("parse", "nccl", str(nccl_rows)), nccl_rows),
                                  ("diagnose", ("diagnose", str(log)), log),
                                  ("diagnose .gz", ("diagnose", str(gz)), gz),
                                  ("diagnose 1 MB adversarial line", ("diagnose", str(adv)), adv)):
            rc, seconds, peak = run(*args)
            print(f"{label:<40} {path.stat().st_size / 1e6:>9.1f} {rc:>3} {seconds:>8.2f} {peak:>9.0f}")


if __name__ == "__main__":
    main()
