"""Progress for people: a rich bar on a terminal, one plain line per step when stderr is not a TTY
(a pipe, a log file, CI), so logs hold readable lines instead of cursor codes.

`progress_bar()` returns an object with the subset of `rich.progress.Progress` the CLI and the eval
use: a context manager with `add_task(description, total)`, `update(task, completed=, total=,
description=)` and `advance(task, n)`. Plain mode prints a line when a task starts, when its
description changes, at every tenth of its total and when it completes; never a carriage return."""

from __future__ import annotations

import sys
from typing import Any, TextIO

__all__ = ["progress_bar", "PlainProgress"]


class PlainProgress:
    """One line per step on `stream` (see the module docstring)."""

    def __init__(self, stream: TextIO | None = None, enabled: bool = True) -> None:
        self.stream, self.enabled = stream or sys.stderr, enabled
        self.tasks: list[dict[str, Any]] = []

    def __enter__(self) -> PlainProgress:
        return self

    def __exit__(self, *exc: Any) -> None:
        return None

    def _line(self, t: dict[str, Any]) -> None:
        if self.enabled:
            total = "?" if t["total"] is None else t["total"]
            print(f"{t['description']}: {t['completed']}/{total}", file=self.stream, flush=True)

    def add_task(self, description: str, total: float | None = None, **_: Any) -> int:
        self.tasks.append({"description": description, "total": total, "completed": 0, "tenth": 0})
        self._line(self.tasks[-1])
        return len(self.tasks) - 1

    def update(self, task: int, *, completed: float | None = None, total: float | None = None,
               description: str | None = None, advance: float | None = None, **_: Any) -> None:
        t = self.tasks[task]
        show = False
        if description is not None and description != t["description"]:
            t["description"], show = description, True
        if total is not None:
            t["total"] = total
        if advance is not None:
            completed = t["completed"] + advance
        if completed is not None and completed != t["completed"]:
            t["completed"] = completed
            if t["total"]:
                tenth = int(10 * completed // t["total"])
                if tenth > t["tenth"] or completed >= t["total"]:
                    t["tenth"], show = tenth, True
            else:
                show = True
        if show:
            self._line(t)

    def advance(self, task: int, advance: float = 1) -> None:
        self.update(task, advance=advance)


def progress_bar(enabled: bool = True, transient: bool = False, stream: TextIO | None = None) -> Any:
    """A rich Progress on stderr when it is a terminal, else a `PlainProgress`."""
    out = stream or sys.stderr
    if not out.isatty():
        return PlainProgress(out, enabled)
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    return Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                    console=Console(file=out), disable=not enabled, transient=transient)
