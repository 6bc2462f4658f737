r"""Magnitude tables with published margins: the certified κ of suppressed cells, secondary
suppression, and the attacker's intervals.

This library's extension of Prop 7 (Bon et al. 2026); proof in ``docs/magnitude.md`` §6. With
margins published (totals over groups of cells) the Receiver learns, about the suppressed cell
totals :math:`y_S`, the equations :math:`L y_S = b` (each margin minus its published cells).
Against independent priors (:math:`r_2 = 1`) whose spreads scale with each contribution's size
up to γ across the table, a contribution i of a suppressed cell c has

.. math::

    \Delta_i \le r_1 - \log\big(1 - \bar s_c\,\bar g_c\big),\qquad
    \bar s_c = \frac{\gamma^2 z_{(1)}^2}{\gamma^2 z_{(1)}^2 + \sum_{k \ge m+2} z_{(k)}^2},\qquad
    \bar g_c = 1 - \frac{\operatorname{Var}(y_c \mid L y_S)}{V_c}\Big|_{V_c = \gamma^2 Z_c,\
        V_d = Z^{-m}_d},

with :math:`Z_c = \sum_{j \in c} z_j^2` and :math:`Z^{-m}_d` the same without the m largest.
:math:`\operatorname{Var}(y_c \mid L y_S)` is the squared distance from
:math:`\sqrt{V_c} e_c` to the column space of :math:`\operatorname{diag}(\sqrt V) L^\top`
(an orthogonal projection, QR on an independent row basis of the 0/1 matrix L); a relative
margin of :math:`10^{-8}` is taken off it, so κ errs upwards.

Secondary suppression is greedy: while some suppressed cell's κ exceeds the target, the
published cell sharing a margin with a suppressed one that lowers the worst κ most (ties: the
smallest total, or with public sizes the smallest sum of squared sizes) is suppressed too
(suppressing more never raises a κ); if no such cell can help, the release is refused. The
attacker's intervals (τ-Argus' protection levels) are the range of each suppressed total over
the non-negative solutions of :math:`L y_S = b` (linear programs, HiGHS).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import polars as pl
from numpy.typing import NDArray

from persuasive.errors import ValidationError
from persuasive.magnitude.certificate import MagnitudeClass
from persuasive.magnitude.contributors import Contributions

__all__ = [
    "Incidence",
    "MarginOutcome",
    "attacker_intervals",
    "candidate_explained",
    "incidence",
    "parse",
    "protect",
]

#: Relative margin taken off Var(y_c | L y_S) (errs towards larger κ).
VAR_MARGIN = 1e-8


def parse(margins: str | Sequence[str], keys: Sequence[str]) -> tuple[tuple[str, ...], ...]:
    """``"a,b,total"`` (or a list): totals by a, by b and the grand total; ``"a+b"`` a total
    over two keys. Each margin must be a proper subset of the keys.

    >>> parse("region,total", ["region", "industry"])
    (('region',), ())
    """
    items = [m.strip() for m in margins.split(",")] if isinstance(margins, str) else list(margins)
    out: list[tuple[str, ...]] = []
    for item in items:
        subset = () if item == "total" else tuple(k.strip() for k in item.split("+"))
        bad = [k for k in subset if k not in keys]
        if not item or bad or len(subset) >= len(keys) or len(set(subset)) != len(subset):
            raise ValidationError(
                f"margins: {item!r} must be 'total' or key columns joined by '+' naming fewer "
                f"than all of the keys {list(keys)} (e.g. 'a,b,total'); got {margins!r}"
            )
        if subset in out:
            raise ValidationError(f"margins: {item!r} is named twice in {margins!r}")
        out.append(subset)
    if not out:
        raise ValidationError(f"margins must name at least one margin; got {margins!r}")
    return tuple(out)


@dataclass(frozen=True)
class Incidence:
    """Which margin group each cell is in: ``group[j, c]`` for margin j (global group ids)."""

    margins: tuple[tuple[str, ...], ...]
    group: NDArray[np.int64]  # (n_margins, n_cells), global ids
    frames: tuple[pl.DataFrame, ...]  # per margin: its subset's key values, one row per group
    n_groups: int

    def matrix(self) -> NDArray[np.float64]:
        """The 0/1 matrix (groups × cells)."""
        a = np.zeros((self.n_groups, self.group.shape[1]))
        for row in self.group:
            a[row, np.arange(row.size)] = 1.0
        return a


def incidence(cells: pl.DataFrame, margins: tuple[tuple[str, ...], ...]) -> Incidence:
    """The margin groups of the cells (a frame of key columns, one row per cell)."""
    rows, frames, offset = [], [], 0
    for subset in margins:
        if subset:
            levels = cells.select(subset).unique().sort(list(subset), nulls_last=True)
            levels = levels.with_row_index("__g")
            codes = cells.select(subset).join(levels, on=list(subset), how="left")["__g"]
            rows.append(codes.to_numpy().astype(np.int64) + offset)
            frames.append(levels.drop("__g"))
            offset += levels.height
        else:
            rows.append(np.full(cells.height, offset, dtype=np.int64))
            frames.append(pl.DataFrame())
            offset += 1
    group = np.vstack(rows) if rows else np.zeros((0, cells.height), dtype=np.int64)
    return Incidence(margins, group, tuple(frames), offset)


def _tails(c: Contributions, ks: Sequence[int]) -> tuple[NDArray[np.float64], ...]:
    """Per cell: the largest squared scale and Σ_{rank ≥ k} of the squared scales, by scale."""
    order = np.lexsort((-c.scale, c.cell))
    cell = c.cell[order]
    # the bound is invariant to scaling the whole table: square relative to the largest scale
    # (no overflow; a square that underflows to 0 only makes a total look known: κ errs up)
    peak = float(c.scale.max(initial=0.0))
    q = (c.scale[order] / (peak if peak > 0 else 1.0)) ** 2
    rank = np.arange(cell.size) - c.start[cell]

    def seg(w: NDArray[np.float64]) -> NDArray[np.float64]:
        return np.asarray(np.bincount(cell, weights=w, minlength=c.n_cells), dtype=np.float64)

    return (seg(np.where(rank == 0, q, 0.0)), *(seg(np.where(rank >= k, q, 0.0)) for k in ks))


def _independent_rows(a: NDArray[np.float64]) -> NDArray[np.float64]:
    """A basis of the row space of a 0/1 matrix (pivoted QR). Every dropped row is checked to
    lie in the span of the kept ones; if one does not, all rows are kept, which can only
    enlarge the projection below (more explained: κ errs upwards)."""
    from scipy.linalg import qr

    if a.size == 0:
        return a
    _, r, piv = qr(a.T, mode="economic", pivoting=True)
    d = np.abs(np.diag(r))
    rank = int(np.sum(d > 1e-9 * d[0])) if d.size and d[0] > 0 else 0
    kept, dropped = a[np.sort(piv[:rank])], a[np.sort(piv[rank:])]
    if dropped.size:
        coef, *_ = np.linalg.lstsq(kept.T, dropped.T, rcond=None)
        if np.abs(kept.T @ coef - dropped.T).max() > 1e-8:
            return a
    return kept


def _explained_many(
    a: NDArray[np.float64], v: NDArray[np.float64], targets: NDArray[np.int64], vt: Any
) -> NDArray[np.float64]:
    """:func:`_explained` for several targets of one pattern: target ``targets[k]`` with its own
    variance ``vt[k]`` (the others keep ``v``). The row basis is found once; the targets whose
    variance equals ``v``'s share one QR (their residuals are the rows of Q), the others one QR
    each on the shared basis."""
    out = np.zeros(targets.size)
    rows = a[np.abs(a).sum(axis=1) > 0]
    if rows.size == 0 or targets.size == 0:
        return out
    basis = _independent_rows(rows)

    def finish(var: Any, vc: Any) -> Any:
        var = var - VAR_MARGIN * vc
        return np.where(var <= 0, 1.0, np.maximum(0.0, 1.0 - var / vc))

    same = np.asarray(vt) == v[targets]
    if same.any():
        q, _ = np.linalg.qr(np.sqrt(v)[:, None] * basis.T)
        t = targets[same]
        out[same] = finish(v[t] * (1.0 - np.sum(q[t] ** 2, axis=1)), v[t])
    for k in np.flatnonzero(~same):
        w = v.copy()
        w[targets[k]] = vt[k]
        q, _ = np.linalg.qr(np.sqrt(w)[:, None] * basis.T)
        tgt = np.zeros(w.size)
        tgt[targets[k]] = math.sqrt(w[targets[k]])
        resid = tgt - q @ (q.T @ tgt)
        out[k] = finish(np.asarray(float(resid @ resid)), w[targets[k]])
    return out


def _explained(a: NDArray[np.float64], v: NDArray[np.float64], c: int) -> float:
    """1 − Var(y_c | A y)/V_c for independent y with variances v (> 0), erring upwards."""
    rows = a[np.abs(a).sum(axis=1) > 0]
    if rows.size == 0:
        return 0.0
    basis = _independent_rows(rows)
    b = np.sqrt(v)[:, None] * basis.T  # (cells × rank), full column rank
    q, _ = np.linalg.qr(b)
    target = np.zeros(v.size)
    target[c] = math.sqrt(v[c])
    resid = target - q @ (q.T @ target)
    var = float(resid @ resid) - VAR_MARGIN * v[c]
    return 1.0 if var <= 0 else max(0.0, 1.0 - var / v[c])


def candidate_explained(
    a: NDArray[np.float64],
    v: NDArray[np.float64],
    c: int,
    extra: NDArray[np.float64],
    v_extra: NDArray[np.float64],
) -> NDArray[np.float64]:
    r"""For each candidate d: :math:`1 - \operatorname{Var}(y_c \mid L y)/V_c` once column
    ``extra[:, d]`` (variance ``v_extra[d]``) joins the unknowns ``a`` (variances ``v``), all at
    once. With :math:`M = L\,\mathrm{diag}(V) L^\top` (margins × margins),

    .. math::

        g_0 = V_c\,\ell_c^\top M^+ \ell_c,\qquad
        g_d = g_0 - \frac{V_c V_d (\ell_c^\top M^+ \ell_d)^2}{1 + V_d\,\ell_d^\top M^+ \ell_d}

    (Sherman–Morrison) when :math:`\ell_d \in \operatorname{range} M`, and :math:`g_d = g_0`
    otherwise (a margin then reveals :math:`y_d` alone, which changes nothing for c). Used to
    *rank* candidates only; every certified κ is recomputed by :func:`_explained`.
    """
    m = (a * v) @ a.T
    lam, u = np.linalg.eigh(m)
    keep = lam > 1e-10 * max(float(lam.max(initial=0.0)), 1e-300)
    u, lam = u[:, keep], lam[keep]
    lc = a[:, c]
    pc = (u.T @ lc) / lam  # coordinates of M^+ ℓ_c in the eigenbasis
    g0 = v[c] * float((u.T @ lc) @ pc)
    proj = u.T @ extra  # (rank × candidates)
    outside = np.sum(extra * extra, axis=0) - np.sum(proj * proj, axis=0)
    inside = outside <= 1e-9 * np.maximum(np.sum(extra * extra, axis=0), 1.0)
    cross = pc @ proj
    quad = np.sum(proj * proj / lam[:, None], axis=0)
    g = g0 - v[c] * v_extra * cross**2 / (1.0 + v_extra * quad)
    return np.where(inside, np.clip(g, 0.0, 1.0), min(max(g0, 0.0), 1.0))


@dataclass(frozen=True)
class MarginOutcome:
    """The suppression pattern with margins and each cell's certified κ."""

    suppressed: NDArray[np.bool_]
    primary: NDArray[np.bool_]
    kappa: NDArray[np.float64]  # primary κ of published cells, κ with margins of suppressed
    secondary: tuple[int, ...]
    refused: str | None


def protect(
    c: Contributions,
    primary_kappa: NDArray[np.float64],
    cls: MagnitudeClass,
    insiders: int,
    inc: Incidence,
    target: float,
    label: Callable[[int], str] = str,
) -> MarginOutcome:
    """Primary suppression (κ above the target), then greedy secondary suppression until every
    suppressed cell's κ with margins is at most the target, or a refusal naming the cell."""
    if cls.r2 != 1.0:
        raise ValidationError(
            f"r2 must be 1 with margins (independent priors: the margins bound needs them); got "
            f"{cls.r2:g}"
        )
    m = insiders
    count = c.count
    top, z_all, z_m, rest = _tails(c, (0, m, m + 1))
    g2 = cls.gamma**2 if cls.gamma < 1e150 else math.inf  # an overflowing γ² is ∞
    with np.errstate(divide="ignore", invalid="ignore"):
        share = np.where(top > 0, top / (top + rest / g2), 0.0)
    a_full = inc.matrix()
    primary = np.asarray(primary_kappa > target)
    supp = primary.copy()
    kappa = np.where(supp, 0.0, primary_kappa)
    secondary: list[int] = []

    def kappa_of(cell: int, pattern: NDArray[np.bool_]) -> float:
        """The certified κ of suppressed ``cell`` under a suppression pattern."""
        if count[cell] == 0:
            return 0.0  # no contributor: nothing to learn
        if z_all[cell] <= 0:
            return math.inf  # its scales underflowed against the table's largest: err upwards
        s_idx = np.flatnonzero(pattern)
        v = z_m[s_idx].copy()
        pos = int(np.flatnonzero(s_idx == cell)[0])
        v[pos] = g2 * z_all[cell]
        keep = v > 0  # a total the worst coalition knows is no unknown
        g = _explained(a_full[:, s_idx[keep]], v[keep], int(np.sum(keep[:pos])))
        explained = share[cell] * g
        # `not <` so that a NaN is never certified
        return math.inf if not explained < 1.0 else cls.r1 - math.log1p(-explained)

    def kappa_all(cells: NDArray[np.int64], pattern: NDArray[np.bool_]) -> NDArray[np.float64]:
        """kappa_of for several suppressed cells of one pattern, the row basis found once."""
        s_idx = np.flatnonzero(pattern)
        base = s_idx[z_m[s_idx] > 0]  # unknown to the worst coalition whatever the target
        inside = np.isin(cells, base) & (count[cells] > 0) & (z_all[cells] > 0)
        out = np.array([kappa_of(int(c), pattern) for c in cells[~inside]])
        res = np.empty(cells.size)
        res[~inside] = out
        if inside.any():
            pos = np.searchsorted(base, cells[inside])
            g = _explained_many(a_full[:, base], z_m[base], pos, g2 * z_all[cells[inside]])
            explained = share[cells[inside]] * g
            with np.errstate(divide="ignore", invalid="ignore"):
                k = cls.r1 - np.log1p(-np.minimum(explained, 1.0))
            res[inside] = np.where(explained < 1.0, k, np.inf)  # NaN: never certified
        return res

    # ties are broken by the smallest total, or with public sizes by the smallest Σ z², so
    # that the whole pattern depends on public data only (docs/magnitude.md §5)
    totals = c.total if c.size is None else z_all

    def ranked(cell: int, cand: NDArray[np.int64]) -> NDArray[np.float64]:
        """κ of suppressed ``cell`` with each candidate suppressed too (to rank them)."""
        s_idx = np.flatnonzero(supp)
        v = z_m[s_idx].copy()
        pos = int(np.flatnonzero(s_idx == cell)[0])
        v[pos] = g2 * z_all[cell]
        keep = v > 0
        g = candidate_explained(
            a_full[:, s_idx[keep]], v[keep], int(np.sum(keep[:pos])), a_full[:, cand], z_m[cand]
        )
        explained = share[cell] * g
        with np.errstate(divide="ignore"):
            k = np.where(explained >= 1.0, np.inf, cls.r1 - np.log1p(-np.minimum(explained, 1.0)))
        # equal up to rounding counts as a tie (then the smallest total decides)
        return np.where(np.isfinite(k), np.round(k, 9), k)

    stale = supp.copy()  # cells whose κ may exceed the target (κ only falls as more are hidden)
    while True:
        todo = np.flatnonzero(stale & supp)
        kappa[todo] = kappa_all(todo, supp)
        s_idx = np.flatnonzero(supp)
        bad = s_idx[kappa[s_idx] > target]
        stale[:] = False
        stale[bad] = True
        if bad.size == 0:
            kappa[s_idx] = kappa_all(s_idx, supp)  # the final pattern's κ (tightest)
            return MarginOutcome(supp, primary, kappa, tuple(secondary), None)
        worst = int(bad[np.argmax(kappa[bad])])
        # candidates: published cells (whose total a coalition does not know) sharing a margin
        # with a suppressed cell; the one lowering the worst κ most, then the smallest total
        shares = np.zeros(c.n_cells, dtype=bool)
        for row in inc.group:
            shares |= np.isin(row, row[supp])
        cand = np.flatnonzero(shares & ~supp & (z_m > 0))
        if cand.size == 0:
            reason = (
                f"cell ({label(worst)}) has κ = {kappa[worst]:.4g} > {target:g} with the "
                "margins published, and no published cell sharing a margin with the suppressed "
                "ones can be suppressed to help; publish fewer margins or raise the target"
            )
            return MarginOutcome(supp, primary, kappa, tuple(secondary), reason)
        best = np.lexsort((totals[cand], ranked(worst, cand)))[0]
        pick = int(cand[best])
        supp[pick] = True
        stale[pick] = True
        secondary.append(pick)


def attacker_intervals(
    a: NDArray[np.float64], totals: NDArray[np.float64], suppressed: NDArray[np.bool_]
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """The least and largest value of each suppressed total over the non-negative solutions
    of the published equations (NaN for published cells)."""
    from scipy.optimize import linprog

    s_idx = np.flatnonzero(suppressed)
    lo = np.full(totals.size, np.nan)
    hi = np.full(totals.size, np.nan)
    if s_idx.size == 0:
        return lo, hi
    rhs = a @ np.where(suppressed, 0.0, totals)
    margin = a @ totals
    rows = np.abs(a[:, s_idx]).sum(axis=1) > 0
    a_eq = a[rows][:, s_idx]
    b_eq = (margin - rhs)[rows]
    for k, cell in enumerate(s_idx):
        cost = np.zeros(s_idx.size)
        cost[k] = 1.0
        for sign, out in ((1.0, lo), (-1.0, hi)):
            res = linprog(sign * cost, A_eq=a_eq, b_eq=b_eq, bounds=(0, None), method="highs")
            out[cell] = sign * res.fun if res.status == 0 else (np.inf if sign < 0 else 0.0)
    return lo, hi
