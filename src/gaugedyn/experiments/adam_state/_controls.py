"""Known-answer controls of ``shared_representation``'s instruments (``PROTOCOL.md``).

- **The readouts** (`._model.readouts()`, heads and probe), on networks with a planted
  representation in a world of the configuration's targets, correlation ``rho`` and inputs (no
  input noise, so the representation can be built exactly from ``x``): a representation holding
  the favoured target and nothing of the other reads a probe specialization ``1 - rho^2`` (the
  other target's share predictable from the favoured one), and heads that output the favoured
  target and zero read a heads specialization of 1; a representation holding both targets reads
  0 by both. A probe that read the labels instead of the representation would read 0 on the
  first case (``tests/test_instruments.py``).
- **The switch readout** (`._pulses.spec_of()` and the pulse's rule ``top before and not
  after``): precisions with the favoured target on top before and the other after switch;
  on top at both ends, they do not.
- **The selection** (`._selection.properties()` and `._selection.choose()`): a family of four
  candidate rows of which exactly one has every defining property (matched endpoints,
  specialisation, conflict) though another has a smaller endpoint mismatch: that one is chosen;
  a family in which none has them all: no choice.
- **The dose rule** (`._selection.primary_strength()`): known fractions of specialization
  removed per strength: the one closest to the declared fraction is primary; a tie goes to the
  weaker strength.
- **The control's matching gate** (`._analysis.control_matched()`): planted endpoints equal
  to the constant route's read matched; 2 x tolerance away, not matched.
"""

from __future__ import annotations

import functools

from ...harness import Control

N_EVAL = 4000
"""Evaluation samples of the readout controls (the probe's sampling error about 0.03)."""


@functools.cache
def planted_network() -> type:
    """The class ``Planted`` (a ``torch.nn.Module``), made on first use so that declaring the
    controls (what ``gaugedyn publish`` reads) does not import torch."""
    import torch

    class Planted(torch.nn.Module):
        """A network whose representation is chosen targets, read off noiseless inputs exactly
        (``h = x pinv(M)^T``, selected columns), and whose heads output chosen columns of
        ``h``."""

        def __init__(self, world, keep: list[int], heads: list[int | None]):
            super().__init__()
            self.pinv = torch.linalg.pinv(world.mixing)  # [S, K, D]
            self.keep, self.head_cols = keep, heads

        def represent(self, x: torch.Tensor) -> torch.Tensor:
            z = torch.einsum("skd,snd->snk", self.pinv, x)
            return z[..., self.keep]

        def heads(self, h: torch.Tensor) -> torch.Tensor:
            cols = [
                h[..., self.keep.index(c)] if c is not None else 0 * h[..., 0]
                for c in self.head_cols
            ]
            return torch.stack(cols, dim=-1)

    return Planted


def readout_case(config: dict, keep: list[int], heads: list[int | None], readout=None):
    """Heads and probe specialization ``r_0 - r_1`` (mean over seeds) of a planted network."""
    import torch

    from . import _model as sm

    readout = sm.readouts if readout is None else readout
    K, S = int(config["targets"]), 4
    gen = torch.Generator().manual_seed(0)
    world = sm.World.draw(gen, S, int(config["dim"]), K, float(config["rho"]), 0.0)
    ev = sm.EvalDraw.draw(world, gen, N_EVAL)
    net = planted_network()(world, keep, heads)
    r = readout(net, world, ev, torch.ones(1, K), 1)
    return {k: float((v[:, 0] - v[:, 1]).mean()) for k, v in r.items()}


def readout_controls(config: dict, readout=None) -> list[Control]:
    """The readouts' controls (module doc); ``readout`` replaces `._model.readouts()` in a
    test that breaks it."""
    rho = float(config["rho"])
    K = int(config["targets"])
    share = 1 - rho**2

    def planted():
        r = readout_case(config, [0], [0] + [None] * (K - 1), readout)
        ok = abs(r["probe"] - share) < 0.1 and abs(r["heads"] - 1) < 0.05
        return r, ok

    def none():
        r = readout_case(config, list(range(K)), list(range(K)), readout)
        return r, abs(r["probe"]) < 0.05 and abs(r["heads"]) < 1e-3

    return [
        Control(
            "readouts.planted",
            "heads and probe readouts (readouts)",
            "positive",
            f"a representation holding the favoured target only (rho {rho:g}): probe "
            f"specialization {share:.3g} (within 0.1), heads (favoured target and 0) 1 (within "
            "0.05)",
            "the readouts measure the specialization a representation holds",
            planted,
        ),
        Control(
            "readouts.both_held",
            "heads and probe readouts (readouts)",
            "negative",
            "a representation holding every target, heads reading each: specialization 0 by both",
            "an unspecialised representation reads none",
            none,
        ),
    ]


class _Checkpoints:
    """What `._pulses.spec_of()` reads of a cohort: its targets, favoured targets, sizes."""

    def __init__(self, K: int):
        from . import _model as sm

        self.hp = {"targets": K}
        self.variants = [sm.Variant("acquisition", 0, (1.0,) * K, (1.0 / K,) * K)]
        self.seeds, self.R = 1, 1


def switch_controls(config: dict) -> list[Control]:
    """The switch readout's controls (module doc)."""
    K = int(config["targets"])

    def switched(before, after):
        import torch

        from ._pulses import spec_of

        c = _Checkpoints(K)
        _, top0 = spec_of(torch.tensor([before]), c)
        _, top1 = spec_of(torch.tensor([after]), c)
        return bool((top0 & ~top1).all())

    rest = [0.0] * (K - 2)
    return [
        Control(
            "switch.flipped",
            "switch readout (spec_of, top before and not after)",
            "positive",
            "precisions (0.9, 0.2) before the pulse, (0.3, 0.8) after: switched",
            "a checkpoint whose favoured target loses the top switches",
            lambda: (v := switched([0.9, 0.2, *rest], [0.3, 0.8, *rest]), v),
        ),
        Control(
            "switch.kept",
            "switch readout (spec_of, top before and not after)",
            "negative",
            "precisions (0.9, 0.2) before, (0.6, 0.4) after: not switched",
            "a checkpoint that keeps its favoured target on top does not switch",
            lambda: (v := switched([0.9, 0.2, *rest], [0.6, 0.4, *rest]), not v),
        ),
    ]


def _row(name: str, mismatch: float, matched: bool, spec: float, conflict: float) -> dict:
    iv = [0.0, -0.01, 0.01] if matched else [0.1, 0.05, 0.15]
    return {
        "name": name,
        "w_star": 0.8,
        "mismatch": mismatch,
        "endpoint_intervals": [iv, iv],
        "probe_specialization": {"acquisition": spec, "update": spec},
        "cancellation": {"acquisition": conflict, "update": 0.0},
    }


def selection_controls(config: dict, properties=None, choose=None) -> list[Control]:
    """The selection's controls (module doc)."""
    from . import _selection

    properties = _selection.properties if properties is None else properties
    choose = _selection.choose if choose is None else choose
    hp = {k: config[k] for k in ("tolerance", "spec_level", "conflict_level")}
    hi_spec, hi_conf = hp["spec_level"] + 0.1, hp["conflict_level"] + 0.1
    lo_spec, lo_conf = hp["spec_level"] - 0.1, hp["conflict_level"] - 0.1

    def pick(rows):
        for r in rows:
            r["properties"] = properties(r, hp)
            r["eligible"] = all(r["properties"].values())
        return choose(rows)["choice"]

    def known():
        rows = [
            _row("unmatched", 0.001, False, hi_spec, hi_conf),
            _row("unspecialised", 0.002, True, lo_spec, hi_conf),
            _row("the one", 0.005, True, hi_spec, hi_conf),
            _row("unconflicted", 0.003, True, hi_spec, lo_conf),
        ]
        choice = pick(rows)
        return choice, choice == "the one"

    def none():
        rows = [
            _row("unmatched", 0.001, False, hi_spec, hi_conf),
            _row("unspecialised", 0.002, True, lo_spec, hi_conf),
        ]
        choice = pick(rows)
        return choice, choice is None

    return [
        Control(
            "selection.known",
            "calibration selection (properties, choose)",
            "positive",
            "four candidates, one with every defining property (not the smallest mismatch): "
            "that one is chosen",
            "the choice follows the defining properties, not the outcome",
            known,
        ),
        Control(
            "selection.none",
            "calibration selection (properties, choose)",
            "negative",
            "two candidates, each lacking a defining property: no choice",
            "no candidate is chosen where none qualifies",
            none,
        ),
    ]


def dose_controls(primary_strength=None) -> list[Control]:
    """The dose rule's controls (module doc); ``primary_strength`` replaces
    `._selection.primary_strength()` in a test that breaks it."""
    from . import _selection

    rule = _selection.primary_strength if primary_strength is None else primary_strength

    def known():
        got = rule({"faint": 0.05, "slight": 0.2, "weak": 0.46, "mild": 0.9, "strong": 1.4})
        return got, got == "weak"

    def tie():
        got = rule({"faint": 0.1, "slight": 0.25, "weak": 0.75, "mild": 0.9, "strong": 1.4})
        return got, got == "slight"

    return [
        Control(
            "dose.known",
            "primary pulse strength (primary_strength)",
            "positive",
            "fractions of specialization removed 0.05, 0.2, 0.46, 0.9, 1.4: the third (weak)",
            "the primary strength removes the declared fraction, whatever the others remove",
            known,
        ),
        Control(
            "dose.tie",
            "primary pulse strength (primary_strength)",
            "negative",
            "fractions 0.1, 0.25, 0.75, ...: slight and weak equally far from 1/2, the weaker "
            "(slight) is taken, never the stronger",
            "no stronger pulse is taken where a weaker one removes the fraction as closely",
            tie,
        ),
    ]


def match_controls(config: dict, matched=None) -> list[Control]:
    """The weight-history control's matching gate (`._analysis.control_matched()`) on
    planted endpoints (module doc); ``matched`` replaces it in a test that breaks it."""
    import numpy as np

    from . import _analysis

    gate = _analysis.control_matched if matched is None else matched
    tol = float(config["tolerance"])

    def case(gap_f: float, gap_o: float) -> bool:
        rng = np.random.default_rng(0)
        a_f, a_o = (
            0.8 + 0.01 * rng.standard_normal((40, 2)),
            0.2 + 0.01 * rng.standard_normal((40, 2)),
        )
        noise = 0.002 * rng.standard_normal((2, 40, 2))
        r = {
            "ctl_end_a_f": a_f,
            "ctl_end_a_o": a_o,
            "ctl_end_v_f": a_f - gap_f + noise[0],
            "ctl_end_v_o": a_o - gap_o + noise[1],
        }
        b = _analysis.Builder({"tolerance": tol}, {"rate": r}, np.random.SeedSequence(0))
        return bool(gate(b)["rate"])

    return [
        Control(
            "control_match.matched",
            "weight-history control matching (control_matched)",
            "positive",
            f"variable route's r_f and r_o equal to the constant route's: matched (tolerance "
            f"{tol:g})",
            "a control that ends formation matched is judged",
            lambda: (v := case(0.0, 0.0), v),
        ),
        Control(
            "control_match.unmatched",
            "weight-history control matching (control_matched)",
            "negative",
            f"variable route's r_o {2 * tol:g} below the constant route's: not matched",
            "a control whose endpoints differ by more than the tolerance is not judged",
            lambda: (v := case(0.0, 2 * tol), not v),
        ),
    ]


def controls(config: dict) -> list[Control]:
    """Every control of ``shared_representation`` (module doc)."""
    return (
        readout_controls(config)
        + switch_controls(config)
        + selection_controls(config)
        + dose_controls()
        + match_controls(config)
    )
