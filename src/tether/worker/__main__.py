"""``python -m tether.worker --app MODULE:APP``: the worker without the CLI's dependencies."""

from __future__ import annotations

import argparse
import logging
import os
import sys


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tether.worker")
    parser.add_argument("--app", required=True, help="MODULE:APP holding a tether.Tether")
    parser.add_argument("--concurrency", type=int, default=4)
    parser.add_argument("--queues", default=None, help="comma-separated queue names")
    parser.add_argument("--lease-ttl", type=float, default=None)
    parser.add_argument("--poll-interval", type=float, default=0.5)
    parser.add_argument("--prefetch", type=int, default=None,
                        help="most jobs held beyond the busy slots (0: off)")
    parser.add_argument("--database-url", default=None)
    args = parser.parse_args(argv)
    logging.basicConfig(level=os.environ.get("TETHER_LOG_LEVEL", "WARNING"),
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    if args.database_url:
        os.environ["TETHER_DATABASE_URL"] = args.database_url
    from ..loader import load_app
    from . import process
    app = load_app(args.app)
    if args.database_url:
        app.database_url = args.database_url
    worker = app.worker(concurrency=args.concurrency,
                        queues=args.queues.split(",") if args.queues else None,
                        lease_ttl=args.lease_ttl, poll_interval=args.poll_interval,
                        prefetch=args.prefetch)
    print(f"worker {worker.id} started; types: {', '.join(worker.types()) or 'none'}",
          file=sys.stderr, flush=True)
    process.tune()
    worker.run()
    return 0


if __name__ == "__main__":
    sys.exit(main())
