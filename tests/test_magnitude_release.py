"""``pp.release_magnitude`` and ``persuasive release magnitude``: the PP sensitivity rule end to
end, against an independent per-cell recomputation (numpy sorts and sums per cell, κ from the
closed form of docs/magnitude.md §2), the written folder verified, tampering detected, and bad
input refused with one line (exit 2)."""

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
from persuasive.release.magnitude import release_magnitude
from persuasive.report.verify import verify_certificate

ROOT = Path(__file__).resolve().parents[1]
GRUNFELD = ROOT / "examples" / "data" / "grunfeld.csv"
runner = CliRunner()


def run(*args: Any) -> Any:
    return runner.invoke(app, [str(a) for a in args])


def by_hand(df: pl.DataFrame, keys: list[str], m: int, r1: float, gamma: float) -> dict:
    """κ of every cell from the rows, with a plain loop (the oracle)."""
    out = {}
    for key, part in df.group_by(keys):
        per_unit: dict[str, float] = {}
        for unit, val in part.select("firm", "invest").iter_rows():
            per_unit[unit] = per_unit.get(unit, 0.0) + val
        x = sorted((v for v in per_unit.values() if v > 0), reverse=True)
        rest = sum(v * v for v in x[m + 1 :])
        kappa = math.inf if len(x) <= m + 1 else r1 + math.log1p(gamma**2 * x[0] ** 2 / rest)
        out[tuple(str(k) for k in key)] = (sum(x), kappa)
    return out


@pytest.mark.parametrize(
    ("keys", "m", "gamma"), [(["year"], 1, 1.0), (["industry", "period"], 0, 2.0)]
)
def test_release_against_a_per_cell_recomputation(keys, m, gamma):
    df = pl.read_csv(GRUNFELD)
    rel = release_magnitude(
        GRUNFELD, keys=keys, value="invest", unit="firm", target_kappa=3.5, insiders=m, gamma=gamma
    )
    want = by_hand(df, keys, m, 1.0, gamma)
    got = {tuple(r[: len(keys)]): r for r in rel.cells.iter_rows()}
    assert set(got) == set(want)
    pub = {tuple(r[: len(keys)]): r[-1] for r in rel.published.iter_rows()}
    for key, (total, kappa) in want.items():
        row = dict(zip(rel.cells.columns, got[key], strict=True))
        assert row["total"] == pytest.approx(total, rel=1e-12)
        assert row["kappa"] == pytest.approx(kappa, rel=1e-9) or math.isinf(kappa)
        assert row["suppressed"] == (kappa > 3.5)
        assert pub[key] is None if kappa > 3.5 else pub[key] == pytest.approx(total, rel=1e-12)


def test_cli_end_to_end_and_verify(tmp_path):
    out = tmp_path / "year"
    res = run(
        "release", "magnitude", GRUNFELD, "--keys", "year", "--value", "invest", "--unit",
        "firm", "--target-kappa", "3.5", "--insiders", "1", "--out", out, "--report", "-q",
    )  # fmt: skip
    assert res.exit_code == 0, res.output
    names = sorted(p.name for p in out.iterdir())
    assert {"released.csv", "certificate.json", "custodian_cells.csv", "report"} <= set(names)
    check = run("verify", out / "certificate.json", "--published", out)
    assert check.exit_code == 0, check.output
    published = pl.read_csv(out / "released.csv", schema_overrides={"year": pl.String})
    custodian = pl.read_csv(out / "custodian_cells.csv", schema_overrides={"year": pl.String})
    hidden = custodian.filter(pl.col("kappa") > 3.5)["year"].to_list()
    assert hidden and published.filter(pl.col("total").is_null())["year"].to_list() == hidden
    html = (out / "report" / "report.html").read_text(encoding="utf-8")
    assert "The rules on the same cells" in html and "Dominance in the worst cells" in html
    assert "This report is for the custodian, not for publication" in html
    doc = json.loads((out / "certificate.json").read_text())
    assert doc["kind"] == "magnitude" and doc["guarantee"]["kappa"] == 3.5
    assert "invest" not in json.dumps(doc["publication"])  # no value in the certificate


def test_tampering_is_named(tmp_path):
    out = tmp_path / "rel"
    rel = release_magnitude(GRUNFELD, keys="year", value="invest", unit="firm", target_kappa=3.5)
    rel.write(out)
    doc = json.loads((out / "certificate.json").read_text())
    doc["guarantee"]["kappa"] = 1.0
    mism = verify_certificate(doc, published=out).mismatches
    assert mism[0].startswith("guarantee.kappa: stated 1")
    text = (out / "released.csv").read_text().splitlines()
    row = next(i for i, line in enumerate(text) if line.endswith(","))
    text[row] += "123.0"  # a suppressed total filled back in
    (out / "released.csv").write_text("\n".join(text) + "\n")
    again = verify_certificate(out / "certificate.json", published=out)
    assert not again.ok and any("sha256" in m for m in again.mismatches)


def test_holding_column_through_the_cli(tmp_path):
    df = pl.DataFrame(
        {
            "k": ["a"] * 5,
            "id": ["u1", "u2", "u3", "u4", "u5"],
            "v": [5.0, 4.0, 3.0, 1.0, 1.0],
            "h": ["G", None, "G", None, None],
        }
    )
    data = tmp_path / "m.csv"
    df.write_csv(data)
    plain = release_magnitude(data, keys="k", value="v", unit="id", target_kappa=9.0)
    held = release_magnitude(data, keys="k", value="v", unit="id", target_kappa=9.0, holding="h")
    # units: 1 + log(1 + 25/(9+1+1)); holding G = 8: 1 + log(1 + 64/(1+1))
    assert plain.cells["kappa"][0] == pytest.approx(1 + math.log1p(25 / 11), rel=1e-12)
    assert held.cells["kappa"][0] == pytest.approx(1 + math.log1p(64 / 2), rel=1e-12)
    res = run(
        "release", "magnitude", data, "--keys", "k", "--value", "v", "--unit", "id",
        "--holding", "h", "--target-kappa", "4", "--out", tmp_path / "o", "--json",
    )  # fmt: skip
    assert res.exit_code == 0, res.output
    assert json.loads(res.output)["summary"]["n_suppressed"] == 1  # 1 + log 33 > 4
    res = run(
        "release", "magnitude", data, "--keys", "k", "--value", "v", "--unit", "id",
        "--target-kappa", "4", "--out", tmp_path / "o2", "--json",
    )  # fmt: skip
    assert json.loads(res.output)["summary"]["n_suppressed"] == 0  # 1 + log(36/11) < 4


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--target-kappa", "-1"], "error: --target-kappa must be in [0, 1000]; got -1"),
        (["--target-kappa", "3", "--insiders", "-2"], "error: --insiders must be an integer"),
        (["--target-kappa", "3", "--r2", "0.5"], "error: --r2 must be in [1, inf); got 0.5"),
        (["--target-kappa", "3", "--margins", "year"], "error: margins: 'year' must be"),
        (["--target-kappa", "3", "--unit", "nope"], "error: unit column 'nope' does not exist"),
    ],
)
def test_bad_input_is_one_line_exit_2(tmp_path, extra, message):
    args = ["release", "magnitude", GRUNFELD, "--keys", "year", "--value", "invest"]
    if "--unit" not in extra:
        args += ["--unit", "firm"]
    res = run(*args, *extra, "--out", tmp_path / "bad")
    assert res.exit_code == 2, res.output
    assert res.output.startswith(message), res.output
    assert len(res.output.strip().splitlines()) == 1
    assert not (tmp_path / "bad").exists()


def test_bad_value_in_the_file_names_the_row(tmp_path):
    data = tmp_path / "bad.csv"
    data.write_text("k,id,v\na,1,2.5\na,2,-3\n")
    res = run(
        "release", "magnitude", data, "--keys", "k", "--value", "v", "--unit", "id",
        "--target-kappa", "3", "--out", tmp_path / "o",
    )  # fmt: skip
    assert res.exit_code == 2
    assert res.output.strip() == (
        "error: column 'v', row 2: -3.0 is negative; a magnitude table sums non-negative "
        "contributions"
    )
    data.write_text("k,id,v\na,1,2.5\na,2,lots\n")
    with pytest.raises(ValidationError, match="column 'v', row 2: 'lots' is not a number"):
        release_magnitude(data, keys="k", value="v", unit="id", target_kappa=3.0)


def test_vectorised_on_many_cells_is_fast():
    """10^5 contributions in 10^3 cells against a numpy sort-per-cell oracle of κ."""
    rng = np.random.default_rng(0)
    n = 100_000
    cell = rng.integers(0, 1000, size=n)
    val = np.round(rng.lognormal(0, 1.5, size=n), 3)  # published totals are exact sums
    df = pl.DataFrame({"c": cell, "id": np.arange(n), "v": val})
    rel = release_magnitude(df, keys="c", value="v", unit="id", target_kappa=3.0, insiders=2)
    order = np.lexsort((-val, cell))
    cs, vs = cell[order], val[order]
    starts = np.searchsorted(cs, np.arange(1000))
    ends = np.searchsorted(cs, np.arange(1000), side="right")
    want = np.array(
        [
            1 + math.log1p(vs[s] ** 2 / np.sum(vs[s + 3 : e] ** 2))
            for s, e in zip(starts, ends, strict=True)
        ]
    )
    np.testing.assert_allclose(rel.cells["kappa"].to_numpy(), want, rtol=1e-9)


def test_display_shows_only_the_published_table():
    rel = release_magnitude(GRUNFELD, keys="year", value="invest", unit="firm", target_kappa=3.5)
    line = repr(rel)
    assert line.startswith("<MagnitudeRelease κ=3.5, δ=0, holds; cells: 20, suppressed: 9")
    html = rel._repr_html_()
    assert html.count("suppressed</em>") == int(rel.published.head(10)["total"].is_null().sum())
    hidden = rel.cells.filter(pl.col("suppressed"))["total"].to_list()
    assert not any(f"{t:.6g}" in html for t in hidden)  # no suppressed total, even rounded
    assert rel.guarantee["kappa"] == 3.5 and rel.guarantee["exact"] is False


def test_public_size_release_covers_the_pattern(tmp_path):
    """--size: κ from the public sizes (a per-cell loop oracle on market values), the pattern
    unchanged when the values change, and a certificate whose notes say the pattern is
    covered; verify exit 0."""
    df = pl.read_csv(GRUNFELD)
    rel = release_magnitude(
        GRUNFELD, keys="year", value="invest", unit="firm", size="market_value", target_kappa=2.7
    )
    for (year,), part in df.group_by(["year"]):
        z = sorted(part["market_value"].to_list(), reverse=True)
        want = 1 + math.log1p(z[0] ** 2 / sum(v * v for v in z[2:]))
        got = rel.cells.filter(pl.col("year") == str(year))
        assert got["kappa"][0] == pytest.approx(want, rel=1e-9)
        assert got["suppressed"][0] == (want > 2.7)
    shuffled = df.with_columns(pl.col("invest").shuffle(seed=1) * 3.0)
    other = release_magnitude(
        shuffled, keys="year", value="invest", unit="firm", size="market_value", target_kappa=2.7
    )
    assert other.cells["suppressed"].to_list() == rel.cells["suppressed"].to_list()
    out = tmp_path / "sized"
    res = run(
        "release", "magnitude", GRUNFELD, "--keys", "year", "--value", "invest", "--unit",
        "firm", "--size", "market_value", "--target-kappa", "2.7", "--out", out, "-q",
    )  # fmt: skip
    assert res.exit_code == 0, res.output
    doc = json.loads((out / "certificate.json").read_text())
    assert doc["claim"]["spec"]["mechanism"]["size"] == "market_value"
    assert any(n.startswith("Covered: the pattern of suppressed cells") for n in doc["notes"])
    assert run("verify", out / "certificate.json", "--published", out).exit_code == 0


def _leaves(doc, path=()):
    if isinstance(doc, dict):
        for k, v in doc.items():
            yield from _leaves(v, (*path, k))
    elif isinstance(doc, list):
        for i, v in enumerate(doc):
            yield from _leaves(v, (*path, i))
    else:
        yield path, doc


def _edited(value):
    if isinstance(value, bool):
        return not value
    if isinstance(value, (int, float)):
        return value + 1
    if value is None:
        return "x"
    return str(value) + "x"


@pytest.mark.parametrize(
    ("size", "margins", "counts"),
    [(None, None, False), ("market_value", None, False), ("market_value", "industry", False),
     (None, None, True)],
)  # fmt: skip
def test_every_edit_of_the_certificate_is_caught(tmp_path, size, margins, counts):
    """Each leaf of a genuine certificate changed (number + 1, text + 'x', a flag flipped, null
    to text): verify never says verified, and never crashes."""
    import copy

    out = tmp_path / "rel"
    keys = "year" if margins is None else "industry,period"
    release_magnitude(
        GRUNFELD, keys=keys, value="invest", unit="firm", target_kappa=9.0 if margins else 3.5,
        size=size, margins=margins, insiders=1, counts=counts,
    ).write(out)  # fmt: skip
    doc = json.loads((out / "certificate.json").read_text())
    assert verify_certificate(doc, published=out).ok
    count = 0
    for path, value in _leaves(doc):
        edited = copy.deepcopy(doc)
        node = edited
        for p in path[:-1]:
            node = node[p]
        node[path[-1]] = _edited(value)
        count += 1
        try:
            check = verify_certificate(edited, published=out)
        except ValidationError:
            continue  # refused to read: not verified either
        assert not check.ok, path
    assert count > 30
