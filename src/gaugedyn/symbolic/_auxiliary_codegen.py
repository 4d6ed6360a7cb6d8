"""Generation of ``gaugedyn/training/_auxiliary_generated.py`` from `._auxiliary`.

Two kinds of functions are printed from the sympy expressions, with common-subexpression
elimination:

- scalar kernels in plain ``math`` arithmetic (numba compiles them unchanged): the pair kernel
  ``F`` of relu, erf and linear with ``dF/dq1`` and ``dF/dc``, erf's ``I4`` and ReLU's
  three-field integrals ``A2``, ``A3``;
- numpy functions of the linear closed form (broadcasting over their arguments).
"""

from __future__ import annotations

import textwrap

_HEADER = '''"""Kernels and closed forms of the auxiliary-learning model, generated from the symbolic
derivation (``gaugedyn.symbolic._auxiliary``, document ``derivations/auxiliary.md``).

GENERATED FILE, do not edit: written by ``gaugedyn derive`` and kept current by
``gaugedyn derive --check``.

Scalar kernels (``math`` arithmetic, compiled by numba in ``gaugedyn.training._auxiliary_kernels``):

- ``pair_<act>(q1, q2, c)`` = E[g(x1) g(x2)] over (x1, x2) ~ N(0, [[q1, c], [c, q2]]), with
  ``pair_dq1_<act>`` and ``pair_dc_<act>`` its partial derivatives, for act in relu, erf (g(z) =
  erf(z / sqrt 2)), linear; ReLU's square root and arccos arguments are clipped to their domain;
- ``erf_i4(c11, c12, c13, c14, c22, c23, c24, c33, c34, c44)`` = E[g'(x1) g'(x2) g(x3) g(x4)];
- ``relu_a2(cxx, cxy, cyy)`` = E[theta(x) relu(y)^2] and ``relu_a3(cxx, cxy, cxz, cyy, cyz, czz)``
  = E[theta(x) relu(y) relu(z)] (Stein's lemma; conditional deviations and correlations clipped).

Numpy functions of the one-output linear student (head fixed at 1; teachers of unit norm with
overlap rho; G = 1 + gamma), broadcasting over their arguments:

- ``linear_error(t, ...)``: the main-task error eps_m(t), exact solution of the online ODE;
- ``linear_error_leading(tau, ...)``: its expansion to first order in eta at tau = eta t;
- ``linear_error_stationary`` / ``linear_error_stationary_leading``: t -> infinity;
- ``linear_benefit``: eps_m(gamma = 0) - eps_m(gamma), stationary, first order in eta;
- ``linear_boundary``: the rho where that benefit changes sign;
- ``linear_diffusion(t, ...)``: the diffusion (eta^2) part of eps_m(t) - eps_m(0);
- ``linear_optimal_gamma_cubic``: coefficients (c0, c1, c2, c3) of the cubic in gamma whose
  positive root minimises the stationary leading-order error.
"""

import math

import numpy as np


def _args(*xs):
    return np.broadcast_arrays(*(np.asarray(x, dtype=np.float64) for x in xs))
'''


def _print(expr, printer, numpy: bool) -> str:
    import sympy as sp

    if not expr.free_symbols:
        value = repr(float(sp.N(expr, 20)))
        return value
    text = printer.doprint(expr)
    return text.replace("numpy.", "np.") if numpy else text


def _scalar(name: str, args, outputs, preamble: list[str]) -> str:
    """A scalar function in ``math`` arithmetic (cse), the ``preamble`` lines first."""
    import sympy as sp
    from sympy.printing.pycode import PythonCodePrinter

    printer = PythonCodePrinter({"fully_qualified_modules": True, "inline": True})
    subexprs, reduced = sp.cse(outputs, symbols=sp.numbered_symbols("x"), optimizations="basic")
    body = list(preamble)
    for sym, e in subexprs:
        body.append(f"{sym} = {_print(e, printer, False)}")
    outs = [_print(e, printer, False) for e in reduced]
    body.append(f"return {outs[0]}" if len(outs) == 1 else f"return ({', '.join(outs)})")
    names = ", ".join(str(a) for a in args)
    return f"\n\ndef {name}({names}):\n" + textwrap.indent("\n".join(body), "    ") + "\n"


def _vector(name: str, args, expr) -> str:
    """A numpy function broadcasting over its arguments (cse)."""
    import sympy as sp

    from ._codegen import _printer

    printer = _printer()
    subexprs, reduced = sp.cse([expr], symbols=sp.numbered_symbols("x"), optimizations="basic")
    names = ", ".join(str(a) for a in args)
    body = [f"{names}{',' if len(args) == 1 else ''} = _args({names})"]
    for sym, e in subexprs:
        body.append(f"{sym} = {_print(e, printer, True)}")
    out = _print(reduced[0], printer, True)
    body.append(
        f"return {out}" if reduced[0].free_symbols else f"return np.full({args[0]}.shape, {out})"
    )
    return f"\n\ndef {name}({names}):\n" + textwrap.indent("\n".join(body), "    ") + "\n"


_RELU_PAIR_GUARDS = [
    "s = math.sqrt(max(q1 * q2 - c * c, 0.0))",
    "theta = math.acos(min(max(c / math.sqrt(q1 * q2), -1.0), 1.0))",
]


def _pair_kernels() -> list[str]:
    import sympy as sp

    from ._codegen import _relu_substitution, kernel_derivatives
    from ._kernels import kernel_symbols

    q1, q2, c, _ = kernel_symbols()
    out = []
    for act in ("relu", "erf", "linear"):
        d = kernel_derivatives(act)
        rep, _ = _relu_substitution() if act == "relu" else ({}, [])
        pre = _RELU_PAIR_GUARDS if act == "relu" else []
        for kind, expr in (
            ("pair", d["pair"]),
            ("pair_dq1", d["pair_grad"][0]),
            ("pair_dc", d["pair_grad"][2]),
        ):
            e = sp.sympify(expr).xreplace(rep)
            used = {str(x) for x in e.free_symbols}
            lines = [line for line in pre if line.split(" = ")[0] in used]
            out.append(_scalar(f"{kind}_{act}", [q1, q2, c], [e], lines))
    return out


def _erf_i4() -> str:
    import sympy as sp

    from ._gaussian_erf import derive

    d = derive()
    C = d["C"]
    args = [C[i, j] for i in range(1, 5) for j in range(i, 5)]
    low = {a: sp.Symbol(str(a).lower(), real=True) for a in args}
    return _scalar("erf_i4", [low[a] for a in args], [d["i4"].xreplace(low)], [])


def _relu_three() -> list[str]:
    from ._auxiliary_model import relu_three_field

    d = relu_three_field()
    cxx, cxy, cxz, cyy, cyz, czz = d["symbols"]
    guards = d["guards"]

    def lines_for(expr):
        used = {str(x) for x in expr.free_symbols}
        return [line for line in guards if line.split(" = ")[0] in used]

    return [
        _scalar("relu_a2", [cxx, cxy, cyy], [d["a2"]], lines_for(d["a2"])),
        _scalar("relu_a3", [cxx, cxy, cxz, cyy, cyz, czz], [d["a3"]], lines_for(d["a3"])),
    ]


def _linear() -> list[str]:
    from ._auxiliary_model import linear_closed_form

    lc = linear_closed_form()
    y = lc["symbols"]
    common = [y["eta"], y["gamma"], y["rho"], y["sigma_m"], y["sigma_a"], y["B"]]
    start = [y["Q0"], y["Rm0"], y["Ra0"]]
    gamma = y["gamma"]
    cubic = lc["optimal_gamma_equation"]
    out = [
        _vector("linear_error", [y["t"], *common, *start], lc["exact"]),
        _vector("linear_error_leading", [y["tau"], *common, *start], lc["leading"]),
        _vector("linear_error_stationary", common, lc["stationary_exact"]),
        _vector("linear_error_stationary_leading", common, lc["stationary_leading"]),
        _vector("linear_benefit", common, lc["benefit"]),
        _vector(
            "linear_boundary",
            [y["eta"], y["gamma"], y["sigma_m"], y["sigma_a"], y["B"]],
            lc["boundary"],
        ),
        _vector("linear_diffusion", [y["t"], *common, *start], lc["diffusion"]),
    ]
    for k in range(4):
        out.append(_vector(f"_cubic_{k}", common, cubic.coeff(gamma, k)))
    out.append('''

def linear_optimal_gamma_cubic(eta, gamma_unused, rho, sigma_m, sigma_a, B):
    """Coefficients ``(c0, c1, c2, c3)`` of the cubic in gamma (``gamma_unused`` is ignored)."""
    return tuple(f(eta, 0.0, rho, sigma_m, sigma_a, B) for f in (_cubic_0, _cubic_1, _cubic_2,
                                                               _cubic_3))
''')
    return out


def source() -> str:
    """The full text of ``_auxiliary_generated.py``."""
    parts = [_HEADER, *_pair_kernels(), _erf_i4(), *_relu_three(), *_linear()]
    return "".join(parts)
