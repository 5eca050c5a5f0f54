"""The AWS I/O layer: boto3 EC2 and STS calls the Cloud Resources controllers make, nothing else.

Clients are cached per (service, region, credentials, endpoint) in the process (boto3 clients are
thread-safe once built; building one costs tens of milliseconds). Credentials: the static key of the
settings (``AWS_ACCESS_KEY_ID`` / ``AWS_SECRET_ACCESS_KEY``); with ``AWS_ROLE_NAME`` set, the role
``arn:<partition>:iam::<account>:role/<name>`` of the Scope's account is assumed, as the original does
(``pkg/kcp/provider/aws/client``). ``RECONCILERY_AWS_ENDPOINT_URL`` points every client at one endpoint
(moto's server locally). Every write first calls :func:`fencing.check`.

Timeouts are bounded by the reconcile's fence, as :mod:`kube.client` bounds its requests: a call's
connect and read timeouts (botocore ``Config(connect_timeout, read_timeout)``, per attempt) are at most
what is left of the reconcile's deadline (writes: and of its lease) divided by the attempts botocore's
standard retryer may make, so the call with its retries ends before the reconcile must; a reconcile
that must stop gets :class:`fencing.FenceError` instead of a call. botocore fixes timeouts per client,
so a client is cached per timeout step (:data:`TIMEOUT_STEPS`: at most a handful per region and
credentials); outside a reconcile the 20 s read / 5 s connect default applies.

Errors: every botocore failure of a client method (and of the ``*_for`` factories, which may assume a
role) is raised as this layer's own :class:`AwsError` (:class:`AwsRefused` when AWS answered with an
error, a ``ClientError``), as the GCP and Azure layers do (:func:`tasks.cloud.guard.guarded`), so the
flows import no botocore. It carries what they read: the code, AWS's message, the user's words
(:func:`user_message`: the original's for known codes), whether it is retryable (botocore's standard
retry classification: throttling, 5xx, transient connection errors) and whether it says "not found".
"""

from __future__ import annotations

import inspect
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any, TypeVar

import boto3
import botocore.config
import botocore.exceptions

import fencing
from kube.refusal import Failure, FailureKind, HttpStatus, Refusal
from tasks.cloud.aws import metrics as aws_metrics
from tasks.cloud.guard import guarded
from tasks.cloud.settings import CloudSettings

__all__ = ["AwsError", "AwsRefused", "Ec2",
           "attempt_timeout", "caller_account", "ec2_for",
           "error_code", "is_not_found", "is_retryable", "peering_ec2_for", "user_message"]

T = TypeVar("T")

#: Seconds before a retryable AWS failure is tried again (the AWS flows' wait).
RETRY_SECONDS = 10.0
_THROTTLING = {"Throttling", "ThrottlingException", "ThrottledException", "RequestThrottledException",
               "TooManyRequestsException", "ProvisionedThroughputExceededException", "TransactionInProgressException",
               "RequestLimitExceeded", "BandwidthLimitExceeded", "LimitExceededException", "RequestThrottled",
               "SlowDown", "PriorRequestNotComplete", "EC2ThrottledException"}
_TRANSIENT = {"RequestTimeout", "RequestTimeoutException", "InternalError", "InternalFailure",
              "ServiceUnavailable", "Unavailable", "IDPCommunicationError"}
_NOT_FOUND = {"FileSystemNotFound", "AccessPointNotFound", "MountTargetNotFound", "PolicyNotFound",
              "CacheSubnetGroupNotFoundFault", "CacheClusterNotFound", "ResourceNotFoundException",
              "InvalidVpcPeeringConnectionID.NotFound", "InvalidVpcPeeringConnectionId.NotFound",
              "InvalidVpcID.NotFound", "InvalidRoute.NotFound",
              "InvalidSubnetID.NotFound"}
_USER_MESSAGES = {"UnauthorizedOperation": "Not authorized to perform this operation.",
                  "AccessDenied": "Not authorized to assume role.",
                  "RouteNotSupported": "Route not supported."}
#: Read timeout per attempt (s) outside a reconcile, the connect timeout's cap, attempts per call (the
#: first and its retries: botocore's standard mode default).
READ_TIMEOUT, CONNECT_TIMEOUT, MAX_ATTEMPTS = 20.0, 5.0, 3
#: The per-attempt timeouts clients are built with (a bounded timeout is rounded down to one).
TIMEOUT_STEPS = (20.0, 10.0, 5.0, 2.0, 1.0, 0.5, 0.2)


def attempt_timeout(write: bool = False) -> float:
    """The per-attempt timeout of a call now: :data:`READ_TIMEOUT`, bounded by the current reconcile's
    fence (``fencing.timeout`` of all :data:`MAX_ATTEMPTS` attempts, divided by them) and rounded down
    to a :data:`TIMEOUT_STEPS` value (the smallest at least). Raises :class:`fencing.FenceError` when
    the reconcile must stop."""
    bounded = fencing.timeout(READ_TIMEOUT * MAX_ATTEMPTS, write=write) / MAX_ATTEMPTS
    return next((step for step in TIMEOUT_STEPS if step <= bounded), TIMEOUT_STEPS[-1])


def _config(timeout: float) -> botocore.config.Config:
    return botocore.config.Config(connect_timeout=min(CONNECT_TIMEOUT, timeout), read_timeout=timeout,
                                  retries={"mode": "standard", "total_max_attempts": MAX_ATTEMPTS})


class AwsError(HttpStatus, Refusal):
    """An AWS request that failed (a botocore error, as the layer raises it; ``str()`` is the SDK's text).

    Attributes:
        status: the HTTP status (0 when no answer came).
        code: the AWS error code (``""`` without an answer).
        message: AWS's own message (``""`` when it gave none; the SDK's text without an answer).
        user: the words a user reads (:func:`user_message`).
        retryable: throttling, 5xx or a transient connection error (:func:`is_retryable`).
        gone: a not-found answer (:func:`is_not_found`).
    """

    def __init__(self, text: str, *, status: int = 0, code: str = "", message: str = "", user: str = "",
                 retryable: bool = False, gone: bool = False) -> None:
        super().__init__(text)
        self.status, self.code, self.message, self.user = status, code, message, user or text
        self.retryable, self.gone = retryable, gone

    @property
    def not_found(self) -> bool:
        """The original's not-found codes, or HTTP 404."""
        return self.gone

    @property
    def failure(self) -> Failure:
        """The one classification (:mod:`kube.refusal`): throttling codes ``throttled``, other retryable
        errors ``retry`` (both back after :data:`RETRY_SECONDS`), not-found codes ``not_found``, else
        ``refused``; ``message`` is the user's words (:func:`user_message`)."""
        kind: FailureKind = "refused"
        if self.retryable:
            kind = "throttled" if self.code in _THROTTLING or self.status == 429 else "retry"
        elif self.gone:
            kind = "not_found"
        return Failure(kind, self.status, self.code, self.user, str(self), RETRY_SECONDS if self.retryable else None)


class AwsRefused(AwsError):
    """AWS answered with an error (botocore's ``ClientError``): a refused call, as opposed to one that
    got no answer (then :class:`AwsError`)."""


def _translate(exc: BaseException) -> AwsError:
    """A botocore error as :class:`AwsError` / :class:`AwsRefused`."""
    if isinstance(exc, botocore.exceptions.ClientError):
        return AwsRefused(str(exc), status=int(exc.response.get("ResponseMetadata", {}).get("HTTPStatusCode") or 0),
                          code=error_code(exc), message=str(exc.response.get("Error", {}).get("Message", "") or ""),
                          user=user_message(exc), retryable=is_retryable(exc), gone=is_not_found(exc))
    return AwsError(str(exc), message=str(exc), user=user_message(exc), retryable=is_retryable(exc))


#: Every botocore failure of a layer's function as :class:`AwsError` (fencing errors pass through).
_guarded = guarded(_translate, (botocore.exceptions.BotoCoreError, botocore.exceptions.ClientError))


def _guard_methods(cls: type[T]) -> type[T]:
    """``cls`` with every public method :data:`_guarded`."""
    for name, value in list(vars(cls).items()):
        if not name.startswith("_") and inspect.isfunction(value):
            setattr(cls, name, _guarded(value))
    return cls


def error_code(exc: BaseException) -> str:
    """The AWS error code of a botocore ``ClientError`` or an :class:`AwsError` (``""`` for other errors)."""
    if isinstance(exc, AwsError):
        return exc.code
    if isinstance(exc, botocore.exceptions.ClientError):
        return str(exc.response.get("Error", {}).get("Code", ""))
    return ""


def is_retryable(exc: BaseException) -> bool:
    """Throttling, 5xx and connection/timeouts errors (the standard retryer's classification)."""
    if isinstance(exc, AwsError):
        return exc.retryable
    if isinstance(exc, (botocore.exceptions.ConnectionError, botocore.exceptions.HTTPClientError,
                        botocore.exceptions.ReadTimeoutError)):
        return True
    if isinstance(exc, botocore.exceptions.ClientError):
        status = int(exc.response.get("ResponseMetadata", {}).get("HTTPStatusCode") or 0)
        code = error_code(exc)
        return code in _THROTTLING or code in _TRANSIENT or status >= 500 or status == 429
    return False


def is_not_found(exc: BaseException) -> bool:
    """The original's not-found codes, or HTTP 404."""
    if isinstance(exc, AwsError):
        return exc.gone
    if not isinstance(exc, botocore.exceptions.ClientError):
        return False
    status = int(exc.response.get("ResponseMetadata", {}).get("HTTPStatusCode") or 0)
    return error_code(exc) in _NOT_FOUND or status == 404


def _unless_gone(call: Callable[..., Any], **params: Any) -> None:
    """``call(**params)``, a delete; a not-found answer (:func:`is_not_found`: already gone) is fine."""
    try:
        call(**params)
    except botocore.exceptions.ClientError as exc:
        if not is_not_found(exc):
            raise

def user_message(exc: BaseException) -> str:
    """The message a user reads for ``exc``: the original's words for known codes, else AWS's message."""
    if isinstance(exc, AwsError):
        return exc.user
    code = error_code(exc)
    if code in _USER_MESSAGES:
        return _USER_MESSAGES[code]
    if isinstance(exc, botocore.exceptions.ClientError):
        return str(exc.response.get("Error", {}).get("Message") or exc)
    return str(exc)


_lock = threading.Lock()
_clients: dict[tuple[str, ...], Any] = {}
_assumed: dict[tuple[str, str], tuple[float, Mapping[str, str]]] = {}
#: access key id -> the account it was handed out for (the subscription label; cleared with the clients).
_accounts: dict[str, str] = {}


def _client(service: str, region: str, key: str, secret: str, token: str, endpoint: str,
            timeout: float | None = None) -> Any:
    """The cached boto3 client; ``timeout``: its per-attempt timeout (default :func:`attempt_timeout`)."""
    timeout = attempt_timeout() if timeout is None else timeout
    ident = (service, region, key, secret, token, endpoint, str(timeout))
    with _lock:
        found = _clients.get(ident)
        if found is None:
            session = boto3.session.Session(aws_access_key_id=key, aws_secret_access_key=secret,
                                            aws_session_token=token or None, region_name=region)
            found = session.client(service, endpoint_url=endpoint or None, config=_config(timeout))
            aws_metrics.instrument(found, _accounts.get(key, ""))  # every attempt counted (provider_metrics)
            if len(_clients) > 256:  # expired role sessions: start over rather than grow
                _clients.clear()
                _accounts.clear()
            _clients[ident] = found
        return found


@_guarded
def caller_account(access_key: str, secret_key: str, region: str, settings: CloudSettings) -> str:
    """The account of a key pair (STS ``GetCallerIdentity`` in ``region``). Raises :class:`AwsError`."""
    sts = _client("sts", region or "us-east-1", access_key, secret_key, "", settings.aws_endpoint_url)
    return str(sts.get_caller_identity()["Account"])


def _credentials(settings: CloudSettings, account: str, region: str, role: str | None = None,
                 key: str = "", secret: str = "") -> tuple[str, str, str]:
    role = settings.aws_role_name if role is None else role
    key, secret = key or settings.aws_access_key_id, secret or settings.aws_secret_access_key
    if not role:
        with _lock:
            _accounts.setdefault(key, account)
        return key, secret, ""
    arn = f"arn:{settings.aws_partition}:iam::{account}:role/{role}"
    with _lock:
        cached = _assumed.get((arn, region))
    if cached is None or cached[0] < time.time() + 300:
        sts = _client("sts", region, key, secret, "", settings.aws_endpoint_url, attempt_timeout(write=True))
        creds = sts.assume_role(RoleArn=arn, RoleSessionName="cloud-manager")["Credentials"]
        cached = (creds["Expiration"].timestamp(), creds)
        with _lock:
            _assumed[(arn, region)] = cached
    creds = cached[1]
    with _lock:
        _accounts[creds["AccessKeyId"]] = account
    return creds["AccessKeyId"], creds["SecretAccessKey"], creds["SessionToken"]


@_guarded
def ec2_for(settings: CloudSettings, account: str, region: str) -> Ec2:
    """The EC2 layer for ``account`` in ``region`` (role assumed when configured); each of its calls
    uses the client of the timeout the reconcile has left then."""
    key, secret, token = _credentials(settings, account, region)
    return Ec2(lambda timeout: _client("ec2", region, key, secret, token, settings.aws_endpoint_url, timeout))


@_guarded
def peering_ec2_for(settings: CloudSettings, account: str, region: str) -> Ec2:
    """The EC2 layer of VPC peering for ``account`` in ``region``: the peering role
    (``AWS_PEERING_ROLE_NAME``) assumed there with the peering key (``AWS_PEERING_ACCESS_KEY_ID``, else the
    default one), as cloud-manager's ``pkg/kcp/provider/aws/vpcpeering`` does for both the Scope's
    account and the customer's. Raises :class:`AwsError` (AssumeRole refused: code ``AccessDenied``)."""
    key, secret, token = _credentials(settings, account, region, settings.aws_peering_role_name,
                                      settings.aws_peering_access_key_id, settings.aws_peering_secret_access_key)
    return Ec2(lambda timeout: _client("ec2", region, key, secret, token, settings.aws_endpoint_url, timeout))


def _tags(tags: Mapping[str, str]) -> list[dict[str, str]]:
    return [{"Key": k, "Value": v} for k, v in tags.items()]


def tag_value(obj: Mapping[str, Any], key: str) -> str | None:
    """The value of tag ``key`` of an EC2 object, or ``None``."""
    for tag in obj.get("Tags") or []:
        if tag.get("Key") == key:
            return str(tag.get("Value", ""))
    return None


@_guard_methods
class Ec2:
    """EC2 calls of the IpRange and Scope flows. Raises :class:`AwsError` (and :class:`fencing.FenceError`
    when the reconcile must stop).

    Args:
        clients: the boto3 EC2 client for a per-attempt timeout in seconds (see :func:`ec2_for`).
    """

    def __init__(self, clients: Callable[[float], Any]) -> None:
        self._clients = clients

    def _ec2(self, write: bool = False) -> Any:
        """The client for this call: bounded by the fence; a write is checked against it first."""
        if write:
            fencing.check()
        return self._clients(attempt_timeout(write))

    def vpc(self, vpc_id: str) -> dict[str, Any] | None:
        """The VPC ``vpc_id``, or ``None`` when it does not exist."""
        try:
            found = self._ec2().describe_vpcs(VpcIds=[vpc_id]).get("Vpcs") or []
        except botocore.exceptions.ClientError as exc:
            if is_not_found(exc):
                return None
            raise
        return dict(found[0]) if found else None

    def vpc_by_name(self, name: str) -> dict[str, Any] | None:
        """The VPC whose ``Name`` tag is exactly ``name``, or ``None``."""
        found = self._ec2().describe_vpcs(Filters=[{"Name": "tag:Name", "Values": [name]}]).get("Vpcs") or []
        for vpc in found:
            if tag_value(vpc, "Name") == name:
                return dict(vpc)
        return None

    def subnets(self, vpc_id: str) -> list[dict[str, Any]]:
        """Every subnet of the VPC."""
        pages = self._ec2().get_paginator("describe_subnets").paginate(
            Filters=[{"Name": "vpc-id", "Values": [vpc_id]}])
        return [dict(s) for page in pages for s in page.get("Subnets") or []]

    def associate_cidr(self, vpc_id: str, cidr: str) -> dict[str, Any]:
        """``AssociateVpcCidrBlock``; the association."""
        return dict(self._ec2(write=True).associate_vpc_cidr_block(VpcId=vpc_id, CidrBlock=cidr)[
            "CidrBlockAssociation"])

    def disassociate_cidr(self, association_id: str) -> None:
        self._ec2(write=True).disassociate_vpc_cidr_block(AssociationId=association_id)

    def create_subnet(self, vpc_id: str, zone: str, cidr: str, tags: Mapping[str, str]) -> dict[str, Any]:
        """``CreateSubnet`` with tags; the subnet."""
        return dict(self._ec2(write=True).create_subnet(
            VpcId=vpc_id, AvailabilityZone=zone, CidrBlock=cidr,
            TagSpecifications=[{"ResourceType": "subnet", "Tags": _tags(tags)}])["Subnet"])

    def _delete(self, method: str, **params: Any) -> None:
        """Call the EC2 write ``method`` with ``params``; a NotFound (already gone) is fine."""
        _unless_gone(getattr(self._ec2(write=True), method), **params)

    def delete_subnet(self, subnet_id: str) -> None:
        """``DeleteSubnet`` (one already gone is fine)."""
        self._delete("delete_subnet", SubnetId=subnet_id)

    def route_tables(self, vpc_id: str) -> list[dict[str, Any]]:
        """Every route table of the VPC (with its routes and tags)."""
        pages = self._ec2().get_paginator("describe_route_tables").paginate(
            Filters=[{"Name": "vpc-id", "Values": [vpc_id]}])
        return [dict(t) for page in pages for t in page.get("RouteTables") or []]

    def create_route(self, route_table_id: str, cidr: str, peering_id: str) -> None:
        """``CreateRoute``: ``cidr`` in the table through the peering connection."""
        self._ec2(write=True).create_route(RouteTableId=route_table_id, DestinationCidrBlock=cidr,
                                           VpcPeeringConnectionId=peering_id)

    def delete_route(self, route_table_id: str, cidr: str) -> None:
        """``DeleteRoute`` (a route already gone is fine)."""
        self._delete("delete_route", RouteTableId=route_table_id, DestinationCidrBlock=cidr)

    def peering(self, peering_id: str) -> dict[str, Any] | None:
        """The VPC peering connection ``peering_id`` as this account sees it, or ``None``."""
        try:
            found = self._ec2().describe_vpc_peering_connections(
                VpcPeeringConnectionIds=[peering_id]).get("VpcPeeringConnections") or []
        except botocore.exceptions.ClientError as exc:
            if is_not_found(exc):
                return None
            raise
        return dict(found[0]) if found else None

    def create_peering(self, vpc_id: str, peer_vpc_id: str, peer_region: str, peer_owner: str,
                       tags: Mapping[str, str]) -> dict[str, Any]:
        """``CreateVpcPeeringConnection`` from ``vpc_id`` to the peer's VPC, tagged; the connection."""
        return dict(self._ec2(write=True).create_vpc_peering_connection(
            VpcId=vpc_id, PeerVpcId=peer_vpc_id, PeerRegion=peer_region, PeerOwnerId=peer_owner,
            TagSpecifications=[{"ResourceType": "vpc-peering-connection", "Tags": _tags(tags)}])[
            "VpcPeeringConnection"])

    def accept_peering(self, peering_id: str) -> dict[str, Any]:
        """``AcceptVpcPeeringConnection`` (from the accepter's account); the connection."""
        return dict(self._ec2(write=True).accept_vpc_peering_connection(
            VpcPeeringConnectionId=peering_id)["VpcPeeringConnection"])

    def delete_peering(self, peering_id: str) -> None:
        """``DeleteVpcPeeringConnection`` (one already gone is fine)."""
        self._delete("delete_vpc_peering_connection", VpcPeeringConnectionId=peering_id)

    def nat_gateway_ips(self, vpc_ids: Sequence[str]) -> list[str]:
        """Public IPs of the available NAT gateways of the VPCs, sorted and unique."""
        if not vpc_ids:
            return []
        found = self._ec2().describe_nat_gateways(Filters=[{"Name": "vpc-id", "Values": list(vpc_ids)}])
        ips = {str(a["PublicIp"]) for gw in found.get("NatGateways") or [] if gw.get("State") == "available"
               for a in gw.get("NatGatewayAddresses") or [] if a.get("PublicIp")}
        return sorted(ips)


@_guard_methods
class _SecurityGroups:
    """The EC2 security group calls of the flows that make one (their client classes derive from it, e.g.
    :class:`ElastiCache`); the class gives :meth:`_ec2`, the EC2 client (fenced for a write)."""

    def _ec2(self, write: bool = False) -> Any:
        raise NotImplementedError

    def security_group(self, vpc_id: str, name: str, tag_name: str) -> dict[str, Any] | None:
        """The security group tagged ``Name=name`` and ``cloud-manager.kyma-project.io/name=tag_name``
        (in ``vpc_id`` when given), or ``None``."""
        filters = [{"Name": "tag:Name", "Values": [name]},
                   {"Name": "tag:cloud-manager.kyma-project.io/name", "Values": [tag_name]}]
        if vpc_id:
            filters.append({"Name": "vpc-id", "Values": [vpc_id]})
        found = self._ec2().describe_security_groups(Filters=filters).get("SecurityGroups") or []
        return dict(found[0]) if found else None

    def create_security_group(self, vpc_id: str, name: str, tags: Mapping[str, str]) -> str:
        """``CreateSecurityGroup`` (group name and description ``name``) with tags; its id."""
        return str(self._ec2(write=True).create_security_group(
            GroupName=name, Description=name, VpcId=vpc_id,
            TagSpecifications=[{"ResourceType": "security-group", "Tags": _tags(tags)}])["GroupId"])

    def authorize_ingress(self, group_id: str, cidrs: Sequence[str], port: int) -> None:
        """``AuthorizeSecurityGroupIngress``: TCP ``port`` from each of ``cidrs``."""
        self._ec2(write=True).authorize_security_group_ingress(GroupId=group_id, IpPermissions=[
            {"IpProtocol": "tcp", "FromPort": port, "ToPort": port, "IpRanges": [{"CidrIp": c} for c in cidrs]}])

    def delete_security_group(self, group_id: str) -> None:
        """``DeleteSecurityGroup`` (one already gone is fine)."""
        try:
            self._ec2(write=True).delete_security_group(GroupId=group_id)
        except botocore.exceptions.ClientError as exc:
            if not (is_not_found(exc) or error_code(exc).endswith(("NotFound", "NotFoundFault"))):
                raise
