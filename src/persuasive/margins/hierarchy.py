r"""Hierarchical classifications: one key column per level, every subtotal a published margin.

A classification with levels — region → district, say — is written as one key column per level
(``region``, ``district``), each district in exactly one region. The table over the keys
``region × district`` then has a cell for every pair, and the pairs that do not nest (a district
outside its region) are **structural zeros**: combinations known to everyone to be impossible,
known cells of count 0 that are never published nor suppressed
(:class:`~persuasive.margins.MarginTable`'s ``structural``). With them the subtotals are
ordinary margins:

* the margin keeping ``region`` is the region subtotals, ``total`` the grand total;
* the margin keeping ``district`` is the district totals — in a table ``region × district``
  alone that is every cell, so it is refused (:func:`check_margins`); with another key
  (``region × district × sex``) it is the district totals over sex.

So the posterior, the audit, the attacker and the planner work over the whole hierarchy
unchanged: every published subtotal is one more linear constraint, and the structural cells are
subtracted from it as known zeros (``docs/margins_release.md``, "Hierarchies").

A hierarchy is written ``"region>district"`` (the child after ``>``; ``"a>b>c"`` for three
levels; several independent classifications separated by commas). The nesting is read from the
data: each child label must occur with exactly one parent label (an error names the first that
does not), and the nesting combinations are the observed tuples of the levels.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from typing import Any

import polars as pl

from persuasive.errors import ValidationError

__all__ = [
    "Hierarchy",
    "check_margins",
    "check_nesting",
    "fill_hierarchy",
    "hierarchy_names",
    "nesting_combinations",
    "parse_hierarchy",
]

#: Chains of key columns, outermost level first: ``(("region", "district"),)``.
Hierarchy = tuple[tuple[str, ...], ...]


def parse_hierarchy(spec: Any, keys: Sequence[str]) -> Hierarchy:
    """Parse ``"region>district"`` (or a sequence of such strings, or of sequences of names).

    Examples
    --------
    >>> parse_hierarchy("region>district,age>band", ["region", "district", "age", "band"])
    (('region', 'district'), ('age', 'band'))
    >>> parse_hierarchy(None, ["a"])
    ()
    """
    if spec is None or spec == "" or spec == ():
        return ()
    items: list[Any]
    if isinstance(spec, str):
        items = [s.strip() for s in spec.split(",") if s.strip()]
    elif isinstance(spec, Sequence):
        items = list(spec)
    else:
        raise ValidationError(
            f"hierarchy must be a string such as 'region>district' or a sequence of them; got "
            f"{spec!r:.60}"
        )
    out: list[tuple[str, ...]] = []
    seen: set[str] = set()
    for item in items:
        chain = tuple(
            t.strip() for t in (item.split(">") if isinstance(item, str) else map(str, item))
        )
        if len(chain) < 2 or any(not t for t in chain):
            raise ValidationError(
                f"hierarchy {item!r:.60}: write the levels outermost first, joined by '>', "
                "e.g. 'region>district' (district nested in region)"
            )
        for t in chain:
            if t not in keys:
                raise ValidationError(
                    f"hierarchy names {t!r}, which is not a key; the keys are {list(keys)}"
                )
            if t in seen:
                raise ValidationError(
                    f"hierarchy names the key {t!r} twice; each key is one level of at most one "
                    "classification"
                )
            seen.add(t)
        out.append(chain)
    return tuple(out)


def hierarchy_names(hierarchy: Hierarchy) -> list[str]:
    """The chains as written in a certificate: ``["region>district"]``."""
    return [">".join(chain) for chain in hierarchy]


def check_nesting(cells: pl.DataFrame, hierarchy: Hierarchy) -> None:
    """Each child label occurs with exactly one parent label (a ValidationError names the first
    child found under two parents, with two of them)."""
    for chain in hierarchy:
        for parent, child in itertools.pairwise(chain):
            pairs = cells.select(parent, child).unique()
            many = (
                pairs.group_by(child)
                .agg(pl.col(parent).sort().alias("parents"), pl.len().alias("n"))
                .filter(pl.col("n") > 1)
                .sort(pl.col(child).cast(pl.String))
            )
            if many.height:
                row = many.row(0, named=True)
                two = ", ".join(repr(p) for p in row["parents"][:2])
                raise ValidationError(
                    f"hierarchy {'>'.join(chain)}: {child} {row[child]!r} lies in "
                    f"{row['n']} {parent} levels ({two}); in a hierarchy each {child} belongs to "
                    f"exactly one {parent}. Recode it (e.g. one label per {parent}: "
                    f"'{row['parents'][0]}/{row[child]}'), or drop the hierarchy"
                )


def nesting_combinations(
    cells: pl.DataFrame, keys: Sequence[str], hierarchy: Hierarchy
) -> pl.DataFrame:
    """Every combination of the keys that nests: the observed tuples of each chain's levels,
    crossed with each other key's observed levels (columns in the order of ``keys``)."""
    in_chain = {k for chain in hierarchy for k in chain}
    parts = [cells.select(list(chain)).unique() for chain in hierarchy]
    parts += [cells.select(k).unique() for k in keys if k not in in_chain]
    out = parts[0]
    for p in parts[1:]:
        out = out.join(p, how="cross")
    return out.select(list(keys))


def fill_hierarchy(
    cells: pl.DataFrame, keys: Sequence[str], count: str, hierarchy: Hierarchy, absent: str
) -> tuple[pl.DataFrame, int]:
    """The cells of a hierarchical table and its number of structural zeros.

    With ``absent="zero"`` every nesting combination absent from ``cells`` is added as a count
    of zero (a cell, suppressed like any); with ``"structural"`` the cells are kept as they are.
    Every combination of the observed levels that is not returned is a structural zero: the
    non-nesting ones always.

    Examples
    --------
    >>> t = pl.DataFrame({"r": ["A", "A", "B"], "d": ["a1", "a2", "b1"], "n": [3, 0, 4]})
    >>> full, structural = fill_hierarchy(t, ["r", "d"], "n", (("r", "d"),), "zero")
    >>> full.height, structural          # 2 x 3 combinations, 3 that do not nest
    (3, 3)
    """
    check_nesting(cells, hierarchy)
    ks = list(keys)
    out = cells.select(*ks, count)
    if absent == "zero":
        grid = nesting_combinations(cells, ks, hierarchy)
        missing = grid.join(out.select(ks), on=ks, how="anti", nulls_equal=True)
        zeros = missing.with_columns(pl.lit(0, dtype=out.schema[count]).alias(count))
        out = pl.concat([out, zeros], how="vertical")
    size = math.prod(cells.get_column(k).n_unique() for k in ks)
    return out, size - out.height


def check_margins(
    margins: Sequence[tuple[int, ...]], dims: Sequence[str], hierarchy: Hierarchy
) -> None:
    """Refuse a margin that, through the nesting, is the table itself: keeping a child level
    keeps its parents (a district lies in one region), so a margin keeping every key but
    ancestors of kept ones publishes every cell."""
    parent = {c: p for chain in hierarchy for p, c in itertools.pairwise(chain)}
    for m in margins:
        kept = {dims[a] for a in m}
        grown = set(kept)
        for k in kept:
            while k in parent:
                k = parent[k]
                grown.add(k)
        if len(grown) == len(dims):
            name = "+".join(dims[a] for a in m) or "total"
            raise ValidationError(
                f"margins: {name!r} keeps every level of the table once the hierarchy "
                f"{', '.join(hierarchy_names(hierarchy))} is applied (each child lies in one "
                "parent), so it would publish every cell; publish the parents' subtotals "
                "instead (e.g. the outer level and 'total')"
            )
