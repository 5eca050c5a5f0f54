"""The GCP I/O layer: the only code of Reconcilery that talks to GCP.

Compute (global addresses, networks and their peerings, global operations) goes through
``google-cloud-compute`` with transport ``rest``; Service Networking (PSA connections and their
operations) and Resource Manager (v1: a project's number, which ``deleteConnection`` requires; v3: the
tags of a network, which VPC peering checks) through ``google-api-python-client``, built from the
discovery documents the package ships (the Python counterpart of the Go clients the original uses:
same paths, same request bodies).

Everything returned is plain data (JSON-shaped dicts with the APIs' camelCase field names); every
failure is a :class:`GcpApiError`, so callers need no SDK import. Before every write
:func:`fencing.check` is called, and every request's timeout is :func:`fencing.timeout` of the
original's 8 s API timeout.

``endpoint`` aims every client at one base URL (``standins.gcp`` locally). Then the SDK's
``ExtendedOperation.result()`` would still poll ``compute.googleapis.com`` (it builds its operations
client without our client options); :meth:`GcpClient.__init__` installs an operations client aimed at
``endpoint`` in the transport's ``_extended_operations_services`` (the workaround measured in
test-infrastructure.md §4). That private attribute is the only one used, and only in this module.
"""

from __future__ import annotations

import contextlib
import json
import threading
import time
from collections.abc import Callable
from typing import Any

import fencing
from kube.refusal import Failure, HttpStatus, Refusal
from tasks.cloud.guard import guarded

#: The original's GCP API call timeout (seconds).
API_TIMEOUT = 8.0
PSA_SERVICE = "servicenetworking.googleapis.com"
PSA_PEERING_NAME = "servicenetworking-googleapis-com"
COMPUTE_NETWORK_URL = "https://www.googleapis.com/compute/v1/projects/{project}/global/networks/{vpc}"


class GcpApiError(HttpStatus, Refusal):
    """A GCP API call failed. ``status`` is the HTTP status (0 when no answer came); ``message`` the
    API's message (what the original puts into conditions)."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message

    @property
    def failure(self) -> Failure:
        """The one classification by HTTP status (:meth:`kube.refusal.Failure.of_http`); the wait after a
        transient one is the GCP flows' retry wait (a setting), so ``delay`` is ``None``."""
        return Failure.of_http(self.status, self.message, text=str(self))

    @property
    def not_authorized(self) -> bool:
        """403 (the original's ``IsNotAuthorized``)."""
        return self.status == 403

    @property
    def operation_in_progress(self) -> bool:
        """400 "There is a peering operation in progress on the local or peer network" (the original's
        ``IsOperationInProgressError``)."""
        return self.status == 400 and "operation in progress" in self.message


def vpc_path(project: str, vpc: str) -> str:
    """``projects/<project>/global/networks/<vpc>`` (the original's ``GetVPCPath``)."""
    return f"projects/{project}/global/networks/{vpc}"


def network_url(project: str, vpc: str) -> str:
    """The full Compute URL of a network (the original's ``getFullNetworkUrl``)."""
    return COMPUTE_NETWORK_URL.format(project=project, vpc=vpc)


def network_filter(project: str, vpc: str) -> str:
    """The list filter of the addresses on one VPC (the original's ``GetNetworkFilter``)."""
    return f'network="{COMPUTE_NETWORK_URL.format(project=project, vpc=vpc)}"'


def _translate(exc: BaseException) -> GcpApiError:
    """Any SDK or transport failure as a :class:`GcpApiError`."""
    from google.api_core import exceptions as gexc
    from googleapiclient.errors import HttpError

    if isinstance(exc, GcpApiError):
        return exc
    if isinstance(exc, gexc.GoogleAPICallError):
        message = str(exc.message)
        response = exc.response
        errors = getattr(getattr(response, "error", None), "errors", None)
        if errors:  # a failed ExtendedOperation: its first error, not "BAD REQUEST"
            message = str(errors[0].message)
        elif response is not None and hasattr(response, "json"):
            # the API's own message, without the SDK's "METHOD url: " prefix
            with contextlib.suppress(ValueError, KeyError, TypeError):
                message = str(response.json()["error"]["message"])
        return GcpApiError(int(exc.code or 0), message)
    if isinstance(exc, HttpError):
        try:
            message = json.loads(exc.content)["error"]["message"]
        except (ValueError, KeyError, TypeError):
            message = exc.reason or str(exc)
        return GcpApiError(int(exc.resp.status), str(message))
    return GcpApiError(0, f"{type(exc).__name__}: {exc}")


#: Every failure of a client method as :class:`GcpApiError` (fencing errors pass through).
_guarded = guarded(_translate)



def credentials_for(endpoint: str | None, credentials: Any, credentials_file: str | None) -> Any:
    """``credentials`` if given, else the service account of ``credentials_file`` (scope cloud-platform),
    else anonymous ones with an ``endpoint`` (the stand-in); None: the caller's default."""
    if credentials is None and credentials_file:
        from google.oauth2 import service_account

        credentials = service_account.Credentials.from_service_account_file(
            credentials_file, scopes=["https://www.googleapis.com/auth/cloud-platform"])
    if credentials is None and endpoint:
        from google.auth.credentials import AnonymousCredentials

        credentials = AnonymousCredentials()
    return credentials


def rest_client_options(endpoint: str | None, credentials: Any) -> dict[str, Any]:
    """Keyword arguments of a ``google-cloud-*`` client on transport ``rest``, aimed at ``endpoint`` (the
    stand-in; trailing ``/`` dropped) when given."""
    from google.api_core.client_options import ClientOptions

    kwargs: dict[str, Any] = {"credentials": credentials, "transport": "rest"}
    if endpoint:
        kwargs["client_options"] = ClientOptions(api_endpoint=endpoint.rstrip("/"))
    return kwargs


def start_operation(call: Callable[..., Any], **request: Any) -> str:
    """Check the fence, then ``call(**request)`` (a ``google-cloud-*`` write) with the write timeout; the name
    of the long-running operation it started."""
    fencing.check()
    return str(call(**request, timeout=fencing.timeout(API_TIMEOUT, write=True)).operation.name)


class GcpClient:
    """GCP clients for one set of credentials.

    Args:
        endpoint: base URL of every API (``http://127.0.0.1:PORT`` for the stand-in); None for Google.
        credentials: ``google.auth`` credentials; None means anonymous with ``endpoint``, else the
            application default credentials.
        credentials_file: a service account JSON file (the original's ``GCP_SA_JSON_KEY_PATH``).

    Thread-safe for the read paths; the discovery clients are built once per instance.
    """

    def __init__(self, endpoint: str | None = None, credentials: Any = None,
                 credentials_file: str | None = None) -> None:
        from google.cloud import compute_v1

        credentials = credentials_for(endpoint, credentials, credentials_file)
        if credentials is None:
            import google.auth

            credentials, _ = google.auth.default(scopes=["https://www.googleapis.com/auth/cloud-platform"])
        self.endpoint = endpoint.rstrip("/") if endpoint else None
        self._credentials = credentials
        self._types = compute_v1
        self._addresses, self._networks, self._operations = self._compute(
            "GlobalAddressesClient", "NetworksClient", "GlobalOperationsClient")
        self._poll_through("global_operations", self._operations, self._addresses, self._networks)
        self._discovery: dict[tuple[str, str], Any] = {}
        self._lock = threading.Lock()
        self._project_numbers: dict[str, int] = {}

    # -- plumbing ----------------------------------------------------------------------------------------

    def _compute(self, *classes: str) -> list[Any]:
        """One ``google.cloud.compute_v1`` client per class name (e.g. ``"RoutersClient"``), on transport
        ``rest`` with this client's endpoint and credentials (:func:`rest_client_options`)."""
        kwargs = rest_client_options(self.endpoint, self._credentials)
        return [getattr(self._types, name)(**kwargs) for name in classes]

    def _poll_through(self, service: str, operations: Any, *sdks: Any) -> None:
        """Aim the ``ExtendedOperation.result()`` polling of ``sdks`` at ``operations`` (a compute operations
        client of ``service``, e.g. ``"region_operations"``) when an endpoint is set. Workaround: the SDK
        polls through a client built without our options, which would reach Google, not the stand-in."""
        if self.endpoint:
            for sdk in sdks:
                sdk._transport._extended_operations_services[service] = operations

    def _service(self, api: str, version: str = "v1") -> Any:
        with self._lock:
            if (api, version) not in self._discovery:
                from googleapiclient import discovery

                options = {"api_endpoint": self.endpoint} if self.endpoint else None
                self._discovery[(api, version)] = discovery.build(api, version, credentials=self._credentials,
                                                                  static_discovery=True, cache_discovery=False,
                                                                  client_options=options)
            return self._discovery[(api, version)]

    def _execute(self, request: Any, write: bool) -> Any:
        """Run a discovery request with a fenced timeout on its own HTTP connection."""
        import google_auth_httplib2

        from tasks.cloud.gcp.metrics import CountingHttp

        if write:
            fencing.check()
        http = google_auth_httplib2.AuthorizedHttp(
            self._credentials, http=CountingHttp(timeout=fencing.timeout(API_TIMEOUT, write=write)))
        return request.execute(http=http)

    def _read(self, request: Any) -> dict[str, Any] | None:
        """A discovery read as plain data, or ``None`` on 404; other failures raise :class:`GcpApiError`."""
        try:
            return dict(self._execute(request, write=False))
        except Exception as exc:
            err = _translate(exc)
            if err.not_found:
                return None
            raise err from exc

    @staticmethod
    def _plain(message: Any) -> dict[str, Any]:
        return dict(type(message).to_dict(message, preserving_proto_field_name=False,
                                          use_integers_for_enums=False))

    def _found(self, get: Any, **request: Any) -> dict[str, Any] | None:
        """``get(**request)`` as plain data, or None on 404 (the API's timeout bounded by the fence)."""
        from google.api_core import exceptions as gexc

        try:
            return self._plain(get(**request, timeout=fencing.timeout(API_TIMEOUT)))
        except gexc.NotFound:
            return None

    @staticmethod
    def _started(op: Any, wait: bool) -> str:
        """A started compute operation's name, after it is done when ``wait``."""
        if wait:
            from google.api_core.future import polling

            # first look after 0.1 s (the SDK's default waits a whole second before its first poll)
            op.result(timeout=fencing.timeout(120.0),
                      polling=polling.DEFAULT_POLLING.with_delay(initial=0.1, maximum=5.0, multiplier=1.5))
        return str(op.name)

    # -- compute global addresses ------------------------------------------------------------------------

    @_guarded
    def get_global_address(self, project: str, name: str) -> dict[str, Any] | None:
        """The global address (``name``, ``address``, ``prefixLength``, ``network`` as a full URL,
        ``purpose``, ``addressType``, ...) or None when it does not exist."""
        return self._found(self._addresses.get, project=project, address=name)

    @_guarded
    def list_global_addresses(self, project: str, filter: str = "") -> list[dict[str, Any]]:
        """All global addresses of ``project`` matching the Compute list ``filter``."""
        from google.cloud import compute_v1

        request = compute_v1.ListGlobalAddressesRequest(project=project, filter=filter or None)
        return [self._plain(a) for a in self._addresses.list(request=request,
                                                             timeout=fencing.timeout(API_TIMEOUT))]

    @_guarded
    def insert_global_address(self, project: str, vpc: str, name: str, description: str, address: str,
                              prefix_length: int, *, wait: bool = False) -> str:
        """Reserve ``address/prefix_length`` on the VPC as an INTERNAL VPC_PEERING global address (the
        original's ``CreatePscIpRange``); returns the operation name. ``wait``: block until it is done
        (through ``ExtendedOperation.result()``, raising the operation's error)."""
        from google.cloud import compute_v1

        fencing.check()
        resource = compute_v1.Address(name=name, description=description, address=address,
                                      prefix_length=prefix_length, network=vpc_path(project, vpc),
                                      address_type="INTERNAL", purpose="VPC_PEERING")
        return self._started(self._addresses.insert(project=project, address_resource=resource,
                                                    timeout=fencing.timeout(API_TIMEOUT, write=True)), wait)

    @_guarded
    def delete_global_address(self, project: str, name: str, *, wait: bool = False) -> str:
        """Delete a global address; returns the operation name (``wait`` as for insert)."""
        fencing.check()
        return self._started(self._addresses.delete(project=project, address=name,
                                                    timeout=fencing.timeout(API_TIMEOUT, write=True)), wait)

    @_guarded
    def get_global_operation(self, project: str, name: str) -> dict[str, Any] | None:
        """The compute operation (``status`` ``PENDING``/``RUNNING``/``DONE``, ``error.errors[]``,
        ``statusMessage``, ...) or None when it does not exist."""
        return self._found(self._operations.get, project=project, operation=name)

    # -- compute networks and peerings ---------------------------------------------------------------

    @_guarded
    def get_network(self, project: str, name: str) -> dict[str, Any] | None:
        """The network (``id``, ``selfLinkWithId``, ``peerings[]`` with ``name``, ``network`` (full URL),
        ``state`` ``ACTIVE``/``INACTIVE``, ``importCustomRoutes``, ``exportCustomRoutes``,
        ``exchangeSubnetRoutes``) or None when it does not exist."""
        return self._found(self._networks.get, project=project, network=name)

    @_guarded
    def get_peering(self, project: str, network: str, name: str) -> dict[str, Any] | None:
        """The peering ``name`` of a network, or None when the network has none of that name (the
        original's ``GetVpcPeering``). Raises :class:`GcpApiError` 404 when the *network* does not exist."""
        found = self._plain(self._networks.get(project=project, network=network,
                                               timeout=fencing.timeout(API_TIMEOUT)))
        return next((p for p in found.get("peerings") or [] if p.get("name") == name), None)

    @_guarded
    def insert_network(self, project: str, name: str, *, description: str = "", wait: bool = False) -> str:
        """Create a custom-mode VPC network (no automatic subnetworks); returns the operation name."""
        from google.cloud import compute_v1

        fencing.check()
        resource = compute_v1.Network(name=name, auto_create_subnetworks=False, description=description or None)
        return self._started(self._networks.insert(project=project, network_resource=resource,
                                                   timeout=fencing.timeout(API_TIMEOUT, write=True)), wait)

    @_guarded
    def add_peering(self, project: str, network: str, name: str, peer_project: str, peer_network: str, *,
                    import_custom_routes: bool, export_custom_routes: bool) -> str:
        """``networks.addPeering``: the peering ``name`` from ``project/network`` to the peer network,
        exchanging subnet routes (the original's ``CreateVpcPeeringRequest``); returns the operation name."""
        from google.cloud import compute_v1

        fencing.check()
        peering = compute_v1.NetworkPeering(name=name, network=network_url(peer_project, peer_network),
                                            exchange_subnet_routes=True, import_custom_routes=import_custom_routes,
                                            export_custom_routes=export_custom_routes)
        request = compute_v1.NetworksAddPeeringRequest(network_peering=peering)
        return self._started(self._networks.add_peering(
            project=project, network=network, networks_add_peering_request_resource=request,
            timeout=fencing.timeout(API_TIMEOUT, write=True)), False)

    @_guarded
    def remove_peering(self, project: str, network: str, name: str) -> str:
        """``networks.removePeering`` of the peering ``name``; returns the operation name."""
        from google.cloud import compute_v1

        fencing.check()
        return self._started(self._networks.remove_peering(
            project=project, network=network,
            networks_remove_peering_request_resource=compute_v1.NetworksRemovePeeringRequest(name=name),
            timeout=fencing.timeout(API_TIMEOUT, write=True)), False)

    # -- Resource Manager v3 tags ----------------------------------------------------------------------

    @_guarded
    def network_tag_keys(self, project: str, network: str) -> list[str]:
        """The namespaced keys (``<project>/<shortName>``) of the tags in effect on a network, as the
        original's ``GetRemoteNetworkTags``: the network's ``selfLinkWithId`` as the full resource name
        ``//compute.googleapis.com/projects/<p>/global/networks/<id>``, then ``effectiveTags.list`` (all
        pages). Raises :class:`GcpApiError` (404: no such network; 403: not allowed to read it)."""
        found = self._plain(self._networks.get(project=project, network=network,
                                               timeout=fencing.timeout(API_TIMEOUT)))
        parent = str(found.get("selfLinkWithId") or "").replace("https://www.googleapis.com/compute/v1",
                                                                "//compute.googleapis.com", 1)
        tags = self._service("cloudresourcemanager", "v3").effectiveTags()
        keys: list[str] = []
        request = tags.list(parent=parent)
        while request is not None:
            page = self._execute(request, write=False)
            keys.extend(str(t.get("namespacedTagKey") or "") for t in page.get("effectiveTags") or [])
            request = tags.list_next(request, page)
        return keys

    def _rm_done(self, request: Any, wait: float = 60.0) -> dict[str, Any]:
        """Run a Resource Manager v3 write and wait for its long-running operation; its ``response``."""
        op = dict(self._execute(request, write=True))
        operations = self._service("cloudresourcemanager", "v3").operations()
        deadline = time.monotonic() + wait
        while not op.get("done"):
            if time.monotonic() > deadline:
                raise GcpApiError(0, f"operation {op.get('name')} did not finish in {wait:.0f} s")
            time.sleep(0.05)
            op = dict(self._execute(operations.get(name=op["name"]), write=False))
        if op.get("error"):
            raise GcpApiError(int((op["error"] or {}).get("code") or 0), str(op["error"].get("message") or ""))
        return dict(op.get("response") or {})

    @_guarded
    def tag_network(self, project: str, network: str, key: str, value: str = "true") -> str:
        """Bind the tag ``<project>/<key>/<value>`` to a network, creating the project's tag key and value
        when missing (what a customer does to allow a Kyma peering; used to seed local runs). Returns
        the tag value's name (``tagValues/<id>``)."""
        rm = self._service("cloudresourcemanager", "v3")
        namespaced_key = f"{project}/{key}"
        try:
            tag_key = self._execute(rm.tagKeys().getNamespaced(name=namespaced_key), write=False)
        except Exception as exc:
            if not _translate(exc).not_found and _translate(exc).status != 403:
                raise
            tag_key = self._rm_done(rm.tagKeys().create(body={"parent": f"projects/{project}", "shortName": key}))
        try:
            tag_value = self._execute(rm.tagValues().getNamespaced(name=f"{namespaced_key}/{value}"), write=False)
        except Exception as exc:
            if not _translate(exc).not_found and _translate(exc).status != 403:
                raise
            tag_value = self._rm_done(rm.tagValues().create(body={"parent": tag_key["name"], "shortName": value}))
        found = self._plain(self._networks.get(project=project, network=network,
                                               timeout=fencing.timeout(API_TIMEOUT)))
        parent = str(found["selfLinkWithId"]).replace("https://www.googleapis.com/compute/v1",
                                                      "//compute.googleapis.com", 1)
        try:
            self._rm_done(rm.tagBindings().create(body={"parent": parent, "tagValue": tag_value["name"]}))
        except Exception as exc:
            if _translate(exc).status != 409:
                raise
        return str(tag_value["name"])

    # -- service networking ---------------------------------------------------------------------------

    @_guarded
    def list_service_connections(self, project: str, vpc: str, service: str = PSA_SERVICE) -> list[dict[str, Any]]:
        """The service's connections on the VPC (``network``, ``peering``, ``reservedPeeringRanges``)."""
        request = self._service("servicenetworking").services().connections().list(
            parent=f"services/{service}", network=vpc_path(project, vpc))
        return list(self._execute(request, write=False).get("connections") or [])

    @_guarded
    def create_service_connection(self, project: str, vpc: str, ranges: list[str],
                                  service: str = PSA_SERVICE) -> str:
        """Create the PSA connection with these reserved ranges; returns the operation name."""
        request = self._service("servicenetworking").services().connections().create(
            parent=f"services/{service}", body={"network": vpc_path(project, vpc), "reservedPeeringRanges": ranges})
        return str(self._execute(request, write=True)["name"])

    @_guarded
    def patch_service_connection(self, project: str, vpc: str, ranges: list[str],
                                 service: str = PSA_SERVICE) -> str:
        """Set the connection's reserved ranges (``force``, as the original); returns the operation name."""
        request = self._service("servicenetworking").services().connections().patch(
            name=f"services/{service}/connections/{PSA_PEERING_NAME}", force=True,
            body={"network": vpc_path(project, vpc), "reservedPeeringRanges": ranges})
        return str(self._execute(request, write=True)["name"])

    @_guarded
    def delete_service_connection(self, project: str, vpc: str, service: str = PSA_SERVICE) -> str:
        """Delete the PSA connection (the consumer network named by project *number*, as the API
        requires); returns the operation name."""
        number = self.project_number(project)
        request = self._service("servicenetworking").services().connections().deleteConnection(
            name=f"services/{service}/connections/{PSA_PEERING_NAME}",
            body={"consumerNetwork": vpc_path(str(number), vpc)})
        return str(self._execute(request, write=True)["name"])

    @_guarded
    def get_service_networking_operation(self, name: str) -> dict[str, Any] | None:
        """The operation (``done``, ``error{code,message}``) or None when it does not exist (404)."""
        return self._read(self._service("servicenetworking").operations().get(name=name))

    @_guarded
    def project_number(self, project: str) -> int:
        """The project's number from Resource Manager (cached: it never changes)."""
        with self._lock:
            if project in self._project_numbers:
                return self._project_numbers[project]
        got = self._execute(self._service("cloudresourcemanager").projects().get(projectId=project), write=False)
        number = int(got["projectNumber"])
        with self._lock:
            self._project_numbers[project] = number
        return number


__all__ = ["API_TIMEOUT", "PSA_PEERING_NAME", "PSA_SERVICE", "GcpApiError", "GcpClient",
           "network_filter", "network_url", "vpc_path"]
