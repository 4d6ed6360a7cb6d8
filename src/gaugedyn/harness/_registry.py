"""The experiments, by name, grouped by system: the only place the harness learns of a system.

:data:`SYSTEMS` maps each system (a folder under :mod:`gaugedyn.experiments`) to the names of its
experiments; :data:`EXPERIMENTS` maps every experiment name to the module that defines its
``EXPERIMENT``. The harness imports a module from this table only when a configuration names it,
so it never imports a system on its own, and a helper module in a system folder needs no prefix:
only modules listed here define experiments (``tests/test_structure.py`` checks both ways).
"""

from __future__ import annotations

SYSTEMS: dict[str, tuple[str, ...]] = {
    # hidden gauge in ReLU networks: population flows, finite networks, online SGD
    "gauge": (
        "dimension_scaling",
        "clock",
        "ownership",
        "ownership_patterns",
        "perturbations",
        "gradient_descent",
        "gd_selection",
        "dissipation",
        "finite_sample",
        "online_sgd",
        "gauge_in_training_scaling",
        "gauge_in_training_ownership",
        "gauge_on_networks",
        "landscape",
    ),
    # tied-beta Adam: the update's split on real tasks, and the gauge under Adam
    "adam_split": ("beta_grid", "gauge_under_adam"),
    # second-moment structure in shared representations: Adam state surgery
    "adam_state": ("shared_representation",),
    # prototype specialization in minimal Gaussian MLPs
    "prototypes": ("prototypes",),
    # Adam stability: the loss-spike boundary and full-batch Adam's edge of stability
    "adam_stability": ("spike_boundary", "adam_edge"),
}

EXPERIMENTS: dict[str, str] = {
    name: f"gaugedyn.experiments.{system}.{name}"
    for system, names in SYSTEMS.items()
    for name in names
}


def system_of(name: str) -> str:
    """The system folder of experiment ``name`` (a key of :data:`EXPERIMENTS`)."""
    return EXPERIMENTS[name].split(".")[2]
