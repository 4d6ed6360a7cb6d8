"""pytest plugin of ``tools/covmap.py``: every test's lines recorded under its own coverage
context (its node id), and each test's duration and outcome written to the JSON file named by
``GAUGEDYN_COVMAP_TESTS`` at the end of the session.

The same role as ``pytest --cov-context=test`` (pytest-cov), with ``coverage`` alone: the
session runs under ``coverage run`` and this plugin switches the context around each test's
setup, call and teardown. Lines run at import or collection carry the empty context.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import coverage
import pytest

_TESTS: dict[str, dict[str, object]] = {}


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None):  # noqa: ARG001
    cov = coverage.Coverage.current()
    if cov is not None:
        cov.switch_context(item.nodeid)
    start = time.perf_counter()
    try:
        yield
    finally:
        entry = _TESTS.setdefault(item.nodeid, {"outcome": "passed"})
        entry["seconds"] = round(time.perf_counter() - start, 4)
        if cov is not None:
            cov.switch_context("")


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    entry = _TESTS.setdefault(report.nodeid, {"outcome": "passed"})
    if report.failed:
        entry["outcome"] = "failed"
    elif report.skipped and entry["outcome"] == "passed" and report.when != "teardown":
        entry["outcome"] = "xfailed" if hasattr(report, "wasxfail") else "skipped"


def pytest_sessionfinish(session: pytest.Session) -> None:  # noqa: ARG001
    path = os.environ.get("GAUGEDYN_COVMAP_TESTS")
    if path:
        Path(path).write_text(json.dumps(_TESTS, indent=0, sort_keys=True), encoding="utf-8")
