"""The classical options in online SGD: weight decay, a separate second-layer rate and label
noise, the torch trainer against the online ODE."""

import numpy as np
import pytest

from gaugedyn import InputError
from gaugedyn.theory import random_problem
from gaugedyn.training import TrainConfig, train
from gaugedyn.training._online_ode import online_ode

OPTIONS = dict(weight_decay=0.1, lr2=0.5, label_noise=0.5)


def _inside(res, ode, late):
    inside = []
    for key in ("a", "Q", "R"):
        x = getattr(res, key)[:, late]
        lo, hi = np.quantile(x, [0.1, 0.9], axis=0)
        y = ode[key][late]
        inside.append(((y >= lo) & (y <= hi)).ravel())
    return np.concatenate(inside).mean()


def test_online_ode_with_options_follows_torch_online_sgd():
    """At D = 500, 10 seeds of torch online SGD with weight decay, lr2 and label noise: the
    online ODE with the same options lies inside their 10-90% band at >= 90% of the recorded
    entries from t = 0.5 on, and the ODE without the options does not."""
    D = 500
    problem = random_problem(D, 2, 2, np.random.default_rng(4), activation="erf")
    cfg = TrainConfig(
        optimizer="sgd", lr=1.0, steps=4 * D, samples=None, batch=1, points_per_decade=6, **OPTIONS
    )
    res = train(problem, cfg, seeds=10, root_seed=2, backend="torch")
    late = res.time >= 0.5
    with_options = online_ode(problem, 1.0, res.time, rtol=1e-8, atol=1e-10, **OPTIONS)
    plain = online_ode(problem, 1.0, res.time, rtol=1e-8, atol=1e-10, method="reference")
    inside, inside_plain = _inside(res, with_options, late), _inside(res, plain, late)
    assert inside >= 0.9 and inside_plain < 0.6, (inside, inside_plain)
    assert res.settings["config"]["label_noise"] == 0.5


def test_label_noise_term_is_sigma_squared_a_a_e_gprime_gprime():
    """The label-noise part of the ODE's noise term, by Monte Carlo of g'(x_i) g'(x_j)."""
    from gaugedyn.training._online_ode import pair_derivative

    rng = np.random.default_rng(0)
    A = rng.standard_normal((3, 3))
    Q = A @ A.T / 3 + 0.2 * np.eye(3)
    x = rng.multivariate_normal(np.zeros(3), Q, size=1_000_000)
    gp = np.sqrt(2 / np.pi) * np.exp(-x * x / 2)
    mc = gp.T @ gp / len(x)
    se = np.sqrt(((gp[:, :, None] * gp[:, None, :]) ** 2).mean(0) - mc**2) / np.sqrt(len(x))
    assert np.all(np.abs(pair_derivative("erf", Q) - mc) <= 4 * se)


def test_options_refused_where_they_do_not_run():
    problem = random_problem(50, 2, 2, np.random.default_rng(0), activation="erf")
    with pytest.raises(InputError, match="lr2"):
        TrainConfig(optimizer="adam", lr2=0.5)
    with pytest.raises(InputError, match="label_noise=-1"):
        TrainConfig(optimizer="sgd", samples=None, label_noise=-1.0)
    with pytest.raises(InputError, match="method='reference'"):
        online_ode(problem.replace(teacher_activation="relu"), 1.0, [0.0, 1.0], method="compiled")
    assert "weight_decay" not in TrainConfig().describe()


@pytest.mark.parametrize(
    "options", [dict(weight_decay=0.1), dict(lr2=0.5), dict(label_noise=0.5), OPTIONS]
)
def test_compiled_online_ode_with_options_agrees_with_the_reference(options):
    """The compiled erf right-hand side with each classical option against the numpy reference
    (population velocity and noise term, DOP853) on the same grid; and the options move the
    trajectory far more than that agreement (so an option the compiled path dropped would show)."""
    problem = random_problem(1000, 3, 2, np.random.default_rng(5), activation="erf")
    times = np.concatenate([[0.0], np.geomspace(1e-2, 50.0, 25)])
    kw = dict(rtol=1e-11, atol=1e-13)
    fast = online_ode(problem, 1.0, times, method="compiled", **kw, **options)
    ref = online_ode(problem, 1.0, times, method="reference", **kw, **options)
    plain = online_ode(problem, 1.0, times, method="compiled", **kw)
    for key in ("a", "Q", "R"):
        np.testing.assert_allclose(fast[key], ref[key], rtol=0, atol=1e-8)
    assert max(np.abs(fast[k] - plain[k]).max() for k in "aQR") > 1e-3
