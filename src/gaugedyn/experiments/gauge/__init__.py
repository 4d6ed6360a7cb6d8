"""The hidden gauge in ReLU networks: opposite rescaling gauges, one function, different dynamics.

A ReLU unit ``a relu(w . x)`` is unchanged by ``(a, w) -> (a / c, c w)``; gradient flow conserves
``delta = a^2 - |w|^2`` per unit, so the gauge chosen at initialisation is never forgotten. The
claims: opposite gauges of the same initial function follow different paths (``clock``), their
specialization times differ by ``Theta(D^2)`` (``dimension_scaling``), the dissipation splits into
reaction and transport parts (``dissipation``), among duplicates the favourable (a-heavy) gauge
picks the owner (``ownership``, ``ownership_patterns``, ``perturbations``), and finite networks,
gradient descent, online SGD and training under small noise keep what the flow predicts
(``finite_sample``, ``gradient_descent``, ``gd_selection``, ``online_sgd``,
``gauge_in_training_*``); plateaus are saddles whose escape rate the gauge sets
(``landscape``). The theory is ``derivations/theory.md`` section 2 and the derivations it
links (``homogeneous_flow.md``, ``reaction_transport.md``, ``order_parameter_flow.md``); the
protocol of every experiment, and where each piece lives, is ``PROTOCOL.md`` in this folder.
"""
