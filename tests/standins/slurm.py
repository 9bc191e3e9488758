"""`sbatch` stand-in on the submit host: runs a batch script's `srun` line the way Slurm places its tasks.

`sbatch --wait --parsable <script>` reads the script's `#SBATCH` lines (--nodelist, --ntasks-per-node,
--output), then for every node of the node list and every task on it runs the command after `srun …` with
`SLURMD_NODENAME` (the node's name) and `SLURM_PROCID`, output appended to the --output file; prints the job id
(`--parsable`) and exits with the first failing task's status. Refuses a script without those lines.
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path


def main(args: list[str]) -> int:
    if args[:2] != ["--wait", "--parsable"] or len(args) != 3:
        print("sbatch: stand-in expects --wait --parsable <script>", file=sys.stderr)
        return 2
    text = Path(args[2]).read_text()
    opts = dict(re.findall(r"^#SBATCH --([\w-]+)=(\S+)$", text, re.MULTILINE))
    if not {"nodelist", "ntasks-per-node", "output"} <= set(opts):
        print(f"sbatch: error: batch script lacks --nodelist/--ntasks-per-node/--output: {sorted(opts)}",
              file=sys.stderr)
        return 1
    argv = shlex.split(text[text.index("\nsrun ") + 1:])
    argv = argv[next(i for i, a in enumerate(argv) if i and not a.startswith("-")):]  # after `srun --mpi=pmix`
    rc, rank = 0, 0
    with open(opts["output"], "ab") as out:
        for node in opts["nodelist"].split(","):
            for _ in range(int(opts["ntasks-per-node"])):
                env = {**os.environ, "SLURMD_NODENAME": node, "SLURM_PROCID": str(rank), "OMPI_COMM_WORLD_RANK":
                       str(rank)}  # pmix gives Open MPI its rank; the wrapper must still pick by node name
                p = subprocess.run(argv, env=env, stdout=out, stderr=subprocess.PIPE)
                rc = rc or p.returncode
                rank += 1
    print("4242")
    return rc


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
