r"""Tight PDP accounting of many releases of the same data (Prop 6 + privacy-loss distributions).

Under the log score and the neighbour class :math:`\mathcal H`, PP is PDP (Prop 6, Bon et al.
2026), so the exact failure probability of :math:`M_1^{\otimes k_1}\otimes\cdots` is

.. math:: \delta(\varepsilon) = \sup_{x \sim x'} P\Big[\sum_i \sum_{r \le k_i}
          \ell^{(r)}_{i,x,x'} > \varepsilon\Big],

the tail of the *sum* of independent losses, every part evaluated at the **same** neighbour
pair (the same dataset is released k times; Meiser & Mohammadi 2018). The noise mechanisms
have one law for every pair (symmetry); finite kernels contribute one law per ordered pair of
rows, and the supremum is taken over those pairs.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from persuasive import _validation as v
from persuasive._progress import task
from persuasive.classes import NeighbourPriors
from persuasive.closed.pdp import finite_matrix
from persuasive.errors import UnsupportedCombinationError, ValidationError
from persuasive.mechanisms import GaussianMechanism, Mechanism
from persuasive.mechanisms.composed import flatten
from persuasive.pld.laws import Pair, finite_pmfs, noise_pmf
from persuasive.pld.pmf import STEP, TAIL_MASS, LossPMF, convolve, delta_array

Parts = Sequence[tuple[Mechanism, int]]


def as_parts(parts: Mechanism | Parts) -> list[tuple[Mechanism, int]]:
    """A mechanism (flattened) or a list of ``(mechanism, count)``, validated."""
    if isinstance(parts, Mechanism):
        return flatten(parts)
    if not isinstance(parts, (list, tuple)) or not parts:
        raise ValidationError(
            f"parts must be a Mechanism or a non-empty list of (mechanism, k); got {parts!r}"
        )
    out: list[tuple[Mechanism, int]] = []
    for item in parts:
        if not (isinstance(item, (list, tuple)) and len(item) == 2):
            raise ValidationError(f"parts must hold (mechanism, k) pairs; got {item!r}")
        m, k = item
        k = v.integer("k", k, low=1)
        out.extend((pm, c * k) for pm, c in flatten(m))
    return out


def gaussian_sigma(parts: Sequence[tuple[Mechanism, int]]) -> float | None:
    r""":math:`\sigma_{\rm eff} = (\sum_i k_i/\sigma_i^2)^{-1/2}` when every part is Gaussian
    (then the summed loss is :math:`\mathcal N(\mu, 2\mu)`, :math:`\mu = 1/(2\sigma_{\rm eff}^2)`:
    one Gaussian release, closed form), else None."""
    if not all(isinstance(m, GaussianMechanism) for m, _ in parts):
        return None
    # fsum: the sum is correctly rounded, so sigma_eff errs by a few ulps only
    total = math.fsum(k / m.sigma**2 for m, k in parts)  # type: ignore[attr-defined]
    return float(total**-0.5)


@dataclass(frozen=True, eq=False)
class ComposedPLD:
    """Loss pmfs of a composition, one per distinct neighbour pair; δ is the max over pairs.

    Attributes
    ----------
    pmfs : dict
        ``{(x, x'): LossPMF}`` (pairs with identical laws are computed once and listed once).
    sigma : float or None
        The equivalent Gaussian σ when every part is Gaussian (closed form available).
    """

    pmfs: dict[Pair, LossPMF]
    sigma: float | None = None

    @property
    def rounds(self) -> int:
        return max(p.rounds for p in self.pmfs.values())

    @property
    def step(self) -> float:
        return next(iter(self.pmfs.values())).step

    def _max(self, name: str, arg: ArrayLike) -> NDArray[np.float64]:
        return np.max([getattr(p, name)(arg) for p in self.pmfs.values()], axis=0)

    def tail(self, eps: ArrayLike) -> NDArray[np.float64]:
        r"""Pessimistic PDP tail :math:`\sup_{x \sim x'} P[\ell > \varepsilon]` (upper bound)."""
        return self._max("tail", eps)

    def bracket(self, eps: ArrayLike) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
        """``(lower, upper)`` around the exact PDP tail (max over pairs of each side)."""
        got = [p.bracket(eps) for p in self.pmfs.values()]
        return np.max([g[0] for g in got], axis=0), np.max([g[1] for g in got], axis=0)

    def hockey_stick(self, eps: ArrayLike) -> NDArray[np.float64]:
        """Approximate-DP δ(ε) (hockey-stick divergence), an upper bound."""
        return self._max("hockey_stick", eps)

    def kappa(self, delta: ArrayLike) -> NDArray[np.float64]:
        """Smallest grid κ with tail(κ) <= δ, maximised over pairs (an upper bound)."""
        return self._max("kappa", delta)

    def kappa_bracket(self, delta: ArrayLike) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
        d = delta_array(delta)
        got = [p.kappa_bracket(d) for p in self.pmfs.values()]
        return np.max([g[0] for g in got], axis=0), np.max([g[1] for g in got], axis=0)


def split_parts(
    parts: Any,
    step: float,
    tail_mass: float,
    priors: Any,
    noise_pmf_of: Callable[[Mechanism, float], LossPMF | None],
) -> tuple[float, float, list[Any], list[tuple[LossPMF, int]], list[tuple[Any, int]]]:
    """Validate a composition's arguments and split its parts into noise pmfs (built with
    ``noise_pmf_of``) and finite-kernel matrices; shared by :func:`compose` and the
    connect-the-dots composition. Returns ``(step, tail_mass, items, noise, finite)``."""
    step = v.real("step", step, low=0.0, low_open=True)
    tail_mass = v.real("tail_mass", tail_mass, low=0.0, high=1.0, low_open=True)
    items = as_parts(parts)
    if priors is not None and not isinstance(priors, NeighbourPriors):
        raise ValidationError(f"priors must be NeighbourPriors; got {priors!r}")
    noise: list[tuple[LossPMF, int]] = []
    finite: list[tuple[Any, int]] = []
    for m, k in items:
        pmf = noise_pmf_of(m, step)
        if pmf is not None:
            noise.append((pmf, k))
            continue
        matrix = finite_matrix(m)
        if matrix is None:
            raise UnsupportedCombinationError(
                f"no privacy-loss distribution for {type(m).__name__}: supported are Laplace, "
                "Gaussian, geometric, randomized response and finite kernels"
            )
        finite.append((np.asarray(matrix, dtype=np.float64), k))
    if noise and priors is not None and priors.pairs is not None:
        raise UnsupportedCombinationError(
            "noise mechanisms use the default integer relation |x - x'| <= 1; explicit "
            "pairs are for finite kernels"
        )
    if len({mat.shape[0] for mat, _ in finite}) > 1:
        raise UnsupportedCombinationError(
            "finite kernels in one composition must act on the same datasets (same rows)"
        )
    return step, tail_mass, items, noise, finite


def compose(
    parts: Mechanism | Parts,
    step: float = STEP,
    priors: NeighbourPriors | None = None,
    tail_mass: float = TAIL_MASS,
) -> ComposedPLD:
    r"""The privacy-loss distribution of a k-fold or heterogeneous composition.

    Parameters
    ----------
    parts : Mechanism or list of (Mechanism, int)
        A ``Composition`` / ``ComposedRelease`` / single mechanism, or ``(mechanism, k)``
        pairs: each mechanism released k times on the same data.
    step : float
        Grid width Δ of the loss (κ is pessimistic by at most K Δ, K releases).
    priors : NeighbourPriors, optional
        The neighbour relation for finite kernels (default: rows ``|i - j| = 1``).
    tail_mass : float
        Mass allowed outside the FFT window (counted at :math:`+\infty`).

    Returns
    -------
    ComposedPLD

    Examples
    --------
    >>> import persuasive as pp
    >>> pld = compose([(pp.LaplaceMechanism(10.0), 10)], step=1e-3)
    >>> lo, hi = pld.bracket(0.5)
    >>> bool(lo[0] <= hi[0] < lo[0] + 0.05)
    True
    """
    step, tail_mass, items, noise, finite = split_parts(parts, step, tail_mass, priors, noise_pmf)
    per_pair: dict[Pair, list[tuple[LossPMF, int]]] = {}
    if not finite:
        per_pair[(0, 1)] = []
    for mat, k in finite:
        for pair, pmf in finite_pmfs(mat, priors, step).items():
            per_pair.setdefault(pair, []).append((pmf, k))
    out: dict[Pair, LossPMF] = {}
    seen: dict[bytes, Pair] = {}
    with task("composition: neighbour pairs", total=len(per_pair)) as advance:
        for pair, fin in per_pair.items():
            key = b"".join(
                np.int64(p.offset).tobytes() + p.masses.tobytes() + np.float64(p.inf_mass).tobytes()
                for p, _ in fin
            )
            if key not in seen:
                seen[key] = pair
                out[pair] = convolve(noise + fin, tail_mass)
            advance()
    return ComposedPLD(out, gaussian_sigma(items))
