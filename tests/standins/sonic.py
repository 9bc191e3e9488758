"""Community SONiC stand-in: `config` (Generic Config Updater), `show runningconfiguration all`, `vtysh`,
`sonic-db-cli STATE_DB HGETALL <key>` (prints the hash as a Python dict literal, as sonic-db-cli does; an
absent key prints `{}`), and the traffic-shift commands `TSA`, `TSB`, `TSC` of a single-ASIC switch as
sonic-buildimage dockers/docker-fpm-frr/base_image_files/{TSA,TSB,TSC,TS} and the bgp container's TSC behave
(`traffic_shift`).

State: `running.json` (CONFIG_DB), `state_db.json` (STATE_DB: e.g. xcvrd's `TRANSCEIVER_INFO|Ethernet0`),
`startup.json` (`config save`), `checkpoints/<name>.json`, `sysctl.json` (the kernel's neighbour sysctls: `sysctl`)
and `sysctl.d/` (the device's /etc/sysctl.d: the session's ROCE_FABRIC_SYSCTL_D, read by the tool's job).
`config apply-patch` applies an RFC 6902 JSON Patch all-or-nothing and, like SONiC's Generic Config
Updater, refuses a patch whose result fails YANG validation (when the device directory names a checker
in `yang.json`: ../shared/tools/sonic_yang_check.py, the sonic-yang-mgmt validation `apply-patch` runs;
sonic-net/SONiC doc/config-generic-update-rollback/Json_Patch_Consumption_HLD.md: "the patch is
verified … against YANG models" before any change). `config rollback` restores a checkpoint. Where the device
directory holds its hwsku's `pg_profile_lookup.ini`, buffermgrd answers each change of CONFIG_DB on the traditional
buffer model as it does for every port when swss starts (`buffermgrd`). See the package docstring.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

from tests.standins import telemetry
from tests.standins.common import dev_dir, locked, on_frrcfgd, peers, read_json, tsa_enabled, write_json


def _unescape(tok: str) -> str:
    return tok.replace("~1", "/").replace("~0", "~")


def apply_patch(doc: dict, ops: list[dict]) -> dict:
    """RFC 6902 add/remove/replace on a copy; ValueError on a bad path (nothing applied)."""
    import pickle  # the imports only some commands need are where they are used (tests.standins.common)

    doc = pickle.loads(pickle.dumps(doc, pickle.HIGHEST_PROTOCOL))  # a deep copy of plain data, at C speed
    for op in ops:
        parts = [_unescape(p) for p in op["path"].split("/")[1:]]
        if not parts:
            raise ValueError(f"bad path {op['path']!r}")
        parent: Any = doc
        for p in parts[:-1]:
            if not isinstance(parent, dict) or p not in parent:
                raise ValueError(f"path {op['path']} does not exist")
            parent = parent[p]
        last = parts[-1]
        kind = op["op"]
        if kind == "add":
            parent[last] = op["value"]
        elif kind == "replace":
            if last not in parent:
                raise ValueError(f"path {op['path']} does not exist")
            parent[last] = op["value"]
        elif kind == "remove":
            if last not in parent:
                raise ValueError(f"path {op['path']} does not exist")
            del parent[last]
        else:
            raise ValueError(f"unsupported op {kind!r}")
    return {t: v for t, v in doc.items() if v != {}}  # a table without keys does not exist


def yang_problem(d: Path, config_db: dict) -> str:
    """The first YANG violation of `config_db`, '' when valid or when no checker is configured."""
    import subprocess
    import tempfile

    spec = read_json(d / "yang.json")
    if not spec:
        return ""
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
        json.dump(config_db, f)
    try:
        p = subprocess.run([spec["python"], spec["checker"], "--json", "--no-notes", f.name], capture_output=True,
                           text=True, timeout=300)
    finally:
        Path(f.name).unlink()
    found = [json.loads(ln) for ln in p.stdout.splitlines() if ln.startswith("{")]
    bad = [v for v in found if v.get("kind") == "violation"]
    if p.returncode not in (0, 1):
        return f"YANG checker failed: {p.stderr.strip()[-200:]}"
    return "; ".join(f"{v['table']}|{v['key']}|{v['field']}: {v['msg']}" for v in bad[:3])


def buffermgrd(d: Path, config_db: dict) -> dict:
    """CONFIG_DB after buffermgrd's doSpeedUpdateTask on every port (tests.standins.buffermgrd), with the device's
    `pg_profile_lookup.ini`; without one, as it is."""
    ini = d / "pg_profile_lookup.ini"
    if not ini.exists():
        return config_db
    from tests.standins.buffermgrd import read_lookup, speed_update

    return speed_update(config_db, read_lookup(ini.read_text()))


def config(args: list[str]) -> int:
    with locked() as d:
        cps = d / "checkpoints"
        cps.mkdir(exist_ok=True)
        cmd = args[0] if args else ""
        if cmd == "checkpoint" and len(args) == 2:
            print(f"Config Rollback: Config checkpoint starting.\nCheckpoint name: {args[1]}.")
            _copy_running(d, cps / f"{args[1]}.json")
            print("Checkpoint created successfully.")
            return 0
        if cmd == "apply-patch" and len(args) >= 2:
            dry = "-d" in args or "--dry-run" in args
            print("Patch Applier: localhost: Patch application starting.")
            try:
                ops = json.loads(Path(args[1]).read_text())
                new = apply_patch(read_json(d / "running.json", {}), ops)
            except (OSError, ValueError, KeyError, TypeError) as exc:
                print(f"Error: Failed to apply patch on the following scopes: localhost\n{exc}")
                return 1
            problem = yang_problem(d, new) or ("refused (a fault the test injects: refuse-patch)"
                                               if (d / "refuse-patch").exists() else "")
            if problem:
                print(f"Error: Failed to apply patch on the following scopes: localhost\n"
                      f"Given patch will produce invalid config. Error: {problem}")
                return 1
            if not dry:
                write_running(d, buffermgrd(d, new))
            print("Patch applied successfully.")
            return 0
        if cmd == "rollback" and len(args) == 2:
            cp = cps / f"{args[1]}.json"
            if not cp.exists():
                print(f"Error: Checkpoint '{args[1]}' does not exist.")
                return 1
            print(f"Config Rollback: Config rollback starting.\nCheckpoint name: {args[1]}.")
            write_running(d, buffermgrd(d, read_json(cp)))
            print("Config rolled back successfully.")
            return 0
        if cmd == "list-checkpoints":
            print(json.dumps(sorted(p.stem for p in cps.glob("*.json")), indent=4))
            return 0
        if cmd == "delete-checkpoint" and len(args) == 2:
            (cps / f"{args[1]}.json").unlink(missing_ok=True)
            print("Checkpoint deleted successfully.")
            return 0
        if cmd == "save":
            _copy_running(d, d / "startup.json")
            print("Running command: /usr/local/bin/sonic-cfggen -d --print-data > /etc/sonic/config_db.json")
            return 0
    print(f"Usage: config [OPTIONS] COMMAND [ARGS]...\nError: No such command {' '.join(args)!r}.")
    return 2


# files/image_config/sysctl/90-sonic.conf of sonic-buildimage (shared reference switch-qos.md §1.8)
SONIC_SYSCTL = {f"net.{f}.neigh.default.{k}": v for f in ("ipv4", "ipv6") for k, v in (
    ("base_reachable_time_ms", "1800000"), ("gc_thresh1", "1024"), ("gc_thresh2", "2048"), ("gc_thresh3", "4096"))}


def _kernel(d: Path) -> dict[str, str]:
    """The neighbour sysctls of the stand-in's kernel (`sysctl.json`). An interface CONFIG_DB has (PORT, VLAN,
    PORTCHANNEL) gets its `net.ipv4.neigh.<if>.base_reachable_time_ms` when first seen, from `neigh.default` as
    it is then — the kernel copies the default into an interface it creates."""
    values = read_json(d / "sysctl.json", dict(SONIC_SYSCTL))
    for name in _interfaces(d / "running.json"):
        values.setdefault(f"net.ipv4.neigh.{name}.base_reachable_time_ms",
                          values["net.ipv4.neigh.default.base_reachable_time_ms"])
    return values


_SEEN: dict[str, tuple[tuple[int, int, int], tuple[str, ...]]] = {}  # running.json → (its stat, its interfaces)


def _interfaces(path: Path) -> tuple[str, ...]:
    """The PORT, VLAN and PORTCHANNEL names of a CONFIG_DB file, read again only when the file was replaced or
    changed (a serving process answers every `sysctl` of a device from one read)."""
    try:
        st = path.stat()
    except FileNotFoundError:
        return ()
    key = (st.st_ino, st.st_mtime_ns, st.st_size)
    if (seen := _SEEN.get(str(path))) is not None and seen[0] == key:
        return seen[1]
    running = json.loads(path.read_text())
    names = tuple(name for table in ("PORT", "VLAN", "PORTCHANNEL") for name in running.get(table, {}))
    _SEEN[str(path)] = (key, names)
    return names


def sysctl_printed(asked: str) -> str:
    """procps's slashdot(): the first separator decides; a key asked with `/` first is printed with `.` (and a `.`
    inside a name as `/`), as procps 4.0.2 prints `net/ipv4/conf/dum0.5/rp_filter` (checked on this machine)."""
    return asked if _dotted(asked) else asked.translate(_SWAP)


def _proc_path(asked: str) -> str:
    """The /proc/sys path procps stats for a key: a key asked with `.` first has its separators swapped."""
    return f"/proc/sys/{asked.translate(_SWAP) if _dotted(asked) else asked}"


def _dotted(asked: str) -> bool:
    return next((c for c in asked if c in "./"), ".") == "."


_SWAP = str.maketrans("./", "/.")


def sysctl(args: list[str]) -> int:
    """procps `sysctl` (4.0): `KEY…` prints `key = value` lines (`-n`: the values; a key asked with `/` separators
    printed with `.`; each key the kernel lacks an error and exit 1, none with `-e`); `-p FILE` loads `key = value`
    lines (`-e`: a key the kernel lacks is skipped, else an error and exit 255 after the others are set);
    `-w KEY=VALUE`; `-q` quiet."""
    with locked() as d:
        values = _kernel(d)
        flags = {a for a in args if a.startswith("-") and a not in ("-p", "-w")}
        rest = [a for a in args if a not in flags]
        pairs: list[tuple[str, str]] = []
        if rest[:1] == ["-p"] and len(rest) == 2:
            pairs = [(k.strip(), v.strip()) for ln in Path(rest[1]).read_text().splitlines()
                     if (k := ln.partition("=")[0]) and "=" in ln and not ln.lstrip().startswith(("#", ";"))
                     for v in [ln.partition("=")[2]]]
        elif rest[:1] == ["-w"]:
            pairs = [(a.partition("=")[0], a.partition("=")[2]) for a in rest[1:]]
        rc = 0
        for key, value in pairs:
            if key not in values:
                if "-e" not in flags:
                    print(f"sysctl: cannot stat {_proc_path(key)}: No such file or directory", file=sys.stderr)
                    rc = 255
                continue
            values[key] = value
            if "-q" not in flags:
                print(f"{key} = {value}")
        if pairs:
            write_json(d / "sysctl.json", values)
            return rc
        for asked in rest:  # every key; one the kernel lacks is an error (not with -e) and exit 1
            key = sysctl_printed(asked)
            if key not in values:
                if "-e" not in flags:
                    print(f"sysctl: cannot stat {_proc_path(asked)}: No such file or directory", file=sys.stderr)
                    rc = 1
                continue
            print(values[key] if "-n" in flags else f"{key} = {values[key]}")
        if values != read_json(d / "sysctl.json"):  # interfaces seen for the first time
            write_json(d / "sysctl.json", values)
        return rc


TSA_SAVE = "Please execute 'sudo config save' to preserve System mode in {} after reboot or config reload"


def traffic_shift(prog: str, args: list[str], d: Path) -> int:
    """`TSA`/`TSB`: /usr/bin/TS reads CONFIG_DB BGP_DEVICE_GLOBAL|STATE `tsa_enabled`; already the asked state: `System
    is already in Maintenance` (TSB: `… in Normal mode`), else it writes it (`sonic-cfggen -a … -w`) and prints
    `System Mode: Normal -> Maintenance` (`Maintenance -> Normal`); then the reminder to `config save`.
    `TSC [no-stats]`: the bgp container's TSC over the route maps bgpcfgd installed: no outbound V4/V6 route map of a
    BGP neighbour (here: BGP_NEIGHBOR empty; bgpcfgd's peer templates give every neighbour one) → `System Mode: No
    external neighbors`; else `Maintenance` while bgpcfgd holds the TSA isolation (tsa_enabled true), `Normal`
    otherwise. Its `portstat -p 5` (without no-stats) is not modelled. A switch on frrcfgd has no bgpcfgd to apply
    the isolation: TSC there reports what bgpcfgd would have left, `Normal`."""
    with locked(d):
        running = read_json(d / "running.json", {})
        tsa = tsa_enabled(running)
        if prog == "TSC":
            mode = ("No external neighbors" if not running.get("BGP_NEIGHBOR")
                    else "Maintenance" if tsa and not on_frrcfgd(running) else "Normal")
            print(f"System Mode: {mode}")
            return 0
        away = prog == "TSA"
        if tsa == away:
            print("System is already in Maintenance" if away else "System is already in Normal mode")
        else:
            running.setdefault("BGP_DEVICE_GLOBAL", {}).setdefault("STATE", {})["tsa_enabled"] = str(away).lower()
            write_running(d, running)
            print("System Mode: Normal -> Maintenance" if away else "System Mode: Maintenance -> Normal")
        print(TSA_SAVE.format("Maintenance" if away else "Normal state"))
        return 0


def bgp_summary(d: Path) -> dict:
    running = read_json(d / "running.json", {})
    asn = int(running.get("BGP_GLOBALS", {}).get("default", {}).get("local_asn", 0) or 0)
    expect = peers(d)
    out: dict[str, dict] = {}
    for key, nbr in running.get("BGP_NEIGHBOR", {}).items():
        name = key.rpartition("|")[2]  # frrcfgd's `vrf|neighbour`, bgpcfgd's bare address
        # peers.json: the local ASN the peer expects, or [that, the peer's own AS] (our `asn` must match it)
        want = expect.get(name)
        local, own = want if isinstance(want, list) else (want, None)
        up = local == asn and (own is None or str(own) == str(nbr.get("asn")))
        out[name] = {"state": "Established" if up else "Active", "peerState": "OK" if up else "Policy"}
    return {"ipv4Unicast": {"as": asn, "peers": out, "totalPeers": len(out)}}


def show_running(d: Path) -> int:
    """`show runningconfiguration all`: CONFIG_DB as SONiC prints it. The answer is kept in answers/ with the
    modification time of the running.json it was read from, and the shim gives it again while running.json is
    that same file (device.SHOW_CACHED): a push reads it several times between changes."""
    sys.stdout.write(running_answer(d))
    return 0


def running_answer(d: Path) -> str:
    """What `show runningconfiguration all` prints, kept in answers/ for the shim (show_running)."""
    path = d / "running.json"
    try:
        stamp = path.stat().st_mtime_ns  # before the read: a running.json replaced since has another time
    except FileNotFoundError:
        return "{}\n"
    answer = json.dumps(json.loads(path.read_text()), indent=4, sort_keys=True) + "\n"
    _keep_answer(d, answer, stamp)
    return answer


def write_running(d: Path, config_db: dict) -> None:
    """A new CONFIG_DB: running.json written as `show runningconfiguration all` prints it, and kept as that answer
    (one encoding for both)."""
    answer = json.dumps(config_db, indent=4, sort_keys=True) + "\n"
    tmp = d / f".running.json.{os.getpid()}"
    tmp.write_text(answer)
    tmp.replace(d / "running.json")
    _keep_answer(d, answer, (d / "running.json").stat().st_mtime_ns)


def _keep_answer(d: Path, answer: str, stamp: int) -> None:
    (d / "answers").mkdir(exist_ok=True)
    tmp = d / "answers" / f".running.{os.getpid()}"
    tmp.write_text(answer)
    os.utime(tmp, ns=(stamp, stamp))
    tmp.replace(d / "answers" / "running")


def _copy_running(d: Path, to: Path) -> None:
    """CONFIG_DB as it is into a checkpoint or the startup config (the file's bytes: no parse, no encoding)."""
    import shutil

    if (d / "running.json").exists():
        shutil.copyfile(d / "running.json", to)
    else:
        to.write_text("{}")


def main(argv: list[str]) -> int:
    prog, args = Path(argv[0]).name, argv[1:]
    d = dev_dir()
    if prog == "config":
        return config(args)
    if prog == "sysctl":
        return sysctl(args)
    if prog in ("TSA", "TSB", "TSC"):
        return traffic_shift(prog, args, d)
    if prog == "show" and args[:2] == ["runningconfiguration", "all"]:
        return show_running(d)
    if prog == "vtysh" and args[:1] == ["-c"] and args[1] == "show bgp summary json":
        if (d / "bgpd-restarting").exists():  # a fault the tests inject: bgpd answers before it is ready
            print("% BGP instance not found, bgpd is starting")
            return 0
        print(json.dumps(bgp_summary(d), indent=2))
        return 0
    if prog == "sonic-db-cli" and len(args) == 3 and args[:2] == ["STATE_DB", "HGETALL"]:
        print(read_json(d / "state_db.json", {}).get(args[2], {}))
        return 0
    command = args[1] if prog == "vtysh" and args[:1] == ["-c"] and len(args) > 1 else " ".join([prog, *args])
    if (answer := telemetry.answer_sonic(command, d)) is not None:
        print(answer)
        return 0
    print(f"{prog}: unsupported in the SONiC stand-in: {' '.join(args)}", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
