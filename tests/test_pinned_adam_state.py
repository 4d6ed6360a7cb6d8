"""The adaptive-scale operations of the Adam state toolkit, pinned by hand computations.

Each expected value is written here from the definitions (``\\hat v = v / (1 - beta2^t)`` with the
parameter's own group's ``beta2`` and ``eps`` and its own step count ``t``; layer = the name up to
its last dot; means per batch element), never through another toolkit function.
"""

import pytest
import torch

from gaugedyn.adam import (
    equalise_adaptive_scale,
    exchange,
    mean_adaptive_scale,
    reset,
    reset_step,
    scalarise_v,
    update_norm,
    weights,
)


def _nested(seed: int) -> torch.nn.Module:
    """Parameters ``enc.0.weight``, ``enc.0.bias``, ``enc.1.weight``, ``enc.1.bias``,
    ``head.weight``, ``head.bias``: layers ``enc.0``, ``enc.1``, ``head``."""
    g = torch.Generator().manual_seed(seed)
    net = torch.nn.Module()
    net.enc = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.Linear(4, 4))
    net.head = torch.nn.Linear(4, 2)
    with torch.no_grad():
        for p in net.parameters():
            p.copy_(torch.randn(p.shape, generator=g))
    return net.double()


def _loss(net, seed):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(8, 3, generator=g, dtype=torch.float64)
    y = torch.randn(8, 2, generator=g, dtype=torch.float64)
    h = torch.tanh(net.enc[1](torch.tanh(net.enc[0](x))))
    return ((net.head(h) - y) ** 2).mean()


def _two_groups(seed: int, steps: int, **kw):
    """An Adam whose encoder and head sit in groups with different betas and eps."""
    net = _nested(seed)
    opt = torch.optim.Adam(
        [
            {"params": net.enc.parameters(), "betas": (0.7, 0.9), "eps": 0.05},
            {"params": net.head.parameters(), "betas": (0.8, 0.99), "eps": 0.002},
        ],
        lr=1e-2,
        **kw,
    )
    for k in range(steps):
        opt.zero_grad()
        _loss(net, 100 * seed + k).backward()
        opt.step()
    return net, opt


def _hand_scale(net, opt, names=None):
    """``mean_i 1 / (sqrt(v_i / (1 - beta2^t)) + eps)`` over the selection, by hand."""
    terms = []
    for group in opt.param_groups:
        beta2, eps = group["betas"][1], group["eps"]
        for p in group["params"]:
            name = next(n for n, q in net.named_parameters() if q is p)
            if names is not None and name not in names:
                continue
            st = opt.state[p]
            t = float(st["step"])
            vhat = st["exp_avg_sq"].double() / (1.0 - beta2**t)
            terms.append((1.0 / (vhat.sqrt() + eps)).flatten())
    return torch.cat(terms).mean()


@pytest.mark.parametrize("steps", [1, 2, 5])
def test_mean_adaptive_scale_is_the_bias_corrected_hand_value_per_group(steps):
    net, opt = _two_groups(1, steps)
    torch.testing.assert_close(
        mean_adaptive_scale(opt, net), _hand_scale(net, opt), rtol=1e-13, atol=0
    )
    head = ["head.weight", "head.bias"]
    torch.testing.assert_close(
        mean_adaptive_scale(opt, net, names="head.*"),
        _hand_scale(net, opt, head),
        rtol=1e-13,
        atol=0,
    )


def test_mean_adaptive_scale_follows_the_step_count():
    """Setting the step count to 1 (``reset_step(.., 1)``) over-corrects as ``1 - beta2``."""
    net, opt = _two_groups(2, 6)
    reset_step(opt, net, 1)
    expected = _hand_scale(net, opt)
    torch.testing.assert_close(mean_adaptive_scale(opt, net), expected, rtol=1e-13, atol=0)
    p = net.head.weight
    vhat = opt.state[p]["exp_avg_sq"].double() / (1 - 0.99)
    torch.testing.assert_close(
        mean_adaptive_scale(opt, net, names="head.weight"),
        (1 / (vhat.sqrt() + 0.002)).mean(),
        rtol=1e-13,
        atol=0,
    )


def test_scalarise_per_layer_uses_the_name_up_to_its_last_dot():
    net, opt = _two_groups(3, 3)
    named = dict(net.named_parameters())
    before = {n: opt.state[p]["exp_avg_sq"].clone() for n, p in named.items()}
    scalarise_v(opt, net, per="layer")
    for layer in ("enc.0", "enc.1", "head"):
        members = [f"{layer}.weight", f"{layer}.bias"]
        mean = torch.cat([before[n].flatten() for n in members]).mean()
        for n in members:
            v = opt.state[named[n]]["exp_avg_sq"]
            torch.testing.assert_close(v, torch.full_like(v, mean.item()), rtol=1e-14, atol=0)


def _batched(seed: int, scale=(1.0, 10.0, 100.0), steps: int = 3, **kw):
    g = torch.Generator().manual_seed(seed)
    net = torch.nn.ParameterDict(
        {
            "w": torch.nn.Parameter(torch.randn(3, 4, 5, generator=g, dtype=torch.float64)),
            "b": torch.nn.Parameter(torch.randn(3, 2, generator=g, dtype=torch.float64)),
        }
    )
    opt = torch.optim.Adam(net.parameters(), lr=1e-2, betas=(0.9, 0.95), eps=1e-3, **kw)
    s = torch.tensor(scale, dtype=torch.float64)
    for _ in range(steps):
        opt.zero_grad()
        loss = ((net["w"] ** 2).sum((1, 2)) * s).sum() + (net["b"] ** 3 * s[:, None]).sum()
        loss.backward()
        opt.step()
    return net, opt


def test_batched_scalarise_and_scale_are_per_batch_element():
    net, opt = _batched(4)
    w, b = net["w"], net["b"]
    vw, vb = opt.state[w]["exp_avg_sq"].clone(), opt.state[b]["exp_avg_sq"].clone()
    bc = 1 - 0.95**3
    hand = [
        torch.cat(
            [
                (1 / ((vw[i] / bc).sqrt() + 1e-3)).flatten(),
                (1 / ((vb[i] / bc).sqrt() + 1e-3)).flatten(),
            ]
        ).mean()
        for i in range(3)
    ]
    torch.testing.assert_close(
        mean_adaptive_scale(opt, net, batch_dims=1), torch.stack(hand), rtol=1e-13, atol=0
    )
    scalarise_v(opt, net, per="selection", batch_dims=1)
    for i in range(3):
        mean = torch.cat([vw[i].flatten(), vb[i].flatten()]).mean()
        torch.testing.assert_close(
            opt.state[w]["exp_avg_sq"][i],
            torch.full((4, 5), mean.item(), dtype=torch.float64),
            rtol=1e-14,
            atol=0,
        )
        torch.testing.assert_close(
            opt.state[b]["exp_avg_sq"][i],
            torch.full((2,), mean.item(), dtype=torch.float64),
            rtol=1e-14,
            atol=0,
        )


def test_equalise_reaches_the_hand_target_by_scaling_v_with_c_squared():
    """After equalising, each state's hand-computed scale is the mean of the two before, and
    ``v`` moved by one factor ``c^2`` whose hand value (``c sqrt(v^)`` in the scale) agrees."""
    na, oa = _two_groups(5, 4)
    nb, ob = _two_groups(6, 7)
    target = (_hand_scale(na, oa) + _hand_scale(nb, ob)) / 2
    va = {p: oa.state[p]["exp_avg_sq"].clone() for p in na.parameters()}
    equalise_adaptive_scale(oa, na, ob, nb)
    for net, opt in ((na, oa), (nb, ob)):
        torch.testing.assert_close(_hand_scale(net, opt), target, rtol=1e-9, atol=0)
    ratios = torch.cat([(oa.state[p]["exp_avg_sq"] / va[p]).flatten() for p in na.parameters()])
    torch.testing.assert_close(ratios, ratios[:1].expand_as(ratios), rtol=1e-12, atol=0)
    c = ratios[0].sqrt()
    terms = []
    for group in oa.param_groups:
        for p in group["params"]:
            vhat = va[p] / (1 - group["betas"][1] ** float(oa.state[p]["step"]))
            terms.append((1 / (c * vhat.sqrt() + group["eps"])).flatten())
    torch.testing.assert_close(torch.cat(terms).mean(), target, rtol=1e-9, atol=0)


@pytest.mark.parametrize(("component", "cleared"), [("both", True), ("v", True), ("m", False)])
def test_amsgrad_reset_clears_the_running_maximum_with_v(component, cleared):
    net, opt = _batched(7, amsgrad=True)
    w = net["w"]
    kept = opt.state[w]["max_exp_avg_sq"].clone()
    reset(opt, net, component)
    got = opt.state[w]["max_exp_avg_sq"]
    assert torch.count_nonzero(got) == 0 if cleared else torch.equal(got, kept)


def test_amsgrad_reset_both_and_step_is_a_fresh_optimizer():
    net, opt = _batched(8, amsgrad=True, steps=4)
    fresh_net = torch.nn.ParameterDict(
        {k: torch.nn.Parameter(p.detach().clone()) for k, p in net.items()}
    )
    fresh = torch.optim.Adam(
        fresh_net.parameters(), lr=1e-2, betas=(0.9, 0.95), eps=1e-3, amsgrad=True
    )
    reset(opt, net, "both")
    reset_step(opt, net, 0)
    for n, o in ((net, opt), (fresh_net, fresh)):
        o.zero_grad()
        (n["w"] ** 2).sum().backward()  # a small gradient: the old maximum would dominate
        o.step()
    for p, q in zip(net.parameters(), fresh_net.parameters()):
        torch.testing.assert_close(p, q, rtol=0, atol=0)


def test_update_norm_is_the_euclidean_norm_per_batch_element_and_exchange_swaps():
    net, opt = _batched(9)
    before = weights(net)
    with torch.no_grad():
        for p in net.parameters():
            p.add_(0.01 * torch.arange(p.numel(), dtype=torch.float64).reshape(p.shape))
    hand = torch.stack(
        [(sum(((p[i] - before[n][i]) ** 2).sum() for n, p in net.items())).sqrt() for i in range(3)]
    )
    torch.testing.assert_close(update_norm(net, before, batch_dims=1), hand, rtol=1e-14, atol=0)
    whole = (sum(((p - before[n]) ** 2).sum() for n, p in net.items())).sqrt()
    torch.testing.assert_close(update_norm(net, before), whole, rtol=1e-14, atol=0)
    nb, ob = _batched(10)
    va = {n: opt.state[p]["exp_avg_sq"].clone() for n, p in net.items()}
    vb = {n: ob.state[p]["exp_avg_sq"].clone() for n, p in nb.items()}
    exchange(opt, net, ob, nb, "v")
    for n in net:
        assert torch.equal(opt.state[net[n]]["exp_avg_sq"], vb[n])
        assert torch.equal(ob.state[nb[n]]["exp_avg_sq"], va[n])
