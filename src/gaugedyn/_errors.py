"""Exceptions shared by every layer of gaugedyn."""

from __future__ import annotations

from typing import Any


class InputError(ValueError):
    """A value a user supplied is not allowed.

    The message names the offending key or option, the value given and what is allowed;
    the command line prints it on one line and exits with status 2.
    """


class DivergenceError(FloatingPointError):
    """A trajectory produced NaN or infinity.

    Carries the time, the step index and the quantity that went non-finite, and the last
    finite state so a caller can inspect or store it.
    """

    def __init__(self, quantity: str, time: float, step: int, last_state: Any = None):
        self.quantity = quantity
        self.time = time
        self.step = step
        self.last_state = last_state
        super().__init__(
            f"trajectory diverged: {quantity} became non-finite at t={time:.6g} (step {step}); "
            "reduce the step size or check the initial condition"
        )


def oneline(err: BaseException) -> str:
    """The message of ``err`` on one line (its type name when the message is empty)."""
    return " ".join(str(err).split()) or type(err).__name__


class _NoiseTermDisagreement(Exception):
    """What `NoiseTermWarning` and `NoiseTermError` carry: the activation's name, the time and
    the relative disagreement, beside the message; pickled whole (e.g. from a worker process)."""

    def __init__(self, message: str, activation: str, time: float, disagreement: float):
        self.activation = activation
        self.time = time
        self.disagreement = disagreement
        super().__init__(message)

    def __reduce__(self):
        return type(self), (str(self), self.activation, self.time, self.disagreement)


class NoiseTermWarning(_NoiseTermDisagreement, UserWarning):
    """The online ODE's gradient-noise term, evaluated by quadrature, disagrees with a Monte
    Carlo estimate of the same expectation by more than the declared tolerance
    (`gaugedyn.training._online_ode.NOISE_CHECK`).

    Carries the activation's name, the time, the relative disagreement and the tolerance; the
    message says what to do.
    """


class NoiseTermError(_NoiseTermDisagreement, RuntimeError):
    """`NoiseTermWarning`'s disagreement, raised instead of warned
    (``online_ode(..., noise_check="error")``); the same attributes and message."""
