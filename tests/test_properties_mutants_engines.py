"""Properties of the engines written for generated mutants that survived the suite
(``tools/mutate.py --generated --select coverage``; the record is
``tools/mutation-data/generated.json``): each fails on the mutant named beside it."""

from __future__ import annotations

from gaugedyn.theory import single, solve


def test_gd_progress_reports_one_total_and_the_steps_done_when_it_stops_early():
    # theory:_methods:346:8:swap (the last report's done and total swapped)
    calls = []
    sol = solve(
        single(10, "w-heavy"),
        dynamics="gd",
        eta=0.5,
        t_max=3000,
        stop_at_specialization=True,
        progress=lambda done, total: calls.append((done, total)),
    )
    steps = sol.diagnostics["nsteps"]
    total = calls[0][1]
    assert steps < total  # the run stopped at specialization, before its last step
    # theory:_methods:327:36:comparison (reports on every step but the chunks' ends)
    assert calls[0] == (0, total)
    assert all(b[0] > a[0] for a, b in zip(calls[:-2], calls[1:-1]))
    assert all(t == total for _, t in calls)
    assert calls[-1] == (steps, total)
    assert all(0 <= d <= total for d, _ in calls)


def test_a_rescale_reports_the_factor_its_first_moments_were_multiplied_by():
    # gauge:_surgery:200:21:swap and gauge:_surgery:200:32:sign (the reported scale of a
    # rescale_units change: factor ** -power, its base and exponent swapped or its sign lost)
    import torch

    from gaugedyn.adam import watch_state
    from gaugedyn.gauge import rescale_units

    nn = torch.nn
    torch.manual_seed(0)
    net = nn.Sequential(nn.Linear(5, 6), nn.ReLU(), nn.Linear(6, 2)).double()
    opt = torch.optim.Adam(net.parameters(), lr=1e-2)
    x = torch.randn(9, 5, dtype=torch.float64)
    for _ in range(3):
        opt.zero_grad()
        net(x).square().sum().backward()
        opt.step()
    before = {p: opt.state[p]["exp_avg"].clone() for p in net.parameters()}
    seen = []

    def listen(changes):  # held here: watch_state keeps only a weak reference
        seen.extend(changes)

    handle = watch_state(list(net.parameters()), listen)
    try:
        rescale_units(net, opt, "0", [1, 4], [2.5, 0.3])
    finally:
        handle.remove()
    changes = [c for c in seen if c.operation == "rescale_units"]
    assert changes
    for c in changes:
        axis, rows = c.rows
        old = before[c.param].index_select(axis, rows)
        new = opt.state[c.param]["exp_avg"].index_select(axis, rows)
        torch.testing.assert_close(new, old * c.scale, rtol=1e-12, atol=0.0)


def test_the_work_guard_judges_windows_of_at_least_pace_after_seconds():
    # theory:_methods:189:11:comparison (a window of exactly PACE_AFTER seconds skipped) and
    # theory:_methods:189:11:sign (the window's length taken as now + its start)
    import pytest

    from gaugedyn import InputError
    from gaugedyn.theory._methods import PACE_AFTER, PACE_EVERY, Pace

    now = [1000.0]
    pace = Pace("DOP853", t_max=1e12)
    pace.clock = lambda: now[0]
    pace.start = pace.wall_ref = now[0]

    def window(seconds):  # PACE_EVERY right-hand sides at a crawl: t moves by 1e-6
        now[0] = pace.wall_ref + seconds
        for _ in range(PACE_EVERY):
            pace(1e-6)

    window(PACE_AFTER / 2)  # too short a window to judge the pace by: nothing raised
    with pytest.raises(InputError, match="about a"):
        window(PACE_AFTER)  # exactly PACE_AFTER: judged, and a crawl to 1e12 is refused


def test_a_flatten_with_positional_dims_is_read_like_the_keyword_one():
    # gauge:_units:213:14:off-by-one (the end dimension read from a fourth argument)
    import torch

    from gaugedyn.gauge import find_units

    class Net(torch.nn.Module):
        def __init__(self, dims):
            super().__init__()
            self.c = torch.nn.Conv2d(1, 3, 3)
            self.fc = torch.nn.Linear(3 * 4 * 4, 2)
            self.dims = dims

        def forward(self, x):
            return self.fc(torch.flatten(torch.relu(self.c(x)), *self.dims))

    def groups(dims):
        return {g.name for g in find_units(Net(dims))[0]}

    # flatten(x, 1, -1) keeps the batch axis and merges the rest: the conv's channels are units
    assert "c" in groups((1, -1)) and groups((1, -1)) == groups((1,))
    # flatten(x, 1, 2) leaves an axis: its channels no longer feed the linear layer one by one
    assert "c" not in groups((1, 2))

    # gauge:_units:208:15:comparison: the same for an nn.Flatten module and its start_dim
    def module_groups(start):
        net = torch.nn.Sequential(
            torch.nn.Conv2d(1, 3, 3),
            torch.nn.ReLU(),
            torch.nn.Flatten(start),
            torch.nn.Linear(48, 2),
        )
        return {g.name for g in find_units(net)[0]}

    assert "0" in module_groups(1) and "0" not in module_groups(0)


def test_only_a_batch_above_small_batch_is_padded_and_transposed():
    # training:_network:111:7:comparison (a batch of exactly SMALL_BATCH samples padded)
    import torch

    from gaugedyn.training._network import SMALL_BATCH, prepare

    for n in (SMALL_BATCH - 1, SMALL_BATCH, SMALL_BATCH + 1):
        X = torch.randn(2, n, 3, dtype=torch.float64)
        b = prepare(X, torch.zeros(2, n, dtype=torch.float64))
        assert b.n == n
        if n <= SMALL_BATCH:
            assert b.XT is None and b.X is X
        else:
            assert b.X.shape[1] % 8 == 0 and b.X.shape[1] - n < 8
            torch.testing.assert_close(b.X[:, :n], X)
            assert torch.all(b.X[:, n:] == 0) and b.XT.shape == (2, 3, b.X.shape[1])


def test_the_online_kernels_derivatives_are_the_derivatives_of_their_activations():
    # training:_online_kernels:22:16:factor (GELU's g' and g'' without their 1/sqrt(2 pi))
    import numpy as np

    from gaugedyn.theory import ACTIVATIONS
    from gaugedyn.training import _online_kernels as k

    h = 1e-5
    for name, act in ACTIVATIONS.items():
        code = act.code
        for z in (-1.7, -0.4, 0.3, 1.1, 2.2):  # away from the kinks at 0
            d1 = (k.g(code, z + h) - k.g(code, z - h)) / (2 * h)
            d2 = (k.g_prime(code, z + h) - k.g_prime(code, z - h)) / (2 * h)
            assert np.isclose(k.g_prime(code, z), d1, rtol=1e-6, atol=1e-8), (name, z)
            assert np.isclose(k.g_second(code, z), d2, rtol=1e-6, atol=1e-8), (name, z)


def test_the_classification_errors_standard_error_is_the_binomial_one():
    # theory:_observables:526:24:swap (sqrt(err (1 - err) / n) with its ratio inverted)
    import numpy as np

    from gaugedyn.theory import classification_error

    Q = np.array([[1.0, 0.3], [0.3, 1.0]])
    R = np.array([[0.5], [0.1]])
    for n in (200, 2000):
        err, se = classification_error(
            [1.0, -0.5], Q, R, [1.0], [[1.0]], "erf", samples=n, rng=np.random.default_rng(1)
        )
        assert 0 < err < 1
        assert se == np.sqrt(err * (1 - err) / n)


def _numpy_sums(x, y, pair, cols):
    """The gauge kernels' four sums by a plain float64 numpy reduction."""
    import numpy as np

    x, y = x.astype(np.float64), y.astype(np.float64)
    return (
        (x * x).sum(1),
        (x * y).sum(1) if pair else None,
        (x * x).sum(0) if cols else None,
        (x * y).sum(0) if cols and pair else None,
    )


def test_the_gauge_kernels_sums_are_numpys_in_every_slot_of_the_buffer(monkeypatch):
    # gauge:_kernels:92:23:off-by-one (the row sums of x y written at the column sums' offset)
    # and gauge:_kernels:91:23:sign (the row sums of x^2 given a slice of negative length: the
    # compiled kernel writes through it unchecked, the kernel's own Python raises)
    import numpy as np

    from gaugedyn.gauge import _kernels as kern

    rng = np.random.default_rng(3)
    shapes = [(3, 5), (4, 2), (1, 6), (5, 1)]  # four: no padding; float32, the models' dtype
    pairs = [True, True, False, False]
    cols = [True, False, True, False]
    plan, size = kern.layout(shapes, pairs, cols)
    xs = tuple(rng.standard_normal(s).astype(np.float32) for s in shapes)
    ys = tuple(
        rng.standard_normal(s).astype(np.float32) if p else x for s, p, x in zip(shapes, pairs, xs)
    )
    _assert_slots(kern.run(xs, ys, plan, size), plan, shapes, xs, ys, pairs, cols)
    plain = np.full(size, np.nan)
    with monkeypatch.context() as m:  # the kernels as plain Python: numpy's checked slices
        m.setattr(kern, "_sums_into", kern._sums_into.py_func)
        kern._pass.py_func(xs, ys, plan, plain)
    _assert_slots(plain, plan, shapes, xs, ys, pairs, cols)


def _assert_slots(out, plan, shapes, xs, ys, pairs, cols):
    import numpy as np

    for k, (x, y) in enumerate(zip(xs, ys)):
        o = plan[k, 2:]
        n = (shapes[k][0], shapes[k][0], shapes[k][1], shapes[k][1])
        for j, want in enumerate(_numpy_sums(x, y, pairs[k], cols[k])):
            if want is not None:
                got = out[o[j] : o[j] + n[j]]
                np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-14)


def test_the_online_spike_level_is_the_upper_median_of_the_window_before_each_block():
    # adam:_spikes:542:61:swap (the window partitioned at 2 // window: the element left at
    # window // 2 is then not the window's median)
    import numpy as np

    from gaugedyn.adam import OnlineSpikeDetector
    from gaugedyn.adam._spikes import lower_median

    det = OnlineSpikeDetector(0.9, 0.99)
    b, m = det.block, det.window
    x = np.random.default_rng(5).normal(size=b * (det._warm + m + 12))
    rise = {r["block"]: r["rise"] for v in x if (r := det.update(v)) is not None}
    med = [float(lower_median(x[i : i + b])) for i in range(0, x.size, b)]
    assert sorted(rise) == list(range(det._warm + m, len(med)))
    for k, r in rise.items():
        assert r == med[k] - sorted(med[k - m : k])[m // 2], k


def test_a_batch_of_weight_space_flows_with_resolved_angles_is_each_flow_alone():
    # theory:_flows:362:79:off-by-one (a batch of teachers broadcast over their own batch axis)
    import dataclasses

    import numpy as np

    from gaugedyn.theory import random_problem
    from gaugedyn.theory._flows import initial_state, rhs

    alone = []
    for s in range(3):
        y, p = initial_state(random_problem(6, 2, 2, np.random.default_rng(s)), "weight-space")
        alone.append((y, dataclasses.replace(p, activation="relu", resolve_angles=True)))
    p = alone[0][1]
    batch = dataclasses.replace(
        p, **{k: np.stack([getattr(q, k) for _, q in alone]) for k in ("b", "T", "V")}
    )
    out = rhs(0.0, np.stack([y for y, _ in alone]), batch)
    for i, (y, q) in enumerate(alone):
        np.testing.assert_allclose(out[i], rhs(0.0, y, q), rtol=1e-13, atol=1e-15)


def test_the_aligned_limit_is_decided_on_the_relative_sine():
    # theory:_population:298:41:factor (the sine compared with sqrt(q1), not sqrt(q1 q2))
    import numpy as np

    from gaugedyn.theory._population import ALIGNED_SINE, _aligned_limit

    h = (np.ones(4),)
    for q1, q2 in ((1.0, 1.0), (1e-4, 1e4), (1e4, 1e-4), (9.0, 0.25)):
        s = ALIGNED_SINE * np.sqrt(q1 * q2) * np.array([0.5, 0.99, 1.01, 2.0])
        (out,) = _aligned_limit(h, np.full(4, q1), np.full(4, q2), s)
        np.testing.assert_array_equal(out, [0.0, 0.0, 1.0, 1.0])


def test_the_log_c_bisection_finds_a_sign_change_and_nothing_without_one():
    # adam:_stability:290:9:comparison (a rate that is 0 at an end of the bracket, with no
    # sign change inside, taken as a crossing)
    import numpy as np

    from gaugedyn.adam._stability import _bisect_log_c

    a = np.array([0.1, 0.2, 0.3])
    r = np.zeros(3)
    c0 = np.array([1e-6, 1e-3, 0.2])
    found = _bisect_log_c(lambda c, a_, r_: np.log(c / c0), a, r, 1e-8, 1.0)
    np.testing.assert_allclose(found, c0, rtol=1e-12)
    for rate in (
        lambda c, a_, r_: np.zeros_like(c),  # no sign at all
        lambda c, a_, r_: np.minimum(np.log(c), 0.0),  # 0 only at c_hi = 1, negative below
        lambda c, a_, r_: np.maximum(np.log(c / 1e-8), 0.0),  # 0 only at c_lo, positive above
    ):
        assert not np.any(np.isfinite(_bisect_log_c(rate, a, r, 1e-8, 1.0)))


def test_the_chain_draws_its_own_samples_with_label_noise_and_the_noise_moves_it():
    # training:_online_chain:121:31:comparison (drawn samples taken as given ones: the chain
    # asks for given label noises it was not given)
    import numpy as np

    from gaugedyn.theory import random_problem
    from gaugedyn.training import TrainConfig, train

    problem = random_problem(40, 2, 2, np.random.default_rng(4), activation="erf")
    Q = {}
    for noise in (0.0, 0.5, 0.5):
        cfg = TrainConfig(optimizer="sgd", lr=1.0, steps=200, samples=None, label_noise=noise)
        res = train(problem, cfg, seeds=2, root_seed=2, backend="chain")
        assert np.all(np.isfinite(res.Q))
        if noise in Q:  # the same seeds draw the same samples and noises
            np.testing.assert_array_equal(res.Q, Q[noise])
        Q[noise] = res.Q
    assert np.abs(Q[0.5][:, -1] - Q[0.0][:, -1]).max() > 1e-3


def test_a_sides_blocks_hold_each_units_entries_along_any_axis():
    # gauge:_units:175:15:swap (a strided side's axis moved to the wrong place: the same as
    # the right one for axes 0 and 1, not beyond)
    import torch

    from gaugedyn.gauge import Side
    from gaugedyn.gauge._units import blocks

    t = torch.arange(4 * 5 * 12, dtype=torch.float64).reshape(4, 5, 12)
    for axis in (0, 1, 2):
        for block, offset, stride in ((1, 0, 0), (2, 1, 0), (1, 1, 2), (2, 0, 3)):
            n = (t.shape[axis] - offset - block) // (stride or block) + 1
            side = Side("w", axis, block, offset, stride)
            got = blocks(t, side, n)
            for j in range(n):
                for k in range(block):
                    at = offset + j * (stride or block) + k
                    want = t.select(axis, at).reshape(-1)
                    assert torch.equal(got[j, k], want), (axis, block, offset, stride, j, k)


def test_a_row_reset_again_restarts_its_own_step_count_from_then():
    # adam:_state:698:15:off-by-one (the earlier reset's rows matched on their indices, not
    # their axis)
    import torch

    from gaugedyn.adam import reset

    torch.manual_seed(0)
    net = torch.nn.Linear(3, 4, bias=False).double()
    opt = torch.optim.Adam(net.parameters(), lr=0.05, betas=(0.8, 0.9))
    x = torch.randn(16, 3, dtype=torch.float64)
    w = net.weight
    grads, values, resets = [], [], {0: 2, 1: 4, 2: 4}  # row: the step after which it resets
    for step in range(8):
        opt.zero_grad()
        (net(x).sin().sum() + w.square().sum()).backward()
        grads.append(w.grad.detach().clone())
        opt.step()
        values.append(w.detach().clone())
        if step == 2:
            reset(opt, net, rows=[0, 1], restart=True)
        if step == 4:
            reset(opt, net, rows=[1, 2], restart=True)
    for row, after in resets.items():  # a fresh Adam on the row from its last reset
        p, m, v = values[after][row].clone(), 0.0, 0.0
        for s, g in enumerate(grads[after + 1 :], start=1):
            g = g[row]
            m, v = 0.8 * m + 0.2 * g, 0.9 * v + 0.1 * g * g
            p = p - 0.05 * (m / (1 - 0.8**s)) / ((v / (1 - 0.9**s)).sqrt() + 1e-8)
        torch.testing.assert_close(values[-1][row], p, rtol=1e-12, atol=1e-14)


def test_grouped_query_attention_with_biases_keeps_its_function_under_its_found_rescalings():
    # gauge:_units:324:55:factor (a query bias side strided by the group size, not by the
    # group's width) and gauge:_units:452:25:swap (the frozen key bias's side naming no
    # parameter)
    import torch

    from gaugedyn.gauge import GroupedQueryAttention, find_units, rescale_units

    class Net(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.att = GroupedQueryAttention(8, 4, 2, 2, bias=True)

        def forward(self, x):
            return self.att(x)

    torch.manual_seed(0)
    net = Net().double()
    x = torch.randn(3, 5, 8, dtype=torch.float64)
    y = net(x)
    params = dict(net.named_parameters())
    groups = find_units(net)[0]
    assert {g.kind for g in groups} == {"qk", "vo", "frozen"}
    for g in groups:  # every side names a parameter, its units' entries inside it, apart
        seen: dict[str, set] = {}
        for side in g.inputs + g.outputs:
            size = params[side.name].shape[side.axis]
            idx = side.indices(range(g.n_units)).tolist()
            assert 0 <= min(idx) and max(idx) < size, side
            assert not seen.setdefault(side.name, set()) & set(idx), side
            seen[side.name] |= set(idx)
    for g in groups:
        if g.kind in ("qk", "vo"):
            rescale_units(net, None, g.name, [0, 1], [2.5, 0.4])
            torch.testing.assert_close(net(x), y, rtol=1e-12, atol=1e-12)


def test_the_simulated_growth_rate_is_bounded_by_the_step_maps_singular_values():
    # adam:_stability:250:8:factor (the first perturbation sqrt(3) times its stated relative
    # size: one step's growth then exceeds what the step map can give a unit perturbation)
    import numpy as np

    from gaugedyn.adam._stability import adam_step, oscillating_state, simulated_growth_rate

    n, lr, eps, h = 2.0, 0.01, 1e-8, 1e-7
    for a, c in ((0.1, 0.001), (0.3, 0.05), (0.05, 0.2)):
        st = oscillating_state(np.array(a), n, lr, np.array(eps))
        orbit = np.array([float(st[k]) for k in "AMV"])
        scale = np.abs(orbit)
        J = np.empty((3, 3))  # the period-two step map, in units of the orbit's scales
        for j in range(3):
            z = orbit + h * scale * np.eye(3)[j]
            x1, m1, v1 = adam_step(*z, a, c, n, lr, eps)
            J[:, j] = (np.array([-x1, -m1, v1]) - orbit * [1, 1, 1]) / (h * scale)
        one = float(simulated_growth_rate(a, c, n, lr, eps, steps=1))
        assert one <= np.log(np.linalg.svd(J, compute_uv=False)[0]) + 1e-5, (a, c)
        long = float(simulated_growth_rate(a, c, n, lr, eps, steps=2000))
        assert abs(long - np.log(np.abs(np.linalg.eigvals(J)).max())) < 2e-3, (a, c)


def test_owner_sets_are_invariant_to_rescaling_the_students_output_and_a_teachers_unit():
    # theory:_observables:250:27:factor (an absolute tie tolerance)
    import numpy as np

    from gaugedyn.theory import owner_sets

    rng = np.random.default_rng(6)
    W, V = rng.normal(size=(4, 5)), rng.normal(size=(3, 5))
    W[1] = W[0] * (1 + 3e-5)  # students 0 and 1 nearly tie on every teacher unit
    a, b = np.array([1.0, 1.0, 0.4, -0.3]), np.array([1.0, -0.5, 2.0])
    sets = owner_sets(a, W @ W.T, W @ V.T, V @ V.T, b)
    assert sets[:2].any(axis=1).all()  # the near tie is inside the tolerance somewhere
    for s in (1e-3, 1e3):  # the students' output weights rescaled: the same owner sets
        np.testing.assert_array_equal(owner_sets(s * a, W @ W.T, W @ V.T, V @ V.T, b), sets)
    for c in (1e-3, 1e3):  # one teacher unit rescaled: the same owner sets
        Vc = V.copy()
        Vc[1] *= c
        got = owner_sets(a, W @ W.T, W @ Vc.T, Vc @ Vc.T, b)
        np.testing.assert_array_equal(got, sets)


def test_a_pruning_event_refines_a_pruning_found_at_the_second_output_time():
    # theory:_functional:145:13:off-by-one (the output time before the pruning taken as the
    # pruning time itself when that is the second one)
    import numpy as np

    from gaugedyn.theory import pruning_time

    t = np.array([0.0, 1.0, 2.0, 3.0])
    rho = np.array([[1.0, 1.0], [0.0, 1.0], [0.0, 0.0], [0.0, 0.0]])
    event = np.array([0.4, 1.6])  # each between the output time before and its pruned time
    np.testing.assert_array_equal(pruning_time(t, rho, 1e-3), [1.0, 2.0])
    np.testing.assert_array_equal(pruning_time(t, rho, 1e-3, event), event)


def test_the_online_kernels_activations_are_the_registered_functions_and_derivatives():
    # training:_online_kernels:42:7:comparison (every code but leaky ReLU's computed as leaky
    # ReLU after the sixth)
    import numpy as np
    import torch

    from gaugedyn.theory import ACTIVATIONS
    from gaugedyn.training import _online_kernels as k

    z = np.array([-1.7, -0.4, 0.3, 1.1, 2.2])  # away from the kinks at 0
    for name, act in ACTIVATIONS.items():
        for f, kernel in ((act.function, k.g), (act.derivative, k.g_prime)):
            want = f(torch.from_numpy(z)).numpy()
            got = np.array([kernel(act.code, float(x)) for x in z])
            np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-14, err_msg=name)


def test_the_online_kernels_sample_gradient_and_record_are_numpys_in_their_own_python():
    # training:_online_kernels:164:13:off-by-one (the teacher's sum one field too far: the
    # compiled kernel reads past its arrays unchecked) and training:_online_kernels:489:13:
    # off-by-one (the chain's record one student too far: the compiled kernel writes past its
    # row and the process aborts)
    import numpy as np
    from scipy.special import erf

    from gaugedyn.training import _online_kernels as k

    rng = np.random.default_rng(2)
    K, M, D = 2, 3, 5
    U, a, b = rng.normal(size=(K + M, D)), rng.normal(size=K), rng.normal(size=M)
    X = rng.normal(size=(1, 1, D))
    u, x, coef, ga = np.empty(K + M), np.empty(D), np.zeros(K), np.zeros(K)
    gen, N = np.random.default_rng(0), np.empty((0, 1))
    loss = k.sample_gradient.py_func(1, 1, a, b, U, K, x, u, gen, X, 0, 0, coef, ga, 0.0, N)
    g = erf(U @ X[0, 0] / np.sqrt(2.0))  # code 1: erf(z / sqrt 2)
    e = a @ g[:K] - b @ g[K:]
    np.testing.assert_allclose(loss, e * e / 2, rtol=1e-12)
    np.testing.assert_allclose(ga, e * g[:K], rtol=1e-12)
    out_a, out_Q, out_R = np.zeros((2, K)), np.zeros((2, K, K)), np.zeros((2, K, M))
    assert k.record.py_func(1, a, U, K, out_a, out_Q, out_R)
    np.testing.assert_array_equal(out_a[1], a)
    np.testing.assert_allclose(out_Q[1], U[:K] @ U[:K].T, rtol=1e-12)
    np.testing.assert_allclose(out_R[1], U[:K] @ U[K:].T, rtol=1e-12)
    C = U @ U.T  # the chain's record reads the same blocks from the Gram matrix
    out_a, out_Q, out_R = np.zeros((2, K)), np.zeros((2, K, K)), np.zeros((2, K, M))
    assert k.chain_record.py_func(1, a, C, K, out_a, out_Q, out_R)
    np.testing.assert_array_equal(out_a[1], a)
    np.testing.assert_array_equal(out_Q[1], C[:K, :K])
    np.testing.assert_array_equal(out_R[1], C[:K, K:])


def test_a_kernel_step_advances_the_weights_the_flow_time_and_the_loss_as_stated():
    # training:_online_kernels:180:17:off-by-one (one output weight too many: the compiled
    # kernel writes past the array and the process aborts) and 185:11:sign (the flow time
    # going back by eta)
    import numpy as np

    from gaugedyn.training import _online_kernels as k

    a, ga = np.array([0.5, -1.0, 2.0]), np.array([0.3, 0.1, -0.6])
    for wd, lr2 in ((0.0, 1.0), (0.1, 0.5)):
        b = a.copy()
        flow, acc, count = k.advance.py_func(b, ga, 0.2, 4, 1.2, 3.0, 0.5, 7, wd, lr2)
        np.testing.assert_allclose(b, a - 0.2 * lr2 * (ga / 4 + wd * a), rtol=1e-15)
        assert (flow, acc, count) == (3.0 + 0.2, 0.5 + 1.2 / 4, 8)


def test_the_gauge_kernel_pads_its_matrices_to_the_smallest_power_of_two(monkeypatch):
    # gauge:_kernels:109:17:sign (the count rounded up from k + 1: a needless doubling)
    # gauge:_kernels:141:10:off-by-one and :swap (the pad counted from the plan's columns, or
    # negated: the kernel is handed a tuple whose length is not the plan's padded count)
    import numpy as np

    from gaugedyn.gauge import _kernels

    for k in range(1, 70):
        want = next(2**j for j in range(8) if 2**j >= k)
        assert _kernels._padded(k) == want, k
    seen = []
    real = _kernels._pass

    def spy(xs, ys, plan, out):
        seen.append((len(xs), len(ys), plan.shape[0]))
        assert all(x.size == 0 for x in xs[len(shapes) :])
        return real(xs, ys, plan, out)

    monkeypatch.setattr(_kernels, "_pass", spy)
    rng = np.random.default_rng(0)
    for count in range(1, 6):
        shapes = [(2 + k, 3 + (k % 2)) for k in range(count)]
        pairs = [k % 2 == 0 for k in range(count)]
        cols = [k % 3 != 1 for k in range(count)]
        plan, size = _kernels.layout(shapes, pairs, cols)
        assert plan.shape[0] == _kernels._padded(count)
        xs = tuple(rng.standard_normal(s) for s in shapes)
        ys = tuple(rng.standard_normal(s) if p else x for s, p, x in zip(shapes, pairs, xs))
        out = _kernels.run(xs, ys, plan, size)
        assert seen[-1] == (plan.shape[0],) * 3
        for k, (x, y) in enumerate(zip(xs, ys)):
            o = plan[k, 2:]
            R, C = x.shape
            np.testing.assert_allclose(out[o[0] : o[0] + R], (x * x).sum(1), rtol=1e-12)
            if pairs[k]:
                np.testing.assert_allclose(out[o[1] : o[1] + R], (x * y).sum(1), rtol=1e-12)
            if cols[k]:
                np.testing.assert_allclose(out[o[2] : o[2] + C], (x * x).sum(0), rtol=1e-12)
