"""Hierarchical tables (issue 12): nested keys, the non-nesting pairs structural zeros, every
subtotal a published margin; the worked example of docs/margins_release.md end to end."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import polars as pl
import pytest
from typer.testing import CliRunner

from persuasive.classes.receivers import NegativeBinomialReceiver
from persuasive.cli import app
from persuasive.errors import ValidationError
from persuasive.margins.hierarchy import fill_hierarchy, parse_hierarchy
from persuasive.release.margins import release_table_with_margins

runner = CliRunner()
DATA = Path(__file__).resolve().parents[1] / "examples" / "data"
HIER = DATA / "fair_hierarchy.csv"
KEYS = "group,occupation,religious"
MARGINS = "group+religious,occupation,group,religious,total"
ARGS = [
    "--keys",
    KEYS,
    "--count",
    "n",
    "--h",
    "10",
    "--negbin-mean",
    "1:40",
    "--negbin-size",
    "1",
    "--hierarchy",
    "group>occupation",
    "--margins",
    MARGINS,
    "--target-kappa",
    "4.5",
]


@pytest.fixture(scope="module")
def released(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("hier") / "out"
    res = runner.invoke(app, ["release", "table", str(HIER), *ARGS, "--out", str(out), "-q"])
    assert res.exit_code == 0, res.output
    return out


def test_the_example_releases_certified_and_verifies(released: Path) -> None:
    doc = json.loads((released / "certificate.json").read_text())
    assert doc["claim"]["hierarchy"] == ["group>occupation"]
    assert doc["guarantee"]["holds"] is True and doc["guarantee"]["kappa"] <= 4.5
    assert doc["publication"]["structural_cells"] == 3 * 6 * 4 - 24
    assert doc["publication"]["cells"] == 24
    ok = runner.invoke(
        app, ["verify", str(released / "certificate.json"), "--published", str(released)]
    )
    assert ok.exit_code == 0, ok.output


def test_published_subtotals_are_the_independent_sums(released: Path) -> None:
    data = pl.read_csv(HIER)
    marg = pl.read_csv(released / "margins.csv", infer_schema=False)

    def published(name: str, *keys: str) -> dict[tuple[str, ...], int]:
        part = marg.filter(pl.col("margin") == name)
        return {tuple(r[:-1]): int(r[-1]) for r in part.select(*keys, "total").rows()}

    def summed(*keys: str) -> dict[tuple[str, ...], int]:
        g = data.group_by(*keys).agg(pl.col("n").sum())
        return {tuple(str(v) for v in r[:-1]): int(r[-1]) for r in g.select(*keys, "n").rows()}

    assert published("group", "group") == summed("group")
    assert published("occupation", "occupation") == summed("occupation")
    assert published("group+religious", "group", "religious") == summed("group", "religious")
    assert published("religious", "religious") == summed("religious")
    assert published("total", "margin") == {("total",): int(data["n"].sum())}
    # every group subtotal is the sum of its occupations' totals
    occ = summed("occupation")
    nest = data.select("group", "occupation").unique().rows()
    for g, total in published("group", "group").items():
        assert total == sum(occ[(str(o),)] for gg, o in nest if gg == g[0])


def test_tampered_nesting_is_named(released: Path, tmp_path: Path) -> None:
    import shutil

    copy = tmp_path / "c"
    shutil.copytree(released, copy)
    pub = pl.read_csv(copy / "released.csv", infer_schema=False)
    moved = pub.with_columns(
        group=pl.when((pl.col("occupation") == "6") & (pl.col("religious") == "1"))
        .then(pl.lit("middle"))
        .otherwise(pl.col("group"))
    )
    moved.write_csv(copy / "released.csv")
    bad = runner.invoke(app, ["verify", str(copy / "certificate.json"), "--published", str(copy)])
    assert bad.exit_code == 1
    assert "occupation '6' lies in 2 group levels" in bad.output


def test_api_matches_and_structural_cells_are_never_hidden() -> None:
    rel = release_table_with_margins(
        pl.read_csv(HIER),
        keys=KEYS.split(","),
        count="n",
        h=10,
        receiver=NegativeBinomialReceiver(1, 40, 1),
        margins=MARGINS,
        hierarchy="group>occupation",
        target_kappa=4.5,
    )
    t = rel.table
    assert rel.ok and rel.plan.certified
    assert t.shape == (3, 6, 4) and int(t.structural.sum()) == 48
    assert not (t.suppressed & t.known).any()
    assert rel.published.height == 24


def test_a_district_in_two_regions_is_refused() -> None:
    t = pl.DataFrame({"r": ["A", "A", "B"], "d": ["x", "y", "x"], "n": [3, 4, 5]})
    with pytest.raises(ValidationError, match="d 'x' lies in 2 r levels"):
        fill_hierarchy(t, ["r", "d"], "n", (("r", "d"),), "zero")
    with pytest.raises(ValidationError, match="not a key"):
        parse_hierarchy("r>q", ["r", "d"])


def test_a_margin_that_is_the_table_itself_is_refused() -> None:
    frame = pl.DataFrame({"r": ["A", "A", "B"], "d": ["a1", "a2", "b1"], "n": [30, 40, 50]})
    with pytest.raises(ValidationError, match="would publish every cell"):
        release_table_with_margins(
            frame,
            keys=["r", "d"],
            count="n",
            h=5,
            receiver=NegativeBinomialReceiver(1, 40, 1),
            margins="d",
            hierarchy="r>d",
        )
    rel = release_table_with_margins(
        frame,
        keys=["r", "d"],
        count="n",
        h=5,
        receiver=NegativeBinomialReceiver(1, 40, 1),
        margins="r,total",
        hierarchy="r>d",
    )
    assert rel.published.height == 3 and np.all(rel.table.structural.sum() == 3)


def test_nesting_combinations_absent_are_zeros() -> None:
    t = pl.DataFrame(
        {
            "r": ["A", "A", "B", "B"],
            "d": ["a1", "a2", "b1", "b1"],
            "s": ["f", "f", "f", "m"],
            "n": [3, 4, 5, 6],
        }
    )
    full, structural = fill_hierarchy(t, ["r", "d", "s"], "n", (("r", "d"),), "zero")
    assert full.height == 6 and structural == 2 * 3 * 2 - 6  # (A, a1, m), (A, a2, m) added
    kept, structural = fill_hierarchy(t, ["r", "d", "s"], "n", (("r", "d"),), "structural")
    assert kept.height == 4 and structural == 8
