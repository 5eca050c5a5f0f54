"""Certificate hot reload while clients keep sending: kubelet-style ``..data`` swaps, no failed request."""

from __future__ import annotations

import http.client
import json
import socket
import ssl
import threading
import time
from typing import Any
from urllib.parse import urlparse

import requests
from cryptography import x509

from tasks.snatch import metrics
from tasks.snatch.certs import (
    CERT_FILE,
    KEY_FILE,
    DevCertificates,
    generate_ca,
    rotate_serving_cert,
    write_kubelet_dir,
)
from tasks.snatch.mutate import admission_review
from tests.fixtures.processes import wait_for
from tests.integration.snatch.conftest import add_namespace, add_pool_node

POD = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "kyma-system"},
       "spec": {"containers": [{"name": "c", "image": "nginx"}]}}


def served_serial(port: int, ca: str) -> int:
    ctx = ssl.create_default_context(cafile=ca)
    with ctx.wrap_socket(socket.create_connection(("127.0.0.1", port), timeout=5),
                         server_hostname="localhost") as sock:
        der = sock.getpeercert(binary_form=True)
    assert der is not None
    return x509.load_der_x509_certificate(der).serial_number


class Client(threading.Thread):
    """Sends AdmissionReviews until stopped: fresh TLS connections, or one keep-alive connection."""

    def __init__(self, url: str, ca: str, keep_alive: bool) -> None:
        super().__init__(daemon=True)
        self.url, self.ca, self.keep_alive = url, ca, keep_alive
        self.ok = 0
        self.failures: list[str] = []
        self.sockets: set[int] = set()
        self.halt = threading.Event()

    def run(self) -> None:
        body = json.dumps(admission_review(POD)).encode()
        parsed = urlparse(self.url)
        conn = http.client.HTTPSConnection("localhost", parsed.port, timeout=5,
                                           context=ssl.create_default_context(cafile=self.ca))
        while not self.halt.is_set():
            try:
                if self.keep_alive:
                    conn.request("POST", parsed.path, body=body, headers={"Content-Type": "application/json"})
                    resp = conn.getresponse()
                    data: Any = json.loads(resp.read())
                    self.sockets.add(id(conn.sock))
                    status = resp.status
                else:
                    r = requests.post(self.url, data=body, headers={"Content-Type": "application/json"},
                                      verify=self.ca, timeout=5)
                    status, data = r.status_code, r.json()
                if status != 200 or "patch" not in data["response"]:
                    self.failures.append(f"{status} {data}")
                else:
                    self.ok += 1
            except Exception as exc:
                self.failures.append(repr(exc))
        conn.close()


def test_rotation_under_load(api, start_webhook, dev_certs: DevCertificates) -> None:
    kube, kubeconfig = api
    add_pool_node(kube)
    add_namespace(kube, "kyma-system", managed=True)
    hook = start_webhook(kubeconfig)
    ca = str(dev_certs.ca_path)
    port = hook.server.ports.webhook
    first = served_serial(port, ca)
    clients = [Client(hook.url, ca, keep_alive=False), Client(hook.url, ca, keep_alive=True)]
    for c in clients:
        c.start()
    try:
        serials = [first]
        for _ in range(3):
            time.sleep(0.3)
            new = rotate_serving_cert(dev_certs.cert_dir, dev_certs.load_ca()).certificate.serial_number

            def serving(n: int = new) -> bool:
                return served_serial(port, ca) == n

            wait_for(serving, timeout=5, message="new certificate served")
            serials.append(new)
        time.sleep(0.3)
    finally:
        for c in clients:
            c.halt.set()
        for c in clients:
            c.join(10)
    assert len(set(serials)) == 4
    for c in clients:
        assert c.failures == [], c.failures[:3]
        assert c.ok > 10
    assert len(clients[1].sockets) == 1  # the keep-alive connection was never dropped


def test_bad_material_keeps_the_old_pair(api, start_webhook, dev_certs: DevCertificates) -> None:
    _, kubeconfig = api
    hook = start_webhook(kubeconfig)
    ca = str(dev_certs.ca_path)
    port = hook.server.ports.webhook
    good = served_serial(port, ca)
    errors = metrics.CERT_RELOADS.labels("error")._value.get()
    # a new certificate with a key that does not belong to it (a half-finished update)
    other = rotate_serving_cert(dev_certs.cert_dir / ".." / "scratch", generate_ca())
    current_key = (dev_certs.cert_dir / KEY_FILE).read_bytes()
    write_kubelet_dir(dev_certs.cert_dir, {CERT_FILE: other.cert_pem, KEY_FILE: current_key,
                                           "ca.crt": dev_certs.ca_path.read_bytes()})
    wait_for(lambda: metrics.CERT_RELOADS.labels("error")._value.get() > errors, timeout=5,
             message="reload error counted")
    assert served_serial(port, ca) == good
    assert requests.post(hook.url, json=admission_review(POD), verify=ca, timeout=5).status_code == 200
    # a correct pair is picked up again
    fixed = rotate_serving_cert(dev_certs.cert_dir, dev_certs.load_ca()).certificate.serial_number
    wait_for(lambda: served_serial(port, ca) == fixed, timeout=5, message="fixed certificate served")
