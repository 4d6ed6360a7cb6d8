"""Population theory: problem specifications, the exact flows, integrators and observables."""

from . import _generated_kernels as generated_kernels  # noqa: F401  (a public alias)
from ._activation import ACTIVATIONS as ACTIVATIONS
from ._activation import LEAKY_SLOPE as LEAKY_SLOPE
from ._activation import Activation as Activation
from ._activation import activation_of as activation_of
from ._activation import check_activation as check_activation
from ._activation import cross_kernels as cross_kernels
from ._activation import on_numpy as on_numpy
from ._activation import register_activation as register_activation
from ._catalogue import Catalogue as Catalogue
from ._catalogue import catalogue as catalogue
from ._flows import FORMULATIONS as FORMULATIONS
from ._flows import FlowParams as FlowParams
from ._flows import gd_step as gd_step
from ._flows import initial_state as initial_state
from ._flows import jacobian as jacobian
from ._flows import rhs as rhs
from ._flows import rhs_and_jacobian as rhs_and_jacobian
from ._flows import state_to_order_parameters as state_to_order_parameters
from ._flows import weights as weights
from ._functional import functional_report, owners, pruned_since, remaining_relative  # noqa: F401
from ._functional import pruning_time as pruning_time
from ._jit import jit_generated as jit_generated
from ._landscape import CriticalPoint as CriticalPoint
from ._landscape import FixedPoint as FixedPoint
from ._landscape import critical_point as critical_point
from ._landscape import fixed_point as fixed_point
from ._landscape import function_units as function_units
from ._landscape import realize as realize
from ._landscape import same_point as same_point
from ._observables import CLASSIFICATION_SAMPLES as CLASSIFICATION_SAMPLES
from ._observables import Definitions as Definitions
from ._observables import alignment as alignment
from ._observables import classification_error as classification_error
from ._observables import delta as delta
from ._observables import delta_drift as delta_drift
from ._observables import dissipation as dissipation
from ._observables import dissipation_split as dissipation_split
from ._observables import mobilities as mobilities
from ._observables import observe as observe
from ._observables import order_parameters as order_parameters
from ._observables import owner as owner
from ._observables import owner_sets as owner_sets
from ._observables import pruned as pruned
from ._observables import rho as rho
from ._observables import specialization as specialization
from ._params import PARAMS as PARAMS
from ._plateaus import Plateau as Plateau
from ._plateaus import Stretch as Stretch
from ._plateaus import escape_time as escape_time
from ._plateaus import escape_times as escape_times
from ._plateaus import flat_stretches as flat_stretches
from ._plateaus import plateaus as plateaus
from ._plateaus import time_spent as time_spent
from ._population import gradient_jvp as gradient_jvp
from ._population import gradients as gradients
from ._population import order_parameter_velocity as order_parameter_velocity
from ._population import population_loss as population_loss
from ._problem import GAUGE_NAMES as GAUGE_NAMES
from ._problem import MAX_NEURONS as MAX_NEURONS
from ._problem import Problem as Problem
from ._problem import duplicates as duplicates
from ._problem import perturb as perturb
from ._problem import random_problem as random_problem
from ._problem import single as single
from ._problem import with_gauge as with_gauge
from ._quadrature import eigen_factor as eigen_factor
from ._quadrature import gaussian_product as gaussian_product
from ._quadrature import hermite_grid as hermite_grid
from ._registry import METHODS as METHODS
from ._solution import BatchSolution as BatchSolution
from ._solution import Solution as Solution
from ._solve import default_t_max as default_t_max
from ._solve import log_times as log_times
from ._solve import solve as solve
from ._solve import solve_batch as solve_batch

# the public names, in this order on the API reference (the module alias generated_kernels aside)
__all__ = [
    "ACTIVATIONS",
    "LEAKY_SLOPE",
    "Activation",
    "activation_of",
    "check_activation",
    "cross_kernels",
    "on_numpy",
    "register_activation",
    "Catalogue",
    "catalogue",
    "FORMULATIONS",
    "FlowParams",
    "gd_step",
    "initial_state",
    "jacobian",
    "rhs",
    "rhs_and_jacobian",
    "state_to_order_parameters",
    "weights",
    "functional_report",
    "owners",
    "pruned_since",
    "remaining_relative",
    "pruning_time",
    "jit_generated",
    "CriticalPoint",
    "FixedPoint",
    "critical_point",
    "fixed_point",
    "function_units",
    "realize",
    "same_point",
    "CLASSIFICATION_SAMPLES",
    "Definitions",
    "alignment",
    "classification_error",
    "delta",
    "delta_drift",
    "dissipation",
    "dissipation_split",
    "mobilities",
    "observe",
    "order_parameters",
    "owner",
    "owner_sets",
    "pruned",
    "rho",
    "specialization",
    "PARAMS",
    "Plateau",
    "Stretch",
    "escape_time",
    "escape_times",
    "flat_stretches",
    "plateaus",
    "time_spent",
    "gradient_jvp",
    "gradients",
    "order_parameter_velocity",
    "population_loss",
    "GAUGE_NAMES",
    "MAX_NEURONS",
    "Problem",
    "duplicates",
    "perturb",
    "random_problem",
    "single",
    "with_gauge",
    "eigen_factor",
    "gaussian_product",
    "hermite_grid",
    "METHODS",
    "BatchSolution",
    "Solution",
    "default_t_max",
    "log_times",
    "solve",
    "solve_batch",
]
