"""GID tables: `show_gids` (mlnx-tools) and the GID lines of `ibv_devinfo -v`."""

from __future__ import annotations

import ipaddress
import re
from typing import Literal

from fabric.parsers._common import CUT, Model, Skipped, fail, require_text, show, unterminated
from fabric.replies import reader

_ROWLIKE = re.compile(r"^\S+\s+\d+\s+\d+\s+\S")
_GID_FULL = re.compile(r"^[0-9a-fA-F]{4}(?::[0-9a-fA-F]{4}){7}$")
_IPV4 = re.compile(r"^\d{1,3}(?:\.\d{1,3}){3}$")
_VER = re.compile(r"^[vV]\d$")
_DEVINFO_GID = re.compile(r"^\s*GID\[\s*(\d+)\]:\s*(\S+?)(?:,\s*(.*?))?\s*$")


class GidRow(Model):
    """One GID: `version` is 'v1'/'v2' (RoCE), `ipv4` set for IPv4-mapped GIDs, `ndev` the netdev."""

    dev: str | None = None
    port: int | None = None
    index: int
    gid: str
    ipv4: str | None = None
    version: str | None = None
    ndev: str | None = None


class GidTable(Model):
    """A GID table; `n_gids_found` is show_gids' own count (compare with len(rows) to spot truncation)."""

    source: Literal["show_gids", "ibv_devinfo"]
    rows: list[GidRow]
    n_gids_found: int | None = None
    skipped: list[Skipped] = []


def gid_index_for(
    table: GidTable, ipv4: str, version: str = "v2", dev: str | None = None, port: int | None = None
) -> int | None:
    """The GID index carrying `ipv4` with RoCE `version` (optionally on `dev`/`port`), or None."""
    for row in table.rows:
        if (
            row.ipv4 == ipv4
            and (row.version or "").lower() == version.lower()
            and dev in (None, row.dev)
            and port in (None, row.port)
        ):
            return row.index
    return None


def _mapped_ipv4(gid: str) -> str | None:
    """IPv4 address of an IPv4-mapped GID ('::ffff:1.2.3.4' or '0000:…:ffff:c0a8:d3f2'), else None."""
    try:
        return str(ipaddress.IPv6Address(gid).ipv4_mapped or "") or None
    except ValueError:
        return None


@reader('show_gids')
def parse_show_gids(text: str, file: str = "-") -> GidTable:
    """Parse `show_gids` output (TAB or space separated; IPv4 and DEV columns may be empty).

    `ibv_devinfo -v` output is recognised (GID[ n]: lines) and handed to parse_ibv_devinfo_gids.
    """
    lines = require_text(text, file, "show_gids output")
    if any(_DEVINFO_GID.match(line) for line in lines):
        return parse_ibv_devinfo_gids(text, file)
    rows: list[GidRow] = []
    skipped: list[Skipped] = []
    count = None
    for lineno, raw in enumerate(lines, 1):
        line = raw.strip()
        if (m := re.match(r"^n_gids_found=(\d+)$", line)) and lineno != unterminated(text, lines):
            count = int(m[1])
            continue
        if not _ROWLIKE.match(line):
            continue
        if lineno == unterminated(text, lines):
            skipped.append(Skipped(line=lineno, text=line, reason=CUT))
            continue
        tokens = line.split()
        dev, port, index, gid, rest = tokens[0], int(tokens[1]), int(tokens[2]), tokens[3], tokens[4:]
        if not _GID_FULL.match(gid):
            skipped.append(
                Skipped(line=lineno, text=line, reason=f"GID {gid!r} is not 8 groups of 4 hex digits")
            )
            continue
        ipv4 = rest.pop(0) if rest and _IPV4.match(rest[0]) else None
        version = rest.pop(0) if rest and _VER.match(rest[0]) else None
        ndev = rest.pop(0) if rest else None
        if rest:
            skipped.append(Skipped(line=lineno, text=line, reason=f"extra fields {rest}"))
            continue
        rows.append(GidRow(dev=dev, port=port, index=index, gid=gid, ipv4=ipv4, version=version, ndev=ndev))
    if not rows and count is None:
        first = skipped[0].line if skipped else None
        raise fail(
            file,
            first,
            "show_gids",
            "show_gids rows 'DEV PORT INDEX GID [IPv4] VER DEV' or 'n_gids_found=N'",
            f"{skipped[0].reason} in {show(skipped[0].text)}"
            if skipped
            else f"neither in {len(lines)} lines",
        )
    return GidTable(source="show_gids", rows=rows, n_gids_found=count, skipped=skipped)


@reader('ibv_devinfo -v')
def parse_ibv_devinfo_gids(text: str, file: str = "-") -> GidTable:
    """Parse the `GID[ n]:` lines of `ibv_devinfo -v` (device from `hca_id:`, port from `port:` lines)."""
    lines = require_text(text, file, "ibv_devinfo -v output")
    rows: list[GidRow] = []
    skipped: list[Skipped] = []
    dev: str | None = None
    port: int | None = None
    for lineno, raw in enumerate(lines, 1):
        if m := re.match(r"^\s*hca_id:\s*(\S+)", raw):
            dev, port = m[1], None
        elif m := re.match(r"^\s*port:\s*(\d+)\s*$", raw):
            port = int(m[1])
        elif m := _DEVINFO_GID.match(raw):
            gid, kind = m[2], m[3] or ""
            if lineno == unterminated(text, lines):
                skipped.append(Skipped(line=lineno, text=raw.strip(), reason=CUT))
                continue
            try:
                ipaddress.IPv6Address(gid)
            except ValueError:
                skipped.append(
                    Skipped(line=lineno, text=raw.strip(), reason=f"GID {gid!r} is not in IPv6 form")
                )
                continue
            version = re.search(r"v(\d)\s*$", kind)
            rows.append(
                GidRow(
                    dev=dev,
                    port=port,
                    index=int(m[1]),
                    gid=gid,
                    ipv4=_mapped_ipv4(gid),
                    version=f"v{version[1]}" if version else None,
                )
            )
    if not rows:
        first = skipped[0] if skipped else None
        raise fail(
            file,
            first.line if first else None,
            "ibv_devinfo.gid",
            "'GID[ n]: <gid>[, RoCE vN]' lines",
            f"{first.reason} in {show(first.text)}" if first else f"none in {len(lines)} lines",
        )
    return GidTable(source="ibv_devinfo", rows=rows, skipped=skipped)
