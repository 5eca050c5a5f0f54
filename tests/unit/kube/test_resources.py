import pytest

from kube import Resource, resources

APIRULE = Resource("gateway.kyma-project.io", "v2", "apirules", "APIRule", True)
CLUSTERROLE = Resource("rbac.authorization.k8s.io", "v1", "clusterroles", "ClusterRole", False)


@pytest.mark.parametrize(
    ("res", "namespace", "name", "sub", "path"),
    [
        (resources.SERVICE, None, None, None, "/api/v1/services"),
        (resources.SERVICE, "default", None, None, "/api/v1/namespaces/default/services"),
        (resources.SERVICE, "default", "web", None, "/api/v1/namespaces/default/services/web"),
        (resources.NODE, "ignored", "n1", None, "/api/v1/nodes/n1"),
        (resources.NAMESPACE, None, "kyma-system", None, "/api/v1/namespaces/kyma-system"),
        (APIRULE, "ns", "r", "status", "/apis/gateway.kyma-project.io/v2/namespaces/ns/apirules/r/status"),
        (APIRULE, None, None, None, "/apis/gateway.kyma-project.io/v2/apirules"),
        (resources.CRD, None, "apirules.gateway.kyma-project.io", None,
         "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/apirules.gateway.kyma-project.io"),
        (resources.SECRET, "a b", "x y", None, "/api/v1/namespaces/a%20b/secrets/x%20y"),
        (CLUSTERROLE, None, "system:aggregate", None,
         "/apis/rbac.authorization.k8s.io/v1/clusterroles/system%3Aaggregate"),
    ],
)
def test_path(res: Resource, namespace: str | None, name: str | None, sub: str | None, path: str) -> None:
    assert res.path(namespace, name, sub) == path


@pytest.mark.parametrize(("namespace", "name"), [
    ("ns", "."), ("ns", ".."), ("ns", "x/y"), ("ns", "a%2Fb"), ("ns", "x" * 254), (".", "r"), ("..", "r"),
    ("a/b", "r"),
])
def test_names_that_are_no_path_segment_are_refused(namespace: str, name: str) -> None:
    from kube.resources import InvalidName

    with pytest.raises(InvalidName, match="not a valid Kubernetes object"):
        APIRULE.path(namespace, name)
    with pytest.raises(InvalidName):
        resources.SECRET.path(namespace, name, "status")


def test_subresource_needs_name() -> None:
    with pytest.raises(ValueError):
        APIRULE.path("ns", None, "status")


def test_names() -> None:
    assert APIRULE.api_version == "gateway.kyma-project.io/v2"
    assert resources.POD.api_version == "v1"
    assert APIRULE.full_name == "apirules.gateway.kyma-project.io"
    assert APIRULE.group_version_path == "/apis/gateway.kyma-project.io/v2"
    assert str(resources.SERVICE) == "Service.v1"
