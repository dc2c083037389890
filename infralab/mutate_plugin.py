"""pytest plugin of ``infralab validate --mutate``: one session runs an exercise's hidden tests on the
reference and then on every generated mutant, stopping a mutant at its first failing test.

Loaded with ``-p infralab.mutate_plugin --mutants MANIFEST``. The manifest (JSON) lists the targets
in order (``{"key": ..., "target": ...}``; the reference first) and the progress file; each test
start and outcome is appended there as one JSON line, so the driver (infralab.mutate) knows which
mutant a crashed session was testing and can go on from the next one. A test the reference fails
(``"reference_failed"`` in the manifest, or seen in this session) is skipped for every mutant: it
cannot tell a mutant from the reference. While the reference's tests run, the lines they execute in
the reference's file (``"reference_path"``) are traced and logged as one ``coverage`` event when the
first mutant's test starts (infralab.mutate_reach).
"""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from infralab.i18n import tr
from infralab.mutate_reach import LineTracer

_MANIFEST = pytest.StashKey[dict]()
TARGET_FIXTURE = "_infralab_target"  # the plugin fixture naming the target of one test


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.getgroup("infralab").addoption(
        "--mutants", dest="infralab_mutants", default=None,
        help=tr("help.pytest.mutants"))


@pytest.hookimpl(trylast=True)
def pytest_configure(config: pytest.Config) -> None:
    path = config.getoption("infralab_mutants")
    if not path:
        return
    manifest = json.loads(Path(path).read_text(encoding="utf-8"))
    manifest["keys"] = {m["target"]: m["key"] for m in manifest["targets"]}
    manifest["killed"] = set()
    manifest["reference_failed"] = set(manifest.get("reference_failed", []))
    manifest["log"] = open(manifest["progress"], "a", encoding="utf-8")  # noqa: SIM115 - closed at unconfigure
    config.stash[_MANIFEST] = manifest
    if manifest.get("reference_path") and manifest["targets"] and manifest["targets"][0]["key"] == "reference":
        manifest["tracer"] = LineTracer(manifest["reference_path"])
        manifest["tracer"].start()
    try:  # a mutant is killed by its first failure: no shrinking
        from hypothesis import Phase, settings
        settings.register_profile("infralab-mutate", parent=settings.get_profile("infralab"),
                                  phases=[Phase.explicit, Phase.reuse, Phase.generate])
        settings.load_profile("infralab-mutate")
    except (ImportError, Exception):  # noqa: BLE001 - hypothesis absent or no infralab profile
        pass


def pytest_unconfigure(config: pytest.Config) -> None:
    manifest = config.stash.get(_MANIFEST, None)
    if manifest is not None:
        manifest["log"].close()


def _stop_tracing(manifest: dict) -> None:
    """The reference's tests are over: log the lines they ran in its file."""
    tracer = manifest.pop("tracer", None)
    if tracer is not None:
        _log(manifest, event="coverage", lines=tracer.stop())


def _log(manifest: dict, **event) -> None:
    manifest["log"].write(json.dumps(event) + "\n")
    manifest["log"].flush()


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    manifest = metafunc.config.stash.get(_MANIFEST, None)
    if manifest is None or TARGET_FIXTURE not in metafunc.fixturenames:
        return
    targets = manifest["targets"]
    metafunc.parametrize(TARGET_FIXTURE, [t["target"] for t in targets], ids=[t["key"] for t in targets])


def _key(item: pytest.Item) -> str | None:
    manifest = item.config.stash.get(_MANIFEST, None)
    callspec = getattr(item, "callspec", None)
    if manifest is None or callspec is None or TARGET_FIXTURE not in callspec.params:
        return None
    return manifest["keys"][callspec.params[TARGET_FIXTURE]]


def _test_name(item: pytest.Item) -> str:
    """The test's name without the target parameter."""
    name = item.nodeid.split("::", 1)[-1]
    key = _key(item)
    return name.replace(f"[{key}]", "").replace(f"[{key}-", "[").replace(f"-{key}]", "]").replace(f"-{key}-", "-")


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(session: pytest.Session, config: pytest.Config, items: list[pytest.Item]) -> None:
    manifest = config.stash.get(_MANIFEST, None)
    if manifest is None:
        return
    order = {t["key"]: i for i, t in enumerate(manifest["targets"])}
    items.sort(key=lambda it: order.get(_key(it), -1))  # stable: file order within one target


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> None:
    manifest = item.config.stash.get(_MANIFEST, None)
    key = _key(item)
    if manifest is None or key is None:
        return
    name = _test_name(item)
    if key != "reference":
        _stop_tracing(manifest)
    if key != "reference" and key in manifest["killed"]:
        pytest.skip(tr("mutate.already_killed"))
    if key != "reference" and name in manifest["reference_failed"]:
        pytest.skip(tr("mutate.reference_fails"))
    _log(manifest, key=key, test=name, event="start")


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    config = _CONFIG[0] if _CONFIG else None
    manifest = config.stash.get(_MANIFEST, None) if config else None
    if manifest is None:
        return
    key = dict(report.user_properties).get("infralab_mutant_key")
    if key is None:
        return
    final = report.when == "call" or report.failed or (report.when == "setup" and report.skipped)
    if not final or (report.skipped and report.when == "setup" and "already killed" in str(report.longrepr)):
        return
    name = dict(report.user_properties)["infralab_mutant_test"]
    outcome = "failed" if report.failed else ("skipped" if report.skipped else "passed")
    message = ""
    if report.failed:
        message = dict(report.user_properties).get("infralab_message") or str(report.longrepr)[-600:]
        if key == "reference":
            manifest["reference_failed"].add(name)
        else:
            manifest["killed"].add(key)
    _log(manifest, key=key, test=name, event=outcome, when=report.when, message=message[:600],
         timeout="from pytest-timeout" in message)  # "Timeout (>2.0s) from pytest-timeout."


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo) -> None:
    key = _key(item)
    if key is not None and not any(k == "infralab_mutant_key" for k, _ in item.user_properties):
        item.user_properties += [("infralab_mutant_key", key), ("infralab_mutant_test", _test_name(item))]


_CONFIG: list[pytest.Config] = []


@pytest.hookimpl(tryfirst=True)
def pytest_sessionstart(session: pytest.Session) -> None:
    _CONFIG[:] = [session.config]


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    manifest = session.config.stash.get(_MANIFEST, None)
    if manifest is not None:
        _stop_tracing(manifest)
        _log(manifest, event="end")
