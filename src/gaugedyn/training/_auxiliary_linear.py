"""The linear closed form of the auxiliary model (``derivations/auxiliary.md``): the one-output
linear student ``f = w.x`` with its head fixed at one, unit teachers with overlap ``rho``, online
SGD on ``(f - y_m)^2 / 2 + gamma (f - y_a)^2 / 2`` at step ``eta / D``, batch ``B``."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from . import _auxiliary_generated as gen


@dataclass(frozen=True)
class LinearClosedForm:
    r"""The main-task error of the one-output linear student, from the start
    $|w|^2 = Q_0$ (``Q0``), $w \cdot v_m = R_{m,0}$ (``R_main0``), $w \cdot v_a = R_{a,0}$
    (``R_aux0``). With $G = 1 + \gamma$ and $s^2 = (\sigma_m^2 + \gamma^2 \sigma_a^2) / G^2$:

    $$
    \begin{aligned}
    \epsilon_m(t) &= \Delta(t) / 2 + m(t) + (\gamma / G)^2 (1 - \rho), \\
    \Delta(t) &= \Delta_\infty + (\Delta_0 - \Delta_\infty)
    \exp\bigl(-(2 \eta G - \eta^2 G^2 / B)\, t\bigr), \\
    m(t) &= m_0 \exp(-\eta G t), \qquad \Delta_\infty = \eta G s^2 / (2 B - \eta G);
    \end{aligned}
    $$

    `leading()` is its first order in $\eta$ at fixed $\tau = \eta t$."""

    eta: float
    gamma: float
    rho: float
    sigma_main: float = 0.0
    sigma_aux: float = 0.0
    batch: int = 1
    Q0: float = 1.0
    R_main0: float = 0.0
    R_aux0: float = 0.0

    def _common(self) -> tuple:
        return (self.eta, self.gamma, self.rho, self.sigma_main, self.sigma_aux, float(self.batch))

    def _start(self) -> tuple:
        return (self.Q0, self.R_main0, self.R_aux0)

    def error(self, t) -> np.ndarray:
        """``eps_m(t)``, the exact solution of the online ODE (``t = steps / D``)."""
        return gen.linear_error(t, *self._common(), *self._start())

    def leading(self, tau) -> np.ndarray:
        r"""``eps_m`` to first order in ``eta`` at $\tau = \eta t$ (the gap is $O(\eta^2)$)."""
        return gen.linear_error_leading(tau, *self._common(), *self._start())

    def stationary(self) -> float:
        """``eps_m(t -> infinity)``, exactly."""
        return float(gen.linear_error_stationary(*self._common()))

    def stationary_leading(self) -> float:
        r"""$(\gamma / G)^2 (1 - \rho) + \eta (\sigma_m^2 + \gamma^2 \sigma_a^2) / (4 B G)$."""
        return float(gen.linear_error_stationary_leading(*self._common()))

    def benefit(self) -> float:
        """The stationary benefit ``eps_m(gamma = 0) - eps_m(gamma)`` to first order."""
        return float(gen.linear_benefit(*self._common()))

    def boundary(self) -> float:
        """The overlap ``rho_c`` where `benefit()` changes sign (it is positive above)."""
        return float(
            gen.linear_boundary(
                self.eta, self.gamma, self.sigma_main, self.sigma_aux, float(self.batch)
            )
        )

    def diffusion(self, t) -> np.ndarray:
        r"""The diffusion part of ``eps_m(t) - eps_m(0)``: the integral of the $\eta^2 / B$ term
        of ``dQ/dt`` times ``d eps_m / dQ = 1/2``."""
        return gen.linear_diffusion(t, *self._common(), *self._start())

    def optimal_gamma(self) -> float:
        r"""The $\gamma > 0$ that minimises `stationary_leading()` (the cubic's positive
        root); ``nan`` where none does (no label noise)."""
        coeffs = np.array(gen.linear_optimal_gamma_cubic(*self._common()), dtype=float)
        roots = np.roots(coeffs[::-1])
        real = roots[(np.abs(roots.imag) < 1e-9) & (roots.real > 0)].real
        return float(real.min()) if real.size else float("nan")
