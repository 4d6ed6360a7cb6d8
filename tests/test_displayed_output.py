"""Output that was wrong or misleading: the finite-sample band figure, the specialization of odd
activations (sign-invariant), and round-off past the mathematical range of losses and cosines."""

from __future__ import annotations

import numpy as np
import pytest

from gaugedyn.theory import Problem, alignment, single, solve, specialization
from gaugedyn.theory._observables import order_parameters


def test_finite_sample_band_surrounds_its_median(tmp_path, monkeypatch):
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib.axes import Axes

    from gaugedyn.experiments.gauge._protocol import OBSERVABLES
    from gaugedyn.experiments.gauge.finite_sample import EXPERIMENT
    from gaugedyn.stats import band

    rng = np.random.default_rng(0)
    t = np.geomspace(1e-2, 10, 12)
    t[0] = 0.0
    ns = np.array([10.0, 100.0])
    arrays = {"ns": ns, "t": t}
    for k in OBSERVABLES:
        for i in range(len(ns)):
            arrays[f"band_{k}_n{i}"] = band(1.0 + rng.random((9, t.size)))  # (lo, med, hi)
        arrays[f"gd_{k}"] = np.ones_like(t)
        arrays[f"flow_{k}"] = np.ones_like(t)
        arrays[f"deviation_{k}"] = 1.0 + rng.random((ns.size, 5))
        arrays[f"fit_{k}"] = np.array([-0.5, 0.0, -0.6, -0.4])
    lines, bands = {}, {}
    plot, fill = Axes.plot, Axes.fill_between

    def spy_plot(self, *args, **kw):
        if str(kw.get("label", "")).startswith("n = ") and self.get_title() == "":
            lines[(id(self), kw["label"])] = np.asarray(args[1])
        return plot(self, *args, **kw)

    def spy_fill(self, x, lo, hi, **kw):
        bands.setdefault(id(self), []).append((np.asarray(lo), np.asarray(hi)))
        return fill(self, x, lo, hi, **kw)

    monkeypatch.setattr(Axes, "plot", spy_plot)
    monkeypatch.setattr(Axes, "fill_between", spy_fill)
    EXPERIMENT.plot(arrays, {}, tmp_path)
    assert len(lines) == len(OBSERVABLES) * len(ns)
    for (ax, label), med in lines.items():
        i = [f"n = {int(n)}" for n in ns].index(label)
        lo, hi = bands[ax][i]
        assert np.all(lo <= med) and np.all(med <= hi), label


def _anti_aligned(activation: str, dim: int = 6) -> Problem:
    """A student that computes the teacher exactly, through ``(-b, -v)``."""
    v = np.random.default_rng(1).normal(size=(1, dim))
    return Problem(a=np.array([-1.0]), W=-v, b=np.array([1.0]), V=v, activation=activation)


@pytest.mark.parametrize("activation", ["erf", "linear"])
def test_odd_activations_specialise_at_alignment_minus_one(activation):
    problem = _anti_aligned(activation)
    sol = solve(problem, t_max=1.0)
    assert sol.specialization_time[0] == 0.0
    assert sol.owner[0] == 0
    Q, R, T = order_parameters(problem.W, problem.V)
    assert specialization(Q, R, T, activation)[0] == 1.0


def test_odd_activation_trained_network_reports_its_specialization_time():
    torch = pytest.importorskip("torch")
    from gaugedyn.training import TrainConfig, train

    before = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        res = train(
            _anti_aligned("erf"), TrainConfig(lr=0.01, steps=3, samples=50), seeds=2, device="cpu"
        )
    finally:
        torch.set_num_threads(before)
    np.testing.assert_array_equal(res.specialization_time()[:, 0], [0.0, 0.0])


def test_relu_is_not_sign_invariant():
    problem = _anti_aligned("relu")
    Q, R, T = order_parameters(problem.W, problem.V)
    assert specialization(Q, R, T, "relu")[0] == -1.0


def test_alignments_stay_within_minus_one_and_one():
    rng = np.random.default_rng(0)
    for _ in range(200):
        V = rng.normal(size=(1, int(rng.integers(2, 50))))
        for sign in (1.0, -1.0):
            Q, R, T = order_parameters(sign * rng.uniform(0.1, 10) * V, V)
            assert abs(alignment(Q, R, T)[0, 0]) <= 1.0


@pytest.mark.parametrize("activation", ["relu", "erf", "linear"])
def test_reported_loss_at_the_optimum_is_not_negative(activation):
    rng = np.random.default_rng(3)
    reported = []
    for _ in range(20):
        V = rng.normal(size=(1, int(rng.integers(2, 40))))
        c = rng.uniform(0.1, 10)
        problem = Problem(
            a=np.array([1 / c]), W=c * V, b=np.array([1.0]), V=V, activation=activation
        )
        reported.append(solve(problem, t_max=1e-3).to_dict()["loss"])
    assert min(reported) >= 0.0


def test_named_setups_keep_their_alignments_in_range():
    sol = solve(single(8, "a-heavy", activation="erf"))
    assert np.all(np.abs(sol.observables["alignment"]) <= 1.0)
