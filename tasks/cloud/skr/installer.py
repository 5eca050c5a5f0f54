"""The SKR CRD installer (``pkg/skr/runtime/installer``): the provider's SKR CRDs, kept current by the
version annotation ``cloud-resources.kyma-project.io/version``.

For each CRD of ``tasks/cloud/crds/skr`` (and ``skr/<provider>``): absent -> created (unless the API is
disabled, e.g. on ``trial`` plans); same version -> skipped; another version -> its spec, labels and
annotations copied and updated. When anything was applied, wait (up to 2 s) until the kinds are served.
"""

from __future__ import annotations

import copy
import time

from kube import Kube, resources
from tasks.cloud import install, names
from tasks.cloud.settings import CloudSettings

__all__ = ["install_crds"]


def install_crds(skr: Kube, provider: str, settings: CloudSettings, api_disabled: bool = False) -> list[str]:
    """Apply the SKR CRDs; returns one outcome per manifest (``<crd>: created|updated|skipped|disabled``)."""
    outcomes: list[str] = []
    applied = []
    for crd in install.shared_crds("skr", provider=provider):  # read-only: copied where written
        name = crd["metadata"]["name"]
        version = (crd["metadata"].get("annotations") or {}).get(names.ANNOTATION_VERSION, "")
        current = skr.get(resources.CRD, name)
        if current is None:
            if api_disabled:
                outcomes.append(f"{name}: disabled")
                continue
            skr.create(resources.CRD, copy.deepcopy(crd))
            outcomes.append(f"{name}: created")
        elif ((current.get("metadata") or {}).get("annotations") or {}).get(names.ANNOTATION_VERSION) == version:
            outcomes.append(f"{name}: skipped")
            continue
        else:
            meta = {**current["metadata"], "labels": dict(crd["metadata"].get("labels") or {}),
                    "annotations": {**(current["metadata"].get("annotations") or {}),
                                    **(crd["metadata"].get("annotations") or {})}}
            skr.replace(resources.CRD, {**current, "metadata": meta, "spec": copy.deepcopy(crd["spec"])})
            outcomes.append(f"{name}: updated")
        applied.append(install.resource_of(crd))
    deadline = time.monotonic() + settings.t(2)
    for res in applied:
        while not skr.served(res) and time.monotonic() < deadline:
            time.sleep(0.05)
    return outcomes
