"""Progress on stderr for work that takes a while — one mechanism for render, lint, plan, apply, accept and
the host fleet.

The display (rich) shows a spinner, what is being done, a count where there is one, and the elapsed time,
plus one line per device in flight for the commands that reach devices. It appears only

- when stderr is a terminal (never in pipes, files or CI logs),
- when the user did not ask for quiet (`fabric -q …` / `--quiet`),
- and once the work has run for `DELAY` seconds (2; the environment variable FABRIC_PROGRESS_DELAY sets
  another, the tests use 0): quick commands print nothing extra.

It is transient (gone when the work ends), goes to stderr only and never captures stdout, so stdout stays
machine-readable. Lines that are results rather than progress (a host's outcome in a fleet run) go through
`Tracker.print`, which always prints them, above the display when there is one.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from rich.console import Console
from rich.text import Text

from fabric.cli.console import console

if TYPE_CHECKING:
    from rich.progress import Progress, TaskID

DELAY = float(os.environ.get("FABRIC_PROGRESS_DELAY", "2"))  # seconds of work before the display appears
_state = {"quiet": False}


def _display(console: Console) -> Progress:
    """The display (rich.progress, imported only where a display may appear: a terminal)."""
    from rich.console import RenderableType
    from rich.progress import BarColumn, Progress, ProgressColumn, SpinnerColumn, Task, TextColumn, TimeElapsedColumn

    class _Bar(BarColumn):
        """A bar for counted work only (a stage without a total, or a device, shows none)."""

        def render(self, task: Task) -> RenderableType:
            return super().render(task) if task.total is not None else Text("")

    class _Count(ProgressColumn):
        def render(self, task: Task) -> Text:
            return Text(f"{task.completed:.0f}/{task.total:.0f}" if task.total is not None else "")

    return Progress(
        SpinnerColumn(), TextColumn("{task.description}", markup=False), _Bar(bar_width=24), _Count(),
        TimeElapsedColumn(), console=console, transient=True, redirect_stdout=False, redirect_stderr=False)


def configure(*, quiet: bool) -> None:
    """Set by the global options (`fabric -q`)."""
    _state["quiet"] = quiet


def stderr_console() -> Console:
    return console(stderr=True)


def enabled(console: Console) -> bool:
    """Whether a display may appear on `console`: a real terminal (FORCE_COLOR alone is not one), no --quiet."""
    isatty = getattr(console.file, "isatty", None)
    return not _state["quiet"] and console.is_terminal and bool(isatty and isatty())


class Tracker:
    """What a command reports while it works: stages of its main task, counts, and devices in flight."""

    def __init__(self, description: str, total: int | None, console: Console, delay: float) -> None:
        self.console = console
        self.enabled = enabled(console)
        # no display possible (not a terminal, --quiet): nothing to keep, every report a no-op
        self._progress: Progress | None = _display(console) if self.enabled else None
        self._main = self._progress.add_task(description, total=total) if self._progress is not None else None
        self._items: dict[str, TaskID] = {}
        self._lock = threading.Lock()
        self._started = self._closed = False
        self._timer: threading.Timer | None = None
        if self.enabled:
            self._timer = threading.Timer(delay, self._start)
            self._timer.daemon = True

    # -- the main task

    def stage(self, description: str, total: int | None = None) -> None:
        """A new stage of the work: its description and, if countable, how many steps it has."""
        if self._progress is not None:
            self._progress.update(self._main, description=description, total=total, completed=0)

    def note(self, description: str) -> None:
        """Say what is being done now, within the current stage."""
        if self._progress is not None:
            self._progress.update(self._main, description=description)

    def advance(self, steps: int = 1) -> None:
        if self._progress is not None:
            self._progress.advance(self._main, steps)

    # -- devices in flight

    def item(self, key: str, status: str, *, done: bool = False) -> None:
        """One line per device while it is being worked on (`key: status`); `done` removes it."""
        if self._progress is None:
            return
        with self._lock:
            task = self._items.get(key)
            if task is None:
                task = self._items[key] = self._progress.add_task(f"{key}: {status}", total=None)
        self._progress.update(task, description=f"{key}: {status}", visible=not done)

    # -- results

    def print(self, line: str, **style: Any) -> None:
        """A result line on stderr, printed whether or not the display is shown (never parsed as markup)."""
        self.console.print(Text(line, **style), soft_wrap=True)

    # -- lifetime

    def _start(self) -> None:
        with self._lock:
            if not self._closed and not self._started:
                self._started = True
                self._progress.start()

    def __enter__(self) -> Tracker:
        if self._timer is not None:
            self._timer.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
        with self._lock:
            self._closed = True
            started, self._started = self._started, False
        if started and self._progress is not None:
            self._progress.stop()


@contextmanager
def track(description: str, total: int | None = None, *, console: Console | None = None,
          delay: float = DELAY) -> Iterator[Tracker]:
    """`with track("render") as p: p.stage(...); p.advance()` — the display, if any, is gone afterwards."""
    with Tracker(description, total, console or stderr_console(), delay) as tracker:
        yield tracker


FINAL = ("done", "applied", "unchanged", "rolled-back", "failed", "unreachable", "reverted-by-timer", "unknown",
         "skipped", "saved", "error", "reachable", "pending", "no-file")
PROBLEMS = ("unreachable", "failed", "error")


def devices(progress: Tracker, what: str, total: int) -> Callable[[str, str], None]:
    """The per-device callback (device, stage) of commands that reach devices: one display line per device
    in flight, a count of those done, and — always, display or not — a line on stderr as soon as a device
    turns out unreachable or fails, so a long run never leaves the user guessing."""
    progress.stage(what, total=total)
    finished: set[str] = set()
    lock = threading.Lock()

    def update(device: str, stage: str) -> None:
        done = stage in FINAL
        progress.item(device, stage, done=done)
        if done:
            with lock:
                first = device not in finished
                finished.add(device)
            if first:
                progress.advance()
                if stage in PROBLEMS:
                    progress.print(f"{device}: {stage}", style="red")
    return update
