"""Write the small inputs the documentation's commands use (run once; the CSVs are committed).

Every file is real public data that :mod:`statsmodels` ships in its wheel (nothing is
downloaded), read through :mod:`persuasive.release.data`:

* ``counts.csv`` — breast-cancer deaths in 301 US counties: ``county``, ``cancer``,
  ``population`` (:func:`~persuasive.release.data.load_cancer_counts`);
* ``fair.csv`` — Fair's (1978) affairs survey, 6366 respondents, one row per person
  (:func:`~persuasive.release.data.load_fair`): microdata;
* ``fair_crosstab.csv`` — the survey cross-tabulated by ``religious`` × ``occupation``
  (4 × 6 cells, count column ``n``; :func:`~persuasive.release.data.load_fair_crosstab`);
* ``fair_hierarchy.csv`` — the same cross-tabulation with the six occupation codes nested in
  three groups (:func:`fair_hierarchy`): ``group``, ``occupation``, ``religious``, ``n``, for
  the hierarchical release of ``docs/margins_release.md`` ("Hierarchies");
* ``fair_occupation.hrc`` — the same three groups as a τ-Argus hierarchy file (one code a
  line, ``@`` before each occupation code; :func:`occupation_hrc`), for ``--hierarchy-file``
  on ``fair_crosstab.csv`` ("Hierarchies");
* ``fair_known.csv`` — the key columns of two cells of ``fair_crosstab.csv`` taken as already
  public (``--known``, "What the Receiver already knows");
* ``fair_apriori.csv`` — a-priori bounds on three cells of ``fair_crosstab.csv`` (``--apriori``:
  the key columns, ``lower``, ``upper``; ``docs/margins_apriori.md``).

Run from the repository root: ``python examples/data/make_data.py``.
"""

from __future__ import annotations

from pathlib import Path

import polars as pl

from persuasive.release.data import load_cancer_counts, load_fair, load_fair_crosstab

HERE = Path(__file__).resolve().parent

#: Fair's occupation codes (1 student; 2 farming, semi-skilled or unskilled; 3 white-collar;
#: 4 teacher, nurse, writer, technician or skilled; 5 managerial or business; 6 professional
#: with an advanced degree) in three groups: the upper level of the hierarchy.
OCCUPATION_GROUPS = {1: "lower", 2: "lower", 3: "middle", 4: "middle", 5: "upper", 6: "upper"}


def fair_hierarchy() -> pl.DataFrame:
    """religious × occupation counts with ``group`` (the occupation's group) as a key column."""
    t = load_fair_crosstab()
    group = pl.col("occupation").replace_strict(OCCUPATION_GROUPS, return_dtype=pl.String)
    return t.with_columns(group.alias("group")).select("group", "occupation", "religious", "n")


def occupation_hrc() -> str:
    """:data:`OCCUPATION_GROUPS` as a ``.hrc`` file: each group, then its codes after ``@``."""
    lines = []
    for group in dict.fromkeys(OCCUPATION_GROUPS.values()):
        lines.append(group)
        lines += [f"@{code}" for code, g in OCCUPATION_GROUPS.items() if g == group]
    return "\n".join(lines) + "\n"


def main() -> None:
    """Write the CSV files beside this script."""
    load_cancer_counts().write_csv(HERE / "counts.csv")
    load_fair().write_csv(HERE / "fair.csv")
    load_fair_crosstab().write_csv(HERE / "fair_crosstab.csv")
    fair_hierarchy().write_csv(HERE / "fair_hierarchy.csv")
    (HERE / "fair_occupation.hrc").write_text(occupation_hrc(), encoding="utf-8")
    pl.DataFrame({"religious": [1, 3], "occupation": [1, 1]}).write_csv(HERE / "fair_known.csv")
    bounds = {"lower": [3, 5, 20], "upper": [None, 9, 30]}  # (3, 1) >= 3, (4, 1) in [5, 9], ...
    pl.DataFrame({"religious": [3, 4, 1], "occupation": [1, 1, 6], **bounds}).write_csv(
        HERE / "fair_apriori.csv"
    )
    names = (
        "counts.csv",
        "fair.csv",
        "fair_crosstab.csv",
        "fair_hierarchy.csv",
        "fair_occupation.hrc",
        "fair_known.csv",
        "fair_apriori.csv",
    )
    for name in names:
        print(f"wrote examples/data/{name} ({(HERE / name).stat().st_size} bytes)")


if __name__ == "__main__":
    main()
