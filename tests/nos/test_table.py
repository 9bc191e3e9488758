"""The contract every NOS of the table keeps, generated from the table (one test per row): its folder has the
three modules the row's name finds, it renders the row's files for a fabric retargeted to it, `lint --configs`
picks its parser for its own file and that parser reads the render back. A NOS added as one folder and one
row is picked up: `test_readme_worked_example_is_picked_up` builds the docs' worked example ("Adding a NOS")
from the page's own text in a scratch folder, adds its row, and runs these tests on it;
`test_readme_worked_example_through_the_commands` runs the `fabric` command on an inventory of it, and
`test_readme_worked_example_drains_a_real_frr_switch` drains one of its switches, a real FRR over SSH."""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from fabric.design.derive import derive
from fabric.design.intent import FabricIntent
from fabric.lab.daemons import SSHD_KEX, sshd_setenv
from fabric.lint.configs import kind_of
from fabric.model.load import load
from fabric.nos import NOS, row_of
from fabric.targets import driver, driver_class
from tests.conftest import require
from tests.push.test_drain import _nvue_running as nvue_running
from tests.push.test_drain import _sonic_running as sonic_running
from tests.support import docs
from tests.support.nos import retarget
from tests.support.paths import ROOT

PLATFORM = {"sonic": "sn5600", "nvue": "sn5600", "eos": "7060x6"}  # where each NOS runs; others a Linux white-box


def retargeted(target: str, tmp: Path) -> FabricIntent:
    """inventories/example with every role on `target` (and a platform it runs on; a policy it renders)."""
    inv = retarget("example", target, tmp / f"example-{target}", platform=PLATFORM.get(target, "linux-frr"))
    if not NOS[target].renders_qos:  # a lossless policy is refused there: the example's without lossless priorities
        (inv / "qos.yaml").write_text("qos:\n  preset: nvidia-roce\n  lossless_priorities: []\n")
    return derive(load(inv))


@pytest.mark.parametrize("name", sorted(NOS))
def test_folder_has_what_the_row_finds(name: str) -> None:
    row = NOS[name]
    render, configs, driver = (row.module(part) for part in ("render", "configs", "driver"))
    assert callable(render.render) and callable(configs.parse)
    assert driver.DRIVER.target == name and all(row_of(m.__name__) is row for m in (render, configs, driver))
    assert row.intended in row.files and row.releases
    ports = [row.port_name(1, 8, i) for i in range(64)]
    assert len(set(ports)) == 64, ports


@pytest.mark.parametrize("name", sorted(NOS))
def test_renders_its_files_and_reads_them_back(name: str, tmp_path: Path) -> None:
    row = NOS[name]
    fabric = retargeted(name, tmp_path)
    for sw in fabric.switches.values():
        files = row.module("render").render(sw, fabric)
        assert set(row.files) <= set(files), (sw.name, sorted(files))
        saved = tmp_path / "configs" / f"{sw.name}{row.running_suffix}"
        assert kind_of(tmp_path / sw.name / row.intended, name) == name and kind_of(saved, name) == name
        saved.parent.mkdir(exist_ok=True)
        saved.write_text(files[row.intended])
        dev = row.module("configs").parse(saved, sw.name, files[row.intended])
        assert (dev.kind, dev.name, dev.asn) == (name, sw.name, sw.bgp.asn), (dev.kind, dev.name, dev.asn)


@pytest.mark.parametrize("name", sorted(NOS))
def test_its_driver_drains_and_undrains(name: str, tmp_path: Path) -> None:
    """What `fabric drain` applies (its driver's `drained` intent), planned against a switch at its intent, adds
    one setting; the undrain's plan on the drained switch removes just that, as rendered by an earlier apply."""
    row, fabric = NOS[name], retargeted(name, tmp_path)
    sw = fabric.switches["spine1"]
    intended = row.module("render").render(sw, fabric)[row.intended]
    drained = driver_class(name).drained(intended, sw.release)
    as_running = {"config_db": sonic_running, "nvue": nvue_running}.get(row.running_shape, str)
    drain = driver(name, None, sw.name, drained).scoped(as_running(intended))
    assert [c.op for c in drain.changes] == ["+"], [c.text() for c in drain.changes]
    manifest = sorted(list(p) for p in driver(name, None, sw.name, drained).scoped(as_running(intended)).sets)
    undrain = driver(name, None, sw.name, intended, options={"manifest": manifest}).scoped(as_running(drained))
    assert [(c.op, c.earlier, c.foreign) for c in undrain.changes] == [("-", True, False)], undrain.changes
    assert undrain.changes[0].text().startswith(drain.changes[0].text().replace("+ ", "- ", 1))


# -- the docs' worked example -- ------------------------------------------------------------------------

def worked_example() -> dict[str, str]:
    """The docs' worked example: {path: code} of each block under "Worked example" in "Adding a NOS", its
    first line a comment naming the file (the row's block names fabric/nos/__init__.py)."""
    example = docs.page("adding-a-nos.md").split("## Worked example", 1)[1]
    blocks = re.findall(r"```python\n(.*?)```", example, re.S)
    out = {}
    for block in blocks:
        head, _, body = block.partition("\n")
        out[head.removeprefix("# ").split(" ", 1)[0].rstrip(":,")] = body
    return out


# Loaded by `pytest -p` before any test module imports the project: the folder of the example becomes a folder of
# fabric/nos (from a scratch directory) and its row joins the table, as the two edits the docs show would.
PLUGIN = '''
import pathlib, fabric.nos as nos
nos.__path__.append({folder!r})
row = eval(pathlib.Path({row!r}).read_text().strip().rstrip(","), vars(nos))
nos.NOS[row.name] = row
'''


def build_example(tmp: Path) -> tuple[str, dict[str, str]]:
    """The docs' worked example built in `tmp` as its text says: (its NOS name, the environment whose Python loads
    it, the `worked_example` module, before the project: `pytest -p worked_example`, `python fabric_cli.py ARGS`)."""
    files = worked_example()
    row = files.pop("fabric/nos/__init__.py")
    name = re.search(r'name="(\w+)"', row)[1]  # type: ignore[index]
    assert name not in NOS and set(files) == {f"fabric/nos/{name}/{m}.py" for m in ("__init__", "render", "configs",
                                                                                  "driver")}, sorted(files)
    for path, code in files.items():
        dst = tmp / "nosdir" / path.removeprefix("fabric/nos/")
        dst.parent.mkdir(parents=True, exist_ok=True)
        dst.write_text(code)
    (tmp / "row.py").write_text(row)
    (tmp / "worked_example.py").write_text(PLUGIN.format(folder=str(tmp / "nosdir"), row=str(tmp / "row.py")))
    (tmp / "fabric_cli.py").write_text("import sys\n\nimport worked_example  # noqa: F401\nfrom fabric.cli import main"
                                       "\n\nsys.exit(main())\n")
    return name, {**os.environ, "PYTHONPATH": f"{tmp}{os.pathsep}{os.environ.get('PYTHONPATH', '')}",
                  "FABRIC_STATE": str(tmp / "state")}


def test_readme_worked_example_is_picked_up(tmp_path: Path) -> None:
    name, env = build_example(tmp_path)
    p = subprocess.run([sys.executable, "-m", "pytest", "-p", "worked_example", "-q", "-p", "no:cacheprovider",
                        __file__, "-k", f"[{name}]", "-o", "addopts="],
                       capture_output=True, text=True, cwd=ROOT, env=env, timeout=300)
    assert p.returncode == 0 and "3 passed" in p.stdout, p.stdout[-3000:] + p.stderr[-2000:]


CANARY = "Wbox-S3cret-5e21"


def test_readme_worked_example_through_the_commands(tmp_path: Path) -> None:
    """The docs' example as a user runs it: an inventory whose leaves are the new NOS goes through `validate`,
    `lint`, `render`, `lint --configs`, `plan --running` and `export -f prometheus` (the `fabric` entry point in a
    fresh Python that loads the example first; promtool runs the export's rule tests). A lossless policy on a NOS
    that renders no QoS is refused, with the same located error by each command; without one, each command reads,
    renders and diffs the new NOS through its row and folder, its secrets masked."""
    name, env = build_example(tmp_path)
    row_text = (tmp_path / "row.py").read_text()
    files = re.search(r"files=\(([^)]*)\)", row_text)[1]  # type: ignore[index]

    def fabric(*args: str | Path) -> subprocess.CompletedProcess[str]:
        p = subprocess.run([sys.executable, str(tmp_path / "fabric_cli.py"), *map(str, args)], capture_output=True,
                           text=True, cwd=tmp_path, env=env, timeout=180)
        assert "Traceback" not in p.stderr, p.stderr[-3000:]
        return p

    inv = tmp_path / "inv"
    shutil.copytree(ROOT / "inventories" / "example", inv)
    text = (inv / "fabric.yaml").read_text()
    (inv / "fabric.yaml").write_text(text.replace("leaf: {platform: linux-frr, target: frr}",
                                                  f"leaf: {{platform: linux-frr, target: {name}}}"))
    line = next(n for n, ln in enumerate((inv / "fabric.yaml").read_text().splitlines(), 1) if f"target: {name}" in ln)
    refused = (f"fabric.yaml:{line}: roles.leaf.target: expected a NOS that renders the lossless QoS policy (PFC on "
               f"priority 3): sonic, nvue, eos, frr, found {name}: ")
    saved = tmp_path / "saved"
    saved.mkdir()
    for args in (["validate", inv], ["lint", inv], ["render", inv, "-o", tmp_path / "refused"],
                 ["plan", inv, "--running", saved]):
        p = fabric(*args)
        assert p.returncode == 2 and refused in p.stderr, (args, p.stdout[-2000:], p.stderr[-2000:])

    (inv / "qos.yaml").write_text("qos:\n  preset: nvidia-roce\n  lossless_priorities: []\n")
    assert fabric("validate", inv).returncode == 0
    out = tmp_path / "out"
    assert fabric("render", inv, "-o", out).returncode == 0
    leaf, other = out / "switches" / "leaf-su1-r1", out / "switches" / "leaf-su1-r2"
    assert sorted(f.name for f in leaf.iterdir()) == sorted(re.findall(r'"([^"]+)"', files))
    rendered = (leaf / "frr.conf").read_text()

    # lint --configs: the new NOS's saved config read by its parser (its ASN compared with the inventory's)
    (saved / "leaf-su1-r1.conf").write_text(rendered)
    (saved / "leaf-su1-r2.conf").write_text(re.sub(r"(?m)^router bgp \d+", "router bgp 65199",
                                                   (other / "frr.conf").read_text()))
    p = fabric("lint", inv, "--configs", saved, "--format", "json")
    found = [(f["rule"], f["object"], f["message"]) for f in json.loads(p.stdout)["findings"]
             if str(saved) in (f["file"] or "") or "saved/" in (f["file"] or "")]
    assert found == [("RF307", "leaf-su1-r2", "ASN: expected 65102 (the inventory's plan), found 65199")], found

    # plan --running: diffed by its driver, a secret the switch holds masked
    (saved / "leaf-su1-r2.conf").unlink()
    neighbor = re.search(r"(?m)^ neighbor (\S+) remote-as", rendered)[1]  # type: ignore[index]
    (saved / "leaf-su1-r1.conf").write_text(rendered.replace(f" neighbor {neighbor} remote-as",
                                                             f" neighbor {neighbor} password {CANARY}\n"
                                                             f" neighbor {neighbor} remote-as", 1))
    p = fabric("plan", inv, "--running", saved, "--limit", "leaf-su1-r1", "--format", "json")
    plan = json.loads(p.stdout)
    dev = plan["devices"][0]
    assert (dev["target"], dev["status"], dev["removed"], plan["masked_lines"]) == (name, "changed", 1, 1), dev
    assert CANARY not in p.stdout + p.stderr

    # export -f prometheus: its switches named where no exporter is known, the hosts' alerts still written
    p = fabric("export", inv, "-f", "prometheus", "-o", tmp_path / "prom")
    assert p.returncode == 0, p.stderr
    assert f"no exporter is known for this NOS (no fabric/nos/{name}/telemetry.yaml)" in p.stderr, p.stderr
    assert "leaf-su1-r1" in p.stderr and (tmp_path / "prom" / "example.rules.yml").is_file()
    promtool = shutil.which("promtool")
    require(promtool is not None, "promtool (Debian package prometheus)")
    check = subprocess.run([str(promtool), "test", "rules", "example.rules.test.yml"], cwd=tmp_path / "prom",
                           capture_output=True, text=True, timeout=120)
    assert check.returncode == 0, check.stdout[-3000:] + check.stderr[-2000:]


# A switch of the new NOS for `fabric drain`: real FRR (zebra, bgpd, staticd) and OpenSSH in a network namespace of
# this test, its /etc/frr, /var/run/frr and /var/tmp bind-mounted from the test's folder in a mount namespace of its
# own (the FRR driver reads and writes the default paths, as on a switch; nothing of this machine's is touched).
SWITCH = """set -e
mount --bind {d}/etc /etc/frr
mount --bind {d}/run /var/run/frr
mount --bind {d}/tmp /var/tmp
for daemon in zebra bgpd staticd; do
  /usr/lib/frr/$daemon -d -A 127.0.0.1 -P 0 -f /etc/frr/empty.conf --log file:{d}/$daemon.log
done
vtysh -b
exec /usr/sbin/sshd -D -f {d}/sshd_config -E {d}/sshd.log
"""


@contextlib.contextmanager
def real_frr(d: Path, address: str, frr_conf: str) -> Iterator[str]:
    """A switch at `address` running `frr_conf` (see SWITCH); yields its namespace's name, then removes it."""
    for sub in ("etc", "run", "tmp"):
        (d / sub).mkdir(parents=True)
    (d / "etc" / "frr.conf").write_text(frr_conf)
    for name in ("vtysh.conf", "empty.conf"):
        (d / "etc" / name).write_text("")
    for path in (d / "etc", d / "run", *(d / "etc").iterdir()):
        shutil.chown(path, "frr", "frr")
    (d / "tmp").chmod(0o1777)
    for key in ("id_ed25519", "host_ed25519"):
        subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(d / key)], check=True)
    (d / "authorized_keys").write_text((d / "id_ed25519.pub").read_text())
    host = (d / "host_ed25519.pub").read_text().split()
    (d / "known_hosts").write_text(f"{address} {host[0]} {host[1]}\n")
    (d / "sshd_config").write_text("\n".join([
        f"ListenAddress {address}", f"HostKey {d / 'host_ed25519'}", f"PidFile {d / 'sshd.pid'}",
        f"AuthorizedKeysFile {d / 'authorized_keys'}", "PermitRootLogin prohibit-password",
        "PasswordAuthentication no", "KbdInteractiveAuthentication no", "UsePAM no", "StrictModes no", "UseDNS no",
        "LogLevel ERROR", SSHD_KEX, sshd_setenv(d), ""]))
    (d / "switch.sh").write_text(SWITCH.format(d=d))
    ns = f"rfwb{os.getpid() % 100000}"
    subprocess.run(["ip", "netns", "add", ns], check=True)
    try:
        subprocess.run(["ip", "-n", ns, "link", "set", "lo", "up"], check=True)
        subprocess.run(["ip", "-n", ns, "addr", "add", f"{address}/32", "dev", "lo"], check=True)
        Path("/run/sshd").mkdir(mode=0o755, exist_ok=True)
        with (d / "switch.log").open("w") as log:
            subprocess.Popen(["ip", "netns", "exec", ns, "unshare", "-m", "--propagation", "private", "bash",
                              str(d / "switch.sh")], stdout=log, stderr=log, start_new_session=True)
        deadline = time.monotonic() + 30
        while not (d / "sshd.pid").exists():
            assert time.monotonic() < deadline, (d / "switch.log").read_text()
            time.sleep(0.1)
        yield ns
    finally:
        out = subprocess.run(["ip", "netns", "pids", ns], capture_output=True, text=True).stdout
        for pid in (int(p) for p in out.split() if p.isdigit()):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        subprocess.run(["ip", "netns", "del", ns], capture_output=True)


@pytest.mark.root
def test_readme_worked_example_drains_a_real_frr_switch(tmp_path: Path) -> None:
    """`fabric drain` and `undrain` of a switch of the docs' example, as a user runs them: its driver (the
    example's, from its row) reaches a real FRR over SSH, adds `bgp graceful-shutdown` through the push
    transaction and removes it again."""
    require(os.geteuid() == 0 and shutil.which("ip") is not None, "root and iproute2")
    require(Path("/usr/lib/frr/bgpd").exists() and Path("/usr/sbin/sshd").exists(), "FRR and OpenSSH")
    name, env = build_example(tmp_path)
    inv = tmp_path / "inv"
    shutil.copytree(ROOT / "inventories" / "example", inv)
    d = tmp_path / "switch"
    text = (inv / "fabric.yaml").read_text().replace("leaf: {platform: linux-frr, target: frr}",
                                                      f"leaf: {{platform: linux-frr, target: {name}}}")
    (inv / "fabric.yaml").write_text(text + f"access:\n  username: root\n  key_file: {d / 'id_ed25519'}\n"
                                     f"  known_hosts: {d / 'known_hosts'}\n")
    (inv / "qos.yaml").write_text("qos:\n  preset: nvidia-roce\n  lossless_priorities: []\n")
    fabric = subprocess.run([sys.executable, str(tmp_path / "fabric_cli.py"), "render", str(inv), "-o",
                             str(tmp_path / "out")], capture_output=True, text=True, env=env, timeout=120)
    assert fabric.returncode == 0, fabric.stderr
    leaf = "leaf-su1-r1"
    same = derive(load(ROOT / "inventories" / "example")).switches[leaf]  # its address and ASN on any NOS
    address, asn = same.management.split("/")[0], same.bgp.asn
    with real_frr(d, address, (tmp_path / "out" / "switches" / leaf / "frr.conf").read_text()) as ns:
        for verb, line in (("drain", "+ bgp graceful-shutdown"), ("undrain", "- bgp graceful-shutdown")):
            p = subprocess.run(["ip", "netns", "exec", ns, sys.executable, str(tmp_path / "fabric_cli.py"), verb,
                                str(inv), leaf, "--yes", "--format", "json", "--interval", "0.2", "--settle", "0.5",
                                "--postcheck-timeout", "3", "--confirm-timer", "20"], capture_output=True, text=True,
                               env=env, timeout=180)
            res = json.loads(p.stdout or "{}")
            assert p.returncode == 0 and (res["target"], res["status"]) == (name, "applied"), p.stdout + p.stderr
            assert res["sections"] == {f"router bgp {asn}": [line]}, res["sections"]
            running = subprocess.run(["ip", "netns", "exec", ns, "ssh", "-i", str(d / "id_ed25519"), "-o",
                                      f"UserKnownHostsFile={d / 'known_hosts'}", f"root@{address}",
                                      "vtysh -c 'show running-config'"], capture_output=True, text=True, timeout=60)
            assert (" bgp graceful-shutdown\n" in running.stdout) == (verb == "drain"), running.stdout
