"""A local HTTP server for the agent programs that talk to llama_server instances."""

import http.server
import threading

import pytest


@pytest.fixture
def serve():
    """serve(handler class) -> the port of a threaded server on 127.0.0.1, shut down after the test."""
    servers = []

    def start(handler):
        httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
        threading.Thread(target=httpd.serve_forever, daemon=True).start()
        servers.append(httpd)
        return httpd.server_address[1]

    yield start
    for httpd in servers:
        httpd.shutdown()
