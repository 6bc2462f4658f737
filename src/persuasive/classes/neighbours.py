r"""Neighbouring two-point priors 𝓗 and 𝓗_x (§4.1, Prop 6, Bon et al. 2026).

.. math::

    \mathcal H = \{Q \in \mathcal P_2 : \exists (x, x') \in \mathfrak N,\ Q(\{x, x'\}) = 1\},
    \qquad
    \mathcal H_x = \{Q \in \mathcal P_2 : Q(\{x\}) = 1 - Q(\{x'\}) > 0,\ x' \in \mathfrak N_x\}.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from persuasive import _domains as dm
from persuasive import _tolerances as tol
from persuasive.classes.base import PriorClass
from persuasive.errors import ValidationError
from persuasive.priors import DiscretePrior, Prior, as_dataset


@dataclass(frozen=True)
class NeighbourPriors(PriorClass):
    """Two-point priors on neighbouring datasets.

    Parameters
    ----------
    pairs : iterable of (int, int), optional
        A neighbour relation on finite datasets ``{0, ..., K-1}`` (e.g. the rows of a
        FiniteKernel), symmetrised. ``None`` (default) is the relation of integer datasets
        ``|x - x'| <= 1`` (sensitivity one).
    anchored : bool
        False for 𝓗 (any neighbouring pair); True for 𝓗_x (the pair must contain the Sender's
        x with positive mass). Prop 6 shows both give the same guarantee.

    Examples
    --------
    >>> import persuasive as pp
    >>> h = pp.NeighbourPriors()
    >>> h.contains(pp.TwoPointPrior(3, 4, 0.2)), h.contains(pp.TwoPointPrior(3, 5, 0.2))
    (True, False)
    """

    pairs: tuple[tuple[int, int], ...] | None = None
    anchored: bool = False

    def __post_init__(self) -> None:
        params = dm.PRIOR_CLASSES["neighbours"]
        object.__setattr__(self, "anchored", params["anchored"].check("anchored", self.anchored))
        pairs: Any = self.pairs
        if not isinstance(pairs, (list, tuple, set, frozenset, str)) and hasattr(pairs, "__iter__"):
            pairs = list(pairs)  # any iterable of pairs, e.g. a generator
        pairs = params["pairs"].check("pairs", pairs)
        if pairs is not None:
            sym: set[tuple[int, int]] = set()
            for i, j in pairs:
                if i != j:
                    sym |= {(i, j), (j, i)}
            if not sym:
                raise ValidationError("pairs must contain at least one pair of distinct datasets")
            object.__setattr__(self, "pairs", tuple(sorted(sym)))

    def are_neighbours(self, x: ArrayLike, x_prime: ArrayLike) -> bool:
        a, b = as_dataset(x), as_dataset(x_prime, "x_prime")
        if self.pairs is None:
            return bool(
                a.shape == b.shape
                and np.all(a == np.round(a))
                and np.all(b == np.round(b))
                and np.abs(a - b).sum() <= 1 + tol.OUTPUT_ATOL
            )
        if a.shape != (1,) or b.shape != (1,):
            return False
        return (int(a[0]), int(b[0])) in self.pairs or bool(a[0] == b[0])

    def neighbours(self, x: ArrayLike) -> list[np.ndarray]:
        """The datasets x' ≠ x neighbouring x (for the integer relation: x ± e_j)."""
        xs = as_dataset(x)
        if self.pairs is None:
            out = []
            for j in range(xs.shape[0]):
                for step in (-1.0, 1.0):
                    y = xs.copy()
                    y[j] += step
                    out.append(y)
            return out
        return [np.array([float(j)]) for (i, j) in self.pairs if i == int(xs[0])]

    def neighbour_pairs(self, datasets: Iterable[int]) -> list[tuple[int, int]]:
        """Ordered neighbouring pairs among finite datasets (all ordered pairs |i-j|<=1 if None)."""
        ds = sorted(set(int(d) for d in datasets))
        if self.pairs is None:
            return [(i, j) for i in ds for j in ds if abs(i - j) == 1]
        return [(i, j) for (i, j) in self.pairs if i in ds and j in ds]

    def contains(self, prior: Prior, x: ArrayLike | None = None) -> bool:
        if not isinstance(prior, DiscretePrior):
            return False
        pts = prior.support[prior.probs > 0]
        if pts.shape[0] > 2:
            return False
        if self.anchored:
            if x is None:
                raise ValidationError("NeighbourPriors(anchored=True) is 𝓗_x: pass x")
            xs = as_dataset(x)
            idx = prior.index(xs)
            if int(idx) < 0 or prior.probs[int(idx)] <= 0:
                return False
            others = [p for p in pts if not np.array_equal(p, xs)]
            return len(others) <= 1 and all(self.are_neighbours(xs, p) for p in others)
        if pts.shape[0] == 1:
            return True
        return self.are_neighbours(pts[0], pts[1])

    def describe(self) -> dict[str, Any]:
        return {
            "class": "NeighbourPriors",
            "anchored": self.anchored,
            "pairs": None if self.pairs is None else [list(p) for p in self.pairs],
        }
