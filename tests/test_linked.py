"""Linked tables (docs/linked.md): the lemma by brute force, the refusals, the API and the CLI.

The lemma: with independent Poisson cover cells of one common mean, a decomposable family of
tables and every pair's shared totals published by both, each table's posterior given the whole
publication is its posterior given its own publication. It is checked here by enumerating
cover tables exactly (rational arithmetic), against the single-table posterior enumerated on
its own and against the library's exact posterior; the counter-examples show that the joint
posterior differs when one table does not publish the shared totals, and with
negative-binomial cells.
"""

from __future__ import annotations

import itertools
import json
import math
import shutil
from fractions import Fraction
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
import pytest
from typer.testing import CliRunner

import persuasive as pp
from persuasive.classes.receivers import NegativeBinomialReceiver, PoissonReceiver
from persuasive.cli import app
from persuasive.errors import ValidationError
from persuasive.release.linked_check import cycle, linked_spec
from persuasive.report.verify import verify_certificate

FAIR = Path(__file__).resolve().parents[1] / "examples" / "data" / "fair.csv"
TABLES = [["religious", "occupation"], ["religious", "rate_marriage"]]
MARGINS = ["religious,occupation", "religious,rate_marriage"]
RECEIVER = PoissonReceiver(0.6, 2.0)

# ---------------------------------------------------------------------------------- brute force
#
# Cover table X over A x B x C (2 x 2 x 2). Table 1 is X_AB (sum over C), table 2 X_AC (sum
# over B). A publication of a 2-D table: its values (None where suppressed), statuses ("p"
# primary < h, "s" secondary >= h, "" released) and its published margins ({axis kept: totals}).

H = 3


def publish(
    y: np.ndarray, secondary: set[tuple[int, int]], kept: tuple[int, ...], h: int = H
) -> dict:
    status = {}
    for idx in itertools.product(*map(range, y.shape)):
        status[idx] = "p" if y[idx] < h else ("s" if idx in secondary else "")
    margins = {ax: tuple(int(t) for t in y.sum(axis=1 - ax)) for ax in kept}
    return {"shape": y.shape, "status": status, "y": y.copy(), "margins": margins}


def consistent(t: dict, y: np.ndarray) -> bool:
    for idx, st in t["status"].items():
        v = int(y[idx])
        if (st == "" and v != t["y"][idx]) or (st == "p" and v >= H) or (st == "s" and v < H):
            return False
    return all(tuple(int(s) for s in y.sum(axis=1 - ax)) == m for ax, m in t["margins"].items())


def tables_of(t: dict, total: int) -> list[np.ndarray]:
    """Every 2-D table consistent with the publication ``t``: each hidden cell ranges up to
    the smallest published total it lies in (or the grand total)."""
    hidden = [idx for idx, st in t["status"].items() if st]
    ranges = []
    for idx in hidden:
        bound = min([total, *(t["margins"][ax][idx[ax]] for ax in t["margins"])])
        ranges.append(range(bound + 1))
    out = []
    for vals in itertools.product(*ranges):
        y = t["y"].copy()
        for idx, v in zip(hidden, vals, strict=True):
            y[idx] = v
        if consistent(t, y):
            out.append(y)
    return out


def poisson_weight(x: int, mean: Fraction) -> Fraction:
    # e^{-mean} is the same factor for every table of one shape: left out (it cancels)
    return mean**x / math.factorial(x)


def negbin_weight(x: int, size: int, p: Fraction) -> Fraction:
    return math.comb(x + size - 1, x) * p**size * (1 - p) ** x


def cover_sum(rows: tuple[int, ...], cols: tuple[int, ...], weight: Any) -> Fraction:
    """Sum over every 2 x 2 table (B x C) with these row and column sums of the product of
    its cells' weights: the table is x00 = t, x01 = r0 - t, x10 = c0 - t, x11 = r1 - c0 + t."""
    (r0, r1), (c0, _) = rows, cols
    total = Fraction(0)
    for t in range(r0 + 1):
        cells = (t, r0 - t, c0 - t, r1 - c0 + t)
        if min(cells) >= 0 and sum(cells) == sum(cols):
            total += math.prod((weight(v) for v in cells), start=Fraction(1))
    return total


def normalise(w: dict) -> dict:
    z = sum(w.values())
    return {k: v / z for k, v in w.items() if v}


def joint_posteriors(t1: dict, t2: dict, n: int, weight: Any) -> tuple[dict, dict]:
    """The posteriors of table 1 and of table 2 given both publications, by enumerating every
    cover table consistent with both (grouped by its two margins X_AB, X_AC)."""
    w1: dict = {}
    w2: dict = {}
    for y1 in tables_of(t1, n):
        for y2 in tables_of(t2, n):
            if not np.array_equal(y1.sum(axis=1), y2.sum(axis=1)):
                continue  # not the same A totals: no cover table has both margins
            w = math.prod(
                (cover_sum(tuple(y1[a]), tuple(y2[a]), weight) for a in range(y1.shape[0])),
                start=Fraction(1),
            )
            k1, k2 = tuple(y1.ravel()), tuple(y2.ravel())
            w1[k1] = w1.get(k1, 0) + w
            w2[k2] = w2.get(k2, 0) + w
    return normalise(w1), normalise(w2)


def single_posterior(t: dict, n: int, weight: Any) -> dict:
    """A table's posterior given its own publication, cells independent with ``weight``."""
    w = {
        tuple(y.ravel()): math.prod((weight(int(v)) for v in y.ravel()), start=Fraction(1))
        for y in tables_of(t, n)
    }
    return normalise(w)


def cover_case(seed: int) -> tuple[np.ndarray, dict, dict]:
    """A random cover table and a publication of each table: every count below h suppressed,
    some others as secondary cells, the A totals (shared) and sometimes the other totals."""
    rng = np.random.default_rng(seed)
    x = rng.poisson(2.0, (2, 2, 2))
    y1, y2 = x.sum(axis=2), x.sum(axis=1)

    def pub(y: np.ndarray) -> dict:
        cells = itertools.product(range(2), range(2))
        sec = {idx for idx in cells if y[idx] >= H and rng.random() < 0.7}
        return publish(y, sec, (0,) if rng.random() < 0.5 else (0, 1))

    return x, pub(y1), pub(y2)


@pytest.mark.parametrize("seed", range(10))
def test_lemma_joint_posterior_is_the_single_table_posterior(seed: int) -> None:
    x, t1, t2 = cover_case(seed)
    n = int(x.sum())
    mu = Fraction(3, 2)
    j1, j2 = joint_posteriors(t1, t2, n, lambda v: poisson_weight(v, mu))
    # each table cell sums m = 2 cover cells: Poisson(2 mu)
    s1 = single_posterior(t1, n, lambda v: poisson_weight(v, 2 * mu))
    s2 = single_posterior(t2, n, lambda v: poisson_weight(v, 2 * mu))
    assert j1 == s1 and j2 == s2  # exactly, in rational arithmetic


def test_lemma_cases_are_not_trivial() -> None:
    """At least one of the cases has a suppressed table with several possible values."""
    sizes = []
    for seed in range(10):
        x, t1, t2 = cover_case(seed)
        sizes.append(len(tables_of(t1, int(x.sum()))) * len(tables_of(t2, int(x.sum()))))
    assert sorted(sizes)[-3] > 10, sizes


def test_lemma_against_the_library_posterior() -> None:
    """The library's exact posterior of table 1 alone (Poisson(2 mu) cells, margins A and B)
    equals the marginals of the joint posterior enumerated over cover tables."""
    from scipy import stats

    from persuasive.margins import MarginTable, posterior_marginals

    y1 = np.array([[3, 4], [1, 4]])
    y2 = np.array([[4, 3], [2, 3]])
    t1 = publish(y1, {(0, 0), (0, 1), (1, 1)}, (0, 1))
    t2 = publish(y2, set(), (0, 1))
    n, mu = 12, Fraction(3, 2)
    j1, _ = joint_posteriors(t1, t2, n, lambda v: poisson_weight(v, mu))
    sup = np.ones((2, 2), dtype=bool)
    sec = np.array([[True, True], [False, True]])
    table = MarginTable(y1, h=H, margins="rows,cols", suppressed=sup, secondary=sec)
    post = posterior_marginals(table, pp.IndependentCellsPrior([stats.poisson(3.0)] * 4))
    for j, cell in enumerate(post.cells):
        values, probs = post.pmf(j)
        want: dict[int, float] = {}
        for y, p in j1.items():
            want[y[cell]] = want.get(y[cell], 0.0) + float(p)
        assert dict(zip(values.tolist(), probs.tolist(), strict=True)) == pytest.approx(want)
    assert len(j1) == 2  # (1, 0) is 0 or 1: not disclosed


def test_counter_example_shared_totals_published_by_one_table_only() -> None:
    """Table 2 publishes only its C totals: the A totals come from table 1 and change table
    2's posterior. The condition is needed."""
    y1 = np.array([[3, 4], [1, 4]])
    y2 = np.array([[4, 3], [2, 3]])
    t1 = publish(y1, {(0, 0), (0, 1), (1, 1)}, (0, 1))
    t2 = publish(y2, {(0, 0), (0, 1), (1, 1)}, (1,))
    n, mu = 12, Fraction(3, 2)
    j1, j2 = joint_posteriors(t1, t2, n, lambda v: poisson_weight(v, mu))
    s1 = single_posterior(t1, n, lambda v: poisson_weight(v, 2 * mu))
    s2 = single_posterior(t2, n, lambda v: poisson_weight(v, 2 * mu))
    assert j1 == s1  # table 1 publishes A: its posterior is unchanged
    assert j2 != s2 and len(j2) == 1 and len(s2) > 1  # table 2's cell (1, 0) disclosed
    with pytest.raises(ValidationError, match="publishes no margin containing it"):
        linked_spec([["a", "b"], ["a", "c"]], ["a,b", "c"])


def test_counter_example_negative_binomial() -> None:
    """Negative-binomial cover cells (size 1): the joint posterior is not the single-table one
    even with the shared totals published by both, so the Receiver is refused."""
    y1 = np.array([[3, 4], [1, 4]])
    y2 = np.array([[4, 3], [2, 3]])
    t1 = publish(y1, {(0, 0), (0, 1), (1, 1)}, (0, 1))
    t2 = publish(y2, {(0, 0), (0, 1), (1, 1)}, (0, 1))
    n, p = 12, Fraction(1, 3)
    j1, _ = joint_posteriors(t1, t2, n, lambda v: negbin_weight(v, 1, p))
    s1 = single_posterior(t1, n, lambda v: negbin_weight(v, 2, p))  # NB(1) + NB(1) = NB(2)
    assert set(j1) == set(s1) and j1 != s1
    with pytest.raises(ValidationError, match="negative-binomial Receiver is refused"):
        pp.release_linked_tables(
            FAIR, tables=TABLES, margins=MARGINS, h=10, receiver=NegativeBinomialReceiver(1, 4, 1)
        )


# ---------------------------------------------------------------------------------- the checks


def running_intersection(family: list[set[str]]) -> bool:
    """Whether some order of the family has the running-intersection property (brute force)."""
    for order in itertools.permutations(family):
        ok = all(
            any(order[j] & set().union(*order[:j]) <= order[i] for i in range(j))
            for j in range(1, len(order))
        )
        if ok:
            return True
    return False


def test_cycle_agrees_with_running_intersection_by_permutations() -> None:
    rng = np.random.default_rng(3)
    variables = list("abcde")
    seen = {True: 0, False: 0}
    for _ in range(300):
        family = []
        while len(family) < rng.integers(2, 5):
            t = set(rng.choice(variables, size=rng.integers(1, 4), replace=False).tolist())
            if not any(t <= f or f <= t for f in family):
                family.append(t)
        acyclic = running_intersection(family)
        assert (cycle([sorted(f) for f in family]) == []) == acyclic, family
        seen[acyclic] += 1
    assert seen[True] > 20 and seen[False] > 20


@pytest.mark.parametrize(
    ("tables", "margins", "match"),
    [
        ("a*b;b*c;a*c", "a,b;b,c;a,c", r"form a cycle .* publish instead one table a\*b\*c with "),
        ("a*b;a*c", "a,b;c", r"'a-c' \(a\*c\) share a, but 'a-c' publishes no margin"),
        ("a*b;a", "a,b;total", r"table 'a' \(a\) lies inside table 'a-b'"),
        ("a*b", "a", "at least two tables"),
        ("a*b;a*c", "a", "one set of published margins per table"),
        ("a*b;a*c", "a+b;a", "keeps every dimension"),
        ("a*a;a*c", "a;a", "distinct variables"),
    ],
)
def test_refusals(tables: str, margins: str, match: str) -> None:
    with pytest.raises(ValidationError, match=match):
        linked_spec(tables, margins)


def test_chain_shares_the_grand_total_through_any_margin() -> None:
    spec = linked_spec("a*b;b*c;c*d", "a,b;b,c;c,d")
    shared = {(lk.first, lk.second): (lk.shared, lk.margins) for lk in spec.links}
    assert shared[(0, 1)] == (("b",), ("b", "b")) and shared[(0, 2)] == ((), ("a", "c"))


# ---------------------------------------------------------------------------------- end to end


@pytest.fixture(scope="module")
def released(tmp_path_factory: pytest.TempPathFactory) -> tuple[Any, Path]:
    rel = pp.release_linked_tables(
        FAIR, tables=TABLES, margins=MARGINS, h=10, receiver=RECEIVER, target_kappa=4.5
    )
    folder = rel.write(tmp_path_factory.mktemp("linked") / "out")
    return rel, folder


def test_api_end_to_end(released: tuple[Any, Path]) -> None:
    rel, folder = released
    assert rel.ok and verify_certificate(folder / "certificate.json").ok
    doc = json.loads((folder / "certificate.json").read_text())
    records = pl.read_csv(FAIR)
    levels = {v: records[v].n_unique() for v in ("religious", "occupation", "rate_marriage")}
    assert doc["publication"]["levels"] == levels
    for t, want_m in zip(doc["publication"]["tables"], (5, 6), strict=True):
        sub = json.loads((folder / t["name"] / "certificate.json").read_text())
        assert (
            t["cover_cells_per_cell"]
            == want_m
            == math.prod(levels.values())
            // math.prod(levels[v] for v in sub["claim"]["columns"]["keys"])
        )
        assert sub["claim"]["receiver"]["mean_max"] == want_m * 2.0 and sub["guarantee"]["holds"]
        assert t["certificate_digest"] == sub["digest"]
        sub_folder = folder / t["name"]
        assert verify_certificate(sub_folder / "certificate.json", published=sub_folder).ok
    # the shared totals are the religious counts of the records, published by both tables
    counts = records.group_by("religious").len().sort("religious")
    want = [[str(r), n] for r, n in counts.rows()]
    (shared,) = doc["publication"]["shared"]
    assert shared["variables"] == ["religious"] and shared["totals"] == want
    for t in TABLES:
        margins = pl.read_csv(folder / "-".join(t) / "margins.csv", infer_schema=False)
        rows = margins.filter(pl.col("margin") == "religious").select("religious", "total").rows()
        assert sorted([r, int(n)] for r, n in rows) == want
    assert doc["guarantee"]["kappa"] == max(t["kappa"] for t in doc["publication"]["tables"])
    # the sentence states κ once, in plain words with its unit and the factor e**κ
    said, kappa = doc["guarantee"]["statement"], doc["guarantee"]["kappa"]
    assert said.count(f"κ = {kappa:.4g} nats") == 1 and "(e to the power κ)" in said
    factor = float(said.split("by at most ")[1].split(" ")[0].replace(",", ""))
    assert factor == pytest.approx(math.exp(kappa), rel=0.05)


def test_verify_names_edits(released: tuple[Any, Path], tmp_path: Path) -> None:
    _, folder = released
    copy = tmp_path / "copy"
    shutil.copytree(folder, copy)
    cert = copy / "certificate.json"
    doc = json.loads(cert.read_text())
    doc["guarantee"]["kappa"] = 1.0
    cert.write_text(json.dumps(doc))
    got = verify_certificate(cert)
    assert not got.ok and any(m.startswith("guarantee.kappa") for m in got.mismatches)
    # a shared total edited in one table: that table's certificate and the shared totals fail
    shutil.rmtree(copy)
    shutil.copytree(folder, copy)
    path = copy / "religious-occupation" / "margins.csv"
    text = path.read_text().splitlines()
    i = next(k for k, line in enumerate(text) if line.startswith("religious,1,"))
    parts = text[i].split(",")
    text[i] = ",".join([*parts[:-1], str(int(parts[-1]) + 1)])
    path.write_text("\n".join(text) + "\n")
    got = verify_certificate(copy / "certificate.json")
    assert not got.ok
    assert any("totals over religious" in m and "differ" in m for m in got.mismatches)
    assert any(m.startswith("tables[religious-occupation]") for m in got.mismatches)


def test_refused_writes_nothing(tmp_path: Path) -> None:
    from persuasive.margins.planner import InfeasiblePlanError

    data = small_records(tmp_path / "records.csv")
    kw = dict(tables="a*b;a*c", margins="a,b;a,c", h=5, receiver=PoissonReceiver(0.5, 3))
    with pytest.raises(InfeasiblePlanError, match=r"table 'a-b' \(a\*b\).*no table is published"):
        pp.release_linked_tables(data, target_kappa=3, **kw)
    rel = pp.release_linked_tables(data, **kw)  # no target: a cell disclosed below r
    assert rel.refused and not rel.releases[0].ok
    assert "table 'a-b' is not certified, so no table is published" in rel.statement()
    with pytest.raises(ValidationError, match="nothing to publish"):
        rel.write(tmp_path / "out")
    assert not (tmp_path / "out").exists()
    assert repr(rel).startswith("<LinkedRelease")


def run(*args: Any) -> Any:
    return CliRunner().invoke(app, [str(a) for a in args])


def small_records(path: Path) -> Path:
    """120 records over a (3 levels), b (3) and c (2): small enough for a fast release."""
    rng = np.random.default_rng(5)
    n = 120
    pl.DataFrame(
        {
            "a": rng.choice(["x", "y", "z"], n, p=[0.5, 0.4, 0.1]).tolist(),
            "b": rng.choice(["1", "2", "3"], n, p=[0.6, 0.3, 0.1]).tolist(),
            "c": rng.choice(["u", "v"], n, p=[0.7, 0.3]).tolist(),
        }
    ).write_csv(path)
    return path


def test_cli_exit_codes(tmp_path: Path) -> None:
    data = small_records(tmp_path / "records.csv")
    base = ["release", "linked", data, "--tables", "a*b;a*c", "--margins", "a,b;a,c", "--h", "5"]
    out = tmp_path / "out"
    ok = run(*base, "--poisson-mean", "0.5:3", "--target-kappa", "6", "--out", out)
    assert ok.exit_code == 0, ok.output
    assert "2 equal totals" not in ok.output and "3 equal totals" in ok.output  # a: 3 levels
    assert run("verify", out / "certificate.json").exit_code == 0
    doc = json.loads((out / "certificate.json").read_text())
    counts = pl.read_csv(data).group_by("a").len().sort("a").rows()
    assert doc["publication"]["shared"][0]["totals"] == [list(r) for r in counts]
    # no target: a small cell alone in its row is disclosed, so a table is not certified
    for extra in (["--target-kappa", "3"], []):
        no = run(*base, "--poisson-mean", "0.5:3", *extra, "--out", tmp_path / "no")
        assert no.exit_code == 1 and "NOT released (nothing written)" in no.output, no.output
        assert not (tmp_path / "no").exists()
    nb = run(*base, "--negbin-mean", "1:4", "--negbin-size", "1", "--out", tmp_path / "nb")
    assert nb.exit_code == 2 and "negative-binomial" in nb.output
    cyc = run(
        "release", "linked", data, "--tables", "a*b;b*c;a*c", "--margins", "a,b;b,c;a,c",
        "--h", "5", "--poisson-mean", "0.5:3", "--out", tmp_path / "cyc",
    )  # fmt: skip
    assert cyc.exit_code == 2 and "form a cycle" in cyc.output
    assert not (tmp_path / "nb").exists() and not (tmp_path / "cyc").exists()


# ------------------------------------------------------------------- a chain of three tables


def compositions(n: int, k: int) -> np.ndarray:
    """Every vector of k non-negative integers summing to n (stars and bars), one per row."""
    rows = []
    for bars in itertools.combinations(range(n + k - 1), k - 1):
        edges = (-1, *bars, n + k - 1)
        rows.append([edges[i + 1] - edges[i] - 1 for i in range(k)])
    return np.array(rows, dtype=np.int64)


def fits(t: dict, y: np.ndarray, h: int) -> np.ndarray:
    """Which of the 2 x 2 tables ``y`` (shape (M, 2, 2)) are consistent with ``t``."""
    ok = np.ones(len(y), dtype=bool)
    for idx, st in t["status"].items():
        v = y[:, idx[0], idx[1]]
        ok &= (v == t["y"][idx]) if st == "" else (v < h) if st == "p" else (v >= h)
    for ax, m in t["margins"].items():
        ok &= (y.sum(axis=2 - ax) == np.array(m)).all(axis=1)
    return ok


def exact_posterior(tables: np.ndarray, mean: Fraction) -> dict:
    w: dict = {}
    for y in tables:
        key = tuple(int(v) for v in y.ravel())
        w[key] = w.get(key, 0) + math.prod(
            (poisson_weight(int(v), mean) for v in y.ravel()), start=Fraction(1)
        )
    return normalise(w)


def chain(seed: int, margins: list[tuple[int, ...]]) -> list[tuple[dict, dict]]:
    """A x B, B x C, C x D from a 2 x 2 x 2 x 2 cover table of 6 records, h = 2, with the
    given kept axes of each table: for each table, its posterior given all three publications
    (every cover table enumerated) and given its own (every 2 x 2 table enumerated)."""
    h, n, mu = 2, 6, Fraction(1, 2)
    rng = np.random.default_rng(seed)
    x = rng.multinomial(n, [1 / 16] * 16).reshape(2, 2, 2, 2)
    pubs = []
    tables = [x.sum(axis=(2, 3)), x.sum(axis=(0, 3)), x.sum(axis=(0, 1))]
    for y, kept in zip(tables, margins, strict=True):
        cells = itertools.product(range(2), range(2))
        pubs.append(publish(y, {i for i in cells if y[i] >= h and rng.random() < 0.5}, kept, h))
    cover = compositions(n, 16).reshape(-1, 2, 2, 2, 2)
    sums = [cover.sum(axis=(3, 4)), cover.sum(axis=(1, 4)), cover.sum(axis=(1, 2))]
    joint = np.ones(len(cover), dtype=bool)
    for t, y in zip(pubs, sums, strict=True):
        joint &= fits(t, y, h)
    weights = [
        math.prod((poisson_weight(int(v), mu) for v in c.ravel()), start=Fraction(1))
        for c in cover[joint]
    ]
    single = compositions(n, 4).reshape(-1, 2, 2)
    out = []
    for t, y in zip(pubs, sums, strict=True):
        w: dict = {}
        for yk, wk in zip(y[joint], weights, strict=True):
            key = tuple(int(v) for v in yk.ravel())
            w[key] = w.get(key, 0) + wk
        out.append((normalise(w), exact_posterior(single[fits(t, single, h)], 4 * mu)))
    return out  # m_k = 4 cover cells per table cell: Poisson(4 mu)


@pytest.mark.parametrize("seed", [0, 1, 3, 4, 5])
def test_lemma_chain_of_three_tables(seed: int) -> None:
    """B published by the first two tables, C by the last two (the first and the last share
    only the grand total): each table's posterior given all three is its own, exactly."""
    posts = chain(seed, [(1,), (0, 1), (0,)])
    assert all(joint == alone for joint, alone in posts)
    assert max(len(joint) for joint, _ in posts) > 1  # a suppressed cell is not disclosed


def test_counter_example_chain_without_a_shared_total() -> None:
    """B x C does not publish its C totals: C x D gives them away, and B x C's posterior
    given all three is not its own."""
    for seed in (0, 4, 5):
        (_, _), (joint, alone), (_, _) = chain(seed, [(1,), (0,), (0,)])
        assert joint != alone and len(joint) < len(alone)


def test_verify_names_a_table_released_for_another_receiver(tmp_path: Path) -> None:
    """A table folder replaced by a valid release of the same table against another Receiver
    (Poisson 1..7, where the derived one is 1..6): its own certificate verifies, the linked one
    names the claim it should have derived."""
    data = small_records(tmp_path / "records.csv")
    kw: dict[str, Any] = dict(tables="a*b;a*c", margins="a,b;a,c", h=5, target_kappa=6)
    folder = pp.release_linked_tables(data, receiver=PoissonReceiver(0.5, 3), **kw).write(
        tmp_path / "out"
    )
    other = pp.release_table_with_margins(
        data, keys=["a", "b"], microdata=True, h=5, receiver=PoissonReceiver(1, 7),
        margins="a,b", target_kappa=6,
    ).write(tmp_path / "other")  # fmt: skip
    assert verify_certificate(other / "certificate.json", published=other).ok
    for name in ("released.csv", "margins.csv", "certificate.json"):
        shutil.copy(other / name, folder / "a-b" / name)
    got = verify_certificate(folder / "certificate.json")
    assert not got.ok
    want = "tables[a-b].claim.receiver: stated {'mean_max': 7.0"  # derived: 2 x (0.5..3)
    assert any(m.startswith(want) for m in got.mismatches), got.mismatches
    assert any(m.startswith("publication.tables") for m in got.mismatches)


def test_cli_json(tmp_path: Path) -> None:
    data = small_records(tmp_path / "records.csv")
    res = run(
        "release", "linked", data, "--tables", "a*b;a*c", "--margins", "a,b;a,c", "--h", "5",
        "--poisson-mean", "0.5:3", "--target-kappa", "6", "--json", "--out", tmp_path / "out",
    )  # fmt: skip
    assert res.exit_code == 0, res.output
    doc = json.loads(res.output)
    assert doc["holds"] and [t["table"] for t in doc["tables"]] == ["a-b", "a-c"]
    assert [t["cover_cells_per_cell"] for t in doc["tables"]] == [2, 3]  # c: 2 levels, b: 3
    assert doc["certificate"] == json.loads((tmp_path / "out" / "certificate.json").read_text())
