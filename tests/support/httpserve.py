"""One way for tests to serve an HTTP handler on 127.0.0.1: a free port, a serving thread,
and a clean shutdown."""

from __future__ import annotations

import http.server
import threading
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def serving(handler: type[http.server.BaseHTTPRequestHandler], *,
            poll_s: float = 0.5) -> Iterator[int]:
    """Serve ``handler`` with a :class:`http.server.ThreadingHTTPServer` on 127.0.0.1 (a port
    the OS picks; request threads are daemons) from a daemon thread polling every ``poll_s``
    seconds for shutdown; yields the port; shuts the server down and joins the thread.
    """
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, args=(poll_s,), daemon=True)
    thread.start()
    try:
        yield server.server_address[1]
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)
