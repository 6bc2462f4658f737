"""Exit codes and one-line errors of the ``persuasive`` command (issue 10).

0 holds / verified, 1 does not hold, 2 bad input or usage (exactly one ``error: `` line on
standard error, no usage box, no traceback), 3 an internal error (one ``error: internal error``
line; the traceback only with ``--debug``).
"""

from __future__ import annotations

import json
import math
import subprocess
import sys
from importlib.metadata import version
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from persuasive.cli import app
from persuasive.cli._app import DEBUG

runner = CliRunner()


@pytest.fixture(autouse=True)
def _no_debug(monkeypatch: pytest.MonkeyPatch) -> None:
    # --debug sets a process-wide flag; keep each test's run independent of the others
    monkeypatch.setitem(DEBUG, "on", False)


def invoke(*args: str) -> Any:
    return runner.invoke(app, list(args))


def one_error(result: Any, code: int = 2) -> str:
    assert result.exit_code == code, (result.exit_code, result.stdout, result.stderr)
    lines = result.stderr.splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("error: "), result.stderr
    for box in ("Usage:", "╭", "Try '", "Traceback"):
        assert box not in result.stderr + result.stdout
    return lines[0]


@pytest.fixture
def table(tmp_path: Path) -> Path:
    p = tmp_path / "in.csv"
    p.write_text("k,c\na,5\nb,1\nc,9\n", encoding="utf-8")
    return p


@pytest.fixture
def values(tmp_path: Path) -> Path:
    p = tmp_path / "v.csv"
    p.write_text("v,g\n1.5,a\n2.5,a\n3.0,b\n4.0,b\n", encoding="utf-8")
    return p


def table_args(data: Path, out: Path, *extra: str) -> list[str]:
    return [
        "release", "table", str(data), "--keys", "k", "--count", "c", "--out", str(out),
        "--quiet", *extra,
    ]  # fmt: skip


def nothing_written(folder: Path, *names: str) -> None:
    assert sorted(p.name for p in folder.iterdir()) == sorted(names)


# --------------------------------------------------------------------------------------------
# Usage errors: exit 2, one line
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("extra", "needle"),
    [
        (["--h", "2.5", "--poisson-mean", "1:10"], "--h"),
        (["--h", "1e30", "--poisson-mean", "1:10"], "--h"),
        (["--h", str(10**30), "--poisson-mean", "1:10"], "--h"),
        (["--h", "1", "--poisson-mean", "1:10"], "--h"),
        (["--h", "3", "--poisson-mean", "10:1"], "--poisson-mean"),
        (["--h", "3", "--poisson-mean", "1:nan"], "--poisson-mean"),
        (["--h", "3", "--alpha", "1.5"], "--alpha"),
        (["--h", "3", "--alpha", "0.5", "--r", "9"], "r"),
        (["--h", "3", "--alpha", "0.5", "--bogus"], "--bogus"),
        (["--h", "3", "--alpha", "0.5", "--format", "xlsx"], "--format"),
        (["--h"], "--h"),
        (["--h", "3"], "--alpha"),
    ],
    ids=lambda v: " ".join(v) if isinstance(v, list) else v,
)
def test_release_table_usage_errors(
    table: Path, tmp_path: Path, extra: list[str], needle: str
) -> None:
    line = one_error(invoke(*table_args(table, tmp_path / "out", *extra)))
    assert needle in line
    nothing_written(tmp_path, "in.csv")


def test_missing_required_option(table: Path, tmp_path: Path) -> None:
    line = one_error(invoke("release", "table", str(table), "--keys", "k", "--h", "3"))
    assert "--count" in line or "--out" in line


@pytest.mark.parametrize(
    ("extra", "needle"),
    [
        (["--seed", "-1"], "--seed"),
        (["--seed", str(2**63)], "--seed"),
        (["--r2", "0.5"], "--r2"),
        (["--delta", "1.5"], "--delta"),
        (["--noise", "laplace:0"], "--noise"),
        (["--unknown-option"], "--unknown-option"),
    ],
)
def test_release_mean_usage_errors(
    values: Path, tmp_path: Path, extra: list[str], needle: str
) -> None:
    args = ["release", "mean", str(values), "--column", "v", "--r1", "1", "--r2", "4"]
    line = one_error(invoke(*args, "--out", str(tmp_path / "out"), "--quiet", *extra))
    assert needle in line
    nothing_written(tmp_path, "v.csv")


COMPOSITION = """\
name = "composition_laplace"
[mechanism]
type = "composition"
[mechanism.first]
type = "laplace"
scale = 1.0
[mechanism.second]
type = "laplace"
scale = 2.0
[definition]
kind = "pp"
kappa = 1.5
delta = 0.0
scores = [{ type = "log" }]
priors = { class = "neighbours" }
"""


@pytest.fixture
def composition(tmp_path: Path) -> Path:
    p = tmp_path / "composition.toml"
    p.write_text(COMPOSITION, encoding="utf-8")
    return p


@pytest.mark.parametrize(
    ("extra", "needle"),
    [
        (["--samples", "1"], "--samples"),
        (["--samples", "10000000001"], "--samples"),
        (["--samples", str(10**30)], "--samples"),
        (["--samples", "-5"], "--samples"),
        (["--seed", "-1"], "--seed"),
        (["--nope"], "--nope"),
    ],
)
def test_audit_usage_errors(composition: Path, extra: list[str], needle: str) -> None:
    line = one_error(invoke("audit", str(composition), "--quiet", *extra))
    assert needle in line
    assert "memory" not in line.lower()


def test_examples_samples_cap() -> None:
    line = one_error(invoke("examples", "--samples", str(10**12), "--quiet"))
    assert "--samples" in line


def test_certify_composition_is_the_sum_of_the_parts(composition: Path) -> None:
    result = invoke("certify", str(composition), "--json")
    assert result.exit_code == 0, result.stderr
    doc = json.loads(result.stdout)
    # pure DP composes additively and Laplace(b) is exactly (1/b)-DP: 1/1 + 1/2
    assert math.isclose(doc["kappa"], 1.5, rel_tol=1e-12)
    assert doc["holds"] is True


def test_audit_composition_gives_a_verdict_below_the_certificate(composition: Path) -> None:
    result = invoke("audit", str(composition), "--json", "--seed", "3", "--quiet")
    assert result.exit_code in (0, 1), result.stderr
    doc = json.loads(result.stdout)
    assert doc["kappa"] <= 1.5 + 1e-9


def test_version_and_help() -> None:
    result = invoke("--version")
    assert result.exit_code == 0 and result.stderr == ""
    assert result.stdout.strip() == f"persuasive {version('persuasive-privacy')}"
    result = invoke("--help")
    assert result.exit_code == 0 and "release" in result.stdout and "verify" in result.stdout
    exe = Path(sys.executable).with_name("persuasive")
    for flag in ("--version", "--help"):
        proc = subprocess.run([str(exe), flag], capture_output=True, text=True, timeout=60)
        assert proc.returncode == 0 and proc.stderr == "", proc.stderr


def test_stats_help_is_readable() -> None:
    result = invoke("release", "linear", "--help")
    assert result.exit_code == 0
    assert "[[statistics]]" in result.stdout
    assert "of []." not in result.stdout and "\\[" not in result.stdout


# --------------------------------------------------------------------------------------------
# Internal errors: exit 3, one line, traceback only with --debug
# --------------------------------------------------------------------------------------------


def _boom(*_args: Any, **_kwargs: Any) -> Any:
    raise RuntimeError("boom from a test")


def test_internal_error_is_one_line(
    table: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import persuasive.release.tables as tables

    monkeypatch.setattr(tables, "release_table", _boom)
    args = table_args(table, tmp_path / "out", "--h", "3", "--alpha", "0.5")
    line = one_error(invoke(*args), code=3)
    assert line.startswith("error: internal error")
    assert "RuntimeError: boom from a test" in line
    nothing_written(tmp_path, "in.csv")

    result = invoke("--debug", *args)
    assert result.exit_code == 3
    assert "Traceback (most recent call last)" in result.stderr
    assert result.stderr.splitlines()[-1].startswith("error: internal error")
    nothing_written(tmp_path, "in.csv")


def test_internal_error_while_writing_leaves_nothing(
    table: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import persuasive.report.certificate as certificate

    monkeypatch.setattr(certificate, "envelope", _boom)
    line = one_error(
        invoke(*table_args(table, tmp_path / "out", "--h", "3", "--alpha", "0.5")), code=3
    )
    assert line.startswith("error: internal error")
    nothing_written(tmp_path, "in.csv")


def test_published_file_that_does_not_read_back_is_an_internal_error(
    table: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The pipeline reads every published file back: one that differs from what was released
    (here: the writer changes a shown count) publishes nothing."""
    import persuasive.release.pipeline as pipeline

    real = pipeline.write_frame

    def corrupting(frame: Any) -> Any:
        import polars as pl

        changed = frame.with_columns(
            pl.when(pl.col("c") == 9).then(pl.lit(10, pl.Int64)).otherwise(pl.col("c")).alias("c")
        )
        return real(changed)

    monkeypatch.setattr(pipeline, "write_frame", corrupting)
    line = one_error(
        invoke(*table_args(table, tmp_path / "out", "--h", "3", "--alpha", "0.5")), code=3
    )
    assert "internal error" in line and "released.csv" in line
    nothing_written(tmp_path, "in.csv")


# --------------------------------------------------------------------------------------------
# Duplicates
# --------------------------------------------------------------------------------------------


def test_keys_1_and_1_0_are_not_duplicates(tmp_path: Path) -> None:
    data = tmp_path / "in.csv"
    data.write_text("k,c\n1,5\n1.0,6\n01,7\n", encoding="utf-8")
    out = tmp_path / "out"
    result = invoke(*table_args(data, out, "--h", "3", "--alpha", "0.5"))
    assert result.exit_code == 0, result.stderr
    assert (out / "released.csv").read_text(encoding="utf-8") == "k,c\n1,5\n1.0,6\n01,7\n"
    groups = tmp_path / "g.csv"
    groups.write_text("g,v\n1,1.0\n1,2.0\n1.0,3.0\n1.0,5.0\n", encoding="utf-8")
    result = invoke(
        "release", "mean", str(groups), "--column", "v", "--group", "g", "--r1", "1",
        "--r2", "4", "--out", str(tmp_path / "gout"), "--quiet",
    )  # fmt: skip
    assert result.exit_code == 0, result.stderr
    text = (tmp_path / "gout" / "released.csv").read_text(encoding="utf-8")
    assert sorted(text.splitlines()[1:]) == ["1,1.5", "1.0,4.0"]


def test_true_duplicate_key_is_one_line(tmp_path: Path) -> None:
    data = tmp_path / "in.csv"
    data.write_text("k,c\n1,5\n2,6\n1,7\n", encoding="utf-8")
    line = one_error(invoke(*table_args(data, tmp_path / "out", "--h", "3", "--alpha", "0.5")))
    assert "k='1'" in line and "rows 1 and 3" in line


def test_duplicate_error_cannot_leak_out_of_verify(table: Path, tmp_path: Path) -> None:
    from persuasive.report.certificate import digest_of, dumps

    out = tmp_path / "out"
    result = invoke(*table_args(table, out, "--h", "3", "--alpha", "0.5"))
    assert result.exit_code == 0, result.stderr
    doc = json.loads((out / "certificate.json").read_text(encoding="utf-8"))
    doc["claim"]["columns"]["keys"] = ["__persuasive_row__"]
    doc["digest"] = digest_of(doc)
    (out / "certificate.json").write_text(dumps(doc), encoding="utf-8")
    (out / "released.csv").write_text("__persuasive_row__,c\na,5\nb,\nc,9\n", encoding="utf-8")
    result = invoke("verify", str(out / "certificate.json"), "--published", str(out))
    assert result.exit_code in (1, 2), (result.exit_code, result.stderr)
    assert "internal error" not in result.stderr
    assert "DuplicateError" not in result.stdout + result.stderr


def test_verify_missing_file_is_one_line(tmp_path: Path) -> None:
    line = one_error(invoke("verify", str(tmp_path / "nope.json")))
    assert "not found" in line
