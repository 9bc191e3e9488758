"""The `fabric` command line: one typer app; the commands live in the modules of this package."""

from __future__ import annotations

import ast
import functools
import importlib
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

try:  # typer ≥ 0.20 vendors click
    from typer._click.exceptions import ClickException
except ImportError:  # pragma: no cover
    from click import ClickException

from fabric.errors import InputError, UsageError, printable
from fabric.fast.batch import gc_paused

if TYPE_CHECKING:
    from rich.console import Console

MAX_ERRORS = 200  # problems printed; the rest counted


@functools.cache
def _err() -> Console:
    """The console of error lines, made on the first one: a command that prints through typer alone (the host
    agent) imports no rich."""
    from fabric.cli.console import console

    return console(stderr=True, soft_wrap=True)


def _errors(lines: list[str]) -> None:
    """One `error:` line per problem (each once), at most MAX_ERRORS, then how many more."""
    lines = list(dict.fromkeys(lines))
    for line in lines[:MAX_ERRORS]:
        _err().print(f"error: {line}")
    if len(lines) > MAX_ERRORS:
        _err().print(f"error: … and {len(lines) - MAX_ERRORS} more problems")


def version() -> str:
    """The installed distribution's version (package metadata), else the package's own."""
    from importlib.metadata import PackageNotFoundError
    from importlib.metadata import version as dist_version

    try:
        return dist_version("roce-fabric")
    except PackageNotFoundError:  # running from a source tree that was never installed
        from fabric import __version__

        return __version__


def _print_version(value: bool) -> None:
    if value:
        typer.echo(f"fabric {version()}")
        raise typer.Exit()


def options(
    show_version: Annotated[bool, typer.Option(
        "--version", callback=_print_version, is_eager=True, help="Print the version and exit.")] = False,
    quiet: Annotated[bool, typer.Option(
        "--quiet", "-q", help="No progress display on stderr (it is off anyway when stderr is not a terminal).")
    ] = False,
) -> None:
    """Options for every command; they go before the command name: `fabric -q render …`."""
    if quiet or "fabric.cli.progress" in sys.modules:  # else not imported yet, and not quiet by default (rich)
        from fabric.cli import progress

        progress.configure(quiet=quiet)


def main() -> None:
    """Entry point: user errors become one line each and exit code 2, never a traceback."""
    command = _command_in(sys.argv[1:])
    with gc_paused():  # importing the command's modules builds ~10^5 objects that all stay (see fabric.cli)
        # --help, --version, nothing or an unknown name: the listing, or everything for shell completion
        app = build(command) if command else build(listing="_FABRIC_COMPLETE" not in os.environ,
                                                   helps="--version" not in sys.argv[1:])
    try:
        rc = app(standalone_mode=False, prog_name="fabric")  # returns the code of a typer.Exit in this mode
        sys.exit(rc if isinstance(rc, int) else 0)
    except InputError as exc:
        from fabric.design.derive import semantic_problems

        _errors([str(p) for p in semantic_problems(exc)])
        sys.exit(2)
    except UsageError as exc:
        _errors(str(exc).splitlines())
        sys.exit(2)
    except typer.Exit as exc:
        sys.exit(exc.exit_code)
    except typer.Abort:
        _err().print("aborted")
        sys.exit(1)
    except OSError as exc:  # a path the system refused where no command said more: still one line, no traceback
        if exc.filename is None:
            raise
        _errors([f"{printable(os.fsdecode(exc.filename))}: expected a path that can be used, found "
                 f"{exc.strerror or exc}"])
        sys.exit(2)
    except ClickException as exc:  # usage errors: bad option, missing argument
        exc.show()
        sys.exit(2)


# Every command and command group: its name and `module:attribute` in this package. A run imports only the module of
# the command it runs (the others import the whole model, pydantic and rich); `fabric --help` lists them from their
# docstrings read from source, so it imports none (start-up well under half a second).
COMMANDS: dict[str, str] = {
    "validate": "core:validate", "render": "core:render", "plan": "core:plan", "explain": "core:explain",
    "show": "core:show", "schema": "core:schema", "lint": "lint:lint", "diagnose": "diagnose:diagnose",
    "export": "export:export_command", "accept": "accept:accept", "counters": "accept:counters",
    "apply": "push:apply_command", "rollback": "push:rollback_command", "drain": "drain:drain_command",
    "undrain": "drain:undrain_command", "optics": "optics:optics", "remediate": "remediate:remediate",
    "fetch": "fetch:fetch_command", "parse": "parse:parse", "cabling": "cabling:cabling",
    "discover": "discover:discover", "graph": "graph:graph",
}
GROUPS: dict[str, str] = {"generate": "core:generate_app", "host": "host:host_app", "hosts": "host:hosts_app",
                          "lab": "lab:lab_app"}


def _resolve(spec: str) -> object:
    module, attr = spec.split(":")
    return getattr(importlib.import_module(f"fabric.cli.{module}"), attr)


def _short_help(spec: str) -> str:
    """A command's docstring or a group's `help=`, read from the module's source without importing it."""
    module, attr = spec.split(":")
    tree = ast.parse((Path(__file__).parent / f"{module}.py").read_text(encoding="utf-8"))
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and node.name == attr:
            return ast.get_docstring(node) or ""
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == attr for t in node.targets):
            call = node.value
            if isinstance(call, ast.Call):
                for kw in call.keywords:
                    if kw.arg == "help":
                        return str(ast.literal_eval(kw.value))
    raise LookupError(f"{spec}: no function or typer.Typer(help=…) in fabric/cli/{module}.py")


def _add(target: typer.Typer, name: str) -> None:
    if name in GROUPS:
        target.add_typer(_resolve(GROUPS[name]), name=name)  # type: ignore[arg-type]
    else:
        target.command(name)(_resolve(COMMANDS[name]))  # type: ignore[arg-type]


def build(only: str | None = None, *, listing: bool = False, helps: bool = True) -> typer.Typer:
    """The app with every command (the default), with only the command `only`, or (`listing`) with each command's
    name and short help alone, for `fabric --help` (`helps=False`: the names alone, for `--version`, which exits
    before any help is shown: reading the helps parses every command module's source)."""
    # add_completion: `fabric --install-completion [SHELL]` / `--show-completion [SHELL]` (bash, zsh, fish, pwsh)
    app = typer.Typer(no_args_is_help=True, add_completion=True, pretty_exceptions_enable=False,
                      help="Provision and validate RoCEv2 lossless Ethernet fabrics for GPU clusters.")
    app.callback()(options)
    for name in (COMMANDS | GROUPS) if only is None else [only]:
        if listing:
            app.command(name, help=_short_help((COMMANDS | GROUPS)[name]) if helps else "",
                        add_help_option=False)(lambda: None)
        else:
            _add(app, name)
    return app


@functools.cache
def full_app() -> typer.Typer:
    """The app with every command, built once (`fabric.cli.app`)."""
    return build()


def _command_in(argv: list[str]) -> str | None:
    """The command a command line runs (after the global options), if it names one."""
    for arg in argv:
        if arg in ("-q", "--quiet"):
            continue
        return arg if arg in COMMANDS or arg in GROUPS else None
    return None
