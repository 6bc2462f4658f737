r"""The publication of a table with margins, and the data-independent claim of its certificate.

A table released with exact margins (:mod:`persuasive.release.margins`) is certified from
**what was published** alone (:mod:`persuasive.report.kinds.margins`): this module reads the
published table and margins, normalises them into the **canonical publication** —
``{"keys", "count", "cells": [[labels..., count or null, status or null], ...], "margins":
[[name, labels or null..., total], ...]}`` with every label written as the string the published
CSV holds, both lists sorted, so that its hash does not depend on row order or on CSV versus
Parquet — and rebuilds a table consistent with it (an integer completion of the suppressed
cells, by MILP), on which the certificate's per-cell bounds are computed.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
from numpy.typing import NDArray

from persuasive.errors import ValidationError
from persuasive.report.certificate import canonical, sha256_of

BASIS = (
    "exact supremum over the class by sufficiency: one posterior for every member, the "
    "supremum attained at an end of the mean range (Bon et al. 2026; docs/margins.md)"
)
#: The published table's column naming each suppressed cell ``primary`` or ``secondary``.
STATUS = "suppressed"
STATUSES = ("primary", "secondary")
NOTES = (
    "The Receiver is assumed to know which suppressed cells are primary (count < h) and which "
    "secondary (count >= h): the published table says so.",
    "The certified κ bounds the loss for every table consistent with the publication; it is "
    "recomputed from the published files alone (persuasive verify CERT --published DIR).",
    "The class is an assumption: priors outside it (e.g. a cell-specific mean that the "
    "published margins do not carry) are not covered.",
)


def class_statement(receiver: Any) -> str:
    """The prior class of a Poisson / negative-binomial Receiver model once margins are out."""
    d = receiver.describe()
    fam = "Poisson" if d["model"] == "poisson" else f"negative binomial of size {d['size']!r}"
    return (
        f"independent cells, each {fam} with mean in [{d['mean_min']!r}, {d['mean_max']!r}], "
        "natural parameters log-linear in the published margins"
    )


def margins_claim(
    receiver: Any, *, h: int, r: int, margins: Sequence[str], target_kappa: float | None
) -> dict[str, Any]:
    """The data-independent claim of a margins certificate."""
    return canonical(
        {
            "receiver": receiver.describe(),
            "class": class_statement(receiver),
            "score": {"type": "small_cell_log", "r": int(r)},
            "h": int(h),
            "r": int(r),
            "margins": list(margins),
            "target_kappa": target_kappa,
        }
    )


# ------------------------------------------------------------------------------ publication


@dataclass(frozen=True, eq=False)
class Publication:
    """The published files as strings: ``cells`` (keys, count, status) and ``margins``."""

    keys: tuple[str, ...]
    count: str
    cells: pl.DataFrame
    margins: pl.DataFrame

    def document(self) -> dict[str, Any]:
        """The canonical publication (see the module docstring)."""
        k = list(self.keys)
        cells = sorted(self.cells.select(*k, self.count, STATUS).rows(), key=_sort_key)
        totals = sorted(self.margins.select("margin", *k, "total").rows(), key=_sort_key)
        return {"keys": k, "count": self.count, "cells": cells, "margins": totals}

    def sha256(self) -> str:
        return sha256_of(self.document())


def _sort_key(row: Sequence[Any]) -> tuple[tuple[int, str], ...]:
    return tuple((0, "") if x is None else (1, str(x)) for x in row)


def publication_of(
    cells: pl.DataFrame, margins: pl.DataFrame, keys: Sequence[str], count: str
) -> Publication:
    """Normalise published frames: labels as strings, counts and totals as Int64."""
    ks = tuple(keys)
    for name, frame, need in (
        ("published table", cells, [*ks, count, STATUS]),
        ("published margins", margins, ["margin", *ks, "total"]),
    ):
        missing = [c for c in need if c not in frame.columns]
        if missing:
            raise ValidationError(
                f"{name}: no column {missing[0]!r}; it has {frame.columns} (need {need})"
            )
    strs = [pl.col(c).cast(pl.String) for c in ks]
    c = cells.select(*strs, pl.col(STATUS).cast(pl.String)).insert_column(
        len(ks), _ints(cells, count)
    )
    return Publication(ks, count, c, normalise_margins(margins, ks))


def normalise_margins(frame: pl.DataFrame, keys: Sequence[str]) -> pl.DataFrame:
    """A margins frame (``margin``, keys, ``total``) with string labels and Int64 totals."""
    missing = [c for c in ["margin", *keys, "total"] if c not in frame.columns]
    if missing:
        raise ValidationError(
            f"margins file: no column {missing[0]!r}; need margin, {', '.join(keys)}, total"
        )
    strs = [pl.col(c).cast(pl.String) for c in ("margin", *keys)]
    return frame.select(*strs).with_columns(_ints(frame, "total"))


def _ints(frame: pl.DataFrame, col: str) -> pl.Series:
    """A column of counts as Int64 (nulls kept); a ValidationError naming a bad value."""
    s = frame[col]
    if s.dtype.is_float():
        v = pl.col(col)
        parsed = frame.select(pl.when(v % 1 == 0).then(v.cast(pl.Int64, strict=False))).to_series()
    else:
        t = pl.col(col).cast(pl.String)  # whole numbers written with digits only, as any count
        parsed = frame.select(
            pl.when(t.str.contains(r"^[0-9]+$")).then(t.str.to_integer(strict=False))
        ).to_series()
    bad = ((parsed.is_null() & s.is_not_null()) | (parsed < 0).fill_null(False)).arg_true()
    if bad.len():
        i = int(bad[0])
        raise ValidationError(f"column {col!r} row {i}: {s[i]!r} is not a count (an integer >= 0)")
    return parsed.alias(col)


def read_frame(path: Path) -> pl.DataFrame:
    """A published CSV (every column as text) or Parquet file (a column named twice refused)."""
    from persuasive.files.reading import header

    suffix = path.suffix.lower()
    if suffix in (".csv", ".parquet", ".pq"):
        header(path, role="published file")
    try:
        if suffix == ".csv":
            return pl.read_csv(path, infer_schema=False)
        if suffix in (".parquet", ".pq"):
            return pl.read_parquet(path)
    except (pl.exceptions.PolarsError, OSError) as exc:
        first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
        raise ValidationError(f"cannot read published file '{path}': {first}") from None
    raise ValidationError(f"published file '{path}' must be .csv or .parquet")


def read_publication(
    published: str | os.PathLike[str] | Sequence[str | os.PathLike[str]],
    keys: Sequence[str],
    count: str,
) -> Publication:
    """Read the published table and margins: a release folder, or the two files."""
    items = [published] if isinstance(published, (str, os.PathLike)) else list(published)
    paths: list[Path] = []
    for item in map(Path, items):
        if item.is_dir():
            paths += [p for p in sorted(item.iterdir()) if p.stem in ("released", "margins")]
        elif item.is_file():
            paths.append(item)
        else:
            raise ValidationError(f"--published '{item}' not found")
    frames = [read_frame(p) for p in paths if p.suffix.lower() in (".csv", ".parquet", ".pq")]
    table = [f for f in frames if STATUS in f.columns]
    marg = [f for f in frames if "margin" in f.columns and "total" in f.columns]
    if len(table) != 1 or len(marg) != 1:
        raise ValidationError(
            "--published must give one published table (with a 'suppressed' column) and one "
            f"margins file (columns 'margin', 'total'); found {len(table)} and {len(marg)} in "
            f"{[str(p) for p in paths]}"
        )
    return publication_of(table[0], marg[0], keys, count)


def _fail(what: str) -> ValidationError:
    return ValidationError(f"published table: {what}")


def structural_count(pub: Publication) -> int:
    """The combinations of the published levels that are not published cells (the structural
    zeros of a table published without them); rows with a missing key are not counted."""
    frame = pub.cells.select(pub.keys).drop_nulls().unique()
    size = int(np.prod([frame[k].n_unique() for k in pub.keys]))
    return size - frame.height


def _grid(
    pub: Publication, absent: str = "zero", hierarchy: Sequence[str] = ()
) -> tuple[list[list[str]], tuple[int, ...], NDArray[np.intp]]:
    """Levels, shape and flat index of each published row. The combinations missing from the
    file are structural zeros: allowed with ``absent="structural"``, and with a hierarchy the
    ones that do not nest; with ``absent="zero"`` every other combination must be published."""
    from persuasive.margins.hierarchy import (
        check_nesting,
        nesting_combinations,
        parse_hierarchy,
    )

    keys, frame = list(pub.keys), pub.cells
    if frame.select(keys).null_count().sum_horizontal().item():
        raise _fail("a key is missing (empty) in some row")
    levels = [sorted(frame[k].unique().to_list()) for k in keys]
    shape = tuple(len(lv) for lv in levels)
    idx = tuple(
        np.searchsorted(np.array(lv, dtype=object), frame[k].to_numpy())
        for k, lv in zip(keys, levels, strict=True)
    )
    flat = np.ravel_multi_index(idx, shape) if frame.height else np.zeros(0, np.intp)
    if np.unique(flat).size != flat.size:
        raise _fail(f"a key combination is published twice ({frame.height} rows)")
    size = int(np.prod(shape))
    chains = parse_hierarchy(list(hierarchy), keys)
    if chains:
        try:
            check_nesting(frame, chains)
        except ValidationError as exc:
            raise _fail(str(exc)) from None
        nesting = nesting_combinations(frame, keys, chains).height
        if absent == "zero" and frame.height != nesting:
            raise _fail(
                f"{nesting - frame.height} of the {nesting} combinations that nest in the "
                f"hierarchy {', '.join(hierarchy)} are not published, but the claim states that "
                "absent combinations are counts of zero (claim.absent = 'zero'): each must be a "
                "published cell"
            )
    elif absent == "zero" and frame.height != size:
        raise _fail(
            f"need each of the {size} key combinations exactly once; got {frame.height} rows "
            f"({size - frame.height} missing, but the claim states that absent combinations "
            "are counts of zero, claim.absent = 'zero')"
        )
    return levels, shape, np.asarray(flat, dtype=np.intp)


def margin_totals(
    frame: pl.DataFrame,
    keys: Sequence[str],
    margins: tuple[tuple[int, ...], ...],
    names: list[str],
    levels: list[Any],
) -> dict[tuple[int, ...], NDArray[np.int64]]:
    """Published totals (a margins frame with string labels) as arrays, margin by margin;
    ``levels[a]`` are the labels (strings) of dimension a. ValidationError naming what is bad."""
    unknown = sorted(set(frame["margin"].drop_nulls().to_list()) - set(names))
    if unknown or frame["margin"].null_count() or frame["total"].null_count():
        raise ValidationError(
            f"published margins: margin {unknown[:1] or 'empty'} is not among the margins "
            f"{names}, or a total is empty"
        )
    out = {}
    where = [{lab: i for i, lab in enumerate(lv)} for lv in levels]
    for m, name in zip(margins, names, strict=True):
        part = frame.filter(pl.col("margin") == name)
        shape = tuple(len(levels[a]) for a in m)
        tot = np.full(shape, -1, dtype=np.int64)
        for row in part.iter_rows(named=True):
            pos = []
            for a, k in enumerate(keys):
                lab = row[k]
                if (a in m) != (lab is not None) or (lab is not None and lab not in where[a]):
                    raise ValidationError(
                        f"published margins: margin {name!r} has a bad {k!r} label {lab!r}"
                    )
                if a in m:
                    pos.append(where[a][lab])
            if tot[tuple(pos)] != -1:
                raise ValidationError(f"published margins: {name!r} lists an entry twice")
            tot[tuple(pos)] = row["total"]
        if np.any(tot < 0):
            raise ValidationError(
                f"published margins: margin {name!r} misses an entry or has negative totals"
            )
        out[m] = tot
    return out


# the completion of the published table, split out for size (re-exported)
from persuasive.report.margins_completion import publication_table  # noqa: E402, F401
