"""Write ``grunfeld.csv``, the magnitude microdata of ``docs/magnitude.md`` (run once; the CSV
is committed).

Real public data that :mod:`statsmodels` ships in its wheel (nothing is downloaded): Grunfeld's
(1958) investment data, gross investment ``invest`` (millions of 1947 dollars) of 11 large US
firms in each year 1935–1954 (``statsmodels.datasets.grunfeld``, 220 rows). Two classification
columns are added, documented here:

* ``industry`` — each firm's industry, from its name (autos: General Motors, Chrysler; steel:
  US Steel, American Steel; electrical: General Electric, Westinghouse; oil: Atlantic Refining,
  Union Oil; other: IBM, Goodyear, Diamond Match);
* ``period`` — the five-year period of the year (``1935-1939`` … ``1950-1954``).

``market_value`` is the data set's ``value``: the firm's market value at the end of the year
(public, from stock prices), the public size of ``docs/magnitude.md`` §5.

One row per firm and year: a firm has five rows in an industry × period cell, which the release
sums into its contribution. Run from the repository root:
``python examples/data/make_magnitude.py``.
"""

from __future__ import annotations

from pathlib import Path

import polars as pl

from persuasive.release.data import _statsmodels_csv

HERE = Path(__file__).resolve().parent

INDUSTRY = {
    "General Motors": "autos",
    "Chrysler": "autos",
    "US Steel": "steel",
    "American Steel": "steel",
    "General Electric": "electrical",
    "Westinghouse": "electrical",
    "Atlantic Refining": "oil",
    "Union Oil": "oil",
    "IBM": "other",
    "Goodyear": "other",
    "Diamond Match": "other",
}


def grunfeld() -> pl.DataFrame:
    """Grunfeld's firms × years with ``industry`` and ``period``."""
    raw = pl.read_csv(_statsmodels_csv("grunfeld"))
    year = pl.col("year").cast(pl.Int64)
    start = 1935 + (year - 1935) // 5 * 5
    return raw.select(
        pl.col("firm"),
        pl.col("firm").replace_strict(INDUSTRY, return_dtype=pl.String).alias("industry"),
        pl.format("{}-{}", start, start + 4).alias("period"),
        year.alias("year"),
        pl.col("invest").cast(pl.Float64),
        pl.col("value").cast(pl.Float64).alias("market_value"),
    ).sort("firm", "year")


def main() -> None:
    grunfeld().write_csv(HERE / "grunfeld.csv")
    print(f"wrote examples/data/grunfeld.csv ({(HERE / 'grunfeld.csv').stat().st_size} bytes)")


if __name__ == "__main__":
    main()
