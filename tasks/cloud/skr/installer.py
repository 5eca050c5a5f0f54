"""The SKR CRD installer (``pkg/skr/runtime/installer``): the provider's SKR CRDs, kept current by the
version annotation ``cloud-resources.kyma-project.io/version``.

For each CRD of ``tasks/cloud/crds/skr`` (and ``skr/<provider>``): absent -> created (unless the API is
disabled, e.g. on ``trial`` plans); same version -> skipped; another version -> its spec, labels and
annotations copied and updated. When anything was applied, wait (up to 2 s) until the kinds are served.

Reads (issue 31): one list of the CRDs carrying the installer's label
(:data:`tasks.cloud.install.LABEL_INSTALLER`, which every CRD is installed with) instead of the
original's GET per CRD; a CRD the list does not return (absent, installed without the label by an older
installer, or its label taken off by the SKR's owner) is read by name, and one that exists without the
label is updated like one of another version (which labels it), so the next connect finds it in the list.
The list is the SKR's answer like any other: bounded by the client's read limits and budget, and only
the names of our manifests are looked at. It asks for the CRDs' metadata only (a
``PartialObjectMetadataList``, :meth:`kube.Kube.list_metadata`): their schemas were two thirds of the
bytes a steady connect read (27 of 40 KB on AWS); an update is built from the manifest and the current
metadata (its resourceVersion included), as before.
"""

from __future__ import annotations

import copy
import time
from collections.abc import Mapping
from typing import Any

from kube import Kube, resources
from tasks.cloud import install, names
from tasks.cloud.settings import CloudSettings

__all__ = ["install_crds", "labelled", "plan_crd"]


def labelled(obj: Mapping[str, Any]) -> bool:
    """Whether the CRD ``obj`` carries the installer's label (then the installer's list finds it)."""
    labels = (obj.get("metadata") or {}).get("labels") or {}
    return isinstance(labels, Mapping) and labels.get(install.LABEL_INSTALLER) == install.INSTALLER_VALUE


def plan_crd(manifest: Mapping[str, Any], current: Mapping[str, Any] | None, api_disabled: bool) -> str:
    """What the installer does with ``manifest`` given the SKR's ``current`` CRD (``None``: absent):
    ``created``, ``disabled`` (absent and the API is disabled), ``skipped`` (same version annotation and
    labelled) or ``updated`` (another version, or not labelled). Pure."""
    if current is None:
        return "disabled" if api_disabled else "created"
    version = ((manifest.get("metadata") or {}).get("annotations") or {}).get(names.ANNOTATION_VERSION, "")
    annotations = (current.get("metadata") or {}).get("annotations") or {}
    if isinstance(annotations, Mapping) and annotations.get(names.ANNOTATION_VERSION) == version and labelled(current):
        return "skipped"
    return "updated"


def install_crds(skr: Kube, provider: str, settings: CloudSettings, api_disabled: bool = False) -> list[str]:
    """Apply the SKR CRDs; returns one outcome per manifest (``<crd>: created|updated|skipped|disabled``).
    Raises ``kube.ApiError`` (``kube.ReadLimitExceeded`` past the client's bounds)."""
    outcomes: list[str] = []
    applied = []
    manifests = install.shared_crds("skr", provider=provider)  # read-only: copied where written
    wanted = {crd["metadata"]["name"] for crd in manifests}
    # the metadata only (a PartialObjectMetadataList): the version annotation and label are all it compares
    ours = skr.list_metadata(resources.CRD, label_selector=install.INSTALLER_SELECTOR)
    listed = {str(o["metadata"]["name"]): o for o in ours if (o.get("metadata") or {}).get("name") in wanted}
    for crd in manifests:
        name = crd["metadata"]["name"]
        current = listed.get(name)
        if current is None:
            current = skr.get(resources.CRD, name)  # absent, or not labelled (yet)
        what = plan_crd(crd, current, api_disabled)
        outcomes.append(f"{name}: {what}")
        if what in ("skipped", "disabled"):
            continue
        if what == "created" or current is None:
            skr.create(resources.CRD, copy.deepcopy(crd))
        else:
            meta = {**current["metadata"], "labels": dict(crd["metadata"].get("labels") or {}),
                    "annotations": {**(current["metadata"].get("annotations") or {}),
                                    **(crd["metadata"].get("annotations") or {})}}
            skr.replace(resources.CRD, {"apiVersion": crd["apiVersion"], "kind": crd["kind"], "metadata": meta,
                                        "spec": copy.deepcopy(crd["spec"])})
        applied.append(install.resource_of(crd))
    deadline = time.monotonic() + settings.t(2)
    for res in applied:
        while not skr.served(res) and time.monotonic() < deadline:
            time.sleep(0.05)
    return outcomes
