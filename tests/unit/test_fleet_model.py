"""bench/fleet_model.py: the fleet on paper is arithmetic that must add up."""

from __future__ import annotations

import dataclasses
import json

import pytest

from bench.fleet_model import Inputs, main, model


def test_100k_skrs_with_10s_connects_and_a_300s_revisit() -> None:
    m = model(Inputs())
    skr = m.rows[0]
    assert skr.per_s == pytest.approx(100_000 / 300)
    assert skr.in_flight == pytest.approx(100_000 / 300 * 10)
    assert skr.cores == pytest.approx(100_000 / 300 * 10.4 / 1000)  # 333 connects/s x 10.4 ms
    assert skr.processes == 5  # memory (3,334 in flight at 700 a process) and CPU (3.47 cores at 0.8) alike
    assert skr.kcp_requests_per_s == pytest.approx(3 * 100_000 / 300)
    assert skr.other_requests_per_s == pytest.approx(13 * 100_000 / 300)


@pytest.mark.parametrize(("cpu_ms", "in_flight_per_process", "processes"), [
    (6.0, 700, 5),   # bound by connects in flight
    (20.0, 700, 9),  # bound by CPU: 6.67 cores at 0.8 a process
    (6.0, 5000, 3),  # bound by CPU: 2 cores
])
def test_processes_are_the_larger_of_the_cpu_and_the_memory_bound(cpu_ms: float, in_flight_per_process: int,
                                                                  processes: int) -> None:
    i = Inputs(cpu_ms_per_connect=cpu_ms, in_flight_per_process=in_flight_per_process)
    assert model(i).rows[0].processes == processes


def test_redis_share_and_shards_scale_with_the_load() -> None:
    one = model(Inputs())
    four = model(Inputs(skrs=400_000, apirules=400_000, nginx_services=4000))
    # four times the load, a little more Redis: the audits grow with processes x keys held
    assert 4 * one.redis_core_share < four.redis_core_share < 4.5 * one.redis_core_share
    assert one.shards == 1
    assert four.shards == max(1, -(-four.redis_core_share // 0.5))
    assert one.scale_at_saturation == pytest.approx(1 / one.redis_core_share)
    total = sum(r.redis_us_per_s for r in one.rows)
    assert one.total.redis_us_per_s == pytest.approx(total)


def test_a_connect_longer_than_the_revisit_is_refused() -> None:
    with pytest.raises(ValueError, match="longer than the revisit"):
        model(Inputs(connect=400, revisit=300))
    with pytest.raises(ValueError, match="headroom"):
        model(Inputs(headroom=0))


def test_the_command_line_ends_with_one_json_line(capsys: pytest.CaptureFixture[str]) -> None:
    main(["--skrs", "20000", "--cpu-ms-per-connect", "5"])
    out = capsys.readouterr().out.strip().splitlines()
    data = json.loads(out[-1])
    assert data["inputs"] == dataclasses.asdict(Inputs(skrs=20_000, cpu_ms_per_connect=5.0))
    assert data["shards"] == 1 and data["rows"][0]["load"] == "SKR connects"
    assert "SKR connects" in out[2]
