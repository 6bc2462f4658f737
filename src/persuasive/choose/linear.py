r"""The Sender's choice for linear statistics: exact, noise, or statistics withheld (eq. 5).

Given k linear statistics :math:`T = Ax` (means and sums over subsets of rows), the class
:class:`persuasive.linear.LinearGaussianClass` (Prop 7 of Bon et al. 2026 generalised to A,
``docs/linear_release.md``), a target (κ, δ) and the utility loss *total expected squared
error of the released statistics*, the families this library certifies are:

* **exact** — every statistic as it is: error 0, κ = :math:`r_1 + \log r_2` at δ = 0 unless
  some individual is exposed (:math:`e_i` in A's row space: the class is empty, no κ);
* **gaussian** — :math:`Ax + \mathcal N(0, \sigma^2 I)`: error :math:`k\sigma^2`, κ(δ; σ) of
  the class certificate, which depends on the statistics only through "nobody is exposed" and
  on the noise only through :math:`\lambda_{\min}(R)`; so one σ for all statistics is optimal
  among diagonal noise, and the best σ is the smallest meeting the target
  (:func:`persuasive.linear.calibrate_noise`: a geometric scan, then bisection on σ);
* **withhold_some** — some statistics withheld, the rest exact or with that same σ. A withheld
  statistic has no finite squared error (nothing is published to err), so it costs a stated
  amount :math:`c_j` (``withhold_cost``; default :math:`V^2` = ``max_stat_sd²``, the largest
  prior variance of a statistic the class allows: the expected squared error of a data user
  who guesses it from a prior in the class; :math:`+\infty` without V). The loss is
  :math:`\sum_{j\ \text{withheld}} c_j + |\text{kept}|\,\ell` with ℓ = 0 (exact) or σ²;
* **withhold** — nothing released: κ = 0, loss :math:`\sum_j c_j`.

With ``max_person_error`` :math:`r_0` the class is the subclass in which every person's
standardized prior error is at most :math:`r_0` (``docs/linear_bounded.md``); its certificate
also depends on the noise only through σ, and falls to 0 as σ grows when V is given
(:mod:`persuasive.choose.linear_kappa`).

When nobody is exposed the search is exact: ℓ is the least per-statistic error meeting the
target, and each statistic is kept iff :math:`c_j \ge \ell`. When someone is exposed, the kept
statistics must expose nobody, a combinatorial problem: up to
:data:`~persuasive.choose.linear_subsets.EXHAUSTIVE_MAX` statistics every subset is searched
(:func:`~persuasive.choose.linear_subsets.best_safe_subset`, exact); above it the search uses
:func:`persuasive.linear.greedy_withhold` (greedy, **not exact**: the candidate and the notes
say so; tests measure its gap against every subset on small cases). Laplace noise and coarsening
are listed as not certified for linear statistics by this library.
"""

from __future__ import annotations

import math
import sys
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
from numpy.typing import NDArray

from persuasive import _domains as dm
from persuasive._wording import prior_sds
from persuasive.choose.frontier import Candidate, Choice, best_of, not_certified, withholding
from persuasive.choose.linear_kappa import BoundedKappa, ClassKappa
from persuasive.choose.linear_subsets import EXHAUSTIVE_MAX, add_back, best_safe_subset
from persuasive.errors import ValidationError

__all__ = ["choose_linear"]

UTILITY = "total expected squared error"
#: Points of the frontier over σ (geometric, from 1/100 to 100 times V, or 1).
FRONTIER_POINTS = 25


def _matrix(
    data: Any, value: str | None, statistics: Any, names: Sequence[str] | None
) -> tuple[NDArray[np.float64], list[str], int]:
    """A (k × n) and the statistics' names, from a matrix or from data and statistics."""
    from persuasive.linear.analysis import check_A

    if value is None and statistics is None:
        if data is None:
            raise ValidationError(
                "choose_linear needs the statistics: a matrix A (k × n), or data with value= "
                "and statistics=; got neither"
            )
        a = check_A(data)
        k = a.shape[0]
        if names is None:
            return a, [f"s{j}" for j in range(k)], a.shape[1]
        out = [str(x) for x in names]
        if len(out) != k or len(set(out)) != k:
            raise ValidationError(
                f"names must be {k} distinct names, one per row of A; got {list(names)!r:.80}"
            )
        return a, out, a.shape[1]
    if value is None or statistics is None or data is None:
        raise ValidationError(
            "linear statistics of data need data, value= (the column) and statistics= "
            f"((name, kind, where) triples); got value={value!r} and statistics="
            f"{'None' if statistics is None else 'given'}"
        )
    import polars as pl

    from persuasive.release.statistics import build_rows

    frame = data
    if not isinstance(frame, (pl.DataFrame, pl.LazyFrame)):
        from persuasive.files.reading import scan

        frame = scan(frame, text=[value], infer=True)
    stats, a, _ = build_rows(frame, statistics, value)
    return a, [s.name for s in stats], a.shape[1]


def _costs(cost: Any, names: list[str], v: float | None) -> NDArray[np.float64]:
    """The cost of withholding each statistic (see the module docstring)."""
    k = len(names)
    if cost is None:
        return np.full(k, math.inf if v is None else v * v)
    if isinstance(cost, Mapping):
        unknown = sorted(set(map(str, cost)) - set(names))
        if unknown:
            raise ValidationError(
                f"withhold_cost names statistics that do not exist: {unknown}; the statistics "
                f"are {names}"
            )
        default = math.inf if v is None else v * v
        cost = [cost.get(n, default) for n in names]
    try:
        arr = np.broadcast_to(np.asarray(cost, dtype=float), (k,)).copy()
    except (TypeError, ValueError):
        raise ValidationError(
            f"withhold_cost must be a number >= 0, {k} numbers or a mapping name -> number; "
            f"got {cost!r:.80}"
        ) from None
    if np.any(np.isnan(arr)) or np.any(arr < 0):
        raise ValidationError(
            f"withhold_cost must be >= 0 (inf allowed) for every statistic; got {cost!r:.80}"
        )
    return arr


def choose_linear(
    data: Any = None,
    *,
    value: str | None = None,
    statistics: Any = None,
    names: Sequence[str] | None = None,
    r1: float,
    r2: float,
    target_kappa: float,
    delta: float = 0.05,
    max_stat_sd: float | None = None,
    withhold_cost: float | Sequence[float] | Mapping[str, float] | None = None,
    max_person_error: float | None = None,
) -> Choice:
    r"""The release of k linear statistics with the least total expected squared error among
    those certified at κ ≤ ``target_kappa`` (δ ≤ ``delta``) against
    :class:`persuasive.linear.LinearGaussianClass`.

    .. math:: M^\star = \arg\min_{M \in \mathcal F}
              \sum_{j\ \text{kept}} \mathbb E\,(T_j - a_j^\top x)^2 + \sum_{j\ \text{withheld}} c_j
              \quad\text{s.t. } M \text{ is } (\mathcal I, \mathcal G^r_{A,x}, \kappa,
              \delta)\text{-PP}

    Parameters
    ----------
    data : matrix A (k × n), or data (path, DataFile, polars / pandas frame)
        With ``value`` and ``statistics``: one row per individual, as
        :func:`persuasive.release.linear.release_linear` reads it. Without them: A itself.
    value : str, optional
        The numeric column the statistics are computed on.
    statistics : iterable of (name, kind, where) or Statistic, optional
        As for :func:`persuasive.release.linear.release_linear`.
    names : sequence of str, optional
        The rows' names when A is given (default ``s0``, ``s1``, ...).
    r1, r2 : float
        The class (r1 > 0, r2 > 1).
    target_kappa : float
        The κ asked for (>= 0).
    delta : float
        The failure probability allowed to noisy releases (the exact release needs none).
    max_stat_sd : float, optional
        V: the Receiver's prior sd of every statistic is at most V (noise can pay only then).
    withhold_cost : float, sequence or mapping name -> float, optional
        What withholding each statistic costs, in squared units of the statistic (>= 0, inf
        allowed); default V² (``max_stat_sd²``), or inf without V.
    max_person_error : float, optional
        :math:`r_0`: every person's standardized prior error is at most :math:`r_0`
        (:class:`persuasive.linear.bounded_error.BoundedErrorLinearClass`,
        ``docs/linear_bounded.md``); with V, κ then falls to 0 as the noise grows.

    Returns
    -------
    Choice
        ``exact_search`` is False when someone is exposed and there are more than
        :data:`~persuasive.choose.linear_subsets.EXHAUSTIVE_MAX` statistics (the subset kept
        is then greedy).

    Examples
    --------
    >>> A = [[1/4, 1/4, 1/4, 1/4], [1/2, 1/2, 0, 0]]       # nobody exposed
    >>> c = choose_linear(A, r1=1.0, r2=4.0, target_kappa=3.0)
    >>> c.best.family, round(c.best.kappa, 4), c.best.loss
    ('exact', 2.3863, 0.0)
    >>> diff = [[1/4, 1/4, 1/4, 1/4], [1/3, 1/3, 1/3, 0]]  # 4 all - 3 no3 = row 3's value
    >>> c = choose_linear(diff, names=["all", "no3"], r1=1.0, r2=4.0, target_kappa=3.0,
    ...                   max_stat_sd=2.0)
    >>> c.best.family, c.best.withheld, c.best.loss, c.exact_search
    ('withhold_some', ('no3',), 4.0, True)
    """
    from persuasive.linear import exposed_by

    a, labels, n = _matrix(data, value, statistics, names)
    r1, r2 = dm.check("r1", r1), dm.check("r2", r2)
    target = dm.check("target_kappa", target_kappa)
    delta = dm.check("delta", delta)
    v = None if max_stat_sd is None else dm.check("max_stat_sd", max_stat_sd)
    costs = _costs(withhold_cost, labels, v)
    if max_person_error is None:
        model: Any = ClassKappa(r1, r2, v, delta)
    else:
        r0 = dm.check("max_mean_sd", max_person_error, name="max_person_error")
        model = BoundedKappa(r1, r2, v, delta, r0)
    k = a.shape[0]
    who = np.flatnonzero(exposed_by(a))
    exact_k = model.exact
    sigma, noise_k, noise_why = _noise(model, target)
    scale = 1.0 if v is None else v
    if exact_k <= target:  # the exact release meets the target: noise would only add error
        ell: float | None = 0.0
    else:
        ell = None if sigma is None else sigma * sigma
    exhaustive, checked = who.size > 0 and k <= EXHAUSTIVE_MAX, 0
    if who.size == 0:
        kept = list(range(k))
    elif ell is None:  # neither the exact release nor any noise meets the target
        kept = []
    elif exhaustive:  # every subset, in order of loss
        kept, checked = best_safe_subset(a, costs, ell)
    else:  # greedy, then every statistic that fits added back
        kept = add_back(a, costs, _greedy_kept(a, r1), ell)

    exposed_why = (
        f"the statistics expose row {int(who[0])}"
        + (f" and {who.size - 1} more" if who.size > 1 else "")
        + " (a combination of them equals a person's value): the class is empty, nothing is "
        "certified over it (docs/linear_release.md)"
        if who.size
        else ""
    )
    if who.size:
        exact = Candidate("exact", None, math.inf, 0.0, 0.0, False, exposed_why)
        gauss = Candidate("gaussian", None, math.inf, delta, math.inf, False, exposed_why)
    else:
        exact = Candidate(
            "exact", None, exact_k, 0.0, 0.0, exact_k <= target,
            f"κ = {exact_k:.4g} at δ = 0 ({model.basis})"
            + ("" if exact_k <= target else ", above the target"),
        )  # fmt: skip
        gauss = _gaussian(model, k, sigma, noise_k, noise_why, target, scale)
    greedy = who.size > 0 and not exhaustive
    some = _some(labels, costs, kept, ell, exact_k, noise_k, sigma, delta, target, greedy)
    laplace = not_certified(
        "laplace",
        "Laplace noise on linear statistics is not certified by this library (for one mean it "
        "has no finite κ at δ < 1/2: docs/release_means.md, (c′))",
        delta,
    )
    coarse = not_certified("coarsening", "rounded statistics are not certified by this library")
    candidates = (exact, gauss, some, laplace, coarse, withholding(float(costs.sum())))
    # withholding every statistic is the family 'withhold': the search picks that one
    best = best_of(tuple(c for c in candidates if len(c.withheld) < k))
    frontier = _frontier(model, labels, costs, kept, who.size == 0, target, scale)
    if exhaustive:
        notes: tuple[str, ...] = (
            "someone is exposed (see 'exact'), so only sets of statistics that expose nobody "
            f"can be released; the subsets of the {k} statistics were taken in order of loss "
            f"until the first that exposes nobody ({checked} checked): the choice is exact",
        )
    elif who.size:
        notes = (
            "someone is exposed (see 'exact'), so the statistics kept were chosen greedily "
            "(persuasive.linear.greedy_withhold: drop the one whose removal lowers the largest κ "
            "under an independent prior most, until nobody is exposed), then every dropped "
            "statistic that keeps the set safe was added back, dearest first. That is NOT an "
            "exact search: another subset may keep more, or cheaper-to-lose, statistics",
        )
    else:
        notes = (
            "exact up to the noise bisection: κ under the class depends on the noise only "
            "through its smallest variance, so one σ for all statistics, the smallest meeting "
            "the target, is best; each statistic is then withheld only when its cost is below "
            "σ² (or 0 when the exact release meets the target)",
        )
    cost_words = f"{costs[0]:g} each" if np.all(costs == costs[0]) else "per statistic, as given"
    setting = (
        ("Receivers", f"linear Gaussian class r1 = {r1:g}, r2 = {r2:g}"
         + ("" if v is None else f", prior sd of every statistic <= {v:g}")
         + ("" if max_person_error is None
            else f", error about any one person <= {prior_sds(max_person_error)}")),
        ("statistics", f"{k} ({', '.join(labels[:6])}{' ...' if k > 6 else ''}) of n = {n}"),
        ("target", f"κ <= {target:g} at δ <= {delta:g}"),
        ("loss", f"{UTILITY}; a withheld statistic costs {cost_words}"),
    )  # fmt: skip
    return Choice(
        best, candidates, tuple(frontier), target, delta, UTILITY, not greedy, notes, setting
    )


def _greedy_kept(a: NDArray[np.float64], r1: float) -> list[int]:
    """The statistics :func:`greedy_withhold` keeps so that nobody is exposed (as
    ``release_linear --withhold`` does: an independent unit-variance reference prior)."""
    from persuasive.linear import StructuredCovariance, greedy_withhold

    n = a.shape[1]
    w = greedy_withhold(
        a, sys.float_info.max, mean=np.zeros(n), cov=StructuredCovariance(np.ones(n)), r1=r1
    )
    return sorted(int(j) for j in w.kept)


def _noise(model: Any, target: float) -> tuple[float | None, float, str]:
    """(σ*, κ(σ*), why not): the smallest σ on every statistic meeting the target."""
    if model.delta <= 0.0:
        return None, math.inf, "Gaussian noise has no finite κ at δ = 0 (the noise is unbounded)"
    return model.smallest(target)


def _gaussian(
    model: Any, k: int, sigma: float | None, kappa: float, why: str, target: float,
    scale: float,
) -> Candidate:  # fmt: skip
    """The noise family on every statistic (nobody exposed)."""
    from persuasive.linear.calibrate import SCAN_LO

    delta, exact_k = model.delta, model.exact
    if sigma is None:
        return Candidate("gaussian", None, math.inf, delta, math.inf, False, why)
    if sigma == 0.0:  # the exact release meets the target: the least noise searched
        s = scale * SCAN_LO
        kap = float(model.many(np.array([s]))[0])
        return Candidate(
            "gaussian", s, kap, delta, k * s * s, kap <= target,
            f"not needed: the exact release meets the target (κ = {exact_k:.4g}); with the "
            f"least noise searched κ is {kap:.4g}",
        )  # fmt: skip
    return Candidate(
        "gaussian", sigma, kappa, delta, k * sigma * sigma, kappa <= target,
        "the smallest noise sd on every statistic whose certified κ meets the target",
    )  # fmt: skip


def _some(
    labels: list[str], costs: NDArray[np.float64], kept: list[int], ell: float | None,
    exact_k: float, noise_k: float, sigma: float | None, delta: float, target: float,
    greedy: bool,
) -> Candidate:  # fmt: skip
    """Withhold the statistics outside ``kept``, and those of ``kept`` cheaper to lose than ℓ."""
    k = len(labels)
    out = np.ones(k, dtype=bool)
    out[kept] = False
    if ell is None:  # the kept statistics cannot meet the target, exact or noisy
        out[:] = True
    else:
        out[kept] = costs[kept] < ell  # on a tie, keep it: a release beats nothing
    withheld = tuple(labels[j] for j in np.flatnonzero(out))
    n_kept = int(k - out.sum())
    loss = float(costs[out].sum() + n_kept * (ell or 0.0))
    how = " (chosen greedily: not an exact search)" if greedy else ""
    if n_kept == 0:
        return Candidate(
            "withhold_some", None, 0.0, 0.0, float(costs.sum()), True,
            "every statistic would be withheld: the same as 'withhold'" + how, withheld,
        )  # fmt: skip
    exact = ell == 0.0
    kap, d = (exact_k, 0.0) if exact else (noise_k, delta)
    param = None if exact else sigma
    rest = "the rest exactly" if exact else f"the rest with noise sd {sigma:.6g}"
    if not withheld:
        why = "nothing needs withholding: the same as '" + ("exact" if exact else "gaussian") + "'"
    else:
        why = f"withhold {len(withheld)} of {k}, release {rest}{how}"
    return Candidate("withhold_some", param, kap, d, loss, kap <= target, why, withheld)


def _frontier(
    model: Any, labels: list[str], costs: NDArray[np.float64], kept: list[int], clean: bool,
    target: float, scale: float,
) -> list[Candidate]:  # fmt: skip
    """κ and loss of the kept statistics released exactly and over a grid of σ, each statistic
    withheld where that is cheaper (family ``gaussian`` when nothing is withheld), and the
    release of nothing."""
    k = len(labels)
    must = np.ones(k, dtype=bool)
    must[kept] = False
    base = float(costs[must].sum())  # the statistics that must be withheld
    out = []
    if kept:
        fam = "exact" if clean else "withhold_some"
        names = () if clean else tuple(labels[j] for j in range(k) if j not in kept)
        ek = model.exact
        out.append(Candidate(fam, None, ek, 0.0, base, ek <= target, "", names))
    delta = model.delta
    if kept and delta > 0.0:
        sig = np.geomspace(scale / 100.0, scale * 100.0, FRONTIER_POINTS)
        kap = model.many(sig)
        kc = costs[kept]
        for s, kk in zip(sig.tolist(), kap.tolist(), strict=True):
            drop = kc < s * s
            if drop.all():  # nothing left to release: that is the point 'withhold' below
                continue
            loss = base + float(np.where(drop, kc, s * s).sum())
            fam = "gaussian" if clean and not drop.any() else "withhold_some"
            out.append(Candidate(fam, s, kk, delta, loss, kk <= target, ""))
    total = float(costs.sum())
    if math.isfinite(total):
        out.append(Candidate("withhold", None, 0.0, 0.0, total, True, ""))
    return out
