"""The `fabric` command line (entry point `fabric.cli:main`)."""

from __future__ import annotations

from fabric.fast.batch import gc_paused

# typer, rich and the entry point build tens of thousands of objects (modules, classes, functions) that live as long
# as the process: no cyclic collection while they are imported (main() does the same for the command's modules)
with gc_paused():
    import typer

    from fabric.cli.main import main

__all__ = ["app", "main"]


def __getattr__(name: str) -> typer.Typer:
    """`fabric.cli.app`: the app with every command (tests and embedding); `main` imports only what a run needs."""
    if name == "app":
        from fabric.cli.main import full_app

        return full_app()
    raise AttributeError(name)
