r"""Discretised privacy-loss distributions and their composition by FFT.

A :class:`LossPMF` is the law of the privacy loss :math:`\ell = \log m(x,T)/m(x',T)`,
:math:`T \sim M(x)`, for one ordered neighbour pair, on the grid :math:`\Delta\mathbb Z`:

.. math:: \tilde\ell = \Delta\,\lceil \ell / \Delta \rceil \ \ge\ \ell
          \qquad (\text{pessimistic rounding}),

plus an atom at :math:`+\infty` (outputs that x' cannot produce, and every mass dropped by
truncation). Because :math:`\tilde\ell \ge \ell`, the PDP tail (Prop 6, Bon et al. 2026)
:math:`\delta(\varepsilon) = P[\ell > \varepsilon]` and the hockey-stick divergence
:math:`E[(1 - e^{\varepsilon - \ell})_+]` can only grow. Independent releases of the same x add
their losses (Meiser & Mohammadi 2018), so composition is convolution, done on a window chosen
by a Chernoff bound with one real FFT (Koskela et al. 2020). Rounding moves each of the K
summed losses by less than Δ, so with :math:`\tau` the mass outside the window,

.. math:: \tilde\delta(\varepsilon + K\Delta) - \tau \ \le\ \delta(\varepsilon)
          \ \le\ \tilde\delta(\varepsilon),

a two-sided bracket (:meth:`LossPMF.bracket`) whose width is the reported discretisation error.
Floating-point FFT noise (about 1e-16 per bin, negative values clipped to 0) is not included.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import cached_property

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy import fft as sfft
from scipy.special import logsumexp

from persuasive import _tolerances as tol
from persuasive import _validation as v
from persuasive._progress import task
from persuasive.errors import ValidationError

#: Relative float error absorbed when a value is put on the grid: a loss whose quotient ℓ/Δ lies
#: within ``SNAP * max(1, |ℓ/Δ|)`` above an integer j is put on jΔ (the rounding error of the
#: division, e.g. the Laplace atom 1/b on a grid of width 1e-4), and an ε that close below jΔ
#: counts as jΔ. 16 ulps: larger than the division's error, so only rounding is absorbed (a
#: fixed 1e-9 grid units would move a genuine loss down, in the Sender's favour); the
#: certificate adds the corresponding few ulps back (:mod:`persuasive.certify.tight`).
SNAP: float = tol.PLD_SNAP
#: Default total mass allowed outside the composition window (moved to the +inf atom).
TAIL_MASS: float = 1e-15
#: Default grid width Δ of the loss (same default as dp_accounting).
STEP: float = 1e-4
#: Number of blocks the Chernoff bound is evaluated on (blocks use their extreme value).
_CHERNOFF_BLOCKS = 1024


def _snap(units: NDArray[np.float64]) -> NDArray[np.float64]:
    """The rounding allowance of :data:`SNAP` for quotients ``units`` = ℓ/Δ."""
    return SNAP * np.maximum(1.0, np.abs(units))


def grid_index(values: ArrayLike, step: float) -> NDArray[np.int64]:
    r"""Index j of :math:`\lceil \ell/\Delta \rceil` (pessimistic; see :data:`SNAP`)."""
    u = np.asarray(values, dtype=np.float64) / step
    return np.ceil(u - _snap(u)).astype(np.int64)


def eps_array(eps: ArrayLike) -> NDArray[np.float64]:
    """Validate an ε grid (finite reals; NaN or inf raise ValidationError naming ``eps``)."""
    return np.atleast_1d(v.array("eps", eps, ndim=(0, 1)))


def delta_array(delta: ArrayLike) -> NDArray[np.float64]:
    a = np.atleast_1d(v.array("delta", delta, ndim=(0, 1)))
    if np.any((a < 0) | (a > 1)):
        raise ValidationError(f"delta must lie in [0, 1]; got {a.tolist()!r}")
    return a


@dataclass(frozen=True, eq=False)
class LossPMF:
    r"""A pessimistic privacy-loss pmf on the grid :math:`\Delta(\text{offset} + i)`.

    Attributes
    ----------
    step : float
        Grid width Δ.
    offset : int
        Grid index of ``masses[0]``.
    masses : ndarray
        Probabilities of the finite grid values (sum = 1 - ``inf_mass`` up to truncation).
    inf_mass : float
        Probability of the loss :math:`+\infty` (m(x', T) = 0).
    truncated : float
        Upper bound on the mass outside the window, counted at :math:`+\infty`.
    rounds : int
        Number K of rounded losses summed (1 for a single mechanism).

    Examples
    --------
    >>> p = LossPMF(0.5, -1, np.array([0.25, 0.25, 0.5]))
    >>> p.tail([-1.0, 0.0, 0.5]).tolist()
    [1.0, 0.5, 0.0]
    """

    step: float
    offset: int
    masses: NDArray[np.float64] = field(repr=False)
    inf_mass: float = 0.0
    truncated: float = 0.0
    rounds: int = 1

    @property
    def values(self) -> NDArray[np.float64]:
        """The grid values :math:`\\Delta(\\text{offset} + i)`."""
        return self.step * (self.offset + np.arange(self.masses.size, dtype=np.float64))

    @cached_property
    def _tails(self) -> NDArray[np.float64]:
        """``T[i]`` = mass of the grid values with index >= i (T[n] = 0), summed from the right."""
        return np.concatenate([np.cumsum(self.masses[::-1])[::-1], [0.0]])

    def _above(self, eps: NDArray[np.float64]) -> NDArray[np.intp]:
        """Position in ``masses`` of the first grid value strictly above ε."""
        u = eps / self.step
        j = np.floor(u + _snap(u)).astype(np.int64) + 1 - self.offset
        return np.clip(j, 0, self.masses.size).astype(np.intp)

    def tail(self, eps: ArrayLike) -> NDArray[np.float64]:
        r"""Pessimistic PDP tail :math:`\tilde\delta(\varepsilon) \ge P[\ell > \varepsilon]`."""
        e = eps_array(eps)
        return np.minimum(1.0, self._tails[self._above(e)] + self.inf_mass + self.truncated)

    def bracket(self, eps: ArrayLike) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
        r"""``(lower, upper)`` with lower :math:`\le P[\ell > \varepsilon] \le` upper."""
        e = eps_array(eps)
        shifted = self._tails[self._above(e + self.rounds * self.step)]
        low = np.clip(shifted + self.inf_mass - self.truncated, 0.0, 1.0)
        return low, self.tail(e)

    def hockey_stick(self, eps: ArrayLike) -> NDArray[np.float64]:
        r"""Approximate-DP δ: :math:`E[(1 - e^{\varepsilon - \ell})_+]` (an upper bound).

        One pass: the grid is cut at the sorted ε values and each segment's
        :math:`\sum p_j e^{\varepsilon_s - v_j}` (exponents <= 0, no overflow) is accumulated
        from the right with the factors :math:`e^{\varepsilon_i - \varepsilon_s} \le 1`.
        """
        e = eps_array(eps)
        order = np.argsort(e)
        es = e[order]
        cuts = self._above(es)
        hi = self.masses.size
        seg = np.zeros(es.size)
        for s in range(es.size):  # one slice per ε: O(n) in total
            end = cuts[s + 1] if s + 1 < es.size else hi
            if end > cuts[s]:
                vals = self.step * (self.offset + np.arange(cuts[s], end, dtype=np.float64))
                seg[s] = np.dot(self.masses[cuts[s] : end], np.exp(es[s] - vals))
        acc = np.zeros(es.size)
        run = 0.0
        for s in range(es.size - 1, -1, -1):
            if s + 1 < es.size:
                run *= math.exp(es[s] - es[s + 1])
            run += seg[s]
            acc[s] = run
        val = np.empty_like(e)
        val[order] = self._tails[cuts] - acc
        return np.clip(val, 0.0, None) + self.inf_mass + self.truncated

    def _kappa_index(self, target: NDArray[np.float64]) -> NDArray[np.float64]:
        r"""Smallest grid ε >= 0 with (mass above ε) <= target (``inf`` if target < 0)."""
        r = np.searchsorted(-self._tails, -target, side="left")
        k = np.maximum(0, r - 1 + self.offset) * self.step
        return np.where(target < 0, np.inf, k)

    def kappa(self, delta: ArrayLike) -> NDArray[np.float64]:
        r""":math:`\inf\{\varepsilon \ge 0: \tilde\delta(\varepsilon) \le \delta\}` (a bound)."""
        d = delta_array(delta)
        return self._kappa_index(d - self.inf_mass - self.truncated)

    def kappa_bracket(self, delta: ArrayLike) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
        """``(lower, upper)`` bounds on the exact κ(δ) of the loss before rounding."""
        d = delta_array(delta)
        low = self._kappa_index(d - self.inf_mass + self.truncated) - self.rounds * self.step
        return np.maximum(low, 0.0), self.kappa(d)

    def mean(self) -> float:
        """E[ℓ̃] >= E[ℓ] (the KL divergence, App. C); ``inf`` with an infinite atom."""
        if self.inf_mass + self.truncated > 0:
            return math.inf
        return float(np.dot(self.masses, self.values))


def _chernoff_window(
    parts: Sequence[tuple[LossPMF, int]], span: int, tail_mass: float
) -> tuple[int, int, float]:
    """Window [lo, hi] (relative to the sum of offsets) outside which the finite mass of the
    sum is at most ``tail_mass`` (Chernoff bound on blocks), and the bound actually used."""
    half = math.log(tail_mass / 2.0)
    var = 0.0
    blocks = []
    for pmf, c in parts:
        p = pmf.masses
        n = p.size
        tot = float(p.sum())
        if tot > 0:
            u = np.arange(n, dtype=np.float64)
            mu = float(np.dot(p, u)) / tot
            var += c * float(np.dot(p, (u - mu) ** 2)) / tot
        b = max(1, -(-n // _CHERNOFF_BLOCKS))
        m = np.add.reduceat(p, np.arange(0, n, b))
        start = np.arange(0, n, b, dtype=np.float64)
        with np.errstate(divide="ignore"):
            blocks.append((np.log(m), start, np.minimum(start + b - 1, n - 1), c))
    if var <= 0:
        return 0, span - 1, 0.0
    t = math.sqrt(-2.0 * half / var) * np.logspace(-2.0, 1.5, 64)[:, None]
    up = sum(c * logsumexp(lm + t * hi_u, axis=1) for lm, _, hi_u, c in blocks)
    down = sum(c * logsumexp(lm - t * lo_u, axis=1) for lm, lo_u, _, c in blocks)
    hi = int(np.ceil(np.min((up - half) / t[:, 0])))
    lo = int(np.floor(np.max(-(down - half) / t[:, 0])))
    lo, hi = max(lo, 0), min(hi, span - 1)
    if lo == 0 and hi == span - 1:
        return 0, span - 1, 0.0
    return lo, max(hi, lo), tail_mass


def _fold(p: NDArray[np.float64], n: int) -> NDArray[np.float64]:
    """``p`` wrapped modulo n (circular placement)."""
    if p.size <= n:
        return p
    pad = np.zeros(-(-p.size // n) * n)
    pad[: p.size] = p
    return np.asarray(pad.reshape(-1, n).sum(axis=0))


def _power(f: NDArray[np.complex128], c: int) -> NDArray[np.complex128]:
    """``f ** c`` by repeated squaring; overwrites ``f`` (no complex log/exp, no overflow)."""
    out = None
    while True:
        if c & 1:
            out = f.copy() if out is None else np.multiply(out, f, out=out)
        c >>= 1
        if not c:
            break
        np.multiply(f, f, out=f)
    assert out is not None
    return out


def convolve(parts: Sequence[tuple[LossPMF, int]], tail_mass: float = TAIL_MASS) -> LossPMF:
    r"""The loss pmf of the sum of independent losses, ``count`` copies of each part.

    .. math:: \ell = \sum_i \sum_{r=1}^{k_i} \ell_i^{(r)}, \qquad
              P[\ell = +\infty] = 1 - \prod_i (1 - P[\ell_i = +\infty])^{k_i}.

    One real FFT per distinct part raised to its count (Koskela et al. 2020) on a window
    outside which a Chernoff bound leaves at most ``tail_mass``; that mass is counted at
    :math:`+\infty` (towards less privacy).

    Examples
    --------
    >>> rr = LossPMF(1.0, -1, np.array([0.25, 0.0, 0.75]))
    >>> out = convolve([(rr, 2)])
    >>> out.offset, out.masses.round(4).tolist()
    (-2, [0.0625, 0.0, 0.375, 0.0, 0.5625])
    """
    if not parts:
        raise ValidationError("parts must contain at least one (LossPMF, count)")
    step = parts[0][0].step
    if any(p.step != step for p, _ in parts):
        raise ValidationError("every part must use the same grid step")
    for _, c in parts:
        v.integer("k", c, low=1)
    base = sum(c * p.offset for p, c in parts)
    span = sum(c * (p.masses.size - 1) for p, c in parts) + 1
    lo, hi, tau = _chernoff_window(parts, span, tail_mass)
    n = sfft.next_fast_len(hi - lo + 1, real=True)
    spec = None
    with task("composition: privacy-loss distribution", total=len(parts)) as advance:
        for p, c in parts:
            f = _power(sfft.rfft(_fold(p.masses, n), n, workers=-1), c)
            spec = f if spec is None else np.multiply(spec, f, out=spec)
            advance()
    res = sfft.irfft(spec, n, workers=-1, overwrite_x=True)
    del spec
    width = hi - lo + 1
    start = lo % n
    if start + width <= n:
        masses = res[start : start + width]
    else:
        masses = np.concatenate([res[start:], res[: start + width - n]])
    np.maximum(masses, 0.0, out=masses)
    with np.errstate(divide="ignore"):
        log_keep = sum(c * float(np.log1p(-min(p.inf_mass, 1.0))) for p, c in parts)
    return LossPMF(
        step=step,
        offset=int(base + lo),
        masses=masses,
        inf_mass=float(-math.expm1(log_keep)),
        truncated=float(sum(c * p.truncated for p, c in parts) + tau),
        rounds=int(sum(c * p.rounds for p, c in parts)),
    )
