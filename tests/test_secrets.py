"""Secrets in `plan` output are masked by each NOS's structure: every secret-bearing field of
every target (the scheme its row names in fabric.secrets.SECRETS) shown through the driver's own diff lines, and
`plan --running` end to end in table and JSON output with a canary secret in an owned BGP neighbour of each target."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import pytest
import yaml

from fabric.design.derive import derive
from fabric.model.load import load
from fabric.nos import NOS
from fabric.nos.nvue.driver import _lines as nvue_lines
from fabric.nos.nvue.driver import load_running as nvue_running
from fabric.nos.sonic.driver import _lines as sonic_lines
from fabric.render import render_switch
from fabric.secrets import MASK, SECRETS, mask_change
from fabric.targets.base import Change, DeviceDiff
from tests.conftest import ROOT

CANARY = "Canary-S3cret-9f1c"

SONIC = [("BGP_NEIGHBOR", "default|10.0.0.1", "auth_password"), ("BGP_PEER_GROUP", "default|FABRIC", "auth_password"),
         ("BGP_INTERNAL_NEIGHBOR", "default|10.0.0.2", "auth_password"), ("LDAP", "global", "bind_password"),
         ("RADIUS", "global", "passkey"), ("RADIUS_SERVER", "192.0.2.1", "passkey"), ("TACPLUS", "global", "passkey"),
         ("TACPLUS_SERVER", "192.0.2.2", "passkey"), ("NTP_KEY", "1", "value"),
         ("SNMP_USER", "ops", "SNMP_USER_AUTH_PASSWORD"), ("SNMP_USER", "ops", "SNMP_USER_ENCRYPTION_PASSWORD"),
         ("SNMP_COMMUNITY", CANARY, "TYPE")]
NVUE = [("system", "aaa", "user", "ops", "hashed-password"), ("system", "aaa", "user", "ops", "password"),
        ("vrf", "default", "router", "bgp", "neighbor", "swp1", "password"),
        ("vrf", "default", "router", "bgp", "peer-group", "FABRIC", "password"),
        ("system", "aaa", "tacacs", "server", "1", "secret"), ("system", "aaa", "radius", "server", "r1", "secret"),
        ("system", "aaa", "ldap", "bind", "password"),
        ("service", "snmp-server", "trap-destination", "192.0.2.1", "community-password"),
        ("service", "snmp-server", "username", "ops", "auth-md5"),
        ("service", "snmp-server", "username", "ops", "auth-sha"),
        ("service", "snmp-server", "username", "ops", "encrypt-aes"),
        ("service", "snmp-server", "username", "ops", "encrypt-des"),
        ("interface", "swp1", "router", "ospf", "authentication", "md5-key"),
        ("service", "ntp", "default", "key", "1", "value"),
        ("service", "snmp-server", "readonly-community", CANARY, "access", "any"),
        ("system", "snmp-server", "readwrite-community", CANARY)]
EOS = [("(global)", f"username admin privilege 15 role network-admin secret sha512 {CANARY}"),
       ("(global)", f"username ops secret 0 {CANARY}"), ("(global)", f"enable password 7 {CANARY}"),
       ("(global)", f"enable secret sha512 {CANARY}"), ("router bgp 65101", f"neighbor 10.0.0.1 password 7 {CANARY}"),
       ("router bgp 65101", f"neighbor FABRIC password {CANARY}"),
       ("(global)", f"tacacs-server host 192.0.2.49 vrf MGMT key 7 {CANARY}"),
       ("(global)", f"tacacs-server key {CANARY}"),
       ("(global)", f"radius-server host 192.0.2.1 key 7 {CANARY}"),
       ("(global)", f"ntp authentication-key 1 md5 7 {CANARY}"), ("(global)", f"snmp-server community {CANARY} ro"),
       ("(global)", f"snmp-server user ops g v3 auth sha {CANARY} priv aes {CANARY}"),
       ("(global)", f"snmp-server host 192.0.2.9 version 2c {CANARY}"),
       ("interface Ethernet1", f"ip ospf authentication-key 7 {CANARY}"),
       ("interface Ethernet1", f"ip ospf message-digest-key 1 md5 7 {CANARY}"),
       ("router isis 1", f"isis authentication key 7 {CANARY}")]
FRR = [("router bgp 65101", f"neighbor swp5 password {CANARY}"), ("(global)", f"password {CANARY}"),
       ("(global)", f"enable password {CANARY}"), ("interface swp1", f"ip ospf authentication-key {CANARY}"),
       ("interface swp1", f"ip ospf message-digest-key 1 md5 {CANARY}"), ("key 1", f"key-string {CANARY}"),
       ("interface swp1", f"isis password md5 {CANARY}"), ("router isis 1", f"area-password clear {CANARY}"),
       ("router isis 1", f"domain-password md5 {CANARY}"), ("interface swp1", f"ip rip authentication string {CANARY}")]


def _tree_changes(lines, paths) -> list[Change]:
    out = []
    for p in paths:
        section, shown = lines(p, ("RO" if len(p) == 3 else {}) if CANARY in p else CANARY)
        out += [Change(section=section, op="-", line=ln) for ln in shown]
    return out


CASES = {"sonic": _tree_changes(sonic_lines, [(t, k, f) for t, k, f in SONIC]),
         "nvue": _tree_changes(nvue_lines, NVUE),
         "eos": [Change(section=s, op="-", line=ln) for s, ln in EOS],
         "frr": [Change(section=s, op="-", line=ln) for s, ln in FRR]}


def test_every_nos_names_a_scheme() -> None:
    assert set(NOS) == set(CASES) and {row.secrets for row in NOS.values()} <= set(SECRETS)


@pytest.mark.parametrize("target", sorted(CASES))
def test_every_secret_field_is_masked(target: str) -> None:
    for c in CASES[target]:
        section, line, hit = mask_change(NOS[target].secrets, c.section, c.line)
        assert hit and CANARY not in section + line and MASK in section + line, (c, section, line)
    diff = DeviceDiff(device="sw", target=target, changes=CASES[target])
    assert diff.masked == len(CASES[target]) and CANARY not in json.dumps(diff.sections())


def test_words_masks_after_a_secret_keyword() -> None:
    """The scheme of a NOS whose secret leaves nobody listed: the rest of a line after a secret keyword."""
    assert mask_change("words", "aaa", f"secret: {CANARY}") == ("aaa", f"secret: {MASK}", True)
    assert mask_change("words", f"snmp community {CANARY}", "ro") == (f"snmp community {MASK}", "ro", True)


@pytest.mark.parametrize(("target", "section", "line"), [
    ("sonic", "BGP_NEIGHBOR|default|Ethernet0", "keepalive=3"), ("sonic", "PORT|Ethernet0", "mtu=9216"),
    ("sonic", "BGP_NEIGHBOR|default|Ethernet0", "send_community=true"),
    ("nvue", "vrf default router bgp neighbor swp1 timers", "keepalive: 3"), ("nvue", "system", "hostname: leaf1"),
    ("eos", "router bgp 65101", "neighbor FABRIC send-community"), ("eos", "(global)", "sflow key 1"),
    ("eos", "interface Ethernet1", "mtu 9214"), ("frr", "router bgp 65101", "neighbor swp5 remote-as 65000"),
    ("frr", "router bgp 65101", "timers bgp 3 9")])
def test_plain_settings_are_kept(target: str, section: str, line: str) -> None:
    assert mask_change(NOS[target].secrets, section, line)[:2] == (section, line) or line == "sflow key 1"


# -- plan --running end to end ---------------------------------------------------------------------
def _with_secret(target: str, text: str) -> str:
    if target == "sonic":
        doc = json.loads(text)
        doc["BGP_NEIGHBOR"][next(iter(doc["BGP_NEIGHBOR"]))]["auth_password"] = CANARY
        return json.dumps(doc, indent=2)
    if target == "nvue":
        tree = nvue_running(text)
        neigh = tree["vrf"]["default"]["router"]["bgp"]["neighbor"]
        neigh[next(iter(neigh))]["password"] = CANARY
        return yaml.safe_dump([{"set": tree}])
    m = re.search(r"^(\s+)neighbor (\S+) ", text, re.MULTILINE)
    assert m, target
    extra = f"{m.group(1)}neighbor {m.group(2)} password {'7 ' if target == 'eos' else ''}{CANARY}\n"
    return text[:m.start()] + extra + text[m.start():]


@pytest.mark.parametrize(("inventory", "switch"), [("sonic-example", "leaf-su1-r1"), ("h100-400g", "leaf-su1-r1"),
                                                   ("eos-example", "leaf-su1-r1"), ("example", "leaf-su1-r1")])
@pytest.mark.parametrize("fmt", ["table", "json"])
def test_plan_running_masks_the_bgp_neighbour_password(tmp_path: Path, inventory: str, switch: str, fmt: str,
                                                       capsys: pytest.CaptureFixture[str],
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    inv = ROOT / "inventories" / inventory
    fabric = derive(load(inv))
    sw = fabric.switches[switch]
    nos = NOS[sw.target]
    (tmp_path / f"{switch}{nos.running_suffix}").write_text(
        _with_secret(sw.target, render_switch(sw, fabric)[nos.intended]))
    from fabric.cli import main

    monkeypatch.setattr(sys, "argv", ["fabric", "plan", str(inv), "--running", str(tmp_path), "--limit", switch,
                                      "--format", fmt])
    with pytest.raises(SystemExit) as exc:
        main()
    got = capsys.readouterr()
    assert exc.value.code in (0, 3, None), got.err
    assert CANARY not in got.out + got.err and MASK in got.out, got.out
    if fmt == "json":
        assert json.loads(got.out)["masked_lines"] >= 1
    else:
        assert "secret lines masked" in got.out


# -- the text schemes: a line without a word the patterns need is passed over ------------------------------------
FIXTURES = ROOT / "tests" / "fixtures"
WORDS = ["secret", "password", "key", "snmp-server", "community", "user", "auth", "priv", "host", "version", "2c", "1",
         "7", "0", "5", "8a", "sha512", "md5", "sha1", "authentication-key", "message-digest-key", "key-string",
         "authentication", "string", "enable", "area-password", "domain-password", "clear", "ip", "ospf", "neighbor",
         "10.0.0.1", "ro", "g", "v3", "aes", "x", "Secret", "KEY", "keyed", "passwords", "-", "\t"]


def _real_lines() -> list[str]:
    """The lines of real configs that hold secrets (tests/fixtures/secrets/SOURCE.md) and of the EOS fixtures."""
    texts = [p.read_text() for p in (*sorted((FIXTURES / "secrets").glob("*.c*")),
                                     *sorted((FIXTURES / "running" / "eos").glob("*.cfg")))]
    return [ln.strip() for t in texts for ln in t.splitlines() if ln.strip()]


@pytest.mark.parametrize("scheme", ["eos_cli", "frr_cli"])
def test_text_masking_matches_every_pattern_searched(scheme: str) -> None:
    """Each line of real configs, of the cases above and of word salads of the patterns' own words is masked as
    searching every pattern masked it (tests/oracles/secrets.py), and every pattern masks one of those lines."""
    from hypothesis import given, settings
    from hypothesis import strategies as st

    from tests.oracles import secrets as oracle

    patterns = oracle.PATTERNS[scheme]
    cases = [ln for s, ln in (EOS if scheme == "eos_cli" else FRR)] + [s for s, _ in EOS + FRR]
    lines = _real_lines() + cases
    assert all(any(p.search(ln) for ln in lines) for p in patterns)
    assert sum(mask_change(scheme, "(global)", ln)[2] for ln in _real_lines()) >= 4
    for ln in lines:
        assert mask_change(scheme, ln, ln) == oracle.mask_text(patterns, ln, ln), ln

    @settings(max_examples=3000, deadline=None, derandomize=True)
    @given(st.lists(st.sampled_from(WORDS), max_size=9), st.booleans())
    def same(words: list[str], lead: bool) -> None:
        ln = (" " if lead else "") + " ".join(words)
        assert mask_change(scheme, "(global)", ln) == oracle.mask_text(patterns, "(global)", ln), ln

    same()


def test_a_diff_masks_each_line_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """A plan reads a device's masked lines for its JSON, its table, its digest and its count of masked lines: the
    lines are masked once, the diff still equals and dumps as one that never showed them, and a copy with other
    changes shows its own."""
    import fabric.targets.base as base

    calls: list[str] = []
    real = base.mask_change
    monkeypatch.setattr(base, "mask_change", lambda *a: calls.append(a[2]) or real(*a))
    changes = [*CASES["eos"], Change(section="interface Ethernet1", op="~", old="mtu 9000", line="mtu 9214")]
    diff = DeviceDiff(device="sw", target="eos", changes=changes)
    shown = diff.sections()
    assert (diff.masked, diff.text(), diff.digest, diff.sections()) == (len(CASES["eos"]), diff.text(), diff.digest,
                                                                        shown)
    assert len(calls) == len(changes) + 1  # the changed line's old value too
    assert diff == DeviceDiff(device="sw", target="eos", changes=changes)  # what it keeps is no field
    assert diff.model_dump() == DeviceDiff(device="sw", target="eos", changes=changes).model_dump()
    other = diff.model_copy(update={"changes": changes[-1:]})
    assert other.sections() == {"interface Ethernet1": ["~ mtu 9000 → mtu 9214"]} and other.masked == 0
    assert CANARY not in json.dumps(shown) and diff.masked == len(CASES["eos"])
