"""The margins certificate and ``verify --published`` (issue 5).

Oracles, none of them the code under test: the publication bound of every suppressed cell by
brute-force enumeration of every table consistent with the publication (the posterior of the
class by direct products of scipy pmfs, B(v) from scipy at the ends of the mean range), and the
maximum over those completions of the exact per-table worst case. Tampering is detected by name.
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

from persuasive.classes.receivers import NegativeBinomialReceiver, PoissonReceiver
from persuasive.cli import app
from persuasive.errors import ValidationError
from persuasive.files.output import OutputFolder
from persuasive.margins import MarginTable, margin_sums, worst_case_losses
from persuasive.release.margins import release_table_with_margins
from persuasive.release.pipeline import publish
from persuasive.report.margins_certificate import publication_of, publication_table
from persuasive.report.verify import verify_certificate

runner = CliRunner()
NB = NegativeBinomialReceiver(1.0, 40.0, 1.0)
POI = PoissonReceiver(0.5, 6.0)


def _law(receiver: Any, mu: float) -> Any:
    if isinstance(receiver, PoissonReceiver):
        return stats.poisson(mu)
    return stats.nbinom(receiver.size, receiver.size / (receiver.size + mu))


def brute_force_published(table: MarginTable, receiver: Any, r: int) -> dict[int, float]:
    """kappa_published per suppressed cell, by enumerating every consistent completion."""
    sup = table.suppressed_index
    sec = table.secondary.ravel()[sup]
    cap = int(table.counts.sum())
    ranges = [range(table.h, cap + 1) if s else range(table.h) for s in sec]
    x = table.counts.ravel().copy()
    law = _law(receiver, receiver.mean_max)  # any member: the posterior is the same (sufficiency)
    weights: list[tuple[tuple[int, ...], float]] = []
    for y in itertools.product(*ranges):
        x[sup] = y
        cand = x.reshape(table.shape)
        if all(np.array_equal(margin_sums(cand, m), table.totals[m]) for m in table.margins):
            weights.append((y, float(np.prod(law.pmf(np.array(y))))))
    z = sum(w for _, w in weights)
    ends = [_law(receiver, receiver.mean_min), law]
    out = {}
    for j, cell in enumerate(sup):
        post: dict[int, float] = {}
        for y, w in weights:
            post[y[j]] = post.get(y[j], 0.0) + w / z
        vals = [
            math.log(p) + max(-e.logpmf(v) for e in ends)
            for v, p in post.items()
            if v < r and p > 0
        ]
        out[int(cell)] = max([0.0, *vals])
    return out


def _frame(counts: np.ndarray, names: tuple[str, ...] = ("a", "b")) -> pl.DataFrame:
    idx = np.indices(counts.shape).reshape(counts.ndim, -1)
    cols = {k: idx[a] for a, k in enumerate(names)}
    return pl.DataFrame({**cols, "n": counts.ravel()})


# A 3 x 3 table with two secondary cells; row 2 holds one suppressed cell (disclosed).
COUNTS = np.array([[2, 5, 7], [1, 9, 6], [8, 3, 12]])
SUP = np.array([[1, 1, 0], [1, 1, 0], [0, 1, 0]], dtype=bool)
SEC = np.array([[0, 1, 0], [0, 1, 0], [0, 0, 0]], dtype=bool)


@pytest.mark.parametrize("receiver", [NB, POI])
@pytest.mark.parametrize("r", [4, 2])
def test_published_kappa_equals_brute_force_and_the_max_over_completions(
    receiver: Any, r: int
) -> None:
    t = MarginTable(COUNTS, h=4, margins="rows,cols", suppressed=SUP, secondary=SEC)
    pub = worst_case_losses(t, receiver, r=r).kappa_published.ravel()
    oracle = brute_force_published(t, receiver, r)
    for cell, want in oracle.items():
        assert pub[cell] == pytest.approx(want, abs=1e-9), cell
    # the same bound as the maximum of the per-table exact worst case over the completions
    x = t.counts.ravel().copy()
    best = np.zeros(t.n_cells)
    for y in itertools.product(range(4), range(4, 8), range(4), range(4, 11), range(4)):
        x[t.suppressed_index] = y
        cand = x.reshape(t.shape)
        if all(np.array_equal(margin_sums(cand, m), t.totals[m]) for m in t.margins):
            other = MarginTable(cand, h=4, margins="rows,cols", suppressed=SUP, secondary=SEC)
            best = np.maximum(best, worst_case_losses(other, receiver, r=r).kappa_upper.ravel())
    np.testing.assert_allclose(pub, best, atol=1e-9)


def test_kd_published_kappa_equals_brute_force() -> None:
    counts = np.array([[[1, 4, 6], [5, 2, 7]], [[6, 8, 0], [2, 9, 5]]])
    t = MarginTable(counts, h=3, margins="0+1,2", dims=("a", "b", "c"))
    pub = worst_case_losses(t, POI).kappa_published.ravel()
    for cell, want in brute_force_published(t, POI, 3).items():
        assert pub[cell] == pytest.approx(want, abs=1e-9)


def _release(tmp_path: Path, counts: np.ndarray = COUNTS, **kw: Any) -> tuple[Any, Path]:
    rel = release_table_with_margins(
        _frame(counts), keys=["a", "b"], count="n", receiver=NB, margins="rows,cols", **kw
    )
    out = tmp_path / "rel"
    publish(rel, OutputFolder(out))
    return rel, out


def test_fresh_release_verifies_and_completion_does_not_matter(tmp_path: Path) -> None:
    rel, out = _release(tmp_path, h=3, target_kappa=3.5)
    res = verify_certificate(out / "certificate.json", published=out)
    assert res.ok, res.mismatches
    # verify rebuilt *a* completion: its per-cell bounds equal the release's
    pub = publication_of(rel.published, rel.published_margins, ("a", "b"), "n")
    table, _ = publication_table(pub, 3, rel.table.margin_names())
    assert np.array_equal(table.suppressed, rel.table.suppressed)
    np.testing.assert_allclose(
        worst_case_losses(table, NB).kappa_published, rel.worst.kappa_published, atol=1e-12
    )


def test_certificate_states_no_hidden_count(tmp_path: Path) -> None:
    """Two tables with the same publication (a 2 x 2 swap inside suppressed cells) give
    byte-identical certificates; their custodian files differ."""
    a = np.array([[1, 2, 30], [2, 1, 40], [20, 30, 50]])
    b = np.array([[2, 1, 30], [1, 2, 40], [20, 30, 50]])
    _, out_a = _release(tmp_path / "a", a, h=3)
    _, out_b = _release(tmp_path / "b", b, h=3)
    assert (out_a / "certificate.json").read_bytes() == (out_b / "certificate.json").read_bytes()
    assert (out_a / "released.csv").read_bytes() == (out_b / "released.csv").read_bytes()
    assert (out_a / "custodian_cells.csv").read_bytes() != (
        out_b / "custodian_cells.csv"
    ).read_bytes()


def _tamper(out: Path, edit: Any) -> Path:
    doc = json.loads((out / "certificate.json").read_text())
    edit(doc)
    path = out.parent / "tampered.json"
    path.write_text(json.dumps(doc))
    return path


@pytest.fixture(scope="module")
def released(tmp_path_factory: pytest.TempPathFactory) -> Path:
    _, out = _release(tmp_path_factory.mktemp("v"), h=3, target_kappa=3.5)
    return out


def _mismatches(cert: Path, published: Any) -> str:
    res = verify_certificate(cert, published=published)
    assert not res.ok
    return "\n".join(res.mismatches)


def test_tampered_kappa_is_named(released: Path) -> None:
    def lower(doc: dict[str, Any]) -> None:
        doc["guarantee"]["kappa"] = 1.0
        doc["cells"][0]["kappa_published"] -= 0.5

    text = _mismatches(_tamper(released, lower), released)
    assert "guarantee.kappa: stated 1.0" in text and "digest" in text
    key = json.loads((released / "certificate.json").read_text())["cells"][0]["key"]
    assert f"cells[{key[0]},{key[1]}].kappa_published" in text


def test_tampered_class_is_named(released: Path) -> None:
    def widen(doc: dict[str, Any]) -> None:
        doc["claim"]["receiver"]["mean_max"] = 20.0

    text = _mismatches(_tamper(released, widen), released)
    assert "digest" in text and "claim.class" in text
    assert "guarantee.kappa" in text  # the narrower class has a smaller bound: recomputed


def test_tampered_published_count_is_named(released: Path, tmp_path: Path) -> None:
    frame = pl.read_csv(released / "released.csv")
    i = int(np.flatnonzero(frame["n"].is_not_null().to_numpy())[0])
    bump = pl.when(pl.int_range(pl.len()) == i).then(pl.col("n") + 1).otherwise(pl.col("n"))
    frame = frame.with_columns(bump.alias("n"))
    frame.write_csv(tmp_path / "released.csv")
    text = _mismatches(
        released / "certificate.json", [tmp_path / "released.csv", released / "margins.csv"]
    )
    assert "do not add up" in text


def test_tampered_published_count_names_the_file_hash(released: Path, tmp_path: Path) -> None:
    frame = pl.read_csv(released / "released.csv")
    i = int(np.flatnonzero(frame["n"].is_not_null().to_numpy())[0])
    bump = pl.when(pl.int_range(pl.len()) == i).then(pl.col("n") + 1).otherwise(pl.col("n"))
    frame.with_columns(bump.alias("n")).write_csv(tmp_path / "released.csv")
    text = _mismatches(
        released / "certificate.json", [tmp_path / "released.csv", released / "margins.csv"]
    )
    assert "publication.files[released.csv].sha256" in text
    assert "pass the release folder" not in text


def test_reordered_publication_is_named_by_its_file_hash(released: Path, tmp_path: Path) -> None:
    """The same cells in another row order: the canonical publication (and every bound) is
    unchanged, but the certificate binds the published bytes."""
    frame = pl.read_csv(released / "released.csv").reverse()
    frame.write_csv(tmp_path / "released.csv")
    res = verify_certificate(
        released / "certificate.json",
        published=[tmp_path / "released.csv", released / "margins.csv"],
    )
    assert not res.ok and not res.consistent
    # same rows, so the same size: only the hash differs
    assert [m.split(":")[0] for m in res.mismatches] == ["publication.files[released.csv].sha256"]


def test_tampered_status_is_named(released: Path, tmp_path: Path) -> None:
    frame = pl.read_csv(released / "released.csv")
    frame = frame.with_columns(pl.col("suppressed").replace({"secondary": "primary"}))
    frame.write_csv(tmp_path / "released.csv")
    text = _mismatches(
        released / "certificate.json", [tmp_path / "released.csv", released / "margins.csv"]
    )
    assert "no completion" in text


def test_verify_needs_the_publication(released: Path, tmp_path: Path) -> None:
    with pytest.raises(ValidationError, match="--published"):
        verify_certificate(released / "certificate.json")
    with pytest.raises(ValidationError, match=r"need one published file named margins\.csv"):
        verify_certificate(released / "certificate.json", published=released / "released.csv")


def test_cli_verify_exit_codes(released: Path) -> None:
    ok = runner.invoke(
        app, ["verify", str(released / "certificate.json"), "--published", str(released)]
    )
    assert ok.exit_code == 0, ok.output
    assert ok.output.startswith("verified")
    bad = _tamper(released, lambda d: d["guarantee"].update(kappa=0.5))
    res = runner.invoke(app, ["verify", str(bad), "--published", str(released), "--json"])
    assert res.exit_code == 1
    assert any(m.startswith("guarantee.kappa:") for m in json.loads(res.output)["mismatches"])
    # in its release folder the publication beside the certificate is checked by default
    here = runner.invoke(app, ["verify", str(released / "certificate.json")])
    assert here.exit_code == 0 and "the publication matches" in here.output, here.output
    alone = released.parent / "alone.json"
    alone.write_bytes((released / "certificate.json").read_bytes())
    res = runner.invoke(app, ["verify", str(alone)])
    assert res.exit_code == 2 and "--published" in res.output


def test_certificate_is_byte_stable(tmp_path: Path) -> None:
    _, one = _release(tmp_path / "1", h=3, target_kappa=3.5)
    _, two = _release(tmp_path / "2", h=3, target_kappa=3.5)
    assert (one / "certificate.json").read_bytes() == (two / "certificate.json").read_bytes()


def test_kd_release_verifies(tmp_path: Path) -> None:
    counts = np.array([[[1, 14, 6], [15, 2, 17]], [[16, 8, 10], [12, 9, 5]]])
    rel = release_table_with_margins(
        _frame(counts, ("a", "b", "c")),
        keys=["a", "b", "c"],
        count="n",
        h=3,
        receiver=POI,
        margins="a+b,c",
    )
    publish(rel, OutputFolder(tmp_path / "kd"), table_format="parquet")
    assert (tmp_path / "kd" / "released.parquet").is_file()
    res = verify_certificate(tmp_path / "kd" / "certificate.json", published=tmp_path / "kd")
    assert res.ok, res.mismatches
