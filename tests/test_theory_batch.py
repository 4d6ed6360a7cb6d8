"""The batched solver: a diverging member is marked failed and never costs the others."""

import numpy as np
import pytest

from gaugedyn import DivergenceError
from gaugedyn.theory import random_problem, solve, solve_batch


def _problems():
    # member 15 of this stream sends a[0] to infinity at t = 0.072 (|w_0| collapses)
    rng = np.random.default_rng(1)
    probs = [random_problem(50, 4, 4, rng, scale=3.0) for _ in range(16)]
    return [probs[0], probs[15], probs[1]]


def test_diverging_member_is_marked_and_the_others_equal_solving_alone():
    probs = _problems()
    t_eval = np.linspace(0.0, 0.5, 6)
    with np.errstate(all="ignore"):
        batch = solve_batch(probs, t_max=0.5, t_eval=t_eval)
        with pytest.raises(DivergenceError) as alone:
            solve(probs[1], t_max=0.5, t_eval=t_eval, method="rodas")
    assert batch.failed.tolist() == [False, True, False]
    assert batch.diagnostics[1]["status"] == -2
    assert batch.diagnostics[1]["message"] == str(alone.value) and "a[0]" in str(alone.value)
    assert isinstance(batch.errors[1], DivergenceError)
    assert np.all(np.isnan(batch.a[1, -1])) and np.all(np.isfinite(batch.a[1, 0]))
    for i in (0, 2):
        one = solve(probs[i], t_max=0.5, t_eval=t_eval, method="rodas")
        for name in ("a", "Q", "R"):
            np.testing.assert_array_equal(getattr(batch, name)[i], getattr(one, name))
        np.testing.assert_array_equal(batch.observables["loss"][i], one.observables["loss"])
        assert batch.diagnostics[i]["nsteps"] == one.diagnostics["nsteps"]
        assert batch.diagnostics[i]["status"] == 0
    with pytest.raises(DivergenceError):
        batch.raise_failures()
