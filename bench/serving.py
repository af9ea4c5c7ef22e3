"""Start-up helpers the benchmarks share for a `semcat serve` subprocess on loopback."""

from __future__ import annotations

import socket
import subprocess
import time
from collections.abc import Callable

import httpx

__all__ = ["free_port", "wait_healthy", "rss_mb"]


def rss_mb(pid: int) -> float:
    """A process's resident memory in MB from /proc (0.0 when it is gone)."""
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return 0.0


def free_port() -> int:
    """A TCP port free on 127.0.0.1 at the time of the call."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def wait_healthy(proc: subprocess.Popen[bytes], url: str, within_s: float, poll_s: float,
                 exited: Callable[[], str], late: str) -> None:
    """Return once `url`/healthz answers 200; SystemExit(exited()) if the server process ends first,
    or (after killing it) SystemExit(late) if it does not answer within `within_s` seconds."""
    deadline = time.monotonic() + within_s
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise SystemExit(exited())
        try:
            if httpx.get(url + "/healthz", timeout=1).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(poll_s)
    proc.kill()
    raise SystemExit(late)
