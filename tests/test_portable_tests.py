"""The suite itself: no test may depend on what differs between machines. Two kinds of assertion
do: one on *which* non-finite value a computation gives (an overflow is ``inf`` on one path and
``nan`` on another: assert ``not isfinite``), and a bitwise comparison of float outputs of two
code paths that may vectorise differently (compare with a tolerance). This scan finds both in
``tests/``; the few that stay are listed below with the reason they hold on every machine, and a
new one fails here until it is changed or listed with its reason."""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path

import pytest

TESTS = Path(__file__).parent

NONFINITE = re.compile(
    r"\b(isnan|isinf|isposinf|isneginf)\(|==\s*-?(np\.|math\.)?(inf|nan)\b|"
    r"==\s*float\(\"-?(inf|nan)\"\)"
)
"""An assertion on a specific non-finite value."""
BITWISE = re.compile(r"\b(assert_array_equal|array_equal|torch\.equal|assert_equal)\(")
"""A bitwise comparison."""
TWO_PATHS = re.compile(r"stack|batch|loop|compiled|native|chain|eager|fast|forward|alone|many")
"""Words that name a second code path in the comparison's lines."""

SENTINEL = "NaN (or inf) is the function's documented value for 'none', set by the code, never an overflow's"
INF_IN = "inf in, inf out by IEEE arithmetic with no inf - inf or 0 * inf on the way"
BY_DESIGN = (
    "the package promises these bits: each copy or seed runs the same operations whatever the "
    "batch (a loop over copies, or seedwise_mm's per-seed products), or the compared values are "
    "integers or exact"
)
ALLOWED_NONFINITE: dict[str, tuple[int, str]] = {
    "test_properties_stats.py": (5, SENTINEL + " (stats' NaN for an interval not formed)"),
    "test_adam_edge.py": (2, SENTINEL),
    "test_adam_experiments.py": (1, SENTINEL),
    "test_adam_grid.py": (1, SENTINEL),
    "test_bench_reproduce.py": (1, "a difference with a missing value is inf by definition"),
    "test_effective_exponent.py": (1, SENTINEL + " (no wall found)"),
    "test_fuzz_api.py": (1, SENTINEL),
    "test_gauge_experiments.py": (1, SENTINEL),
    "test_gauge_functional.py": (1, SENTINEL),
    "test_gauge_on_networks.py": (2, SENTINEL),
    "test_gauge_recorder.py": (2, SENTINEL + " (predicted is NaN where no law is derived)"),
    "test_monitor.py": (1, "the test's operator returns NaN itself; no overflow on the way"),
    "test_pinned_edge.py": (1, SENTINEL),
    "test_batched_tasks.py": (1, "a nan planted in the input: nan in, nan out by IEEE arithmetic"),
    "test_prototypes_headline.py": (1, SENTINEL + " (a size's missing seeds padded with NaN)"),
    "test_plateaus.py": (1, SENTINEL),
    "test_properties_mutants_stats.py": (1, SENTINEL + " (the bound not asked for)"),
    "test_prototypes.py": (2, INF_IN),
    "test_rejudge.py": (1, SENTINEL + " (no power for values that are all the same)"),
    "test_spike_boundary.py": (8, SENTINEL + " (no edge, no bisection, no interval)"),
    "test_store.py": (1, "a NaN written and read back: storage, not arithmetic"),
    "test_theory_batch.py": (1, SENTINEL),
    "test_theory_solve.py": (1, SENTINEL),
    "test_training.py": (1, SENTINEL),
    "test_verdict_rules.py": (2, SENTINEL),
}
ELEMENTWISE = (
    "elementwise IEEE operations (+, -, *, /, sqrt) are correctly rounded, so their bits do not "
    "depend on vectorisation; the fused and the textbook Adam apply the same ones in the same order"
)
ALLOWED_BITWISE: dict[str, tuple[int, str]] = {
    "test_adam_native.py": (
        5,
        "integers and counts, a negative claim, or blocks added in a fixed order",
    ),
    "test_adam_recorder_fast.py": (
        7,
        "a fraction of counts, exact; copies of one run in one process (same kernel, same "
        "inputs, same order) read at different times or saved and restored",
    ),
    "test_auxiliary.py": (
        2,
        BY_DESIGN
        + " (train_auxiliary runs each seed alone on its own generator); a negative claim",
    ),
    "test_batched_adam.py": (12, ELEMENTWISE),
    "test_batched_tasks.py": (
        13,
        "one fixed random draw against itself; block order statistics (min, max, median_low,"
        " median_high) are selections of the same float64 values, exact on any kernel; the"
        " fast update against the tensor-by-tensor one: the same elementwise float64"
        " operations, and the matrix products' bits checked by a probe first (skipped where"
        " the library gives the flat buffer's views other bits); a planted nan's copy masked"
        " out",
    ),
    "test_beta_grid_batched.py": (3, BY_DESIGN),
    "test_compiled_options.py": (1, "a frozen layer: the initial values copied"),
    "test_gauge_experiments.py": (1, BY_DESIGN),
    "test_gauge_under_adam_batched.py": (1, BY_DESIGN),
    "test_online_chain.py": (3, BY_DESIGN + "; a symmetry of one array"),
    "test_online_ode_compiled.py": (
        8,
        "the caller's state left as it was, and times=[0.0] returning the start: copies, no "
        "arithmetic; softplus's shared exponential, the Hermite coefficients four nodes at a "
        "time and the teacher's coefficients computed once: the same IEEE operations in the "
        "same order on both sides (no fast-math, so no contraction or reassociation), exact on "
        "any machine",
    ),
    "test_pinned_chain.py": (1, "exact zeros"),
    "test_prototypes.py": (2, BY_DESIGN),
    "test_spike_shared.py": (
        2,
        "integer status codes; the one trajectory's blocks at several sizes are the same "
        "operations in the same order, order statistics selecting the same float64 values",
    ),
    "test_stacked.py": (1, "integer step indices"),
    "test_theory_batch.py": (2, BY_DESIGN),
    "test_training.py": (8, BY_DESIGN),
    "test_training_online.py": (2, BY_DESIGN),
    "test_training_theory.py": (1, "integers"),
}


def scan(source: str, name: str = "") -> tuple[int, int]:
    """How many assertions on a specific non-finite value, and how many bitwise comparisons
    naming a second code path (in the statement, or in the file's ``name``), ``source`` holds
    (comments ignored)."""
    lines = source.splitlines()
    nonfinite = bitwise = 0
    for i, line in enumerate(lines):
        code = line.split("#")[0]
        if "assert" in code and NONFINITE.search(code):
            nonfinite += 1
        if BITWISE.search(code) and TWO_PATHS.search(name + _statement(lines, i)):
            bitwise += 1
    return nonfinite, bitwise


def _statement(lines: list[str], i: int) -> str:
    """The code of the statement that starts on line ``i`` (to its closing parenthesis)."""
    text = ""
    for line in lines[i : i + 8]:
        text += " " + line.split("#")[0]
        if text.count("(") <= text.count(")"):
            break
    return text


def test_the_scan_finds_what_it_looks_for():
    planted = (
        "assert np.isnan(out['loss'][stop])\n"
        'assert loss == float("inf")\n'
        "assert np.isfinite(x).all()  # fine\n"
        "np.testing.assert_array_equal(\n    stacked['loss'], loop['loss']\n)\n"
        "np.testing.assert_allclose(stacked['loss'], loop['loss'], rtol=1e-6)\n"
        "np.testing.assert_array_equal(a, b)  # one path\n"
    )
    assert scan(planted) == (2, 1)
    assert scan(planted, "test_stacked") == (2, 2)  # the file's name names the second path


@pytest.mark.parametrize("kind", ["nonfinite", "bitwise"])
def test_no_test_compares_what_differs_between_machines(kind):
    allowed = ALLOWED_NONFINITE if kind == "nonfinite" else ALLOWED_BITWISE
    found = Counter()
    for path in sorted(TESTS.glob("*.py")):
        if path.name == Path(__file__).name:  # its own planted examples
            continue
        n = scan(path.read_text(), path.stem)[0 if kind == "nonfinite" else 1]
        if n:
            found[path.name] = n
    listed = {name: n for name, (n, reason) in allowed.items() if reason}
    assert dict(found) == listed, (
        f"{kind} comparisons per file {dict(found)} differ from the allow-list {listed}: "
        "assert not isfinite instead of a particular non-finite value, compare two code paths "
        "with a tolerance, or list the file with the reason its comparison holds everywhere"
    )
