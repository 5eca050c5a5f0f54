"""``up``'s endpoints table and endpoints.json's ``"metrics"`` (pure parts of reconcilery/up.py)."""

from __future__ import annotations

from reconcilery.up import endpoint_rows, metrics_urls


def test_metrics_urls_name_every_process_in_order() -> None:
    assert metrics_urls({"watch": 4001, "worker-apigateway": 4002, "up": 4003}) == {
        "watch": "http://127.0.0.1:4001/metrics", "worker-apigateway": "http://127.0.0.1:4002/metrics",
        "up": "http://127.0.0.1:4003/metrics"}


def test_the_table_has_a_row_per_metrics_url_and_flowers_task_list_and_no_password() -> None:
    rows = endpoint_rows({
        "redis": "redis://:s3cret@127.0.0.1:6380/0",
        "flower": "http://127.0.0.1:5555",
        "nginx_plus": ["http://127.0.0.1:9000/api", "http://127.0.0.1:9001/api"],
        "metrics": {"watch": "http://127.0.0.1:4001/metrics", "beat": "http://127.0.0.1:4002/metrics"},
    })
    assert rows == [
        ("redis", "redis://:***@127.0.0.1:6380/0"),
        ("flower", "http://127.0.0.1:5555"),
        ("flower tasks", "http://127.0.0.1:5555/tasks"),
        ("nginx_plus", "http://127.0.0.1:9000/api, http://127.0.0.1:9001/api"),
        ("metrics watch", "http://127.0.0.1:4001/metrics"),
        ("metrics beat", "http://127.0.0.1:4002/metrics"),
    ]
