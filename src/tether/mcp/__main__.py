"""``python -m tether.mcp [--transport stdio|http] [--app M:A] [--database-url URL] [--token T]
[--insecure-no-auth] [--host H] [--port P]``: the MCP server without the CLI."""

from __future__ import annotations

import argparse
import sys

from ..errors import MissingExtra, TetherError
from ..optional import load


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m tether.mcp")
    parser.add_argument("--transport", choices=["stdio", "http"], default="stdio")
    parser.add_argument("--app", dest="app_spec")
    parser.add_argument("--database-url")
    parser.add_argument("--token")
    parser.add_argument("--insecure-no-auth", action="store_true")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8001)
    args = parser.parse_args(argv)
    try:
        run = load("tether.mcp.server", extra="mcp", what="the MCP server").run
        run(args.transport, args.app_spec, args.database_url, args.token, args.host, args.port,
            insecure_no_auth=args.insecure_no_auth)
    except TetherError as exc:
        print(f"error: {exc.message} ({exc.code})", file=sys.stderr)
        raise SystemExit(1 if isinstance(exc, MissingExtra) else 2) from None


if __name__ == "__main__":
    main()
