"""buffermgrd on SONiC's traditional buffer model, as a function over a CONFIG_DB (sonic-swss cfgmgr/buffermgr.cpp).

`speed_update(config_db, lookup)` does what `BufferMgr::doSpeedUpdateTask` does for every port, as buffermgrd runs it
for each port when it starts and again when a port's PORT `speed`/`admin_status`, its CABLE_LENGTH or its
PORT_QOS_MAP `pfc_enable` changes (`BufferMgr::doTask`, `doCableTask`, `doPortQosTableTask`), step for step:

- nothing on the dynamic model (`doTask` handles only DEVICE_METADATA while `buffer_model` is `dynamic`);
- a port without a cable length (`CABLE_LENGTH`, every key's fields; `None` is not cached), with `0m`, without
  a `speed`, or without `pfc_enable` in PORT_QOS_MAP is left alone;
- the profile is `pg_lossless_<PORT speed>_<CABLE_LENGTH>_profile`; its PGs are the `pfc_enable` priorities as
  contiguous ranges (`Orch::generateIdListFromMap`: `3,4` → `3-4`);
- a port whose `admin_status` is not `up` (absent counts as down) on Mellanox/Barefoot: each of those PG keys that
  points at that profile is deleted, any other profile kept;
- no row for (speed, cable) in pg_profile_lookup.ini: nothing (`task_invalid_entry`);
- the profile is created from the row (pool `ingress_lossless_pool`, xon, [xon_offset], xoff, size,
  `<mode of BUFFER_POOL|ingress_lossless_pool>_th` = threshold) only when CONFIG_DB lacks it (an existing profile
  of that name is reused, never rewritten); without that pool's `mode`, nothing;
- each PG key is set to `profile=<that name>` unless it already names it, over any other profile.

`read_lookup(text)` is `BufferMgr::readPgProfileLookupFile`: `speed cable size xon xoff threshold [xon_offset]`,
lines starting with `#` and empty lines skipped.
"""

from __future__ import annotations

import copy
from typing import Any

POOL = "ingress_lossless_pool"  # INGRESS_LOSSLESS_PG_POOL_NAME, cfgmgr/buffermgr.h
Lookup = dict[tuple[str, str], dict[str, str]]


def read_lookup(text: str) -> Lookup:
    out: Lookup = {}
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        cols = line.split()
        if len(cols) < 6:
            continue
        speed, cable, size, xon, xoff, threshold = cols[:6]
        out[(speed, cable)] = {"size": size, "xon": xon, "xoff": xoff, "threshold": threshold,
                               "xon_offset": cols[6] if len(cols) > 6 else ""}
    return out


def _pg_ranges(pfc_enable: str) -> list[str]:
    """`3,4` → ["3-4"]; `0,3,4,6` → ["0", "3-4", "6"] (generateIdListFromMap); a token that is not a number skipped."""
    ids = sorted({int(t) for t in pfc_enable.split(",") if t.strip().isdigit()})
    out: list[str] = []
    for i in ids:
        if out and int(out[-1].rpartition("-")[2]) == i - 1:
            out[-1] = f"{out[-1].partition('-')[0]}-{i}"
        else:
            out.append(str(i))
    return out


def _cables(db: dict[str, Any]) -> dict[str, str]:
    return {port: cable for fields in db.get("CABLE_LENGTH", {}).values() for port, cable in (fields or {}).items()
            if cable != "None"}


def speed_update(config_db: dict[str, Any], lookup: Lookup, vendor: str = "mellanox") -> dict[str, Any]:
    """CONFIG_DB after doSpeedUpdateTask has run for every port (module docstring); the input is not changed."""
    db = copy.deepcopy(config_db)
    if db.get("DEVICE_METADATA", {}).get("localhost", {}).get("buffer_model") == "dynamic":
        return db
    cables = _cables(db)
    for port, entry in sorted(db.get("PORT", {}).items()):
        cable, speed = cables.get(port), (entry or {}).get("speed")
        pfc = (db.get("PORT_QOS_MAP", {}).get(port) or {}).get("pfc_enable")
        if cable is None or cable == "0m" or speed is None or pfc is None:
            continue
        name = f"pg_lossless_{speed}_{cable}_profile"
        pgs = db.setdefault("BUFFER_PG", {})
        keys = [f"{port}|{r}" for r in _pg_ranges(pfc)]
        if entry.get("admin_status", "down") != "up" and vendor in ("mellanox", "barefoot"):
            for key in keys:
                if (pgs.get(key) or {}).get("profile") == name:
                    del pgs[key]
            continue
        row = lookup.get((speed, cable))
        if row is None:
            continue
        profiles = db.setdefault("BUFFER_PROFILE", {})
        if name not in profiles:
            mode = (db.get("BUFFER_POOL", {}).get(POOL) or {}).get("mode")
            if not mode:
                continue
            prof = {"pool": POOL, "xon": row["xon"]}
            if row["xon_offset"]:
                prof["xon_offset"] = row["xon_offset"]
            profiles[name] = {**prof, "xoff": row["xoff"], "size": row["size"], f"{mode}_th": row["threshold"]}
        for key in keys:
            if (pgs.get(key) or {}).get("profile") != name:
                pgs[key] = {"profile": name}
    return db
