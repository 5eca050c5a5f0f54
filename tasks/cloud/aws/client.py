"""The AWS I/O layer: boto3 EC2 and STS calls the Cloud Resources controllers make, nothing else.

Clients are cached per (service, region, credentials, endpoint) in the process (boto3 clients are
thread-safe once built; building one costs tens of milliseconds). Credentials: the static key of the
settings (``AWS_ACCESS_KEY_ID`` / ``AWS_SECRET_ACCESS_KEY``); with ``AWS_ROLE_NAME`` set, the role
``arn:<partition>:iam::<account>:role/<name>`` of the Scope's account is assumed, as the original does
(``pkg/kcp/provider/aws/client``). ``RECONCILERY_AWS_ENDPOINT_URL`` points every client at one endpoint
(moto's server locally). Every write first calls :func:`fencing.check`.

Errors: :func:`is_retryable` is botocore's standard retry classification (throttling, 5xx, transient
connection errors); :func:`error_code` and :func:`user_message` give the original's user-facing words.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Mapping, Sequence
from typing import Any

import boto3
import botocore.config
import botocore.exceptions

import fencing
from tasks.cloud.settings import CloudSettings

__all__ = ["Ec2", "caller_account", "ec2_for", "error_code", "is_not_found", "is_retryable", "user_message"]

_THROTTLING = {"Throttling", "ThrottlingException", "ThrottledException", "RequestThrottledException",
               "TooManyRequestsException", "ProvisionedThroughputExceededException", "TransactionInProgressException",
               "RequestLimitExceeded", "BandwidthLimitExceeded", "LimitExceededException", "RequestThrottled",
               "SlowDown", "PriorRequestNotComplete", "EC2ThrottledException"}
_TRANSIENT = {"RequestTimeout", "RequestTimeoutException", "InternalError", "InternalFailure",
              "ServiceUnavailable", "Unavailable", "IDPCommunicationError"}
_NOT_FOUND = {"FileSystemNotFound", "AccessPointNotFound", "MountTargetNotFound", "PolicyNotFound",
              "CacheSubnetGroupNotFoundFault", "CacheClusterNotFound", "ResourceNotFoundException",
              "InvalidVpcPeeringConnectionID.NotFound", "InvalidVpcID.NotFound", "InvalidRoute.NotFound",
              "InvalidSubnetID.NotFound"}
_USER_MESSAGES = {"UnauthorizedOperation": "Not authorized to perform this operation.",
                  "AccessDenied": "Not authorized to assume role.",
                  "RouteNotSupported": "Route not supported."}
_CONFIG = botocore.config.Config(connect_timeout=5, read_timeout=20, retries={"mode": "standard", "max_attempts": 3})


def error_code(exc: BaseException) -> str:
    """The AWS error code of a botocore ``ClientError`` (``""`` for other errors)."""
    if isinstance(exc, botocore.exceptions.ClientError):
        return str(exc.response.get("Error", {}).get("Code", ""))
    return ""


def is_retryable(exc: BaseException) -> bool:
    """Throttling, 5xx and connection/timeouts errors (the standard retryer's classification)."""
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
    if not isinstance(exc, botocore.exceptions.ClientError):
        return False
    status = int(exc.response.get("ResponseMetadata", {}).get("HTTPStatusCode") or 0)
    return error_code(exc) in _NOT_FOUND or status == 404


def user_message(exc: BaseException) -> str:
    """The message a user reads for ``exc``: the original's words for known codes, else AWS's message."""
    code = error_code(exc)
    if code in _USER_MESSAGES:
        return _USER_MESSAGES[code]
    if isinstance(exc, botocore.exceptions.ClientError):
        return str(exc.response.get("Error", {}).get("Message") or exc)
    return str(exc)


_lock = threading.Lock()
_clients: dict[tuple[str, ...], Any] = {}
_assumed: dict[tuple[str, str], tuple[float, Mapping[str, str]]] = {}


def _client(service: str, region: str, key: str, secret: str, token: str, endpoint: str) -> Any:
    ident = (service, region, key, secret, token, endpoint)
    with _lock:
        found = _clients.get(ident)
        if found is None:
            session = boto3.session.Session(aws_access_key_id=key, aws_secret_access_key=secret,
                                            aws_session_token=token or None, region_name=region)
            found = session.client(service, endpoint_url=endpoint or None, config=_CONFIG)
            if len(_clients) > 256:  # expired role sessions: start over rather than grow
                _clients.clear()
            _clients[ident] = found
        return found


def caller_account(access_key: str, secret_key: str, region: str, settings: CloudSettings) -> str:
    """The account of a key pair (STS ``GetCallerIdentity`` in ``region``). Raises botocore errors."""
    sts = _client("sts", region or "us-east-1", access_key, secret_key, "", settings.aws_endpoint_url)
    return str(sts.get_caller_identity()["Account"])


def _credentials(settings: CloudSettings, account: str, region: str) -> tuple[str, str, str]:
    if not settings.aws_role_name:
        return settings.aws_access_key_id, settings.aws_secret_access_key, ""
    arn = f"arn:{settings.aws_partition}:iam::{account}:role/{settings.aws_role_name}"
    with _lock:
        cached = _assumed.get((arn, region))
    if cached is None or cached[0] < time.time() + 300:
        sts = _client("sts", region, settings.aws_access_key_id, settings.aws_secret_access_key, "",
                      settings.aws_endpoint_url)
        creds = sts.assume_role(RoleArn=arn, RoleSessionName="cloud-manager")["Credentials"]
        cached = (creds["Expiration"].timestamp(), creds)
        with _lock:
            _assumed[(arn, region)] = cached
    creds = cached[1]
    return creds["AccessKeyId"], creds["SecretAccessKey"], creds["SessionToken"]


def ec2_for(settings: CloudSettings, account: str, region: str) -> Ec2:
    """The EC2 layer for ``account`` in ``region`` (role assumed when configured)."""
    key, secret, token = _credentials(settings, account, region)
    return Ec2(_client("ec2", region, key, secret, token, settings.aws_endpoint_url))


def _tags(tags: Mapping[str, str]) -> list[dict[str, str]]:
    return [{"Key": k, "Value": v} for k, v in tags.items()]


def tag_value(obj: Mapping[str, Any], key: str) -> str | None:
    """The value of tag ``key`` of an EC2 object, or ``None``."""
    for tag in obj.get("Tags") or []:
        if tag.get("Key") == key:
            return str(tag.get("Value", ""))
    return None


class Ec2:
    """EC2 calls of the IpRange and Scope flows, over one boto3 client. Raises botocore errors."""

    def __init__(self, client: Any) -> None:
        self.client = client

    def vpc(self, vpc_id: str) -> dict[str, Any] | None:
        """The VPC ``vpc_id``, or ``None`` when it does not exist."""
        try:
            found = self.client.describe_vpcs(VpcIds=[vpc_id]).get("Vpcs") or []
        except botocore.exceptions.ClientError as exc:
            if is_not_found(exc):
                return None
            raise
        return dict(found[0]) if found else None

    def vpc_by_name(self, name: str) -> dict[str, Any] | None:
        """The VPC whose ``Name`` tag is exactly ``name``, or ``None``."""
        found = self.client.describe_vpcs(Filters=[{"Name": "tag:Name", "Values": [name]}]).get("Vpcs") or []
        for vpc in found:
            if tag_value(vpc, "Name") == name:
                return dict(vpc)
        return None

    def subnets(self, vpc_id: str) -> list[dict[str, Any]]:
        """Every subnet of the VPC."""
        pages = self.client.get_paginator("describe_subnets").paginate(
            Filters=[{"Name": "vpc-id", "Values": [vpc_id]}])
        return [dict(s) for page in pages for s in page.get("Subnets") or []]

    def associate_cidr(self, vpc_id: str, cidr: str) -> dict[str, Any]:
        """``AssociateVpcCidrBlock``; the association."""
        fencing.check()
        return dict(self.client.associate_vpc_cidr_block(VpcId=vpc_id, CidrBlock=cidr)["CidrBlockAssociation"])

    def disassociate_cidr(self, association_id: str) -> None:
        fencing.check()
        self.client.disassociate_vpc_cidr_block(AssociationId=association_id)

    def create_subnet(self, vpc_id: str, zone: str, cidr: str, tags: Mapping[str, str]) -> dict[str, Any]:
        """``CreateSubnet`` with tags; the subnet."""
        fencing.check()
        return dict(self.client.create_subnet(
            VpcId=vpc_id, AvailabilityZone=zone, CidrBlock=cidr,
            TagSpecifications=[{"ResourceType": "subnet", "Tags": _tags(tags)}])["Subnet"])

    def delete_subnet(self, subnet_id: str) -> None:
        fencing.check()
        try:
            self.client.delete_subnet(SubnetId=subnet_id)
        except botocore.exceptions.ClientError as exc:
            if not is_not_found(exc):
                raise

    def nat_gateway_ips(self, vpc_ids: Sequence[str]) -> list[str]:
        """Public IPs of the available NAT gateways of the VPCs, sorted and unique."""
        if not vpc_ids:
            return []
        found = self.client.describe_nat_gateways(Filters=[{"Name": "vpc-id", "Values": list(vpc_ids)}])
        ips = {str(a["PublicIp"]) for gw in found.get("NatGateways") or [] if gw.get("State") == "available"
               for a in gw.get("NatGatewayAddresses") or [] if a.get("PublicIp")}
        return sorted(ips)
