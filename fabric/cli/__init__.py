"""The `fabric` command line (entry point `fabric.cli:main`)."""

from __future__ import annotations

import typer

from fabric.cli.main import main

__all__ = ["app", "main"]


def __getattr__(name: str) -> typer.Typer:
    """`fabric.cli.app`: the app with every command (tests and embedding); `main` imports only what a run needs."""
    if name == "app":
        from fabric.cli.main import full_app

        return full_app()
    raise AttributeError(name)
