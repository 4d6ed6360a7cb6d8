"""Population theory: problem specifications, the exact flows, integrators and observables."""

from ._observables import Definitions as Definitions
from ._observables import alignment as alignment
from ._observables import delta as delta
from ._observables import delta_drift as delta_drift
from ._observables import dissipation as dissipation
from ._observables import observe as observe
from ._observables import order_parameters as order_parameters
from ._observables import owner as owner
from ._observables import pruned as pruned
from ._observables import rho as rho
from ._population import ACTIVATIONS as ACTIVATIONS
from ._population import gradients as gradients
from ._population import order_parameter_velocity as order_parameter_velocity
from ._population import population_loss as population_loss
from ._problem import GAUGE_NAMES as GAUGE_NAMES
from ._problem import Problem as Problem
from ._problem import duplicates as duplicates
from ._problem import perturb as perturb
from ._problem import random_problem as random_problem
from ._problem import single as single
from ._problem import with_gauge as with_gauge
