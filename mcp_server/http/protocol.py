"""The HTTP/1.1 protocol uvicorn runs: its httptools protocol with a cap on the request head
(request line + headers) and a time limit on reading it. httptools itself buffers a header of any
size, so without the cap a client could make the server hold megabytes per connection before the
token is even checked; without the time limit a client that sends part of a head and stops holds
its connection forever (uvicorn's keep-alive timeout runs only between requests). Over the cap the
answer is 431, past the time limit 408; both close the connection.

    uvicorn.Config(app, **uvicorn_http_options())
"""

from __future__ import annotations

import json
from typing import Any

import httptools
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

__all__ = ["MAX_HEAD_BYTES", "HEAD_TIMEOUT_S", "uvicorn_http_options"]

# The request line and headers together; a bearer token and the usual headers take < 1 KiB.
MAX_HEAD_BYTES = 64 * 1024
# From a connection's start (or the first byte of a request) to the end of the request's head.
# Read when each connection starts, so tests may lower it.
HEAD_TIMEOUT_S = 20.0


class _HeadTooLarge(Exception):
    """Raised from a parser callback to stop parsing a head over MAX_HEAD_BYTES."""


def _head_timeout() -> bytes:
    body = json.dumps({
        "error": "InvalidValueError",
        "message": f"the request line and headers did not arrive within {HEAD_TIMEOUT_S:g} s; send the whole "
                   "request head at once",
        "details": {"timeout_s": HEAD_TIMEOUT_S}}).encode()
    return (b"HTTP/1.1 408 Request Timeout\r\ncontent-type: application/json\r\n"
            b"content-length: " + str(len(body)).encode() + b"\r\nconnection: close\r\n\r\n" + body)


def _head_too_large() -> bytes:
    body = json.dumps({
        "error": "InvalidValueError",
        "message": f"request line and headers exceed {MAX_HEAD_BYTES} bytes; send shorter headers "
                   "(path queries and write sets go in the JSON body)",
        "details": {"limit": MAX_HEAD_BYTES}}).encode()
    return (b"HTTP/1.1 431 Request Header Fields Too Large\r\ncontent-type: application/json\r\n"
            b"content-length: " + str(len(body)).encode() + b"\r\nconnection: close\r\n\r\n" + body)


class CappedHttpToolsProtocol(HttpToolsProtocol):
    """Counts the bytes of each request head: those of the reads while a head is incomplete, and
    the request line and headers the parser hands over (so a head that arrives in one read is
    counted too). Over the cap: 431 and the connection closed. A head not complete within
    HEAD_TIMEOUT_S of the connection's start or the request's first byte: 408 and closed."""

    _in_head = True
    _head_bytes = 0  # the request line and headers the parser handed over
    _raw_bytes = 0  # the bytes of reads that left the head incomplete
    _head_timer: Any = None

    def connection_made(self, transport: Any) -> None:
        super().connection_made(transport)
        self._arm_head_timer()

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm_head_timer()
        super().connection_lost(exc)

    def _arm_head_timer(self) -> None:
        self._disarm_head_timer()
        self._head_timer = self.loop.call_later(HEAD_TIMEOUT_S, self._head_timed_out)

    def _disarm_head_timer(self) -> None:
        if self._head_timer is not None:
            self._head_timer.cancel()
            self._head_timer = None

    def _head_timed_out(self) -> None:
        self._head_timer = None
        if self._in_head and not self.transport.is_closing():
            self.logger.warning("request head from %s incomplete after %g s; answered 408", self.client,
                                HEAD_TIMEOUT_S)
            self.transport.write(_head_timeout())
            self.transport.close()

    def _refuse_head(self) -> None:
        self._disarm_head_timer()
        if self.transport.is_closing():
            return
        self.logger.warning("request head over %d bytes from %s; answered 431", MAX_HEAD_BYTES, self.client)
        self.transport.write(_head_too_large())
        self.transport.close()

    def _count(self, n: int) -> None:
        self._head_bytes += n
        if self._head_bytes > MAX_HEAD_BYTES:
            raise _HeadTooLarge

    def on_message_begin(self) -> None:
        super().on_message_begin()
        self._in_head, self._head_bytes, self._raw_bytes = True, 0, 0
        if self._head_timer is None:
            self._arm_head_timer()

    def on_url(self, url: bytes) -> None:
        self._count(len(url))
        super().on_url(url)

    def on_header(self, name: bytes, value: bytes) -> None:
        self._count(len(name) + len(value) + 4)
        super().on_header(name, value)

    def on_headers_complete(self) -> None:
        self._in_head, self._head_bytes, self._raw_bytes = False, 0, 0
        self._disarm_head_timer()
        super().on_headers_complete()

    def data_received(self, data: bytes) -> None:
        if self.transport.is_closing():
            return
        self._unset_keepalive_if_required()
        try:
            self.parser.feed_data(data)
        except httptools.HttpParserCallbackError as exc:
            if isinstance(exc.__context__, _HeadTooLarge):
                self._refuse_head()
                return
            self._bad_request()
            return
        except httptools.HttpParserError:
            self._bad_request()
            return
        except httptools.HttpParserUpgrade:
            if self._should_upgrade():
                self.handle_websocket_upgrade()
            else:
                self._unsupported_upgrade_warning()
            return
        if not self._in_head or self.transport.is_closing():
            return
        # the head is still incomplete: what httptools buffers of it counts too
        self._raw_bytes += len(data)
        if self._raw_bytes > MAX_HEAD_BYTES:
            self._refuse_head()

    def _bad_request(self) -> None:
        msg = "Invalid HTTP request received."
        self.logger.warning(msg)
        self.send_400_response(msg)



def uvicorn_http_options() -> dict[str, Any]:
    """`http=` and the h11 limit for uvicorn.Config: the capped httptools protocol (h11, if chosen
    instead, enforces the same cap itself, answering 400)."""
    return {"http": CappedHttpToolsProtocol, "h11_max_incomplete_event_size": MAX_HEAD_BYTES}
