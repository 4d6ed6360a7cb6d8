"""Tied-beta Adam: the update splits into sign, magnitude lag and remainders.

With ``beta1 = beta2`` Adam's update ``m^ / (sqrt(v^) + eps)`` has no magnitude lag; the claims
measure the split's shares on offline vision and language tasks over a ``(beta1, beta2)`` grid
(``beta_grid``, judged under ``PROTOCOL.md`` in this folder, fixed before the grid ran) and the
gauge of ReLU networks under Adam (``gauge_under_adam``). Here: the protocol (``PROTOCOL.md``)
and its constants (``_protocol``); the runs (the tasks ``tasks``, the batched copies
``_batched`` with their stacked passes ``_stacked``, ``_stacked_text``); the analyses (the
grid's statistics ``_grid`` and findings ``_grid_analysis``, ``_gauge_analysis``) and the figures
(``_figures``), apart from the runs. The split itself, the recorder, the reference and the
batched Adam are the library's (`gaugedyn.adam`). The theory is ``derivations/theory.md`` section 3,
``adam_decomposition.md`` and ``adam_series.md``.
"""
