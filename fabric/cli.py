"""The `fabric` command line: one typer app, sub-apps per capability."""

from __future__ import annotations

import sys

import typer
from rich.console import Console

from fabric.errors import InputError, UsageError

app = typer.Typer(no_args_is_help=True, add_completion=False, pretty_exceptions_enable=False,
                  help="Provision and validate RoCEv2 lossless Ethernet fabrics for GPU clusters.")
err = Console(stderr=True, highlight=False, soft_wrap=True)


def main() -> None:
    """Entry point: user errors become one line each and exit code 2, never a traceback."""
    try:
        app(standalone_mode=False)
    except (InputError, UsageError) as exc:
        for line in str(exc).splitlines():
            err.print(f"error: {line}", markup=False)
        sys.exit(2)
    except typer.Exit as exc:
        sys.exit(exc.exit_code)
    except typer.Abort:
        err.print("aborted")
        sys.exit(1)
    except Exception as exc:  # click usage errors
        import click

        if isinstance(exc, click.ClickException):
            exc.show()
            sys.exit(2)
        raise


from fabric.accept.parse_cli import parse as _parse; app.command("parse")(_parse)  # noqa: E402, E702, I001
