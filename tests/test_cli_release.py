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
from persuasive.files.table_digest import digest_frame
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


def read_text(path: Path) -> pl.DataFrame:
    """A CSV as written: every column as text, no type inference."""
    return pl.read_csv(path, infer_schema=False)


def check_released(
    released: pl.DataFrame, original: pl.DataFrame, keys: list[str], count: str, h: int
) -> None:
    """Both frames as text (``read_text``): the keys are published exactly as written, a cell
    is empty exactly where the input count is below h, and every other count is the input's."""
    assert released.columns == [*keys, count]  # no per-cell loss: it would leak counts below r
    assert released.height == original.height
    assert released.select(keys).equals(original.select(keys))  # same keys, same order, as text
    below = (original[count].cast(pl.Int64) < h).to_list()
    for was, got, small in zip(original[count], released[count], below, strict=True):
        assert got == (None if small else was)


def names(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir())


MARKER = ".persuasive-output.json"


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
    assert names(out) == [MARKER, "certificate.json", "released.csv"]
    check_released(read_text(out / "released.csv"), read_text(cancer_csv), ["county"], "cancer", 10)
    doc = json.loads((out / "certificate.json").read_text())
    expected = -math.log(nbinom_alpha(10, 40.0, 1.0))
    assert doc["guarantee"]["kappa"] == pytest.approx(expected, rel=1e-9)
    assert doc["guarantee"]["holds"] is True
    assert doc["guarantee"]["basis"].startswith("Prop 8")
    assert f"{expected:.4g} nats" in result.stdout  # the plain sentence: κ in nats
    for args in ((), ("--published", out)):
        check = run("verify", out / "certificate.json", *args)
        assert check.exit_code == 0, check.output
        assert check.stdout.startswith("verified")


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
    assert released.schema == {"county": pl.String, "cancer": pl.Int64}  # types kept
    check_released(released, load_cancer_counts().drop("population"), ["county"], "cancer", 5)
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
    released = read_text(out / "released.csv")
    check_released(released, read_text(src), ["region", "year"], "count", h)
    assert (released["count"].drop_nulls().cast(pl.Int64) >= h).all()
    assert run("verify", out / "certificate.json").exit_code == 0


def test_same_options_give_the_same_claim_guarantee_and_notes(tmp_path: Path) -> None:
    """Assumption 1: different tables, same options -> the claim, guarantee and notes are
    byte-identical; the publication section (the published file's hash) is not."""
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
    docs = [json.loads((p / "certificate.json").read_text()) for p in paths]
    for field in ("claim", "guarantee", "notes"):
        assert json.dumps(docs[0][field], sort_keys=True) == json.dumps(
            docs[1][field], sort_keys=True
        )
    assert docs[0]["publication"] != docs[1]["publication"]
    for doc, out in zip(docs, paths, strict=True):
        (entry,) = doc["publication"]["files"]
        schema = {"region": pl.String, "year": pl.String, "count": pl.Int64}
        published = pl.read_csv(out / "released.csv", schema=schema)
        assert entry["table"] == digest_frame(published)


# --------------------------------------------------------------------------------------------
# --target-kappa: the smallest h with −log α(h) <= target, against brute force
# --------------------------------------------------------------------------------------------


def smallest_h(alpha: Any, target: float) -> int:
    return next(h for h in range(2, 10_000) if -math.log(alpha(h)) <= target)


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
    assert doc["claim"]["spec"]["mechanism"]["h"] == expected
    assert doc["claim"]["target_kappa"] == doc["claim"]["spec"]["definition"]["kappa"] == target
    kappa = doc["guarantee"]["kappa"]
    assert kappa <= target and doc["guarantee"]["holds"] is True
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
        doc["claim"]["spec"]["definition"]["priors"]["alpha"] = 0.5  # κ = −log 0.5 < stated

    result = run("verify", tamper(certificate, change))
    assert result.exit_code == 1
    assert "claim.spec.definition.priors.alpha" in result.stdout
    assert "digest" in result.stdout


def test_verify_consistent_certificate_claiming_no_guarantee_exits_1(tmp_path: Path) -> None:
    from persuasive.classes.receivers import SmallCellReceiver
    from persuasive.files.output import OutputFolder
    from persuasive.release.pipeline import exit_status, publish
    from persuasive.release.tables import release_table

    frame = pl.DataFrame({"k": ["a", "b"], "c": [1, 9]})
    rel = release_table(  # κ = −log 0.2 ≈ 1.61 is above the target 1
        frame, keys="k", count="c", h=5, receiver=SmallCellReceiver(0.2), target_kappa=1.0
    )
    outcome = publish(rel, OutputFolder(tmp_path / "out"))
    assert outcome.document["guarantee"]["holds"] is False and exit_status(outcome) == 1
    result = run("verify", tmp_path / "out" / "certificate.json")
    assert result.exit_code == 1, result.output
    assert "claims no guarantee" in result.stdout and "mismatch" not in result.stdout
    payload = json.loads(run("verify", tmp_path / "out" / "certificate.json", "--json").stdout)
    assert payload["consistent"] is True and payload["claims_guarantee"] is False
    assert payload["ok"] is False


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
    ("k,c\na,1\nb,NaN\n", "--h 5", "'c' at row 2"),
    ("k,c\na,1\nb,-2\n", "--h 5", "negative"),
    ("k,c\na,1\nb,2.5\n", "--h 5", "'2.5'"),
    ("k,c\na,1\nb,3.0\n", "--h 5", "decimal point"),  # counts are whole numbers, as digits
    ("k,c\na,1\nb,1e3\n", "--h 5", "'1e3'"),
    ("k,c\na,1\nb, 3\n", "--h 5", "' 3'"),
    ("k,c\na,1\nb,\n", "--h 5", "missing"),
    ("k,c\na,1\nb,99999999999999999999\n", "--h 5", "above the largest count"),
    ("k,c\na,1\na,2\n", "--h 5", "duplicated key"),
    ("k,c\na,1\n,2\n", "--h 5", "'k' at row 2"),
    ("k,c\na,1\nb,x\n", "--h 5", "'x'"),
    ("k,c,c\na,1,1\nb,7,7\n", "--h 5", "'c' twice"),
    ("k,c\na,1\nb,7\n", "--h 0", "--h must be"),
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
    """--force replaces only a folder persuasive wrote, and never deletes a file of yours."""
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
    result = run(*args, "--force")  # not persuasive's folder: refused even with --force
    assert result.exit_code == 2 and "not written by persuasive" in result.stderr
    assert names(out) == ["precious.txt"] and (out / "precious.txt").read_text() == "keep me"
    (out / "precious.txt").unlink()
    assert run(*args).exit_code == 0  # an empty folder needs no --force
    assert names(out) == [MARKER, "certificate.json", "released.csv"]
    result = run(*args)
    assert result.exit_code == 2 and "--force" in result.stderr
    result = run(*args, "--force")  # persuasive's own folder: replaced
    assert result.exit_code == 0, result.output
    assert names(out) == [MARKER, "certificate.json", "released.csv"]
    assert names(tmp_path) == ["out"]  # no temporary folder left beside it
    (out / "notes.txt").write_text("mine")  # a file of yours in persuasive's folder
    result = run(*args, "--force")
    assert result.exit_code == 2 and "notes.txt" in result.stderr
    assert (out / "notes.txt").read_text() == "mine"


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
    assert set(released) == {"mean"}  # only the mean is published
    values = read_text(fair_csv)["affairs"].cast(pl.Float64).to_numpy()
    assert released["mean"] == pytest.approx(float(np.mean(values)), rel=1e-12)
    assert names(out) == [MARKER, "certificate.json", "released.json"]
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
    released = read_text(out / "released.csv").sort("religious")
    expected = (
        read_text(fair_csv)  # groups are published as written in the input (text)
        .group_by("religious")
        .agg(pl.col("affairs").cast(pl.Float64).mean())
        .sort("religious")
    )
    assert released.columns == ["religious", "mean"]  # group sizes are not published
    assert (
        released["religious"].to_list() == expected["religious"].to_list() == ["1", "2", "3", "4"]
    )
    np.testing.assert_allclose(
        released["mean"].cast(pl.Float64).to_numpy(), expected["affairs"].to_numpy(), rtol=1e-12
    )
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
    assert doc["claim"]["spec"]["definition"]["priors"]["r1"] == pytest.approx(2.0 - math.log(4.0))
    assert doc["guarantee"]["kappa"] <= 2.0 and doc["guarantee"]["holds"] is True
    assert doc["claim"]["target_kappa"] == 2.0


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
    assert "'y' at row 2" in line and "'x'" in line
    assert not (tmp_path / "out").exists()
