"""Secrets kept out of what the tool prints and leaves behind: the masking of the secrets of device configs as
each NOS structures them (`mask_change`, what every diff shows), a word-list fallback for free text such as
device error messages (`mask_line`), and the environment a child process gets when it needs none of the operator's
secrets (`scrubbed_env`).

Running configs hold secrets the tool does not own. Where each kind of config keeps them (`SECRETS`, one scheme
per kind; a NOS's row in `fabric.nos` names its own):
- SONiC CONFIG_DB, the leaves the sonic-yang models declare as secrets (sonic-net/sonic-buildimage,
  src/sonic-yang-models/yang-models at 086b03bd): `auth_password` (sonic-bgp-common: BGP_NEIGHBOR,
  BGP_PEER_GROUP, …), `bind_password` (LDAP), `passkey` (RADIUS[_SERVER], TACPLUS[_SERVER]), `NTP_KEY` `value`,
  `SNMP_USER_AUTH_PASSWORD`/`SNMP_USER_ENCRYPTION_PASSWORD`, and the key of `SNMP_COMMUNITY` (the community).
- NVUE, the leaves of the object model that hold secrets (docs.nvidia.com Cumulus Linux 5.9/5.15 user guide:
  users, BGP, TACACS+, RADIUS, SNMP, NTP): `hashed-password`, `password`, `secret`, `community-password`,
  `auth-md5`/`auth-sha`/`encrypt-aes`/`encrypt-des`, `md5-key`, `key <id> value`, and the name under
  `readonly-community`/`readwrite-community` (the community).
- EOS and FRR text, the value slot of the commands that take a secret (EOS user manual: `username … secret`,
  `enable secret`, `neighbor … password`, `tacacs-server/radius-server … key`, `ntp authentication-key`,
  `snmp-server community|user|host`, `ip ospf authentication-key|message-digest-key`, `isis authentication key`;
  FRR user guide: `neighbor … password`, `password`/`enable password`, `ip ospf authentication-key|
  message-digest-key`, `key-string`, `isis password`, `area-password`/`domain-password`, `ip rip authentication
  string`), after an optional encryption type (0, 5, 7, 8a, sha512) or algorithm.
- `words`, for a config whose secret leaves are not listed: everything after a secret keyword (`mask_line`).
`fabric plan` shows removed and added lines; every secret in them is shown as `<masked>`, and the output says
how many lines were.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Mapping

MASK = "<masked>"
# A keyword that introduces a secret (as a word: `sflow_key` or `keepalive` are none), then the rest of the line:
# `secret sha512 $6$…`, `key 7 0822455D0A16`, `community public ro`, `"password": "x"`, `password: x`.
_SECRET_WORDS = (r"(password|secret|passkey|passphrase|key|auth-key|authentication-key|community|md5|sha512|"
                 r"pre-shared-key|psk)")
_SECRET = re.compile(rf"(?i)(?<![\w-]){_SECRET_WORDS}(?![\w-])(\"?\s*[:=]?\s*)(\S.*)$")
_SECRET_WORD = re.compile(_SECRET_WORDS, re.I)


def mask_line(line: str) -> tuple[str, bool]:
    """Free text (a device's error message): everything after its first secret keyword masked, and whether it
    held one. Config lines are masked by structure instead (`mask_change`)."""
    m = _SECRET.search(line)
    if m is None:
        return line, False
    value = m.group(3).rstrip()
    quoted = value.startswith('"')  # JSON: keep it a string, and its trailing comma
    masked = f'"{MASK}"' + ("," if value.endswith(",") else "") if quoted else MASK
    return line[:m.start(3)] + masked, True


# -- by structure, per NOS ----------------------------------------------------------------------------------
SONIC_FIELDS = {"auth_password", "bind_password", "passkey", "SNMP_USER_AUTH_PASSWORD",
                "SNMP_USER_ENCRYPTION_PASSWORD"}  # a secret in whatever table (the sonic-yang groupings)
SONIC_TABLE_FIELDS = {"NTP_KEY": {"value"}}
SONIC_KEY_TABLES = {"SNMP_COMMUNITY"}  # the entry's key is the secret
NVUE_LEAVES = {"hashed-password", "password", "secret", "community-password", "auth-md5", "auth-sha",
               "encrypt-aes", "encrypt-des", "md5-key", "key-string"}
NVUE_KEY_PARENTS = {"readonly-community", "readwrite-community", "readonly-community-v6", "readwrite-community-v6"}
_TYPE = r"(?:(?:0|5|7|8a|sha512)\s+)?"  # an encryption type before the value
EOS_SECRET = [re.compile(p) for p in (
    rf"(?:^|\s)(?:secret|password)\s+{_TYPE}(\S+)",
    rf"(?:^|\s)key\s+{_TYPE}(\S+)",
    rf"authentication-key\s+(?:\d+\s+(?:md5|sha1|sha256|sha512)\s+)?{_TYPE}(\S+)",
    rf"message-digest-key\s+\d+\s+md5\s+{_TYPE}(\S+)",
    r"^snmp-server\s+community\s+(\S+)",
    r"^snmp-server\s+user\s.*?\sauth\s+\S+\s+(\S+)",
    r"^snmp-server\s+user\s.*?\spriv\s+\S+\s+(\S+)",
    r"^snmp-server\s+host\s.*?\sversion\s+(?:1|2c)\s+(\S+)",
)]
FRR_SECRET = [re.compile(p) for p in (
    r"(?:^|\s)(?:enable\s+)?password\s+(?:(?:clear|md5|8)\s+)?(\S+)",
    r"(?:area|domain)-password\s+(?:clear|md5)\s+(\S+)",
    r"authentication-key\s+(\S+)",
    r"message-digest-key\s+\d+\s+md5\s+(\S+)",
    r"^key-string\s+(\S+)",
    r"authentication\s+string\s+(\S+)",
)]
# A word every pattern of a list needs in the text it matches: a line without any of them has no secret, and is
# passed over with one search instead of one per pattern (tests/test_secrets.py holds each pattern to it).
EOS_NEEDS = re.compile(r"secret|password|key|snmp-server")
FRR_NEEDS = re.compile(r"password|key|authentication")


def secret_field(name: str) -> bool:
    """Whether a field holds a secret, by its name: a secret leaf of a NOS's structure (SONIC_FIELDS, NVUE_LEAVES)
    or a secret keyword as the whole name (`password`, `key`; not `password_env` or `key_file`, which name where a
    secret is, the inventory's only kind)."""
    return name in SONIC_FIELDS or name in NVUE_LEAVES or _SECRET_WORD.fullmatch(name) is not None


Masked = tuple[str, str, bool]  # (section, line, whether a secret was masked)


def _mask_spans(line: str, patterns: list[re.Pattern[str]], needs: re.Pattern[str]) -> tuple[str, bool]:
    if needs.search(line) is None:
        return line, False
    spans = sorted({m.span(1) for p in patterns for m in p.finditer(line)})
    if not spans:
        return line, False
    out, at = [], 0
    for a, b in spans:
        if a >= at:
            out += [line[at:a], MASK]
            at = b
    return "".join(out) + line[at:], True


def _text(patterns: list[re.Pattern[str]], needs: re.Pattern[str]) -> Callable[[str, str], Masked]:
    def mask_text(section: str, line: str) -> Masked:
        sec, hit_s = _mask_spans(section, patterns, needs)
        ln, hit_l = _mask_spans(line, patterns, needs)
        return sec, ln, hit_s or hit_l
    return mask_text


def _config_db(section: str, line: str) -> Masked:
    """Section `TABLE|key`, line `field=value` (fabric.nos.sonic.driver)."""
    table = section.split("|", 1)[0]
    field, eq, _value = line.partition("=")
    if table in SONIC_KEY_TABLES and "|" in section:
        return f"{table}|{MASK}", (f"{field}={MASK}" if field in SONIC_FIELDS else line), True
    if eq and (field in SONIC_FIELDS or field in SONIC_TABLE_FIELDS.get(table, ())):
        return section, f"{field}={MASK}", True
    return section, line, False


def _nvue(section: str, line: str) -> Masked:
    """Section: the path to the leaf, space-separated; line `leaf: value` (fabric.nos.nvue.driver)."""
    path = section.split(" ") if section else []
    leaf, colon, _value = line.partition(": ")
    hit = False
    for i in range(1, len(path)):
        if path[i - 1] in NVUE_KEY_PARENTS:
            path[i], hit = MASK, True
    if path and path[-1] in NVUE_KEY_PARENTS:
        leaf, hit = MASK, True
    if colon and (leaf in NVUE_LEAVES or (leaf == "value" and len(path) >= 2 and path[-2] == "key")):
        return " ".join(path), f"{leaf}: {MASK}", True
    return " ".join(path), f"{leaf}{colon}{_value}" if colon else (leaf if hit else line), hit


def _words(section: str, line: str) -> Masked:
    """A config whose secret leaves nobody listed: everything after a secret keyword (`mask_line`)."""
    sec, hit_s = mask_line(section)
    ln, hit_l = mask_line(line)
    return sec, ln, hit_s or hit_l


# How a config keeps its secrets; a NOS's row names its scheme (`fabric.nos.Nos.secrets`)
SECRETS: dict[str, Callable[[str, str], Masked]] = {
    "config_db": _config_db, "nvue": _nvue, "eos_cli": _text(EOS_SECRET, EOS_NEEDS),
    "frr_cli": _text(FRR_SECRET, FRR_NEEDS),
    "words": _words}


def mask_change(scheme: str, section: str, line: str) -> Masked:
    """One diff line of a config with its secrets masked where its `scheme` (a key of `SECRETS`, the NOS row's
    `secrets`) keeps them."""
    return SECRETS[scheme](section, line)


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
