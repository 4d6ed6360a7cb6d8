"""Generation of ``gaugedyn/theory/_generated_kernels.py``: numpy source printed from sympy with cse.

ReLU kernels are printed in terms of ``s = sqrt(max(q1 q2 - c^2, 0))`` and
``theta = arccos(clip(c / sqrt(q1 q2), -1, 1))`` so that values and first derivatives stay finite
for aligned or duplicate neurons (``c^2 -> q1 q2``); second derivatives contain ``1/s`` and may be
``inf`` or ``nan`` there. Every pair kernel takes an optional ``s``: the caller's
``sqrt(q1 q2 - c^2)`` when it knows it better than ``q1 q2 - c^2`` does (from the weights,
``|w_1 ^ w_2|``); the ReLU forms then take ``theta = arctan2(s, c)``, which resolves angles far
below the ``sqrt(eps)`` that ``arccos`` of a rounded cosine leaves.
"""

from __future__ import annotations

import textwrap
from functools import cache
from pathlib import Path

from ._kernels import closed_form_activations, kernel_expressions, kernel_symbols

NAME = "generated_kernels"
HESS_ORDER = ((0, 0), (0, 1), (0, 2), (1, 1), (1, 2), (2, 2))
"""Second partials of the pair kernel, as index pairs into ``(q1, q2, c)``, in printed order."""
_PAIR_KINDS = ("pair", "pair_grad", "pair_hess")
_SELF_KINDS = ("self", "self_grad", "self_hess")
TARGET = Path(__file__).resolve().parents[1] / "theory" / "_generated_kernels.py"

_HEADER = '''"""Gaussian kernels of each activation, generated from the symbolic derivations.

GENERATED FILE, do not edit: written by ``gaugedyn derive`` (gaugedyn.symbolic._codegen) and
kept current by ``gaugedyn derive --check``.

For act in {activations} (g(z) = erf(z / sqrt 2) for erf), elementwise with numpy
broadcasting, float64:

- ``pair_<act>(q1, q2, c, s=None)`` = E[g(x1) g(x2)], (x1, x2) ~ N(0, [[q1, c], [c, q2]]);
- ``pair_grad_<act>`` -> (dF/dq1, dF/dq2, dF/dc);
- ``pair_hess_<act>`` -> (q1q1, q1q2, q1c, q2q2, q2c, cc) second partials;
- ``self_<act>(q)`` = E[g(x)^2], x ~ N(0, q), with ``self_grad_<act>``, ``self_hess_<act>``.

ReLU: the square root argument q1 q2 - c^2 is clipped at 0 and the arccos argument to [-1, 1],
so values and first derivatives are finite for aligned neurons (c^2 = q1 q2); second derivatives
contain 1/sqrt(q1 q2 - c^2) and are inf (or nan) there. ``s``, when given, is sqrt(q1 q2 - c^2)
known more precisely than from q1 q2 - c^2 (the norm |w1 ^ w2| of the weights): ReLU then takes
theta = arctan2(s, c), exact for nearly aligned neurons; the other forms do not use it.

Online-SGD integrals for erf (Saad & Solla 1995, Goldt et al. 2019), plain expectations over
x ~ N(0, C): ``erf_i3`` = E[g'(x1) x2 g(x3)], ``erf_i4`` = E[g'(x1) g'(x2) g(x3) g(x4)] (the 10
upper-triangular entries of C in row order), ``erf_j2`` = E[g'(x1) g'(x2)].
"""

import numpy as np


def _args(*xs):
    return np.broadcast_arrays(*(np.asarray(x, dtype=np.float64) for x in xs))


def _relu_theta(q1, q2, c, s):
    if s is None:
        return np.arccos(np.clip(c / np.sqrt(q1 * q2), -1.0, 1.0))
    return np.arctan2(s, c)


def _relu_s(q1, q2, c, s):
    if s is None:
        return np.sqrt(np.maximum(q1 * q2 - c**2, 0.0))
    return np.broadcast_to(np.asarray(s, dtype=np.float64), c.shape)
'''


def _printer():
    from sympy.printing.numpy import NumPyPrinter

    return NumPyPrinter({"fully_qualified_modules": True, "inline": True})


def _print(printer, expr, like: str, output: bool) -> str:
    import sympy as sp

    if not expr.free_symbols:
        value = repr(float(sp.N(expr, 20)))
        return f"np.full({like}.shape, {value})" if output else value
    if output and isinstance(expr, sp.Symbol):
        return f"np.array({expr})"
    return printer.doprint(expr).replace("numpy.", "np.")


def _function(
    name: str, args: list, outputs: list, preamble: list[str], errstate: bool, extra: str = ""
) -> str:
    import sympy as sp

    printer = _printer()
    arg_names = [str(a) for a in args]
    subexprs, reduced = sp.cse(outputs, symbols=sp.numbered_symbols("x"), optimizations="basic")
    body = [
        f"{', '.join(arg_names)}{',' if len(args) == 1 else ''} = _args({', '.join(arg_names)})"
    ]
    used = {str(x) for e in [*reduced, *(e for _, e in subexprs)] for x in e.free_symbols}
    body += [line for line in preamble if line.split(" = ")[0] in used]
    for sym, e in subexprs:
        body.append(f"{sym} = {_print(printer, e, arg_names[0], False)}")
    outs = [_print(printer, e, arg_names[0], True) for e in reduced]
    ret = (
        f"return {outs[0]}"
        if len(outs) == 1
        else "return (\n" + "".join(f"    {o},\n" for o in outs) + ")"
    )
    body += ret.split("\n")
    if errstate:
        body = [body[0], 'with np.errstate(divide="ignore", invalid="ignore"):'] + [
            "    " + line for line in body[1:]
        ]
    signature = ", ".join(arg_names + ([extra] if extra else []))
    return f"\n\ndef {name}({signature}):\n" + textwrap.indent("\n".join(body), "    ") + "\n"


def _relu_substitution():
    """Auxiliary symbols for ReLU: s = sqrt(q1 q2 - c^2), theta = arccos(c / sqrt(q1 q2))."""
    import sympy as sp

    q1, q2, c, _ = kernel_symbols()
    s, th = sp.symbols("s theta", positive=True)
    det = q1 * q2 - c**2
    rep = {
        sp.sqrt(det): s,
        1 / sp.sqrt(det): 1 / s,
        det ** sp.Rational(-3, 2): s**-3,
        det ** sp.Rational(3, 2): s**3,
        sp.acos(c / sp.sqrt(q1 * q2)): th,
        sp.acos(c / (sp.sqrt(q1) * sp.sqrt(q2))): th,
    }
    preamble = [  # theta first: it reads the caller's s before s is filled in
        "theta = _relu_theta(q1, q2, c, s)",
        "s = _relu_s(q1, q2, c, s)",
    ]
    return rep, preamble


@cache
def kernel_derivatives(activation: str) -> dict:
    """Value, gradient and Hessian of the pair and self kernels (simplified sympy expressions)."""
    import sympy as sp

    q1, q2, c, q = kernel_symbols()
    F, S = kernel_expressions(activation)
    v = (q1, q2, c)
    grad = [sp.simplify(sp.diff(F, x)) for x in v]
    hess = [sp.simplify(sp.diff(grad[i], v[j])) for i, j in HESS_ORDER]
    return dict(
        pair=F,
        pair_grad=grad,
        pair_hess=hess,
        self=S,
        self_grad=[sp.simplify(sp.diff(S, q))],
        self_hess=[sp.simplify(sp.diff(S, q, 2))],
    )


def _erf_online():
    from ._gaussian_erf import derive

    d = derive()
    C = d["C"]
    s = d["symbols"]
    i3_args = [C[1, 1], C[1, 2], C[1, 3], C[2, 2], C[2, 3], C[3, 3]]
    i4_args = [C[i, j] for i in range(1, 5) for j in range(i, 5)]
    j2 = d["j2"].xreplace({s["q1"]: C[1, 1], s["q2"]: C[2, 2], s["c"]: C[1, 2]})
    return [
        ("erf_i3", i3_args, [d["i3"]]),
        ("erf_i4", i4_args, [d["i4"]]),
        ("erf_j2", [C[1, 1], C[1, 2], C[2, 2]], [j2]),
    ]


def _rename(args, exprs):
    """Print covariance symbols C12 as c12 (lower-case argument names)."""
    import sympy as sp

    m = {a: sp.Symbol(str(a).lower(), real=True) for a in args}
    return [m[a] for a in args], [e.xreplace(m) for e in exprs]


def source() -> str:
    """The full text of ``_generated_kernels.py``."""
    q1, q2, c, q = kernel_symbols()
    activations = closed_form_activations()
    parts = [_HEADER.replace("{activations}", ", ".join(activations))]
    for act in activations:
        d = kernel_derivatives(act)
        rep, pre = _relu_substitution() if act == "relu" else ({}, [])
        for kind in _PAIR_KINDS:
            exprs = d[kind] if isinstance(d[kind], list) else [d[kind]]
            exprs = [e.xreplace(rep) for e in exprs]
            parts.append(
                _function(
                    f"{kind}_{act}",
                    [q1, q2, c],
                    exprs,
                    pre,
                    errstate=act == "relu" and kind == "pair_hess",
                    extra="s=None",
                )
            )
        for kind in _SELF_KINDS:
            exprs = d[kind] if isinstance(d[kind], list) else [d[kind]]
            parts.append(_function(f"{kind}_{act}", [q], exprs, [], errstate=False))
    for name, args, exprs in _erf_online():
        a2, e2 = _rename(args, exprs)
        parts.append(_function(name, a2, e2, [], errstate=False))
    reg = "\n\nKERNELS = {\n"
    for act in activations:
        names = ", ".join(f"{k}_{act}" for k in _PAIR_KINDS + _SELF_KINDS)
        reg += f'    "{act}": ({names}),\n'
    reg += "}\n"
    parts.append(reg)
    return "".join(parts)
