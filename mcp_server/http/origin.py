"""Same-origin by construction (issue 35 item 1): which `Host` and `Origin` headers `semcat serve`
answers, in every mode (tokens or none), on every route.

A Host is allowed when it names
  - an address the server is reached at: the bound address, the local address of the connection
    (covers a wildcard bind reached by IP), and for a loopback connection or bind `localhost`,
    `127.0.0.1` and `[::1]`, with any port (a port forward or tunnel, `ssh -L 9000:...`, keeps the
    client's port; a browser only sends `Host: localhost:9000` from a page of that very origin); or
  - a configured name (`--allowed-host NAME` or `NAME:PORT`, `SEMCAT_ALLOWED_HOSTS`, and the older
    `SEMCAT_MCP_ALLOWED_HOSTS`): NAME matches any port, NAME:PORT that port only.
So `Host: evil.example` (a DNS-rebinding page whose name resolves to 127.0.0.1) is refused (421).

An Origin is allowed when absent (non-browser clients send none), when it is one of the configured
origins (`--allowed-origin https://app.example`, `SEMCAT_ALLOWED_ORIGINS`), when it is the origin
the request itself was sent to (the Host's name and port, with the server's scheme: a same-origin
request), or when its host is a configured name (http or https, the entry's port). `Origin: null`
and any other origin (another site, or another port of this host, which is "same-site" to a
browser) are refused (403).
"""

from __future__ import annotations

import ipaddress
import os
from collections.abc import Iterable, Sequence
from typing import Any

__all__ = ["SameOrigin", "split_host", "LOOPBACK_NAMES", "env_names"]

LOOPBACK_NAMES = frozenset({"localhost", "127.0.0.1", "[::1]"})
_DEFAULT_PORT = {"http": 80, "https": 443, "ws": 80, "wss": 443}
_WILDCARD = frozenset({"", "0.0.0.0", "::", "[::]"})


def split_host(value: str) -> tuple[str, int | None] | None:
    """(name, port) of a Host header value (`name`, `name:port`, `[v6]`, `[v6]:port`), the name
    lowercased without a trailing dot; None if malformed."""
    v = value.strip().lower()
    if not v or any(c in v for c in "/@?#\\ \t"):
        return None
    if v.startswith("["):
        end = v.find("]")
        if end < 0:
            return None
        name, rest = v[:end + 1], v[end + 1:]
        if rest and not rest.startswith(":"):
            return None
        port_text = rest[1:] if rest else None
    else:
        name, sep, port_text_ = v.partition(":")
        port_text = port_text_ if sep else None
        if port_text is not None and ":" in port_text:
            return None  # a bare IPv6 address: not a valid Host
    port = None
    if port_text is not None:
        if not (port_text.isascii() and port_text.isdigit()) or len(port_text) > 5:
            return None
        port = int(port_text)
    name = name.rstrip(".")
    return (name, port) if name else None


def _norm_addr(host: str) -> str:
    """An address or name as it appears in a Host header: IPv6 literals in brackets."""
    h = host.strip().lower().rstrip(".")
    if h.startswith("["):
        return h
    try:
        return f"[{ipaddress.IPv6Address(h.split('%')[0])}]"
    except ValueError:
        return h


def _is_loopback(addr: str) -> bool:
    a = addr.strip("[]")
    if a == "localhost":
        return True
    try:
        return ipaddress.ip_address(a.split("%")[0]).is_loopback
    except ValueError:
        return False


def env_names(*variables: str) -> list[str]:
    """Comma-separated names from environment variables (empty items skipped)."""
    return [x.strip() for var in variables for x in os.environ.get(var, "").split(",") if x.strip()]


class SameOrigin:
    """The Host and Origin checks of one server; see the module docstring. Cheap per request
    (set lookups); `scope` supplies the connection's local address, port and scheme."""

    def __init__(self, bind_host: str | None = None, allowed_hosts: Iterable[str] = (),
                 allowed_origins: Iterable[str] = ()) -> None:
        self.bind_host = bind_host
        self.any_port: set[str] = set()
        self.exact: set[tuple[str, int]] = set()
        for entry in allowed_hosts:
            parsed = split_host(entry)
            if parsed is None:
                raise ValueError(f"--allowed-host {entry!r} is not a host name, NAME:PORT or [IPv6]:PORT")
            name, port = parsed
            if port is None:
                self.any_port.add(name)
            else:
                self.exact.add((name, port))
        self.origins: set[str] = set()
        for origin in allowed_origins:
            parsed_origin = self._split_origin(origin)
            if parsed_origin is None:
                raise ValueError(f"--allowed-origin {origin!r} must be scheme://host[:port], e.g. https://app.example")
            scheme, name, port = parsed_origin
            self.origins.add(f"{scheme}://{name}:{port}")

    # ------------------------------------------------------------------ Host
    def _bound_names(self, scope: dict[str, Any]) -> set[str]:
        names: set[str] = set()
        server = scope.get("server")
        local = _norm_addr(str(server[0])) if server else None
        for addr in (self.bind_host, local):
            if addr is None or _norm_addr(addr) in _WILDCARD:
                continue
            names.add(_norm_addr(addr))
            if _is_loopback(addr):
                names |= LOOPBACK_NAMES
        return names

    def _configured(self, name: str, port: int) -> bool:
        return name in self.any_port or (name, port) in self.exact

    def host_ok(self, host: str | None, scope: dict[str, Any]) -> bool:
        """True if a request with this Host header is for this server."""
        parsed = split_host(host) if host is not None else None
        if parsed is None:
            return False
        name, port = parsed
        scheme = _http_scheme(scope)
        return self._configured(name, port if port is not None else _DEFAULT_PORT[scheme]) \
            or name in self._bound_names(scope)

    # ------------------------------------------------------------------ Origin
    @staticmethod
    def _split_origin(origin: str) -> tuple[str, str, int] | None:
        scheme, sep, rest = origin.strip().lower().partition("://")
        if not sep or scheme not in _DEFAULT_PORT or not rest or "/" in rest.rstrip("/"):
            return None
        parsed = split_host(rest.rstrip("/"))
        if parsed is None:
            return None
        name, port = parsed
        return scheme, name, port if port is not None else _DEFAULT_PORT[scheme]

    def origin_ok(self, origin: str, host: str | None, scope: dict[str, Any]) -> bool:
        """True if a browser page of `origin` may send this request (Host `host`, already checked
        by `host_ok`); never for `null`."""
        parsed = self._split_origin(origin)
        if parsed is None:
            return False
        scheme, name, port = parsed
        if f"{scheme}://{name}:{port}" in self.origins:
            return True
        if scheme in ("http", "https", "ws", "wss") and self._configured(name, port):
            return True
        target = split_host(host) if host is not None else None
        if target is None or scheme.replace("ws", "http") != _http_scheme(scope):
            return False
        target_port = target[1] if target[1] is not None else _DEFAULT_PORT[scheme]
        return (name, port) == (target[0], target_port)

    def describe(self, scope: dict[str, Any]) -> Sequence[str]:
        """The names a Host may take here (for error messages)."""
        return sorted(self._bound_names(scope) | self.any_port | {f"{n}:{p}" for n, p in self.exact})


def _http_scheme(scope: dict[str, Any]) -> str:
    scheme = str(scope.get("scheme", "http"))
    return {"ws": "http", "wss": "https"}.get(scheme, scheme if scheme in ("http", "https") else "http")
