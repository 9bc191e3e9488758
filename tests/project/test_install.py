"""The wheel works without the checkout: built from the repository's files, installed non-editable in a
fresh venv outside it, and run from a directory outside it, `fabric` renders every shipped inventory (the
same bytes as the checkout), runs `fabric hosts inventory`, finds its playbook and diagnose catalog, and
prints its version. The wheel holds every file of the package, templates and playbooks included.

One wheel and one venv per test session (about 30 s: pip builds the wheel with setuptools from the package
index and installs the dependencies from it).
"""

from __future__ import annotations

import filecmp
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from fabric.design.derive import derive
from fabric.model.load import load
from fabric.nos import NOS
from fabric.render import render_to
from tests.support.paths import ROOT

INVENTORIES = sorted(p for p in (ROOT / "inventories").iterdir() if p.is_dir())
pytestmark = pytest.mark.install


def _run(args: list[str], *, cwd: Path, timeout: int = 600, env: dict[str, str] | None = None) -> str:
    # never PYTHONPATH: with the checkout on it, pip counts roce-fabric as installed and skips the wheel
    env = {k: v for k, v in (os.environ if env is None else env).items() if k != "PYTHONPATH"}
    p = subprocess.run(args, cwd=cwd, capture_output=True, text=True, timeout=timeout, env=env)
    if p.returncode != 0:
        pytest.fail(f"{' '.join(args)} exited {p.returncode}\n{p.stdout[-3000:]}\n{p.stderr[-3000:]}")
    return p.stdout


def _source_files() -> list[str]:
    """The repository's files as a fresh clone has them (tracked, plus new files git does not ignore)."""
    out = _run(["git", "ls-files", "--cached", "--others", "--exclude-standard", "-z"], cwd=ROOT)
    return sorted({f for f in out.split("\0") if f and os.path.lexists(ROOT / f)})


@pytest.fixture(scope="session")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The wheel, built by pip (PEP 517, isolated) from a copy of the repository's files."""
    work = tmp_path_factory.mktemp("wheel")
    src = work / "src"
    for rel in _source_files():
        dst = src / rel
        dst.parent.mkdir(parents=True, exist_ok=True)
        if (ROOT / rel).is_symlink():
            dst.symlink_to(os.readlink(ROOT / rel))
        else:
            shutil.copy2(ROOT / rel, dst)
    _run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(work / "dist"), str(src)], cwd=work)
    (whl,) = (work / "dist").glob("roce_fabric-*.whl")
    return whl


@pytest.fixture(scope="session")
def venv(wheel: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fresh venv (outside the checkout) with the wheel installed non-editable; its bin directory."""
    root = tmp_path_factory.mktemp("venv")
    _run([sys.executable, "-m", "venv", "--without-pip", str(root)], cwd=root)
    _run([sys.executable, "-m", "pip", "--python", str(root / "bin" / "python"), "install", "-q", "--no-compile",
          str(wheel)], cwd=root)
    return root / "bin"


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    """A working directory outside the checkout: nothing of the repository is reachable from it."""
    assert ROOT not in tmp_path.resolve().parents
    return tmp_path


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV", "PYTHONHOME")}
    env["PATH"] = os.pathsep.join(p for p in env.get("PATH", "").split(os.pathsep) if not p.startswith(str(ROOT)))
    return env


def fabric(venv: Path, cwd: Path, *args: str) -> str:
    return _run([str(venv / "fabric"), *args], cwd=cwd, env=_env())


def test_wheel_holds_every_file_of_the_package(wheel: Path) -> None:
    names = set(zipfile.ZipFile(wheel).namelist())
    expected = set()
    for rel in _source_files():
        if rel.startswith(("templates/", "playbooks/")):
            expected.add(f"fabric/{rel}")  # shipped inside the package (fabric/templates, fabric/playbooks)
        elif rel.startswith("fabric/") and not (ROOT / rel).is_symlink():
            expected.add(rel)
    assert expected - names == set()
    # every folder of Python modules is a package (an __init__.py), so setuptools finds and ships it
    for folder in {Path(n).parent for n in names if n.endswith(".py")}:
        assert f"{folder.as_posix()}/__init__.py" in names, f"{folder} has no __init__.py"
    assert "fabric/templates/eos/running-config.j2" in names and "fabric/playbooks/host.yml" in names


def test_installed_fabric_runs_outside_the_checkout(venv: Path, outside: Path) -> None:
    from importlib.metadata import version

    assert fabric(venv, outside, "--version") == f"fabric {version('roce-fabric')}\n"
    where = _run([str(venv / "python"), "-c", "import fabric, fabric.host.fleet as f, fabric.render as r; "
                  "print(fabric.__file__); print(f.PLAYBOOK); print(r.TEMPLATES)"], cwd=outside, env=_env())
    package, playbook, templates = (Path(line) for line in where.splitlines())
    assert venv.parent in package.parents and ROOT not in package.parents
    assert venv.parent in playbook.parents and playbook.read_bytes() == (ROOT / "playbooks" / "host.yml").read_bytes()
    assert venv.parent in templates.parents and (templates / "frr" / "frr.conf.j2").is_file()


def test_installed_fabric_renders_every_shipped_inventory(venv: Path, outside: Path) -> None:
    """The same files as the checkout renders, and every target's main file for every switch and host."""
    seen: set[str] = set()
    for inv in INVENTORIES:
        out = outside / "wheel" / inv.name
        fabric(venv, outside, "render", str(inv), "-o", str(out))
        intent = derive(load(inv))
        for name, sw in intent.switches.items():
            assert (out / "switches" / name / NOS[sw.target].intended).is_file(), (inv.name, name)
            seen.add(NOS[sw.target].intended)
        for name in intent.hosts:
            assert (out / "hosts" / name / "host.json").is_file(), (inv.name, name)
            seen.add("host.json")
        ref = outside / "checkout" / inv.name
        render_to(ref, intent)
        _same_tree(ref, out)
    assert seen == {"config_db.json", "nvue-patch.yaml", "running-config.cfg", "frr.conf", "host.json"}


def _same_tree(a: Path, b: Path) -> None:
    files_a = sorted(p.relative_to(a) for p in a.rglob("*") if p.is_file())
    files_b = sorted(p.relative_to(b) for p in b.rglob("*") if p.is_file())
    assert files_a == files_b
    _, mismatch, errors = filecmp.cmpfiles(a, b, [str(p) for p in files_a], shallow=False)
    assert not mismatch and not errors, mismatch[:5]


def test_installed_fabric_hosts_inventory_and_diagnose(venv: Path, outside: Path) -> None:
    from fabric.host.fleet import read_ansible_yaml

    inv = read_ansible_yaml(fabric(venv, outside, "hosts", "inventory", str(ROOT / "inventories" / "example")))
    hosts = inv["all"]["children"]["gpu_hosts"]["hosts"]
    assert hosts["gpu-su1-01"] == {"ansible_host": "198.18.0.7"} and len(hosts) == 4
    log = outside / "dmesg.log"
    log.write_text((ROOT / "tests" / "fixtures" / "logs" / "kernel_link_flap.log").read_text())
    p = subprocess.run([str(venv / "fabric"), "diagnose", str(log), "-f", "json"], cwd=outside, env=_env(),
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 1 and '"DG905"' in p.stdout, p.stderr  # the shipped catalog and the rules ran
