"""The online spike detector: fed one sample at a time it returns what the offline detector returns
on the whole series (one definition: the blocks' lower medians and the settled level of
``gaugedyn.adam._spikes``), on synthetic series built to be spiky, quiet, underflowed, drifting
and diverged; a sample every ``stride`` steps stands for its stride; a spike is reported once,
when the block that starts it closes."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gaugedyn.adam import OnlineSpikeDetector, SpikeSampling, detect_spikes

B1, B2 = 0.9, 0.99  # horizon 300 steps, blocks of 24
KEYS = (
    "spiky",
    "undetermined",
    "diverged",
    "quiet",
    "judged",
    "status",
    "n_spikes",
    "max_rise",
    "first_spike",
    "horizon",
    "block",
)


def online(ell, beta1=B1, beta2=B2, **kw):
    det = OnlineSpikeDetector(beta1, beta2, **kw)
    closed = [c for x in ell if (c := det.update(x)) is not None]
    return det.verdict(), closed


def assert_same(ell, beta1=B1, beta2=B2, stride=1, **kw):
    got, closed = online(ell, beta1, beta2, stride=stride, **kw)
    want = detect_spikes(np.repeat(np.asarray(ell), stride), beta1, beta2, **kw)
    for k in KEYS:
        assert np.asarray(got[k]).item() == np.asarray(want[k]).item(), (k, got[k], want[k])
    return got, closed


def series(kind: str, T: int, rng) -> np.ndarray:
    base = -3 - 1e-4 * np.arange(T) + 0.2 * rng.standard_normal(T)
    if kind == "spike":
        base[T // 2 : T // 2 + 40] += 2.5
    elif kind == "cycle":  # dips 30 decades and jumps back every 50 steps
        base = -3 - 30 * (np.arange(T) % 50 >= 10) + 0.1 * rng.standard_normal(T)
    elif kind == "noise":  # one decade of white log-noise
        base = -5 + rng.standard_normal(T)
    elif kind == "underflow":
        base[600:1300] = -np.inf
    elif kind == "nan":
        base[2 * T // 3] = np.nan
    elif kind == "inf":
        base[2 * T // 3] = np.inf
    elif kind == "drift":
        base = -8 + 3 * np.arange(T) / T + 0.1 * rng.standard_normal(T)
    return base


@pytest.mark.parametrize(
    "kind", ["quiet", "spike", "cycle", "noise", "underflow", "nan", "inf", "drift"]
)
@pytest.mark.parametrize("T", [250, 1800, 2411, 4000])
def test_online_equals_offline(kind, T):
    ell = series(kind, T, np.random.default_rng(T))
    got, closed = assert_same(ell)
    assert sum(c["spike"] for c in closed) == got["n_spikes"]


def test_the_known_answers_through_the_online_path():
    rng = np.random.default_rng(0)
    assert online(series("spike", 4000, rng))[0]["status"] == "spiky"
    assert online(series("quiet", 4000, rng))[0]["status"] == "quiet"
    assert online(series("noise", 4000, rng))[0]["status"] == "quiet"
    assert online(series("drift", 4000, rng))[0]["status"] == "quiet"
    assert online(series("nan", 4000, rng))[0]["status"] == "diverged"
    assert online(series("inf", 4000, rng))[0]["status"] == "diverged"
    assert online(series("spike", 250, rng))[0]["status"] == "not judged"


def test_a_stride_a_ceiling_a_floor_and_a_declared_sampling_equal_the_offline_detector():
    rng = np.random.default_rng(5)
    assert_same(series("spike", 1400, rng)[::3], stride=3)
    assert_same(series("spike", 400, rng)[::40], stride=40)  # one sample closes blocks
    assert_same(series("spike", 4000, rng), ceiling=-0.2)
    assert_same(series("underflow", 4000, rng), floor=-30.0)
    assert_same(series("spike", 4000, rng), sampling=SpikeSampling(rise=1.5, block_min=48))


def test_a_spike_is_reported_once_when_the_block_that_starts_it_closes():
    ell = series("quiet", 4000, np.random.default_rng(1))
    ell[1000:1100] += 3.0  # blocks 41..45 of 24 steps (block 41: steps 984..1007)
    _, closed = online(ell)
    hits = [c for c in closed if c["spike"]]
    assert [c["step"] for c in hits] == [1031] and hits[0]["rise"] > 2.0
    assert sum(c["holds"] for c in closed) >= 3  # the blocks it fills hold it


def test_bad_settings_are_refused():
    from gaugedyn import InputError

    with pytest.raises(InputError, match="stride"):
        OnlineSpikeDetector(B1, B2, stride=0)
    with pytest.raises(InputError, match="floor"):
        OnlineSpikeDetector(B1, B2, floor=1.0, ceiling=0.0)
    with pytest.raises(InputError, match="rise"):
        OnlineSpikeDetector(B1, B2, sampling=SpikeSampling(rise=-1.0))
    with pytest.raises(InputError):
        OnlineSpikeDetector(1.0, B2)


@settings(max_examples=25, deadline=None)
@given(
    st.floats(0.0, 0.99),
    st.floats(0.9, 0.995),
    st.integers(0, 2**32 - 1),
)
def test_the_online_records_are_the_offline_rises_from_the_end_of_the_warm_up_on(b1, b2, seed):
    """The online detector returns a record for every block from ``warm + m`` on, where the
    warm-up ``warm = ceil(H / b)`` blocks is one horizon and ``m`` the level's window, and its
    rise is the offline `block_rises()` of that block: a rise within the warm-up horizon is
    never reported."""
    # adam:_spikes:543:31:swap (a warm-up of ceil(b / H) blocks: one block, not one horizon)
    from gaugedyn.adam import (
        spike_block_rises,
        spike_block_size,
        spike_block_statistics,
        spike_horizon,
        spike_level_blocks,
    )

    H, b = int(spike_horizon(b1, b2)), int(spike_block_size(b1, b2))
    warm, m = -(-H // b), spike_level_blocks(b1, b2)
    ell = np.random.default_rng(seed).normal(-3.0, 0.5, b * (warm + m + 4) + b // 2)
    _, closed = online(ell, b1, b2)
    want, _ = spike_block_rises(spike_block_statistics(ell, b).median, b1, b2)
    assert [c["block"] for c in closed] == list(range(warm + m, warm + m + want.size))
    assert [c["rise"] for c in closed] == want.tolist()
