"""A webhook receiver for tests, run as its own process: ``python -m tests.webhook_receiver
PORT LOG [--hold-first SECONDS]``.

Every POST is appended to LOG as one JSON line (its headers and body) BEFORE it is answered,
then answered 200. With ``--hold-first`` the first request is held that long before its
answer, so a test can kill the sender while a delivery is in flight."""

from __future__ import annotations

import argparse
import json
import os
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("port", type=int)
    parser.add_argument("log")
    parser.add_argument("--hold-first", type=float, default=0.0)
    args = parser.parse_args()
    lock = threading.Lock()
    seen = [0]

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 - readiness probe
            self.send_response(200)
            self.end_headers()

        def do_POST(self) -> None:  # noqa: N802
            body = self.rfile.read(int(self.headers.get("content-length", 0)))
            with lock:
                seen[0] += 1
                first = seen[0] == 1
                with open(args.log, "a") as fh:
                    fh.write(json.dumps({"headers": dict(self.headers.items()),
                                         "body": body.decode()}) + "\n")
                    fh.flush()
                    os.fsync(fh.fileno())
            if first and args.hold_first:
                time.sleep(args.hold_first)
            self.send_response(200)
            self.end_headers()
            self.wfile.write(b"ok")

        def log_message(self, *a: object) -> None:
            pass

    ThreadingHTTPServer(("127.0.0.1", args.port), Handler).serve_forever()


if __name__ == "__main__":
    main()
