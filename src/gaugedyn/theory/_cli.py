"""``gaugedyn solve``: solve one named set-up of the population theory and print one JSON object.

Every option is an engine's declaration (`gaugedyn.theory.PARAMS`: the set-ups, the flows,
the definitions and the solver; the check's in ``._activation``) or, for the few that only the
command line has, declared in `OPTIONS` here; the option's help, bounds and default are
the declaration's. Every value is checked before anything is allocated; the memory the solve
needs is estimated from the dimension, the number of neurons, the formulation and the number of
output times (`memory_estimate()`) and a request that cannot fit is refused quoting the
estimate.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from .._options import Param, progress_options
from ._activation import ACTIVATIONS
from ._activation import PARAMS as CHECK_OPTIONS
from ._params import PARAMS
from ._problem import GAUGE_NAMES as GAUGES
from ._problem import MAX_NEURONS

LOOSE_RTOL, LOOSE_ATOL = 1e-4, 1e-6

OPTIONS: dict[str, Param] = {
    "setup": Param(
        str,
        name="setup",
        choices=("single", "duplicates"),
        help="the named set-up: one student neuron, or copies of it",
    ),
    "dim": PARAMS["dim"],
    "gauge": PARAMS["gauge"],
    "scale": Param(
        float,
        1.0,
        name="scale",
        lo=1e-6,
        hi=1e6,
        help="initial coefficient rho0 = s",
        why="|w|^2 = s D and a^2 = s / D must stay resolvable in float64",
    ),
    **{
        name: PARAMS[name]
        for name in (
            "activation",
            "teacher_activation",
            "weight_decay",
            "lr2",
            "threshold",
            "prune_tol",
            "t_max",
            "formulation",
            "dynamics",
            "eta",
            "method",
            "rtol",
            "atol",
        )
    },
}
"""The options of ``gaugedyn solve`` in the order of its help: the engines' declarations, and
the set-up and its scale (narrower than `gaugedyn.theory.single()` accepts), which only the
command line has."""
_REQUIRED = ("setup", "dim")
_COMPUTED = {  # the options whose default the command works out
    "gauge": f"{PARAMS['gauge'].default} (setup single)",
    "teacher_activation": "the student's",
    "t_max": "from the set-up",
    "eta": "none; required with dynamics gd",
}


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "solve",
        help="solve a named set-up (single, duplicates) and print one JSON object",
        description="Integrate population gradient flow (or gradient descent) of a named set-up "
        "and print specialization times, owners, the final rho, alignment, loss and delta drift, "
        "with the definitions, settings and integrator diagnostics, as one JSON object. Every "
        "value is checked before any work: a bad one gives one error line and exit status 2.",
    )
    for name, option in OPTIONS.items():
        if name in _REQUIRED:
            option.add_to(p, required=True)
        elif name in _COMPUTED:
            option.add_to(p, default=None, default_text=_COMPUTED[name])
        else:
            option.add_to(p)
        if name == "gauge":
            p.add_argument(
                "--gauges",
                default=None,
                help="duplicates: comma-separated gauges, one per copy (e.g. "
                f"a-heavy,w-heavy), each one of {', '.join(GAUGES)}; at most "
                f"{MAX_NEURONS}",
            )
    p.add_argument(
        "--stop-at-specialization",
        action="store_true",
        help="end the run when every teacher feature has specialised",
    )
    progress_options(p)
    p.set_defaults(func=_handle)
    _register_check(subparsers)


def _register_check(subparsers) -> None:
    p = subparsers.add_parser(
        "check-activation",
        help="check an activation's Gaussian kernels against Monte Carlo and autograd",
        description="Compare the Gaussian expectations the population flow uses (E[g g], "
        "E[g' g'], E[g'' g], E[g^2]) with Monte Carlo on random covariances, g' with autograd "
        "(and with sympy where an expression is known), and print the largest deviations in "
        "standard errors and the quadrature's stated error bound as one JSON object. Exit "
        "status 0 when every deviation is below 4 standard errors, 1 otherwise.",
    )
    p.add_argument(
        "activation",
        help=f"a registered name ({', '.join(ACTIVATIONS)}) or "
        "MODULE:NAME, an Activation (or an elementwise torch function) in an "
        "importable module or a .py file",
    )
    for option in CHECK_OPTIONS.values():
        option.add_to(p)
    p.add_argument(
        "--numerical",
        action="store_true",
        help="check the quadrature even where a closed form exists",
    )
    p.set_defaults(func=_handle_check)


def load_activation(spec: str):
    """A registered activation name, or ``MODULE:NAME`` / ``path/file.py:NAME`` naming an
    `Activation` or an elementwise torch function (wrapped by ``Activation.from_torch``,
    which checks it). Whatever goes wrong in the user's code (the import, the attribute, the
    function) is one `InputError` naming the activation and the cause."""
    from ._activation import load_activation as load

    return load(spec)


def _handle_check(args) -> int:
    import json

    from .._errors import InputError, oneline
    from .._json import nulled
    from ._activation import ACTIVATIONS, check_activation

    values = {k: o.parse(getattr(args, k)) for k, o in CHECK_OPTIONS.items()}
    act = load_activation(args.activation)
    try:
        report = check_activation(
            act,
            samples=values["samples"],
            configurations=values["configurations"],
            seed=values["seed"],
            numerical=args.numerical,
        )
    except (InputError, MemoryError):
        raise
    except Exception as err:
        if ACTIVATIONS.get(act.name) is act and ":" not in args.activation:
            raise  # the package's own activation: a bug to see in full
        raise InputError(
            f"activation {args.activation!r}: checking it raised {type(err).__name__}: "
            f"{oneline(err)[:300]}"
        ) from None
    out, nulls = nulled(report)
    if nulls:
        out["null"] = (
            "a z-score or error that is not a finite number (a deviation where the Monte Carlo "
            "standard error is zero, or a NaN from the activation); the check fails"
        )
    print(json.dumps(out, indent=1, allow_nan=False))
    return 0 if report["passed"] else 1


def _gauges(args) -> list[str]:
    from .._errors import InputError

    if args.setup == "single":
        if args.gauges is not None:
            raise InputError("--gauges is for --setup duplicates; use --gauge with single")
        gauge = OPTIONS["gauge"]
        return [gauge.parse(gauge.default if args.gauge is None else args.gauge)]
    if args.gauge is not None:
        raise InputError("--gauge is for --setup single; use --gauges with duplicates")
    if not args.gauges:
        raise InputError(
            "--gauges is required with --setup duplicates, e.g. a-heavy,w-heavy,w-heavy"
        )
    names = [g.strip() for g in args.gauges.split(",")]
    if len(names) > MAX_NEURONS:
        raise InputError(
            f"--gauges names {len(names)} neurons; allowed: 1 to {MAX_NEURONS} "
            "(the dense Jacobian of the order-parameter state grows as K^4)"
        )
    for g in names:
        if g not in GAUGES:
            raise InputError(
                f"--gauges entry {g!r} is not allowed; each must be one of {', '.join(GAUGES)}"
            )
    return names


def named_t_max(dim: int, gauges: list[str], scale: float) -> float:
    """`gaugedyn.theory.default_t_max()` of the named ``single``/``duplicates`` set-up, from
    the gauges alone: ``|w|^2 = (sqrt(delta^2 + 4 s^2) - delta) / 2``, ``a^2 = |w|^2 + delta``,
    ``b = 1``."""
    import math

    from ._problem import named_delta

    clocks = []
    for g in gauges:
        d = named_delta(g, scale, dim)
        w2 = (math.sqrt(d * d + 4 * scale * scale) - d) / 2
        clocks.append(max(w2, 1.0 / (w2 + d + w2), 1.0))
    return 100.0 * max(clocks)


def output_times(t_max: float, per_decade: int = 40, t_min: float = 1e-3) -> int:
    """The number of default output times up to ``t_max`` (see ``theory.log_times``)."""
    import math

    t_min = min(t_min, t_max / 10.0)
    return max(int(math.ceil(per_decade * math.log10(t_max / t_min))) + 1, 2) + 2


def memory_estimate(
    dim: int, K: int, formulation: str, method: str, n_out: int, M: int = 1
) -> tuple[float, str]:
    """``(bytes, formula)``: float64 arrays of a solve of ``K`` students and ``M`` teachers.

    The problem holds ``W (K, D)``, ``V (M, D)`` and their directions and span basis (about 8
    arrays of ``D (K + M)``); the state has ``n`` coordinates (``K + K(K+1)/2 + K M`` for order
    parameters, ``K + K r`` with ``r = K + M`` for the span, ``K + K D`` for weight space), stored
    at ``n_out`` output times; an implicit method (rodas, Radau, BDF, LSODA) factorises a dense
    ``n x n`` Jacobian (about 4 copies).
    """
    n = {
        "order-parameters": K + K * (K + 1) // 2 + K * M,
        "span": K + K * (K + M),
        "weight-space": K + K * dim,
    }[formulation]
    from ._registry import EXPLICIT_ABOVE  # "auto" runs an explicit method above it

    implicit = method in (
        "lsoda",
        "lsoda-fd",
        "lsoda-compiled",
        "rodas",
        "Radau",
        "BDF",
        "LSODA",
    ) or (method == "auto" and n <= EXPLICIT_ABOVE)
    total = 8.0 * (8 * dim * (K + M) + n * (n_out + 16) + (4 * n * n if implicit else 0))
    formula = (
        f"8 bytes x (8 D (K+M) + n (outputs + 16){' + 4 n^2' if implicit else ''}) with "
        f"D={dim}, K={K}, n={n}, outputs={n_out}"
    )
    return total, formula


def _numbers(args) -> dict:
    from .._errors import InputError

    names = (
        "dim",
        "scale",
        "threshold",
        "prune_tol",
        "t_max",
        "eta",
        "rtol",
        "atol",
        "weight_decay",
        "lr2",
    )
    values = {
        name: OPTIONS[name].parse(getattr(args, name)) if getattr(args, name) is not None else None
        for name in names
    }
    for name in ("setup", "activation", "formulation", "dynamics", "method"):
        values[name] = OPTIONS[name].parse(getattr(args, name))
    values["teacher_activation"] = (
        None
        if args.teacher_activation is None
        else OPTIONS["teacher_activation"].parse(args.teacher_activation)
    )
    if values["dynamics"] == "gd" and values["eta"] is None:
        raise InputError(
            f"--eta is required with --dynamics gd; give a step size: {OPTIONS['eta'].describe()}"
        )
    if values["dynamics"] == "flow" and values["eta"] is not None:
        raise InputError("--eta is only used with --dynamics gd")
    if values["dynamics"] == "gd":
        given = [
            f"--{name}" for name in ("method", "rtol", "atol") if _given(args, name, OPTIONS[name])
        ]
        if given:
            raise InputError(
                f"{', '.join(given)} only apply to --dynamics flow (an ODE solver's settings); "
                "--dynamics gd takes steps of size --eta: drop them"
            )
    return values


def _given(args, name: str, option) -> bool:
    """Whether the user set ``--name`` (its value differs from the declared default)."""
    return getattr(args, name) not in (None, option.default, str(option.default))


def _warn_loose(values: dict) -> None:
    for name, loose in (("rtol", LOOSE_RTOL), ("atol", LOOSE_ATOL)):
        if values[name] > loose:
            print(
                f"gaugedyn solve: warning: --{name}={values[name]:g} is loose (above {loose:g}): "
                "expect errors of that order, e.g. in delta_drift, which the flow conserves "
                "exactly",
                file=sys.stderr,
            )


def _functional(sol, problem, activation: str, prune_tol: float) -> dict:
    """Owners with ties, the remaining function of the non-owners and pruning "from then on"."""

    from ._functional import functional_report, pruning_time

    _, _, _, b, T = problem.order_parameters()
    report = functional_report(
        sol.a[-1],
        sol.Q[-1],
        sol.R[-1],
        T,
        b,
        activation,
        teacher_activation=problem.teacher_activation,
    )
    prune = pruning_time(sol.t, sol.observables["rho"], prune_tol, sol.pruning_time)
    return {**report, "pruning_time": [float(x) for x in prune]}


def _handle(args: argparse.Namespace) -> int:
    import json

    from .._meta import versions
    from .._options import check_memory
    from .._progress import progress_bar
    from ._observables import Definitions
    from ._problem import duplicates, single
    from ._solution import nulled_report
    from ._solve import solve

    values = _numbers(args)
    gauges = _gauges(args)
    dim, K = values["dim"], len(gauges)
    _warn_loose(values)
    base, base_formula = memory_estimate(dim, K, values["formulation"], values["method"], 0)
    check_memory(
        f"--dim={dim} with {K} neuron(s) ({values['formulation']}, {values['method']})",
        base,
        base_formula,
    )
    # checked before the problem is built (that alone takes seconds at large D)
    t_max = values["t_max"] or named_t_max(dim, gauges, values["scale"])
    if values["dynamics"] == "gd":
        from ._solve import check_gd_steps

        width = dim if values["formulation"] == "weight-space" else K + 1
        steps = check_gd_steps(values["eta"], t_max, K, 1, width, "--eta", "--t-max")
    estimate, formula = memory_estimate(
        dim, K, values["formulation"], values["method"], output_times(t_max)
    )
    check_memory(
        f"--dim={dim} with {K} neuron(s) ({values['formulation']}, "
        f"{values['method']}, t_max={t_max:g})",
        estimate,
        formula,
    )
    kind = dict(scale=values["scale"], activation=values["activation"])
    problem = (
        single(dim, gauges[0], **kind)
        if args.setup == "single"
        else duplicates(dim, gauges, **kind)
    )
    if values["teacher_activation"] is not None:
        problem = problem.replace(teacher_activation=values["teacher_activation"])
    definitions = Definitions(threshold=values["threshold"], prune_tol=values["prune_tol"])
    extra: dict[str, Any] = {}
    if values["dynamics"] == "gd":
        bar = progress_bar(
            steps + 1, "solve (gd)", unit="step", force=args.progress, quiet=args.quiet
        )
        extra["progress"] = bar.callback
    else:
        bar = None
    try:
        sol = solve(
            problem,
            formulation=values["formulation"],
            dynamics=values["dynamics"],
            eta=values["eta"],
            t_max=values["t_max"],
            method=values["method"],
            rtol=values["rtol"],
            atol=values["atol"],
            definitions=definitions,
            stop_at_specialization=args.stop_at_specialization,
            weight_decay=values["weight_decay"],
            lr2=values["lr2"],
            **extra,
        )
    finally:
        if bar is not None:
            bar.close()
    out = sol.to_dict()
    out |= _functional(sol, problem, args.activation, values["prune_tol"])
    out["versions"] = versions()
    out.pop("null", None)
    print(json.dumps(nulled_report(out), allow_nan=False))
    return 0
