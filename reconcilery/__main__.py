"""``reconcilery`` / ``python -m reconcilery``: the CLI, with Celery's gevent pool patched in first.

``reconcilery worker -P gevent`` (the ``cloud-skr`` pool's model: hundreds of connects in flight per
process at ~0.3 MiB each, docs/cloud.md) needs the standard library monkey-patched before ``socket``,
``ssl`` and ``threading`` are imported by anything else, as Celery's own ``celery`` command does in its
``__main__``. This module imports nothing of ours before :func:`celery.maybe_patch_concurrency` has run
(and patches only for the ``worker`` command), then hands over to :func:`reconcilery.cli.main`.
"""

from __future__ import annotations

import sys


def main() -> None:
    """Run the CLI (``sys.argv``); for ``worker --pool gevent`` patch the standard library first."""
    if len(sys.argv) > 1 and sys.argv[1] == "worker":
        from celery import maybe_patch_concurrency  # celery's package import is lazy: nothing patched yet

        maybe_patch_concurrency(sys.argv, ["-P"], ["--pool"])
    from reconcilery.cli import main as cli_main

    cli_main()


if __name__ == "__main__":
    main()
