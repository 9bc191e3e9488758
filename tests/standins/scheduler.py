"""`scontrol` and `kubectl` stand-ins for remediation: each records its argv and acts on a set of known nodes.

They accept exactly the forms `fabric.remediate` may send and refuse, with the real tool's exit status, what the
real tool would treat differently from "this one node" — so a test sees the argv that really reached the tool:

- `scontrol update NodeName=<node> State=DRAIN Reason=<text>` / `State=RESUME` (scontrol(1),
  https://slurm.schedmd.com/scontrol.html): NodeName takes a Slurm hostlist, so `ALL`, a list (`a,b`) or a
  range (`gpu[1-4]`) would name many nodes; a word starting with `-` is an option of scontrol; an unknown
  node is "Invalid node name specified".
- `kubectl cordon|uncordon -- <node>`, `kubectl taint nodes [--overwrite] -- <node> <taint>`,
  `kubectl patch hypernode --type=json -p <json> -- <name>` (kubectl's flag parser, cobra, reads every word
  starting with `-` before `--` as a flag: `--all`, `-l`/`--selector` select many nodes; after `--` every word is
  a name). Any other flag is refused; an unknown node is `Error from server (NotFound)`, exit 1.

Environment: STANDIN_LOG (JSON lines {"tool", "argv", "refused"}), STANDIN_NODES (comma-separated known nodes),
STANDIN_FAIL (nodes kubectl reports NotFound although known: a failing call).
"""

from __future__ import annotations

import json
import os
import re
import sys

HOSTLIST = re.compile(r"[,\[\]\s]|^all$", re.IGNORECASE)


def _nodes() -> set[str]:
    return {n for n in os.environ.get("STANDIN_NODES", "").split(",") if n}


def scontrol(args: list[str]) -> tuple[int, str]:
    if any(a.startswith("-") for a in args):
        return 1, f"scontrol: unrecognized option '{next(a for a in args if a.startswith('-'))}'"
    if len(args) < 3 or args[0] != "update" or not args[1].startswith("NodeName="):
        return 1, f"scontrol: stand-in expects update NodeName=<node> State=…, found {args}"
    node = args[1].removeprefix("NodeName=")
    if HOSTLIST.search(node) or not node:
        return 1, f"stand-in refuses NodeName={node!r}: a hostlist (many nodes) for the real scontrol"
    if node not in _nodes():
        return 1, f"slurm_update error: Invalid node name specified ({node})"
    rest = args[2:]
    if rest == ["State=RESUME"] or (len(rest) == 2 and rest[0] == "State=DRAIN" and rest[1].startswith("Reason=")):
        return 0, ""
    return 1, f"scontrol: stand-in expects State=DRAIN Reason=… or State=RESUME, found {rest}"


KUBECTL_FLAGS = {("cordon",): set(), ("uncordon",): set(), ("taint", "nodes"): {"--overwrite"},
                 ("patch", "hypernode"): {"--type=json", "-p"}}


def kubectl(args: list[str]) -> tuple[int, str]:
    if "--" not in args:
        return 1, "stand-in refuses: names must follow `--` (a name starting with - would be a flag)"
    head, names = args[:args.index("--")], args[args.index("--") + 1:]
    verb = tuple(w for w in head if not w.startswith("-"))
    flags = [w for w in head if w.startswith("-")]
    if verb[:1] == ("patch",):  # -p takes the next word
        verb = verb[:2]
    allowed = KUBECTL_FLAGS.get(verb)
    if allowed is None:
        return 1, f"stand-in expects cordon, uncordon, taint nodes or patch hypernode, found {head}"
    bad = [f for f in flags if f not in allowed]
    if bad:
        return 1, f"stand-in refuses flag {bad[0]!r} (it would change what is selected)"
    if not names or any("," in n or "/" in n for n in names[:1]):
        return 1, f"stand-in refuses names {names}: one node name expected"
    node = names[0]
    if verb[0] != "patch" and (node not in _nodes() or node in os.environ.get("STANDIN_FAIL", "").split(",")):
        return 1, f'Error from server (NotFound): nodes "{node}" not found'
    if verb == ("taint", "nodes") and len(names) != 2:
        return 1, f"stand-in expects one node and one taint, found {names}"
    if verb[0] in ("cordon", "uncordon") and len(names) != 1:
        return 1, f"stand-in expects one node, found {names}"
    return 0, f"node/{node} {verb[0]}ed" if verb[0] != "patch" else f"hypernode.topology.volcano.sh/{node} patched"


def main(tool: str, args: list[str]) -> int:
    rc, msg = scontrol(args) if tool == "scontrol" else kubectl(args)
    with open(os.environ["STANDIN_LOG"], "a") as log:
        log.write(json.dumps({"tool": tool, "argv": args, "refused": msg if rc else None}) + "\n")
    print(msg, file=sys.stderr if rc else sys.stdout)
    return rc


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2:]))
