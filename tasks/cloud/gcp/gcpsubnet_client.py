"""The GCP I/O of the GcpSubnet flow (``pkg/kcp/provider/gcp/subnet/client``): Compute regional
subnetworks and their region operations through ``google-cloud-compute`` (transport ``rest``), and
Network Connectivity service connection policies through ``google-api-python-client`` built from the
``networkconnectivity`` v1 discovery document the package ships.

Why not ``google-cloud-network-connectivity``: its ``CrossNetworkAutomationService`` client (2.18) has
gRPC transports only, so it could not reach the stand-in on the one HTTP endpoint every other GCP client
uses (``RECONCILERY_GCP_ENDPOINT_URL``); the discovery client sends the documented REST requests, as this layer's
Service Networking and Resource Manager calls do.

As :mod:`tasks.cloud.gcp.client`: plain data out (the APIs' camelCase JSON), every failure a
:class:`~tasks.cloud.gcp.client.GcpApiError`, :func:`fencing.check` before every write, the original's
8 s API timeout bounded by the fence; writes carry a fresh ``requestId`` (the original's idempotence id).
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from typing import Any

import fencing
from tasks.cloud.gcp.client import API_TIMEOUT, GcpApiError, GcpClient, _translate
from tasks.cloud.guard import guarded

__all__ = ["SubnetClient"]

_guarded = guarded(_translate)


class SubnetClient(GcpClient):
    """The calls of the GcpSubnet flow on top of :class:`~tasks.cloud.gcp.client.GcpClient` (same
    arguments: ``endpoint`` aims every API at the stand-in, else Google with the key file or the default
    credentials)."""

    def __init__(self, endpoint: str | None = None, credentials: Any = None,
                 credentials_file: str | None = None) -> None:
        super().__init__(endpoint, credentials, credentials_file)
        self._subnetworks, self._region_operations = self._compute("SubnetworksClient", "RegionOperationsClient")
        self._poll_through("region_operations", self._region_operations, self._subnetworks)

    def _policies(self) -> Any:
        return self._service("networkconnectivity").projects().locations().serviceConnectionPolicies()

    # -- compute regional subnetworks ------------------------------------------------------------------

    @_guarded
    def get_subnetwork(self, project: str, region: str, name: str) -> dict[str, Any] | None:
        """The subnetwork (``name``, ``ipCidrRange``, ``network``, ``purpose``, ...) or ``None`` when missing."""
        return self._found(self._subnetworks.get, project=project, region=region, subnetwork=name)

    @_guarded
    def insert_subnetwork(self, project: str, region: str, name: str, network: str, cidr: str,
                          purpose: str = "PRIVATE", private_ip_google_access: bool = True) -> str:
        """``subnetworks.insert`` of ``name`` with range ``cidr`` on ``network``
        (``projects/<p>/global/networks/<vpc>``); the region operation's name."""
        fencing.check()
        resource = self._types.Subnetwork(name=name, ip_cidr_range=cidr, network=network, purpose=purpose,
                                         private_ip_google_access=private_ip_google_access)
        request = self._types.InsertSubnetworkRequest(project=project, region=region, subnetwork_resource=resource,
                                                     request_id=str(uuid.uuid4()))
        return self._started(self._subnetworks.insert(request=request,
                                                      timeout=fencing.timeout(API_TIMEOUT, write=True)), False)

    @_guarded
    def delete_subnetwork(self, project: str, region: str, name: str) -> str:
        """``subnetworks.delete``; the region operation's name."""
        fencing.check()
        request = self._types.DeleteSubnetworkRequest(project=project, region=region, subnetwork=name,
                                                     request_id=str(uuid.uuid4()))
        return self._started(self._subnetworks.delete(request=request,
                                                      timeout=fencing.timeout(API_TIMEOUT, write=True)), False)

    @_guarded
    def get_region_operation(self, project: str, region: str, name: str) -> dict[str, Any] | None:
        """The region operation (``status`` ``PENDING``/``RUNNING``/``DONE``, ``error.errors[]``) or
        ``None`` when it does not exist."""
        return self._found(self._region_operations.get, project=project, region=region, operation=name)

    # -- network connectivity service connection policies --------------------------------------------

    @_guarded
    def get_connection_policy(self, name: str) -> dict[str, Any] | None:
        """The policy ``projects/<p>/locations/<region>/serviceConnectionPolicies/<id>`` (``network``,
        ``serviceClass``, ``pscConfig.subnetworks``, ...) or ``None`` when missing."""
        return self._read(self._policies().get(name=name))

    @_guarded
    def create_connection_policy(self, parent: str, policy_id: str, network: str, service_class: str,
                                 subnetworks: Sequence[str], description: str = "") -> str:
        """``serviceConnectionPolicies.create`` of ``parent/serviceConnectionPolicies/<policy_id>`` for
        ``service_class`` on ``network`` with ``subnetworks`` (PSC); the operation's name."""
        body: dict[str, Any] = {"network": network, "serviceClass": service_class,
                                "pscConfig": {"subnetworks": list(subnetworks)}}
        if description:
            body["description"] = description
        request = self._policies().create(parent=parent, serviceConnectionPolicyId=policy_id,
                                          requestId=str(uuid.uuid4()), body=body)
        return self._operation_name(self._execute(request, write=True))

    @_guarded
    def update_connection_policy(self, name: str, subnetworks: Sequence[str]) -> str:
        """``serviceConnectionPolicies.patch`` of ``pscConfig`` (the subnetworks); the operation's name."""
        request = self._policies().patch(name=name, updateMask="pscConfig", requestId=str(uuid.uuid4()),
                                         body={"name": name, "pscConfig": {"subnetworks": list(subnetworks)}})
        return self._operation_name(self._execute(request, write=True))

    @_guarded
    def delete_connection_policy(self, name: str) -> str:
        """``serviceConnectionPolicies.delete``; the operation's name."""
        request = self._policies().delete(name=name, requestId=str(uuid.uuid4()))
        return self._operation_name(self._execute(request, write=True))

    @staticmethod
    def _operation_name(op: Mapping[str, Any]) -> str:
        """A started operation's name; an operation that answered done with an error raises it."""
        error = op.get("error")
        if op.get("done") and error:  # google.rpc.Code -> its HTTP status (transient ones stay transient)
            status = {4: 504, 8: 429, 13: 500, 14: 503}.get(int(error.get("code") or 0), 400)
            raise GcpApiError(status, str(error.get("message") or "operation failed"))
        return str(op.get("name") or "")
