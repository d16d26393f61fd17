"""``python -m tether.api [--app M:A] [--host H] [--port P] [--database-url URL]
[--insecure-no-auth] [--run-worker] [--max-body-bytes N]``: the REST API without the CLI."""

from __future__ import annotations

import argparse
import sys

from ..errors import MissingExtra, TetherError
from ..optional import load


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m tether.api")
    parser.add_argument("--app", dest="app_spec")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8000)
    parser.add_argument("--database-url")
    parser.add_argument("--insecure-no-auth", action="store_true")
    parser.add_argument("--run-worker", action="store_true", default=None,
                        help="also run a worker for --app (default: TETHER_RUN_WORKER)")
    parser.add_argument("--max-body-bytes", type=int)
    parser.add_argument("--log-level", default="info")
    args = parser.parse_args(argv)
    try:
        serve = load("tether.api.server", extra="server", what="the REST API").serve
        serve(args.app_spec, args.host, args.port, args.database_url, args.insecure_no_auth,
              args.run_worker, max_body_bytes=args.max_body_bytes, log_level=args.log_level)
    except TetherError as exc:
        print(f"error: {exc.message} ({exc.code})", file=sys.stderr)
        raise SystemExit(1 if isinstance(exc, MissingExtra) else 2) from None


if __name__ == "__main__":
    main()
