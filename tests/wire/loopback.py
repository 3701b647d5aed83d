"""Lifecycle shared by the wire servers: a threaded HTTP server on a free loopback port.

Subclasses set `handler_class`; each started server gets its own handler subclass whose `wire`
attribute points back at it, so request handlers reach the server's state and scripts.
"""

from __future__ import annotations

import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Self


class LoopbackServer:
    handler_class: type[BaseHTTPRequestHandler]

    def __init__(self) -> None:
        self._httpd: ThreadingHTTPServer | None = None

    def start(self) -> Self:
        handler = type("Handler", (self.handler_class,), {"wire": self})
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self._httpd.daemon_threads = True
        threading.Thread(target=self._httpd.serve_forever, args=(0.05,), daemon=True).start()
        return self

    def stop(self) -> None:
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
            self._httpd = None

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def url(self) -> str:
        """Root URL of the running server."""
        assert self._httpd is not None, "server not started"
        host, port = self._httpd.server_address[:2]
        return f"http://{host}:{port}"
