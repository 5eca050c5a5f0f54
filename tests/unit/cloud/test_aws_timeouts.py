"""boto3 calls are bounded by the reconcile's fence (as kube.client's requests are): per-attempt
connect/read timeouts within what the deadline (writes: the lease) leaves, a fenced reconcile gets
FenceError instead of a call. Clients are built against nothing (no request is sent)."""

from __future__ import annotations

import time

import pytest

import fencing
from tasks.cloud.aws import client
from tasks.cloud.settings import CloudSettings


def fence(deadline_in: float, lease_in: float | None = None) -> fencing.Fence:
    now = time.monotonic()
    return fencing.Fence("t-1", now + deadline_in, now + (deadline_in if lease_in is None else lease_in))


def _config(ec2: client.Ec2, write: bool = False) -> tuple[float, float, int]:
    cfg = ec2._ec2(write).meta.config
    return cfg.connect_timeout, cfg.read_timeout, cfg.retries["total_max_attempts"]


def test_outside_a_reconcile_the_default_applies() -> None:
    assert client.attempt_timeout() == client.READ_TIMEOUT
    ec2 = client.ec2_for(CloudSettings(aws_endpoint_url="http://127.0.0.1:9"), "1", "eu-central-1")
    assert _config(ec2) == (client.CONNECT_TIMEOUT, client.READ_TIMEOUT, client.MAX_ATTEMPTS)


@pytest.mark.parametrize(("left", "expected"), [(600.0, 20.0), (45.0, 10.0), (20.0, 5.0), (4.0, 1.0),
                                                 (1.0, 0.2), (0.1, 0.2)])
def test_every_attempt_fits_in_what_the_deadline_leaves(left: float, expected: float) -> None:
    ec2 = client.ec2_for(CloudSettings(aws_endpoint_url="http://127.0.0.1:9"), "1", "eu-central-1")
    with fencing.fenced(fence(left)):
        assert client.attempt_timeout() == expected
        connect, read, attempts = _config(ec2)
    assert read == expected and connect == min(client.CONNECT_TIMEOUT, expected)
    if left >= 1.0:  # all attempts together end before the deadline
        assert read * attempts <= left


def test_writes_are_bounded_by_the_lease_and_refused_once_fenced() -> None:
    ec2 = client.ec2_for(CloudSettings(aws_endpoint_url="http://127.0.0.1:9"), "1", "eu-central-1")
    with fencing.fenced(fence(600.0, lease_in=12.0)):  # 12 s / 3 attempts: step 2.0 while >= 6 s are left (slow CI)
        assert _config(ec2)[1] == 20.0  # a read may outlive the lease
        assert _config(ec2, write=True)[1] == 2.0
    lost = fence(600.0)
    lost.mark_lost("test")
    with fencing.fenced(lost), pytest.raises(fencing.LeaseLost):
        ec2.create_subnet("vpc-1", "eu-central-1a", "10.0.0.0/24", {})
    with fencing.fenced(fence(-1.0, lease_in=600.0)), pytest.raises(fencing.DeadlineExceeded):
        ec2.vpc_by_name("shoot--kyma--c-1")
