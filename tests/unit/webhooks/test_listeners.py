"""The webhooks listener registry: the API Gateway's /convert registers itself; a listener whose port is
taken is left out and the others keep serving."""

from __future__ import annotations

import asyncio
import socket

import webhooks
from tasks.apigateway.webhook import ConversionWebhook


def test_the_conversion_webhook_registers_and_builds_with_the_process_options(monkeypatch) -> None:
    monkeypatch.delenv("RECONCILERY_APIGATEWAY_WEBHOOK_HOST", raising=False)
    monkeypatch.setenv("RECONCILERY_APIGATEWAY_WEBHOOK_PORT", "0")
    built = webhooks.load(host="127.0.0.1", kubeconfig=None)
    (listener,) = [b for b in built if b.name == "apigateway-conversion"]
    assert isinstance(listener, ConversionWebhook) and listener.host == "127.0.0.1" and listener.port == 0
    monkeypatch.setenv("RECONCILERY_APIGATEWAY_WEBHOOK_PORT", "-1")
    assert not [b for b in webhooks.load(host="127.0.0.1") if b.name == "apigateway-conversion"]


def test_a_listener_whose_port_is_taken_is_left_out() -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        busy = ConversionWebhook(lambda: None, host="127.0.0.1", port=taken.getsockname()[1])
        free = ConversionWebhook(lambda: None, host="127.0.0.1", port=0)

        async def run() -> list[webhooks.Listener]:
            started = await webhooks.start_all([busy, free])
            for listener in started:
                await listener.stop()
            return started

        assert asyncio.run(run()) == [free]
