"""The negative log-probability score (Example 4 and App. A, Bon et al. 2026)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from persuasive.priors.base import Prior, as_dataset
from persuasive.scores.base import Score


@dataclass(frozen=True)
class LogScore(Score):
    r"""The log score :math:`L(P, x) = -\log \frac{dP}{d\mu}(x)`.

    For a pmf (counting measure μ) this is :math:`-\log P(\{x\})`, :math:`+\infty` off the
    support; for a density, the negative log density. Relative losses are never computed as a
    difference of these values: :func:`persuasive.relative_loss` uses the exact identity

    .. math:: \Delta_L(Q, T, x) = \log m(x, T) - \log m_Q(T),
              \qquad m_Q(T) = \int m(z, T)\, Q(dz),

    with the convention :math:`\infty - \infty = 0` when x is outside the support of Q
    (App. A and E.5, Bon et al. 2026; reconstructed in docs/math.md §2).

    Examples
    --------
    >>> import persuasive as pp
    >>> round(pp.LogScore()(pp.DiscretePrior([0, 1], [0.25, 0.75]), 0), 6)
    1.386294
    """

    def __call__(self, P: Prior, x: ArrayLike) -> float:
        return float(-np.asarray(P.logpdf(as_dataset(x))))

    def describe(self) -> dict[str, Any]:
        return {"score": "LogScore"}
