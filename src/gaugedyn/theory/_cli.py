"""``gaugedyn solve``: solve one named set-up of the population theory and print one JSON object."""

from __future__ import annotations

import argparse


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "solve",
        help="solve a named set-up (single, duplicates) and print one JSON object",
        description="Integrate population gradient flow (or gradient descent) of a named set-up "
        "and print specialization times, owners, the final rho, alignment, loss and delta drift, "
        "with the definitions, settings and integrator diagnostics, as one JSON object.",
    )
    p.add_argument("--setup", required=True, help="single or duplicates")
    p.add_argument("--dim", required=True, help="input dimension D (integer >= 2)")
    p.add_argument("--gauge", default=None, help="single: w-heavy, a-heavy or balanced")
    p.add_argument("--gauges", default=None,
                   help="duplicates: comma-separated gauges, one per copy (e.g. a-heavy,w-heavy)")
    p.add_argument("--scale", default="1.0", help="initial coefficient rho0 = s (> 0)")
    p.add_argument("--activation", default="relu", help="relu, erf or linear")
    p.add_argument("--threshold", default="0.95", help="specialization threshold in (0, 1)")
    p.add_argument("--prune-tol", default="1e-3", help="pruned when |rho_i| < prune-tol (> 0)")
    p.add_argument("--t-max", default=None, help="horizon (> 0; default: from the set-up)")
    p.add_argument("--formulation", default="order-parameters",
                   help="order-parameters, weight-space or span")
    p.add_argument("--dynamics", default="flow", help="flow or gd")
    p.add_argument("--eta", default=None, help="GD step size (> 0; required for --dynamics gd)")
    p.add_argument("--method", default="auto", help="auto, lsoda, rodas, Radau, BDF, LSODA, DOP853 or RK45")
    p.add_argument("--rtol", default="1e-8", help="relative tolerance (> 0)")
    p.add_argument("--atol", default="1e-10", help="absolute tolerance (> 0)")
    p.add_argument("--stop-at-specialization", action="store_true",
                   help="end the run when every teacher feature has specialised")
    p.set_defaults(func=_handle)


def _number(name: str, text, *, kind=float, allowed: str = "a number > 0"):
    from .._errors import InputError

    try:
        value = kind(text)
    except (TypeError, ValueError):
        raise InputError(f"--{name}={text!r} is not allowed; it must be {allowed}") from None
    return value


def _handle(args: argparse.Namespace) -> int:
    import json

    import numpy as np

    from .._errors import InputError
    from .._meta import versions
    from ._observables import Definitions
    from ._problem import GAUGE_NAMES, duplicates, single
    from ._solve import solve

    if args.setup not in ("single", "duplicates"):
        raise InputError(f"--setup={args.setup!r} is not allowed; choose single or duplicates")
    dim = _number("dim", args.dim, kind=int, allowed="an integer >= 2")
    if dim < 2:
        raise InputError(f"--dim={args.dim!r} is not allowed; it must be an integer >= 2")
    scale = _number("scale", args.scale)
    if not (np.isfinite(scale) and scale > 0):
        raise InputError(f"--scale={args.scale!r} is not allowed; it must be finite and > 0")
    threshold = _number("threshold", args.threshold, allowed="a number in (0, 1)")
    if not (0 < threshold < 1):
        raise InputError(f"--threshold={args.threshold!r} is not allowed; it must lie in (0, 1)")
    prune_tol = _number("prune-tol", args.prune_tol)
    if not (np.isfinite(prune_tol) and prune_tol > 0):
        raise InputError(f"--prune-tol={args.prune_tol!r} is not allowed; it must be > 0")
    numbers = {}
    for name in ("t_max", "eta", "rtol", "atol"):
        text = getattr(args, name)
        if text is None:
            numbers[name] = None
            continue
        v = _number(name.replace("_", "-"), text)
        if not (np.isfinite(v) and v > 0):
            raise InputError(f"--{name.replace('_', '-')}={text!r} is not allowed; it must be "
                             "finite and > 0")
        numbers[name] = v
    if args.dynamics == "gd" and numbers["eta"] is None:
        raise InputError("--eta is required with --dynamics gd; give a step size > 0")
    if args.setup == "single":
        if args.gauges is not None:
            raise InputError("--gauges is for --setup duplicates; use --gauge with single")
        gauge = args.gauge or "w-heavy"
        if gauge not in GAUGE_NAMES:
            raise InputError(f"--gauge={gauge!r} is not allowed; choose one of "
                             f"{', '.join(GAUGE_NAMES)}")
        problem = single(dim, gauge, scale=scale, activation=args.activation)
    else:
        if args.gauge is not None:
            raise InputError("--gauge is for --setup single; use --gauges with duplicates")
        if not args.gauges:
            raise InputError("--gauges is required with --setup duplicates, e.g. "
                             "a-heavy,w-heavy,w-heavy")
        names = [g.strip() for g in args.gauges.split(",")]
        for g in names:
            if g not in GAUGE_NAMES:
                raise InputError(f"--gauges entry {g!r} is not allowed; each must be one of "
                                 f"{', '.join(GAUGE_NAMES)}")
        problem = duplicates(dim, names, scale=scale, activation=args.activation)
    definitions = Definitions(threshold=threshold, prune_tol=prune_tol)
    sol = solve(problem, formulation=args.formulation, dynamics=args.dynamics,
                eta=numbers["eta"], t_max=numbers["t_max"], method=args.method,
                rtol=numbers["rtol"], atol=numbers["atol"], definitions=definitions,
                stop_at_specialization=args.stop_at_specialization)
    out = sol.to_dict()
    out["versions"] = versions()
    print(json.dumps(out, allow_nan=False))
    return 0
