"""No module of ours reads the environment when imported: every one imports under a poisoned
environment (every settings variable set to a value no setting accepts) without failing and without
reading one of our variables (settings are read lazily, at process start, see :mod:`config`)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tests.unit.config.test_settings import _by_variable

ROOT = Path(__file__).resolve().parents[3]
PACKAGES = ("config", "fencing", "informers", "kube", "workers", "watchers", "webhooks", "tasks", "reconcilery",
            "kubedev", "standins")

CHILD = r"""
import collections.abc, importlib, json, os, pkgutil, sys, traceback

names, packages = set(json.loads(sys.argv[1])), json.loads(sys.argv[2])
original = os.environ
for name in names:
    original[name] = "poison{"  # no number, flag, port, JSON or duration
reads = set()


def watched(key):
    return isinstance(key, str) and (key in names or key.startswith("RECONCILERY_"))


def reader():
    # the first frame that is neither this mapping nor the mixins and os helpers that call it
    frame = sys._getframe(2)
    skipped = ("__main__", "os", "collections.abc", "_collections_abc")
    while frame is not None and frame.f_globals.get("__name__") in skipped:
        frame = frame.f_back
    return "" if frame is None else str(frame.f_globals.get("__name__"))


class Recording(collections.abc.MutableMapping):
    def __getitem__(self, key):
        if watched(key):
            module = reader()
            if module.split(".")[0] in packages:  # a library copying the whole environment reads no setting
                reads.add(f"{key} by {module}")
        return original[key]

    def __setitem__(self, key, value):
        original[key] = value

    def __delitem__(self, key):
        del original[key]

    def __iter__(self):
        return iter(original)

    def __len__(self):
        return len(original)

    def copy(self):
        return dict(original)


os.environ = Recording()
import config.loader  # noqa: E402  (after the recording environment is in place)

_load = config.loader.Settings.load.__func__


def load(cls, environ=None):  # a settings class loaded at import reads the environment, whatever its fields
    reads.add(f"{cls.__name__}.load() by {reader()}")
    return _load(cls, environ)


config.loader.Settings.load = classmethod(load)
failures, modules = {}, []
for package in packages:
    found = [package]
    root = importlib.import_module(package)
    found += [m.name for m in pkgutil.walk_packages(root.__path__, package + ".")]
    for name in found:
        if name.endswith("__main__"):
            continue
        modules.append(name)
        try:
            importlib.import_module(name)
        except BaseException:
            failures[name] = traceback.format_exc(limit=-3)
print(json.dumps({"reads": sorted(reads), "failures": failures, "modules": modules}))
"""


def test_every_module_imports_under_a_poisoned_environment_and_reads_none_of_it() -> None:
    names = sorted(_by_variable())
    proc = subprocess.run([sys.executable, "-c", CHILD, json.dumps(names), json.dumps(PACKAGES)], cwd=ROOT,
                          capture_output=True, text=True, timeout=240)
    assert proc.returncode == 0, proc.stderr[-3000:]
    report = json.loads(proc.stdout.strip().splitlines()[-1])
    assert len(report["modules"]) > 150
    assert report["failures"] == {}
    assert report["reads"] == []
