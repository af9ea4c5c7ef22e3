"""The HTTP/1.1 protocol uvicorn runs: its httptools protocol with a cap on the request head
(request line + headers). httptools itself buffers a header of any size, so without the cap a
client could make the server hold megabytes per connection before the token is even checked.

    uvicorn.Config(app, **uvicorn_http_options())
"""

from __future__ import annotations

import json
from typing import Any

__all__ = ["MAX_HEAD_BYTES", "uvicorn_http_options"]

# The request line and headers together; a bearer token and the usual headers take < 1 KiB.
MAX_HEAD_BYTES = 64 * 1024


def _head_too_large() -> bytes:
    body = json.dumps({
        "error": "InvalidValueError",
        "message": f"request line and headers exceed {MAX_HEAD_BYTES} bytes; send shorter headers "
                   "(path queries and write sets go in the JSON body)",
        "details": {"limit": MAX_HEAD_BYTES}}).encode()
    return (b"HTTP/1.1 431 Request Header Fields Too Large\r\ncontent-type: application/json\r\n"
            b"content-length: " + str(len(body)).encode() + b"\r\nconnection: close\r\n\r\n" + body)


def uvicorn_http_options() -> dict[str, Any]:
    """`http=` and the h11 limit for uvicorn.Config: the capped httptools protocol, or h11 (which
    enforces the same cap itself, answering 400) where httptools is not installed."""
    try:
        from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol
    except ImportError:  # pragma: no cover - httptools comes with uvicorn[standard]
        return {"http": "h11", "h11_max_incomplete_event_size": MAX_HEAD_BYTES}

    class CappedHttpToolsProtocol(HttpToolsProtocol):
        """Counts the bytes of each request head as they arrive; over the cap, answers 431 and
        closes the connection. A read that completes the head is not counted, so the bound is
        the cap plus one socket read."""

        _in_head = True
        _head_bytes = 0

        def on_message_begin(self) -> None:
            super().on_message_begin()
            self._in_head = True

        def on_headers_complete(self) -> None:
            self._in_head, self._head_bytes = False, 0
            super().on_headers_complete()

        def data_received(self, data: bytes) -> None:
            super().data_received(data)
            if not self._in_head or self.transport.is_closing():
                return
            self._head_bytes += len(data)
            if self._head_bytes > MAX_HEAD_BYTES:
                self.logger.warning("request head over %d bytes from %s; answered 431", MAX_HEAD_BYTES,
                                    self.client)
                self.transport.write(_head_too_large())
                self.transport.close()

    return {"http": CappedHttpToolsProtocol, "h11_max_incomplete_event_size": MAX_HEAD_BYTES}
