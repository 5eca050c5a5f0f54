"""The domain's CRDs as package data, and installing them into a cluster.

Sets (folders of ``tasks/cloud/crds``):

- ``kcp``: the KCP kinds the controllers own (``cloud-control.kyma-project.io``: IpRange, Scope, Network,
  Nuke, SkrStatus), the folder's top level (``scripts/sync-crds`` copies them into ``deploy/base/crds``);
- ``kyma``: the outside KCP kinds the loops read (Kyma, GardenerCluster), for local runs;
- ``garden``: the Gardener kinds the Scope is built from (Shoot, CredentialsBinding, SecretBinding),
  for a local Garden;
- ``module``: the CloudResources module CRD, installed into an SKR by Kyma's lifecycle manager (locally
  by ``up`` and the tests);
- ``skr``: the SKR kinds the connect's installer keeps up to date by version annotation
  (``skr/<provider>/`` holds provider-specific ones). Each is loaded with the label
  :data:`LABEL_INSTALLER` (not in the files, which stay cloud-manager's): the installer reads every
  CRD it installed in one list selected by it.
"""

from __future__ import annotations

import copy
import functools
from importlib import resources as package_data
from importlib.resources.abc import Traversable
from typing import Any

import yaml

from kube import Kube, Resource, resources

CRDS = package_data.files("tasks.cloud").joinpath("crds")
SETS = ("kcp", "kyma", "garden", "module", "skr")


_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)

#: The label every SKR CRD is installed with (``skr`` set): the connect's installer lists the CRDs it
#: installed by it, one request per connect instead of a GET per CRD (issue 31).
LABEL_INSTALLER = "cloud-resources.kyma-project.io/installer"
INSTALLER_VALUE = "cloud-manager"
INSTALLER_SELECTOR = f"{LABEL_INSTALLER}={INSTALLER_VALUE}"


def _labelled(crd: dict[str, Any]) -> dict[str, Any]:
    meta = crd.setdefault("metadata", {})
    meta["labels"] = {**(meta.get("labels") or {}), LABEL_INSTALLER: INSTALLER_VALUE}
    return crd


def _docs(folder: Traversable) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    if not folder.is_dir():
        return out
    for entry in sorted(folder.iterdir(), key=lambda e: e.name):
        if entry.is_file() and entry.name.endswith(".yaml"):
            out.extend(d for d in yaml.load_all(entry.read_text(), Loader=_LOADER) if d)
    return out


@functools.lru_cache(maxsize=32)
def _parsed(sets: tuple[str, ...], provider: str) -> tuple[dict[str, Any], ...]:
    docs: list[dict[str, Any]] = []
    for name in sets:
        if name not in SETS:
            raise ValueError(f"unknown CRD set {name!r} (known: {', '.join(SETS)})")
        found = _docs(CRDS if name == "kcp" else CRDS.joinpath(name))
        if name == "skr" and provider:
            found.extend(_docs(CRDS.joinpath(name, provider)))
        docs.extend([_labelled(d) for d in found] if name == "skr" else found)
    return tuple(docs)


def shared_crds(*sets: str, provider: str = "") -> tuple[dict[str, Any], ...]:
    """The CRDs of ``sets`` as :func:`load_crds`, but the process's parsed objects themselves: read them,
    never change them (a connect's installer reads them; copying them cost ~5 ms per connect). Raises
    ``ValueError`` for an unknown set."""
    return _parsed(tuple(sets), provider)


def load_crds(*sets: str, provider: str = "") -> list[dict[str, Any]]:
    """The CRDs of ``sets`` (``skr`` with ``provider``: also ``skr/<provider>/``), fresh copies (the files
    are parsed once per process: every connect's installer reads them). Raises ``ValueError`` for an
    unknown set."""
    return copy.deepcopy(list(_parsed(tuple(sets), provider)))


def resource_of(crd: dict[str, Any]) -> Resource:
    """The :class:`kube.Resource` a CRD serves (its storage version)."""
    spec = crd["spec"]
    version = next(v["name"] for v in spec["versions"] if v.get("storage", True))
    return Resource(spec["group"], version, spec["names"]["plural"], spec["names"]["kind"],
                    spec.get("scope", "Namespaced") == "Namespaced")


def install(kube: Kube, *sets: str, provider: str = "", timeout: float = 30.0) -> list[Resource]:
    """Create or replace the CRDs of ``sets`` in ``kube``'s cluster and wait until they are served.

    Returns the resources served. Raises ``TimeoutError`` after ``timeout`` seconds, ``kube.ApiError``.
    """
    served: list[Resource] = []
    for crd in load_crds(*sets, provider=provider):
        current = kube.get(resources.CRD, crd["metadata"]["name"])
        if current is None:
            kube.create(resources.CRD, crd)
        else:
            kube.replace(resources.CRD, {**crd, "metadata": {**crd["metadata"],
                                                            "resourceVersion": current["metadata"]["resourceVersion"]}})
        served.append(resource_of(crd))
    kube.wait_served(served, timeout, interval=0.05)
    return served
