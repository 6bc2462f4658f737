r"""Which margins are published: their names, parsed, and their sums.

A margin is named by the dimensions it keeps (:mod:`persuasive.margins.table`): ``(0,)`` the
row totals of a 2-D table, ``(1,)`` the column totals, ``()`` the grand total. Split from
:mod:`persuasive.margins.table`, which re-exports :data:`Margin`, :data:`ALIASES`,
:func:`parse_margins` and :func:`margin_sums`.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

import numpy as np
from numpy.typing import NDArray

from persuasive.errors import ValidationError

__all__ = ["ALIASES", "Margin", "margin_sums", "parse_margins"]

Margin = tuple[int, ...]

#: Two-dimensional aliases accepted by :func:`parse_margins`.
ALIASES: dict[str, Margin] = {"rows": (0,), "cols": (1,), "columns": (1,), "total": ()}


def _dim_position(token: Any, dims: Sequence[str]) -> int:
    if isinstance(token, (int, np.integer)) and not isinstance(token, bool):
        pos = int(token)
    elif isinstance(token, str) and token in dims:
        pos = list(dims).index(token)
    elif isinstance(token, str) and re.fullmatch(r"-?[0-9]+", token.strip()):
        pos = int(token)  # ASCII digits only: str.isdigit() is also true for '²', int() is not
    else:
        raise ValidationError(
            f"margins names a missing dimension {token!r}; the table's dimensions are "
            f"{list(dims)} (names or positions 0..{len(dims) - 1})"
        )
    if not 0 <= pos < len(dims):
        raise ValidationError(
            f"margins names a missing dimension {pos}; positions must be in 0..{len(dims) - 1} "
            f"(dimensions {list(dims)})"
        )
    return pos


def parse_margins(spec: Any, dims: Sequence[str]) -> tuple[Margin, ...]:
    """Parse a set of published margins into sorted tuples of kept dimension positions.

    Parameters
    ----------
    spec : str or sequence
        ``"rows,cols,total"`` (2-D aliases), ``"a+b,c"`` (kept dimensions joined by ``+``, by
        name or position; ``total`` or ``""`` for the grand total), or a sequence of sequences
        of names / positions. ``None`` means no margins.
    dims : sequence of str
        The dimension names of the table.

    Examples
    --------
    >>> parse_margins("rows,cols,total", ["row", "col"])
    ((), (0,), (1,))
    >>> parse_margins([["a", "b"], ["c"]], ["a", "b", "c"])   # by size, then position
    ((2,), (0, 1))
    """
    if spec is None:
        return ()
    items: list[Any]
    if isinstance(spec, str):
        items = [s.strip() for s in spec.split(",")] if spec.strip() else []
    elif isinstance(spec, Sequence):
        items = list(spec)
    else:
        raise ValidationError(
            f"margins must be a string such as 'rows,cols,total' or a sequence of dimension "
            f"groups; got {spec!r}"
        )
    out: set[Margin] = set()
    for item in items:
        if isinstance(item, str):
            name = item.strip()
            if name in ALIASES and name not in dims:
                if len(dims) != 2 and name != "total":
                    raise ValidationError(
                        f"margins alias {name!r} is only for 2-D tables; this table has "
                        f"dimensions {list(dims)}: name the kept dimensions, e.g. 'a+b'"
                    )
                out.add(ALIASES[name])
                continue
            tokens: list[Any] = [t for t in name.split("+") if t.strip()]
        elif isinstance(item, (int, np.integer)):
            tokens = [item]
        else:
            tokens = list(item)
        pos = tuple(sorted({_dim_position(t, dims) for t in tokens}))
        if len(pos) == len(dims):
            raise ValidationError(
                f"margins entry {item!r} keeps every dimension: that is the table itself, "
                "not a margin; keep fewer dimensions"
            )
        out.add(pos)
    return tuple(sorted(out, key=lambda m: (len(m), m)))


def margin_sums(counts: NDArray[Any], margin: Margin) -> NDArray[np.int64]:
    """The margin of ``counts`` keeping the dimensions in ``margin`` (an int64 array)."""
    drop = tuple(a for a in range(counts.ndim) if a not in margin)
    return np.asarray(counts.sum(axis=drop), dtype=np.int64).reshape(
        [counts.shape[a] for a in margin]
    )
