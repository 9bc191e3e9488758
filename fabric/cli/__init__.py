"""The `fabric` command line (entry point `fabric.cli:main`)."""

from fabric.cli.main import app, main

__all__ = ["app", "main"]
