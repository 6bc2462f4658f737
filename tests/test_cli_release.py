"""End-to-end tests of ``persuasive release``, ``persuasive verify`` through the command line.

Expected values come from independent closed forms computed here with scipy/numpy/polars
(Prop 8: κ = −log α(h) with α(h) the worst cell prior's mass below h; Prop 7: κ = r1 + log r2;
the released cells are the input cells at or above h), never from the library's own output.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
import pytest
from scipy import stats
from typer.testing import CliRunner

from persuasive.cli import app
from persuasive.release.data import load_cancer_counts, load_fair

runner = CliRunner()


def run(*args: Any) -> Any:
    return runner.invoke(app, [str(a) for a in args])


def nbinom_alpha(h: int, mean_max: float, size: float) -> float:
    return float(stats.nbinom.cdf(h - 1, size, size / (size + mean_max)))


def poisson_alpha(h: int, mean_max: float) -> float:
    return float(stats.poisson.cdf(h - 1, mean_max))


@pytest.fixture(scope="module")
def cancer_csv(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("data") / "cancer.csv"
    load_cancer_counts().write_csv(path)
    return path


@pytest.fixture(scope="module")
def fair_csv(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("data") / "fair.csv"
    load_fair().write_csv(path)
    return path


def generated_table(seed: int, n: int = 200) -> pl.DataFrame:
    rng = np.random.default_rng(seed)
    return pl.DataFrame(
        {
            "region": [f"r{i % 10}" for i in range(n)],
            "year": [2000 + i // 10 for i in range(n)],
            "count": rng.negative_binomial(1, 1 / 16, size=n).astype(np.int64),
        }
    )


def check_released(
    released: pl.DataFrame, original: pl.DataFrame, keys: list[str], count: str, h: int
) -> None:
    """Suppressed cells are null exactly where the input is below h; the rest equal the input."""
    joined = original.join(released, on=keys, suffix="_released", how="left")
    assert joined.height == original.height == released.height
    below = joined[count] < h
    assert joined.filter(below)[f"{count}_released"].null_count() == int(below.sum())
    kept = joined.filter(~below)
    assert kept[f"{count}_released"].to_list() == kept[count].to_list()
    # Only what is released is published: no per-cell loss (it would leak counts below r).
    assert released.columns == [*keys, count]


# --------------------------------------------------------------------------------------------
# release table on the real data set
# --------------------------------------------------------------------------------------------


def test_release_table_real_data(cancer_csv: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    result = run(
        "release",
        "table",
        cancer_csv,
        "--keys",
        "county",
        "--count",
        "cancer",
        "--h",
        10,
        "--negbin-mean",
        "1:40",
        "--negbin-size",
        1,
        "--out",
        out,
        "--quiet",
    )
    assert result.exit_code == 0, result.output
    assert sorted(p.name for p in out.iterdir()) == ["certificate.json", "released.csv"]
    released = pl.read_csv(out / "released.csv")
    check_released(released, load_cancer_counts(), ["county"], "cancer", 10)
    doc = json.loads((out / "certificate.json").read_text())
    expected = -math.log(nbinom_alpha(10, 40.0, 1.0))
    assert doc["guarantee"]["kappa"] == pytest.approx(expected, rel=1e-9)
    assert doc["basis"].startswith("Prop 8")
    assert "1.52" in result.stdout  # the plain sentence: κ in nats
    check = run("verify", out / "certificate.json")
    assert check.exit_code == 0, check.output
    assert "verified" in check.stdout


def test_release_table_parquet_and_report(cancer_csv: Path, tmp_path: Path) -> None:
    src = tmp_path / "cancer.parquet"
    load_cancer_counts().write_parquet(src)
    out = tmp_path / "out"
    result = run(
        "release",
        "table",
        src,
        "--keys",
        "county",
        "--count",
        "cancer",
        "--h",
        5,
        "--alpha",
        0.2,
        "--out",
        out,
        "--report",
        "--quiet",
    )
    assert result.exit_code == 0, result.output
    released = pl.read_parquet(out / "released.parquet")
    check_released(released, load_cancer_counts(), ["county"], "cancer", 5)
    assert (out / "report" / "report.html").is_file() and (out / "report" / "report.md").is_file()
    doc = json.loads((out / "certificate.json").read_text())
    assert doc["guarantee"]["kappa"] == pytest.approx(-math.log(0.2))
    # --format overrides the input's format
    out2 = tmp_path / "out2"
    again = run(
        "release",
        "table",
        src,
        "--keys",
        "county",
        "--count",
        "cancer",
        "--h",
        5,
        "--alpha",
        0.2,
        "--out",
        out2,
        "--format",
        "csv",
        "--quiet",
    )
    assert again.exit_code == 0, again.output
    assert (out2 / "released.csv").is_file()


def test_release_table_json(cancer_csv: Path, tmp_path: Path) -> None:
    result = run(
        "release",
        "table",
        cancer_csv,
        "--keys",
        "county",
        "--count",
        "cancer",
        "--h",
        3,
        "--poisson-mean",
        "0:4",
        "--out",
        tmp_path / "out",
        "--json",
    )
    assert result.exit_code == 0, result.output
    payload = json.loads(result.stdout)
    assert payload["holds"] is True and payload["kind"] == "table"
    assert payload["certificate"]["guarantee"]["kappa"] == pytest.approx(
        -math.log(poisson_alpha(3, 4.0)), rel=1e-9
    )
    assert Path(payload["files"]["certificate"]).is_file()


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("h", [2, 5, 17])
def test_release_generated_tables(tmp_path: Path, seed: int, h: int) -> None:
    table = generated_table(seed)
    src = tmp_path / "t.csv"
    table.write_csv(src)
    out = tmp_path / "out"
    result = run(
        "release",
        "table",
        src,
        "--keys",
        "region,year",
        "--count",
        "count",
        "--h",
        h,
        "--alpha",
        0.3,
        "--out",
        out,
        "--quiet",
    )
    assert result.exit_code == 0, result.output
    released = pl.read_csv(out / "released.csv")
    check_released(released, table, ["region", "year"], "count", h)
    assert (released["count"].drop_nulls() >= h).all()
    assert run("verify", out / "certificate.json").exit_code == 0


def test_same_spec_byte_identical_certificates(tmp_path: Path) -> None:
    paths = []
    for seed in (10, 11):
        src = tmp_path / f"t{seed}.csv"
        generated_table(seed, n=50 + seed).write_csv(src)
        out = tmp_path / f"out{seed}"
        result = run(
            "release",
            "table",
            src,
            "--keys",
            "region,year",
            "--count",
            "count",
            "--h",
            4,
            "--negbin-mean",
            "1:20",
            "--negbin-size",
            2,
            "--out",
            out,
            "--quiet",
        )
        assert result.exit_code == 0, result.output
        paths.append(out)
    assert (paths[0] / "released.csv").read_bytes() != (paths[1] / "released.csv").read_bytes()
    assert (paths[0] / "certificate.json").read_bytes() == (
        paths[1] / "certificate.json"
    ).read_bytes()


# --------------------------------------------------------------------------------------------
# --target-kappa: the smallest h with −log α(h) <= target, against brute force
# --------------------------------------------------------------------------------------------


def smallest_h(alpha: Any, target: float) -> int:
    return next(h for h in range(2, 10_000) if -math.log(alpha(h)) <= target + 1e-12)


@pytest.mark.parametrize("target", [0.3, 0.7, 1.0, 1.6, 2.5])
@pytest.mark.parametrize(
    ("options", "alpha"),
    [
        (("--negbin-mean", "1:40", "--negbin-size", "1"), lambda h: nbinom_alpha(h, 40.0, 1.0)),
        (("--poisson-mean", "0:6"), lambda h: poisson_alpha(h, 6.0)),
    ],
)
def test_target_kappa_picks_smallest_h(
    cancer_csv: Path, tmp_path: Path, target: float, options: tuple[str, ...], alpha: Any
) -> None:
    expected = smallest_h(alpha, target)
    out = tmp_path / "out"
    result = run(
        "release",
        "table",
        cancer_csv,
        "--keys",
        "county",
        "--count",
        "cancer",
        *options,
        "--target-kappa",
        target,
        "--out",
        out,
        "--quiet",
    )
    assert result.exit_code == 0, result.output
    assert f"h = {expected}" in result.stdout
    doc = json.loads((out / "certificate.json").read_text())
    assert doc["spec"]["mechanism"]["h"] == expected
    kappa = doc["guarantee"]["kappa"]
    assert kappa <= target + 1e-12
    assert kappa == pytest.approx(-math.log(alpha(expected)), rel=1e-9)
    if expected > 2:
        assert -math.log(alpha(expected - 1)) > target


# --------------------------------------------------------------------------------------------
# verify: good, tampered, malformed
# --------------------------------------------------------------------------------------------


@pytest.fixture()
def certificate(cancer_csv: Path, tmp_path: Path) -> Path:
    out = tmp_path / "out"
    result = run(
        "release",
        "table",
        cancer_csv,
        "--keys",
        "county",
        "--count",
        "cancer",
        "--h",
        10,
        "--negbin-mean",
        "1:40",
        "--negbin-size",
        1,
        "--out",
        out,
        "--quiet",
    )
    assert result.exit_code == 0, result.output
    return out / "certificate.json"


def tamper(path: Path, edit: Any) -> Path:
    doc = json.loads(path.read_text())
    edit(doc)
    bad = path.with_name("tampered.json")
    bad.write_text(json.dumps(doc))
    return bad


def test_verify_kappa_lowered(certificate: Path) -> None:
    def lower(doc: dict[str, Any]) -> None:
        doc["guarantee"]["kappa"] = 1.0

    result = run("verify", tamper(certificate, lower))
    assert result.exit_code == 1
    assert "guarantee.kappa" in result.stdout


def test_verify_class_alpha_changed(certificate: Path) -> None:
    def change(doc: dict[str, Any]) -> None:
        doc["spec"]["definition"]["priors"]["alpha"] = 0.5  # κ = −log 0.5 < stated: hidden

    result = run("verify", tamper(certificate, change))
    assert result.exit_code == 1
    assert "spec.definition.priors.alpha" in result.stdout
    assert "spec_sha256" in result.stdout


def test_verify_json(certificate: Path) -> None:
    payload = json.loads(run("verify", certificate, "--json").stdout)
    assert payload["ok"] is True and payload["mismatches"] == []


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("{not json", "is not valid JSON"),
        ("[1, 2]", "must hold a JSON object"),
        ('{"format": "other"}', "format must be"),
    ],
)
def test_verify_malformed_exit_2(tmp_path: Path, content: str, message: str) -> None:
    f = tmp_path / "cert.json"
    f.write_text(content)
    result = run("verify", f)
    assert result.exit_code == 2
    (line,) = result.stderr.strip().splitlines()
    assert line.startswith("error: ") and message in line


def test_verify_missing_file_exit_2(tmp_path: Path) -> None:
    result = run("verify", tmp_path / "nope.json")
    assert result.exit_code == 2 and "not found" in result.stderr


# --------------------------------------------------------------------------------------------
# Bad input: exit 2, one line naming the column/row, nothing written
# --------------------------------------------------------------------------------------------

BAD_TABLES = [
    ("k,c\na,1\nb,NaN\n", "--h 5", "'c'"),
    ("k,c\na,1\nb,-2\n", "--h 5", "negative"),
    ("k,c\na,1\nb,2.5\n", "--h 5", "fractional"),
    ("k,c\na,1\na,2\n", "--h 5", "duplicated key"),
    ("k,c\na,1\n,2\n", "--h 5", "key column 'k'"),
    ("k,c\na,1\nb,x\n", "--h 5", "is text"),
    ("k,c\na,1\nb,7\n", "--h 0", "h must be"),
    ("k,c\na,1\nb,7\n", "--h 5 --count nope", "'nope'"),
    ("k,c\na,1\nb,7\n", "--h 5 --keys kk", "'kk'"),
]


@pytest.mark.parametrize(("text", "extra", "message"), BAD_TABLES)
def test_bad_table_exit_2(tmp_path: Path, text: str, extra: str, message: str) -> None:
    src = tmp_path / "t.csv"
    src.write_text(text)
    out = tmp_path / "out"
    options = {"--keys": "k", "--count": "c", "--alpha": "0.2"}
    parts = extra.split()
    options.update(dict(zip(parts[::2], parts[1::2], strict=True)))
    args = [a for kv in options.items() for a in kv]
    result = run("release", "table", src, *args, "--out", out)
    assert result.exit_code == 2, result.output
    assert result.stdout == ""
    (line,) = result.stderr.strip().splitlines()
    assert line.startswith("error: ") and message in line, line
    assert "Traceback" not in result.stderr
    assert not out.exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["t.csv"]  # no temporary left


def test_empty_table_exit_2(tmp_path: Path) -> None:
    src = tmp_path / "t.parquet"
    pl.DataFrame({"k": [], "c": []}, schema={"k": pl.String, "c": pl.Int64}).write_parquet(src)
    result = run(
        "release",
        "table",
        src,
        "--keys",
        "k",
        "--count",
        "c",
        "--h",
        5,
        "--alpha",
        0.2,
        "--out",
        tmp_path / "out",
    )
    assert result.exit_code == 2
    (line,) = result.stderr.strip().splitlines()
    assert "empty" in line
    assert not (tmp_path / "out").exists()


def test_missing_file_exit_2(tmp_path: Path) -> None:
    result = run(
        "release",
        "table",
        tmp_path / "nope.csv",
        "--keys",
        "k",
        "--count",
        "c",
        "--h",
        5,
        "--alpha",
        0.2,
        "--out",
        tmp_path / "out",
    )
    assert result.exit_code == 2
    (line,) = result.stderr.strip().splitlines()
    assert "nope.csv" in line and "not found" in line
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ((), "exactly one of --alpha"),
        (("--alpha", "0.2", "--poisson-mean", "0:3"), "exactly one of --alpha"),
        (("--poisson-mean", "3"), "--poisson-mean must be LO:HI"),
        (("--negbin-mean", "1:4"), "go together"),
        (("--alpha", "1.5"), "alpha must be in (0, 1]"),
    ],
)
def test_bad_receiver_exit_2(
    cancer_csv: Path, tmp_path: Path, options: tuple[str, ...], message: str
) -> None:
    result = run(
        "release",
        "table",
        cancer_csv,
        "--keys",
        "county",
        "--count",
        "cancer",
        "--h",
        5,
        *options,
        "--out",
        tmp_path / "out",
    )
    assert result.exit_code == 2
    (line,) = result.stderr.strip().splitlines()
    assert message in line
    assert not (tmp_path / "out").exists()


def test_existing_output_needs_force(cancer_csv: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    out.mkdir()
    (out / "precious.txt").write_text("keep me")
    args = (
        "release",
        "table",
        cancer_csv,
        "--keys",
        "county",
        "--count",
        "cancer",
        "--h",
        5,
        "--alpha",
        0.2,
        "--out",
        out,
        "--quiet",
    )
    result = run(*args)
    assert result.exit_code == 2 and "--force" in result.stderr
    assert (out / "precious.txt").read_text() == "keep me"
    result = run(*args, "--force")
    assert result.exit_code == 0, result.output
    assert sorted(p.name for p in out.iterdir()) == ["certificate.json", "released.csv"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out"]


# --------------------------------------------------------------------------------------------
# release mean on the real data set
# --------------------------------------------------------------------------------------------


def test_release_mean(fair_csv: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    result = run(
        "release",
        "mean",
        fair_csv,
        "--column",
        "affairs",
        "--r1",
        1,
        "--r2",
        4,
        "--out",
        out,
        "--quiet",
    )
    assert result.exit_code == 0, result.output
    released = json.loads((out / "released.json").read_text())
    assert released["mean"] == pytest.approx(float(np.mean(load_fair()["affairs"].to_numpy())))
    doc = json.loads((out / "certificate.json").read_text())
    assert doc["guarantee"]["kappa"] == pytest.approx(1.0 + math.log(4.0))
    assert str(released["mean"])[:6] not in (out / "certificate.json").read_text()
    assert run("verify", out / "certificate.json").exit_code == 0


def test_release_group_means(fair_csv: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    result = run(
        "release",
        "mean",
        fair_csv,
        "--column",
        "affairs",
        "--group",
        "religious",
        "--r1",
        1,
        "--r2",
        4,
        "--out",
        out,
        "--quiet",
    )
    assert result.exit_code == 0, result.output
    released = pl.read_csv(out / "released.csv").sort("religious")
    expected = load_fair().group_by("religious").agg(pl.col("affairs").mean()).sort("religious")
    assert released.columns == ["religious", "mean"]  # group sizes are not published
    np.testing.assert_allclose(released["mean"].to_numpy(), expected["affairs"].to_numpy())
    assert run("verify", out / "certificate.json").exit_code == 0


def test_release_mean_target_kappa(fair_csv: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    result = run(
        "release",
        "mean",
        fair_csv,
        "--column",
        "affairs",
        "--r2",
        4,
        "--target-kappa",
        2.0,
        "--out",
        out,
        "--quiet",
    )
    assert result.exit_code == 0, result.output
    doc = json.loads((out / "certificate.json").read_text())
    assert doc["spec"]["definition"]["priors"]["r1"] == pytest.approx(2.0 - math.log(4.0))
    assert doc["guarantee"]["kappa"] <= 2.0 + 1e-12


@pytest.mark.parametrize(
    ("options", "message"),
    [
        (("--column", "nope", "--r1", "1", "--r2", "4"), "'nope'"),
        (("--column", "affairs", "--r1", "1"), "--r2 is required"),
        (("--column", "affairs", "--r1", "1", "--r2", "0.5"), "r2"),
        (("--column", "affairs", "--r1", "1", "--r2", "4", "--noise", "uniform:1"), "--noise"),
        (("--column", "affairs", "--r1", "1", "--r2", "4", "--noise", "gaussian:-1"), "--noise"),
    ],
)
def test_bad_mean_exit_2(
    fair_csv: Path, tmp_path: Path, options: tuple[str, ...], message: str
) -> None:
    result = run("release", "mean", fair_csv, *options, "--out", tmp_path / "out")
    assert result.exit_code == 2, result.output
    (line,) = result.stderr.strip().splitlines()
    assert line.startswith("error: ") and message in line
    assert not (tmp_path / "out").exists()


def test_text_mean_column_exit_2(tmp_path: Path) -> None:
    src = tmp_path / "t.csv"
    src.write_text("g,y\na,1\nb,x\n")
    result = run(
        "release", "mean", src, "--column", "y", "--r1", 1, "--r2", 4, "--out", tmp_path / "out"
    )
    assert result.exit_code == 2
    (line,) = result.stderr.strip().splitlines()
    assert "'y'" in line
