"""A-priori bounds through the release, the command line and verify (issue 12), with κ checked
against values computed here from scipy's laws and by enumeration of the boxed fibre."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import polars as pl
import pytest
from scipy import stats
from typer.testing import CliRunner

from persuasive.classes.receivers import NegativeBinomialReceiver, PoissonReceiver
from persuasive.cli import app
from persuasive.errors import ValidationError
from persuasive.files.output import OutputFolder
from persuasive.margins import MarginTable, worst_case_losses
from persuasive.release.margins import release_table_with_margins
from persuasive.release.pipeline import publish
from persuasive.report.verify import verify_certificate

runner = CliRunner()
DATA = Path(__file__).resolve().parents[1] / "examples" / "data"
ARGS = [
    "release",
    "table",
    str(DATA / "fair_crosstab.csv"),
    "--keys",
    "religious,occupation",
    "--count",
    "n",
    "--h",
    "10",
    "--negbin-mean",
    "1:40",
    "--negbin-size",
    "1",
    "--margins",
    "rows,cols",
]


def _nb_box_surprise(v: int, a: int, b: float) -> float:
    """max over the mean range's ends of -log F(v | a <= X <= b), negative binomial of size 1."""
    out = []
    for mu in (1.0, 40.0):
        law = stats.nbinom(1, 1 / (1 + mu))
        mass = law.sf(a - 1) if math.isinf(b) else law.pmf(np.arange(a, int(b) + 1)).sum()
        out.append(-law.logpmf(v) + math.log(mass))
    return max(out)


def test_cli_release_with_apriori_bounds_verifies(tmp_path: Path) -> None:
    """examples/data/fair_apriori.csv: (3, 1) = 6 is known to be >= 3 and (4, 1) = 8 to lie in
    [5, 9]; both are recovered from the margins, and their κ is the conditioned surprise."""
    out = tmp_path / "ap"
    res = runner.invoke(
        app,
        [
            *ARGS,
            "--target-kappa",
            "4.5",
            "--apriori",
            str(DATA / "fair_apriori.csv"),
            "--out",
            str(out),
            "-q",
        ],
    )
    assert res.exit_code == 0, res.output
    doc = json.loads((out / "certificate.json").read_text())
    assert doc["claim"]["apriori"] == [
        {"key": ["1", "6"], "lower": 20, "upper": 30},
        {"key": ["3", "1"], "lower": 3, "upper": None},
        {"key": ["4", "1"], "lower": 5, "upper": 9},
    ]
    cells = {tuple(c["key"]): c for c in doc["cells"]}
    assert cells[("3", "1")]["disclosed"] and cells[("4", "1")]["disclosed"]
    assert cells[("3", "1")]["kappa_published"] == pytest.approx(
        _nb_box_surprise(6, 3, math.inf), rel=1e-12
    )
    assert cells[("4", "1")]["kappa_published"] == pytest.approx(
        _nb_box_surprise(8, 5, 9), rel=1e-12
    )
    assert doc["publication"]["secondary"] == 0  # without the bounds the planner hides 4
    ok = runner.invoke(app, ["verify", str(out / "certificate.json"), "--published", str(out)])
    assert ok.exit_code == 0, ok.output
    # the custodian's kappa at the table (an attained value: the audit) <= the certificate
    cust = pl.read_csv(out / "custodian_cells.csv")
    assert cust["kappa"].max() <= doc["guarantee"]["kappa"] + 1e-12


def test_cli_apriori_parquet_and_errors(tmp_path: Path) -> None:
    pq = tmp_path / "ap.parquet"
    pl.DataFrame(
        {"religious": ["4"], "occupation": ["1"], "lower": [5], "upper": [None]},
        schema={
            "religious": pl.String,
            "occupation": pl.String,
            "lower": pl.Int64,
            "upper": pl.Int64,
        },
    ).write_parquet(pq)
    res = runner.invoke(app, [*ARGS, "--apriori", str(pq), "--out", str(tmp_path / "p"), "-q"])
    assert res.exit_code in (0, 1), res.output  # (3, 1) is disclosed: the custodian's exit 1
    doc = json.loads((tmp_path / "p" / "certificate.json").read_text())
    assert doc["claim"]["apriori"] == [{"key": ["4", "1"], "lower": 5, "upper": None}]
    for text, said in [
        ("religious,occupation,lower,upper\n3,1,7,\n", "outside its a-priori bounds [7, none]"),
        ("religious,occupation,lower,upper\n3,1,2.5,\n", "lower = '2.5'"),
        ("religious,occupation,lower,upper\n3,1,5,4\n", "lower = 5 > upper = 4"),
        ("religious,occupation,upper\n9,1,4\n", "religious = '9', not a level"),
        ("religious,occupation\n3,1\n", "no column 'lower' or 'upper'"),
        ("religious,occupation,lower,upper\n3,1,1,\n3,1,2,\n", "lists a cell twice"),
        # a key column missing from the file: the line names apriori, not the table's keys
        ("religious,lower,upper\n3,3,\n", "apriori: no column 'occupation'"),
        # one above 2**53 (the largest bound: exact as a float and in JSON)
        (f"religious,occupation,lower,upper\n4,1,0,{2**53 + 1}\n", f"upper = '{2**53 + 1}'"),
        (f"religious,occupation,lower,upper\n4,1,0,{2**63 - 2}\n", f"from 0 to {2**53}"),
        # str.isdigit() is true for '²', int() is not (an internal error, exit 3)
        ("religious,occupation,lower,upper\n4,1,\u00b2,9\n", "lower = '\u00b2'"),
        ("religious,occupation,lower,upper\n4,1,\u0665,9\n", "digits only"),  # Arabic-Indic 5
    ]:
        bad = tmp_path / "bad.csv"
        bad.write_text(text)
        res = runner.invoke(app, [*ARGS, "--apriori", str(bad), "--out", str(tmp_path / "x")])
        assert res.exit_code == 2, (text, res.output)
        lines = [ln for ln in res.output.splitlines() if ln.strip()]
        assert len(lines) == 1 and lines[0].startswith("error: apriori:"), res.output
        assert said in lines[0], res.output
        assert not (tmp_path / "x").exists()
    no_margins = [a for a in ARGS if a not in ("--margins", "rows,cols")]
    res = runner.invoke(app, [*no_margins, "--apriori", str(pq), "--out", str(tmp_path / "y")])
    assert res.exit_code == 2 and "--apriori needs --margins" in res.output


def test_release_certificate_against_enumeration(tmp_path: Path) -> None:
    """A 3 x 3 release with bounds: the certificate's κ published of every suppressed cell is
    the maximum over the boxed fibre (enumerated here), and every attained loss (the audit at
    the true table, each end of the mean range) is at most it."""
    from test_margins_apriori import _enumerated_kappa

    df = pl.DataFrame(
        {"r": [0, 0, 0, 1, 1, 1, 2, 2, 2], "c": [0, 1, 2] * 3, "n": [1, 2, 9, 2, 0, 8, 7, 6, 12]}
    )
    ap = pl.DataFrame({"r": [0, 1], "c": [0, 1], "lower": [1, None], "upper": [2, 1]})
    rec = PoissonReceiver(1.0, 5.0)
    rel = release_table_with_margins(
        df, keys=["r", "c"], count="n", h=3, receiver=rec, margins="rows,cols", apriori=ap
    )
    doc = publish(rel, OutputFolder(tmp_path / "e")).document
    cells, at, pub = _enumerated_kappa(rel.table, rec, [1.0, 5.0])
    labels = [(str(i // 3), str(i % 3)) for i in cells]
    stated = {tuple(c["key"]): c["kappa_published"] for c in doc["cells"]}
    np.testing.assert_allclose([stated[k] for k in labels], pub, rtol=1e-9, atol=1e-12)
    assert np.all(at <= doc["guarantee"]["kappa"] + 1e-12)
    assert verify_certificate(tmp_path / "e" / "certificate.json", published=tmp_path / "e").ok


def test_the_largest_bound_survives_the_certificate(tmp_path: Path) -> None:
    """An upper bound of 2**53 (the largest allowed) on a published cell goes into the claim
    exactly and verify reads it back (a bound near 2**63 rounded through a float and failed
    the release's own check as an internal error); 2**53 + 1 through the API is refused."""
    df = pl.DataFrame({"r": [0, 0, 1, 1], "c": [0, 1, 0, 1], "n": [1, 30, 40, 50]})
    kw = dict(keys=["r", "c"], count="n", h=3, receiver=PoissonReceiver(1.0, 40.0))
    ap = pl.DataFrame({"r": [1], "c": [1], "lower": [None], "upper": [2**53]})
    rel = release_table_with_margins(df, margins="rows", apriori=ap, **kw)
    doc = publish(rel, OutputFolder(tmp_path / "b")).document
    assert doc["claim"]["apriori"] == [{"key": ["1", "1"], "lower": 0, "upper": 2**53}]
    assert verify_certificate(tmp_path / "b" / "certificate.json", published=tmp_path / "b").ok
    edited = json.loads(json.dumps(doc))
    edited["claim"]["apriori"][0]["upper"] = 2**63 - 2  # verify names the field, no crash
    res = verify_certificate(edited, published=tmp_path / "b")
    assert not res.ok
    assert any(
        f"claim.apriori[0].upper: must be null (no bound) or an integer from lower (0) "
        f"to {2**53}" in m
        for m in res.mismatches
    ), res.mismatches
    with pytest.raises(ValidationError, match=f"upper = {2**53 + 1}; a bound must be a whole"):
        release_table_with_margins(
            df, margins="rows", apriori=ap.with_columns(upper=2**53 + 1), **kw
        )
    upper = np.full((2, 2), 2**53 + 1, dtype=np.int64)
    with pytest.raises(ValidationError, match=r"upper \(a-priori bounds\): cell \(0, 0\)"):
        MarginTable(df["n"].to_numpy().reshape(2, 2), h=3, margins="rows", upper=upper)


def test_api_apriori_errors_name_the_argument() -> None:
    df = pl.read_csv(DATA / "fair_crosstab.csv")
    kw = dict(
        keys=["religious", "occupation"],
        count="n",
        h=10,
        receiver=NegativeBinomialReceiver(1, 40, 1),
        margins="rows,cols",
    )
    with pytest.raises(ValidationError, match="apriori must be a file path"):
        release_table_with_margins(df, apriori=[1, 2], **kw)
    with pytest.raises(ValidationError, match=r"apriori: unexpected column 'x'"):
        release_table_with_margins(
            df,
            apriori=pl.DataFrame({"religious": [1], "occupation": [1], "lower": [1], "x": [0]}),
            **kw,
        )


def test_planner_does_not_rely_on_hiding_a_cell_the_receiver_bounds() -> None:
    """(1, 1) = 10 is a cheap partner without bounds (the greedy hides it with (1, 3), (3, 3)
    and (4, 3): κ published 4.22 <= 4.5); known to lie in [8, 12] it protects little, and the
    plan that meets κ = 4.5 leaves it published (docs/margins_apriori.md)."""
    df = pl.read_csv(DATA / "fair_crosstab.csv")
    rec = NegativeBinomialReceiver(1, 40, 1)
    ap = pl.DataFrame({"religious": [1], "occupation": [1], "lower": [8], "upper": [12]})
    boxed = release_table_with_margins(
        df,
        keys=["religious", "occupation"],
        count="n",
        h=10,
        receiver=rec,
        margins="rows,cols",
        target_kappa=4.5,
        apriori=ap,
    )
    assert boxed.ok and not boxed.table.suppressed[0, 0]
    assert boxed.plan.n_secondary == 7
    assert boxed.worst.max_published == pytest.approx(4.46, abs=5e-3)
    # the unbounded plan's pattern, which hides (1, 1): within kappa without the bounds, above
    # it for a Receiver who knows the bounds of (1, 1)
    sec = np.zeros((4, 6), bool)
    sec[0, 0] = sec[0, 2] = sec[2, 2] = sec[3, 2] = True
    pattern = boxed.primary.suppressed | sec
    plain = boxed.primary.with_suppressed(pattern, sec)
    unbounded = MarginTable(plain.counts, h=10, margins="rows,cols").with_suppressed(pattern, sec)
    assert worst_case_losses(unbounded, rec).kappa_published.max() <= 4.5
    assert worst_case_losses(plain, rec).kappa_published.max() > 4.5


def test_a_pinned_box_is_a_known_cell_in_the_release(tmp_path: Path) -> None:
    """lower = upper = 6 for (3, 1): published with its count although below h, listed in
    claim.known and claim.apriori, and the certificate verifies."""
    df = pl.read_csv(DATA / "fair_crosstab.csv")
    ap = pl.DataFrame({"religious": [3], "occupation": [1], "lower": [6], "upper": [6]})
    rel = release_table_with_margins(
        df,
        keys=["religious", "occupation"],
        count="n",
        h=10,
        receiver=NegativeBinomialReceiver(1, 40, 1),
        margins="rows,cols",
        apriori=ap,
    )
    assert rel.table.known[2, 0] and not rel.table.suppressed[2, 0]
    doc = publish(rel, OutputFolder(tmp_path / "pin")).document
    assert doc["claim"]["known"] == [["3", "1"]]
    assert doc["claim"]["apriori"] == [{"key": ["3", "1"], "lower": 6, "upper": 6}]
    row = rel.published.filter((pl.col("religious") == 3) & (pl.col("occupation") == 1))
    assert row["n"].to_list() == [6]
    assert verify_certificate(tmp_path / "pin" / "certificate.json", published=tmp_path / "pin").ok


def test_a_file_missing_a_key_column_names_the_option(tmp_path: Path) -> None:
    """A file of known cells or of a-priori bounds without a key column: the error names the
    option (known / apriori), the missing column and the columns the file has (it said "key
    column 'b' does not exist", as if the table lacked it)."""
    from persuasive.margins.known import apriori_bounds, known_cells

    levels = {"a": ["x", "y"], "b": [1, 2]}
    f = tmp_path / "f.csv"
    f.write_text("a,lower\nx,1\n")
    with pytest.raises(ValidationError, match=r"^known: no column 'b'; .* it has \['a', 'lower'\]"):
        known_cells(f, ["a", "b"], levels)
    with pytest.raises(ValidationError, match=r"^apriori: no column 'b'; .*'lower' and/or"):
        apriori_bounds(f, ["a", "b"], levels)
    f.write_text("a,b\nx,1\n")
    with pytest.raises(ValidationError, match=r"^apriori: no column 'lower' or 'upper'"):
        apriori_bounds(f, ["a", "b"], levels)
    assert known_cells(f, ["a", "b"], levels).tolist() == [[True, False], [False, False]]


def test_a_pandas_frame_of_bounds_reads_as_the_file() -> None:
    """pandas stores an integer column with empty fields as floats (upper: 30.0, NaN, 9.0): the
    whole floats are the bounds the CSV file gives; a fractional float is still refused."""
    import pandas as pd

    from persuasive.margins.known import apriori_bounds

    keys = ["religious", "occupation"]
    levels = {"religious": [1, 2, 3, 4], "occupation": [1, 2, 3, 4, 5, 6]}
    frame = pd.read_csv(DATA / "fair_apriori.csv")
    assert frame["upper"].dtype.kind == "f"  # the case tested
    got = apriori_bounds(frame, keys, levels)
    want = apriori_bounds(DATA / "fair_apriori.csv", keys, levels)
    np.testing.assert_array_equal(got[0], want[0])
    np.testing.assert_array_equal(got[1], want[1])
    frame.loc[1, "upper"] = 9.5
    with pytest.raises(ValidationError, match=r"^apriori: row 1 .* has upper = 9\.5; a bound"):
        apriori_bounds(frame, keys, levels)


def test_hierarchy_with_apriori_bounds_and_a_target(tmp_path: Path) -> None:
    """Structural zeros (a hierarchy) with a-priori bounds and the greedy planner: the search's
    propagation reads the boxes over the same (non-structural) cells as its incidence; it used
    to be handed the whole grid's boxes and stop with an internal error (exit 3). The bounded
    cell is recovered from the margins, so its κ is the conditioned surprise."""
    box = tmp_path / "box.csv"
    box.write_text("group,occupation,religious,lower,upper\nlower,1,3,3,\n")
    out = tmp_path / "h"
    args = [
        "release",
        "table",
        str(DATA / "fair_hierarchy.csv"),
        "--keys",
        "group,occupation,religious",
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
        "group+religious,occupation,group,religious,total",
        "--target-kappa",
        "4.5",
        "--apriori",
        str(box),
        "--out",
        str(out),
        "-q",
    ]
    res = runner.invoke(app, args)
    assert res.exit_code == 0, res.output
    doc = json.loads((out / "certificate.json").read_text())
    cells = {tuple(c["key"]): c for c in doc["cells"]}
    cell = cells[("lower", "1", "3")]
    true = pl.read_csv(DATA / "fair_hierarchy.csv", infer_schema_length=0).filter(
        (pl.col("group") == "lower") & (pl.col("occupation") == "1") & (pl.col("religious") == "3")
    )["n"]
    assert cell["disclosed"]
    assert cell["kappa_published"] == pytest.approx(
        _nb_box_surprise(int(true[0]), 3, math.inf), rel=1e-12
    )
    ok = runner.invoke(app, ["verify", str(out / "certificate.json"), "--published", str(out)])
    assert ok.exit_code == 0, ok.output
