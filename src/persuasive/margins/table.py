r"""A k-D table of counts with a suppression pattern and exactly published margins.

A *margin* is named by the dimensions it keeps: in a table :math:`x \in \mathbb N^{d_1 \times
\dots \times d_k}` the margin keeping :math:`S \subseteq \{1..k\}` is

.. math:: x_{S}(j_S) = \sum_{i \,:\, i_S = j_S} x_i ,

so ``(0,)`` is the row totals of a 2-D table, ``(1,)`` the column totals and ``()`` the grand
total. Cells are flattened in C order everywhere (``np.ravel_multi_index``).

**Known cells** (``known``) are cells whose value the Receiver knows before the release: the
a-priori information of τ-Argus, or *structural zeros* (``structural``: combinations known to
be impossible, count 0, never published as cells). A known cell is never suppressed (neither
primary nor secondary, and the rule "every count below h is suppressed" exempts it): hiding a
cell the Receiver knows and computing its posterior as if it were unknown would understate κ.
For the posterior, the audit and the attacker a known cell is a published cell: its value is
fixed and subtracted from the margins (``docs/margins_release.md``, "What the Receiver already
knows").

**A-priori bounds** (``lower``, ``upper``): inclusive bounds :math:`a_j \le x_j \le \bar a_j` the
Receiver knows before the release (the a-priori file of τ-Argus). They must hold for the true
counts (a bound contradicting a count is an input error); a box with :math:`a_j = \bar a_j` pins the
cell, which is then a known cell. The posterior intersects each suppressed cell's support with
its box and the score conditions the prior on it (:mod:`persuasive.margins.apriori`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from persuasive import _validation as v
from persuasive.errors import ValidationError
from persuasive.margins.known import NO_UPPER, check_bounds
from persuasive.margins.margin_spec import (  # re-exported
    ALIASES,
    Margin,
    margin_sums,
    parse_margins,
)

__all__ = ["ALIASES", "Margin", "MarginTable", "margin_sums", "parse_margins"]


#: The largest total of a table: every margin entry is at most the grand total, and margins
#: are summed in 64-bit integers.
MAX_TOTAL = int(np.iinfo(np.int64).max)


def _int_counts(counts: ArrayLike) -> NDArray[np.int64]:
    """The counts as int64, exactly: an integer array is never converted through float64
    (which would change counts above 2**53), and the counts must add up to at most
    :data:`MAX_TOTAL`, so that every margin total is exact."""
    raw = np.asarray(counts)
    if raw.dtype.kind in "iu" and raw.ndim > 0:
        if raw.size and raw.dtype.kind == "u" and int(raw.max()) > MAX_TOTAL:
            bad = tuple(int(b) for b in np.unravel_index(int(np.argmax(raw)), raw.shape))
            raise ValidationError(
                f"counts: entry {bad} is {int(raw[bad])}, above 2**63 - 1; counts are 64-bit "
                "integers"
            )
        if raw.size and raw.dtype.kind == "i" and int(raw.min()) < 0:
            v.array("counts", raw, nonneg=True)  # its message for a negative entry
        a = raw.astype(np.int64)
    else:
        f = v.array("counts", counts, nonneg=True)
        if f.ndim == 0:
            raise ValidationError(f"counts must be an array with at least one dimension; got {f}")
        if not np.all(f == np.round(f)):
            bad = np.argwhere(f != np.round(f))[0]
            raise ValidationError(
                f"counts must be non-negative integers; entry {tuple(int(b) for b in bad)} is "
                f"{f[tuple(bad)]}"
            )
        a = f.astype(np.int64)
    high = int(np.sum(a >> 32, dtype=np.int64))  # exact for fewer than 2**32 cells
    total = (high << 32) + int(np.sum(a & 0xFFFFFFFF, dtype=np.int64))
    if total > MAX_TOTAL:
        raise ValidationError(
            f"counts add up to {total}, above 2**63 - 1 = {MAX_TOTAL}: the margin totals would "
            "not be exact in 64-bit integers; check the count column (a total that large is "
            "not a count of people or units)"
        )
    return a


def _mask(name: str, value: Any, shape: tuple[int, ...]) -> NDArray[np.bool_]:
    m = np.asarray(value)
    if m.shape != shape or m.dtype != np.bool_:
        raise ValidationError(
            f"{name} must be a boolean array of the table's shape {shape}; got dtype "
            f"{m.dtype} and shape {m.shape}"
        )
    return m.copy()


@dataclass(frozen=True, eq=False)
class MarginTable:
    """A count table, its suppression pattern and its exactly published margins.

    Parameters
    ----------
    counts : array_like
        Non-negative integer counts, shape ``(d1, ..., dk)``.
    h : int
        Primary suppression threshold: a *primary* suppressed cell has count < h.
    margins : str or sequence
        The published margins (see :func:`parse_margins`).
    dims : sequence of str, optional
        Dimension names (default ``dim0, dim1, ...``; ``row, col`` in 2-D).
    suppressed : bool array, optional
        Suppressed cells (default ``counts < h``).
    secondary : bool array, optional
        Suppressed cells with count >= h hidden to protect others (the Receiver knows x >= h).
    totals : mapping, optional
        Published totals to check: ``margin -> array``; they must equal the table's sums.
    known : bool array, optional
        Cells whose value the Receiver knows a priori (never suppressed; default none).
    structural : bool array, optional
        Structural zeros: known cells of count 0 that are not published as cells (they are
        added to ``known``; default none).
    lower, upper : int arrays, optional
        A-priori bounds per cell (inclusive, at most :data:`~persuasive.margins.known.MAX_BOUND`
        = 2**53; default 0 and :data:`~persuasive.margins.known.NO_UPPER`, i.e. none). Cells
        with ``lower == upper`` are added to ``known``.

    Examples
    --------
    >>> t = MarginTable([[1, 5, 7], [6, 8, 9]], h=3, margins="rows,cols")
    >>> t.dims, t.margins, t.suppressed_index.tolist(), t.margin_names()
    (('row', 'col'), ((0,), (1,)), [0], ['row', 'col'])
    >>> k = MarginTable([[1, 5, 7], [6, 0, 9]], h=3, margins="rows,cols",
    ...                 structural=[[False, False, False], [False, True, False]])
    >>> k.suppressed_index.tolist(), int(k.known.sum())   # the structural zero is not hidden
    ([0], 1)
    """

    counts: Any
    h: int
    margins: tuple[Margin, ...] = ()
    dims: tuple[str, ...] = ()
    suppressed: Any = field(default=None, repr=False)
    secondary: Any = field(default=None, repr=False)
    totals: Any = field(default=None, repr=False)
    known: Any = field(default=None, repr=False)
    structural: Any = field(default=None, repr=False)
    lower: Any = field(default=None, repr=False)
    upper: Any = field(default=None, repr=False)

    def __post_init__(self) -> None:
        counts = _int_counts(self.counts)
        h = v.integer("h", self.h, low=1)
        k = counts.ndim
        if self.dims:
            dims = tuple(str(d) for d in self.dims)
            if len(dims) != k or len(set(dims)) != k:
                raise ValidationError(
                    f"dims must be {k} distinct names (one per dimension of counts); got "
                    f"{list(self.dims)}"
                )
        else:
            dims = ("row", "col") if k == 2 else tuple(f"dim{a}" for a in range(k))
        margins = parse_margins(self.margins, dims)
        none = np.zeros(counts.shape, dtype=bool)
        structural = (
            none if self.structural is None else _mask("structural", self.structural, counts.shape)
        )
        lower, upper = check_bounds(self.lower, self.upper, counts, structural)
        known = (
            structural
            | (lower == upper)
            | (none if self.known is None else _mask("known", self.known, counts.shape))
        )
        if np.any(structural & (counts != 0)):
            idx = tuple(int(b) for b in np.argwhere(structural & (counts != 0))[0])
            raise ValidationError(
                f"structural: a structural zero must have count 0; cell {idx} has count "
                f"{counts[idx]}"
            )
        sup = (
            (counts < h) & ~known
            if self.suppressed is None
            else _mask("suppressed", self.suppressed, counts.shape)
        )
        sec = (
            np.zeros(counts.shape, dtype=bool)
            if self.secondary is None
            else _mask("secondary", self.secondary, counts.shape)
        )
        if np.any(sec & ~sup):
            raise ValidationError("secondary must be a subset of suppressed (a hidden cell)")
        if np.any(sup & known):
            idx = tuple(int(b) for b in np.argwhere(sup & known)[0])
            what = "a structural zero" if structural[idx] else "known to the Receiver a priori"
            raise ValidationError(
                f"suppressed: cell {idx} is {what}, and a known cell is never suppressed: hiding "
                "a cell the Receiver knows and computing its posterior as if it were unknown "
                "would understate kappa"
            )
        for name, bad in (
            ("a primary suppressed cell must have count < h", sup & ~sec & (counts >= h)),
            ("a secondary suppressed cell must have count >= h", sec & (counts < h)),
            (
                "every cell with count < h must be suppressed (unless known)",
                ~sup & ~known & (counts < h),
            ),
        ):
            if np.any(bad):
                idx = tuple(int(b) for b in np.argwhere(bad)[0])
                raise ValidationError(
                    f"suppressed: {name} (h = {h}); cell {idx} has count {counts[idx]}"
                )
        totals = {m: margin_sums(counts, m) for m in margins}
        if self.totals is not None:
            self._check_totals(totals, dims)
        object.__setattr__(self, "counts", counts)
        object.__setattr__(self, "h", h)
        object.__setattr__(self, "dims", dims)
        object.__setattr__(self, "margins", margins)
        object.__setattr__(self, "suppressed", sup)
        object.__setattr__(self, "secondary", sec)
        object.__setattr__(self, "totals", totals)
        object.__setattr__(self, "known", known)
        object.__setattr__(self, "structural", structural)
        object.__setattr__(self, "lower", lower)
        object.__setattr__(self, "upper", upper)

    def _check_totals(self, own: dict[Margin, NDArray[np.int64]], dims: tuple[str, ...]) -> None:
        assert self.totals is not None
        if not isinstance(self.totals, Mapping):
            raise ValidationError(f"totals must be a mapping margin -> array; got {self.totals!r}")
        for key, given in self.totals.items():
            (m,) = parse_margins([key] if not isinstance(key, str) else key, dims) or ((),)
            if m not in own:
                raise ValidationError(
                    f"totals gives margin {key!r}, which is not among the published margins "
                    f"{[list(x) for x in own]}"
                )
            arr = v.array(f"totals[{key!r}]", given)
            if np.any(arr < 0):
                raise ValidationError(
                    f"totals[{key!r}] has negative totals (min {arr.min():g}); totals are counts"
                )
            if arr.shape != own[m].shape or np.any(arr != own[m]):
                diff = (
                    np.argwhere(arr.reshape(own[m].shape) != own[m])
                    if arr.size == own[m].size
                    else None
                )
                where = (
                    ""
                    if diff is None or diff.size == 0
                    else f" at index {tuple(int(i) for i in diff[0])}"
                )
                shown = [int(x) if float(x).is_integer() else float(x) for x in arr.ravel()]
                raise ValidationError(
                    f"totals[{key!r}]: margins do not add up to the table{where}: published "
                    f"{shown}, sums of counts {[int(x) for x in own[m].ravel()]}"
                )

    # ------------------------------------------------------------------ views
    @property
    def shape(self) -> tuple[int, ...]:
        return tuple(self.counts.shape)

    @property
    def n_cells(self) -> int:
        return int(self.counts.size)

    @property
    def suppressed_index(self) -> NDArray[np.intp]:
        """Flat C-order indices of the suppressed cells, sorted."""
        return np.flatnonzero(self.suppressed.ravel())

    @property
    def hideable(self) -> NDArray[np.bool_]:
        """Cells a pattern may still hide: released and not known (table shape)."""
        return np.asarray(~self.suppressed & ~self.known)

    @property
    def has_apriori(self) -> bool:
        """Some cell has an a-priori bound (``lower > 0`` or a finite ``upper``)."""
        return bool(np.any(self.lower > 0) or np.any(self.upper != NO_UPPER))

    @property
    def box(self) -> tuple[NDArray[np.int64], NDArray[np.int64]] | None:
        """The a-priori bounds as flat ``(lower, upper)`` (C order), None when there are none."""
        return (self.lower.ravel(), self.upper.ravel()) if self.has_apriori else None

    def margin_names(self) -> list[str]:
        """Human names of the margins: ``"total"`` or the kept dimensions joined by ``+``."""
        return ["+".join(self.dims[a] for a in m) if m else "total" for m in self.margins]

    def with_suppressed(self, mask: ArrayLike, secondary: ArrayLike | None = None) -> MarginTable:
        """The same table, margins and known cells with another suppression pattern (validated:
        a pattern hiding a known cell raises a ValidationError)."""
        out = MarginTable(
            self.counts,
            h=self.h,
            margins=self.margins,
            dims=self.dims,
            suppressed=np.asarray(mask, dtype=bool),
            secondary=None if secondary is None else np.asarray(secondary, dtype=bool),
            known=self.known,
            structural=self.structural,
            lower=self.lower,
            upper=self.upper,
        )
        if hasattr(self, "levels"):
            object.__setattr__(out, "levels", self.levels)
        return out

    @classmethod
    def from_frame(
        cls,
        frame: Any,
        *,
        keys: Sequence[str],
        count: str,
        h: int,
        margins: Any = None,
        absent: str | None = None,
        known: Any = None,
        apriori: Any = None,
    ) -> MarginTable:
        """Build from a long polars DataFrame (one row per cell of a complete grid).

        The levels of each key are sorted; ``levels`` (name -> labels) is attached. With
        ``absent="zero"`` the frame may omit combinations of the observed levels: each is a
        cell of count 0; with ``absent="structural"`` each is a structural zero (a known cell
        of count 0, not published; ``docs/release.md``, "Sparse tables and structural zeros").
        ``known`` names a boolean column marking the cells the Receiver knows a priori, or is a
        frame of their key values (:func:`~persuasive.margins.known.known_cells`);
        ``apriori`` is a frame or file of a-priori bounds
        (:func:`~persuasive.margins.known.apriori_bounds`).
        """
        from persuasive.margins.table_frame import frame_grid

        keys = [keys] if isinstance(keys, str) else list(keys)
        arr, levels, structural, known_mask, lower, upper = frame_grid(
            frame, keys, count, absent, known, apriori
        )
        table = cls(
            arr,
            h=h,
            margins=margins,
            dims=tuple(keys),
            known=known_mask,
            structural=structural,
            lower=lower,
            upper=upper,
        )
        object.__setattr__(table, "levels", levels)
        return table
