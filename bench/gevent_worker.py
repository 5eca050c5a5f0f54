#!/usr/bin/env python
"""``reconcilery worker`` on Celery's gevent pool, for ``bench/skr_sweep.py --pool gevent``: the
standard library is monkey-patched before anything else is imported (Celery's own ``celery`` command
does this for ``-P gevent``; ``reconcilery worker`` calls Celery's ``worker_main``, which does not).
Arguments are those of ``reconcilery``, e.g. ``bench/gevent_worker.py worker -Q cloud-skr -c 350 -P gevent``."""

from gevent import monkey

monkey.patch_all()

import sys  # noqa: E402
from pathlib import Path  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from reconcilery.cli import main  # noqa: E402

if __name__ == "__main__":
    main()
