"""``reconcilery render nginx``: the sample gives the expected (host, upstream) documents."""

from __future__ import annotations

from pathlib import Path

import pytest
import typer
import yaml
from typer.testing import CliRunner

from tasks.nginx.cli import render as render_command
from tasks.nginx.render import render
from tasks.nginx.settings import ConfigError, EdgeNames

ROOT = Path(__file__).resolve().parents[3]
EXAMPLE = ROOT / "examples" / "nginx" / "00-edge.yaml"
SAMPLE = Path("/work/shared/samples/nginx/00-edge.yaml")


def example() -> Path:
    return EXAMPLE if EXAMPLE.exists() else SAMPLE


def app() -> typer.Typer:
    a = typer.Typer()
    a.command()(render_command)
    a.command("other")(lambda: None)  # two commands keep typer from flattening the app
    return a


def test_the_example_renders_every_host_and_upstream() -> None:
    docs, problems = render(yaml.safe_load_all(example().read_text()))
    assert problems == []
    hosts = ["http://127.0.0.1:9000/api", "http://127.0.0.1:9001/api"]
    workers = ["10.0.1.11", "10.0.1.12", "10.0.1.13"]  # control-plane-0 (10.0.0.10) is left out
    expected = [{"host": h, "upstream": u, "protocol": p, "servers": [f"{ip}:{port}" for ip in workers]}
                for h in hosts for p, u, port in (("http", "nginx-lb-http", 30080), ("http", "nginx-lb-https", 30443),
                                                  ("stream", "nginx-lb-tcp", 30432))]
    assert docs == expected


def test_kind_list_and_missing_configmap() -> None:
    objects = [{"kind": "List", "items": [{"kind": "Service", "metadata": {"name": "s", "namespace": "nginx-ingress"},
                                           "spec": {"ports": [{"name": "nkl-web", "nodePort": 30001}]}}]}]
    docs, problems = render(objects)
    assert docs == [] and any("no ConfigMap nkl/nkl-config" in p for p in problems)


def test_invalid_settings_raise() -> None:
    cm = {"kind": "ConfigMap", "metadata": {"name": "nkl-config", "namespace": "nkl"}, "data": {"tls-mode": "x"}}
    with pytest.raises(ConfigError):
        render([cm])


def test_command_prints_a_yaml_stream() -> None:
    result = CliRunner().invoke(app(), ["render", "-f", str(example()), "-o", "yaml"])
    assert result.exit_code == 0, result.output
    docs = list(yaml.safe_load_all(result.stdout))
    assert len(docs) == 6 and docs[0]["servers"] == sorted(docs[0]["servers"])


@pytest.mark.parametrize(("content", "message"), [
    (None, "cannot read"),
    ("a: [", "is not valid YAML"),
    ("- 1\n- 2\n", "document 1 is not a Kubernetes object"),
    ("kind: ConfigMap\nmetadata: {name: nkl-config, namespace: nkl}\ndata: {tls-mode: bogus}\n", "invalid nkl-config"),
])
def test_unreadable_input_exits_2(tmp_path: Path, content: str | None, message: str) -> None:
    path = tmp_path / "in.yaml"
    if content is not None:
        path.write_text(content)
    result = CliRunner().invoke(app(), ["render", "-f", str(path)])
    assert result.exit_code == 2
    assert message in result.output


NLK_EXAMPLE = ROOT / "examples" / "nginx" / "10-nlk.yaml"
NLK_HOST = "http://127.0.0.1:9002/api"
NLK_DOCS = [
    {"host": NLK_HOST, "upstream": "storefront-web", "protocol": "http",
     "servers": ["10.244.1.5:8080", "10.244.1.6:8080", "10.244.2.7:8080"]},
    {"host": NLK_HOST, "upstream": "storefront-tls", "protocol": "stream", "servers": ["192.0.2.50:443"]},
]


def test_both_modes_render_from_the_examples() -> None:
    objects = [d for f in (EXAMPLE, NLK_EXAMPLE) for d in yaml.safe_load_all(f.read_text())]
    docs, problems = render(objects, EdgeNames(modes=("nkl", "nlk")))
    assert problems == [] and len(docs) == 8 and docs[6:] == NLK_DOCS
    assert render(objects)[0] == docs[:6]  # the default runs nkl only


def test_another_namespaces_service_adds_nothing_to_an_upstream_it_names() -> None:
    """Issue 27: a Service of namespace ``evil`` with a port ``http-storefront-web`` was merged into the
    storefront's upstream. The first to name it keeps it; the other is a warning (and an Event live)."""
    objects = list(yaml.safe_load_all(NLK_EXAMPLE.read_text()))
    evil = {"apiVersion": "v1", "kind": "Service",
            "metadata": {"name": "x", "namespace": "evil", "annotations": {"nginx.com/nginxaas": "nginxaas"},
                         "creationTimestamp": "2030-01-01T00:00:00Z"},
            "spec": {"type": "LoadBalancer", "ports": [{"name": "http-storefront-web", "port": 80}]},
            "status": {"loadBalancer": {"ingress": [{"ip": "203.0.113.66"}]}}}
    stamped = [{**d, "metadata": {**d["metadata"], "creationTimestamp": "2026-01-01T00:00:00Z"}}
               if d.get("kind") == "Service" else d for d in objects]
    for given in ([*stamped, evil], [evil, *stamped]):
        docs, problems = render(given, EdgeNames(modes=("nlk",)))
        assert docs == NLK_DOCS
        assert problems == ["Service evil/x: upstreams http:storefront-web are served by another Service (the first "
                            "to name them keeps them): this Service adds no servers to them; rename its ports"]
    allowed = EdgeNames(modes=("nlk",), nlk_allowed_namespaces=("storefront",))
    docs, problems = render([*objects, {**evil, "metadata": {**evil["metadata"], "creationTimestamp": ""}}], allowed)
    assert docs == NLK_DOCS and problems[0].startswith("Service evil/x: namespace evil may not name NGINX upstreams")


def test_config_file_form_with_services_slices_and_nodes(tmp_path: Path) -> None:
    """``--config`` takes the original's config.yaml; the nlk-config ConfigMap in the files is then not needed."""
    config = tmp_path / "config.yaml"
    config.write_text(f"nginx-hosts: {NLK_HOST}\nservice-annotation-match: nginxaas\ntls-mode: no-tls\n"
                      "log-level: info\n")
    cluster = tmp_path / "cluster.yaml"
    cluster.write_text(yaml.safe_dump_all([d for d in yaml.safe_load_all(NLK_EXAMPLE.read_text())
                                           if d["kind"] != "ConfigMap"]))
    result = CliRunner().invoke(app(), ["render", "-f", str(cluster), "--config", str(config), "-o", "yaml"],
                                env={"RECONCILERY_NGINX_MODES": "nlk"})
    assert result.exit_code == 0, result.output
    assert list(yaml.safe_load_all(result.stdout)) == NLK_DOCS
    table = CliRunner().invoke(app(), ["render", "-f", str(cluster), "--config", str(config)],
                               env={"RECONCILERY_NGINX_MODES": "nlk"})
    assert table.stdout.splitlines()[0].split() == ["HOST", "UPSTREAM", "PROTOCOL", "SERVERS"]
    config.write_text("tls-mode: ss-mtls\n")
    bad = CliRunner().invoke(app(), ["render", "-f", str(cluster), "--config", str(config)])
    assert bad.exit_code == 2 and "tls-mode: 'ss-mtls'" in bad.output
    missing = CliRunner().invoke(app(), ["render", "-f", str(cluster), "--config", str(tmp_path / "nope.yaml")])
    assert missing.exit_code == 2 and "--config" in missing.output
