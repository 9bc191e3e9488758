"""Secrets kept out of what the tool prints and leaves behind: the one masking of secret lines of device configs
(`mask`), and the environment a child process gets when it needs none of the operator's secrets (`scrubbed_env`).

Running configs hold secrets the tool does not own: EOS `username admin secret sha512 $6$…`, `enable secret`,
SNMP communities, TACACS+/RADIUS keys, BGP neighbour passwords, NTP authentication keys, NVUE and SONiC
`password:`/`passkey` values. `fabric plan` shows removed and added lines of these sections; every such line is
shown with its secret masked, and the output says how many were.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Mapping

MASK = "<masked>"
# A keyword that introduces a secret (as a word: `sflow_key` or `keepalive` are none), then the rest of the line:
# `secret sha512 $6$…`, `key 7 0822455D0A16`, `community public ro`, `"password": "x"`, `password: x`.
_SECRET = re.compile(r"(?i)(?<![\w-])(password|secret|passkey|passphrase|key|auth-key|authentication-key|"
                     r"community|md5|sha512|pre-shared-key|psk)(?![\w-])(\"?\s*[:=]?\s*)(\S.*)$")


def mask_line(line: str) -> tuple[str, bool]:
    """`line` with everything after its first secret keyword masked, and whether it held one."""
    m = _SECRET.search(line)
    if m is None:
        return line, False
    value = m.group(3).rstrip()
    quoted = value.startswith('"')  # JSON: keep it a string, and its trailing comma
    masked = f'"{MASK}"' + ("," if value.endswith(",") else "") if quoted else MASK
    return line[:m.start(3)] + masked, True


def mask(lines: Iterable[str]) -> tuple[list[str], int]:
    """Every line with its secret masked, and how many lines were masked."""
    out, count = [], 0
    for line in lines:
        masked, hit = mask_line(line)
        out.append(masked)
        count += hit
    return out, count


# What a child process that needs none of the operator's secrets may inherit (ansible-runner writes the whole
# environment of ansible-playbook to artifacts/<id>/command, which outlives a killed run).
_KEEP = {"PATH", "HOME", "USER", "LOGNAME", "LANG", "LANGUAGE", "TZ", "TMPDIR", "TERM", "SSH_AUTH_SOCK",
         "VIRTUAL_ENV", "PYTHONPATH"}
_SECRETISH = re.compile(r"PASS|SECRET|TOKEN|KEY|CRED|AUTH", re.I)


def scrubbed_env(environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """The allowed variables of `environ` (default: this process's): locale, paths, the SSH agent, and Ansible's
    own settings whose names do not look secret."""
    env = os.environ if environ is None else environ
    return {k: v for k, v in env.items()
            if k in _KEEP or k.startswith("LC_") or (k.startswith("ANSIBLE_") and not _SECRETISH.search(k))}
