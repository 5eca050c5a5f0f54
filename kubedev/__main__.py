"""``python -m kubedev --port 18080 --kubeconfig out/kubeconfig``: run the dev API server until stopped."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import logging
import signal
import sys

from kubedev.server import serve_forever


def main(argv: list[str] | None = None) -> int:
    """Parse arguments, serve until SIGINT/SIGTERM; returns the exit code (2 if the port is taken)."""
    parser = argparse.ArgumentParser(prog="python -m kubedev", description="Reconcilery's dev Kubernetes API server")
    parser.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1)")
    parser.add_argument("--port", type=int, default=18080, help="TCP port (0 = any free port; default 18080)")
    parser.add_argument("--kubeconfig", default=None, help="write a kubeconfig for this server to this path")
    parser.add_argument("--bookmark-interval", type=float, default=5.0, help="seconds between watch bookmarks")
    parser.add_argument("--log-level", default="INFO")
    args = parser.parse_args(argv)
    logging.basicConfig(level=args.log_level.upper(), format="%(asctime)s %(levelname)s %(name)s %(message)s")

    async def run() -> None:
        task = asyncio.current_task()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            if task is not None:
                loop.add_signal_handler(sig, task.cancel)

        def ready(url: str) -> None:
            print(f"kubedev listening on {url}", flush=True)

        await serve_forever(args.host, args.port, args.kubeconfig, args.bookmark_interval, ready)

    try:
        with contextlib.suppress(asyncio.CancelledError):
            asyncio.run(run())
    except OSError as exc:
        print(f"kubedev: cannot listen on {args.host}:{args.port}: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
