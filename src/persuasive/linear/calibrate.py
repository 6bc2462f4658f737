r"""Repairing a linear release: calibrated Gaussian noise, or statistics withheld (extension).

:func:`calibrate_noise` finds the smallest noise scale s with :math:`\max_i\kappa_i \le`
``target``, for R = s²I (isotropic) or R = s² diag(c_j²) with :math:`c_j` the prior sd of
statistic j (``per_statistic=True``: every statistic gets the same signal-to-noise ratio).
κ is the fixed-prior bound :meth:`LinearAnalysis.kappa` or the class certificate
:meth:`LinearGaussianClass.class_kappa`. The fixed-prior κ(s) need not be monotone (the
quantile term is not monotone in γ, ``docs/release_means.md``), so s is found by a
geometric scan for the first grid point meeting the target, then bisection inside that
bracket; the achieved κ is re-evaluated at the returned s. As s → ∞, κ tends to the
:math:`\chi^2_1` (1 − δ) quantile, so smaller targets are unreachable (ValidationError).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from persuasive import _domains as dm
from persuasive import _tolerances as tol
from persuasive.errors import ValidationError
from persuasive.linear.analysis import RANK_RTOL, Prepared, analyse, check_A
from persuasive.linear.classes import LinearGaussianClass
from persuasive.linear.structured import (
    ColumnPatterns,
    StructuredCovariance,
    as_cov,
    column_patterns,
)
from persuasive.mechanisms.linear import LinearGaussian, noise_covariance

#: Scan grid: s from SCAN_LO to SCAN_HI times the reference scale, geometric, SCAN_POINTS.
SCAN_LO, SCAN_HI, SCAN_POINTS = 1e-4, 1e4, 161
#: Bisection steps inside the bracket (relative width 2^-BISECT of a grid cell).
BISECT: int = 50
#: Bisection steps decided by one batch of evaluations (2^TREE_DEPTH - 1 midpoints).
TREE_DEPTH: int = 4


@dataclass(frozen=True)
class NoiseCalibration:
    """Result of :func:`calibrate_noise`: ``sd`` (the scale s), ``sds`` (per statistic),
    ``R``, ``kappa`` (max over individuals at s) and the ``mechanism``."""

    sd: float
    sds: NDArray[np.float64]
    R: NDArray[np.float64]
    kappa: float
    mechanism: LinearGaussian


@dataclass(frozen=True)
class Withholding:
    """Result of :func:`greedy_withhold`: ``kept`` / ``dropped`` row indices (drop order),
    ``kappa`` per individual after, ``path`` (max κ before each drop, after it, and after
    each statistic added back)."""

    kept: list[int]
    dropped: list[int]
    kappa: NDArray[np.float64]
    path: list[float]
    mechanism: LinearGaussian | None


class ClassCurve:
    r"""``cls.noise_kappa(R, k, delta)`` for many R, equal to it bit for bit (tested).

    :func:`persuasive.certify.noisy_mean.gaussian_noise_kappa` bounds κ on the cells of a
    fixed partition of :math:`[0, \gamma_{\max}]`; all cells but the last do not depend on R,
    so they are bounded once (one vectorised :func:`tail_threshold`) and a call costs one cell.
    """

    def __init__(self, cls: LinearGaussianClass, delta: float) -> None:
        from persuasive.certify.noisy_mean import GAMMA_CELLS, tail_threshold

        self.cls, self.delta = cls, dm.DELTA.check("delta", delta)
        grid = np.unique(
            np.concatenate([np.linspace(0.0, 1.0, GAMMA_CELLS + 1), np.geomspace(1e-9, 1.0, 600)])
        )
        self.c, self.a, self.grid = 1.0 - 1.0 / cls.r2, math.sqrt(cls.r1), grid
        self.full = np.full(grid.size, -np.inf)  # full[j]: max over the cells below grid[j]
        if self.delta > 0.0:
            cells = -np.log1p(-self.c * grid[1:]) + (
                tail_threshold(np.array(self.a), grid[:-1], grid[1:], self.delta) ** 2
            )
            self.full[2:] = np.maximum.accumulate(cells)[:-1]

    def _gmax(self, R: Any, k: int) -> float | None:
        from persuasive.certify.noisy_mean import gamma_max

        r = noise_covariance(R, k)
        if not np.any(r):
            return None
        lam_min = max(float(np.linalg.eigvalsh(r)[0]), 0.0)
        return gamma_max(math.sqrt(lam_min), self.cls.max_stat_sd)

    def many(self, Rs: list[Any], k: int) -> NDArray[np.float64]:
        """κ for each noise covariance of ``Rs`` (as ``noise_kappa`` takes it) on k statistics."""
        from persuasive._rounding import above
        from persuasive.certify.noisy_mean import tail_threshold

        g = [self._gmax(r, k) for r in Rs]
        out = np.array([self.cls.kappa if u is None else np.inf for u in g])
        noisy = [j for j, u in enumerate(g) if u is not None]
        if self.delta <= 0.0 or not noisy:
            return out
        gm = np.array([g[j] for j in noisy], dtype=float)
        cnt = np.searchsorted(self.grid, gm, side="left")  # points strictly below γ_max
        if np.any(cnt < 1):  # γ_max = 0: no cell (kept to the reference's own error)
            for j in noisy:
                out[j] = self.cls.noise_kappa(Rs[j], k, self.delta)
            return out
        lo = self.grid[cnt - 1]
        last = -np.log1p(-self.c * gm) + tail_threshold(np.array(self.a), lo, gm, self.delta) ** 2
        best = np.maximum(self.full[cnt], last)
        out[noisy] = [above(float(b), abs(float(b))) for b in best]
        return out

    def __call__(self, R: Any, k: int) -> float:
        return float(self.many([R], k)[0])


def calibrate_noise(
    A: ArrayLike,
    target: float,
    *,
    mean: ArrayLike | None = None,
    cov: Any = None,
    r1: float | None = None,
    cls: LinearGaussianClass | None = None,
    delta: float = 0.05,
    per_statistic: bool = False,
    patterns: ColumnPatterns | None = None,
) -> NoiseCalibration:
    """Smallest noise scale bringing every individual to κ ≤ ``target``.

    Give either a fixed prior (``mean``, ``cov``, ``r1``) or a class ``cls``. ``patterns``:
    A's column patterns, when known (:mod:`persuasive.linear.structured`): the class route
    then checks who A exposes from them instead of from A.

    Examples
    --------
    >>> import numpy as np
    >>> from persuasive.linear import calibrate_noise
    >>> A = [[1/3, 1/3, 1/3], [0.5, 0.5, 0.0]]  # exposes person 3 when exact
    >>> c = calibrate_noise(A, 5.0, mean=np.zeros(3), cov=np.eye(3), r1=1.0, delta=0.05)
    >>> bool(c.kappa <= 5.0 and c.sd > 0)
    True
    """
    a = check_A(A)
    k = a.shape[0]
    target = dm.TARGET_KAPPA.check("target", target)
    delta = dm.DELTA.check("delta", delta)
    if cls is not None:
        scale = cls.max_stat_sd or 1.0
        c = np.sqrt(np.einsum("ij,ij->i", a, a)) if per_statistic else np.ones(k)
        c = c / c.max()
        if patterns is None or cls.A is not None:
            cls.class_kappa(a)  # checks A (bound A, nobody exposed) once: κ(s) needs nothing else
        else:
            _nobody_exposed(patterns, a.shape)
        curve = ClassCurve(cls, delta)

        def f(s: float) -> float:
            return curve(s**2 * np.diag(c**2), k)

        def f_many(ss: NDArray[np.float64]) -> NDArray[np.float64]:
            return curve.many([float(u) ** 2 * np.diag(c**2) for u in ss], k)

        return _search(f, a, c, scale, target, f_many)
    else:
        if mean is None or cov is None or r1 is None:
            raise ValidationError("calibrate_noise needs cls=..., or mean=, cov= and r1=")
        ops = as_cov(cov, a.shape[1])
        stat_var = np.einsum("ij,ij->i", a, ops.times_A(a))
        scale = float(np.sqrt(stat_var.max()))
        c = np.sqrt(stat_var) / scale if per_statistic else np.ones(k)
        mu = np.asarray(mean, dtype=float)
        r1v = dm.R1.check("r1", r1)
        prep = Prepared(mu, ops, a)  # A's SVD, AΣ and AΣAᵀ once for every noise scale

        def f(s: float) -> float:
            an = prep(s**2 * np.diag(c**2) if s > 0 else None)
            return float(an.kappa(r1v, delta).max())

    return _search(f, a, c, scale, target)


def _nobody_exposed(patterns: ColumnPatterns, shape: tuple[int, ...]) -> None:
    """:meth:`LinearGaussianClass.class_kappa`'s check of A, from A's column patterns."""
    if patterns.shape != shape:
        raise ValidationError(f"patterns are of a {patterns.shape} matrix; A is {shape}")
    bad = np.flatnonzero(LinearGaussian.from_patterns(patterns).exposed())
    if bad.size:
        raise ValidationError(
            f"A exposes individual(s) {bad.tolist()} (e_i in A's row space): the class is "
            "empty and no guarantee is certified; withhold or add noise (fixed-prior analysis)"
        )


def _mid(lo: float, hi: float) -> float:
    return 0.5 * (lo + hi) if lo > 0 else hi / 2.0


def _halve(lo: float, hi: float, ok: bool) -> tuple[float, float]:
    mid = _mid(lo, hi)
    return (lo, mid) if ok else (mid, hi)


def _tree_bisect(
    f_many: Callable[[NDArray[np.float64]], NDArray[np.float64]],
    lo: float,
    hi: float,
    target: float,
) -> tuple[float, float]:
    """``BISECT`` bisection steps on ``f <= target``, ``TREE_DEPTH`` at a time: the midpoints
    every path of that many steps could visit (the same floating-point midpoints) are
    evaluated in one ``f_many`` call, then the path is followed. The same bracket as the
    sequential bisection whenever ``f_many`` gives ``f``'s values (pure f; tested)."""
    steps = 0
    while steps < BISECT:
        depth = min(TREE_DEPTH, BISECT - steps)
        level = [(lo, hi)]
        mids: list[float] = []
        for _ in range(depth):  # breadth first: node j's children are 2j + 1, 2j + 2
            mids += [_mid(a, b) for a, b in level]
            level = [half for a, b in level for half in ((a, _mid(a, b)), (_mid(a, b), b))]
        ok = f_many(np.array(mids)) <= target
        node = 0
        for _ in range(depth):
            lo, hi = _halve(lo, hi, bool(ok[node]))
            node = 2 * node + (1 if ok[node] else 2)
        steps += depth
    return lo, hi


def _search(
    f: Callable[[float], float],
    a: NDArray[np.float64],
    c: NDArray[np.float64],
    scale: float,
    target: float,
    f_many: Callable[[NDArray[np.float64]], NDArray[np.float64]] | None = None,
) -> NoiseCalibration:
    def done(s: float, val: float) -> NoiseCalibration:
        r = noise_covariance(s**2 * c**2, a.shape[0])
        return NoiseCalibration(
            float(s), s * c, r, float(val), LinearGaussian(a, r if s > 0 else None)
        )

    k0 = f(0.0)
    if k0 <= target:
        return done(0.0, k0)
    grid = scale * np.geomspace(SCAN_LO, SCAN_HI, SCAN_POINTS)
    vals = None if f_many is None else f_many(grid)  # f is pure: the same values at once
    prev = 0.0
    for j, s in enumerate(grid):
        val = f(float(s)) if vals is None else float(vals[j])
        if np.isfinite(val) and val <= target:
            lo, hi = prev, float(s)
            if f_many is None:
                for _ in range(BISECT):
                    lo, hi = _halve(lo, hi, f(_mid(lo, hi)) <= target)
            else:
                lo, hi = _tree_bisect(f_many, lo, hi, target)
            return done(hi, f(hi))
        prev = float(s)
    last = f(float(grid[-1])) if vals is None else float(vals[-1])
    raise ValidationError(
        f"target = {target} is unreachable by noise up to sd {grid[-1]:.3g} (kappa there "
        f"{last:.4g}); with delta > 0 kappa cannot go below the chi2(1) quantile "
        "q_{1-delta}; raise target or delta, or withhold statistics"
    )


def greedy_withhold(
    A: ArrayLike,
    target: float,
    *,
    mean: ArrayLike,
    cov: Any,
    r1: float,
    R: ArrayLike | None = None,
    delta: float = 0.0,
) -> Withholding:
    """Drop, one at a time, the statistic whose removal lowers max_i κ_i most, until ≤ target;
    then add back every withheld statistic that keeps max_i κ_i ≤ target.

    Ties (e.g. every trial leaving someone exposed, κ = ∞) go to the drop leaving the fewest
    individuals above the target, then to the lowest index. Guarantee: the kept statistics
    meet the target (or none is kept), and adding any one withheld statistic back would break
    it. For an exact release (R = 0) each κ_i only falls when a statistic is removed, so the
    kept set is then inclusion-maximal: no superset meets the target. It need not be the
    largest such set (finding that is a search over subsets).

    Examples
    --------
    >>> import numpy as np
    >>> from persuasive.linear import greedy_withhold
    >>> A = [[1/3, 1/3, 1/3], [0.5, 0.5, 0.0]]
    >>> w = greedy_withhold(A, 3.0, mean=np.zeros(3), cov=np.eye(3), r1=1.0)
    >>> len(w.kept), len(w.dropped), bool(w.kappa.max() <= 3.0)
    (1, 1, True)
    """
    a = check_A(A)
    ops = as_cov(cov, a.shape[1])
    r = noise_covariance(R, a.shape[0])
    target = dm.TARGET_KAPPA.check("target", target)
    r1 = dm.R1.check("r1", r1)
    delta = dm.DELTA.check("delta", delta)
    mu = np.asarray(mean, dtype=float)

    pat = _equal_variance_patterns(a, ops, r)

    def kap(rows: list[int]) -> NDArray[np.float64]:
        if not rows:
            return np.zeros(a.shape[1])
        if pat is not None:
            return _pattern_kappa(pat, rows, r1)[pat.index]
        sub = r[np.ix_(rows, rows)]
        return analyse(mu, ops, a[rows], sub if np.any(sub) else None).kappa(r1, delta)

    def score(rows: list[int]) -> tuple[float, int]:
        """(max_i κ_i, how many individuals are above the target)."""
        if pat is not None and rows:
            kp = _pattern_kappa(pat, rows, r1)
            return float(kp.max()), int(pat.count[kp > target].sum())
        k = kap(rows)
        return float(k.max()), int(np.count_nonzero(k > target))

    kept, dropped = list(range(a.shape[0])), []
    cur = kap(kept)
    path = [float(cur.max())]
    while kept and cur.max() > target:
        *_, d = min((*score([j for j in kept if j != d]), d) for d in kept)
        kept.remove(d)
        dropped.append(d)
        cur = kap(kept)
        path.append(float(cur.max()))
    for d in sorted(dropped):  # add back what the greedy order dropped needlessly
        if score(sorted([*kept, d]))[0] <= target:
            kept = sorted([*kept, d])
            dropped.remove(d)
            cur = kap(kept)
            path.append(float(cur.max()))
    mech = None
    if kept:
        sub = r[np.ix_(kept, kept)]
        mech = LinearGaussian(a[kept], sub if np.any(sub) else None)
    return Withholding(kept, dropped, cur, path, mech)


def _equal_variance_patterns(
    a: NDArray[np.float64], ops: Any, r: NDArray[np.float64]
) -> ColumnPatterns | None:
    """A's column patterns when κ per individual depends on A only through them: an exact
    release (R = 0) under Σ = vI (a StructuredCovariance without U and with equal diag)."""
    if np.any(r) or not isinstance(ops, StructuredCovariance) or ops.U.shape[1]:
        return None
    if not np.all(ops.diag == ops.diag[0]):
        return None
    return column_patterns(a)


def _pattern_kappa(pat: ColumnPatterns, rows: list[int], r1: float) -> NDArray[np.float64]:
    r"""κ per pattern of the exact release of ``A[rows]`` under Σ = vI: what
    :meth:`LinearAnalysis.kappa` gives, :math:`r_1 - \log(1 - \rho_p^2)` with
    :math:`\rho_p^2 = \|W_p\|^2/n_p` (:func:`~persuasive.linear.exposure.pattern_spread`),
    ∞ when exposed, 0 when :math:`\rho_p = 0`; O(mk²) (the patterns of A serve A[rows])."""
    sub = ColumnPatterns(pat.columns[rows], pat.index, pat.count)
    _, s, wt, w = sub.svd()
    keep = s > RANK_RTOL * s[0]
    bb = np.einsum("ij,ij->j", wt[keep], wt[keep]) / w
    rho2 = np.clip(bb, 0.0, 1.0)
    with np.errstate(divide="ignore"):
        out = -np.log1p(-np.minimum(rho2, 1.0)) + r1
    out[rho2 <= 0] = 0.0
    return np.where(np.maximum(1.0 - bb, 0.0) <= tol.VAR_RTOL, np.inf, out)
