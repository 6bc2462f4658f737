r"""Risk transforms of Persuasive Privacy in expectation (App. C; [RECON, docs/math.md §7]).

For a risk φ the audited quantity of one witness (x, Q) is

.. math:: \varphi^{-1}\Big(\mathbb E_{T\sim M(x,\cdot)}\big[\varphi(\Delta_L(Q, T, x))\big]\Big),

with φ = id (:class:`~persuasive.definitions.Mean`, Prop 11), :math:`\varphi_\alpha(t) =
e^{(\alpha-1)t}` reported as :math:`\frac{1}{\alpha-1}\log\mathbb E[e^{(\alpha-1)\Delta}]`
(:class:`~persuasive.definitions.Renyi`, Prop 12), or :math:`\mathbb E[g_f(\Delta)]` with
:math:`g_f(t) = f(e^t)e^{-t}` (:class:`~persuasive.definitions.FDivergence`, Prop 13).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy import stats
from scipy.special import logsumexp

from persuasive.definitions import FDivergence, Renyi


def g_f(name: str, d: NDArray[np.float64]) -> NDArray[np.float64]:
    r"""Vectorised :math:`g_f(t) = f(e^t)e^{-t}` for the f-divergences of Prop 13.

    kl: :math:`t`; tv: :math:`|1 - e^{-t}|/2`; chi2: :math:`(e^t - 1)^2 e^{-t}`.

    Examples
    --------
    >>> import numpy as np
    >>> from persuasive.audit.expectation import g_f
    >>> g_f("tv", np.array([0.0, np.log(2.0)])).tolist()
    [0.0, 0.25]
    """
    if name == "kl":
        return d
    if name == "tv":
        return np.abs(-np.expm1(-d)) / 2.0
    return np.expm1(d) ** 2 * np.exp(-d)


def exact_risk(risk: Any, deltas: ArrayLike, probs: ArrayLike) -> NDArray[np.float64]:
    """The exact risk value of each row of ``deltas`` (shape (G, J)) under output probs (J,).

    Examples
    --------
    >>> import persuasive as pp
    >>> from persuasive.audit.expectation import exact_risk
    >>> exact_risk(pp.Mean(), [[1.0, 3.0]], [0.5, 0.5]).tolist()
    [2.0]
    """
    d = np.atleast_2d(np.asarray(deltas, dtype=np.float64))
    p = np.asarray(probs, dtype=np.float64)
    if isinstance(risk, Renyi):
        a1 = risk.alpha - 1.0
        with np.errstate(divide="ignore"):
            return np.asarray(logsumexp(a1 * d + np.log(p), axis=-1) / a1)
    if isinstance(risk, FDivergence):
        return np.asarray(g_f(risk.name, d) @ p)
    return np.asarray(d @ p)


def mc_risk_lower(risk: Any, deltas: NDArray[np.float64], z: float) -> NDArray[np.float64]:
    r"""CLT lower confidence bound of the risk of each row of ``deltas`` (shape (G, N)).

    The bound is :math:`\bar g - z\, s_g/\sqrt N` on the scale of the averaged quantity
    :math:`g(\Delta)` (for Rényi, :math:`e^{(\alpha-1)\Delta}`, shifted by its maximum for
    stability), then mapped back by :math:`\varphi^{-1}`; a non-positive Rényi bound gives
    −∞. The normal approximation is asymptotic, not a finite-sample guarantee.

    Examples
    --------
    >>> import numpy as np, persuasive as pp
    >>> from persuasive.audit.expectation import mc_risk_lower
    >>> float(mc_risk_lower(pp.Mean(), np.array([[1.0, 1.0, 1.0]]), 2.0)[0])
    1.0
    """
    n = deltas.shape[-1]
    if isinstance(risk, Renyi):
        a1 = risk.alpha - 1.0
        e = a1 * deltas
        c = e.max(axis=-1, keepdims=True)
        w = np.exp(e - c)
        low = w.mean(axis=-1) - z * w.std(axis=-1, ddof=1) / math.sqrt(n)
        with np.errstate(divide="ignore", invalid="ignore"):
            out = np.where(low > 0, (c[:, 0] + np.log(np.maximum(low, 1e-300))) / a1, -np.inf)
        return np.asarray(out)
    g = g_f(risk.name, deltas) if isinstance(risk, FDivergence) else deltas
    return np.asarray(g.mean(axis=-1) - z * g.std(axis=-1, ddof=1) / math.sqrt(n))


def normal_quantile(confidence: float, tests: int) -> float:
    """One-sided normal quantile at ``confidence`` with a Bonferroni split over ``tests``.

    Examples
    --------
    >>> from persuasive.audit.expectation import normal_quantile
    >>> round(normal_quantile(0.975, 1), 4)
    1.96
    """
    return float(stats.norm.ppf(1.0 - (1.0 - confidence) / max(tests, 1)))
