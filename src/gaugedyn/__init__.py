"""gaugedyn: theory and simulation of neural-network training dynamics.

Two phenomena: the hidden rescaling gauge of ReLU networks in the Gaussian
teacher-student model, and the sign/lag decomposition of tied-beta Adam.
The top-level import is light; sympy and torch load only in the modules that use them.
"""

from importlib import metadata as _metadata

from ._errors import DivergenceError as DivergenceError
from ._errors import InputError as InputError
from ._errors import NoiseTermError as NoiseTermError
from ._errors import NoiseTermWarning as NoiseTermWarning

try:  # the one place the version is written is pyproject.toml; installed metadata carries it
    __version__ = _metadata.version("gaugedyn")
except _metadata.PackageNotFoundError:  # a source tree on sys.path, never installed
    __version__ = "0+unknown"
