"""A table consistent with the publication of a table with margins: an integer completion of
the suppressed cells by MILP (:func:`publication_table`), on which the margins certificate's
per-cell bounds are computed. Split from :mod:`persuasive.report.margins_certificate` (which
re-exports it): the published frames, their checks and the canonical publication are there.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from persuasive.errors import ValidationError

__all__ = ["publication_table"]


def publication_table(
    pub: Any,
    h: int,
    margins: Sequence[str],
    *,
    known: Sequence[Sequence[str]] = (),
    hierarchy: Sequence[str] = (),
    absent: str = "zero",
    apriori: Sequence[tuple[Sequence[str], int, int | None]] = (),
) -> tuple[Any, list[Any]]:
    """A :class:`~persuasive.margins.MarginTable` consistent with the publication.

    The suppressed cells get an integer completion ``y`` with ``A y = b`` within their supports
    (primary ``[0, h-1]``, secondary ``>= h``) by ``scipy.optimize.milp``; ``kappa_published``
    does not depend on which completion. The combinations of the published levels missing from
    the published table are structural zeros (allowed as ``margins_certificate._grid`` says);
    the ``known`` cells (key labels) must be published with their counts, which may be below h. The
    ``apriori`` bounds ``(labels, lower, upper or None)`` are part of the Receiver's knowledge:
    a published count must lie in its box, and the completion and the table keep them
    (``docs/margins_apriori.md``). Returns the table and the labels (tuples of strings) of
    every flat cell. Raises ValidationError naming what is inconsistent.
    """
    from scipy.optimize import Bounds, LinearConstraint, milp

    from persuasive.margins import MarginTable, parse_margins
    from persuasive.margins.constraints import full_incidence
    from persuasive.margins.known import NO_UPPER, claimed_bounds
    from persuasive.report.margins_certificate import (
        STATUS,
        STATUSES,
        _fail,
        _grid,
        margin_totals,
    )

    levels, shape, flat = _grid(pub, absent, hierarchy)
    n, frame = int(np.prod(shape)), pub.cells
    structural = np.ones(n, bool)
    structural[flat] = False
    where = [{lab: i for i, lab in enumerate(lv)} for lv in levels]
    known_flat = np.zeros(n, bool)
    for cell in known:
        pos = [w.get(str(lab)) for w, lab in zip(where, cell, strict=True)]
        shown = ", ".join(f"{k}={lab!r}" for k, lab in zip(pub.keys, cell, strict=True))
        i = (
            None
            if any(q is None for q in pos)
            else int(np.ravel_multi_index(tuple(int(q or 0) for q in pos), shape))
        )
        if i is None or structural[i]:
            raise _fail(f"the known cell ({shown}) of the claim is not a published cell")
        known_flat[i] = True
    lower, upper = claimed_bounds(apriori, pub.keys, where, shape, structural)
    status = frame[STATUS]
    bad = status.drop_nulls().filter(~status.drop_nulls().is_in(list(STATUSES)))
    if bad.len():
        raise _fail(f"{STATUS} must be primary, secondary or empty; got {bad[0]!r}")
    sup, sec, x = np.zeros(n, bool), np.zeros(n, bool), np.zeros(n, np.int64)
    sup[flat] = status.is_not_null().to_numpy()
    sec[flat] = (status == "secondary").fill_null(False).to_numpy()
    given = frame[pub.count].is_not_null().to_numpy()
    clash = np.flatnonzero(given == sup[flat])
    if clash.size:
        raise _fail(f"row {int(clash[0])}: the count must be empty exactly where {STATUS} is set")
    x[flat] = frame[pub.count].fill_null(0).to_numpy()
    hidden_known = np.flatnonzero(sup & known_flat)
    if hidden_known.size:
        at = int(np.flatnonzero(flat == hidden_known[0])[0])
        cell = ", ".join(f"{k}={frame.row(at, named=True)[k]!r}" for k in pub.keys)
        raise _fail(
            f"cell ({cell}) is suppressed, but the claim lists it as known to the Receiver: a "
            "known cell is published with its count"
        )
    out_box = np.flatnonzero(~sup[flat] & ((x[flat] < lower[flat]) | (x[flat] > upper[flat])))
    if out_box.size:
        row = frame.row(int(out_box[0]), named=True)
        cell = ", ".join(f"{k}={row[k]!r}" for k in pub.keys)
        raise _fail(
            f"cell ({cell}) shows {row[pub.count]}, outside the a-priori bounds the claim states "
            "for it"
        )
    low = np.flatnonzero(~sup[flat] & ~known_flat[flat] & (x[flat] < h))
    if low.size:
        row = frame.row(int(low[0]), named=True)
        cell = ", ".join(f"{k}={row[k]!r}" for k in pub.keys)
        raise _fail(
            f"cell ({cell}) shows {row[pub.count]}, below h = {h}: a count below h must be "
            "suppressed unless the claim lists the cell as known (a suppressed cell filled back "
            "in?)"
        )
    dims = tuple(pub.keys)
    marg = parse_margins(list(margins), dims)
    kw: dict[str, Any] = {
        "h": h,
        "margins": marg,
        "dims": dims,
        "known": known_flat.reshape(shape),
        "structural": structural.reshape(shape),
    }
    mask: dict[str, Any] = {"suppressed": sup.reshape(shape), "secondary": sec.reshape(shape)}
    base = MarginTable(np.where(sup, np.where(sec, h, 0), x).reshape(shape), **kw, **mask)
    totals = margin_totals(pub.margins, pub.keys, base.margins, base.margin_names(), levels)
    A_full, _ = full_incidence(base)
    b_all = np.concatenate([totals[m].ravel() for m in base.margins]) - A_full[:, ~sup] @ x[~sup]
    cells = np.flatnonzero(sup)
    A = A_full[:, cells].tocsr()
    touched = np.asarray(A.sum(axis=1)).ravel() > 0
    if np.any(b_all[~touched] != 0):
        raise ValidationError("published margins do not add up to the released cells")
    if cells.size:
        A, b = A[touched], b_all[touched]
        res = milp(
            np.zeros(cells.size),
            constraints=LinearConstraint(A, b, b),
            integrality=np.ones(cells.size),
            bounds=Bounds(
                np.maximum(np.where(sec[cells], h, 0), lower[cells]),
                np.minimum(np.where(sec[cells], np.inf, h - 1), upper[cells].astype(float)),
            ),
        )
        if res.status != 0 or res.x is None:
            boxed = " within the a-priori bounds" if apriori else ""
            raise _fail(
                f"no completion of the suppressed cells (primary < {h}, secondary >= {h}"
                f"{boxed}) adds up to the published margins"
            )
        x[cells] = np.round(res.x).astype(np.int64)
    up_int = np.full(n, NO_UPPER, dtype=np.int64)
    up_int[np.isfinite(upper)] = upper[np.isfinite(upper)]
    table = MarginTable(
        x.reshape(shape),
        **kw,
        **mask,
        totals=totals,
        lower=lower.reshape(shape),
        upper=up_int.reshape(shape),
    )
    coords = np.unravel_index(np.arange(n), shape)
    cols = [np.array(lv, dtype=object)[c] for lv, c in zip(levels, coords, strict=True)]
    return table, [tuple(str(v) for v in t) for t in zip(*cols, strict=True)]
