"""The shared-representation pulses' direction, pinned by hand-written specs and steps.

A pulse favours the opposing target ``o = (f + 1) mod K`` of a direction ``f``: gains ``1`` at
``o`` and ``pulse_gain`` elsewhere (``acquisition``, ``combined``), loss weight ``pulse_weight``
at ``o`` and ``(1 - pulse_weight) / (K - 1)`` elsewhere (``update``, ``combined``); the
specialization is ``s = r_f - r_o``, the loss ``s_0 - s_T``, a switch ``argmax r = f`` before and
``argmax r != f`` after. ``K = 3`` here, so ``f + 1`` and ``f - 1`` differ.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

from gaugedyn.experiments.adam_state import _model as sm
from gaugedyn.experiments.adam_state import _protocol as pp
from gaugedyn.experiments.adam_state import _pulses as sp

HP = dict(
    dim=6,
    width=5,
    bottleneck=2,
    targets=3,
    activation="tanh",
    lr=0.05,
    beta1=0.9,
    beta2=0.999,
    eps=1e-8,
    gain_weak=0.3,
    control_delta=0.1,
    control_period=5,
    pulse_gain=0.2,
    pulse_weight=0.8,
    pulse_steps=3,
    batch=16,
    acquisition="gain",
    observe_weak=0.25,
    pulse_observe=0.5,
)


def _hand_spec(kind, fav, K=3, pg=0.2, pw=0.8):
    o = (fav + 1) % K
    gains = [1.0 if k == o else pg for k in range(K)] if kind != "update" else [1.0] * K
    rest = (1 - pw) / (K - 1)
    weights = [pw if k == o else rest for k in range(K)] if kind != "acquisition" else [1 / K] * K
    return gains, weights


def _cohort(seed=0, seeds=2):
    gen = torch.Generator().manual_seed(seed)
    world = sm.World.draw(gen, seeds, HP["dim"], 3, 0.3, 0.5)
    anc = sm.init_cohort(gen, seeds, HP, sm.Variant("ancestor", 0, (1.0,) * 3, sp.equal(3)))
    c = sm.replicate(anc, sp.route_variants("acquisition", HP))
    sm.train(c, world, gen, 4, HP["batch"])
    evals = sm.EvalDraw.draw(world, torch.Generator().manual_seed(seed + 50), 64)
    return world, c, evals


@pytest.mark.parametrize("kind", pp.PULSES)
def test_pulse_spec_favours_the_next_target(kind):
    _, c, _ = _cohort()
    spec = sp.pulse_spec(c, kind, HP)
    gains, weights = spec["gains"], spec["weights"]
    assert bool((spec["observe"] == 1).all())  # input-gain acquisition observes every label
    want = [_hand_spec(kind, v.fav) for v in c.variants]
    torch.testing.assert_close(gains, torch.tensor([g for g, _ in want]), rtol=1e-7, atol=0)
    torch.testing.assert_close(
        weights, torch.tensor([w for _, w in want] * c.seeds), rtol=1e-7, atol=0
    )


def test_spec_of_is_own_minus_next_and_switch_is_argmax():
    _, c, _ = _cohort()
    r = torch.tensor(
        [
            [0.9, 0.1, 0.5],
            [0.2, 0.7, 0.4],
            [0.3, 0.1, 0.6],
            [0.1, 0.8, 0.2],
            [0.5, 0.4, 0.0],
            [0.6, 0.2, 0.3],
        ]
    )
    s, top = sp.spec_of(r, c)
    favs = [v.fav for v in c.variants] * c.seeds
    hand_s = [float(r[b, f] - r[b, (f + 1) % 3]) for b, f in enumerate(favs)]
    hand_top = [int(torch.argmax(r[b])) == f for b, f in enumerate(favs)]
    np.testing.assert_allclose(s.ravel(), hand_s, rtol=1e-6)
    assert top.ravel().tolist() == hand_top


def _hand_readouts(c, world, evals):
    return sm.readouts(c.net, world, evals, c.gains(), c.R)["heads"]


def _hand_s(r, c):
    favs = [v.fav for v in c.variants] * c.seeds
    s = np.array([float(r[b, f] - r[b, (f + 1) % 3]) for b, f in enumerate(favs)])
    top = np.array([int(torch.argmax(r[b])) == f for b, f in enumerate(favs)])
    return s.reshape(c.seeds, c.R), top.reshape(c.seeds, c.R)


def test_a_pulse_step_is_the_hand_step_and_lost_is_start_minus_end():
    """One route pulsed by ``Pulse.run`` for 3 steps, its copy stepped here with the hand spec on
    the same batches: same weights; ``lost = s_0 - s_T`` and ``switched`` from hand readouts."""
    world, c, evals = _cohort(1)
    twin = sp.clone(c)
    s0, top0 = _hand_s(_hand_readouts(c, world, evals), c)
    out = sp.Pulse(world, evals, HP, "own", seed=17).run([c], "combined")["routes"][0]["heads"]
    gen = torch.Generator().manual_seed(17)
    spec = [_hand_spec("combined", v.fav) for v in twin.variants]
    g = torch.tensor([s[0] for s in spec])
    w = torch.tensor([s[1] for s in spec] * twin.seeds)
    for _ in range(HP["pulse_steps"]):
        z, xi = world.sample(gen, HP["batch"])
        loss = (w * sm.task_losses(twin.net, world.inputs(z, xi, g), z, twin.R)).sum()
        twin.opt.zero_grad(set_to_none=True)
        loss.backward()
        twin.opt.step()
    for p, q in zip(c.net.parameters(), twin.net.parameters()):
        torch.testing.assert_close(p, q, rtol=1e-6, atol=1e-7)
    sT, topT = _hand_s(_hand_readouts(c, world, evals), c)
    np.testing.assert_allclose(out["s0"], s0, rtol=1e-6)
    np.testing.assert_allclose(out["lost"], s0 - sT, rtol=1e-5, atol=1e-6)
    assert np.array_equal(out["switched"], top0 & ~topT)
    assert np.array_equal(out["specialized"], top0)
    assert np.any(np.abs(s0 - sT) > 1e-4)  # the pulse moved something: the sign is tested


def test_a_strong_pulse_toward_the_next_target_loses_specialization():
    """Direction in effect: 300 steps that see and weigh only ``o`` raise ``r_o`` against
    ``r_f`` (equal evaluation gains) in every network: ``lost > 0`` and every network switches
    (a pulse toward ``f`` itself, or toward ``f - 1``, does neither)."""
    world, c, evals = _cohort(2)
    hp = HP | {"pulse_gain": 0.0, "pulse_weight": 1.0}
    out = sp.Pulse(world, evals, hp, "equal", seed=3).run([c], "combined", steps=300)["routes"][0]
    out = out["heads"]
    assert np.all(out["lost"] > 0), out["lost"]
    assert np.array_equal(out["switched"], out["specialized"]), out["switched"]
    assert out["specialized"].any()
