"""ACRO as a peer (issue 12): ``benchmarks/bench_acro.py`` on religious × occupation, its numbers
recomputed independently — ACRO called directly, the suppressed cells and ACRO's totals from the
records, disclosure and κ by brute-force enumeration of every completion, attacker intervals by
``scipy.optimize.linprog``. See ``docs/acro.md``.

Skipped with a visible reason when ``acro`` (a test dependency) is not installed.
"""

from __future__ import annotations

import importlib.util
import itertools
import logging
import math
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest
from scipy import stats
from scipy.optimize import linprog

acro = pytest.importorskip(
    "acro", reason="acro (the SACRO output checker) is a test dependency: pip install acro"
)

from persuasive.release.data import load_fair, load_fair_crosstab  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
H = 10  # ACRO's default safe_threshold
TARGET = 4.5
MEANS = np.linspace(1.0, 40.0, 3901)  # the Receiver's mean range, finely (B is a sup over it)


@pytest.fixture(scope="module")
def bench():
    spec = importlib.util.spec_from_file_location("bench_acro", ROOT / "benchmarks/bench_acro.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["bench_acro"] = module
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def row(bench):
    return bench.compare(("religious",), ("occupation",), TARGET)


@pytest.fixture(scope="module")
def counts():
    ct = load_fair_crosstab("religious", "occupation")
    return ct["n"].to_numpy().reshape(4, 6)


def _nb_logpmf(v, mean):
    return stats.nbinom(1, 1.0 / (1.0 + mean)).logpmf(v)


def _b(v):
    """B(v) = sup over the mean range of -log NB(v; size 1, mean), on a fine grid."""
    return float(np.max(-_nb_logpmf(v, MEANS)))


def _completions(counts, sup, sec, rows=None, cols=None, total=None):
    """Every completion of the suppressed cells (primary in [0, h-1], secondary >= h) that meets
    the given exact totals, by enumeration row by row (the last cell of a row is its residual
    when row totals are given)."""
    released = np.where(sup, 0, counts)
    per_row = []
    for i in range(counts.shape[0]):
        cells = [(i, j) for j in np.flatnonzero(sup[i])]
        res = None if rows is None else int(rows[i] - released[i].sum())
        boxes = [
            range(H, (res if res is not None else 0) + 1) if sec[c] else range(H) for c in cells
        ]
        assert res is not None or not any(sec[c] for c in cells)
        opts = []
        free = boxes[:-1] if (res is not None and cells) else boxes
        for head in itertools.product(*free):
            vals = list(head)
            if res is not None and cells:
                last = res - sum(vals)
                if last not in boxes[-1]:
                    continue
                vals.append(last)
            if res is not None and not cells and res != 0:
                continue
            opts.append(dict(zip(cells, vals, strict=True)))
        per_row.append(opts)
    out = []
    for combo in itertools.product(*per_row):
        y = {k: v for part in combo for k, v in part.items()}
        if cols is not None and any(
            sum(v for (_, j), v in y.items() if j == c) != cols[c] - released[:, c].sum()
            for c in range(counts.shape[1])
        ):
            continue
        if total is not None and sum(y.values()) != total - released.sum():
            continue
        out.append(y)
    return out


def _audit(counts, sup, sec, mean=40.0, **given):
    """Per primary cell: (disclosed, kappa at the table, kappa published), by enumeration."""
    ys = _completions(counts, sup, sec, **given)
    assert ys, "the true table is a completion"
    logw = np.array([sum(_nb_logpmf(v, mean) for v in y.values()) for y in ys])
    w = np.exp(logw - logw.max())
    w /= w.sum()
    out = {}
    for c in ys[0]:
        if sec[c]:
            continue
        post: dict[int, float] = {}
        for y, p in zip(ys, w, strict=True):
            post[y[c]] = post.get(y[c], 0.0) + p
        x = int(counts[c])
        out[c] = (
            len(post) == 1,
            math.log(post[x]) + _b(x),
            max(math.log(p) + _b(v) for v, p in post.items() if v < H),
        )
    return out


def _lp_widths(counts, sup, sec, rows=None, cols=None):
    """Attacker interval widths of the suppressed cells by scipy linprog (HiGHS)."""
    cells = [tuple(c) for c in np.argwhere(sup)]
    released = np.where(sup, 0, counts)
    A, b = [], []
    if rows is not None:
        for i in range(counts.shape[0]):
            A.append([1.0 if c[0] == i else 0.0 for c in cells])
            b.append(rows[i] - released[i].sum())
    if cols is not None:
        for j in range(counts.shape[1]):
            A.append([1.0 if c[1] == j else 0.0 for c in cells])
            b.append(cols[j] - released[:, j].sum())
    bounds = [(H, None) if sec[c] else (0, H - 1) for c in cells]
    widths = []
    for k in range(len(cells)):
        e = np.zeros(len(cells))
        e[k] = 1.0
        lo = linprog(e, A_eq=A or None, b_eq=b or None, bounds=bounds, method="highs")
        hi = linprog(-e, A_eq=A or None, b_eq=b or None, bounds=bounds, method="highs")
        widths.append(-hi.fun - lo.fun)
    return np.array(widths)


def _acro_direct(tmp_path, monkeypatch, labels):
    """ACRO's crosstab of religious x occupation, called directly, in a temporary folder."""
    monkeypatch.chdir(tmp_path)
    df = load_fair().to_pandas()
    if labels == "str":
        df["religious"] = df["religious"].astype(str)
        df["occupation"] = df["occupation"].astype(str)
    logging.disable(logging.INFO)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            session = acro.ACRO(suppress=True)
            table = session.crosstab(df.religious, df.occupation, margins=True)
    finally:
        logging.disable(logging.NOTSET)
    assert not (tmp_path / "outputs").exists()  # nothing written before finalise
    return df, session, table


def test_same_table_and_threshold(row, counts, tmp_path, monkeypatch):
    df, session, table = _acro_direct(tmp_path, monkeypatch, "str")
    assert session.sdc_checks.risk_appetite["safe_threshold"] == H == row.acro.threshold
    body = table.drop(index="All", columns="All").loc[list("1234"), list("123456")]
    mask = body.isna().to_numpy()
    # ACRO's rule: counts below the threshold, and zeros (none in this table)
    assert np.array_equal(mask, (counts < H) | (counts == 0))
    assert np.array_equal(row.acro.mask, mask)
    assert np.array_equal(row.acro.counts, counts) and row.same_counts and row.mask_is_threshold
    assert np.array_equal(body.to_numpy()[~mask], counts[~mask])
    # ACRO's totals are recomputed from the records left after suppression
    kept = df[~df.set_index(["religious", "occupation"]).index.isin([("3", "1"), ("4", "1")])]
    by_rel = kept.groupby("religious").size().reindex(list("1234")).to_numpy()
    by_occ = kept.groupby("occupation").size().reindex(list("123456")).to_numpy()
    assert np.array_equal(table["All"].loc[list("1234")].to_numpy(), by_rel)
    assert np.array_equal(table.loc["All"].loc[list("123456")].to_numpy(), by_occ)
    assert table.loc["All", "All"] == len(kept) == 6366 - 14
    assert row.totals_are_released_sums


def test_integer_labels_run_measured(row, tmp_path, monkeypatch):
    """The bench's count for integer-coded categories is what ACRO returns when called so."""
    _, session, table = _acro_direct(tmp_path, monkeypatch, "int")
    body = table.drop(index="All", columns="All")
    (record,) = session.results.results.values()
    flagged = (record.outcome.drop(index="All", columns="All") != "ok").to_numpy()
    assert int(flagged.sum()) == int(row.acro.flagged.sum()) == 2
    assert int(body.isna().to_numpy().sum()) == row.acro_int_suppressed


def test_disclosure_by_enumeration(row, counts):
    sup = counts < H
    sec = np.zeros_like(sup)
    rows, cols = counts.sum(axis=1), counts.sum(axis=0)
    # (A) ACRO alone: its totals are sums of released cells, so nothing constrains the hidden
    # cells; the supremum over independent means in [1, 40] is Prop 8's -log P(X < h)
    prop8 = max(-stats.nbinom(1, 1 / (1 + m)).logcdf(H - 1) for m in (1.0, 40.0))
    assert row.alone.kappa_max == pytest.approx(prop8, abs=1e-9)
    assert (row.alone.exposed, row.alone.disclosed, row.alone.above_table) == (0, 0, 0)
    cases = {
        "exact": (row.exact, {"rows": rows, "cols": cols}),
        "grand": (row.grand, {"total": int(counts.sum())}),
        "linked": (row.linked, {"rows": rows}),  # ACRO's religious x any_affair: exact rows
    }
    assert row.linked_names == ("religious",)
    for name, (got, given) in cases.items():
        res = _audit(counts, sup, sec, **given)
        again = _audit(counts, sup, sec, mean=1.0, **given)  # sufficiency: any common mean
        for c in res:
            assert res[c][1:] == pytest.approx(again[c][1:], abs=1e-9), name
        disclosed = sum(d for d, _, _ in res.values())
        kappas = [k for _, k, _ in res.values()]
        published = [p for _, _, p in res.values()]
        assert got.disclosed == disclosed, name
        assert got.above_table == sum(k > TARGET for k in kappas), name
        assert got.above_published == sum(p > TARGET for p in published), name
        assert got.kappa_max == pytest.approx(max(kappas), abs=1e-6), name
        assert got.kappa_published_max == pytest.approx(max(published), abs=1e-6), name
        if "total" not in given:
            widths = _lp_widths(counts, sup, sec, rows=given.get("rows"), cols=given.get("cols"))
            assert got.exposed == int(np.sum(widths < 1e-6)), name
    # the numbers docs/acro.md states for this table
    assert (row.exact.exposed, row.exact.above_table) == (2, 2)
    assert row.exact.kappa_max == pytest.approx(_b(8), abs=1e-6)


def test_planner_pattern_by_enumeration(row, counts):
    rel = row.ours
    assert rel is not None and rel.plan.certified and rel.ok
    sup, sec = rel.table.suppressed, rel.table.secondary
    assert np.array_equal(sup & ~sec, counts < H)  # the same primaries as ACRO
    rows, cols = counts.sum(axis=1), counts.sum(axis=0)
    res = _audit(counts, sup, sec, rows=rows, cols=cols)
    assert not any(d for d, _, _ in res.values())
    for c, (_, k, p) in res.items():
        assert k == pytest.approx(float(rel.worst.kappa_upper[c]), abs=1e-6)
        assert p == pytest.approx(float(rel.worst.kappa_published[c]), abs=1e-6)
        assert p <= TARGET
    assert np.all(_lp_widths(counts, sup, sec, rows=rows, cols=cols) > 1e-6)
    assert rel.plan.n_secondary == int(sec.sum()) >= rel.plan.lower_bound
