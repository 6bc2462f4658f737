"""Microdata to tables in the release (issue 11): one record is one unit, counted once.

Oracles: :class:`collections.Counter` over the records (docs/architecture.md, rule 8).
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import numpy as np
import polars as pl
import pytest
from typer.testing import CliRunner

from persuasive.classes.receivers import NegativeBinomialReceiver, PoissonReceiver
from persuasive.cli import app
from persuasive.errors import ValidationError
from persuasive.files.output import OutputFolder
from persuasive.release.data import load_fair
from persuasive.release.margins import release_table_with_margins
from persuasive.release.pipeline import publish
from persuasive.release.tables import release_table
from persuasive.report.verify import verify_certificate

runner = CliRunner()
POISSON = PoissonReceiver(0.5, 3)


def _records(seed: int = 1, n: int = 400) -> pl.DataFrame:
    rng = np.random.default_rng(seed)
    return pl.DataFrame(
        {
            "region": rng.choice(["north", "south", "east", "west", "01"], n).tolist(),
            "sex": rng.choice(["f", "m"], n, p=[0.93, 0.07]).tolist(),
            "age": rng.integers(18, 90, n).tolist(),
        }
    )


def _counter(records: pl.DataFrame, keys: list[str]) -> Counter[tuple[str, ...]]:
    return Counter(tuple(str(v) for v in row) for row in records.select(keys).iter_rows())


@pytest.mark.parametrize("as_csv", [False, True])
def test_tabulation_equals_an_independent_count(tmp_path: Path, as_csv: bool) -> None:
    records = _records()
    keys = ["region", "sex"]
    source: object = records
    if as_csv:
        source = tmp_path / "records.csv"
        records.write_csv(source)
    rel = release_table(source, keys=keys, microdata=True, h=5, receiver=POISSON)  # type: ignore[arg-type]
    want = _counter(records, keys)
    got = {
        tuple(str(v) for v in row[:-1]): row[-1] for row in rel.cells.select(*keys, "n").iter_rows()
    }
    levels = [sorted({k[i] for k in want}) for i in range(2)]
    grid = {(a, b) for a in levels[0] for b in levels[1]}
    assert set(got) == grid  # every combination of the levels is a cell
    assert all(got[k] == want.get(k, 0) for k in grid)  # zero where nobody is
    assert sum(got.values()) == records.height  # each record counted once
    shown = dict(
        zip(map(tuple, rel.published.select(keys).rows()), rel.published["n"], strict=True)
    )
    for k in grid:
        count = want.get(k, 0)
        assert shown[k] == (count if count >= 5 else None)


def test_count_names_the_published_column_and_must_not_be_a_key() -> None:
    records = _records()
    rel = release_table(
        records, keys="region", microdata=True, count="people", h=3, receiver=POISSON
    )
    assert rel.published.columns == ["region", "people"]
    assert rel.claim["columns"] == {"keys": ["region"], "count": "people"}
    with pytest.raises(ValidationError, match="count column 'region' is also a key"):
        release_table(records, keys="region", microdata=True, count="region", h=3, receiver=POISSON)
    with pytest.raises(ValidationError, match="microdata=True"):
        release_table(records, keys="region", h=3, receiver=POISSON)


def test_a_missing_key_names_the_row_and_drops_nothing(tmp_path: Path) -> None:
    path = tmp_path / "records.csv"
    path.write_text("region,sex\nnorth,f\nsouth,\neast,m\n")
    with pytest.raises(ValidationError, match=r"column 'sex' at row 2 .*recode missing"):
        release_table(path, keys=["region", "sex"], microdata=True, h=3, receiver=POISSON)
    frame = pl.DataFrame({"g": [1.0, float("nan"), 2.0]})
    with pytest.raises(ValidationError, match="column 'g' at row 2 is missing"):
        release_table(frame, keys="g", microdata=True, h=3, receiver=POISSON)
    with pytest.raises(ValidationError, match="empty"):
        release_table(frame.head(0), keys="g", microdata=True, h=3, receiver=POISSON)


def test_csv_keys_are_read_as_written(tmp_path: Path) -> None:
    path = tmp_path / "records.csv"
    path.write_text("code\n01\n1\n01\nNA\n1.0\n")
    rel = release_table(path, keys="code", microdata=True, h=2, receiver=POISSON)
    assert dict(rel.cells.rows()) == {"01": 2, "1": 1, "NA": 1, "1.0": 1}


def test_weights_are_refused_in_the_api_and_the_cli(tmp_path: Path) -> None:
    records = _records().with_columns(w=pl.lit(2.5))
    with pytest.raises(ValidationError, match="survey weights are refused") as info:
        release_table(records, keys="region", microdata=True, weight="w", h=3, receiver=POISSON)
    text = str(info.value)
    assert "count of records" in text and "weighted total is not a count" in text
    assert "unweighted" in text and "'w'" in text
    with pytest.raises(ValidationError, match="survey weights are refused"):
        release_table_with_margins(
            records, keys=["region", "sex"], microdata=True, weight="w", h=3,
            receiver=POISSON, margins="rows",
        )  # fmt: skip
    data = tmp_path / "records.csv"
    records.write_csv(data)
    out = tmp_path / "out"
    res = runner.invoke(
        app,
        ["release", "table", str(data), "--keys", "region", "--microdata", "--weight", "w",
         "--h", "3", "--poisson-mean", "0.5:3", "--out", str(out)],
    )  # fmt: skip
    assert res.exit_code == 2, res.output
    assert res.output.count("error:") == 1 and "--weight 'w'" in res.output
    assert not out.exists()


def test_cli_count_is_required_without_microdata(tmp_path: Path) -> None:
    data = tmp_path / "records.csv"
    _records().write_csv(data)
    res = runner.invoke(
        app,
        ["release", "table", str(data), "--keys", "region", "--h", "3",
         "--poisson-mean", "0.5:3", "--out", str(tmp_path / "out")],
    )  # fmt: skip
    assert res.exit_code == 2 and "--microdata" in res.output and "--count" in res.output


@pytest.fixture(scope="module")
def fair_csv(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("fair") / "fair.csv"
    load_fair().write_csv(path)
    return path


def test_fair_survey_end_to_end(fair_csv: Path, tmp_path: Path) -> None:
    out = tmp_path / "rel"
    res = runner.invoke(
        app,
        ["release", "table", str(fair_csv), "--keys", "religious,occupation", "--microdata",
         "--h", "5", "--poisson-mean", "0.5:3", "--out", str(out)],
    )  # fmt: skip
    assert res.exit_code == 0, res.output
    res = runner.invoke(app, ["verify", str(out / "certificate.json")])
    assert res.exit_code == 0, res.output
    res = runner.invoke(app, ["verify", str(out / "certificate.json"), "--published", str(out)])
    assert res.exit_code == 0, res.output
    published = pl.read_csv(out / "released.csv", infer_schema=False)
    want = _counter(pl.read_csv(fair_csv, infer_schema=False), ["religious", "occupation"])
    assert published.height == 24 == len(want)
    for religious, occupation, n in published.iter_rows():
        count = want[(religious, occupation)]
        assert n == (str(count) if count >= 5 else None)
    doc = json.loads((out / "certificate.json").read_text())
    assert doc["claim"]["absent"] == "zero"
    assert doc["claim"]["columns"] == {"keys": ["religious", "occupation"], "count": "n"}


def test_fair_survey_with_margins_matches_the_cross_tabulation(
    fair_csv: Path, tmp_path: Path
) -> None:
    out = tmp_path / "m"
    res = runner.invoke(
        app,
        ["release", "table", str(fair_csv), "--keys", "religious,occupation", "--microdata",
         "--h", "10", "--negbin-mean", "1:40", "--negbin-size", "1", "--margins", "rows,cols",
         "--target-kappa", "4.5", "--out", str(out), "-q"],
    )  # fmt: skip
    assert res.exit_code == 0, res.output
    res = runner.invoke(app, ["verify", str(out / "certificate.json"), "--published", str(out)])
    assert res.exit_code == 0, res.output
    doc = json.loads((out / "certificate.json").read_text())
    assert doc["guarantee"]["kappa"] == pytest.approx(4.2234216, abs=1e-6)  # margins_release.md
    assert doc["claim"]["absent"] == "zero" and doc["publication"]["secondary"] == 4
    totals = pl.read_csv(out / "margins.csv", infer_schema=False)
    rows = dict(totals.filter(pl.col("margin") == "religious").select("religious", "total").rows())
    want = Counter(pl.read_csv(fair_csv, infer_schema=False)["religious"].to_list())
    assert {k: int(v) for k, v in rows.items()} == dict(want)


def test_margins_api_with_microdata(tmp_path: Path) -> None:
    records = _records(seed=3, n=300)
    keys = ["region", "sex"]
    rel = release_table_with_margins(
        records, keys=keys, microdata=True, h=5, receiver=NegativeBinomialReceiver(1, 40, 1),
        margins="rows,cols", target_kappa=4.5,
    )  # fmt: skip
    want = _counter(records, keys)
    assert int(rel.table.counts.sum()) == records.height
    assert rel.published.height == 10  # 5 regions x 2 sexes
    for row in rel.published.iter_rows(named=True):
        count = want.get((row["region"], row["sex"]), 0)
        assert row["n"] in (None, count) and (count >= 5 or row["n"] is None)
    assert rel.cells.height == 10
    outcome = publish(rel, OutputFolder(tmp_path / "out"))
    assert outcome.document["claim"]["absent"] == "zero"
    assert verify_certificate(tmp_path / "out" / "certificate.json", published=tmp_path / "out").ok
