"""The installer's decision per CRD (:func:`tasks.cloud.skr.installer.plan_crd`), and the label every SKR
CRD is loaded with (the installer lists its CRDs by it)."""

from __future__ import annotations

import pytest

from tasks.cloud import install, names
from tasks.cloud.skr import installer

VERSION = names.ANNOTATION_VERSION


def test_every_skr_crd_carries_the_installers_label_and_no_other_set_does() -> None:
    for provider in ("", "aws", "gcp", "azure"):
        assert all(installer.labelled(c) for c in install.load_crds("skr", provider=provider))
    assert not any(installer.labelled(c) for c in install.load_crds("kcp", "module"))


@pytest.mark.parametrize(("plan_case", "expected"), [
    ("absent", "created"), ("absent-disabled", "disabled"), ("same", "skipped"), ("other-version", "updated"),
    ("same-unlabelled", "updated")])
def test_plan_crd(plan_case: str, expected: str) -> None:
    manifest = install.shared_crds("skr", provider="aws")[0]
    current = {"metadata": {"name": manifest["metadata"]["name"], "labels": dict(manifest["metadata"]["labels"]),
                            "annotations": dict(manifest["metadata"]["annotations"])}}
    if plan_case == "other-version":
        current["metadata"]["annotations"][VERSION] = "v0"
    if plan_case == "same-unlabelled":
        current["metadata"]["labels"] = {}
    found = None if plan_case.startswith("absent") else current
    assert installer.plan_crd(manifest, found, api_disabled=plan_case == "absent-disabled") == expected


