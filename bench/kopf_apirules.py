"""The kopf peer of ``bench/apirules.py``: a kopf operator whose handler runs the same APIRule reconcile.

    .venv/bin/python -m bench.kopf_apirules --namespace shop [--max-workers N] [--liveness-port P]

One process: kopf watches the APIRules of ``--namespace`` (``standalone``: no peering) and, for each
watch event (``@kopf.on.event``; the initial list and every re-list come as events of type ``None``),
calls :func:`tasks.apigateway.controller.reconcile` with the event's key in kopf's thread pool
(``settings.execution.max_workers``; kopf's default when not given). Kopf serialises the events of one
object and folds a burst within its batch window into one. The reconcile reads its dependencies from
this process's informers and writes through ``kube`` exactly as in a Reconcilery worker, so the two
differ only in the framework around the call.

An event is skipped when it is a ``MODIFIED`` whose ``metadata.generation`` and deletion state this
process has reconciled already: the predicate Reconcilery's watcher applies to APIRules
(``tasks.apigateway.watches.generation_changed``), so both reconcile the same events (a status write
does not bring a reconcile back). A reconcile that fails is not retried (kopf's event handlers have no
retry); the benchmark then reports it as not Ready.

Environment: ``RECONCILERY_KUBECONFIG`` (the dev API server), the reconcile's ``RECONCILERY_*``
settings. The process answers ``GET /healthz`` on ``--liveness-port`` once kopf is up (kopf's probe).
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import sys
import threading
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import kopf  # noqa: E402  (after the path: the handlers import the project)
import yaml  # noqa: E402

import bench.reconcile_cpu  # noqa: E402, F401  (meters controller.reconcile with RECONCILERY_BENCH_RECONCILE_CPU)
from tasks.apigateway import controller  # noqa: E402
from workers.controller import LOCAL_CLUSTER, Key  # noqa: E402

#: ``uid -> (generation, deleting)`` of the last reconciled event of each APIRule.
_seen: dict[str, tuple[Any, bool]] = {}
_seen_lock = threading.Lock()


def wanted(event_type: str | None, meta: dict[str, Any]) -> bool:
    """Whether an event needs a reconcile: anything but a ``MODIFIED`` that kept the generation and the
    deletion state already reconciled (``DELETED`` forgets the object)."""
    uid = str(meta.get("uid") or "")
    mark = (meta.get("generation"), bool(meta.get("deletionTimestamp")))
    with _seen_lock:
        if event_type == "DELETED":
            _seen.pop(uid, None)
            return True
        if event_type == "MODIFIED" and _seen.get(uid) == mark:
            return False
        _seen[uid] = mark
        return True


@kopf.on.login()
def login(**_: Any) -> kopf.ConnectionInfo:
    """The dev API server of ``RECONCILERY_KUBECONFIG`` (server URL and bearer token)."""
    import os

    config = yaml.safe_load(Path(os.environ["RECONCILERY_KUBECONFIG"]).read_text())
    server = config["clusters"][0]["cluster"]["server"]
    token = (config.get("users") or [{}])[0].get("user", {}).get("token") or "dev"
    return kopf.ConnectionInfo(server=server, scheme="Bearer", token=token, insecure=True)


@kopf.on.startup()
def configure(settings: kopf.OperatorSettings, **_: Any) -> None:
    settings.posting.enabled = False  # no k8s Events from kopf's own logs (the reconcile posts its own)
    settings.watching.connect_timeout = 60
    if ARGS.max_workers:
        settings.execution.max_workers = ARGS.max_workers


@kopf.on.event("gateway.kyma-project.io", "v2", "apirules")
def on_apirule(type: str | None, body: kopf.Body, **_: Any) -> None:
    """Reconcile the APIRule of this event (in kopf's executor thread)."""
    meta = dict(body.get("metadata") or {})
    if not wanted(type, meta):
        return
    controller.reconcile(Key(LOCAL_CLUSTER, str(meta.get("namespace") or ""), str(meta.get("name"))))


ARGS = argparse.Namespace(max_workers=0)


def main(argv: list[str] | None = None) -> None:
    global ARGS
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--namespace", default="shop")
    parser.add_argument("--max-workers", type=int, default=0, help="kopf's executor threads (0: kopf's default)")
    parser.add_argument("--liveness-port", type=int, default=0)
    ARGS = parser.parse_args(argv)
    logging.basicConfig(level=logging.WARNING)
    liveness = f"http://127.0.0.1:{ARGS.liveness_port}/healthz" if ARGS.liveness_port else None
    asyncio.run(kopf.operator(standalone=True, namespaces=[ARGS.namespace], liveness_endpoint=liveness))


if __name__ == "__main__":
    main()
