"""The JSON Schema of one inventory file: what `fabric schema` prints and the docs' field reference is made from."""

from __future__ import annotations

from typing import Any

from fabric.model.inventory import Inventory
from fabric.model.platforms import PLATFORMS
from fabric.model.qos import PRESETS, QosPolicy


def inventory_schema() -> dict[str, Any]:
    """An inventory is split across files, so no section is required in any one of them (`fabric validate`
    checks that the inventory as a whole has them); platforms, targets and presets are enums."""
    doc = Inventory.model_json_schema()
    doc["description"] = ("One file of an inventory directory: each top-level section appears in one file; "
                          f"together they must hold {', '.join(doc.pop('required', []))}.")
    for name in ("RoleSettings", "SwitchDef"):
        prop = doc["$defs"][name]["properties"]["platform"]
        for branch in prop.get("anyOf", [prop]):
            if branch.get("type") == "string":
                branch["enum"] = sorted(PLATFORMS)
    qos = QosPolicy.model_json_schema()
    for part in qos.get("$defs", {}).values():  # overrides name single values: nothing is required
        part.pop("required", None)
    doc.setdefault("$defs", {}).update(qos.pop("$defs", {}))
    qos.pop("required", None)
    qos["properties"]["preset"] = {
        "enum": list(PRESETS), "default": "nvidia-roce",
        "description": "the preset the policy starts from; every other key overrides one value"}
    doc["$defs"]["QosInput"] = qos
    doc["properties"]["qos"] = {"$ref": "#/$defs/QosInput"}
    return doc
