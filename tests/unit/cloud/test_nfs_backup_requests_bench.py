"""The counting helpers of bench/nfs_backup_requests.py: request labels, the WSGI counter, the polling model
and the original's backoff cadence."""

from __future__ import annotations

from collections import Counter as Tally
from typing import Any

from bench.nfs_backup_requests import BACKOFF, ORIGINAL, TITLES, Counter, Run, at, label, polls_in


def test_labels_hide_ids_and_keep_api_versions() -> None:
    assert label("GET", "/v1/projects/p-1/locations/us-east4/backups/cm-1a2b?x=1") \
        == "GET /v1/projects/{}/locations/{}/backups/{}"
    assert label("GET", "/backup-vaults/cm-kyma/recovery-points/arn%3Aaws%3Abackup") \
        == "GET /backup-vaults/{}/recovery-points/{}"
    assert label("PUT", "/backup-jobs") == "PUT /backup-jobs"
    assert label("POST", "/") == "POST / (STS, query protocol)"


def test_the_counter_counts_every_request_and_forgets_on_take() -> None:
    def app(environ: dict[str, Any], start_response: Any) -> list[bytes]:
        start_response("200 OK", [])
        return [b""]

    counter = Counter(app)
    for path in ("/backup-jobs/1", "/backup-jobs/2", "/backup-vaults"):
        counter({"REQUEST_METHOD": "GET", "PATH_INFO": path}, lambda *a: None)
    assert counter.take() == Tally({"GET /backup-jobs/{}": 2, "GET /backup-vaults": 1})
    assert counter.take() == Tally()


def test_the_model_splits_fixed_requests_from_polls() -> None:
    run = Run("x", turns=[Tally(a=0), Tally(a=2), Tally(a=2), Tally(a=5), Tally(a=2), Tally(a=3)],
              states=["", "Creating", "Creating", "Creating", "Creating", "Ready"],
              requeues=[0.1, 5.0, 5.0, 5.0, 5.0, 3600.0])
    fixed, phases = run.model()
    assert phases == [("Creating", 2, 5.0)] and fixed == 14 - 3 * 2
    assert at(fixed, phases, 300) == 8 + 2 * 60


def test_polls_in_a_wait() -> None:
    assert polls_in(300, 5.0) == 60 and polls_in(1, 5.0) == 1
    assert polls_in(300, BACKOFF) == 15  # 5 ms doubling: 5 ms .. 82 s add up to 164 s, the next 164 s does not fit
    assert set(ORIGINAL) == set(TITLES)
