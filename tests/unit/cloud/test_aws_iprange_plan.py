"""The AWS IpRange flow's pure decisions over EC2 answers."""

from __future__ import annotations

from tasks.cloud.aws.iprange import association_for, missing_subnets, subnet_conflict, vpc_overlap


def assoc(cidr: str, state: str = "associated", ident: str = "a") -> dict:
    return {"AssociationId": ident, "CidrBlock": cidr, "CidrBlockState": {"State": state}}


def subnet(cidr: str, zone: str = "z1", cm: bool = False, ident: str = "subnet-1") -> dict:
    tags = [{"Key": "cloud-manager.kyma-project.io/iprange", "Value": "1"}] if cm else []
    return {"SubnetId": ident, "CidrBlock": cidr, "AvailabilityZone": zone, "Tags": tags, "State": "available"}


def test_vpc_overlap_ignores_the_identical_and_disassociated_blocks() -> None:
    blocks = [assoc("10.250.0.0/16"), assoc("10.251.0.0/22"), assoc("10.252.0.0/16", "disassociated")]
    assert vpc_overlap("10.251.0.0/22", blocks) is None
    assert vpc_overlap("10.252.4.0/22", blocks) is None
    assert vpc_overlap("10.250.4.0/22", blocks) == "10.250.0.0/16"


def test_association_for_skips_gone_ones() -> None:
    blocks = [assoc("10.251.0.0/22", "disassociated", "old"), assoc("10.251.0.0/22", "associating", "new")]
    assert association_for("10.251.0.0/22", blocks)["AssociationId"] == "new"
    assert association_for("10.251.0.0/22", blocks[:1]) is None


def test_subnet_conflict_only_with_foreign_subnets() -> None:
    ranges = ["10.251.0.0/24", "10.251.1.0/24"]
    assert subnet_conflict(ranges, [subnet("10.251.0.0/24", cm=True)]) is None
    found = subnet_conflict(ranges, [subnet("10.251.1.128/25", ident="subnet-x")])
    assert found is not None and found[0] == "10.251.1.0/24" and found[1]["SubnetId"] == "subnet-x"


def test_missing_subnets_pairs_zones_and_ranges() -> None:
    ranges, zones = ["r0", "r1", "r2"], ["a", "b", "c"]
    assert missing_subnets(ranges, zones, []) == [(0, "a", "r0"), (1, "b", "r1"), (2, "c", "r2")]
    assert missing_subnets(ranges, zones, [subnet("r1", "b", cm=True)]) == [(0, "a", "r0"), (2, "c", "r2")]
    assert missing_subnets(ranges, zones, [subnet("r1", "a", cm=True)]) == [(0, "a", "r0"), (1, "b", "r1"),
                                                                            (2, "c", "r2")]
