"""``persuasive.release.linear`` and ``persuasive release linear``.

Oracles are independent: A built by hand with numpy, means with numpy, the exposed row found
by the differencing identity n·mean_all − (n−1)·mean_without = x_i, κ = r1 + log r2 (Prop 7's
closed form, which the linear class keeps for exact releases).
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
import pytest
from typer.testing import CliRunner

from persuasive.cli import app
from persuasive.errors import ValidationError
from persuasive.release.linear import release_linear
from persuasive.release.statistics import statistics_matrix

runner = CliRunner()
R1, R2 = 1.0, 4.0


def run(*args: Any) -> Any:
    return runner.invoke(app, [str(a) for a in args])


@pytest.fixture(scope="module")
def frame() -> pl.DataFrame:
    rng = np.random.default_rng(3)
    n = 60
    return pl.DataFrame(
        {
            "y": rng.gamma(2.0, 1.5, size=n),
            "g": np.arange(n) % 3 + 1,
            "label": [f"p{i}" for i in range(n)],
        }
    )


@pytest.fixture(scope="module")
def csv(frame: pl.DataFrame, tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("data") / "people.csv"
    frame.write_csv(path)
    return path


def test_statistics_matrix_matches_hand_built(frame: pl.DataFrame) -> None:
    g = frame["g"].to_numpy()
    n = frame.height
    stats = [
        ("all", "mean", "true"),
        ("g2", "mean", "g = 2"),
        ("g13_sum", "sum", "g IN (1, 3)"),
        ("not5", "mean", "row_id != 5"),
    ]
    names, a = statistics_matrix(frame, stats, value="y")
    expected = np.zeros((4, n))
    expected[0] = 1.0 / n
    expected[1, g == 2] = 1.0 / np.sum(g == 2)
    expected[2, (g == 1) | (g == 3)] = 1.0
    expected[3] = 1.0 / (n - 1)
    expected[3, 5] = 0.0
    assert names == ["all", "g2", "g13_sum", "not5"]
    np.testing.assert_allclose(a, expected, rtol=0, atol=1e-15)


def test_private_release_values_and_kappa(frame: pl.DataFrame) -> None:
    y, g = frame["y"].to_numpy(), frame["g"].to_numpy()
    stats = [("all", "mean", "true"), *((f"g{k}", "mean", f"g = {k}") for k in (1, 2))]
    rel = release_linear(frame, value="y", statistics=stats, r1=R1, r2=R2)
    want = [y.mean(), y[g == 1].mean(), y[g == 2].mean()]
    np.testing.assert_allclose(rel.values["value"].to_numpy(), want, rtol=1e-12)
    assert rel.certificate is not None and rel.exposed == ()
    assert rel.certificate.kappa == pytest.approx(R1 + math.log(R2))
    # the spec states each statistic by its WHERE clause, and the value column by name only
    assert [s["where"] for s in rel.spec["mechanism"]["statistics"]] == ["true", "g = 1", "g = 2"]
    assert rel.spec["mechanism"]["value"] == "y"
    assert set(rel.spec["mechanism"]) >= {"statistics", "value"}


def test_written_certificate_does_not_depend_on_the_values(
    frame: pl.DataFrame, tmp_path: Path
) -> None:
    """The claim states the query (who each statistic covers), never the value column: two
    value columns over the same rows give byte-identical claims, guarantees and notes."""
    from persuasive.files.output import OutputFolder
    from persuasive.release.pipeline import publish

    stats = [("all", "mean", "true"), ("g2", "sum", "g = 2")]
    other = frame.with_columns(pl.col("y") * 3.0 + 1.0)
    docs = [
        publish(
            release_linear(f, value="y", statistics=stats, r1=R1, r2=R2),
            OutputFolder(tmp_path / str(i)),
        ).document
        for i, f in enumerate((frame, other))
    ]
    for field in ("claim", "guarantee", "notes"):
        assert json.dumps(docs[0][field], sort_keys=True) == json.dumps(
            docs[1][field], sort_keys=True
        )
    assert docs[0]["publication"]["files"] != docs[1]["publication"]["files"]
    assert docs[0]["guarantee"]["kappa"] == pytest.approx(R1 + math.log(R2))


def test_differencing_is_refused_naming_the_row(frame: pl.DataFrame) -> None:
    y, n = frame["y"].to_numpy(), frame.height
    stats = [("all", "mean", "true"), ("no7", "mean", "row_id != 7")]
    rel = release_linear(frame, value="y", statistics=stats, r1=R1, r2=R2)
    assert rel.certificate is None and rel.values["value"].null_count() == 2
    [(row, combination)] = rel.exposed
    assert row == 7
    assert combination == pytest.approx({"all": n, "no7": -(n - 1)})
    t = {"all": y.mean(), "no7": np.delete(y, 7).mean()}
    assert sum(c * t[k] for k, c in combination.items()) == pytest.approx(y[7], rel=1e-9)


@pytest.mark.parametrize(
    ("stats", "match"),
    [
        ([("a", "mean", "nope = 1")], "statistic 'a'.*does not exist"),
        ([("a", "mean", "g = 99")], "statistic 'a'.*selects no rows"),
        ([("a", "median", "true")], "statistic 'a'.*kind must be"),
        ([("a", "mean", "g +")], "statistic 'a'.*not a valid SQL"),
        ([("a", "mean", "g")], "statistic 'a'.*not a true/false"),
        ([("a", "mean", "true"), ("a", "sum", "true")], "unique"),
    ],
)
def test_bad_statistics(frame: pl.DataFrame, stats: Any, match: str) -> None:
    with pytest.raises(ValidationError, match=match):
        statistics_matrix(frame, stats, value="y")


def test_nan_in_a_selected_row_names_the_statistic(frame: pl.DataFrame) -> None:
    bad = frame.with_columns(pl.when(pl.col("g") == 2).then(None).otherwise(pl.col("y")).alias("y"))
    with pytest.raises(ValidationError, match=r"statistic 'two'.*row_id 1"):
        statistics_matrix(bad, [("one", "mean", "g = 1"), ("two", "mean", "g = 2")], value="y")
    _, a = statistics_matrix(bad, [("one", "mean", "g = 1")], value="y")  # NaN not selected
    assert a.shape == (1, frame.height)


# ------------------------------------------------------------------------------------------
# The command line
# ------------------------------------------------------------------------------------------


def test_cli_private_release_writes_files(csv: Path, frame: pl.DataFrame, tmp_path: Path) -> None:
    out = tmp_path / "out"
    res = run(
        "release", "linear", csv, "--value", "y", "--stat", "all:mean:true",
        "--stat", "g1:sum:g = 1", "--r1", R1, "--r2", R2, "--out", out, "--quiet",
    )  # fmt: skip
    assert res.exit_code == 0, res.output
    assert sorted(p.name for p in out.iterdir()) == [
        ".persuasive-output.json",
        "certificate.json",
        "released.csv",
    ]
    published = pl.read_csv(out / "released.csv")
    y, g = frame["y"].to_numpy(), frame["g"].to_numpy()
    np.testing.assert_allclose(published["value"].to_numpy(), [y.mean(), y[g == 1].sum()])
    cert = json.loads((out / "certificate.json").read_text())
    assert cert["guarantee"]["kappa"] == pytest.approx(R1 + math.log(R2))
    assert cert["claim"]["spec"]["mechanism"]["statistics"][1]["where"] == "g = 1"
    # the design states who each statistic covers (the query), never the values
    rows = [s["rows"] for s in cert["claim"]["design"]["statistics"]]
    assert cert["claim"]["design"]["n"] == frame.height and rows == [
        frame.height,
        int((g == 1).sum()),
    ]
    assert str(round(float(y.mean()), 4)) not in json.dumps(cert)  # no data in the certificate
    for extra in ([], ["--published", str(out)]):
        check = run("verify", out / "certificate.json", *extra)
        assert check.exit_code == 0, check.output


def test_cli_differencing_exits_1_and_names_the_row(csv: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    res = run(
        "release", "linear", csv, "--value", "y", "--stat", "all:mean:true",
        "--stat", "no7:mean:row_id != 7", "--r1", R1, "--r2", R2, "--out", out, "--quiet",
    )  # fmt: skip
    assert res.exit_code == 1, res.output
    assert "EXPOSED: row 7 = 60·all − 59·no7" in res.output
    assert not out.exists()


def test_cli_json_reports_exposure(csv: Path, tmp_path: Path) -> None:
    res = run(
        "release", "linear", csv, "--value", "y", "--stat", "all:sum:true",
        "--stat", "no7:sum:row_id != 7", "--r1", R1, "--r2", R2, "--out", tmp_path / "o", "--json",
    )  # fmt: skip
    assert res.exit_code == 1
    doc = json.loads(res.output)
    assert doc["refused"] and doc["exposed"][0]["row_id"] == 7
    assert doc["exposed"][0]["combination"] == pytest.approx({"all": 1.0, "no7": -1.0})


def test_cli_stats_file(csv: Path, tmp_path: Path) -> None:
    spec = tmp_path / "stats.toml"
    spec.write_text('[[statistics]]\nname = "all"\nkind = "mean"\n\n'
                    '[[statistics]]\nname = "g3"\nkind = "mean"\nwhere = "g = 3"\n')  # fmt: skip
    res = run("release", "linear", csv, "--value", "y", "--stats", spec, "--r1", R1,
              "--r2", R2, "--out", tmp_path / "o", "--quiet")  # fmt: skip
    assert res.exit_code == 0, res.output
    assert pl.read_csv(tmp_path / "o" / "released.csv")["name"].to_list() == ["all", "g3"]


@pytest.mark.parametrize(
    ("stat", "value", "match"),
    [
        ("a:mean:nope = 1", "y", "statistic 'a'.*does not exist"),
        ("a:mean:g = 99", "y", "selects no rows"),
        ("a:median:true", "y", "kind must be"),
        ("a:mean", "y", "--stat must be NAME:KIND:WHERE"),
        ("a:mean:true", "nan_col", "statistic 'a'.*NaN"),
        ("a:mean:true", "label", "'label'.*'p0', not a number"),
    ],
)
def test_cli_bad_input_exit_2_nothing_written(
    frame: pl.DataFrame, tmp_path: Path, stat: str, value: str, match: str
) -> None:
    data = tmp_path / "d.csv"
    frame.with_columns(
        pl.when(pl.col("g") == 1).then(float("nan")).otherwise(pl.col("y")).alias("nan_col")
    ).write_csv(data)
    out = tmp_path / "out"
    res = run("release", "linear", data, "--value", value, "--stat", stat,
              "--r1", R1, "--r2", R2, "--out", out)  # fmt: skip
    assert res.exit_code == 2, res.output
    assert res.output.startswith("error: ") and len(res.output.strip().splitlines()) == 1
    import re

    assert re.search(match, res.output), res.output
    assert sorted(p.name for p in tmp_path.iterdir()) == ["d.csv"]


def test_cli_target_kappa_calibrates_noise(csv: Path, tmp_path: Path) -> None:
    target = 6.0  # exact: 9 + log 4 ≈ 10.4; noise can reach targets above the χ²₁ 95% quantile
    res = run("release", "linear", csv, "--value", "y", "--stat", "all:mean:true",
              "--stat", "g1:mean:g = 1", "--r1", 9.0, "--r2", R2, "--max-stat-sd", 1.0,
              "--target-kappa", target, "--out", tmp_path / "o", "--json")  # fmt: skip
    assert res.exit_code == 0, res.output
    doc = json.loads(res.output)
    assert doc["certificate"]["claim"]["spec"]["mechanism"]["noise"]["sigma"] > 0
    assert doc["certificate"]["guarantee"]["kappa"] <= target
    assert doc["holds"] is True and doc["certificate"]["guarantee"]["holds"] is True


def test_cli_withhold_drops_the_differencing_statistic(csv: Path, tmp_path: Path) -> None:
    res = run("release", "linear", csv, "--value", "y", "--stat", "all:mean:true",
              "--stat", "g1:mean:g = 1", "--stat", "no7:mean:row_id != 7", "--r1", R1,
              "--r2", R2, "--withhold", "--out", tmp_path / "o", "--json")  # fmt: skip
    assert res.exit_code == 0, res.output
    doc = json.loads(res.output)
    assert len(doc["withheld"]) == 1 and doc["withheld"][0] in ("all", "no7")
    assert not doc["refused"]


def test_cli_target_kappa_with_exposure_is_refused(csv: Path, tmp_path: Path) -> None:
    out = tmp_path / "o"
    res = run("release", "linear", csv, "--value", "y", "--stat", "all:mean:true",
              "--stat", "no7:mean:row_id != 7", "--r1", R1, "--r2", R2,
              "--target-kappa", 2.0, "--out", out, "--quiet")  # fmt: skip
    assert res.exit_code == 1, res.output
    assert "EXPOSED: row 7" in res.output and "withhold" in res.output
    assert not out.exists()


def test_cli_reads_only_the_columns_it_needs(frame: pl.DataFrame, tmp_path: Path) -> None:
    from persuasive.cli.linear import needed_columns, parse_statistic
    from persuasive.files.reading import scan

    data = tmp_path / "wide.csv"
    frame.with_columns(
        pl.lit("not a number").alias("junk"), (pl.col("y") * 2).alias("z")
    ).write_csv(data)
    stats = [parse_statistic("g1:mean:g = 1"), parse_statistic("no3:sum:row_id != 3 AND g > 1")]
    lazy = scan(data, text=["y"], infer=True)
    assert needed_columns(lazy, "y", stats).columns == ["y", "g"]
    assert needed_columns(lazy, "y", [parse_statistic("a:mean:nope = 1")]).width == 5  # all
    narrow = tmp_path / "narrow.csv"
    frame.select("y", "g").write_csv(narrow)
    outs = []
    for name, path in (("w", data), ("n", narrow)):
        res = run("release", "linear", path, "--value", "y", "--stat", "g1:mean:g = 1",
                  "--r1", R1, "--r2", R2, "--out", tmp_path / name)  # fmt: skip
        assert res.exit_code == 0, res.output
        outs.append((tmp_path / name / "released.csv").read_text(encoding="utf-8"))
    assert outs[0] == outs[1]
    res = run("release", "linear", data, "--value", "y", "--stat", "a:mean:nope = 1",
              "--r1", R1, "--r2", R2, "--out", tmp_path / "bad")  # fmt: skip
    assert res.exit_code == 2 and "junk" in res.output, res.output  # the file's columns listed
