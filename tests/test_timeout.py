"""A crawling test fails on its time limit instead of hanging the suite (pytest-timeout)."""

from __future__ import annotations

import subprocess
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_the_suite_has_a_per_test_time_limit():
    options = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["pytest"]["ini_options"]
    assert 0 < float(options["timeout"]) <= 900


def test_a_crawling_test_fails_on_its_time_limit(tmp_path):
    (tmp_path / "test_crawl.py").write_text(
        "import time\nimport pytest\n\n\n"
        "@pytest.mark.timeout(1)\n"
        "def test_crawls():\n    time.sleep(30)\n"
    )
    run = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:cacheprovider",
            "-p",
            "no:xdist",
            "test_crawl.py",
        ],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert run.returncode == 1, run.stdout + run.stderr
    assert "Timeout" in run.stdout and "1 failed" in run.stdout, run.stdout
