"""Nothing handed to Ansible is ever templated: a canary command in every string value the
fleet path builds (inventory group vars, host vars, extra vars, the SSH arguments) never runs under
`hosts plan` and `hosts apply`, and the model refuses template syntax in the fields that name files.

The runs are real ansible-playbook runs through ansible-runner: once over SSH to a closed port (the connection
variables are templated before the connection is tried), once over Ansible's `local` connection so that every
task of playbooks/host.yml runs with the canaries in its arguments."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
import yaml

from fabric.access import Credentials, InventorySite
from fabric.design.derive import derive
from fabric.errors import InputError
from fabric.host import fleet as hostfleet
from fabric.host.model import FleetOptions
from fabric.model.load import load
from tests import inproc
from tests.conftest import ROOT

EXAMPLE = ROOT / "inventories" / "example"


def canary(tmp: Path, name: str) -> str:
    """A Jinja expression that, if Ansible ever rendered it, would create tmp/CANARY-<name>."""
    return "{{ lookup('pipe', 'touch " + str(tmp / f"CANARY-{name}") + "') }}"


class CanarySite(InventorySite):
    """The example fabric with every host at 127.0.0.1 and canaries in every credential string."""

    def __init__(self, tmp: Path):
        loaded = load(EXAMPLE)
        super().__init__(derive(loaded), loaded.inv.access)
        self.tmp = tmp
        self.agent = canary(tmp, "agent")
        self.python = canary(tmp, "python")

    def host_address(self, host: str) -> str:
        return "127.0.0.1"

    def host_credentials(self) -> Credentials:
        return Credentials(username=canary(self.tmp, "user"), key_file=canary(self.tmp, "key_file"),
                           known_hosts=canary(self.tmp, "known_hosts"), port=1)


def _no_canary(tmp: Path) -> None:
    assert sorted(p.name for p in tmp.glob("CANARY-*")) == []


def test_every_value_of_the_inventory_and_extra_vars_is_unsafe(tmp_path: Path) -> None:
    text = hostfleet.inventory_yaml(CanarySite(tmp_path))
    data = hostfleet.read_ansible_yaml(text)

    def strings(v: object) -> list[object]:
        if isinstance(v, dict):
            return [x for w in v.values() for x in strings(w)]
        if isinstance(v, list):
            return [x for w in v for x in strings(w)]
        return [v] if isinstance(v, str) else []

    found = strings(data)
    assert found and all(isinstance(s, hostfleet.Unsafe) for s in found), found
    assert "127.0.0.1" in found and canary(tmp_path, "user") in found


def test_canaries_in_connection_vars_never_run(tmp_path: Path) -> None:
    """SSH to a closed port: ansible_user, the key file, the SSH arguments (known_hosts) and the interpreter are
    all templated before Ansible tries to connect."""
    site = CanarySite(tmp_path)
    for mode in ("plan", "apply"):
        opts = FleetOptions(limit="gpu-su1-01", agent_args=[canary(tmp_path, "args")],
                            remote_dir=canary(tmp_path, "remote_dir"))
        res = hostfleet.run(site, mode, opts)  # type: ignore[arg-type]
        assert [h.status for h in res.hosts] == ["unreachable"], res
        _no_canary(tmp_path)


def test_canaries_in_task_arguments_never_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Ansible's local connection: the file, copy and command tasks all run with canaries in their arguments."""
    inventory = hostfleet.ansible_inventory

    def local(site: InventorySite) -> dict:
        inv = inventory(site)
        inv["all"]["vars"] |= {"ansible_connection": "local", "fabric_canary": canary(tmp_path, "group_var")}
        for hv in inv["all"]["children"]["gpu_hosts"]["hosts"].values():
            hv["fabric_canary_host"] = canary(tmp_path, "host_var")
        return inv

    monkeypatch.setattr(hostfleet, "ansible_inventory", local)
    site = CanarySite(tmp_path)
    site.python = sys.executable
    remote = tmp_path / "remote"
    for mode in ("plan", "apply"):
        opts = FleetOptions(limit="gpu-su1-01", agent_args=[canary(tmp_path, "args")],
                            remote_dir=str(remote / canary(tmp_path, "remote_dir")), become=False)
        res = hostfleet.run(site, mode, opts)  # type: ignore[arg-type]
        (host,) = res.hosts
        assert host.status == "failed", host  # the agent "{{ … }}" does not exist: run as a name, not a template
        _no_canary(tmp_path)
    # the intent was shipped into a directory named by the literal text
    (shipped,) = remote.rglob("gpu-su1-01.json")
    assert str(shipped.parent) == str(remote / canary(tmp_path, "remote_dir"))


@pytest.mark.parametrize("field", ["key_file", "known_hosts"])
@pytest.mark.parametrize("syntax", ["{{ 1 }}", "{% if 1 %}x{% endif %}", "{# c #}"])
def test_model_refuses_template_syntax_in_file_names(tmp_path: Path, field: str, syntax: str) -> None:
    import shutil

    inv = tmp_path / "inv"
    shutil.copytree(EXAMPLE, inv)
    (inv / "access.yaml").write_text(yaml.safe_dump({"access": {field: f"/tmp/{syntax}"}}))
    with pytest.raises(InputError) as exc:
        load(inv)
    assert f"access.{field}" in str(exc.value) and "access.yaml:2" in str(exc.value), exc.value


# -- in the lab: real sshd per host namespace (the fleet fixture of test_host_fleet) -----------------------
from tests.host.test_fleet import FABRIC, fleet  # noqa: E402,F401 - the fixture, used by name


@pytest.mark.root
@pytest.mark.parametrize("mode", ["plan", "apply"])
def test_canaries_never_run_over_ssh_in_the_lab(fleet: dict, mode: str) -> None:  # noqa: F811
    """`fabric hosts plan|apply` over SSH to the test fleet with a canary in the remote directory and in the
    user name from the environment: neither runs; the inventory's file names with one are refused (exit 2)."""
    import json
    import os
    import subprocess

    tmp: Path = fleet["tmp"]
    remote = str(tmp / "remote" / canary(tmp, "remote_dir"))
    p = subprocess.run([FABRIC, "hosts", mode, str(fleet["inventory"]), "--agent", FABRIC, "--remote-dir", remote,
                        "--python", "/usr/bin/python3", "--limit", "gpu-su1-01", "--format", "json"],
                       capture_output=True, text=True, timeout=300)
    assert "Traceback" not in p.stderr, p.stderr
    (host,) = json.loads(p.stdout)["hosts"]
    assert host["status"] == "ok", host  # the literal directory name works on the host
    _no_canary(tmp)
    access = fleet["inventory"] / "access.yaml"
    doc = yaml.safe_load(access.read_text())
    doc["access"]["known_hosts"] = canary(tmp, "known_hosts")
    access.write_text(yaml.safe_dump(doc))
    p = subprocess.run([FABRIC, "hosts", mode, str(fleet["inventory"]), "--limit", "gpu-su1-01"],
                       capture_output=True, text=True, timeout=120, env={**os.environ})
    assert p.returncode == 2 and "access.known_hosts: expected a file name without template syntax" in p.stderr
    _no_canary(tmp)


@pytest.mark.root
def test_canaries_in_every_accepted_field_never_run_in_the_lab(fleet: dict) -> None:  # noqa: F811
    """The canary sweep (tests/canary.py) over the lab fleet's inventory: every string field, a canary value each
    (rotating; FUZZ_CANARY=all: every value), and where the model accepts it `hosts plan` and `hosts apply` over SSH
    to the fleet. A field naming an existing file gets a copy of that file under the canary's name, so the canary
    reaches Ansible's connection variables. Nothing runs, the operator's password appears nowhere."""
    import os
    import shutil
    import subprocess

    from tests.canary import ENV_SECRET, fields_of, planted, values

    tmp: Path = fleet["tmp"]
    every = os.environ.get("FUZZ_CANARY") == "all"
    env = {**os.environ, "FABRIC_PASSWORD": ENV_SECRET}
    reached = 0
    for j, field in enumerate(fields_of(fleet["inventory"], str(fleet["inventory"]))):
        for i in range(len(values(tmp))):
            if not every and i != j % len(values(tmp)):
                continue
            case = tmp / f"canary-{j}-{i}"
            marker = case / "marker"
            marker.mkdir(parents=True)
            value = values(marker)[i]
            if field.original and Path(field.original).is_file():  # the same file under the canary's name
                copy = case / "files" / value
                copy.parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(field.original, copy)
                value = str(copy)
            inv = planted(field, value, case)
            p = inproc.fabric("validate", inv, env=env)  # the CLI's entry point; Ansible below runs in processes
            assert p.returncode in (0, 2) and "Traceback" not in p.stderr, (field, p.stderr)
            if p.returncode == 2:
                assert str(inv) in p.stderr, (field, p.stderr)  # refused, located
                continue
            for mode in ("plan", "apply"):
                try:
                    p = subprocess.run([FABRIC, "hosts", mode, str(inv), "--agent", FABRIC, "--remote-dir",
                                        str(tmp / "remote"), "--python", "/usr/bin/python3", "--limit", "gpu-su1-01",
                                        "--format", "json"], capture_output=True, text=True, timeout=300, env=env)
                except subprocess.TimeoutExpired as exc:
                    raise AssertionError(f"{field} {mode}: no result in 300 s; stderr: {exc.stderr!r}"[:3000]) from None
                assert "Traceback" not in p.stderr and ENV_SECRET not in p.stdout + p.stderr, (field, p.stderr)
                assert sorted(marker.iterdir()) == [], (field, mode)
                reached += 1
    assert reached >= 2  # at least one canary went through plan and apply
