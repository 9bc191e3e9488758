"""GPU host stand-in: perftest, nccl-tests, mpirun and ethtool as a real host runs them, over real sshd.

Each program checks its arguments as the acceptance commands must give them and prints the real output
format (the samples in tests/fixtures/samples: perftest's `ib_write_bw` report with `--report_gbits`, the
`ib_write_lat` table, nccl-tests 2.18 text and its `-J` JSON, mlx5 `ethtool -S`); a wrong argument is the
tool's own kind of error and a non-zero exit.

- `ib_write_bw` / `ib_write_lat`: need `-d <dev>` (the host's NIC of that rail), `-x <gid>`, the lossless
  class (`--tclass=<ToS>`, or `-R -T <ToS>`), `-p <port>`; a server waits for its client through a
  rendezvous file, a client without a server fails like perftest ("Couldn't connect").
  `$STANDIN_ROOT/speed.json` {"<host>:<dev>": Gb/s} slows a NIC down (default 392.5);
  `$STANDIN_ROOT/uncalibrated-<host>-<dev>` holding n: that NIC's next n client runs print what perftest prints
  when its clock calibration fails (tests/fixtures/samples/extra_ib_write_bw_clock_uncalibrated.txt, captured in
  the VM lab: the r² line on stderr, then zeros), exit 0.
- `mpirun`: `-np`, `--hostfile` (slots × lines must equal -np), `--map-by ppr:<n>:node`; runs the command once
  per rank with `OMPI_COMM_WORLD_RANK` (ranks of node i are i·n … i·n+n−1, as Open MPI places them).
- `all_reduce_perf`: `-h` lists `-J,--output_file` (nccl-tests ≥ 2.17); every rank logs its NCCL variables to
  `$STANDIN_ROOT/nccl-ranks.log`; rank 0 prints the result (and writes the `-J` JSON).
- `ethtool -S <netdev>`: mlx5 counters; `$STANDIN_ROOT/storm.json` {"<host>": n} sets
  tx_pause_storm_error_events.
"""

from __future__ import annotations

import json
import os
import re
import sys
import time
from pathlib import Path

from tests.standins.common import ROOT

SAMPLES = ROOT / "tests" / "fixtures" / "samples"
DEVICES = Path(os.environ.get("STANDIN_DEV", "/nonexistent"))


def _root() -> Path:
    return Path(os.environ["STANDIN_ROOT"])


def _host() -> str:
    return (DEVICES / "name").read_text().strip()


def _fail(tool: str, msg: str, rc: int = 1) -> int:
    print(f" {msg}", file=sys.stderr)
    print(f"{tool}: stand-in refused: {msg}", file=sys.stderr)
    return rc


def _opt(args: list[str], *names: str) -> str | None:
    for i, a in enumerate(args):
        for n in names:
            if a == n and i + 1 < len(args):
                return args[i + 1]
            if n.startswith("--") and a.startswith(n + "="):
                return a.split("=", 1)[1]
    return None


def perftest(tool: str, args: list[str]) -> int:
    dev, gid, port = _opt(args, "-d", "--ib-dev"), _opt(args, "-x", "--gid-index"), _opt(args, "-p", "--port")
    tclass = _opt(args, "--tclass")
    tos = _opt(args, "-T", "--tos") if "-R" in args or "--rdma_cm" in args else None
    if tclass is None and _opt(args, "-T", "--tos") is not None and tos is None:
        return _fail(tool, "-T/--tos works only with -R (rdma_cm)")
    if not dev or not gid or not port:
        return _fail(tool, "expected -d <dev>, -x <gid index> and -p <port>")
    if (tclass or tos) is None:
        return _fail(tool, "no --tclass (or -R -T): the test would not run on the lossless class")
    nics = json.loads((DEVICES / "nics.json").read_text())
    if dev not in nics:
        return _fail(tool, f"IB device {dev} not found (this host has {', '.join(sorted(nics))})")
    peer = args[-1] if re.fullmatch(r"\d+\.\d+\.\d+\.\d+", args[-1]) else None
    rdv = _root() / "rdv"
    rdv.mkdir(exist_ok=True)
    if peer is None:  # server: wait for the client (bounded by the caller's `timeout`)
        flag = rdv / f"{tool}-{_host()}-{port}"
        flag.write_text(dev)
        deadline = time.monotonic() + 60
        while flag.exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        print("************************************\n* Waiting for client to connect... *\n"
              "************************************")
        return 0
    owner = json.loads((_root() / "addresses.json").read_text()).get(peer, "?")  # rail address → host
    flag = rdv / f"{tool}-{owner}-{port}"
    deadline = time.monotonic() + 5
    while not flag.exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    if not flag.exists():
        print(f"Couldn't connect to {peer}:{port}", file=sys.stderr)
        print(" Unable to init the socket connection", file=sys.stderr)
        return 1
    flag.unlink(missing_ok=True)
    uncalibrated = _root() / f"uncalibrated-{_host()}-{dev}"
    if uncalibrated.exists() and (left := int(uncalibrated.read_text())) > 0:  # only this NIC's client writes it
        uncalibrated.write_text(str(left - 1))
        r2, report = (SAMPLES / "extra_ib_write_bw_clock_uncalibrated.txt").read_text().split("\n", 1)
        print(r2, file=sys.stderr)
        print(report.replace("rxe2", dev), end="")
        return 0
    speed = json.loads((_root() / "speed.json").read_text()) if (_root() / "speed.json").exists() else {}
    if tool == "ib_write_bw":
        text = (SAMPLES / "ib_write_bw_client_bidir_duration_newheader.txt").read_text().split("\n", 1)[1]
        gbps = speed.get(f"{_host()}:{dev}", 392.5)
        text = text.replace("mlx5_0", dev).replace("98.02", f"{gbps:.2f}").replace("Bidirectional ", "")
    else:
        text = (SAMPLES / "ib_write_lat_all_sizes_client.txt").read_text().split("\n", 1)[1]
        text = text.replace("mlx4_0", dev)
    print(text, end="")
    return 0


def mpirun(args: list[str]) -> int:
    import subprocess  # the imports only some commands need are where they are used (tests.standins.common)

    np_, hostfile, mapby = _opt(args, "-np", "-n"), _opt(args, "--hostfile"), _opt(args, "--map-by")
    if not np_ or not hostfile or not mapby or not (m := re.fullmatch(r"ppr:(\d+):node", mapby)):
        return _fail("mpirun", "expected -np, --hostfile and --map-by ppr:<n>:node")
    slots = [int(s) for s in re.findall(r"slots=(\d+)", Path(hostfile).read_text())]
    per = int(m[1])
    if sum(slots) != int(np_) or any(s != per for s in slots):
        return _fail("mpirun", f"-np {np_} does not fill the hostfile's {sum(slots)} slots at {per} per node")
    i = max(i for i, a in enumerate(args) if a in ("--map-by",)) + 2
    argv = args[i:]
    out = b""
    for rank in range(int(np_)):
        p = subprocess.run(argv, env={**os.environ, "OMPI_COMM_WORLD_RANK": str(rank)}, capture_output=True)
        out += p.stdout
        sys.stderr.buffer.write(p.stderr)
        if p.returncode != 0:
            sys.stdout.buffer.write(out)
            print(f"mpirun: rank {rank} exited {p.returncode}", file=sys.stderr)
            return p.returncode
    sys.stdout.buffer.write(out)
    return 0


def all_reduce_perf(args: list[str]) -> int:
    if "-h" in args:
        print("USAGE: all_reduce_perf \n\t[-t,--nthreads <num threads>] \n\t[-g,--ngpus <gpus per thread>] \n\t"
              "[-b,--minbytes <min size in bytes>] \n\t[-e,--maxbytes <max size in bytes>] \n\t"
              "[-J,--output_file <output file name>] \n\t[-T,--timeout <time in seconds>] \n\t[-h,--help]")
        return 0
    rank = int(os.environ.get("OMPI_COMM_WORLD_RANK", "-1"))
    env = {k: v for k, v in os.environ.items() if k.startswith("NCCL_")}
    if "NCCL_IB_HCA" not in env or env.get("NCCL_IB_TC") is None:
        return _fail("all_reduce_perf", f"rank {rank}: no NCCL_IB_HCA/NCCL_IB_TC in the environment")
    with open(_root() / "nccl-ranks.log", "a") as log:
        log.write(json.dumps({"rank": rank, **env}) + "\n")
    if rank == 0:
        print((SAMPLES / "nccl_all_reduce_2node_h200_v2.18_format.txt").read_text().split("\n", 1)[1], end="")
        doc = _opt(args, "-J", "--output_file")
        if doc:
            Path(doc).write_text((SAMPLES / "extra_nccl_all_reduce_2node.json").read_text())
    return 0


def ethtool(args: list[str]) -> int:
    if args[:1] != ["-S"] or len(args) != 2:
        return _fail("ethtool", "expected -S <netdev>")
    storm = json.loads((_root() / "storm.json").read_text()) if (_root() / "storm.json").exists() else {}
    text = (SAMPLES / "extra_ethtool_S_mlx5_prio3.txt").read_text()
    text = "\n".join(ln for ln in text.splitlines() if not ln.startswith("#")) + "\n"
    n = storm.get(_host(), 0)
    print(text.replace("tx_pause_storm_error_events: 0", f"tx_pause_storm_error_events: {n}"), end="")
    return 0


def main(argv: list[str]) -> int:
    prog, args = Path(argv[0]).name, argv[1:]
    if prog in ("ib_write_bw", "ib_write_lat"):
        return perftest(prog, args)
    return {"mpirun": mpirun, "all_reduce_perf": all_reduce_perf, "ethtool": ethtool}[prog](args)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
