"""Adam stability: the loss-spike boundary and full-batch Adam's edge of stability.

The spike boundary ``1 - beta2 = C (1 - beta1)^p`` in the ``(1 - beta1, 1 - beta2)`` plane
(``spike_boundary``; about cubic on a 1-D quadratic, near-linear for ``|x|^n``) and full-batch
Adam's active curvature at its edge of stability (``adam_edge``). The library holds the 1-D
map's period-2 orbit and growth rate and the spike detector (:mod:`gaugedyn.adam`); the batched
full-batch tasks (``_batched``) and the edge instruments (``_edge``) are this study's. The theory
is ``derivations/adam_stability.md``.
"""
