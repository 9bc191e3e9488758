"""Render EOS configs with Arista's pyavd; runs ONLY inside the side venv `.refs/avd-venv` (never imported).

stdin: JSON `{"<fabric>": {"inputs": <eos_designs inputs shared by all devices>, "types": {"<device>": "spine" |
"l3leaf"}, "requested_mtu": <the inventory's MTU>}}`.
stdout: one JSON line `{"pyavd": version, "l3_mtu": {"<fabric>": int}, "configs": {"<fabric>": {"<device>": "<EOS
CLI>"}}}`. Exit 2 with the violations on stderr when pyavd refuses the inputs.

The string `PLATFORM_L3_MTU` anywhere in the inputs is replaced by min(requested_mtu, the L3 MTU that AVD itself
picks for the platform: `platform_settings[].p2p_uplinks_mtu`, else the `p2p_uplinks_mtu` default). AVD has no
per-platform default for SVIs and access ports, so the test borrows its fabric-link value for them.
Pipeline per fabric: `validate_inputs` per device → `get_avd_facts` → `get_device_structured_config` →
`get_device_config` (pyavd 6.4 public API).
"""

from __future__ import annotations

import copy
import json
import sys
from typing import Any

import pyavd
from pyavd.api.schemas import AVDDesign

SENTINEL = "PLATFORM_L3_MTU"


def avd_l3_mtu(platform: str) -> int:
    """AVD's uplink MTU for a platform, from its built-in platform_settings (eos_designs defaults)."""
    design = AVDDesign._from_dict(pyavd.validate_inputs({"type": "spine", "fabric_name": "DEFAULTS"}).validated_data)
    for settings in design.platform_settings:
        if platform in settings.platforms and settings.p2p_uplinks_mtu is not None:
            return int(settings.p2p_uplinks_mtu)
    return int(design.p2p_uplinks_mtu)


def fill(value: Any, mtu: int) -> Any:
    if value == SENTINEL:
        return mtu
    if isinstance(value, dict):
        return {k: fill(v, mtu) for k, v in value.items()}
    if isinstance(value, list):
        return [fill(v, mtu) for v in value]
    return value


def render(inputs: dict[str, Any], types: dict[str, str], requested_mtu: int) -> tuple[int, dict[str, str]]:
    platforms = {inputs[t]["defaults"]["platform"] for t in ("spine", "l3leaf")}
    if len(platforms) != 1:
        sys.exit(f"one platform per fabric expected, got {sorted(platforms)}")
    mtu = min(requested_mtu, avd_l3_mtu(platforms.pop()))
    inputs = fill(inputs, mtu)
    validated: dict[str, dict[str, Any]] = {}
    problems: list[str] = []
    for device, node_type in types.items():
        result = pyavd.validate_inputs({**copy.deepcopy(inputs), "type": node_type})
        vr = result.validation_result
        problems += [f"{device}: {'.'.join(map(str, v.path))}: {v.message}" for v in vr.violations]
        problems += [f"{device}: {'.'.join(map(str, k.path))}: ignored eos_cli_config_gen key"
                     for k in vr.ignored_eos_config_keys]
        validated[device] = result.validated_data
    if problems:
        print("pyavd refused the inputs:\n  " + "\n  ".join(problems[:40]), file=sys.stderr)
        sys.exit(2)
    facts = pyavd.get_avd_facts({d: AVDDesign._from_dict(copy.deepcopy(v)) for d, v in validated.items()})
    configs = {}
    for device, data in validated.items():
        structured = pyavd.get_device_structured_config(device, AVDDesign._from_dict(copy.deepcopy(data)), facts)
        configs[device] = pyavd.get_device_config(structured)
    return mtu, configs


def main() -> None:
    request = json.load(sys.stdin)
    out: dict[str, Any] = {"pyavd": pyavd.__version__, "l3_mtu": {}, "configs": {}}
    for fabric, spec in request.items():
        out["l3_mtu"][fabric], out["configs"][fabric] = render(spec["inputs"], spec["types"], spec["requested_mtu"])
    print(json.dumps(out))


if __name__ == "__main__":
    main()
