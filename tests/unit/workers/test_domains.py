"""Domains as plug-ins: the installed domains are found through the entry point group
``reconcilery.domains``; the worker, the watcher, the webhook process and ``up`` use what they declare;
a domain whose package is missing is skipped."""

from __future__ import annotations

import dataclasses
import os
import sys
from collections.abc import Iterator
from importlib.metadata import EntryPoint
from pathlib import Path

import pytest

import webhooks
from tests.plugin import fakedomain
from workers import domains
from workers.controller import registry
from workers.domains import GROUP, Domain

REAL = {"apigateway", "cloud", "nginx", "snatch"}
ROOT = Path(__file__).resolve().parents[3]


def entry(name: str, value: str) -> EntryPoint:
    return EntryPoint(name=name, value=value, group=GROUP)


@pytest.fixture
def fake_installed(monkeypatch: pytest.MonkeyPatch) -> Iterator[Domain]:
    """The installed domains are the real ones and :mod:`tests.plugin.fakedomain` (forgotten afterwards)."""
    monkeypatch.delenv("RECONCILERY_DOMAINS", raising=False)
    monkeypatch.setattr(webhooks.listeners, "_factories", dict(webhooks.listeners._factories))
    domains.reset([*domains.discover(), fakedomain.DOMAIN])
    yield fakedomain.DOMAIN
    domains.reset()
    registry.unregister(fakedomain.CONTROLLER)


def dist_info(root: Path, entry_points: str) -> Path:
    """A distribution ``reconcilery-fake`` on ``root`` whose entry points are ``entry_points``."""
    info = root / "reconcilery_fake-0.1.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: reconcilery-fake\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text(f"[{GROUP}]\n{entry_points}\n")
    return root


def test_the_four_domains_are_installed_as_plug_ins() -> None:
    found = {d.name: d for d in domains.discover()}
    assert set(found) >= REAL
    assert "tasks.apigateway.controller" in found["apigateway"].controllers
    assert found["apigateway"].webhooks == ("tasks.apigateway.webhook",)
    assert found["cloud"].queues == ("cloud-skr", "cloud-kcp")
    assert all(d.watches and d.controllers and d.local for d in found.values())


def test_a_domain_installed_through_an_entry_point_is_found(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.syspath_prepend(str(dist_info(tmp_path, "fake = tests.plugin.fakedomain:DOMAIN")))
    found = {d.name: d for d in domains.discover()}
    assert found["fake"] == fakedomain.DOMAIN and set(found) >= REAL


def test_a_missing_optional_domain_is_skipped() -> None:
    found = domains.discover([entry("gone", "tasks.notinstalled.domain:DOMAIN"),
                              entry("fake", "tests.plugin.fakedomain:DOMAIN")])
    assert [d.name for d in found] == ["fake"]


def test_an_import_error_inside_an_installed_domain_is_raised(tmp_path: Path,
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "brokendomain.py").write_text("import tasks.missing_dependency_of_brokendomain\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(ModuleNotFoundError):
        domains.discover([entry("broken", "brokendomain:DOMAIN")])


def test_an_entry_point_that_is_not_a_domain_is_an_error() -> None:
    with pytest.raises(TypeError, match=r"not a workers\.domains\.Domain"):
        domains.discover([entry("odd", "tests.plugin.fakedomain:CONTROLLER")])


def test_two_domains_with_one_name_are_an_error() -> None:
    other = dataclasses.replace(fakedomain.DOMAIN, queues=("other",))
    sys.modules[__name__].OTHER = other  # type: ignore[attr-defined]
    with pytest.raises(ValueError, match="two installed domains"):
        domains.discover([entry("fake", "tests.plugin.fakedomain:DOMAIN"), entry("fake2", f"{__name__}:OTHER")])


def test_the_worker_registers_the_installed_domains_controllers(fake_installed: Domain) -> None:
    from workers.app import load_domains, settings_of

    assert settings_of().domains == ""  # the default: every installed domain
    loaded = load_domains()
    assert "tests.plugin.fakedomain" in loaded and "tasks.nginx.controller" in loaded
    assert fakedomain.CONTROLLER in registry and "nginx-upstream" in registry
    assert "fake" in domains.queues()


def test_the_celery_queues_are_the_installed_domains() -> None:
    """The engine names no queue: the installed domains bring theirs (the first is the default), a domain
    that is not installed leaves none behind, and with no domain the app still configures."""
    from workers.app import NO_DOMAIN_QUEUE, celery_conf
    from workers.settings import load

    settings = load({})
    try:
        domains.reset([*domains.discover(), fakedomain.DOMAIN])
        conf = celery_conf(settings)
        assert [q.name for q in conf["task_queues"]] == ["apigateway", "cloud-skr", "cloud-kcp", "nginx", "snatch",
                                                         "fake"]
        assert conf["task_default_queue"] == "apigateway"
        domains.reset([fakedomain.DOMAIN])
        conf = celery_conf(settings)
        assert [q.name for q in conf["task_queues"]] == ["fake"] and conf["task_default_queue"] == "fake"
        domains.reset([])
        conf = celery_conf(settings)
        assert [q.name for q in conf["task_queues"]] == [NO_DOMAIN_QUEUE] == [conf["task_default_queue"]]
    finally:
        domains.reset()


def test_the_domains_setting_picks_modules(fake_installed: Domain) -> None:
    from workers.app import load_domains

    assert load_domains(("tests.plugin.fakedomain", "tasks.notinstalled.controller")) == ["tests.plugin.fakedomain"]


def test_the_watcher_runs_the_installed_domains_registrations(fake_installed: Domain,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    from reconcilery.cli import load_registrations
    from workers import app

    names = {r.name for r in load_registrations()}
    assert "fake-configmaps" in names and "nginx-services" in names and "snatch-webhook-configs" in names
    # RECONCILERY_WATCH_MODULES: a subset of the installed domains' modules
    monkeypatch.setattr(app.app, "reconcilery_settings",
                        app.settings_of().model_copy(update={"watch_modules": "tests.plugin.fakedomain"}))
    assert [r.name for r in load_registrations()] == ["fake-configmaps"]


def test_the_webhook_process_builds_the_installed_domains_listeners(fake_installed: Domain,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RECONCILERY_APIGATEWAY_WEBHOOK_PORT", "0")
    built = {listener.name: listener for listener in webhooks.load(host="127.0.0.1", kubeconfig=None)}
    assert isinstance(built["fake-listener"], fakedomain.FakeListener) and built["fake-listener"].host == "127.0.0.1"
    assert "apigateway-conversion" in built


def test_up_runs_the_installed_domains_local_parts(fake_installed: Domain, tmp_path: Path) -> None:
    from reconcilery.up import LocalRuntime, UpOptions

    runtime = LocalRuntime(UpOptions(state_dir=tmp_path))
    locals_ = {type(local).__name__: local for local in runtime.load_locals()}
    assert set(locals_) == {"ApiGatewayLocal", "CloudResourcesLocal", "NginxLocal", "SnatchLocal", "FakeLocal"}
    locals_["FakeLocal"].start()
    assert runtime.endpoints["fake"] == "started"  # the domain sees the run's endpoints
    # nothing applied: only the fake domain has rows, and every domain is settled
    assert runtime.summary_rows() == [("Fake", "default/one", "Ready", "from the fake domain")]
    assert all(local.settled() for local in runtime.locals)
    assert "fake hint" in [line for local in runtime.locals for line in local.hints()]
    # --examples: every installed domain's examples that exist in the checkout
    assert runtime.example_paths() == [str(ROOT / "examples" / d) for d in sorted(REAL)]


def test_up_without_the_embedded_harness_runs_no_local_part_and_says_how_to_get_it(
        fake_installed: Domain, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    from reconcilery.up import LocalRuntime, UpOptions

    for name in {"localrun", *(m for m in sys.modules if m.startswith("localrun."))}:
        monkeypatch.setitem(sys.modules, name, None)  # as in the runtime image: no reconcilery[embedded]
    runtime = LocalRuntime(UpOptions(state_dir=tmp_path))
    assert [type(local).__name__ for local in runtime.load_locals()] == ["FakeLocal"]
    out = " ".join(capsys.readouterr().out.split())
    assert ("the domains' local parts (apigateway, cloud, nginx, snatch: stand-ins, CRDs, summary rows) are not "
            "installed: pip install 'reconcilery[embedded]'") in out, out


def test_a_local_part_sets_the_childrens_environment_not_this_process(monkeypatch: pytest.MonkeyPatch,
                                                                     tmp_path: Path) -> None:
    monkeypatch.setenv("RECONCILERY_TEST_SET_BY_USER", "mine")
    monkeypatch.delenv("RECONCILERY_TEST_DEFAULTED", raising=False)
    run = domains.LocalRun(tmp_path, "", None, lambda: None, print, lambda *_: None, lambda _: None,
                           lambda *_: None)
    assert run.default_env("RECONCILERY_TEST_SET_BY_USER", "local") == "mine"  # the user's value wins
    assert run.default_env("RECONCILERY_TEST_DEFAULTED", "local") == "local"
    assert run.env == {"RECONCILERY_TEST_SET_BY_USER": "mine", "RECONCILERY_TEST_DEFAULTED": "local"}
    assert "RECONCILERY_TEST_DEFAULTED" not in os.environ
    with pytest.raises(RuntimeError, match="no workqueue"):
        run.workqueue()


def test_a_resolve_ref_names_module_and_attribute() -> None:
    assert domains.resolve("tests.plugin.fakedomain:FakeLocal") is fakedomain.FakeLocal
    with pytest.raises(ValueError, match="module:attr"):
        domains.resolve("tests.plugin.fakedomain")


def test_finding_the_domains_imports_no_domain_code() -> None:
    """Discovery loads only the registrations (module names): no controller, no Kubernetes client."""
    import subprocess

    code = ("import sys; from workers import domains; assert len(domains.installed()) >= 4; "
            "loaded = [m for m in sys.modules if m.startswith(('kube', 'kubernetes', 'celery', 'redis')) "
            "or m.startswith('tasks.') and m.endswith(('.controller', '.watches', '.webhook', '.plan')) "
            "or m.startswith('localrun')]; "
            "assert not loaded, loaded")
    result = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr


def test_the_cli_adds_the_commands_a_domain_declares(monkeypatch: pytest.MonkeyPatch) -> None:
    """The CLI names no domain: ``render <kind>`` and process commands come from the registrations; a
    command whose module is not installed is left out; a process command validates the settings first."""
    import typer
    from typer.testing import CliRunner

    from reconcilery import cli

    root, render = typer.Typer(), typer.Typer()
    root.add_typer(render, name="render")
    cli.register_domain_commands(root, render, [fakedomain.DOMAIN])
    runner = CliRunner()
    assert runner.invoke(root, ["render", "fakes", "one"]).stdout == "fake one: reconciled\n"
    assert runner.invoke(root, ["render", "missing"]).exit_code == 2  # no such command
    assert runner.invoke(root, ["fake-serve"]).stdout == "fake serving\n"
    monkeypatch.setenv("RECONCILERY_IDLE_WAIT", "soon")  # a bad setting: the process never starts
    bad = runner.invoke(root, ["fake-serve"])
    assert bad.exit_code == 2 and "RECONCILERY_IDLE_WAIT" in bad.output and "fake serving" not in bad.output
    real = {c.name for d in domains.discover() for c in d.all_commands()}
    assert {"apirules", "iprange", "nginx", "snatch", "webhook", "skr-listener"} <= real
