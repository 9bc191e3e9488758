"""Reading one user file (an inventory's YAML, a saved running configuration, a host.json) within the input
limits. Apart from the YAML loader (`fabric.model.source`): the host agent reads its host.json with it and imports
neither PyYAML nor the loader."""

from __future__ import annotations

import stat
from pathlib import Path

from fabric.errors import InputError, Problem
from fabric.model.limits import MAX_BYTES

_KINDS = {stat.S_IFIFO: "a FIFO", stat.S_IFCHR: "a character device", stat.S_IFBLK: "a block device",
          stat.S_IFSOCK: "a socket", stat.S_IFDIR: "a directory"}


def read_user_file(path: Path, what: str, limit: int = MAX_BYTES) -> str:
    """The text of a user file: a regular file (never a FIFO or /dev/zero), at most `limit` bytes, UTF-8."""
    try:
        st = path.stat()
        if not stat.S_ISREG(st.st_mode):
            raise InputError(Problem(str(path), None, "", what, _KINDS.get(stat.S_IFMT(st.st_mode), "no regular file")))
        if st.st_size > limit:
            raise InputError(Problem(str(path), None, "", f"{what} of at most {limit // 2**20} MiB",
                                     f"{st.st_size / 2**20:.1f} MiB"))
        with path.open("rb") as fh:
            data = fh.read(limit + 1)
        if len(data) > limit:
            raise InputError(Problem(str(path), None, "", f"{what} of at most {limit // 2**20} MiB", "more"))
        return data.decode()
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise InputError(Problem(str(path), line, "", f"{what} in UTF-8", f"byte 0x{data[exc.start]:02x}")) from None
    except OSError as exc:
        raise InputError(Problem(str(path), None, "", what, exc.strerror or str(exc))) from None
