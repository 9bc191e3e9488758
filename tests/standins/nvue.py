"""Cumulus Linux NVUE stand-in: `nv config patch|diff|apply|detach|revision|history|show`, `nv show`.

Output shapes as NVIDIA documents them (tests/fixtures/nvue/outputs/SOURCE.md lists the pages):
`nv config show -o yaml|json` is a list of a `header` and a `set` document (NVUE CLI page, "Show Switch
Configuration", docs.nvidia.com/networking-ethernet-software/cumulus-linux-515/System-Configuration/
NVIDIA-User-Experience-NVUE/NVUE-CLI/); `nv config diff` a YAML list of `- set:` / `- unset:` documents
with unset leaves valueless (same page, "View Differences Between Configurations"); `nv config revision
-o json` the REST revision object `{"<rev>": {"state": "applied_and_saved"|"pending"|…, "transition":
…}}` (NVUE API page); `nv config history` a table of revision, date and time, user and type (Config
Commands reference, docs.nvidia.com/networking-ethernet-software/nvue-reference/Config-Commands/).

State: `revisions/<n>.json` (config trees) and `meta.json` (`applied`, `pending`, `confirm`,
`next`). `nv config apply --confirm T` applies and arms a timer (T minutes, or `Ns` seconds):
unless `nv config apply --confirm-yes` comes first, the previous revision is applied again
(`--confirm-no` does that at once; `--confirm-status` shows the time left). See the package docstring.
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path
from typing import Any

from tests.standins import telemetry
from tests.standins.common import dev_dir, locked, peers, read_json, spawn, write_json


def merge(dst: dict, src: dict) -> None:
    import copy  # the imports only some commands need are where they are used (tests.standins.common)

    for k, v in src.items():
        if isinstance(v, dict) and isinstance(dst.get(k), dict):
            merge(dst[k], v)
        else:
            dst[k] = copy.deepcopy(v)


def unset(dst: dict, spec: dict) -> None:
    for k, v in spec.items():
        if k not in dst:
            continue
        if isinstance(v, dict) and v and isinstance(dst[k], dict):
            unset(dst[k], v)
        else:
            del dst[k]


def flat(tree: Any, prefix: str = "") -> dict[str, Any]:
    if not isinstance(tree, dict) or not tree:
        return {prefix: tree}
    out: dict[str, Any] = {}
    for k, v in tree.items():
        out.update(flat(v, f"{prefix} {k}".strip()))
    return out


class Store:
    def __init__(self, d: Path):
        self.d = d
        (d / "revisions").mkdir(exist_ok=True)
        self.meta = read_json(d / "meta.json", {"applied": 0, "pending": None, "confirm": None, "next": 1,
                                                 "history": []})

    def tree(self, rev: int | str | None) -> dict:
        if rev in (None, "applied"):
            rev = self.meta["applied"]
        if rev == "pending":
            rev = self.meta["pending"] or self.meta["applied"]
        if rev == "empty":
            return {}
        return read_json(self.d / "revisions" / f"{int(rev)}.json", {})

    def put(self, rev: int, tree: dict) -> None:
        write_json(self.d / "revisions" / f"{rev}.json", tree)

    def save(self) -> None:
        write_json(self.d / "meta.json", self.meta)

    def apply(self, rev: int, how: str) -> None:
        self.meta["history"].append({"rev": rev, "previous": self.meta["applied"], "how": how, "time": time.time()})
        self.meta["applied"] = rev
        # NVUE applies `system hostname` to the kernel at once; bash's `\h` prompt (Cumulus's default PS1
        # `\u@\h:\w\$`) shows it from the next command on: device.py's PS1 reads this file
        name = (self.tree(rev).get("system") or {}).get("hostname")
        (self.d / "hostname").write_text(str(name) if name else self.d.name)


HEADER = {"model": "SN5600", "nvue-api-version": "nvue_v1", "rev-id": 1.0, "version": "Cumulus Linux 5.15.0"}


def _nest(path: list[str], value: Any) -> dict:
    out: Any = value
    for p in reversed(path):
        out = {p: out}
    return out


def _diff_docs(old: dict, new: dict) -> list[dict]:
    """`nv config diff`: `- set:` (leaves new or changed) and `- unset:` (leaves gone, no value)."""
    a, b = flat(old), flat(new)
    sets: dict = {}
    unsets: dict = {}
    for path in sorted(set(a) - set(b)):
        merge(unsets, _nest(path.split(" "), None))
    for path in sorted(b):
        if a.get(path, object()) != b[path]:
            merge(sets, _nest(path.split(" "), b[path]))
    return ([{"set": sets}] if sets else []) + ([{"unset": unsets}] if unsets else [])


def nv_config(args: list[str]) -> int:
    import yaml  # here, not at the top: `nv show` runs once per port and counter read, and needs none

    with locked() as d:
        s = Store(d)
        cmd, rest = (args[0], args[1:]) if args else ("", [])
        if cmd == "patch" and rest:
            if not rest[0].startswith("/"):
                print("Error: a fully qualified path to the patch file is required")
                return 1
            try:
                ops = yaml.safe_load(Path(rest[0]).read_text()) or []
            except (OSError, yaml.YAMLError) as exc:
                print(f"Error: {exc}")
                return 1
            if s.meta["pending"] is None:
                s.meta["pending"] = s.meta["next"]
                s.meta["next"] += 1
                s.put(s.meta["pending"], s.tree("applied"))
            tree = s.tree("pending")
            for op in ops:
                if "set" in op:
                    merge(tree, op["set"] or {})
                if "unset" in op:
                    unset(tree, op["unset"] or {})
            s.put(s.meta["pending"], tree)
            s.save()
            return 0
        if cmd == "diff":
            revs = [r for r in rest if not r.startswith("-") and r not in ("json", "commands")]
            old, new = (s.tree(revs[0]), s.tree(revs[1])) if len(revs) == 2 else (s.tree("applied"),
                                                                                 s.tree("pending"))
            docs = _diff_docs(old, new)
            if docs:
                print(json.dumps(docs, indent=2) if "json" in rest else yaml.safe_dump(docs, sort_keys=True).rstrip())
            return 0
        if cmd == "detach":
            s.meta["pending"] = None
            s.save()
            return 0
        if cmd == "show":
            rev = next((r for r in rest if not r.startswith("-") and r not in ("json", "yaml")), None)
            doc = [{"header": HEADER}, {"set": s.tree(rev)}]
            print(json.dumps(doc, indent=2, sort_keys=True) if "json" in rest else yaml.safe_dump(doc).rstrip())
            return 0
        if cmd == "revision":
            tr = {"issue": {}, "progress": ""}
            revs = {str(p.stem): {"state": "inactive", "transition": tr} for p in (d / "revisions").glob("*.json")}
            revs[str(s.meta["applied"])] = {"state": "applied_and_saved", "transition": tr}
            if s.meta["pending"] is not None:
                revs[str(s.meta["pending"])] = {"state": "pending", "transition": tr}
            if s.meta["confirm"]:
                revs[str(s.meta["confirm"]["rev"])] = {"state": "confirm", "transition": tr}
            print(json.dumps(revs, indent=2))
            return 0
        if cmd == "history":
            print(f"{'Rev ID':<8}{'Date and Time':<22}{'User':<10}{'Type':<10}How\n{'-' * 6:<8}{'-' * 19:<22}"
                  f"{'-' * 8:<10}{'-' * 8:<10}---")
            for h in s.meta["history"]:
                when = time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(h["time"]))
                print(f"{h['rev']:<8}{when:<22}{'root':<10}{'CLI':<10}{h['how']}")
            return 0
        if cmd == "apply":
            return _apply(s, rest)
    print(f"Error: unknown command: nv config {' '.join(args)}")
    return 2


def _seconds(spec: str) -> int:
    return int(spec[:-1]) if spec.endswith("s") else int(spec) * 60


def _apply(s: Store, rest: list[str]) -> int:
    conf = s.meta["confirm"]
    if "--confirm-status" in rest:
        print(f"{max(0, int(conf['deadline'] - time.time()))}s left" if conf else "no confirm pending")
        return 0
    if "--confirm-yes" in rest:
        if not conf:
            print("Error: nothing to confirm")
            return 1
        s.meta["confirm"] = None
        s.save()
        print(f"confirmed [rev_id: {conf['rev']}]")
        return 0
    if "--confirm-no" in rest:
        if not conf:
            print("Error: nothing to confirm")
            return 1
        s.apply(conf["previous"], "confirm-no")
        s.meta["confirm"] = None
        s.save()
        print(f"rolled back [rev_id: {conf['previous']}]")
        return 0
    if conf:
        print(f"Error: revision {conf['rev']} is waiting for confirmation")
        return 1
    pos = [r for i, r in enumerate(rest) if not r.startswith("-") and (i == 0 or rest[i - 1] != "--confirm")]
    if pos:
        rev = int(pos[0])
        if not (s.d / "revisions" / f"{rev}.json").exists():
            print(f"Error: revision {rev} does not exist")
            return 1
    elif s.meta["pending"] is None:
        print("Error: no pending configuration to apply")
        return 1
    else:
        rev = s.meta["pending"]
        s.meta["pending"] = None
    if not ({"-y", "--y", "--assume-yes"} & set(rest)):
        print("Are you sure? [y/N] (use -y)")
        return 1
    previous = s.meta["applied"]
    s.apply(rev, "apply")
    if "--confirm" in rest:
        secs = _seconds(rest[rest.index("--confirm") + 1])
        s.meta["confirm"] = {"rev": rev, "previous": previous, "deadline": time.time() + secs}
        spawn("tests.standins.nvue", "--expire", str(s.d), str(rev), str(secs))
        print(f"applied [rev_id: {rev}]\nAuto-rollback in {secs}s unless confirmed (nv config apply --confirm-yes)")
    else:
        print(f"applied [rev_id: {rev}]")
    s.save()
    return 0


def expire(d: Path, rev: int, secs: int) -> None:
    """The confirm timer: revert to the previous revision unless confirmed in time."""
    time.sleep(secs)
    with locked(d):
        s = Store(d)
        conf = s.meta["confirm"]
        if conf and conf["rev"] == rev:
            s.apply(conf["previous"], "auto-rollback")
            s.meta["confirm"] = None
            s.save()


def nv_show(args: list[str]) -> int:
    d = dev_dir()
    if (answer := telemetry.answer_nvue(args, d)) is not None:
        print(answer)
        if len(args) == 6 and args[4:] == ["-o", "json"] and args[1].replace("_", "").replace("-", "").replace(
                ".", "").isalnum():  # the shim gives it again while telemetry.json is older (device.NV_CACHED)
            (d / "answers").mkdir(exist_ok=True)
            tmp = d / "answers" / f".{args[1]}.{os.getpid()}"
            tmp.write_text(answer + "\n")
            tmp.replace(d / "answers" / f"{args[1]}.{args[2]}.{args[3]}")
        return 0
    s = Store(d)
    tree = s.tree("applied")
    path = [a for a in args if not a.startswith("-") and a != "json"]
    if path[:5] == ["vrf", "default", "router", "bgp", "neighbor"]:
        asn = tree.get("router", {}).get("bgp", {}).get("autonomous-system")
        expect = peers(d)
        nbrs = tree.get("vrf", {}).get("default", {}).get("router", {}).get("bgp", {}).get("neighbor", {})
        print(json.dumps({n: {"state": "established" if expect.get(n) == asn else "idle"} for n in nbrs}, indent=2))
        return 0
    node: Any = tree
    for p in path:
        node = node.get(p, {}) if isinstance(node, dict) else {}
    print(json.dumps(node, indent=2))
    return 0


def main(argv: list[str]) -> int:
    if argv[:1] == ["--expire"]:
        expire(Path(argv[1]), int(argv[2]), int(argv[3]))
        return 0
    args = argv[1:]
    if args[:1] == ["config"]:
        return nv_config(args[1:])
    if args[:1] == ["show"]:
        return nv_show(args[1:])
    print(f"Error: unknown command: nv {' '.join(args)}")
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
