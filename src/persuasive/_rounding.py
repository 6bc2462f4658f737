r"""Directed rounding for certificates: a returned κ (or δ) is never below its exact value.

A certificate is an *upper* bound, so every floating-point rounding in it must err upwards
(docs/architecture.md, rule 6): ``certify`` compares the proven κ with the definition's κ with
no slack (``holds`` iff :math:`\hat\kappa \le \kappa`), and a κ computed a few ulps below the
exact value would let a definition that a member of the class violates *hold*.

The helpers move a computed value above the exact one:

* :func:`div_up` and :func:`add_up` are exact (they compare with rational arithmetic and step
  one ulp up only when the rounded result is below the exact one);
* :func:`log_up` steps over the error of ``math.log`` (below one ulp for the C library);
* :func:`above` adds an absolute error bound :math:`c\,\epsilon_{\rm mach}\,m` for an
  expression whose terms have magnitude m (closed forms with transcendental functions), then
  one ulp.

Exact values (0, ∞, a κ that is a parameter of the mechanism) pass through unchanged.

Which values are rounded up: every value this library computes by a chain of floating-point
operations — closed forms with transcendental functions (Gaussian and Laplace tails and their
inverses, App. C divergences), sums of probabilities (finite kernels), privacy losses of finite
kernels, grid values of privacy-loss distributions, 1/b of Laplace and geometric noise.

The *sharp* closed forms :math:`-\log\alpha` (Prop 8) and :math:`r_1 + \log r_2` (Prop 7) are
evaluated exactly (in decimal arithmetic) and rounded up to the next float only when the nearest
float lies below the exact value (:func:`ceil_log_sum`): a definition stated at that nearest
float then refuses, as it must — the exact κ exceeds it.
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
from numpy.typing import ArrayLike, NDArray

from persuasive import _tolerances as tol

#: Machine epsilon of float64.
EPS: float = float(np.finfo(np.float64).eps)

#: Ulps of error allowed for one libm call (``persuasive._tolerances.LIBM_ULPS``).
LIBM_ULPS: int = tol.LIBM_ULPS

#: Factor c of the absolute error bound c·eps·(magnitude of the terms) used by :func:`above`
#: (``persuasive._tolerances.CLOSED_FORM_C``).
CLOSED_FORM_C: float = tol.CLOSED_FORM_C


def up(x: float, ulps: int = 1) -> float:
    """``x`` moved ``ulps`` representable numbers towards +∞ (±∞ and NaN unchanged).

    Examples
    --------
    >>> from persuasive._rounding import up
    >>> up(1.0) > 1.0, up(float("inf"))
    (True, inf)
    """
    x = float(x)
    if not math.isfinite(x):
        return x
    for _ in range(ulps):
        x = math.nextafter(x, math.inf)
    return x


def div_up(a: float, b: float) -> float:
    r"""The smallest float :math:`\ge a/b` (exact, rational check; b > 0 finite).

    Examples
    --------
    >>> from persuasive._rounding import div_up
    >>> from fractions import Fraction
    >>> Fraction(div_up(1.0, 3.0)) >= Fraction(1, 3), div_up(1.0, 4.0)
    (True, 0.25)
    """
    q = float(a) / float(b)
    if math.isfinite(q) and Fraction(q) < Fraction(a) / Fraction(b):
        q = math.nextafter(q, math.inf)
    return q


def add_up(a: float, b: float) -> float:
    r"""The smallest float :math:`\ge a + b` (exact, rational check; finite a, b).

    Examples
    --------
    >>> from persuasive._rounding import add_up
    >>> from fractions import Fraction
    >>> Fraction(add_up(0.1, 0.2)) >= Fraction(0.1) + Fraction(0.2)
    True
    """
    s = float(a) + float(b)
    if math.isfinite(s) and Fraction(s) < Fraction(a) + Fraction(b):
        s = math.nextafter(s, math.inf)
    return s


def log_up(x: float) -> float:
    r"""A float :math:`\ge \log x` (``math.log`` plus its error; exact 0 at x = 1).

    Examples
    --------
    >>> import math
    >>> from persuasive._rounding import log_up
    >>> log_up(1.0), log_up(4.0) > math.log(4.0)
    (0.0, True)
    """
    if x == 1.0:
        return 0.0
    return up(math.log(x), LIBM_ULPS)


#: Decimal digits of the exact evaluation of the sharp closed forms (:func:`ceil_log_sum`).
_DIGITS = 60


def ceil_log_sum(a: float, x: float, sign: int = 1) -> float:
    r"""The smallest float :math:`\ge a + \text{sign}\cdot\log x`, evaluated in decimal
    arithmetic to 60 significant digits (``decimal``'s ``ln`` is correctly rounded), so the
    result is the exact value rounded *up*: a sharp κ such as :math:`r_1 + \log r_2` (Prop 7)
    or :math:`-\log\alpha` (Prop 8) is never below its exact value, and no float above it is
    returned either. ±∞ and exact zeros pass through.

    Examples
    --------
    >>> from persuasive._rounding import ceil_log_sum
    >>> k = ceil_log_sum(1.0, 4.0)            # 1 + log 4
    >>> from decimal import Decimal, getcontext
    >>> getcontext().prec = 60
    >>> Decimal(k) >= 1 + Decimal(4).ln() > Decimal(math.nextafter(k, 0.0))
    True
    >>> ceil_log_sum(0.0, 1.0, -1)
    0.0
    """
    from decimal import Context, Decimal

    if not (math.isfinite(a) and math.isfinite(x)) or x <= 0.0:
        return a + sign * math.log(x) if x > 0 else (math.inf if sign < 0 else -math.inf)
    ctx = Context(prec=_DIGITS)
    exact = ctx.add(Decimal(a), ctx.multiply(Decimal(sign), ctx.ln(Decimal(x))))
    f = float(exact)
    if Decimal(f) < exact:
        f = math.nextafter(f, math.inf)
    return f + 0.0  # no negative zero


def above(value: float, magnitude: float) -> float:
    r"""``value`` plus an absolute error bound :math:`c\,\epsilon\,m` (m = ``magnitude``, the
    size of the largest terms of the closed form that computed it), rounded up one ulp.

    Examples
    --------
    >>> from persuasive._rounding import above
    >>> 1.0 < above(1.0, 1.0) < 1.0 + 1e-13
    True
    """
    if not math.isfinite(value):
        return float(value)
    return up(float(value) + CLOSED_FORM_C * EPS * abs(float(magnitude)))


def loss_up(log_p: ArrayLike, log_p_prime: ArrayLike, loss: ArrayLike) -> NDArray[np.float64]:
    r"""Upper bounds on :math:`\log p - \log p'` from its floating-point value ``loss``.

    Each ``np.log`` errs by at most ``LIBM_ULPS`` ulps and the subtraction by half an ulp, so
    :math:`\ell + 2\,\mathrm{LIBM\_ULPS}\,\epsilon(|\log p| + |\log p'|)`, one ulp up, bounds the
    exact loss. Where the two probabilities are the same float (:math:`\log p = \log p'`) the
    loss is exactly 0 and is kept; infinite entries are kept.
    """
    lp = np.asarray(log_p, dtype=np.float64)
    lq = np.asarray(log_p_prime, dtype=np.float64)
    ell = np.asarray(loss, dtype=np.float64)
    with np.errstate(invalid="ignore"):
        err = 2.0 * LIBM_ULPS * EPS * (np.abs(lp) + np.abs(lq))
        bumped = np.nextafter(ell + err, np.inf)
    exact = (lp == lq) | ~np.isfinite(ell) | ~np.isfinite(err)
    return np.asarray(np.where(exact, ell, bumped), dtype=np.float64)


def sum_up(terms: list[tuple[int, float]]) -> float:
    r"""The smallest float :math:`\ge \sum_i k_i v_i` for integer counts k_i and finite floats
    v_i (exact rational sum; ``inf`` if some :math:`v_i = +\infty` with :math:`k_i > 0`).

    Examples
    --------
    >>> from persuasive._rounding import sum_up
    >>> from fractions import Fraction
    >>> s = sum_up([(3, 0.1), (1, 0.2)])
    >>> Fraction(s) >= 3 * Fraction(0.1) + Fraction(0.2)
    True
    """
    if any(k > 0 and v == math.inf for k, v in terms):
        return math.inf
    exact = sum((k * Fraction(v) for k, v in terms if k > 0), Fraction(0))
    s = float(exact)
    if Fraction(s) < exact:
        s = math.nextafter(s, math.inf)
    return s
