"""Prototype specialization in minimal Gaussian-activation MLPs.

A one-hidden-layer network ``f(x) = sum_i a_i phi(w_i x + b_i) + c`` with ``phi(z) = exp(-z^2/2)``
and width equal to the number of training samples ``N``; each hidden neuron induces a prototype
``p_i = -b_i / w_i`` (the input at which its response peaks). :mod:`._model` holds the network,
the structural losses (coverage, separation, overlap) and the batched full-batch Adam loop;
:mod:`._measures` holds the measures (reconstruction error through an optimal one-to-one
assignment, prototype-usage specialization ratio, fraction outside the hull, fit error), defined
once. The set-up and every inferred choice are written in ``derivations/prototypes.md``.

Public names load lazily, so ``import gaugedyn.prototypes`` does not import torch.
"""

from __future__ import annotations

import importlib

_EXPORTS = {
    "COMBINATIONS": "._model",
    "COVERAGES": "._model",
    "INITS": "._model",
    "TARGETS": "._model",
    "Runs": "._model",
    "initial_parameters": "._model",
    "prototypes_of": "._model",
    "structural_losses": "._model",
    "train": "._model",
    "training_data": "._model",
    "DEFINITIONS": "._measures",
    "USAGES": "._measures",
    "fit_error": "._measures",
    "outside_fraction": "._measures",
    "reconstruction_error": "._measures",
    "usage_ratio": "._measures",
    "measure_runs": "._measures",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str):
    if name in _EXPORTS:
        return getattr(importlib.import_module(_EXPORTS[name], __name__), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
