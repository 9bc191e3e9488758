"""The `fabric` command line: one typer app; the commands live in the modules of this package."""

from __future__ import annotations

import sys
from typing import Annotated

import typer

try:  # typer ≥ 0.20 vendors click
    from typer._click.exceptions import ClickException
except ImportError:  # pragma: no cover
    from click import ClickException

from fabric.cli import (
    accept,
    core,
    diagnose,
    drain,
    export,
    fetch,
    host,
    lab,
    lint,
    optics,
    parse,
    progress,
    push,
    remediate,
)
from fabric.cli.console import console
from fabric.errors import InputError, UsageError

# add_completion: `fabric --install-completion [SHELL]` / `--show-completion [SHELL]` (bash, zsh, fish, pwsh)
app = typer.Typer(no_args_is_help=True, add_completion=True, pretty_exceptions_enable=False,
                  help="Provision and validate RoCEv2 lossless Ethernet fabrics for GPU clusters.")
err = console(stderr=True, soft_wrap=True)
MAX_ERRORS = 200  # problems printed; the rest counted


def _errors(lines: list[str]) -> None:
    """One `error:` line per problem (each once), at most MAX_ERRORS, then how many more."""
    lines = list(dict.fromkeys(lines))
    for line in lines[:MAX_ERRORS]:
        err.print(f"error: {line}")
    if len(lines) > MAX_ERRORS:
        err.print(f"error: … and {len(lines) - MAX_ERRORS} more problems")


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


@app.callback()
def options(
    show_version: Annotated[bool, typer.Option(
        "--version", callback=_print_version, is_eager=True, help="Print the version and exit.")] = False,
    quiet: Annotated[bool, typer.Option(
        "--quiet", "-q", help="No progress display on stderr (it is off anyway when stderr is not a terminal).")
    ] = False,
) -> None:
    """Options for every command; they go before the command name: `fabric -q render …`."""
    progress.configure(quiet=quiet)


def main() -> None:
    """Entry point: user errors become one line each and exit code 2, never a traceback."""
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
        err.print("aborted")
        sys.exit(1)
    except ClickException as exc:  # usage errors: bad option, missing argument
        exc.show()
        sys.exit(2)


def _register() -> None:
    generate = typer.Typer(help="Write a complete inventory from a few numbers.", no_args_is_help=True)
    generate.command("gpu-rail")(core.generate_gpu_rail)
    for name, command in (("validate", core.validate), ("render", core.render), ("plan", core.plan),
                          ("explain", core.explain), ("show", core.show), ("schema", core.schema), ("lint", lint.lint),
                          ("diagnose", diagnose.diagnose), ("export", export.export_command),
                          ("accept", accept.accept), ("counters", accept.counters), ("apply", push.apply_command),
                          ("rollback", push.rollback_command), ("drain", drain.drain_command),
                          ("undrain", drain.undrain_command), ("optics", optics.optics),
                          ("remediate", remediate.remediate), ("fetch", fetch.fetch_command)):
        app.command(name)(command)
    app.add_typer(generate, name="generate")
    app.add_typer(parse.app)
    app.add_typer(host.host_app, name="host")
    app.add_typer(host.hosts_app, name="hosts")
    app.add_typer(lab.lab_app, name="lab")


_register()
