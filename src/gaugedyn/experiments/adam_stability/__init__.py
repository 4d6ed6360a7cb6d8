"""Adam stability: the loss-spike boundary and full-batch Adam's edge of stability.

The spike boundary ``1 - beta2 = C (1 - beta1)^p`` in the ``(1 - beta1, 1 - beta2)`` plane
(``spike_boundary``; about cubic on a 1-D quadratic, near-linear for ``|x|^n``) and full-batch
Adam's active curvature at its edge of stability (``adam_edge``). The library holds the 1-D
map's period-2 orbit and growth rate, the spike detector, the batched Adam and the sharpness
tools (`gaugedyn.adam`). This folder: the protocols (``PROTOCOL.md``) and their constants
and rules (``_protocol``); the runs (``_scan``, the batched full-batch tasks ``_batched``, the
edge instruments ``_edge``, the stored calibration ``_calibration``); the analyses
(``_spike_analysis``, ``_edge_analysis``) and the figures (``_figures``), apart from the runs.
The theory is ``derivations/adam_stability.md``.
"""
