"""The registry of derivations and the ``derive`` job: write, or check, every document.

Each registered module exposes ``NAME`` (the document is ``NAME.md``), ``build() -> str``
(the Markdown) and ``verify() -> None`` (raises ``AssertionError`` naming the failed identity);
a module that generates code also exposes ``generated() -> {path: text}``, settled like its
document.
"""

from __future__ import annotations

import importlib
import sys
from dataclasses import dataclass, field
from pathlib import Path

DERIVATIONS: tuple[str, ...] = (
    "gaugedyn.symbolic._homogeneous",
    "gaugedyn.symbolic._reaction_transport",
    "gaugedyn.symbolic._gauge_steps",
    "gaugedyn.symbolic._gaussian_relu",
    "gaugedyn.symbolic._gaussian_erf",
    "gaugedyn.symbolic._gaussian_linear",
    "gaugedyn.symbolic._order_parameters",
    "gaugedyn.symbolic._adam_series",
    "gaugedyn.symbolic._adam_stability",
    "gaugedyn.adam._derivation",
    "gaugedyn.symbolic._auxiliary",
)
"""Module paths, in document order. A module that is not importable yet is skipped with a warning."""

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
            label, why = ("MISSING", "missing (run `gaugedyn derive` to write it)") \
                if not target.exists() else ("STALE  ", _STALE)
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


def derive(
    directory: Path | str | None = None,
    *,
    check: bool = False,
    kernels: Path | str | None = None,
    modules: tuple[str, ...] = DERIVATIONS,
    out=None,
    err=None,
) -> DeriveReport:
    """Write (``check=False``) or check (``check=True``) every derivation document and the kernels.

    Writing verifies every identity first and writes ``<directory>/<NAME>.md`` plus the generated
    kernel module (``kernels``, default ``gaugedyn/theory/_generated_kernels.py``); a failed
    identity is reported and its document is not written. Checking writes nothing and reports a
    document as stale when it differs from what writing would produce.
    """
    from ._codegen import TARGET, source

    out = sys.stdout if out is None else out
    err = sys.stderr if err is None else err
    directory = Path(directory) if directory is not None else DEFAULT_DIR
    kernels = Path(kernels) if kernels is not None else TARGET
    report = DeriveReport()
    if not check:
        directory.mkdir(parents=True, exist_ok=True)
    for path in modules:
        module = _load(path, err)
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
    _settle(kernels, source(), check=check, report=report, out=out)
    return report
