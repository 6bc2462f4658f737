r"""The cells of a long frame as the arrays of a :class:`~persuasive.margins.table.MarginTable`.

Split from :mod:`persuasive.margins.table` (``MarginTable.from_frame`` calls it): the grid over
the keys' sorted levels, the counts, the structural zeros of a sparse frame, the known cells and
the a-priori bounds (:mod:`persuasive.margins.known`), each checked with one error naming what
is wrong (``docs/margins_release.md``, "What the Receiver already knows";
``docs/margins_apriori.md``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from numpy.typing import NDArray

from persuasive.errors import ValidationError
from persuasive.margins.known import NO_UPPER, apriori_bounds, known_cells, pl_boolean

__all__ = ["frame_grid"]


def frame_grid(
    frame: Any,
    keys: Sequence[str],
    count: str,
    absent: str | None,
    known: Any,
    apriori: Any,
) -> tuple[
    NDArray[Any],
    dict[str, list[Any]],
    NDArray[np.bool_] | None,
    NDArray[np.bool_] | None,
    NDArray[np.int64] | None,
    NDArray[np.int64] | None,
]:
    """``(counts, levels, structural, known, lower, upper)`` of a long polars frame (None where
    not given); see :meth:`~persuasive.margins.table.MarginTable.from_frame`."""
    keys = list(keys)
    if absent not in (None, "zero", "structural"):
        raise ValidationError(
            f"absent must be None (a complete grid), 'zero' (absent combinations are "
            f"counts of zero) or 'structural' (structural zeros); got {absent!r:.60}"
        )
    need = [*keys, count, *([known] if isinstance(known, str) else [])]
    missing = [c for c in need if c not in frame.columns]
    if missing:
        raise ValidationError(f"frame has no column {missing[0]!r}; columns {frame.columns}")
    levels = {k: sorted(frame[k].unique().to_list()) for k in keys}
    shape = tuple(len(levels[k]) for k in keys)
    size = int(np.prod(shape))
    sparse = absent in ("zero", "structural") and frame.height < size
    if sparse and size > 10**8:
        raise ValidationError(
            f"the grid over {keys} has {size:,} combinations, above the limit of "
            "100,000,000 cells; use fewer or coarser keys"
        )
    if (frame.height != size and not sparse) or frame.select(keys).is_duplicated().any():
        raise ValidationError(
            f"frame must hold each of the {size} key combinations exactly once (a complete "
            f"grid over {keys}; absent='zero' makes absent combinations counts of zero); "
            f"got {frame.height} rows"
        )
    idx = tuple(
        np.searchsorted(np.array(levels[k], dtype=object), frame[k].to_numpy()) for k in keys
    )
    c = frame[count]
    # integer counts stay integers (a count above 2**53 would change through float64); an
    # unsigned column keeps its type, so that MarginTable names a count above 2**63 - 1
    exact = c.dtype.is_integer() and not c.null_count()
    kind = (np.uint64 if str(c.dtype) == "UInt64" else np.int64) if exact else np.float64
    arr = np.zeros(shape, dtype=kind)
    arr[idx] = c.to_numpy()
    structural = None
    if absent == "structural" and sparse:
        structural = np.ones(shape, dtype=bool)
        structural[idx] = False
    known_mask = None
    if isinstance(known, str):
        col = frame[known]
        if col.dtype != pl_boolean() or col.null_count():
            raise ValidationError(
                f"known: column {known!r} must be boolean (true for a cell the Receiver "
                f"knows), with no missing value; got {col.dtype}"
            )
        known_mask = np.zeros(shape, dtype=bool)
        known_mask[idx] = col.to_numpy()
    elif known is not None:
        known_mask = known_cells(known, keys, levels, structural)
    lower = upper = None
    if apriori is not None:
        lower, upper = apriori_bounds(apriori, keys, levels, structural)
        bad = np.argwhere((arr < lower) | (arr > upper))
        if bad.size:  # name the cell by its labels (MarginTable knows only positions)
            cell = tuple(int(i) for i in bad[0])
            shown = ", ".join(f"{k}={levels[k][i]!r}" for k, i in zip(keys, cell, strict=True))
            top = "none" if upper[cell] == NO_UPPER else str(int(upper[cell]))
            raise ValidationError(
                f"apriori: the cell ({shown}) has count {float(arr[cell]):g}, outside its a-priori "
                f"bounds [{int(lower[cell])}, {top}]: bounds must hold for the true table "
                "(lower <= count <= upper)"
            )
    return arr, levels, structural, known_mask, lower, upper
