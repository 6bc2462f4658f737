"""Markov kernels M(x, ·): the Sender's release mechanisms (Bon et al. 2026, §2).

Conventions shared by every mechanism:

* a dataset is an array of shape ``(n,)``; batches have shape ``(..., n)``;
* :meth:`Mechanism.log_likelihood` broadcasts leading dimensions of ``x`` and ``t`` and returns
  :math:`\\log m(x, t)` — a Lebesgue log density for continuous outputs, a log pmf for discrete
  outputs, and ``0`` / ``-inf`` (consistent / inconsistent) for deterministic mechanisms;
* :meth:`Mechanism.sample` returns ``size`` outputs stacked along a new first axis.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from persuasive.errors import ValidationError


class Mechanism(ABC):
    """A Markov kernel :math:`M : \\mathsf X \\to \\mathcal P(\\mathsf T)`."""

    #: True when M(x, ·) is a point mass δ_{f(x)} for every x.
    deterministic: bool = False
    #: True when every M(x, ·) has finitely many outputs (see :meth:`output_distribution`).
    finite: bool = False
    #: True when the output is integer valued (pmf likelihood) rather than a Lebesgue density.
    discrete_output: bool = False

    def apply(self, x: ArrayLike) -> Any:
        """The output f(x) of a deterministic mechanism."""
        raise ValidationError(
            f"{type(self).__name__} is randomised; pass an output t explicitly or use sample()"
        )

    @abstractmethod
    def sample(self, x: ArrayLike, size: int, rng: np.random.Generator | None = None) -> Any:
        """Draw ``size`` outputs T ~ M(x, ·)."""

    def sample_batch(self, xs: ArrayLike, rng: np.random.Generator | None = None) -> Any:
        """One output per dataset in the batch ``xs`` (shape ``(N, n)``), stacked on axis 0.

        Used to sample a post-processing kernel at many inputs at once; subclasses override it
        with a vectorised version (the default loops).
        """
        rng = np.random.default_rng(rng)
        batch = np.asarray(xs, dtype=np.float64)
        return np.stack([np.asarray(self.sample(row, 1, rng))[0] for row in batch])

    @abstractmethod
    def log_likelihood(self, x: ArrayLike, t: Any) -> NDArray[np.float64]:
        """:math:`\\log m(x, t)`, broadcasting over leading dimensions."""

    def output_distribution(self, x: ArrayLike) -> tuple[Any, NDArray[np.float64]]:
        """Every output with positive probability at x, and those probabilities.

        Only for mechanisms with ``finite = True``; used by exact enumeration in audits.
        """
        raise ValidationError(f"{type(self).__name__} has no finite output space to enumerate")

    def describe(self) -> dict[str, Any]:
        """A JSON-ready description of the mechanism (its name and parameters)."""
        return {"mechanism": type(self).__name__}
