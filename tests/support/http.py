"""A real HTTP server on a free port of 127.0.0.1 for tests of kwokbench's clients (the scraper, the watch): the
server's behaviour is the test's own request handler."""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class Quiet(BaseHTTPRequestHandler):
    """A handler that logs nothing and answers with :meth:`send`."""

    def send(self, code: int, body: bytes) -> None:
        with contextlib.suppress(ConnectionError):  # the client hung up (it stopped watching)
            self.send_response(code)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


@contextlib.contextmanager
def serving(handler: type[BaseHTTPRequestHandler]) -> Iterator[str]:
    """``http://127.0.0.1:PORT`` while ``handler`` answers there; the server and its socket closed after."""
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}"
    finally:
        httpd.shutdown()
        httpd.server_close()
