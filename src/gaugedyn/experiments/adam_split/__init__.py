"""Tied-beta Adam: the update splits into sign, magnitude lag and remainders.

With ``beta1 = beta2`` Adam's update ``m^ / (sqrt(v^) + eps)`` has no magnitude lag; the claims
measure the split's shares on offline vision and language tasks over a ``(beta1, beta2)`` grid
(``beta_grid``, judged under ``PROTOCOL.md`` in this folder, fixed before the grid ran) and the
gauge of ReLU networks under Adam (``gauge_under_adam``). The tasks (``tasks``) and the grid's
statistics (``_grid``) live here; the split itself, the recorder and the reference are the
library's (:mod:`gaugedyn.adam`). The theory is ``derivations/theory.md`` section 3,
``adam_decomposition.md`` and ``adam_series.md``.
"""
