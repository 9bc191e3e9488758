"""The Jinja environment the renderers share and the type of a render (file name → text).

Its own module so that `fabric.render.host` and the NOS renderers use it without importing `fabric.render`,
which imports them (no import loop)."""

from __future__ import annotations

import json
import shlex
from functools import cache, lru_cache
from importlib import resources
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import jinja2

Files = dict[str, str]
TEMPLATES = resources.files("fabric") / "templates"  # package data: the repository's templates/, shipped


@cache
def env() -> jinja2.Environment:
    """The environment, built on the first template rendered: SONiC and NVUE configs use none, so a push to them
    imports no Jinja (about 0.02 CPU-s)."""
    import jinja2

    # auto_reload off: the templates are package data, and checking each one's mtime on every use was a stat
    # call per rendered file (8,192 at 32k GPUs)
    e = jinja2.Environment(loader=jinja2.PackageLoader("fabric", "templates"), undefined=jinja2.StrictUndefined,
                           keep_trailing_newline=True, trim_blocks=True, lstrip_blocks=True, autoescape=False,
                           auto_reload=False)
    e.filters["tojson_sorted"] = lambda v: json.dumps(v, sort_keys=True)
    e.filters["sh"] = sh  # every user-derived word a shell template interpolates
    return e


@lru_cache(maxsize=65536, typed=True)  # the same interface names and sysctls recur on every host
def sh(v: object) -> str:
    """A word quoted for the shell (the templates' `sh` filter)."""
    return shlex.quote(str(v))


def template(name: str, **context: Any) -> str:
    return env().get_template(name).render(**context)


def dot_id(name: str) -> str:
    """`name` as a quoted DOT identifier (graphviz's language: a double-quoted string, `\\"` its only escape; a
    backslash is doubled so that no `\\N`/`\\G` escape of graphviz's labels reaches a name)."""
    return '"' + name.replace("\\", "\\\\").replace('"', '\\"').replace("\n", " ") + '"'
