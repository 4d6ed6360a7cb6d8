"""gaugedyn: theory and simulation of neural-network training dynamics.

Two phenomena: the hidden rescaling gauge of ReLU networks in the Gaussian
teacher-student model, and the sign/lag decomposition of tied-beta Adam.
The top-level import is light; sympy and torch load only in the modules that use them.
"""

from ._errors import DivergenceError as DivergenceError
from ._errors import InputError as InputError

__version__ = "0.1.0"
