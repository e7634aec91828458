"""A TLS listener whose certificate no client trusts, for the tests of what a client says when
a certificate is refused."""

from __future__ import annotations

import contextlib
import socket
import threading
from collections.abc import Iterator
from pathlib import Path

from fake_kube_api import make_tls


@contextlib.contextmanager
def tls_server(tmp_path: Path) -> Iterator[str]:
    """A TLS listener on 127.0.0.1 whose certificate comes from a CA no client trusts: the
    handshake is all it does. Its https:// base URL."""
    context = make_tls(tmp_path).context
    listener = socket.create_server(("127.0.0.1", 0))
    listener.settimeout(0.2)
    stop = threading.Event()

    def serve() -> None:
        while not stop.is_set():
            try:
                conn, _ = listener.accept()
            except TimeoutError:
                continue
            with contextlib.suppress(OSError), conn, context.wrap_socket(conn, server_side=True):
                pass

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield f"https://127.0.0.1:{listener.getsockname()[1]}"
    finally:
        stop.set()
        thread.join()
        listener.close()
