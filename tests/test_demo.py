"""The bundled real data sets load offline, and ``persuasive demo`` runs end to end."""

from __future__ import annotations

import json
import math
import socket
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
import pytest
from scipy import stats
from typer.testing import CliRunner

from persuasive.cli import app
from persuasive.files.output import MARKER, OutputFolder
from persuasive.release.data import load_cancer_counts, load_fair
from persuasive.release.demo import CANCER_H, CANCER_MEAN, CANCER_SIZE, FAIR_R

runner = CliRunner()


@pytest.fixture()
def offline(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(*args: Any, **kwargs: Any) -> None:
        raise OSError("network access in an offline test")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)


def test_cancer_counts_offline(offline: None) -> None:
    table = load_cancer_counts()
    assert table.columns == ["county", "cancer", "population"]
    assert table.height == 301
    assert table["county"].n_unique() == 301
    assert table["county"][0] == "county_001" and table["county"][300] == "county_301"
    assert table["cancer"].dtype == pl.Int64 and table["cancer"].min() >= 0  # type: ignore[operator]
    assert int(table["cancer"].sum()) == 11997  # statsmodels' cancer.csv


def test_fair_offline(offline: None) -> None:
    fair = load_fair()
    assert fair.height == 6366
    assert {"affairs", "religious", "occupation"} <= set(fair.columns)
    assert sorted(fair["religious"].unique().to_list()) == [1, 2, 3, 4]


def test_output_folder_leaves_nothing_on_error(tmp_path: Path) -> None:
    with pytest.raises(RuntimeError), OutputFolder(tmp_path / "out", kind="demo") as tmp:
        (tmp / "half.txt").write_text("half")
        raise RuntimeError("late failure")
    assert list(tmp_path.iterdir()) == []


@pytest.fixture(scope="module")
def demo_dir(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Any]:
    out = tmp_path_factory.mktemp("demo") / "persuasive-demo"
    result = runner.invoke(app, ["demo", str(out), "--quiet"])
    return out, result


def test_demo_runs(demo_dir: tuple[Path, Any]) -> None:
    out, result = demo_dir
    assert result.exit_code == 0, result.output
    for name in ("cancer_table", "affairs_mean", "affairs_by_religious"):
        assert (out / name / "certificate.json").is_file()
        assert (out / name / "report" / "report.html").is_file()
        assert (out / name / "report" / "report.md").is_file()
        assert str(out / name / "certificate.json") in result.stdout
    assert (out / "cancer_table" / "released.csv").is_file()
    assert (out / "affairs_mean" / "released.json").is_file()
    assert (out / "input" / "cancer_counts.csv").is_file() and (
        out / "input" / "fair.csv"
    ).is_file()
    marker = json.loads((out / MARKER).read_text())
    assert marker["kind"] == "demo"
    assert "cancer_table/certificate.json" in marker["files"]
    assert result.stdout.count("verified") >= 3 and "NOT verified" not in result.stdout
    assert "refused" in result.stdout  # the correlated-groups case is refused, with its reason
    assert "nats" in result.stdout


def test_demo_table_matches_closed_form(demo_dir: tuple[Path, Any]) -> None:
    out = demo_dir[0]
    doc = json.loads((out / "cancer_table" / "certificate.json").read_text())
    size, mean_max = CANCER_SIZE, CANCER_MEAN[1]
    alpha = stats.nbinom.cdf(CANCER_H - 1, size, size / (size + mean_max))
    assert doc["guarantee"]["kappa"] == pytest.approx(-math.log(alpha), rel=1e-9)
    released = pl.read_csv(out / "cancer_table" / "released.csv")
    original = load_cancer_counts()
    assert released["county"].to_list() == original["county"].to_list()
    small = original["cancer"] < CANCER_H
    assert released["cancer"].is_null().to_list() == small.to_list()
    assert (
        released.filter(~small)["cancer"].to_list() == original.filter(~small)["cancer"].to_list()
    )
    assert doc["publication"]["cells"] == 301
    assert doc["publication"]["suppressed"] == int(small.sum())


def test_demo_means_match(demo_dir: tuple[Path, Any]) -> None:
    out = demo_dir[0]
    r1, r2 = FAIR_R
    doc = json.loads((out / "affairs_mean" / "certificate.json").read_text())
    assert doc["guarantee"]["kappa"] == pytest.approx(r1 + math.log(r2))
    mean = json.loads((out / "affairs_mean" / "released.json").read_text())["mean"]
    assert mean == pytest.approx(float(np.mean(load_fair()["affairs"].to_numpy())))


def test_demo_certificates_verify(demo_dir: tuple[Path, Any]) -> None:
    certs = sorted(demo_dir[0].glob("*/certificate.json"))
    assert len(certs) == 3
    for cert in certs:
        for extra in ([], ["--published", str(cert.parent)]):
            result = runner.invoke(app, ["verify", str(cert), *extra])
            assert result.exit_code == 0, result.output


def test_demo_rerun_and_refusal(tmp_path: Path) -> None:
    out = tmp_path / "demo"
    first = runner.invoke(app, ["demo", str(out), "--quiet", "--json"])
    assert first.exit_code == 0, first.output
    payload = json.loads(first.stdout)
    assert payload["ok"] and len(payload["releases"]) >= 3
    again = runner.invoke(app, ["demo", str(out), "--quiet", "--json"])  # a previous demo: replaced
    assert again.exit_code == 0, again.output
    assert sorted(p.name for p in tmp_path.iterdir()) == ["demo"]
    other = tmp_path / "other"
    other.mkdir()
    (other / "mine.txt").write_text("x")
    refused = runner.invoke(app, ["demo", str(other), "--quiet"])
    assert refused.exit_code == 2
    (line,) = refused.stderr.strip().splitlines()
    assert line.startswith("error: ") and "--force" in line
    assert sorted(p.name for p in other.iterdir()) == ["mine.txt"]
    forced = runner.invoke(app, ["demo", str(other), "--quiet", "--force"])  # never yours
    assert forced.exit_code == 2 and "not written by persuasive" in forced.stderr
    assert sorted(p.name for p in other.iterdir()) == ["mine.txt"]
    (out / "mine.txt").write_text("x")  # a file of yours inside an earlier demo: kept
    kept = runner.invoke(app, ["demo", str(out), "--quiet", "--force"])
    assert kept.exit_code == 2 and "mine.txt" in kept.stderr
    assert (out / "mine.txt").read_text() == "x"
