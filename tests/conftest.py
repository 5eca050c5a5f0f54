"""Shared pytest fixtures; each area keeps its own in ``tests/fixtures/<area>.py``."""

from collections.abc import Iterator

import pytest

import config

pytest_plugins = [
    "tests.fixtures.processes",
    "tests.fixtures.redis",
    "tests.fixtures.devapi",
    "tests.fixtures.workers",
    "tests.fixtures.platform",
    "tests.fixtures.kube",
    "tests.fixtures.audit",
]


@pytest.fixture(autouse=True)
def _fresh_settings(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Every test starts from the environment as it is (settings are cached per process, see
    :mod:`config`), and a ``monkeypatch.setenv`` / ``delenv`` in a test is seen by the next read."""
    config.reset()
    set_env, del_env = pytest.MonkeyPatch.setenv, pytest.MonkeyPatch.delenv

    def setenv(self: pytest.MonkeyPatch, name: str, value: str, prepend: str | None = None) -> None:
        set_env(self, name, value, prepend)
        config.reset()

    def delenv(self: pytest.MonkeyPatch, name: str, raising: bool = True) -> None:
        del_env(self, name, raising)
        config.reset()

    monkeypatch.setattr(pytest.MonkeyPatch, "setenv", setenv)
    monkeypatch.setattr(pytest.MonkeyPatch, "delenv", delenv)
    yield
    config.reset()
