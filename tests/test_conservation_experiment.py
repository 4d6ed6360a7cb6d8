"""``conservation_laws``: a reduced run passes its checks; its analysis says HELD on results built
to agree with the derived counts, the Noether correspondence and a second-order drift, and NOT
HELD (or fails the check) on results built to disagree; the instruments are judged once, by the
declared known-answer controls."""

from __future__ import annotations

import numpy as np
import pytest
from _gauge_helpers import SEED, config_of, run_inline

from gaugedyn.experiments.conservation import _drift as dr
from gaugedyn.experiments.conservation import _protocol as pr
from gaugedyn.experiments.conservation import conservation_laws as cl
from gaugedyn.experiments.conservation._architectures import build
from gaugedyn.gauge import ConservationLaws

EXPERIMENT = cl.EXPERIMENT


def _result(
    laws: int,
    symmetries: int,
    *,
    D: int = 40,
    gap: float = 1e10,
    saturated: int = 3,
    sym_rank: int | None = None,
    silent: int | None = None,
    gen_rank: int | None = None,
    inside: float = 1e-15,
) -> ConservationLaws:
    """A count as ``conservation_laws`` returns it, every number chosen."""
    sym_rank = laws if sym_rank is None else sym_rank
    silent = symmetries - laws if silent is None else silent
    gen_rank = symmetries if gen_rank is None else gen_rank
    point = {
        "decisions": [{"near": (1e-3, 1e-4, 1e-4 / gap, 1e-17)}],
        "theta": np.zeros(D),
        "x": np.zeros((2, 2)),
    }
    gens = {
        "rank": gen_rank,
        "silent": silent,
        "gap": gap,
        "noether": True,
        "symmetries_spanned": True,
        "symmetric": {
            "count": sym_rank,
            "rank": sym_rank,
            "null_residual": 0.0,
            "inside_lie": inside,
        },
        "antisymmetric": {"count": silent, "rank": silent, "null_residual": 0.0, "inside_lie": 0.5},
    }
    known = {
        "count": laws,
        "rank": laws,
        "inside_lie": inside,
        "conserved": True,
        "complete": True,
        "missing": 0,
    }
    return ConservationLaws(
        dimension=D,
        span=D - symmetries,
        lie=D - laws,
        laws=laws,
        symmetries=symmetries,
        depth=2,
        gap=gap,
        rtol=1e-9,
        min_gap=1e6,
        tol=1e-6,
        fields="function",
        confirmed=3,
        saturated=saturated,
        seed=0,
        points=(point,) * 3,
        known=known,
        generators=gens,
    )


def _built(
    task: dict,
    *,
    off: int = 0,
    gap: float = 1e10,
    slope: float = 2.0,
    noether_off: int = 0,
    recorder_off: int = 0,
) -> dict:
    """One task's results: counts ``off`` from the derived ones, drift slopes ``slope`` (per
    seed, spread by +-0.01)."""
    part = task["part"]
    if part == "count":
        a = build(task["spec"])
        out = {
            "derived_laws": np.array(float(a.laws)),
            "derived_symmetries": np.array(float(a.symmetries)),
        }
        for rd in task["readings"]:
            r = _result(
                a.laws + off, a.symmetries + off, gap=gap, sym_rank=a.laws + off + noether_off
            )
            out |= cl._summary(r, rd)
        return out | {"wall_time_s": np.array(1.0)}
    if part == "recorder":
        from gaugedyn.experiments.conservation._networks import recorder_model

        m = recorder_model(task["model"])
        r = _result(m.laws + recorder_off, m.symmetries, D=200, gap=gap)
        return cl._summary(r, "count") | {
            "derived_laws": np.array(float(m.laws)),
            "derived_symmetries": np.array(float(m.symmetries)),
            "samples": np.array(100.0),
            "wall_time_s": np.array(1.0),
        }
    n = task["n_seeds"]
    spread = 0.01 * np.linspace(-1, 1, n)
    eta = 0.02 * 2.0 ** -np.arange(6)
    out = {"wall_time_s": np.array(1.0)}
    for rd in task["drift_readings"]:
        s = slope - (1.0 if rd == "time" else 0.0)
        out |= {f"{rd}_eta": eta, f"{rd}_gap": np.full(n, 0.1), f"{rd}_frozen": np.zeros(n)}
        for g in ("0", "2"):
            key = f"{rd}|{g}|rescale"
            out |= {
                f"{key}|drift": eta[None, :] ** (s + spread)[:, None],
                f"{key}|slope": s + spread,
                f"{key}|unit_slopes": np.repeat(s + spread, 4),
            }
    return out


def _analyse(**kw):
    cfg = config_of(EXPERIMENT, quick=False, drift_models=["mlp"])
    tasks = EXPERIMENT.tasks(cfg)
    results = [_built(t, **kw) for t in tasks]
    arrays, claims, _ = EXPERIMENT.analyse(cfg, tasks, results, SEED)
    return arrays, {c.id: c for c in claims}


def test_built_results_that_agree_are_held_and_pass():
    _, claims = _analyse()
    assert all(c.passed for c in claims.values() if c.kind == "check"), [
        c.id for c in claims.values() if c.kind == "check" and not c.passed
    ]
    for fam in pr.FAMILIES:
        assert claims[f"conservation_laws.count:{fam}"].verdict == "HELD"
        assert claims[f"conservation_laws.noether:{fam}"].verdict == "HELD"
    assert claims["conservation_laws.beyond_identifiability"].verdict == "HELD"
    for g in ("0", "2"):
        c = claims[f"conservation_laws.drift_slope:mlp:{g}"]
        assert c.verdict == "HELD" and set(c.readings) == {"steps", "time"}


def test_counts_off_by_one_are_not_held():
    _, claims = _analyse(off=1)
    assert all(claims[f"conservation_laws.count:{f}"].verdict == "NOT HELD" for f in pr.FAMILIES)


def test_a_symmetric_generator_short_of_the_laws_breaks_the_correspondence():
    _, claims = _analyse(noether_off=-1)
    assert all(claims[f"conservation_laws.noether:{f}"].verdict == "NOT HELD" for f in pr.FAMILIES)


def test_a_first_order_drift_is_not_held():
    _, claims = _analyse(slope=1.0)
    assert claims["conservation_laws.drift_slope:mlp:0"].verdict == "NOT HELD"


def test_a_gap_under_1e6_fails_the_stability_check():
    _, claims = _analyse(gap=1e5)
    assert not claims["conservation_laws.stable"].passed


def test_the_recorder_check_fails_on_a_count_the_docs_do_not_state():
    _, claims = _analyse(recorder_off=1)
    assert not claims["conservation_laws.recorder_counts"].passed


def test_the_run_judges_its_instruments_once():
    """The known-answer controls are the declared ones (run before any task,
    ``test_instruments.py`` breaks each instrument); the run holds no task or check that
    repeats them."""
    cfg = config_of(EXPERIMENT, quick=False)
    assert {t["part"] for t in EXPERIMENT.tasks(cfg)} == {"count", "recorder", "drift"}
    _, claims = _analyse()
    assert not [c for c in claims if ".control" in c]


def test_slope_instrument_reads_its_known_answers():
    """Effect present: the scalar chain's exact ``eta^2`` drift reads slope 2; effect absent: a
    normalised layer's broken ``|W|^2`` reads 1; a readout per unit time (the wrong reading for
    the band) reads 1 on the same chain, so the steps band would refuse it."""
    present = dr.slope_control(0.02, 6, 5, 0, broken=False)["slope"]
    absent = dr.slope_control(0.02, 6, 5, 0, broken=True)["slope"]
    assert abs(present - 2.0) < 0.05 and abs(absent - 1.0) < 0.1
    import torch

    x = torch.linspace(-1, 1, 16, dtype=torch.float64)[:, None]

    def make():
        torch.manual_seed(0)
        return torch.nn.Sequential(
            torch.nn.Linear(1, 1, bias=False), torch.nn.Linear(1, 1, bias=False)
        ).double()

    per_time = dr.drift_rates(make, x, 2 * x, eta0=0.02, sizes=6, steps=5, reading="time")
    assert abs(per_time["groups"]["0"]["slope"] - 1.0) < 0.05


def test_every_catalogue_entry_builds_with_its_derived_count():
    for spec in (*pr.CATALOGUE, pr.FILLING):
        a = build(spec)
        assert a.laws >= 0 and a.symmetries >= a.laws and a.inputs[0] >= 24, a.name


@pytest.mark.slow
def test_a_reduced_run_passes_its_checks():
    cfg = config_of(
        EXPERIMENT,
        families=["relu2", "linear2"],
        recorder_models=["docs_mlp"],
        drift_models=["mlp"],
        drift_seeds=7,  # the slopes' median rule reaches NOT HELD at every draw from seven
        samples=64,
    )
    tasks, results, arrays, claims = run_inline(EXPERIMENT, cfg)
    checks = [c for c in claims if c.kind == "check"]
    assert all(c.passed for c in checks), [(c.id, c.measured) for c in checks if not c.passed]
    findings = {c.id: c for c in claims if c.kind == "finding"}
    assert findings["conservation_laws.count:relu2"].verdict == "HELD"
    assert findings["conservation_laws.count:linear2"].verdict == "HELD"
    assert arrays["count_names"].size == 3  # the two quick entries and the filling network


def test_count_arrays_take_the_extremes_of_what_was_measured_without_warning_on_empty_columns():
    import warnings

    from gaugedyn.experiments.conservation._analysis import _count_arrays

    near = np.array([[1e-3, np.nan, 1e-12, np.nan], [2e-3, np.nan, 5e-12, np.nan]])
    counts = {
        "mlp": {
            "family": "mlp",
            "derived_laws": 3,
            "r": {"laws": 3, "symmetries": 3, "gap": 1e9, "near": near},
        }
    }
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # an all-NaN column is "nothing there", not a warning
        arrays = _count_arrays(counts, ["r"])
    assert arrays["count_kept"][0][0] == 1e-3 and not np.isfinite(arrays["count_kept"][0][1])
    assert arrays["count_near"][0][0] == 5e-12 and not np.isfinite(arrays["count_near"][0][1])
