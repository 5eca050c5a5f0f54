"""Shared pytest fixtures; each area keeps its own in ``tests/fixtures/<area>.py``."""

pytest_plugins = [
    "tests.fixtures.processes",
    "tests.fixtures.redis",
    "tests.fixtures.devapi",
    "tests.fixtures.workers",
    "tests.fixtures.platform",
    "tests.fixtures.kube",
    "tests.fixtures.audit",
]
