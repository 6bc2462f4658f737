r"""The small-cell class 𝒞^{h,α}_n of Prop 8 (§5.2, Bon et al. 2026).

.. math::

    \mathcal C^{h,\alpha} = \{P \in \mathcal P_{\mathbb N} : P(\{z < h\}) \ge \alpha\},
    \qquad \mathcal C^{h,\alpha}_n = \text{independent products of such marginals.}
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from persuasive import _domains as dm
from persuasive import _tolerances as tol
from persuasive.classes.base import PriorClass
from persuasive.priors import IndependentCellsPrior, Prior


@dataclass(frozen=True)
class SmallCellClass(PriorClass):
    """Independent cell priors each putting mass at least α on counts below h.

    Parameters
    ----------
    h : int
        Small-count threshold, ``1 <= h <= 10**6`` (the paper takes ``h >= 2``;
        :data:`persuasive._domains.THRESHOLD`).
    alpha : float
        Minimum prior mass below h, ``0 < alpha <= 1``.

    Examples
    --------
    >>> import persuasive as pp
    >>> from scipy import stats
    >>> c = pp.SmallCellClass(3, 0.2)
    >>> c.contains(pp.IndependentCellsPrior([stats.poisson(4)])), c.contains(
    ...     pp.IndependentCellsPrior([stats.poisson(9)]))
    (True, False)
    """

    h: int
    alpha: float

    def __post_init__(self) -> None:
        for name, param in dm.PRIOR_CLASSES["small_cell"].items():
            object.__setattr__(self, name, param.check(name, getattr(self, name)))

    def contains(self, prior: Prior, x: ArrayLike | None = None) -> bool:
        if not isinstance(prior, IndependentCellsPrior):
            return False
        floor = self.alpha * (1.0 - tol.CLASS_RTOL)
        return bool(np.all(prior.cdf_below(self.h) >= floor))

    def describe(self) -> dict[str, Any]:
        return {"class": "SmallCellClass", "h": self.h, "alpha": self.alpha}
