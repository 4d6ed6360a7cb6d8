"""One compiled version of each generated kernel (`jit_generated()`), shared by the compiled
order-parameter flow (`._compiled_kernels`) and the compiled online ODE of
`gaugedyn.training`."""

from __future__ import annotations

import ast
import functools
import inspect
import textwrap

import numpy as np


class _ScalarCalls(ast.NodeTransformer):
    """Rewrites the array-only calls of a generated kernel for scalars: ``np.clip(x, lo, hi)``
    to ``_clip(x, lo, hi)``, ``np.full(shape, v)`` to ``v`` and ``np.array(x)`` to ``x``."""

    def visit_Call(self, node: ast.Call) -> ast.AST:
        self.generic_visit(node)
        f = node.func
        if isinstance(f, ast.Attribute) and isinstance(f.value, ast.Name) and f.value.id == "np":
            if f.attr == "clip":
                return ast.Call(func=ast.Name("_clip", ast.Load()), args=node.args, keywords=[])
            if f.attr == "full":
                return node.args[1]
            if f.attr == "array":
                return node.args[0]
            if f.attr == "maximum":
                return ast.Call(func=ast.Name("max", ast.Load()), args=node.args, keywords=[])
        return node


class _DropOptional(ast.NodeTransformer):
    """Drops the optional arguments ``dropped`` (the sines ``s=None`` of the ReLU kernels) from
    the calls of the generated module's helpers, whose scalar versions `_helper()` builds
    from their ``if s is None`` branch."""

    def __init__(self, dropped: set[str]):
        self.dropped = dropped

    def visit_Call(self, node: ast.Call) -> ast.AST:
        self.generic_visit(node)
        node.args = [a for a in node.args if not (isinstance(a, ast.Name) and a.id in self.dropped)]
        return node


def jit_generated(fn):
    """A numba scalar version of a kernel of `gaugedyn.theory._generated_kernels`.

    The generated functions open with one line that broadcasts their arguments to arrays; the
    rest is arithmetic that numpy applies elementwise. That line is dropped from the function's
    syntax tree, the array-only calls are rewritten for scalars (`_ScalarCalls`) and the
    rest compiled as is, so the compiled kernel is the symbolic module's expression, not a copy.
    Optional arguments (the sines ``s=None`` of the ReLU kernels) are dropped: the compiled
    kernel takes the cosines only and its helpers are compiled from their branch for an omitted
    sine (`_helper()`).

    Parameters
    ----------
    fn : Callable
        A function of `gaugedyn.theory._generated_kernels` (``generated_kernels``), whose first
        statement is its ``_args(...)`` broadcast.

    Returns
    -------
    Callable
        The ``numba.njit(inline="always")`` compiled scalar function of the required arguments.

    Raises
    ------
    RuntimeError
        When ``fn`` does not open with the ``_args`` line, or a helper it calls has no branch for
        the omitted arguments (a generated module out of step with this compiler).
    """
    tree = ast.parse(textwrap.dedent(inspect.getsource(fn)))
    func = tree.body[0]
    assert isinstance(func, ast.FunctionDef), "a generated kernel is a function"
    first = func.body[0]
    if not (
        isinstance(first, ast.Assign)
        and isinstance(first.value, ast.Call)
        and getattr(first.value.func, "id", "") == "_args"
    ):
        raise RuntimeError(f"{fn.__name__}: unexpected generated-kernel layout")
    func.body = func.body[1:]
    n_optional = len(func.args.defaults)
    dropped = {a.arg for a in func.args.args[len(func.args.args) - n_optional :]}
    func.args.args = func.args.args[: len(func.args.args) - n_optional]
    func.args.defaults = []
    func = _DropOptional(dropped).visit(func)
    namespace = {"np": np, "_clip": _clip()}
    for node in ast.walk(func):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
            name = node.func.id
            if name.startswith("_") and name != "_clip" and name not in namespace:
                namespace[name] = _helper(getattr(inspect.getmodule(fn), name), dropped)
    return _compile(func, namespace)


def _compile(func: ast.FunctionDef, namespace: dict):
    import numba

    module = ast.fix_missing_locations(
        _ScalarCalls().visit(ast.Module(body=[func], type_ignores=[]))
    )
    exec(compile(module, f"<jit {func.name}>", "exec"), namespace)
    return numba.njit(inline="always")(namespace[func.name])


def _helper(fn, dropped: set[str]):
    """The scalar version of a helper of the generated module (``_relu_theta``, ``_relu_s``):
    its branch for the optional arguments ``dropped`` left out (``if s is None: return ...``),
    with those arguments removed from its signature."""
    func = ast.parse(textwrap.dedent(inspect.getsource(fn))).body[0]
    assert isinstance(func, ast.FunctionDef), "a generated helper is a function"
    branch = next(
        (
            node
            for node in func.body
            if isinstance(node, ast.If)
            and isinstance(node.test, ast.Compare)
            and isinstance(node.test.left, ast.Name)
            and node.test.left.id in dropped
            and isinstance(node.test.ops[0], ast.Is)
        ),
        None,
    )
    if branch is None:
        raise RuntimeError(f"{fn.__name__}: no branch for omitted {sorted(dropped)}")
    func.args.args = [a for a in func.args.args if a.arg not in dropped]
    func.body = branch.body
    return _compile(func, {"np": np, "_clip": _clip()})


@functools.cache
def _clip():
    import numba

    @numba.njit(inline="always")
    def clip(x, lo, hi):
        return min(max(x, lo), hi)

    return clip
