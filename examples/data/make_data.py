"""Write the small inputs the documentation's commands use (run once; the CSVs are committed).

Every file is real public data that :mod:`statsmodels` ships in its wheel (nothing is
downloaded), read through :mod:`persuasive.release.data`:

* ``counts.csv`` — breast-cancer deaths in 301 US counties: ``county``, ``cancer``,
  ``population`` (:func:`~persuasive.release.data.load_cancer_counts`);
* ``fair.csv`` — Fair's (1978) affairs survey, 6366 respondents, one row per person
  (:func:`~persuasive.release.data.load_fair`): microdata;
* ``fair_crosstab.csv`` — the survey cross-tabulated by ``religious`` × ``occupation``
  (4 × 6 cells, count column ``n``; :func:`~persuasive.release.data.load_fair_crosstab`).

Run from the repository root: ``python examples/data/make_data.py``.
"""

from __future__ import annotations

from pathlib import Path

from persuasive.release.data import load_cancer_counts, load_fair, load_fair_crosstab

HERE = Path(__file__).resolve().parent


def main() -> None:
    """Write the three CSV files beside this script."""
    load_cancer_counts().write_csv(HERE / "counts.csv")
    load_fair().write_csv(HERE / "fair.csv")
    load_fair_crosstab().write_csv(HERE / "fair_crosstab.csv")
    for name in ("counts.csv", "fair.csv", "fair_crosstab.csv"):
        print(f"wrote examples/data/{name} ({(HERE / name).stat().st_size} bytes)")


if __name__ == "__main__":
    main()
