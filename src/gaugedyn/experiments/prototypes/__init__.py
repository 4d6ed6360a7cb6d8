r"""Prototype specialization in minimal Gaussian-activation MLPs.

A one-hidden-layer network $f(x) = \sum_i a_i\, \phi(w_i x + b_i) + c$ with
$\phi(z) = \exp(-z^2/2)$ and width equal to the number of training samples $N$; each hidden
neuron induces a prototype $p_i = -b_i / w_i$ (the input at which its response peaks). `._model` holds the network,
the structural losses (coverage, separation, overlap) and the batched full-batch Adam loop;
`._measures` holds the measures (reconstruction error through an optimal one-to-one
assignment, prototype-usage specialization ratio, fraction outside the hull, fit error), defined
once. The set-up and every inferred choice are written in ``derivations/prototypes.md``.

Public names load lazily, so ``import gaugedyn.experiments.prototypes`` does not import torch.
"""

from ..._lazy import attach

__getattr__, __dir__, __all__ = attach(
    __name__,
    {
        "_model": [
            "COMBINATIONS",
            "COVERAGES",
            "INITS",
            "TARGETS",
            "Runs",
            "initial_parameters",
            "prototypes_of",
            "structural_losses",
            "train",
            "training_data",
        ],
        "_measures": [
            "DEFINITIONS",
            "USAGES",
            "fit_error",
            "outside_fraction",
            "reconstruction_error",
            "usage_ratio",
            "measure_runs",
        ],
    },
)
