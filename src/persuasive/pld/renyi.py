r"""The expectation variant: Rényi composition and the Rényi → PDP-tail conversion.

For the log score and the neighbour class, PP in expectation with the risk transform
:math:`\varphi_\alpha(t) = e^{(\alpha-1)t}` is :math:`(\alpha, \varepsilon)`-RDP (App. C,
Prop 12, Bon et al. 2026 [RECON]; Mironov 2017), and the plain mean is KL (Prop 11). For
releases of the same data the losses add and are independent, so

.. math:: E\big[e^{(\alpha-1)\sum_i \ell_i}\big] = \prod_i E\big[e^{(\alpha-1)\ell_i}\big]
          \quad\Longrightarrow\quad
          D_\alpha\Big(\bigotimes_i M_i(x) \,\Big\|\, \bigotimes_i M_i(x')\Big)
          = \sum_i D_\alpha(M_i(x) \| M_i(x')),

exactly, for each neighbour pair (orders add; the supremum is over pairs of the sum). Markov's
inequality on :math:`e^{(\alpha-1)\ell}` converts it into a PDP tail (RDP ⇒ PDP; Mironov 2017,
Prop 10):

.. math:: P[\ell > \varepsilon] \le \exp\big((\alpha - 1)(D_\alpha - \varepsilon)\big),
          \qquad \alpha > 1.

The converse fails: an (ε, δ)-PDP statement with δ > 0 allows :math:`\ell = +\infty` with
probability δ, so it bounds no divergence; (ε, 0)-PDP gives :math:`D_\alpha \le \varepsilon`.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from numpy.typing import ArrayLike, NDArray

from persuasive import _validation as v
from persuasive.classes import NeighbourPriors
from persuasive.closed.divergences import discrete_risk, gaussian_risk, geometric_risk, laplace_risk
from persuasive.closed.pdp import finite_matrix, finite_pairs, loss_table
from persuasive.errors import UnsupportedCombinationError, ValidationError
from persuasive.mechanisms import GaussianMechanism, GeometricMechanism, LaplaceMechanism, Mechanism
from persuasive.pld.compose import as_parts
from persuasive.pld.laws import Pair
from persuasive.pld.pmf import eps_array

_NOISE = (GaussianMechanism, LaplaceMechanism, GeometricMechanism)
#: Default Rényi orders for the RDP → PDP conversion.
ALPHAS = 1.0 + np.logspace(-3.0, 3.0, 121)


def renyi_divergence(
    mechanism: Mechanism, alpha: float, priors: NeighbourPriors | None = None
) -> dict[Pair, float]:
    r""":math:`D_\alpha(M(x) \| M(x'))` per ordered neighbour pair (α = 1: KL), closed forms of
    App. C for the noise mechanisms (one pair, ``(0, 1)``), exact sums for finite kernels.

    Examples
    --------
    >>> import persuasive as pp
    >>> renyi_divergence(pp.GaussianMechanism(2.0), 5.0)
    {(0, 1): 0.625}
    """
    a = v.real("alpha", alpha, low=1.0)
    kind = "kl" if a == 1.0 else "renyi"
    if isinstance(mechanism, GaussianMechanism):
        return {(0, 1): gaussian_risk(mechanism.sigma, kind, a)}
    if isinstance(mechanism, LaplaceMechanism):
        return {(0, 1): laplace_risk(mechanism.scale, kind, a)}
    if isinstance(mechanism, GeometricMechanism):
        return {(0, 1): geometric_risk(mechanism.scale, kind, a)}
    matrix = finite_matrix(mechanism)
    if matrix is None:
        raise UnsupportedCombinationError(
            f"no Rényi divergence for {type(mechanism).__name__}: supported are Laplace, "
            "Gaussian, geometric, randomized response and finite kernels"
        )
    pairs = finite_pairs(priors or NeighbourPriors(), matrix.shape[0])
    if isinstance(pairs, str):
        raise ValidationError(pairs)
    loss, p = loss_table(matrix, pairs)
    return {
        (int(x), int(y)): discrete_risk(loss[r : r + 1], p[r : r + 1], kind, a)
        for r, (x, y) in enumerate(pairs)
    }


def composed_renyi(
    parts: Mechanism | Sequence[tuple[Mechanism, int]],
    alpha: float,
    priors: NeighbourPriors | None = None,
) -> float:
    r"""Worst :math:`\sum_i k_i D_\alpha(M_i(x)\|M_i(x'))` over neighbour pairs (exact).

    Examples
    --------
    >>> import persuasive as pp
    >>> composed_renyi([(pp.GaussianMechanism(2.0), 4)], 5.0)
    2.5
    """
    common = 0.0
    per_pair: dict[Pair, float] = {}
    for m, k in as_parts(parts):
        div = renyi_divergence(m, alpha, priors)
        if isinstance(m, _NOISE):
            common += k * div[(0, 1)]
            continue
        for pair, d in div.items():
            per_pair[pair] = per_pair.get(pair, 0.0) + k * d
    return float(common + (max(per_pair.values()) if per_pair else 0.0))


def pdp_tail_from_renyi(
    parts: Mechanism | Sequence[tuple[Mechanism, int]],
    eps: ArrayLike,
    alphas: ArrayLike | None = None,
    priors: NeighbourPriors | None = None,
) -> NDArray[np.float64]:
    r"""Upper bound on the PDP tail from Rényi composition:
    :math:`\min_\alpha \exp((\alpha-1)(D_\alpha - \varepsilon))`, capped at 1.

    Always at least the tight PLD tail (it is a bound on it); useful as a fast check.

    Examples
    --------
    >>> import persuasive as pp
    >>> float(pdp_tail_from_renyi(pp.GaussianMechanism(1.0), 3.0)[0]) > 0.0062  # exact Φ(-2.5)
    True
    """
    e = eps_array(eps)
    a = np.atleast_1d(v.array("alphas", ALPHAS if alphas is None else alphas, ndim=(0, 1)))
    if np.any(a <= 1.0):
        raise ValidationError(f"alphas must all be > 1; got min {a.min():g}")
    d = np.array([composed_renyi(parts, float(al), priors) for al in a])
    with np.errstate(over="ignore", invalid="ignore"):
        logb = (a[:, None] - 1.0) * (d[:, None] - e[None, :])
    logb = np.where(np.isnan(logb), np.inf, logb)
    return np.minimum(1.0, np.exp(np.min(logb, axis=0)))
