"""`kubectl` and `scontrol` stand-ins that parse their arguments the way the real tools do and refuse the rest.

Run as `python -m tests.standins.schedulers kubectl|scontrol ARGS…` (`install()` puts a two-line wrapper of each
name on PATH). State in `$SCHED_STANDIN` (a directory): `calls.jsonl` (one JSON line per call, accepted or not:
{"tool", "argv", "refused": the error message or null}; `calls()` reads it), `nodes.json` (per tool, the node names
its cluster knows; absent: every name), `mpijob.json` (the phases an MPIJob goes through, one per `get`; or
Running, then `$KUBECTL_STATE`), `logs.txt` or the file `$KUBECTL_LOGS` (what `kubectl logs` prints).

kubectl (kubernetes.io/docs/reference/kubectl/generated/: kubectl_cordon, _uncordon, _taint, _patch, _apply, _get,
_logs, _delete, _version; flags as pflag takes them, `--flag=value` or `--flag value`):
- an unknown flag: `error: unknown flag: --x` (`unknown shorthand flag: 'x' in -x`), exit 1; `--all` and
  `-l`/`--selector`, real flags of cordon, uncordon and taint that select many nodes, are refused as well;
- `taint nodes NODE KEY[=VALUE]:EFFECT[-]`: effect NoSchedule|PreferNoSchedule|NoExecute, key a qualified name,
  value ≤ 63 characters of [A-Za-z0-9._-] alphanumeric at both ends; an existing taint needs `--overwrite`;
- `patch TYPE NAME --type json|merge|strategic -p PATCH`: PATCH valid JSON (for json, a list of RFC 6902 ops);
- a node not in nodes.json: `Error from server (NotFound): nodes "NODE" not found`, exit 1;
- cordon, uncordon, taint and patch (the verbs that act on a named node) are refused unless the name follows `--`:
  cobra reads every word starting with `-` before `--` as a flag, so a name from a log must come after it.
scontrol (slurm.schedmd.com/scontrol.html, "update" of a node): `update NodeName=LIST State=… [Reason=…]`, keys
case-insensitive; State one of the documented node states; DRAIN/DOWN need a Reason ("You must specify a reason
when DOWNING or DRAINING a node. Request denied", exit 1); any other key: "Update of this parameter is not
supported: K" + "Request aborted", exit 1; an unknown node: "slurm_update error: Invalid node name specified".
NodeName takes a Slurm hostlist, so `ALL`, a list (`a,b`) or a range (`gpu[1-4]`) would name many nodes: the
stand-in refuses those, as it refuses a word starting with `-` (an option of scontrol), so a test sees that only
one node was ever named.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
from functools import cache
from pathlib import Path

EFFECTS = ("NoSchedule", "PreferNoSchedule", "NoExecute")
_NAME = r"[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?"
TAINT_KEY = re.compile(rf"^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?{_NAME}$")
LABEL_VALUE = re.compile(rf"^({_NAME})?$")
SLURM_STATES = {"CANCEL_REBOOT", "DOWN", "DRAIN", "FAIL", "FUTURE", "NORESP", "POWER_DOWN", "POWER_DOWN_ASAP",
                "POWER_DOWN_FORCE", "POWER_UP", "RESUME", "UNDRAIN"}
HOSTLIST = re.compile(r"[,\[\]\s]|^all$", re.IGNORECASE)  # a Slurm hostlist: many nodes
NODE_VERBS = ("cordon", "uncordon", "taint", "patch")  # kubectl verbs that act on the node (object) they name
SELECTORS = ("--all", "-l", "--selector", "-A", "--all-namespaces")  # their flags that select many objects
SLURM_KEYS = {"nodename", "state", "reason", "weight", "features", "activefeatures", "gres", "comment", "extra",
              "nodeaddr", "nodehostname", "cpubind", "resumeafter", "instanceid", "instancetype"}


class Verbatim(str):
    """Output printed as it is (`kubectl logs`), not as a line."""


class Refused(Exception):
    """The tool's own error message; exit 1."""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # pflag's words, not argparse's usage text
        m = re.search(r"unrecognized arguments: (\S+)", message)
        flag = m.group(1) if m else ""
        if flag.startswith("--"):
            raise Refused(f"error: unknown flag: {flag.split('=')[0]}")
        if flag.startswith("-"):
            raise Refused(f"error: unknown shorthand flag: '{flag[1]}' in {flag}")
        raise Refused(f"error: {message}")


def _state() -> Path:
    return Path(os.environ["SCHED_STANDIN"])


def _known(tool: str, node: str) -> None:
    nodes = _state() / "nodes.json"
    known = json.loads(nodes.read_text()).get(tool) if nodes.exists() else None
    if known is not None and node not in known:
        raise Refused(f'Error from server (NotFound): nodes "{node}" not found' if tool == "kubectl" else
                      f"slurm_update error: Invalid node name specified ({node})")


def _taints() -> dict[str, dict[str, str]]:
    path = _state() / "taints.json"
    return json.loads(path.read_text()) if path.exists() else {}


@cache  # parse_args leaves a parser as it was: one serves every call of a process
def _kubectl_parser() -> _Parser:
    # global flags (kubectl options): before or after the verb
    glob = _Parser(add_help=False)
    glob.add_argument("--request-timeout", default=argparse.SUPPRESS)
    glob.add_argument("-n", "--namespace", default=argparse.SUPPRESS)
    p = _Parser(prog="kubectl", add_help=False, parents=[glob])
    sub = p.add_subparsers(dest="verb", required=True, parser_class=_Parser)
    sub.choices.clear()
    add = sub.add_parser

    def verb(name: str) -> _Parser:
        return add(name, add_help=False, parents=[glob])

    sub.add_parser = verb  # type: ignore[method-assign]
    sub.add_parser("version")
    for verb in ("cordon", "uncordon"):
        sub.add_parser(verb).add_argument("node")
    t = sub.add_parser("taint")
    t.add_argument("kind", choices=["nodes", "node", "no"])
    t.add_argument("node")
    t.add_argument("taints", nargs="+")
    t.add_argument("--overwrite", action="store_true")
    pa = sub.add_parser("patch")
    pa.add_argument("kind")
    pa.add_argument("name")
    pa.add_argument("--type", choices=["json", "merge", "strategic"], default="strategic")
    pa.add_argument("-p", "--patch", required=True)
    ap = sub.add_parser("apply")
    ap.add_argument("-f", "--filename", action="append", required=True)
    ap.add_argument("--server-side", action="store_true")
    ap.add_argument("--force-conflicts", action="store_true")
    ap.add_argument("--dry-run", choices=["none", "client", "server"], default="none")
    g = sub.add_parser("get")
    g.add_argument("kind", nargs="?")
    g.add_argument("name", nargs="?")
    g.add_argument("-o", "--output", choices=["json", "yaml", "name", "wide"])
    g.add_argument("--raw")  # an API path: the runner's reachability probe (`get --raw /readyz`)
    lg = sub.add_parser("logs")
    lg.add_argument("target")
    lg.add_argument("--tail", type=int, default=-1)
    d = sub.add_parser("delete")
    d.add_argument("-f", "--filename", action="append", required=True)
    d.add_argument("--ignore-not-found", action="store_true")
    d.add_argument("--wait", choices=["true", "false"], default="true")
    return p


def _taint(args: argparse.Namespace) -> str:
    _known("kubectl", args.node)
    taints = _taints()
    mine = taints.setdefault(args.node, {})
    for spec in args.taints:
        remove = spec.endswith("-")
        body = spec[:-1] if remove else spec
        key_value, _, effect = body.partition(":")
        key, has_value, value = key_value.partition("=")
        if (effect and effect not in EFFECTS) or (not effect and not remove):
            raise Refused(f'error: invalid taint effect: {effect}, unsupported taint effect')
        if not TAINT_KEY.match(key) or (has_value and not LABEL_VALUE.match(value)) or (remove and has_value):
            raise Refused(f"error: invalid taint spec: {spec}")
        slot = f"{key}:{effect}"
        if remove:
            if slot not in mine:
                raise Refused(f'error: taint "{slot}" not found')
            del mine[slot]
        elif slot in mine and not args.overwrite:
            raise Refused(f"error: node {args.node} already has {key} taint(s) with same effect(s) and "
                          "--overwrite is false")
        else:
            mine[slot] = value
    (_state() / "taints.json").write_text(json.dumps(taints, indent=2, sort_keys=True))
    return f"node/{args.node} {'untainted' if all(s.endswith('-') for s in args.taints) else 'tainted'}"


def _patch(args: argparse.Namespace) -> str:
    try:
        doc = json.loads(args.patch)
    except ValueError as exc:
        raise Refused(f"error: unable to parse \"{args.patch}\": {exc}") from None
    if args.type == "json" and not (isinstance(doc, list) and all(
            isinstance(op, dict) and op.get("op") in ("add", "remove", "replace", "move", "copy", "test")
            and isinstance(op.get("path"), str) for op in doc)):
        raise Refused("error: unable to parse the JSON patch: expected a list of RFC 6902 operations")
    return f"{args.kind}/{args.name} patched"


def _get(args: argparse.Namespace) -> str:
    if args.raw is not None:
        if args.raw != "/readyz" or args.kind is not None:
            raise Refused(f"error: the server could not find the requested resource ({args.raw})")
        return "ok"
    if args.kind is not None and args.kind.split(".")[0] in ("hypernodes", "hypernode"):  # no Volcano here
        raise Refused(f'error: the server doesn\'t have a resource type "{args.kind}"')
    if args.kind is None or args.name is None:
        raise Refused("error: you must specify the type of resource to get")
    path = _state() / "mpijob.json"
    phases = json.loads(path.read_text()) if path.exists() else ["Running", os.environ.get("KUBECTL_STATE",
                                                                                            "Succeeded")]
    seen = _state() / "gets"
    n = int(seen.read_text()) if seen.exists() else 0
    seen.write_text(str(n + 1))
    state = phases[min(n, len(phases) - 1)]
    conds = [{"type": "Running", "status": "True"}]
    if state != "Running":
        conds.append({"type": state, "status": "True", "message": f"MPIJob default/{args.name} is {state.lower()}."})
    return json.dumps({"status": {"conditions": conds}})


def kubectl(argv: list[str]) -> str:
    head = argv[:argv.index("--")] if "--" in argv else argv
    many = next((w for w in head if w.split("=")[0] in SELECTORS), None)
    if head[:1] and head[0] in NODE_VERBS and many:
        raise Refused(f"stand-in refuses {many}: it selects many nodes for the real kubectl")
    args = _kubectl_parser().parse_args(argv)
    if args.verb in NODE_VERBS:
        name = args.name if args.verb == "patch" else args.node
        if "--" not in argv or argv.index(name) < argv.index("--"):
            raise Refused(f"stand-in refuses {args.verb} {name!r} before `--`: a name starting with - would be a "
                          "flag")
    if args.verb in ("cordon", "uncordon"):
        _known("kubectl", args.node)
        return f"node/{args.node} {args.verb}ed"
    if args.verb == "taint":
        return _taint(args)
    if args.verb == "patch":
        return _patch(args)
    if args.verb == "get":
        return _get(args)
    if args.verb == "logs":
        logs = Path(os.environ.get("KUBECTL_LOGS") or _state() / "logs.txt")
        return Verbatim(logs.read_text() if logs.exists() else "")
    if args.verb == "apply":
        dry = " (server dry run)" if args.dry_run == "server" else ""
        return "\n".join(f"applied {f}{dry}" for f in args.filename)
    if args.verb == "delete":
        return ""
    return "Client Version: v1.31.0\nServer Version: v1.31.0"


def scontrol(argv: list[str]) -> str:
    option = next((a for a in argv if a.startswith("-")), None)
    if option is not None:
        raise Refused(f"scontrol: unrecognized option '{option}'")
    if not argv or argv[0].lower() != "update":
        raise Refused(f"scontrol: error: Invalid input: {' '.join(argv[:1])}")
    spec: dict[str, str] = {}
    for word in argv[1:]:
        key, eq, value = word.partition("=")
        if not eq or key.lower() not in SLURM_KEYS:
            raise Refused(f"Update of this parameter is not supported: {word}\nRequest aborted")
        spec[key.lower()] = value
    if "nodename" not in spec:
        raise Refused("No valid entity in update command\nInput line must include \"NodeName\"")
    state = spec.get("state", "").upper()
    if state and state not in SLURM_STATES:
        raise Refused(f"Invalid node state specified: {spec['state']}\nRequest aborted")
    if state in ("DRAIN", "DOWN", "FAIL") and not spec.get("reason"):
        raise Refused("You must specify a reason when DOWNING or DRAINING a node. Request denied")
    node = spec["nodename"]
    if not node or HOSTLIST.search(node):
        raise Refused(f"stand-in refuses NodeName={node!r}: a hostlist (many nodes) for the real scontrol")
    _known("scontrol", node)
    return ""


def answer(tool: str, args: list[str]) -> tuple[int, str, str]:
    """One call of `tool ARGS`, recorded in calls.jsonl: (exit code, stdout, stderr) as the process gives them."""
    refused = None
    try:
        out = {"kubectl": kubectl, "scontrol": scontrol}[tool](args)
    except Refused as exc:
        refused, out = str(exc), ""
    with open(_state() / "calls.jsonl", "a") as log:  # every call, accepted or not
        log.write(json.dumps({"tool": tool, "argv": args, "refused": refused}) + "\n")
    if refused is not None:
        return 1, "", refused + "\n"
    return 0, out if isinstance(out, Verbatim) else out + "\n" if out else "", ""


def main(argv: list[str]) -> int:
    rc, out, err = answer(argv[0], argv[1:])
    sys.stdout.write(out)
    sys.stderr.write(err)
    return rc


def calls(state: Path, tool: str | None = None) -> list[str]:
    """The calls that reached the stand-ins (refused ones too), words joined by one space: `tool arg …`, or with
    `tool` given only that tool's calls, `arg …`."""
    log = state / "calls.jsonl"
    seen = [json.loads(x) for x in log.read_text().splitlines()] if log.exists() else []
    return [" ".join(c["argv"] if tool else [c["tool"], *c["argv"]]) for c in seen if tool in (None, c["tool"])]


def install(bin_dir: Path, state: Path, nodes: dict[str, list[str]] | None = None) -> None:
    """`kubectl` and `scontrol` wrappers in `bin_dir` that run this module with `state` as their state; `nodes`
    (per tool, the node names its cluster knows) goes to nodes.json (None: every name is known)."""
    from tests.standins.common import ROOT

    bin_dir.mkdir(parents=True, exist_ok=True)
    state.mkdir(parents=True, exist_ok=True)
    if nodes is not None:
        (state / "nodes.json").write_text(json.dumps(nodes))
    for tool in ("kubectl", "scontrol"):
        exe = bin_dir / tool
        exe.write_text(f"#!/bin/sh\nSCHED_STANDIN={state} PYTHONPATH={ROOT} exec {sys.executable} "
                       f"-m tests.standins.schedulers {tool} \"$@\"\n")
        exe.chmod(0o755)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
