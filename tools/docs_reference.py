"""The docs' reference pages, made from the code so that they cannot fall behind it:

- docs/reference/inventory.md from the inventory's JSON Schema (`fabric schema`): every key of every section with
  its type, default and description; a key without a description is an error, so none goes undocumented;
- docs/reference/lint-rules.md from the lint rule catalog (id, severity, what it checks, the fix);
- docs/reference/checks.md from the acceptance check registry (name, tags, phase, what it judges, its inputs).

`python tools/docs_reference.py` writes them; `--check` writes nothing and exits 1 naming each page that differs
(`make docs` and tests/docs/test_docs.py run it).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "docs" / "reference"
HEADER = "<!-- made by tools/docs_reference.py from the code: edit the code, then run it -->\n\n"


class Undocumented(Exception):
    """Keys of the inventory schema without a description."""


def _type(prop: dict[str, Any], defs: dict[str, Any]) -> str:
    """A JSON Schema property as a short type for people."""
    if "$ref" in prop:
        return defs[prop["$ref"].rsplit("/", 1)[1]].get("title", "object")
    if "enum" in prop:
        return " \\| ".join(f"`{v}`" for v in prop["enum"])
    if "const" in prop:
        return f"`{prop['const']}`"
    if "anyOf" in prop:
        kinds = [_type(p, defs) for p in prop["anyOf"] if p.get("type") != "null"]
        return " or ".join(dict.fromkeys(kinds))
    kind = prop.get("type", "any")
    if kind == "array":
        return f"list of {_type(prop.get('items', {}), defs)}"
    if kind == "object" and isinstance(prop.get("additionalProperties"), dict):
        return f"map to {_type(prop['additionalProperties'], defs)}"
    bounds = [f"≥ {prop['minimum']}" if "minimum" in prop else "", f"≤ {prop['maximum']}" if "maximum" in prop else ""]
    bounds = [b for b in bounds if b]
    return kind + (f" ({', '.join(bounds)})" if bounds else "")


def _object(prop: dict[str, Any], defs: dict[str, Any]) -> dict[str, Any] | None:
    """The definition a property's value is an object of (directly, optional or as list items), if any."""
    for p in [prop, *prop.get("anyOf", []), prop.get("items", {})]:
        if "$ref" in p:
            target = defs[p["$ref"].rsplit("/", 1)[1]]
            if "properties" in target:
                return target
        if p.get("type") == "array" and "$ref" in p.get("items", {}):
            return _object(p["items"], defs)
    return None


def _rows(obj: dict[str, Any], defs: dict[str, Any], prefix: str, missing: list[str]) -> list[str]:
    rows = []
    for key, prop in obj.get("properties", {}).items():
        path = f"{prefix}{key}"
        desc = prop.get("description", "")
        if not desc:
            missing.append(path)
        value = prop.get("default")
        shown = value not in (None, {}, []) and not (isinstance(value, dict) and not any(value.values()))
        default = f"`{json.dumps(value)}`" if shown else ""
        child = _object(prop, defs)
        values = prop.get("additionalProperties", {})
        if child is None and "$ref" in values:  # a map whose values are objects: qos.ecn.<tc>.min_bytes
            rows.append(f"| `{path}` | map | {default} | {_escape(desc)} |")
            rows += _rows(defs[values["$ref"].rsplit("/", 1)[1]], defs, f"{path}.<key>.", missing)
            continue
        if child is not None:
            is_list = prop.get("type") == "array" or any(p.get("type") == "array" for p in prop.get("anyOf", []))
            rows.append(f"| `{path}` | {'list of objects' if is_list else 'object'} | {default} | {_escape(desc)} |")
            rows += _rows(child, defs, f"{path}[]." if is_list else f"{path}.", missing)
        else:
            rows.append(f"| `{path}` | {_type(prop, defs)} | {default} | {_escape(desc)} |")
    return rows


def _escape(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def inventory_page() -> str:
    from fabric.model.schema import inventory_schema

    schema = inventory_schema()
    defs = schema["$defs"]
    missing: list[str] = []
    out = [HEADER + "# Inventory keys\n",
           "Every key an inventory file may hold, made from the schema that `fabric schema` prints (point an editor's "
           "YAML language server at it for completion). The sections, how they combine and the QoS presets are "
           "explained in [the inventory reference](../inventory.md). Unknown keys are errors.\n"]
    for section in sorted(schema["properties"]):
        prop = schema["properties"][section]
        obj = _object(prop, defs)
        out.append(f"## `{section}`\n")
        if obj is not None and obj.get("description"):
            out.append(_escape(obj["description"]) + "\n")
        out.append("| key | type | default | description |\n| --- | --- | --- | --- |")
        if obj is None:
            out.append(f"| `{section}` | {_type(prop, defs)} | | {_escape(prop.get('description', ''))} |")
        else:
            is_list = prop.get("type") == "array"
            out += _rows(obj, defs, f"{section}[]." if is_list else f"{section}.", missing)
        out.append("")
    if missing:
        raise Undocumented(", ".join(missing))
    return "\n".join(out)


def lint_page() -> str:
    from fabric.lint.output import rule_markdown
    from fabric.lint.rules import all_rules

    out = [HEADER + "# Lint rules\n",
           "Every rule `fabric lint` runs (`fabric lint --list`; `fabric lint --explain RFnnn` prints one). Rules "
           "marked `--configs` also judge saved device configs. How to run, waive and read them: [Lint](../lint.md).\n",
           rule_markdown()]
    for rule in all_rules():
        configs = " · also on `--configs`" if rule.configs else ""
        out.append(f"## {rule.id}: {rule.title}\n\n*{rule.severity.value}*{configs}\n\n{rule.explanation}\n\n"
                   f"**Fix:** {rule.fix}\n")
    return "\n".join(out)


def checks_page() -> str:
    from fabric.accept.checks import CHECKS

    out = [HEADER + "# Acceptance checks\n",
           "Every check `fabric accept` can run, in the default catalog's order (`fabric accept INV --dump-catalog` "
           "prints the catalog; `--catalog FILE` runs your own with other inputs). How runs are scheduled and "
           "reported: [Acceptance](../acceptance.md).\n"]
    for name, check in CHECKS.items():
        doc = " ".join((check.__doc__ or "").split())
        out.append(f"## `{name}`\n\n{doc}\n\nphase `{check.phase}` · tags {', '.join(f'`{t}`' for t in check.tags)}\n")
        fields = check.Input.model_json_schema()
        props = fields.get("properties", {})
        if props:
            out.append("| input | type | default | description |\n| --- | --- | --- | --- |")
            for key, prop in props.items():
                default = f"`{json.dumps(prop['default'])}`" if "default" in prop else "required"
                out.append(f"| `{key}` | {_type(prop, fields.get('$defs', {}))} | {default} | "
                           f"{_escape(prop.get('description', ''))} |")
            out.append("")
    return "\n".join(out)


PAGES = {"inventory.md": inventory_page, "lint-rules.md": lint_page, "checks.md": checks_page}


def main(argv: list[str]) -> int:
    check = "--check" in argv
    stale = []
    for name, make in PAGES.items():
        try:
            text = make()
        except Undocumented as exc:
            print(f"docs_reference: inventory keys without a description: {exc}", file=sys.stderr)
            return 1
        path = OUT / name
        if check:
            if not path.exists() or path.read_text() != text:
                stale.append(str(path.relative_to(ROOT)))
        else:
            OUT.mkdir(parents=True, exist_ok=True)
            path.write_text(text)
    if stale:
        print(f"docs_reference: out of date, run python tools/docs_reference.py: {', '.join(stale)}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
