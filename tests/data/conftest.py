"""A loopback HTTP server with Range support, so the download path is tested without the internet; it records the
Range and User-Agent headers of every request and can answer a path with a given status (a host that refuses), drop
the first connection of a path after some bytes (a network that fails mid-file), go silent after some bytes (a host
that stalls), or answer a range request with a 206 from the wrong place."""

from __future__ import annotations

import contextlib
import socket
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class _Served:
    def __init__(self) -> None:
        self.files: dict[str, bytes] = {}
        self.ranges: list[str | None] = []  # the Range header of every request, in order
        self.user_agents: list[str | None] = []  # the User-Agent header of every request, in order
        self.statuses: dict[str, int] = {}  # a path answered with this status instead of its bytes
        self.honour_range = True
        self.drops: dict[str, int] = {}  # path -> bytes sent before its first connection is closed
        self.stalls: dict[str, int] = {}  # path -> bytes sent before the host goes silent (until shutdown)
        self.misplaced_range = False  # answer a range request with 206 and the bytes from 0 ("bytes 0-...")
        self.shutting_down = threading.Event()


def _handler(served: _Served):
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args) -> None:  # keep pytest output clean
            pass

        def do_GET(self) -> None:
            data = served.files.get(self.path)
            header = self.headers.get("Range")
            served.ranges.append(header)
            served.user_agents.append(self.headers.get("User-Agent"))
            if self.path in served.statuses:
                self.send_error(served.statuses[self.path])
                return
            if data is None:
                self.send_error(404)
                return
            start = int(header.removeprefix("bytes=").split("-")[0]) if header and served.honour_range else 0
            if start >= len(data) and header and served.honour_range:
                self.send_response(416)
                self.send_header("Content-Range", f"bytes */{len(data)}")
                self.end_headers()
                return
            if start and served.misplaced_range:
                start = 0
                self.send_response(206)
                self.send_header("Content-Range", f"bytes 0-{len(data) - 1}/{len(data)}")
            else:
                self.send_response(206 if start else 200)
                if start:
                    self.send_header("Content-Range", f"bytes {start}-{len(data) - 1}/{len(data)}")
            self.send_header("Content-Length", str(len(data) - start))
            self.end_headers()
            body = data[start:]
            if self.path in served.drops:  # the first connection only: the next ones are whole
                self.wfile.write(body[: served.drops.pop(self.path)])
                self.wfile.flush()
                self.close_connection = True
                self.connection.shutdown(socket.SHUT_RDWR)
                return
            if self.path in served.stalls:
                self.wfile.write(body[: served.stalls[self.path]])
                self.wfile.flush()
                served.shutting_down.wait()
                return
            self.wfile.write(body)

    return Handler


@contextlib.contextmanager
def loopback_server() -> Iterator[tuple[str, _Served]]:
    """(base_url, served) of a server on 127.0.0.1 in a thread; put bytes in ``served.files['/name']``."""
    served = _Served()
    server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(served))
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", served
    finally:
        served.shutting_down.set()
        server.shutdown()
        server.server_close()
