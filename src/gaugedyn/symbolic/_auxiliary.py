"""Auxiliary learning in the teacher-student model: ``gaugedyn derive`` writes
``derivations/auxiliary.md`` (the declared model, its readings, the online ODE, ReLU's
four-point integrals, the linear closed form, the fluctuation-dissipation relation and what is
reconstructed) and the generated kernels ``gaugedyn/training/_auxiliary_generated.py``; the
derivations themselves are `._auxiliary_model`."""

from __future__ import annotations

from pathlib import Path

NAME = "auxiliary"
TARGET = Path(__file__).resolve().parents[1] / "training" / "_auxiliary_generated.py"
"""The generated scalar kernels (plain ``math`` arithmetic: numba compiles them as they are)."""


def build() -> str:
    """The document ``derivations/auxiliary.md``."""
    from ._auxiliary_doc import document_text

    return document_text()


def verify() -> None:
    """Every identity of `._auxiliary_model`."""
    from ._auxiliary_model import check_all

    check_all()


def generated() -> dict:
    """``{path: text}`` of the files this derivation generates."""
    from ._auxiliary_codegen import source

    return {TARGET: source()}
