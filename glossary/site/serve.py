"""A built site served on 127.0.0.1 for a moment: for the browser tests and the screenshots.

``mkdocs serve`` rebuilds the site and watches files; a check of a finished build needs neither,
only static files on a free local port, served from a thread, and closed when the check ends.
"""

from __future__ import annotations

import functools
import http.server
import socket
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    """Static files without one log line per request."""

    def log_message(self, format: str, *args: Any) -> None:
        pass


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on at the moment of asking."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@contextmanager
def serve(directory: Path) -> Iterator[str]:
    """Serve ``directory`` on 127.0.0.1 (a free port) in a thread; yield the base URL."""
    handler = functools.partial(_QuietHandler, directory=str(directory))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", free_port()), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)
