"""Known cells and structural zeros in a table released with margins (issue 12, issue 11).

A known cell (a-priori information, or a structural zero) is never suppressed, never a partner,
never a planner candidate; a pattern hiding one raises; for the posterior it is a published
cell. The posterior with known cells is checked against brute-force enumeration of the fibre.
"""

from __future__ import annotations

import itertools
import json
import math
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
import pytest
from scipy import stats
from typer.testing import CliRunner

import persuasive as pp
from persuasive.classes.receivers import NegativeBinomialReceiver, PoissonReceiver
from persuasive.cli import app
from persuasive.errors import ValidationError
from persuasive.files.output import OutputFolder
from persuasive.margins import MarginTable, posterior_marginals, worst_case_losses
from persuasive.margins.classical import classical_pattern
from persuasive.margins.constraints import independent_rows
from persuasive.margins.planner import plan_suppression
from persuasive.release.margins import release_table_with_margins
from persuasive.release.pipeline import publish
from persuasive.report.verify import verify_certificate

runner = CliRunner()
ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "examples" / "data"
NB = NegativeBinomialReceiver(1, 40, 1)
NB_ARGS = ["--h", "10", "--negbin-mean", "1:40", "--negbin-size", "1"]


def brute_force(table: MarginTable, laws: list[Any]) -> dict[int, dict[int, float]]:
    """Posterior marginals of the suppressed cells by enumerating every completion: primary
    cells in [0, h-1], secondary in [h, max total], every other cell (released or known) fixed,
    every published total met."""
    x = table.counts.ravel()
    cells = table.suppressed_index
    sec = table.secondary.ravel()
    top = int(x.sum())
    ranges = [range(table.h, top + 1) if sec[c] else range(table.h) for c in cells]
    weights: dict[int, dict[int, float]] = {int(c): {} for c in cells}
    z = 0.0
    for ys in itertools.product(*ranges):
        y = x.copy()
        y[cells] = ys
        arr = y.reshape(table.shape)
        if any(
            not np.array_equal(
                arr.sum(axis=tuple(a for a in range(arr.ndim) if a not in m)), table.totals[m]
            )
            for m in table.margins
        ):
            continue
        w = math.prod(float(laws[c].pmf(v)) for c, v in zip(cells, ys, strict=True))
        z += w
        for c, v in zip(cells, ys, strict=True):
            weights[int(c)][v] = weights[int(c)].get(v, 0.0) + w
    return {c: {v: w / z for v, w in d.items()} for c, d in weights.items()}


# ------------------------------------------------------------------ the table


def test_known_cells_are_never_suppressed() -> None:
    t = MarginTable(
        [[1, 5, 7], [2, 8, 9]],
        h=3,
        margins="rows,cols",
        known=[[False, False, False], [True, False, False]],
    )
    assert t.suppressed.astype(int).tolist() == [[1, 0, 0], [0, 0, 0]]  # the 2 is published
    assert t.hideable.astype(int).tolist() == [[0, 1, 1], [0, 1, 1]]
    # the classical rule never takes a known cell as partner: (1, 0) is the only cell of column
    # 0 to pair with (0, 0), so the column stays unprotectable rather than hide it
    cl = classical_pattern(t)
    assert not (cl.table.suppressed & t.known).any()
    assert 0 in cl.unprotectable


def test_a_pattern_hiding_a_known_cell_raises() -> None:
    t = MarginTable(
        [[1, 5, 7], [6, 8, 9]],
        h=3,
        margins="rows,cols",
        known=[[False, True, False], [False, False, False]],
    )
    with pytest.raises(ValidationError, match="known cell is never suppressed"):
        t.with_suppressed(t.suppressed | t.known, t.known)
    s = MarginTable(
        [[1, 0, 7], [6, 8, 9]],
        h=3,
        margins="rows,cols",
        structural=[[False, True, False], [False, False, False]],
    )
    with pytest.raises(ValidationError, match="structural zero"):
        s.with_suppressed(s.suppressed | s.structural)
    with pytest.raises(ValidationError, match="structural zero must have count 0"):
        MarginTable([[1, 4], [6, 8]], h=3, structural=[[False, True], [False, False]])


def test_planner_never_hides_a_known_cell() -> None:
    counts = np.array([[1, 9, 8, 7], [9, 8, 7, 9], [8, 7, 9, 8]])
    known = np.zeros(counts.shape, bool)
    known[0, 1] = known[1, 0] = True  # the cheapest partners of the 1
    t = MarginTable(counts, h=3, margins="rows,cols", known=known)
    free = plan_suppression(
        MarginTable(counts, h=3, margins="rows,cols"), PoissonReceiver(1, 10), 7.0
    )
    plan = plan_suppression(t, PoissonReceiver(1, 10), 7.0)
    assert free.pattern[0, 1] or free.pattern[1, 0]  # without knowledge they are used
    assert not (plan.pattern & known).any()
    assert plan.certified


@pytest.mark.parametrize("seed", range(4))
def test_posterior_with_known_cells_is_the_enumerated_fibre(seed: int) -> None:
    rng = np.random.default_rng(seed)
    counts = rng.integers(0, 6, size=(3, 3))
    known = rng.random((3, 3)) < 0.3
    structural = known & (counts == 0) & (rng.random((3, 3)) < 0.5)
    h = 3
    sup = (counts < h) & ~known
    sec = np.zeros_like(sup)
    free = np.argwhere(~sup & ~known)
    if len(free):  # one secondary cell, as the planner would add
        i, j = free[rng.integers(len(free))]
        sup[i, j] = sec[i, j] = True
    t = MarginTable(
        counts,
        h=h,
        margins="rows,cols",
        suppressed=sup,
        secondary=sec,
        known=known,
        structural=structural,
    )
    if not t.suppressed.any():
        pytest.skip("nothing suppressed")
    laws = [stats.poisson(m) for m in rng.uniform(0.5, 6.0, size=9)]
    post = posterior_marginals(t, pp.IndependentCellsPrior(laws))
    exact = brute_force(t, laws)
    for j, c in enumerate(post.cells):
        values, probs = post.pmf(j)
        got = dict(zip(values.tolist(), probs.tolist(), strict=True))
        want = exact[int(c)]
        assert set(k for k, p in got.items() if p > 1e-12) == set(
            k for k, p in want.items() if p > 1e-12
        )
        for v, p in want.items():
            assert got.get(v, 0.0) == pytest.approx(p, abs=1e-9)


def test_dropping_dependent_totals_keeps_the_posterior() -> None:
    A = np.array([[1, 1, 0, 0], [0, 0, 1, 1], [1, 0, 1, 0], [0, 1, 0, 1], [1, 1, 1, 1]])
    assert independent_rows(A, np.array([9, 9, 1, 1, 18])).tolist() == [0, 2, 3]
    counts = np.array([[1, 2, 9], [2, 1, 8], [7, 9, 9]])
    laws = [stats.poisson(m) for m in np.linspace(1, 5, 9)]
    prior = pp.IndependentCellsPrior(laws)
    few = posterior_marginals(MarginTable(counts, h=3, margins="rows,cols"), prior)
    many = posterior_marginals(MarginTable(counts, h=3, margins="rows,cols,total"), prior)
    assert np.allclose(np.exp(few.log_pmf), np.exp(many.log_pmf), atol=1e-12)
    exact = brute_force(MarginTable(counts, h=3, margins="rows,cols,total"), laws)
    for j, c in enumerate(many.cells):
        values, probs = many.pmf(j)
        for v, p in zip(values.tolist(), probs.tolist(), strict=True):
            assert p == pytest.approx(exact[int(c)][v], abs=1e-9)


def test_known_cells_count_as_published_in_the_class_audit() -> None:
    counts = np.array([[1, 5, 7], [2, 8, 9]])
    known = np.array([[False, False, False], [True, False, False]])
    a = worst_case_losses(MarginTable(counts, h=3, margins="rows,cols", known=known), NB, r=3)
    # the same numbers as a table where (1, 0) is simply released (and below h: allowed when known)
    assert bool(a.disclosed[0, 0])  # (0, 0) alone in column 0 with (1, 0) published
    assert float(a.kappa_published[1, 0]) == 0.0


# ------------------------------------------------------------------ structural zeros, releases

SPARSE = pl.read_csv(DATA / "fair_crosstab.csv").filter(
    ~((pl.col("religious") == 1) & pl.col("occupation").is_in([1, 2]))
)


def _doc(folder: Path) -> dict[str, Any]:
    return json.loads((folder / "certificate.json").read_text())


def _retamper(folder: Path, edit: Any) -> Path:
    doc = _doc(folder)
    edit(doc)
    (folder / "certificate.json").write_text(json.dumps(doc))
    return folder / "certificate.json"


def test_structural_zero_release_api(tmp_path: Path) -> None:
    rel = release_table_with_margins(
        SPARSE,
        keys=["religious", "occupation"],
        count="n",
        h=10,
        receiver=NB,
        margins="rows,cols",
        absent="structural",
        target_kappa=5.0,
    )
    assert int(rel.table.structural.sum()) == 2
    assert rel.published.height == 22  # the structural zeros are not cells
    assert not (rel.table.suppressed & rel.table.structural).any()
    out = publish(rel, OutputFolder(tmp_path / "s"))
    doc = out.document
    assert doc["claim"]["absent"] == "structural"
    assert doc["publication"]["structural_cells"] == 2
    assert verify_certificate(tmp_path / "s" / "certificate.json", published=tmp_path / "s").ok
    # zero-filled instead: the two combinations become (suppressed) cells of count 0
    zero = release_table_with_margins(
        SPARSE,
        keys=["religious", "occupation"],
        count="n",
        h=10,
        receiver=NB,
        margins="rows,cols",
    )
    assert zero.published.height == 24 and not zero.table.known.any()


def test_structural_zero_release_cli_and_tampering(tmp_path: Path) -> None:
    data = tmp_path / "sparse.csv"
    SPARSE.write_csv(data)
    out = tmp_path / "out"
    res = runner.invoke(
        app,
        [
            "release",
            "table",
            str(data),
            "--keys",
            "religious,occupation",
            "--count",
            "n",
            *NB_ARGS,
            "--margins",
            "rows,cols",
            "--absent",
            "structural",
            "--target-kappa",
            "5",
            "--out",
            str(out),
            "-q",
        ],
    )
    assert res.exit_code == 0, res.output
    assert pl.read_csv(out / "released.csv").height == 22
    ok = runner.invoke(app, ["verify", str(out / "certificate.json"), "--published", str(out)])
    assert ok.exit_code == 0, ok.output

    cert = _retamper(out, lambda d: d["claim"].__setitem__("absent", "zero"))
    bad = runner.invoke(app, ["verify", str(cert), "--published", str(out)])
    assert bad.exit_code == 1
    assert "claim.absent" in bad.output and "2 missing" in bad.output

    cert = _retamper(
        out,
        lambda d: (
            d["claim"].__setitem__("absent", "structural"),
            d["publication"].__setitem__("structural_cells", 1),
        ),
    )
    bad = runner.invoke(app, ["verify", str(cert), "--published", str(out)])
    assert bad.exit_code == 1
    assert "publication.structural_cells" in bad.output


def test_known_cells_release_cli(tmp_path: Path) -> None:
    out = tmp_path / "k"
    res = runner.invoke(
        app,
        [
            "release",
            "table",
            str(DATA / "fair_crosstab.csv"),
            "--keys",
            "religious,occupation",
            "--count",
            "n",
            *NB_ARGS,
            "--margins",
            "rows,cols",
            "--target-kappa",
            "4.5",
            "--known",
            str(DATA / "fair_known.csv"),
            "--out",
            str(out),
            "-q",
        ],
    )
    assert res.exit_code == 0, res.output
    doc = _doc(out)
    assert doc["claim"]["known"] == [["1", "1"], ["3", "1"]]
    pub = pl.read_csv(out / "released.csv")
    row = pub.filter((pl.col("religious") == 3) & (pl.col("occupation") == 1))
    assert row["n"].to_list() == [6] and row["suppressed"].to_list() == [None]  # public: shown
    ok = runner.invoke(app, ["verify", str(out / "certificate.json"), "--published", str(out)])
    assert ok.exit_code == 0, ok.output
    # a verifier told the cell is not known finds a count below h in the publication
    cert = _retamper(out, lambda d: d["claim"].__setitem__("known", [["1", "1"]]))
    bad = runner.invoke(app, ["verify", str(cert), "--published", str(out)])
    assert bad.exit_code == 1 and "below h = 10" in bad.output
    # --known names a combination that is not a cell
    wrong = tmp_path / "wrong.csv"
    wrong.write_text("religious,occupation\n9,1\n")
    res = runner.invoke(
        app,
        [
            "release",
            "table",
            str(DATA / "fair_crosstab.csv"),
            "--keys",
            "religious,occupation",
            "--count",
            "n",
            *NB_ARGS,
            "--margins",
            "rows,cols",
            "--known",
            str(wrong),
            "--out",
            str(tmp_path / "w"),
        ],
    )
    assert res.exit_code == 2 and "not a level" in res.output


def test_known_as_a_boolean_column() -> None:
    frame = pl.read_csv(DATA / "fair_crosstab.csv").with_columns(
        public=(pl.col("religious") == 3) & (pl.col("occupation") == 1)
    )
    rel = release_table_with_margins(
        frame,
        keys=["religious", "occupation"],
        count="n",
        h=10,
        receiver=NB,
        margins="rows,cols",
        known="public",
    )
    assert rel.known_keys == (("3", "1"),)
    assert not rel.table.suppressed[2, 0]


@pytest.mark.parametrize(
    ("option", "header", "message"),
    [
        ("known", "a,c\nx,1\n", "known: no column 'b'"),
        ("apriori", "a,b\nx,1\n", "apriori: no column 'lower' or 'upper'"),
    ],
)
def test_a_bad_file_is_refused_before_a_spark_session_starts(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, option: str, header: str, message: str
) -> None:
    """A file of known cells or a-priori bounds without the key columns is refused before the
    engine starts: the session is never asked for (a Spark session takes seconds)."""
    from persuasive.spark import session

    def no_session(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("a Spark session was started before the file was checked")

    monkeypatch.setattr(session, "session_of", no_session)
    monkeypatch.setattr(session, "pyspark", no_session)
    table = tmp_path / "t.csv"
    table.write_text("a,b,n\nx,1,5\nx,2,1\ny,1,7\ny,2,9\n", encoding="utf-8")
    bad = tmp_path / "bad.csv"
    bad.write_text(header, encoding="utf-8")
    with pytest.raises(ValidationError, match=message):
        release_table_with_margins(
            table, keys=["a", "b"], count="n", h=3, receiver=PoissonReceiver(1, 10),
            margins="rows,cols", engine="spark", **{option: bad},
        )  # fmt: skip
