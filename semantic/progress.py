"""Progress of the long semantic reads, for callers that show it (the MCP server's progress
notifications): today the whole-catalog staleness scan, which reports each table it checks.

    with progress.reporting(lambda done, total, what: print(done, total, what)):
        sm.staleness(cat)                       # calls the reporter after each table it checks

Invariants: the reporter lives in a ContextVar, so it follows the call into the worker threads that
copy the context (anyio.to_thread, asyncio.to_thread) and nowhere else; with no reporter set `step`
costs one lookup. `done` counts up from 1 to `total` within one scan; a warm (cached) scan reports
nothing. A reporter must be cheap or throttle itself; what it raises propagates to the scan, so a
reporter that talks to a network swallows its own errors.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from contextvars import ContextVar

__all__ = ["Reporter", "reporting", "step"]

Reporter = Callable[[int, int, str], None]
"""fn(done, total, what): `done` of `total` units finished, `what` names the last one."""

_reporter: ContextVar[Reporter | None] = ContextVar("semantic_progress_reporter", default=None)


@contextlib.contextmanager
def reporting(fn: Reporter | None) -> Iterator[None]:
    """Send the progress of the reads made inside the block (in this context) to `fn`."""
    token = _reporter.set(fn)
    try:
        yield
    finally:
        _reporter.reset(token)


def step(done: int, total: int, what: str) -> None:
    """Report that `done` of `total` units are finished, the last one being `what`."""
    fn = _reporter.get()
    if fn is not None:
        fn(done, total, what)
