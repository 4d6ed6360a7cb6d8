"""The registry of derivations and the ``derive`` job: write, or check, every document.

Each registered module exposes ``NAME`` (the document is ``NAME.md``), ``build() -> str``
(the Markdown) and ``verify() -> None`` (raises ``AssertionError`` naming the failed identity);
a module that generates code also exposes ``generated() -> {path: text}``, settled like its
document. An activation's kernel derivation, ``_gaussian_<name>.py``, is registered by being in this folder
(`gaugedyn.symbolic._kernels.gaussian_names()`); the others are listed here.

Before writing or checking anything, ``derive`` refuses (reports a failure, writes nothing) a
module of this folder that defines a derivation it does not know, a ``_gaussian_<name>.py`` whose
``<name>`` is not a registered activation (`gaugedyn.theory.ACTIVATIONS`) or whose ``NAME``
is not ``gaussian_<name>``, and a registered activation whose closed-form kernels no derivation
gives (`declaration_problems()`).
"""

from __future__ import annotations

import ast
import glob
import importlib
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import TextIO

from .._errors import InputError
from ._kernels import FOLDER, PREFIX, gaussian_names

DERIVATIONS: tuple[str, ...] = (
    "gaugedyn.symbolic._homogeneous",
    "gaugedyn.symbolic._reaction_transport",
    "gaugedyn.symbolic._gauge_steps",
    *(f"gaugedyn.symbolic.{PREFIX}{name}" for name in gaussian_names()),
    "gaugedyn.symbolic._order_parameters",
    "gaugedyn.symbolic._adam_series",
    "gaugedyn.symbolic._adam_stability",
    "gaugedyn.adam._derivation",
    "gaugedyn.symbolic._auxiliary",
)
"""Module paths, in document order (the kernel derivations found in this folder, by name). A
module that is not importable yet is skipped with a warning."""

_ROOT = Path(__file__).resolve().parents[3]
DEFAULT_DIR = (_ROOT if (_ROOT / "pyproject.toml").is_file() else Path.cwd()) / "derivations"
"""The repository's ``derivations/`` (source checkout), else ``./derivations``."""


@dataclass
class DeriveReport:
    """What ``derive`` did: documents written, unchanged, checked, skipped, and failures."""

    written: list[str] = field(default_factory=list)
    unchanged: list[str] = field(default_factory=list)
    checked: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    failures: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.failures


_VERIFIED: set[tuple[str, int]] = set()


def _defines_derivation(path: Path) -> tuple[bool, str | None]:
    """Whether the module at ``path`` defines a derivation (top-level ``NAME``, ``build`` and
    ``verify``), and its ``NAME`` when that is a string literal; read, not imported."""
    names: set[str] = set()
    value = None
    for node in ast.parse(path.read_text(encoding="utf-8")).body:
        if isinstance(node, ast.FunctionDef):
            names.add(node.name)
        elif isinstance(node, ast.Assign | ast.AnnAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for target in targets:
                if isinstance(target, ast.Name):
                    names.add(target.id)
                    if (
                        target.id == "NAME"
                        and isinstance(node.value, ast.Constant)
                        and isinstance(node.value.value, str)
                    ):
                        value = node.value.value
    return {"NAME", "build", "verify"} <= names, value


def declaration_problems(
    modules: tuple[str, ...] = DERIVATIONS, kernels: Path | None = None
) -> list[str]:
    """What ``derive`` refuses before any work (empty when nothing): a module of this folder
    that defines a derivation not in ``modules``; a ``_gaussian_<name>.py`` whose ``<name>`` is
    not a registered activation or whose ``NAME`` is not ``gaussian_<name>``; a registered
    activation whose closed-form kernels the generated module ``kernels`` (default
    ``theory/_generated_kernels.py``) holds and no ``_gaussian_<name>.py`` derives."""
    from ..theory import ACTIVATIONS
    from ._codegen import TARGET

    kernels = TARGET if kernels is None else kernels

    problems = []
    for path in sorted(FOLDER.glob("_*.py")):
        defines, name = _defines_derivation(path)
        module = f"gaugedyn.symbolic.{path.stem}"
        if defines and module not in modules and not path.name.startswith(PREFIX):
            problems.append(
                f"symbolic/{path.name} defines a derivation (NAME, build, verify) "
                "that derive does not know: name it in DERIVATIONS "
                "(symbolic/_registry.py), or call an activation's kernel "
                f"derivation {PREFIX}<activation>.py"
            )
    found = gaussian_names()
    for activation in found:
        path = FOLDER / f"{PREFIX}{activation}.py"
        if activation not in ACTIVATIONS:
            problems.append(
                f"symbolic/{path.name} derives the kernels of {activation!r}, which "
                "is not a registered activation; register it in "
                "theory/_activation.py (ACTIVATIONS: "
                f"{', '.join(ACTIVATIONS)})"
            )
        _, name = _defines_derivation(path)
        if name != f"gaussian_{activation}":
            problems.append(
                f"symbolic/{path.name}: NAME = {name!r}; it must be "
                f"'gaussian_{activation}' (the document derivations/gaussian_"
                f"{activation}.md)"
            )
    for name in generated_names(kernels):
        if name not in found:
            problems.append(
                f"activation {name!r} has closed-form kernels in {kernels.name} "
                f"(KERNELS) but no symbolic/{PREFIX}{name}.py derives them; restore "
                "it (to drop the closed form, delete its KERNELS entry)"
            )
    return problems


def generated_names(kernels: Path) -> tuple[str, ...]:
    """The keys of ``KERNELS`` in the generated kernel module at ``kernels`` (read, not
    imported; none when the file is missing or not one derive wrote)."""
    if not kernels.is_file() or not generated(kernels):
        return ()
    try:
        body = ast.parse(kernels.read_text(encoding="utf-8")).body
    except (SyntaxError, ValueError, UnicodeDecodeError):
        return ()
    for node in body:
        if (
            isinstance(node, ast.Assign)
            and any(isinstance(t, ast.Name) and t.id == "KERNELS" for t in node.targets)
            and isinstance(node.value, ast.Dict)
        ):
            return tuple(
                k.value
                for k in node.value.keys
                if isinstance(k, ast.Constant) and isinstance(k.value, str)
            )
    return ()


def _verify(module) -> None:
    """Run ``module.verify()`` once per process (a replaced ``verify`` runs again)."""
    key = (module.__name__, id(module.verify))
    if key not in _VERIFIED:
        module.verify()
        _VERIFIED.add(key)


def _load(path: str, err):
    try:
        return importlib.import_module(path)
    except ModuleNotFoundError as exc:
        if exc.name is not None and path.startswith(exc.name):
            print(f"warning: derivation module {path} is not importable yet; skipped", file=err)
            return None
        raise


def _same_file(path: Path, text: str) -> bool:
    return path.is_file() and path.read_text(encoding="utf-8") == text


_STALE = "stale (differs from `gaugedyn derive`)"


def _settle(target: Path, text: str, *, check: bool, report: DeriveReport, out) -> None:
    """Check ``target`` against ``text`` (``check``), else write it unless it already matches."""
    if check:
        if _same_file(target, text):
            report.checked.append(str(target))
            print(f"ok      {target}", file=out)
        else:
            label, why = (
                ("MISSING", "missing (run `gaugedyn derive` to write it)")
                if not target.exists()
                else ("STALE  ", _STALE)
            )
            report.failures.append(f"{target}: {why}")
            print(f"{label} {target}: {why}", file=out)
    elif _same_file(target, text):
        report.unchanged.append(str(target))
        print(f"same    {target}", file=out)
    else:
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, encoding="utf-8")
        report.written.append(str(target))
        print(f"wrote   {target}", file=out)
        for source in compiled_from(target):
            removed = clear_numba_cache(source)
            if removed:
                print(f"cleared {len(removed)} numba cache files of {source}", file=out)


COMPILED_FROM: dict[tuple[str, str], tuple[tuple[str, str], ...]] = {
    ("theory", "_generated_kernels.py"): (
        ("theory", "_compiled_kernels.py"),
        ("training", "_online_kernels.py"),
    ),
    ("training", "_auxiliary_generated.py"): (("training", "_auxiliary_kernels.py"),),
}
"""The modules whose disk-cached numba functions (``cache=True``) compile the code of a generated
module (``(subpackage, file)`` of ``gaugedyn``): `jit_generated()` or ``numba.njit`` of its
functions, inlined into theirs. Numba checks a cached function against its own file only (its
documented limitation: a change in a function defined in another file is not seen), so after the
generated module is rewritten these modules' caches would load the old machine code;
``derive`` removes them (`clear_numba_cache()`) whenever it writes that module."""


def compiled_from(target: Path) -> tuple[Path, ...]:
    """The source files (`COMPILED_FROM`) compiled from the generated module at ``target``,
    in the package ``target`` lies in; none for another path (``--kernels`` elsewhere)."""
    package = target.parent.parent
    return tuple(
        package / subpackage / name
        for subpackage, name in COMPILED_FROM.get((target.parent.name, target.name), ())
        if (package / subpackage / name).is_file()
    )


def clear_numba_cache(source: Path) -> list[Path]:
    """Remove numba's disk cache (index ``.nbi`` and code ``.nbc`` files) of every function of
    the module at ``source``; returns the removed paths.

    The folder is the one numba itself chooses for a function of that file (its cache locator:
    the ``__pycache__`` beside it, ``NUMBA_CACHE_DIR`` when set, else a user-wide folder), read
    from a cached dispatcher's ``stats.cache_path`` for a function compiled as if in that file
    (nothing is compiled); numba names the files ``<module>.<function>-<line>.py<ver>...``."""
    import numba

    namespace: dict = {}
    exec(compile("def probe():\n    pass\n", str(source), "exec"), namespace)
    cache_path = numba.njit(cache=True)(namespace["probe"]).stats.cache_path
    if cache_path is None:  # no cache for that file
        return []
    removed = [
        path
        for path in sorted(Path(cache_path).glob(f"{glob.escape(source.stem)}.*"))
        if path.suffix in (".nbi", ".nbc")
    ]
    for path in removed:
        path.unlink(missing_ok=True)
    return removed


GENERATED_MARKS = ("Generated by `gaugedyn derive`", "written by ``gaugedyn derive``")
"""The lines by which a document or a kernel module says that ``gaugedyn derive`` wrote it."""


def generated(path: Path) -> bool:
    """Whether the file at ``path`` carries a `GENERATED_MARKS` line in its first lines."""
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            head = f.read(2048)
    except OSError:
        return False
    return any(mark in head for mark in GENERATED_MARKS)


def foreign_targets(directory: Path, targets: list[Path]) -> list[str]:
    """Why writing ``targets`` would overwrite what ``gaugedyn derive`` did not write: an
    existing target without a generated mark (`generated()`), or a non-empty ``directory``
    holding no generated document at all (someone else's folder)."""
    problems = [
        f"{t} exists and was not written by gaugedyn derive (no generated mark)"
        for t in targets
        if t.exists() and not (t.is_file() and generated(t))
    ]
    if directory.is_dir() and any(directory.iterdir()):
        if not any(generated(f) for f in directory.glob("*.md")):
            problems.insert(
                0, f"--dir {directory} is not empty and holds no document gaugedyn derive wrote"
            )
    return problems


def _only(loaded: list, names: tuple[str, ...]) -> list:
    """The ``(path, module)`` pairs of ``loaded`` whose document is one of ``names``; an
    unknown name is refused (`InputError`), naming the documents there are."""
    known = [m.NAME for _, m in loaded if m is not None]
    unknown = [name for name in names if name not in known]
    if unknown:
        raise InputError(
            f"--only {unknown[0]!r}: no such document; choose among {', '.join(known)}"
        )
    return [(path, m) for path, m in loaded if m is not None and m.NAME in names]


def derive(
    directory: Path | str | None = None,
    *,
    check: bool = False,
    kernels: Path | str | None = None,
    modules: tuple[str, ...] | None = None,
    out: TextIO | None = None,
    err: TextIO | None = None,
    force: bool = False,
    only: tuple[str, ...] | None = None,
) -> DeriveReport:
    """Write (``check=False``) or check (``check=True``) every derivation document and the kernels.

    Writing verifies every identity first and writes ``<directory>/<NAME>.md`` plus the generated
    kernel module (``kernels``, default ``gaugedyn/theory/_generated_kernels.py``) with the
    closed forms of every activation that has a kernel derivation; a failed identity is reported
    and its document is not written. Checking writes nothing and reports a document as stale when
    it differs from what writing would produce. With the registry's modules (``modules=None``,
    `DERIVATIONS`), every `declaration_problems()` is first reported as a failure and
    nothing is written or checked; ``modules`` restricts the documents (no such check). Writing
    never overwrites a file ``gaugedyn derive`` did not write, nor writes into someone else's
    folder (`foreign_targets()`): those are refused (`InputError`) before
    anything is written, unless ``force``. ``only`` keeps the documents of those names (after
    the declaration check) and the kernels, which are generated from every closed form.

    Parameters
    ----------
    directory : path, optional
        Where the documents live (default: the repository's ``derivations/``).
    check : bool
        ``True``: compare with what writing would produce and write nothing.
    kernels : path, optional
        The generated kernel module (default ``gaugedyn/theory/_generated_kernels.py``).
    modules : tuple of str, optional
        Only these derivation modules (default: the registry's, after its declaration check).
    out, err : text stream, optional
        Where progress and failures are printed (default: nowhere).
    force : bool
        Write over files ``gaugedyn derive`` did not write, or into a foreign folder.
    only : tuple of str, optional
        Only the documents of these names (``NAME``, e.g. ``"gaussian_relu"``) and the kernels.

    Returns
    -------
    DeriveReport
        The documents written, unchanged, checked and skipped, and the failures (``ok`` when
        there are none).

    Raises
    ------
    InputError
        Before anything is written, when a target is a file ``gaugedyn derive`` did not write or
        lies in someone else's folder (unless ``force``), or when ``only`` names no document.
    """
    from ._codegen import TARGET, source
    from ._kernels import closed_form_activations

    out = sys.stdout if out is None else out
    err = sys.stderr if err is None else err
    directory = Path(directory) if directory is not None else DEFAULT_DIR
    kernels = Path(kernels) if kernels is not None else TARGET
    report = DeriveReport()
    if modules is None:
        modules = DERIVATIONS
        for problem in declaration_problems(modules, kernels):
            report.failures.append(f"refused: {problem}")
            print(f"REFUSED {problem}", file=out)
        if report.failures:
            return report
    loaded = [(path, _load(path, err)) for path in modules]
    if only is not None:
        loaded = _only(loaded, only)
    if not check and not force:
        targets = [directory / f"{m.NAME}.md" for _, m in loaded if m is not None]
        problems = foreign_targets(directory, [*targets, kernels])
        if problems:
            more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
            raise InputError(
                f"{problems[0]}{more}; nothing was written; choose another path, or pass "
                "--force (force=True) to overwrite"
            )
    if not check:
        directory.mkdir(parents=True, exist_ok=True)
    for path, module in loaded:
        if module is None:
            report.skipped.append(path)
            continue
        target = directory / f"{module.NAME}.md"
        try:
            _verify(module)
        except AssertionError as exc:
            report.failures.append(f"{target}: identity failed: {exc}")
            print(f"FAILED {target}: identity failed: {exc}", file=out)
            continue
        _settle(target, module.build(), check=check, report=report, out=out)
        for path, text in getattr(module, "generated", dict)().items():
            _settle(Path(path), text, check=check, report=report, out=out)
    print(
        f"kernels of {', '.join(closed_form_activations()) or 'no activation'} (closed forms)",
        file=out,
    )
    _settle(kernels, source(), check=check, report=report, out=out)
    return report
