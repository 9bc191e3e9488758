"""`mlxconfig -d DEV [-e] q [PARAM…]` output (NVIDIA MFT; `mstconfig` from mstflint prints the same).

The format is mstflint's mlxconfig/mlxcfg_ui.cpp: per device a `Device #N:` block with `Device type:`,
`Name:`, `Description:` and `Device:` lines (printOpening), then a `Configurations:` header naming the
value columns (printConfHeader: `Next Boot` alone, or `Default Current Next Boot` with `-e`), then one
line per parameter (printSingleParam): a `*` when the next-boot value differs from the default/current
one, `RO` for read-only parameters, the name, and one value per column. A value is a number, a word with
its number (`True(1)`, `ETH(2)`), `N/A` or an array summary (`Array[0..7]`).

For SR-IOV the decisive parameters are `SRIOV_EN` and `NUM_OF_VFS`: the firmware offers at most
NUM_OF_VFS VFs per PF (the kernel's `sriov_totalvfs`), and a change takes effect only at the next boot
(or firmware reset), which is why `-e` (the current column) matters.
"""

from __future__ import annotations

import re

from fabric.parsers._common import Model, fail, require_text, show
from fabric.replies import reader

_DEVICE = re.compile(r"^Device #(\d+):\s*$")
_FIELD = re.compile(r"^(Device type|Name|Description|Device):\s*(.*?)\s*$")
_COLUMNS = re.compile(r"Default|Current|Next Boot|New")
_PARAM = re.compile(r"^(?P<diff>[ *])?(?P<ro>RO|  )?\s+"
                    r"(?P<name>[A-Z][A-Z0-9_]*(?:\[\d+(?:\.\.\d+)?\])?)\s+(?P<rest>\S.*)$")
_VALUE = re.compile(r"^(?:[A-Za-z_][\w-]*\((\d+)\)|(\d+)|(0x[0-9a-fA-F]+))$")


class MlxconfigParam(Model):
    """One parameter: the text of each column shown (None when the column was not printed)."""

    name: str
    default: str | None = None
    current: str | None = None
    next_boot: str | None = None
    read_only: bool = False
    modified: bool = False  # the '*' mark: next boot differs from default/current


class MlxconfigDevice(Model):
    index: int
    device_type: str | None = None
    name: str | None = None
    description: str | None = None
    device: str | None = None
    columns: list[str] = []
    params: dict[str, MlxconfigParam] = {}

    def value(self, name: str, column: str = "current") -> int | None:
        """The number behind a value (`True(1)` → 1, `16` → 16, `0x10` → 16); None when absent or N/A.

        `column` is `current`, `next_boot` or `default`; `current` falls back to `next_boot` when mlxconfig
        was run without `-e` (only the next-boot column is printed then)."""
        p = self.params.get(name)
        if p is None:
            return None
        text = getattr(p, column)
        if text is None and column == "current":
            text = p.next_boot
        return config_number(text)


class Mlxconfig(Model):
    devices: list[MlxconfigDevice]


def config_number(text: str | None) -> int | None:
    """`True(1)` → 1, `16` → 16, `0x10` → 16, `N/A`/None/other → None."""
    if text is None:
        return None
    m = _VALUE.match(text.strip())
    if not m:
        return None
    word, dec, hexa = m.groups()
    return int(word or dec) if (word or dec) else int(hexa, 16)


@reader('mlxconfig -d <device> query')
def parse_mlxconfig(text: str, file: str = "-") -> Mlxconfig:
    """Parse `mlxconfig … q` output; lines outside the device blocks (-I-/-W- notes, legends) are ignored."""
    lines = require_text(text, file, "mlxconfig query output")
    devices: list[MlxconfigDevice] = []
    dev: MlxconfigDevice | None = None
    columns: list[str] | None = None
    for lineno, raw in enumerate(lines, 1):
        line = raw.rstrip()
        if m := _DEVICE.match(line.strip()):
            dev = MlxconfigDevice(index=int(m[1]))
            devices.append(dev)
            columns = None
            continue
        if dev is None:
            continue
        if columns is None:
            if line.startswith("Configurations:"):
                columns = [c.lower().replace(" ", "_") for c in _COLUMNS.findall(line[len("Configurations:"):])]
                if not columns:
                    raise fail(file, lineno, "Configurations", "value columns (Next Boot; Default Current Next Boot "
                               "with -e)", show(line))
                dev.columns = columns
            elif m := _FIELD.match(line.strip()):
                setattr(dev, m[1].lower().replace(" ", "_"), m[2] or None)
            continue
        m = _PARAM.match(line)
        if not m or not line.strip() or line.lstrip().startswith(("The ", "-")):
            continue
        values = m["rest"].split()
        if len(values) != len(columns):
            raise fail(file, lineno, m["name"], f"{len(columns)} values ({', '.join(columns)})", show(line))
        fields = dict(zip(columns, values, strict=True))
        fields.pop("new", None)
        dev.params[m["name"]] = MlxconfigParam(name=m["name"], read_only=m["ro"] == "RO", modified=m["diff"] == "*",
                                               **fields)
    if not devices:
        raise fail(file, None, "", "a 'Device #N:' block", "no device in the output")
    for d in devices:
        if not d.columns:
            raise fail(file, None, f"Device #{d.index}", "a 'Configurations:' table", "none (query failed?)")
    return Mlxconfig(devices=devices)
