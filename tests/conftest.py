"""Test-wide settings.

Hypothesis is derandomized by default: every run draws the same examples, so a green run on one
machine is green on the next, whether or not ``CI`` is set (a randomised run in a clean-clone CI
once drew a tie that failed a property on a bug no earlier run had drawn; the bug is fixed and
kept as an ``@example``, and a test command must not depend on the draw).
``HYPOTHESIS_PROFILE=explore`` draws new examples each run (to look for such cases);
``HYPOTHESIS_PROFILE=thorough`` runs ten times the examples of every property test, also
derandomized (their counts are set relative to the profile's ``max_examples``:
``tests/_properties.py``).

Under pytest-xdist each worker gets its share of the CPUs as its OpenMP, MKL and OpenBLAS thread
count (``-n 2`` on two cores: one thread each), set before torch or numpy starts its pools, unless
the variable is already set. With the libraries' default of one thread per core, two workers run
four threads on two cores, and OpenMP's idle threads spin while they wait for the next parallel
region: the torch-heavy tests then took 1.5 to 4 times the CPU (``tests/test_conservation_laws.py``
and ``tests/test_gauge_recorder.py`` under ``-n 2``: 145 CPU-s, 33 with one thread per worker).
Tests of thread-count behaviour set their own counts (``torch.set_num_threads``).

Figures are written as PNG alone (``GAUGEDYN_FIGURE_FORMATS=png``, unless already set; inherited
by the command-line runs in subprocesses): the PDF was most of a figure's cost and no test reads
one except ``tests/test_experiments_run.py``, which unsets the variable and checks the PDF of a
full run and of its redrawing end to end.

With ``-n`` and no ``--dist``, the tests are distributed by ``worksteal``: each worker starts on
one contiguous half of the tests and steals from the other's queue when idle, so a module's tests
(and its module-scoped fixtures: the quick experiment runs several tests share) mostly stay on one
worker, and no worker idles at the end behind the other's queued long tests (``load`` deals the
tests out in small interleaved batches). It is set here rather than in ``addopts``, where
``pytest -p no:xdist`` stopped on an unknown option.
"""

import os

os.environ.setdefault("GAUGEDYN_FIGURE_FORMATS", "png")

workers = os.environ.get("PYTEST_XDIST_WORKER_COUNT")
if workers:
    try:
        cpus = len(os.sched_getaffinity(0))
    except AttributeError:
        cpus = os.cpu_count() or 1
    for var in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
        os.environ.setdefault(var, str(max(1, cpus // int(workers))))

import pytest  # noqa: E402
from hypothesis import settings  # noqa: E402

settings.register_profile("ci", derandomize=True, database=None)
settings.register_profile("thorough", max_examples=1000, derandomize=True, database=None)
settings.register_profile("explore")
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))


@pytest.hookimpl(tryfirst=True)
def pytest_cmdline_main(config: pytest.Config) -> None:
    """``--dist worksteal`` under ``-n`` unless a ``--dist`` was given (before xdist's default)."""
    if config.pluginmanager.hasplugin("xdist") and config.getoption("numprocesses"):
        if config.getoption("dist") == "no":
            config.option.dist = "worksteal"
