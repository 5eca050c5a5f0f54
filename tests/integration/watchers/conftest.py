from tests.fixtures.kube import kube, widgets  # noqa: F401  (until tests.fixtures.kube is a pytest plugin)
