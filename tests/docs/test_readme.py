"""The README and the docs site document what the code does: every lint rule and every top-level command, and
every example runs as written."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tests.support import docs

DOCS = docs.text()


def test_every_lint_rule_is_in_the_readme() -> None:
    table = subprocess.run([sys.executable, "-c", "from fabric.cli import main; main()", "lint", "--list",
                            "--markdown"], capture_output=True, text=True, timeout=60).stdout
    rows = [line for line in table.splitlines() if line.startswith("| RF")]
    assert len(rows) >= 29
    for row in rows:
        assert row in DOCS, row


def test_every_command_is_in_the_readme() -> None:
    from fabric.cli import app

    names = [c.name or c.callback.__name__ for c in app.registered_commands]
    names += [g.name for g in app.registered_groups if g.name]
    for name in names:
        assert f"fabric {name}" in DOCS, name


# -- every example of the README and the docs, run as written ---------------------------------------------------------
#
# How examples are extracted (so examples other branches add are picked up without touching this file):
# - a fenced block tagged `console`: each line starting with `$ ` is a command, the lines after it up to the
#   next `$ ` its expected output, compared line by line with runs of spaces collapsed (`…` on a line of its
#   own stands for any number of lines);
# - a fenced block tagged `sh`: each line is a command (a trailing `# comment` is dropped);
# - untagged blocks are illustrations (output captured elsewhere) and are not run.
# Every command is put in one class below; one that fits none fails `test_every_readme_example_is_classified`.
# - synopsis (placeholders such as `[…]`, `INV`, `FILE`, alternatives `a|b`) and `make` targets: not run;
# - `fabric host apply` (it would change this machine): not run;
# - commands that reach devices without `--lab`: run inside a network namespace of their own with no route
#   (nothing leaves the machine), where they must fail cleanly within seconds: exit 1 or 2, an `error:` line;
# - lab examples (`fabric lab …`, `--lab`): as root, under the lab lock, with the lab up;
# - everything else: offline, exit 0.

import os  # noqa: E402
import re  # noqa: E402
import shlex  # noqa: E402
import shutil  # noqa: E402
import time  # noqa: E402
from dataclasses import dataclass, field  # noqa: E402

import pytest  # noqa: E402

from tests.support.paths import ROOT  # noqa: E402

BIN = Path(sys.executable).parent
DEVICE_COMMANDS = ("plan", "apply", "rollback", "fetch", "counters", "accept", "hosts plan", "hosts apply",
                   "host plan", "drain", "undrain", "optics", "remediate")


@dataclass
class Example:
    block: int  # index of the fenced block, counted over all pages
    file: str  # the page, relative to the repository
    line: int  # its line number there
    command: str
    expected: list[str] = field(default_factory=list)  # console blocks only
    lab_block: bool = False  # its block has lab examples: offline ones may need their files (fetched/)

    @property
    def words(self) -> list[str]:
        """The command's words after any leading `NAME=value` environment assignments."""
        words = shlex.split(self.command, comments=True)
        while words and re.fullmatch(r"[A-Z_][A-Z0-9_]*=\S*", words[0]):
            words = words[1:]
        return words

    @property
    def kind(self) -> str:
        w, cmd = self.words, self.command
        if w[0] == "make" or re.search(r"\[|\bINV\b|\bINVENTORY\b|\bFILE\b|\bDEVICE\b|\w\|\w", cmd):
            return "synopsis"
        if w[0] != "fabric":
            return "other"
        sub = " ".join(w[1:3]) if w[1] in ("host", "hosts", "lab") else w[1]
        if w[1] == "lab" or "--lab" in w:
            return "lab"
        if self.lab_block and sub not in DEVICE_COMMANDS:
            return "lab"
        if sub == "host apply":
            return "changes-this-machine"
        if sub in DEVICE_COMMANDS and not {"--offline", "--render-only", "--dump-catalog", "--dry-run"} & set(w):
            return "devices"
        return "offline"


def examples() -> list[Example]:
    out: list[Example] = []
    block = -1
    for page in docs.pages():
        lang, current, name = None, None, str(page.relative_to(ROOT))
        for n, line in enumerate(page.read_text().splitlines(), 1):
            if line.startswith("```"):
                if lang is None:
                    block, lang = block + 1, line[3:].strip()
                else:
                    lang, current = None, None
                continue
            if lang == "sh" and line.strip() and not line.lstrip().startswith("#"):
                out.append(Example(block, name, n, re.sub(r"\s+#\s.*$", "", line).strip()))
            elif lang == "console":
                if line.startswith("$ "):
                    current = Example(block, name, n, line[2:].strip())
                    out.append(current)
                elif current is not None:
                    current.expected.append(line)
    lab_blocks = {e.block for e in out if e.kind == "lab"}
    for e in out:
        e.lab_block = e.block in lab_blocks
    return out


EXAMPLES = examples()


def _id(e: Example) -> str:
    return f"{e.file}:{e.line}:{e.command[:60]}"


def _squash(line: str) -> str:
    return " ".join(line.split())


def matches(expected: list[str], got: list[str]) -> bool:
    """`expected` lines against `got`, `…` alone on a line standing for any lines."""
    if not expected:
        return True
    head, *rest = expected
    if _squash(head) == "…":
        return any(matches(rest, got[i:]) for i in range(len(got) + 1))
    return bool(got) and _squash(head) == _squash(got[0]) and matches(rest, got[1:])


@pytest.fixture(scope="module")
def workdir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A directory with the repository's inventories and fixtures, where examples write their files; the
    validation example's `my-fabric` is the copy of inventories/example with the three mistakes the README
    names."""
    d = tmp_path_factory.mktemp("readme")
    for name in ("inventories", "tests"):
        (d / name).symlink_to(ROOT / name)
    mine = d / "my-fabric"
    shutil.copytree(ROOT / "inventories" / "example", mine)
    for file, old, new in (("switching.yaml", "  mtu: 9216", "  mtus: 9216"),
                           ("fabric.yaml", "cable: 5m}", "cable: 5ft}"),
                           ("hosts.yaml", "{rail: 4, rdma: mlx5_3", "{rail: 5, rdma: mlx5_3")):
        text = (mine / file).read_text()
        assert old in text
        (mine / file).write_text(text.replace(old, new))
    (d / "home" / ".ssh").mkdir(parents=True)
    (d / "home" / ".ssh" / "known_hosts").write_text("")
    return d


def shell(command: str, cwd: Path, *, netns: bool = False, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PATH": f"{BIN}:{os.environ.get('PATH', '')}", "COLUMNS": "200",
           "FABRIC_STATE": str(cwd / "state"), "FABRIC_LAB_STATE": "/run/roce-fabric/test-lab"}
    if netns:  # credentials from the environment and a user's known_hosts, as an operator would have them
        env.update(FABRIC_USERNAME="admin", FABRIC_PASSWORD="x", HOME=str(cwd / "home"))
    argv = ["unshare", "-n", "sh", "-c", command] if netns else ["sh", "-c", command]
    return subprocess.run(argv, capture_output=True, text=True, cwd=cwd, timeout=timeout, env=env,
                          stdin=subprocess.DEVNULL)


def test_examples_are_found() -> None:
    kinds = {e.kind for e in EXAMPLES}
    assert {"offline", "devices", "lab", "synopsis"} <= kinds
    assert any(e.expected for e in EXAMPLES)  # the console block of `fabric validate`


def test_every_readme_example_is_classified() -> None:
    assert not [e.command for e in EXAMPLES if e.kind == "other"]


@pytest.mark.xdist_group("readme")  # in the README's order on one worker: a later example reads an earlier one's files
@pytest.mark.parametrize("example", [e for e in EXAMPLES if e.kind == "offline"], ids=_id)
def test_offline_example(example: Example, workdir: Path) -> None:
    p = shell(example.command, workdir)
    assert "Traceback" not in p.stderr
    if example.expected:
        assert matches(example.expected, (p.stdout + p.stderr).splitlines()), p.stdout + p.stderr
    else:
        assert p.returncode == 0, p.stdout + p.stderr


@pytest.mark.root
@pytest.mark.parametrize("example", [e for e in EXAMPLES if e.kind == "devices"], ids=_id)
def test_device_example_fails_cleanly_and_fast_where_no_device_answers(example: Example, workdir: Path) -> None:
    from tests.conftest import require

    require(os.geteuid() == 0 and shutil.which("unshare") is not None, "root and unshare for a namespace")
    t0 = time.monotonic()
    p = shell(example.command, workdir, netns=True)
    assert time.monotonic() - t0 < 60
    assert p.returncode in (1, 2) and "Traceback" not in p.stderr, p.stdout + p.stderr
    assert "error: " in p.stderr, p.stderr


@pytest.mark.root
@pytest.mark.lab
def test_lab_examples_in_order(workdir: Path) -> None:
    """The lab examples of the README in their order, the lab up first and down last (even on failure)."""
    from tests.support.lab import require_lab

    require_lab()
    lab = [e for e in EXAMPLES if e.kind == "lab"]
    up = [e for e in lab if e.words[1:3] == ["lab", "up"]]
    down = [e for e in lab if e.words[1:3] == ["lab", "down"]]
    assert up and down
    # an example's second lab instance becomes this run's own (t<pid> → u<pid>), so two runs never share it
    second = "u" + os.environ.get("FABRIC_LAB_INSTANCE", "t")[1:]

    def command(e: Example) -> str:
        return re.sub(r"\bFABRIC_LAB_INSTANCE=\w+", f"FABRIC_LAB_INSTANCE={second}", e.command)

    try:
        for e in [*up, *(e for e in lab if e not in up and e not in down)]:
            p = shell(command(e), workdir)
            assert p.returncode == 0 and "Traceback" not in p.stderr, f"{e.command}\n{p.stdout}\n{p.stderr}"
            if e.expected:
                assert matches(e.expected, (p.stdout + p.stderr).splitlines()), p.stdout + p.stderr
    finally:
        for e in down:
            p = shell(command(e), workdir)
            assert p.returncode == 0, p.stderr
