"""tools/retry.sh, the wrapper of every set-up step that reaches a registry (Makefile, .ci/run): a transient
network failure is tried again, any other failure ends at once with its own exit status."""

import os
import subprocess
from pathlib import Path

RETRY = Path(__file__).resolve().parents[2] / "tools" / "retry.sh"
# what the Go toolchain printed when the module proxy's name did not resolve in time (a CI run's first make test)
GO_TIMEOUT = "go: downloading go.etcd.io/etcd v3: dial tcp: lookup proxy.golang.org on 10.0.0.2:53: i/o timeout"


def _flaky(tmp_path: Path, failures: int, message: str, rc: int = 1) -> Path:
    """A command that fails `failures` times with `message` on stderr, then succeeds; counts its runs."""
    script = tmp_path / "flaky.sh"
    script.write_text(f"""#!/bin/sh
n=$(cat {tmp_path}/count 2>/dev/null || echo 0); echo $((n + 1)) > {tmp_path}/count
if [ "$n" -lt {failures} ]; then echo '{message}' >&2; exit {rc}; fi
echo done
""")
    script.chmod(0o755)
    return script


def _run(script: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "RETRY_PAUSES": "0 0 0"}
    return subprocess.run([str(RETRY), str(script)], capture_output=True, text=True, env=env, timeout=60)


def test_a_transient_network_failure_is_tried_again(tmp_path: Path) -> None:
    result = _run(_flaky(tmp_path, 2, GO_TIMEOUT))
    assert result.returncode == 0 and result.stdout == "done\n"
    assert (tmp_path / "count").read_text().strip() == "3"
    assert result.stderr.count("transient network failure") == 2


def test_a_failure_that_is_not_the_network_ends_at_once_with_its_status(tmp_path: Path) -> None:
    result = _run(_flaky(tmp_path, 5, "main.go:3:1: syntax error: non-declaration statement", rc=3))
    assert result.returncode == 3
    assert (tmp_path / "count").read_text().strip() == "1"


def test_a_failure_that_stays_gives_up_after_the_last_attempt(tmp_path: Path) -> None:
    result = _run(_flaky(tmp_path, 9, "E: Failed to fetch http://deb.example/pool/x.deb  Connection timed out"))
    assert result.returncode == 1
    assert (tmp_path / "count").read_text().strip() == "4"
