"""Reading data for a release: user files (CSV or Parquet) and the bundled real data sets.

The real data sets are the CSV files that :mod:`statsmodels` ships inside its wheel, read with
polars: nothing is downloaded.

* :func:`load_cancer_counts` — breast-cancer counts of 301 US counties
  (``statsmodels.datasets.cancer``; columns ``cancer``, the count, and ``population``). The
  data set has no county identifier, so a key column ``county`` = ``"county_001"`` …
  ``"county_301"`` is made from the row order of the bundled file.
* :func:`load_fair` — Fair's (1978) survey of 6366 women on extramarital affairs
  (``statsmodels.datasets.fair``; e.g. ``affairs``, ``religious``, ``occupation``).
* :func:`load_fair_crosstab` — a cross-tabulation of that survey (by default ``religious`` ×
  ``occupation``, 4 × 6 cells; add ``rate_marriage`` for a 4 × 6 × 5 table), one row per cell
  of the complete grid (absent combinations are zero counts): the real table of the margins
  release (``docs/margins_release.md``).

Examples
--------
>>> table = load_cancer_counts()
>>> table.shape, table.columns
((301, 3), ['county', 'cancer', 'population'])
>>> table["county"][0], table["county"][-1], table["cancer"].dtype
('county_001', 'county_301', Int64)
>>> load_fair().height
6366
>>> ct = load_fair_crosstab()
>>> ct.shape, ct.columns, int(ct["n"].sum())
((24, 3), ['religious', 'occupation', 'n'], 6366)
"""

from __future__ import annotations

from pathlib import Path

import polars as pl

from persuasive.errors import ValidationError


def _statsmodels_csv(dataset: str) -> Path:
    import importlib

    module = importlib.import_module(f"statsmodels.datasets.{dataset}")
    path = Path(module.__file__ or "").parent / f"{dataset}.csv"
    if not path.is_file():  # pragma: no cover - a broken statsmodels install
        raise ValidationError(
            f"the data set {dataset!r} is not bundled with this statsmodels install "
            f"(looked for {path}); reinstall statsmodels >= 0.14"
        )
    return path


def load_cancer_counts() -> pl.DataFrame:
    """County breast-cancer counts (statsmodels' ``cancer`` data set), with a key column.

    Returns
    -------
    polars.DataFrame
        301 rows: ``county`` (str, ``"county_001"`` … in the bundled file's row order, since
        the data set names no county), ``cancer`` (Int64, the count of breast-cancer deaths)
        and ``population`` (Int64).
    """
    raw = pl.read_csv(_statsmodels_csv("cancer"))
    n = raw.height
    return raw.select(
        pl.format("county_{}", pl.int_range(1, n + 1).cast(pl.String).str.zfill(3)).alias("county"),
        pl.col("cancer").cast(pl.Int64, strict=True),
        pl.col("population").cast(pl.Int64, strict=True),
    )


def load_fair() -> pl.DataFrame:
    """Fair's affairs survey (statsmodels' ``fair`` data set): 6366 rows, 9 numeric columns.

    ``affairs`` is the time spent in extramarital affairs (a real number ≥ 0); ``religious``
    (1–4) and ``occupation`` (1–6) are coded categories (Int64).
    """
    return pl.read_csv(_statsmodels_csv("fair"))


def load_fair_crosstab(*dims: str, count: str = "n") -> pl.DataFrame:
    """Cross-tabulate Fair's affairs survey by ``dims`` (default religious × occupation).

    Parameters
    ----------
    *dims : str
        Coded columns of :func:`load_fair` (e.g. ``"religious"``, ``"occupation"``,
        ``"rate_marriage"``); default ``("religious", "occupation")``.
    count : str
        Name of the count column.

    Returns
    -------
    polars.DataFrame
        One row per combination of the observed levels of ``dims`` (the complete grid, sorted;
        a combination nobody reported has count 0): ``dims`` (Int64) and ``count`` (Int64).
    """
    keys = list(dims) or ["religious", "occupation"]
    fair = load_fair()
    missing = [d for d in keys if d not in fair.columns]
    if missing or len(set(keys)) != len(keys) or count in keys:
        raise ValidationError(
            f"dims must be distinct columns of the Fair data {fair.columns} (not {count!r}); "
            f"got {keys}"
        )
    grid = fair.select(pl.col(keys[0]).cast(pl.Int64).unique().sort())
    for d in keys[1:]:
        grid = grid.join(fair.select(pl.col(d).cast(pl.Int64).unique().sort()), how="cross")
    counts = fair.select(pl.col(d).cast(pl.Int64) for d in keys).group_by(keys).len(count)
    return (
        grid.join(counts, on=keys, how="left")
        .with_columns(pl.col(count).fill_null(0).cast(pl.Int64))
        .sort(keys)
    )
