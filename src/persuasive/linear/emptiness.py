r"""Is the Receiver class :math:`\mathcal G^r_{A,x}` empty? Decided from A's column patterns.

This library's extension of Prop 7 (Bon et al. 2026); proofs in ``docs/linear.md`` §4. With
:math:`S = \mathrm{diag}(\sigma^2)` and :math:`a_i` column i of A,

.. math::

    \frac{D_i(\sigma)}{\sigma_i^2} = 1 - \ell_i(\sigma), \qquad
    \ell_i(\sigma) = \sigma_i^2 a_i^\top (A S A^\top)^+ a_i,

the leverages of a projection: :math:`\sum_i \ell_i = \mathrm{rank}\,A`. The class needs
:math:`c_\Phi \le r_2 \min_i D_i/\sigma_i^2` with :math:`c_\Phi \ge 1`, so it is non-empty
exactly when some σ has :math:`\max_i \ell_i(\sigma) \le 1 - 1/r_2` (then Φ = I, μ = x and a
small enough scale of σ make a member). For a set J of column patterns (:math:`N_J` records,
:math:`d_J = \mathrm{rank}\,C - \mathrm{rank}\,C_{-J}`), the records of J have leverages summing
to at least :math:`d_J` for every σ, so the class is empty when
:math:`r_2 < N_J/(N_J - d_J)`. A single pattern whose column is outside the span of the others
(d = 1) gives :math:`r_2 < n_j/(n_j - 1)`: for the mean, Prop 7's :math:`r_2 \ge n/(n-1)`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from itertools import combinations

import numpy as np
from numpy.typing import NDArray

from persuasive import _tolerances as tol
from persuasive.errors import ValidationError
from persuasive.linear.structured import ColumnPatterns, column_patterns

__all__ = ["Emptiness", "class_emptiness", "patterns_of_matrix"]

#: Every set of column patterns is tried as a group when there are at most this many patterns.
SUBSET_MAX_PATTERNS = 10
#: The search for unequal sds proving non-emptiness runs while m k² is at most this.
SEARCH_MAX_WORK = 2e6
#: Iterations of that search.
SEARCH_STEPS = 200

EMPTY, NON_EMPTY, UNDECIDED = "empty", "non-empty", "undecided"


@dataclass(frozen=True)
class Emptiness:
    r""":func:`class_emptiness`: ``verdict`` ("empty", "non-empty" or "undecided") and
    ``reason`` (one sentence); ``needed_r2`` the largest :math:`N_J/(N_J - d_J)` found (the
    class is empty below it); ``records`` the first records of the group proving emptiness;
    ``sd`` (per pattern) a witness: the class holds Φ = I with these sds when non-empty."""

    verdict: str
    reason: str
    needed_r2: float
    records: NDArray[np.intp] = field(default_factory=lambda: np.zeros(0, dtype=np.intp))
    sd: NDArray[np.float64] | None = None

    @property
    def empty(self) -> bool:
        return self.verdict == EMPTY


def patterns_of_matrix(a: NDArray[np.float64]) -> ColumnPatterns:
    """A's column patterns, or one pattern per record when they do not compress."""
    pat = column_patterns(a)
    if pat is not None:
        return pat
    n = a.shape[1]
    return ColumnPatterns(np.ascontiguousarray(a), np.arange(n), np.ones(n, dtype=np.int64))


def _leverages(cols: NDArray[np.float64], w: NDArray[np.float64]) -> tuple[NDArray, int]:
    """Leverages of the columns of :math:`C\\,\\mathrm{diag}(w)^{1/2}` and its rank."""
    from persuasive.linear.analysis import RANK_RTOL

    _, s, wt = np.linalg.svd(cols * np.sqrt(w)[None, :], full_matrices=False)
    if not s.size or s[0] <= 0.0:
        return np.zeros(cols.shape[1]), 0
    keep = s > RANK_RTOL * s[0]
    return np.einsum("ij,ij->j", wt[keep], wt[keep]), int(keep.sum())


def _rank(cols: NDArray[np.float64]) -> int:
    from persuasive.linear.analysis import RANK_RTOL

    if cols.shape[1] == 0:
        return 0
    s = np.linalg.svd(cols, compute_uv=False)
    return int(np.sum(s > RANK_RTOL * s[0])) if s.size and s[0] > 0 else 0


def _groups(
    cols: NDArray[np.float64], count: NDArray[np.int64], lev: NDArray, rank: int
) -> list[tuple[float, tuple[int, ...], int, int]]:
    """(needed r2, patterns J, N_J, d_J) of the groups tried: every isolated pattern (leverage
    1), all records, and every set of patterns when there are few."""
    m = cols.shape[1]
    out: list[tuple[float, tuple[int, ...], int, int]] = []

    def add(j: tuple[int, ...], d: int) -> None:
        big = int(count[list(j)].sum())
        if d > 0:
            out.append((big / (big - d) if big > d else np.inf, j, big, d))

    for p in np.flatnonzero(1.0 - lev <= tol.VAR_RTOL):
        add((int(p),), 1)
    add(tuple(range(m)), rank)
    if m <= SUBSET_MAX_PATTERNS:
        for size in range(2, m):
            for j in combinations(range(m), size):
                rest = [q for q in range(m) if q not in j]
                add(j, rank - _rank(cols[:, rest]))
    return out


def _search(
    cols: NDArray[np.float64], count: NDArray[np.int64], ceiling: float
) -> tuple[float, NDArray[np.float64]]:
    r"""Pattern weights W (total prior variance of each pattern) lowering
    :math:`\max_j \ell_j(W)/n_j` below ``ceiling`` by damped multiplicative steps in the log
    domain (a column of zeros has leverage 0 whatever its weight and is left alone); the best
    found (a witness only: the caller checks it)."""
    live = np.any(cols != 0.0, axis=0)
    y = np.log(count.astype(float))
    best, best_w = np.inf, np.exp(y)
    for _ in range(SEARCH_STEPS):
        w = np.exp(y)
        lev, _ = _leverages(cols, w)
        ratio = lev / count
        top = float(ratio.max())
        if top < best:
            best, best_w = top, w
        if best <= ceiling:
            break
        with np.errstate(divide="ignore"):
            step = np.clip(0.5 * np.log(max(ceiling, 1e-300) / ratio), -1.0, 1.0)
        y = np.where(live, y + step, y)
        y = np.clip(y - y[live].max(), -600.0, 0.0)
    return best, best_w


def class_emptiness(patterns: ColumnPatterns, r2: float) -> Emptiness:
    r"""Whether :math:`\mathcal G^r_{A,x}` (and its bounded-error subclass) has a member, from
    A's column patterns :math:`A = C E` in :math:`O(nk + mk^2)` (never n × n, nor dense A).

    "empty" is proven (``docs/linear.md`` §4): a group J of records with
    :math:`r_2 < N_J/(N_J - d_J)`. "non-empty" is proven by a witness: sds equal within each
    pattern (equal for all first, then a short search) with
    :math:`\min_i D_i/\sigma_i^2 \ge 1/r_2`. Else "undecided". Both comparisons allow the
    class's tolerance ``CLASS_RTOL`` on :math:`r_2` (as its ``contains`` does).

    Examples
    --------
    >>> import numpy as np
    >>> from persuasive.linear.structured import patterns_of_masks
    >>> p = patterns_of_masks([[1, 1, 0, 0], [0, 0, 1, 1]], [0.5, 0.5])  # two pair means
    >>> e = class_emptiness(p, 1.5)
    >>> e.verdict, e.needed_r2, e.records.tolist()
    ('empty', 2.0, [0, 1])
    >>> class_emptiness(p, 2.0).verdict
    'non-empty'
    """
    cols = np.asarray(patterns.columns, dtype=float)
    count = np.asarray(patterns.count, dtype=np.int64)
    lev, rank = _leverages(cols, count.astype(float))
    slack = r2 * (1.0 + tol.CLASS_RTOL)
    groups = _groups(cols, count, lev, rank)
    needed = max((g[0] for g in groups), default=1.0)
    if slack < needed:
        worst = max(groups, key=lambda g: (g[0], -g[2]))
        need, j, big, d = worst
        records = np.flatnonzero(np.isin(patterns.index, j))[:5].astype(np.intp)
        why = _why(j, big, d, records, need, r2, len(count))
        return Emptiness(EMPTY, why, need, records)
    ceiling = 1.0 - 1.0 / slack  # the largest leverage a member may have
    ratio = float((lev / count).max())
    w = count.astype(float)
    if ratio > ceiling and cols.shape[1] * cols.shape[0] ** 2 <= SEARCH_MAX_WORK:
        ratio, w = _search(cols, count, ceiling)
    if ratio <= ceiling:
        sd = np.sqrt(w / count)
        how = "equal sds" if np.all(sd == sd[0]) else "sds equal within each column pattern"
        return Emptiness(
            NON_EMPTY,
            f"non-empty: Phi = I with {how} has min_i D_i/sigma_i^2 = {1.0 - ratio:.6g} >= 1/r2",
            needed,
            sd=sd,
        )
    return Emptiness(
        UNDECIDED,
        "non-emptiness of the class was not proven (no prior with min_i D_i/sigma_i^2 >= 1/r2 "
        f"was found; the best found is {1.0 - ratio:.6g} < 1/r2 = {1.0 / r2:.6g}): the "
        "guarantee may protect against no Receiver",
        needed,
    )


def _why(
    j: tuple[int, ...], big: int, d: int, records: NDArray[np.intp], need: float, r2: float, m: int
) -> str:
    who = ", ".join(str(int(i)) for i in records) + (", ..." if big > records.size else "")
    if len(j) == m:
        what = f"A has rank {d} over all {big} records"
    elif d == 1 and len(j) == 1:
        what = (
            f"the {big} records {{{who}}} share a column of A outside the span of the others' "
            "(their total is revealed)"
        )
    else:
        what = f"the {big} records {{{who}}} carry {d} dimensions of A the others do not"
    return (
        f"the Receiver class is empty: {what}, so some record has D_i/sigma_i^2 <= "
        f"1 - {d}/{big} under every prior; it needs r2 >= {need:.6g} (got r2 = {r2:g}) "
        "(docs/linear.md, section 4)"
    )


def refuse_empty(patterns: ColumnPatterns | None, a: NDArray[np.float64], r2: float) -> None:
    """A one-line ValidationError naming r2 when the class is proven empty for these
    statistics (a release then certifies nothing: the guarantee would protect against no
    Receiver), as the mean's release refuses r2 < n/(n-1)."""
    e = class_emptiness(patterns_of_matrix(a) if patterns is None else patterns, r2)
    if e.verdict == EMPTY:
        raise ValidationError(f"r2 = {r2:g}: {e.reason}; a vacuous guarantee is not certified")
