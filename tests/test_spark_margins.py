"""The release with margins on Spark (``engine="spark"``) writes what the polars engine writes.

The oracle is the in-memory polars engine on the same input: every file of the written
release folder (certificate, published table, margins, custodian files) byte for byte, the
exact worst-case arrays, the same one-line errors and refusals, the same command-line exit
status and error line. The pieces handed to :func:`persuasive.margins.parallel.map_tasks` are
seen to run as Spark jobs (the mapper is spied on and the jobs it starts counted), and an
error raised on an executor comes back as the one raised in this process, the first in item
order. One Spark session (``local[2]``) serves the whole module.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
import pytest
from typer.testing import CliRunner

from persuasive import _domains as dm
from persuasive.classes.receivers import PoissonReceiver
from persuasive.cli import app
from persuasive.errors import PersuasiveError, ValidationError
from persuasive.margins import parallel
from persuasive.margins.planner import InfeasiblePlanError
from persuasive.release.margins import release_table_with_margins

pytest.importorskip("pyspark")

MEANS = (2, 8)
RECEIVER = PoissonReceiver(*MEANS)


# ``spark``: the test run's one local[2] session (tests/conftest.py).


# ------------------------------------------------------------------------ helpers
def files_of(folder: Path) -> dict[str, bytes]:
    """Every file under ``folder`` (hidden ones too) by its relative path, with its bytes."""
    return {
        p.relative_to(folder).as_posix(): p.read_bytes()
        for p in sorted(folder.rglob("*"))
        if p.is_file()
    }


def assert_same_folders(a: Path, b: Path) -> None:
    x, y = files_of(a), files_of(b)
    assert sorted(x) == sorted(y)
    assert "certificate.json" in x and any(n.startswith("margins.") for n in x)
    assert any(n.startswith("custodian_") for n in x)
    for name in x:
        assert x[name] == y[name], f"{name} differs between the engines"


def job_ids(spark: Any) -> set[int]:
    return set(spark.sparkContext.statusTracker().getJobIdsForGroup(None))


def release(source: Any, engine: str, spark: Any = None, **kw: Any) -> Any:
    opts: dict[str, Any] = {"count": "n", "h": 3, "receiver": RECEIVER, **kw}
    if engine == "spark":
        opts |= {"engine": "spark", "spark": spark}
    return release_table_with_margins(source, **opts)


def outcome(source: Any, engine: str, spark: Any = None, **kw: Any) -> tuple[str, Any]:
    """``("ok", release)``, or the kind of error raised and its message."""
    try:
        return "ok", release(source, engine, spark, **kw)
    except InfeasiblePlanError as exc:
        return "infeasible", str(exc)
    except ValidationError as exc:
        return "invalid", str(exc)


def assert_same_arrays(x: Any, y: Any) -> None:
    x, y = np.asarray(x), np.asarray(y)
    assert x.dtype == y.dtype and x.shape == y.shape
    assert np.array_equal(x, y, equal_nan=True)
    assert x.tobytes() == y.tobytes()  # the same bits: signed zeros and NaNs included


@dataclass
class Spy:
    """Wraps :func:`persuasive.spark.margins.spark_mapper`: each call of the mapper it
    returns, as ``(function name, items, Spark jobs it started)``."""

    spark: Any
    real: Callable[[Any], Any]
    calls: list[tuple[str, int, set[int]]]

    def __call__(self, session: Any) -> Any:
        assert session is self.spark  # the session given, not a second one
        mapper = self.real(session)

        def spied(fn: Any, items: list[Any]) -> Any:
            before = job_ids(self.spark)
            out = mapper(fn, items)
            self.calls.append((fn.__name__, len(items), job_ids(self.spark) - before))
            return out

        return spied


@pytest.fixture
def spy(spark: Any, monkeypatch: pytest.MonkeyPatch) -> Spy:
    import persuasive.spark.margins as sm

    s = Spy(spark, sm.spark_mapper, [])
    monkeypatch.setattr(sm, "spark_mapper", s)
    return s


def assert_ran_on_spark(spark: Any, spy: Spy) -> None:
    """Every piece handed to the mapper ran as the tasks of one Spark job, which succeeded."""
    tracker = spark.sparkContext.statusTracker()
    assert spy.calls and all(n > 1 for _, n, _ in spy.calls)  # map_tasks runs 1 in place
    per_core = spark.sparkContext.defaultParallelism * 4
    for name, n, new in spy.calls:
        assert len(new) == 1, (name, n, new)
        info = tracker.getJobInfo(next(iter(new)))
        assert info is not None and info.status == "SUCCEEDED"
        tasks = sum(tracker.getStageInfo(s).numTasks for s in info.stageIds)
        assert tasks == min(n, per_core), (name, n, tasks)


# ------------------------------------------------------------------------ random tables
@dataclass
class Case:
    """A random table and the options of its release."""

    shape: tuple[int, ...]
    margins: str
    expect: str = "ok"  # or "infeasible": the planner reaches no pattern meeting the target
    fmt: str = "csv"
    out: str = "csv"
    mean: float = 4.0
    h: int = 3
    target: float | None = None
    absent: str = "zero"
    drop: float = 0.0  # the fraction of the cells absent from the file
    text_keys: bool = False
    known: int = 0  # cells listed as known
    apriori: int = 0  # cells with a-priori bounds
    hierarchy: bool = False  # b nested in a (b's levels named after their a)
    seed: int = 0


CASES = {
    "2d rows,cols": Case((6, 6), "rows,cols", seed=1),
    "2d rows,cols,total parquet target": Case(
        (5, 6), "rows,cols,total", fmt="parquet", target=5.0, text_keys=True, seed=1
    ),
    "2d structural known target": Case(
        (6, 6), "rows,cols", absent="structural", drop=0.2, known=2, target=6.0, seed=0
    ),
    "2d zero-filled apriori h4 parquet out": Case(
        (5, 5), "rows,cols,total", h=4, mean=5.0, drop=0.15, apriori=3, out="parquet", seed=4
    ),
    "2d infeasible target": Case((4, 5), "rows,cols", expect="infeasible", target=5.0, seed=2),
    "3d a+b,c parquet target": Case(
        (3, 3, 3), "a+b,c", fmt="parquet", target=5.0, text_keys=True, seed=1
    ),
    "3d a,b,c known target": Case((3, 3, 3), "a,b,c", target=5.0, known=1, seed=2),
    "3d hierarchy a>b apriori": Case((2, 3, 3), "a+c,b,total", hierarchy=True, apriori=2, seed=8),
}


def build(case: Case, folder: Path) -> tuple[Path, dict[str, Any]]:
    """The input file of ``case`` in ``folder`` and the options of its release."""
    rng = np.random.default_rng(case.seed)
    names = list("abc"[: len(case.shape)])
    grid = np.stack(np.meshgrid(*[np.arange(n) for n in case.shape], indexing="ij"))
    cols: dict[str, Any] = {}
    for name, axis in zip(names, grid.reshape(len(case.shape), -1), strict=True):
        cols[name] = [f"{name}{i}" for i in axis] if case.text_keys else axis.tolist()
    if case.hierarchy:  # b "1.2" belongs to a 1 only
        cols["b"] = [f"{a}.{b}" for a, b in zip(cols["a"], cols["b"], strict=True)]
    frame = pl.DataFrame({**cols, "n": rng.poisson(case.mean, grid[0].size)})
    frame = frame.sample(fraction=1.0, shuffle=True, seed=case.seed)  # not in key order
    if case.drop:
        frame = frame.filter(pl.Series(rng.random(frame.height) >= case.drop))
    path = folder / f"in.{case.fmt}"
    if case.fmt == "csv":
        frame.write_csv(path)
    else:
        frame.write_parquet(path)
    opts: dict[str, Any] = {"keys": names, "h": case.h, "margins": case.margins}
    opts |= {"absent": case.absent, "target_kappa": case.target}
    picked = frame.sample(n=case.known + case.apriori, seed=case.seed + 1)
    if case.known:
        opts["known"] = picked.head(case.known).select(names)
    if case.apriori:
        lower = (pl.col("n") - 1).clip(lower_bound=0)
        opts["apriori"] = picked.tail(case.apriori).select(
            *names, lower=lower, upper=pl.col("n") + 2
        )
    if case.hierarchy:
        opts["hierarchy"] = "a>b"
    return path, opts


@pytest.mark.parametrize("name", list(CASES))
def test_random_tables_same_release(spark: Any, spy: Spy, tmp_path: Path, name: str) -> None:
    case = CASES[name]
    path, opts = build(case, tmp_path)
    got_polars = outcome(path, "polars", **opts)
    got_spark = outcome(path, "spark", spark, **opts)
    assert_ran_on_spark(spark, spy)  # the exact DPs, the LPs or the planner's runs
    if case.expect == "infeasible":
        assert got_polars[0] == "infeasible", got_polars
        assert got_spark == got_polars
        return
    assert got_polars[0] == "ok" and got_spark[0] == "ok", (got_polars, got_spark)
    mem, on_spark = got_polars[1], got_spark[1]
    assert mem.primary.suppressed.any()  # small counts: cells hidden, pieces to compute
    for attr in ("kappa_upper", "kappa_published", "disclosed"):
        assert_same_arrays(getattr(mem.worst, attr), getattr(on_spark.worst, attr))
    assert_same_arrays(mem.primary_worst.kappa_upper, on_spark.primary_worst.kappa_upper)
    assert_same_arrays(mem.table.suppressed, on_spark.table.suppressed)
    assert_same_arrays(mem.intervals.lower, on_spark.intervals.lower)
    assert_same_arrays(mem.intervals.upper, on_spark.intervals.upper)
    assert on_spark.summary() == mem.summary()
    assert (mem.plan is None) == (case.target is None) == (on_spark.plan is None)
    if case.target is not None:  # planned: every hidden cell's bound meets the target
        hidden = mem.table.suppressed
        assert (hidden >= mem.primary.suppressed).all()
        assert mem.worst.kappa_published[hidden].max() <= case.target
        secondary = hidden & ~mem.primary.suppressed
        if not secondary.any():  # the primary pattern met it already
            assert mem.primary_worst.kappa_published[hidden].max() <= case.target
    assert not mem.refused and not on_spark.refused
    a, b = tmp_path / "polars", tmp_path / "spark"
    mem.write(a, format=case.out)
    on_spark.write(b, format=case.out)
    assert (b / f"released.{case.out}").is_file()
    assert_same_folders(a, b)


def test_a_component_too_large_for_the_dp_runs_its_chain_on_the_driver(
    spark: Any, spy: Spy, tmp_path: Path
) -> None:
    """Margins a+b, a+c, a+d split the table by a: one component per level of a, the one of
    large counts solved exactly (the DP), the one of small counts too large for it (its
    Markov chain, on the driver, from the release's generator): the same estimates."""
    rng = np.random.default_rng(0)
    grid = np.stack(np.meshgrid(*[np.arange(n) for n in (2, 3, 3, 4)], indexing="ij"))
    a, b, c, d = grid.reshape(4, -1)
    n = rng.poisson(np.where(a == 1, 2.0, 7.0))
    pl.DataFrame({"a": a, "b": b, "c": c, "d": d, "n": n}).write_csv(tmp_path / "t.csv")
    opts = {"keys": ["a", "b", "c", "d"], "margins": "a+b,a+c,a+d"}
    mem = release(tmp_path / "t.csv", "polars", **opts)
    on_spark = release(tmp_path / "t.csv", "spark", spark, **opts)
    assert sorted(mem.worst.posterior.methods) == ["exact-dp", "mcmc"]
    assert on_spark.worst.posterior.methods == mem.worst.posterior.methods
    assert_ran_on_spark(spark, spy)  # the attacker's two LPs
    for attr in ("kappa_upper", "kappa_published", "estimate", "exact_cells"):
        assert_same_arrays(getattr(mem.worst, attr), getattr(on_spark.worst, attr))
    mem.write(tmp_path / "polars")
    on_spark.write(tmp_path / "spark")
    assert_same_folders(tmp_path / "polars", tmp_path / "spark")


def test_a_spark_dataframe_is_released_on_spark(spark: Any, spy: Spy, tmp_path: Path) -> None:
    """No engine given: a ``pyspark.sql.DataFrame`` goes to engine spark, and its release is
    the polars engine's of the same rows."""
    path, opts = build(CASES["2d rows,cols"], tmp_path)
    frame = pl.read_csv(path)
    df = spark.createDataFrame(frame.to_pandas())
    mem = release(frame, "polars", **opts)
    on_spark = release_table_with_margins(df, count="n", receiver=RECEIVER, **opts)
    assert_ran_on_spark(spark, spy)
    assert_same_arrays(mem.worst.kappa_upper, on_spark.worst.kappa_upper)
    mem.write(tmp_path / "polars", format="parquet")
    on_spark.write(tmp_path / "spark", format="parquet")
    assert_same_folders(tmp_path / "polars", tmp_path / "spark")


# ------------------------------------------------------------------------ the mapper
def test_map_tasks_on_spark_keeps_order_and_raises_the_first_error(spark: Any) -> None:
    from persuasive.spark.margins import spark_mapper

    mapper = spark_mapper(spark)
    items = list(range(-40, 41, 3))  # more items than slices: several per task
    with parallel.using(mapper):
        assert parallel.active()
        assert parallel.map_tasks(abs, items) == [abs(x) for x in items]
        assert parallel.map_tasks(abs, [-7]) == [7]  # one item: in this process
    check = functools.partial(dm.check, "target_kappa")
    bad = [1.0, 2.5, -1.0, 3.0, "x", float("nan")]  # three failures: -1.0 first
    errors = []
    for m in (None, mapper):
        with parallel.using(m), pytest.raises(ValidationError) as exc:
            parallel.map_tasks(check, bad)
        errors.append((type(exc.value), str(exc.value)))
    assert errors[0] == errors[1]
    assert "got -1.0" in errors[1][1]
    # each item's result or exception, in order, from the executors as in this process
    got = mapper(check, bad)
    here = [parallel.capture(check, x) for x in bad]
    assert (
        [ok for ok, _ in got] == [ok for ok, _ in here] == [True, True, False, True, False, False]
    )
    for (_, x), (_, y) in zip(got, here, strict=True):
        assert (type(x), str(x)) == (type(y), str(y))  # a result, or an exception
    with parallel.using(mapper), pytest.raises(ValueError, match="invalid literal") as exc:
        parallel.map_tasks(int, ["1", "2", "zz", "3", "yy"])
    assert "'zz'" in str(exc.value)


def test_spark_totals_checked_against_the_cells_collected(spark: Any, tmp_path: Path) -> None:
    from persuasive.release.tables import read_cells
    from persuasive.spark.margins import SparkCells, check_totals

    path = tmp_path / "t.csv"
    pl.DataFrame({"a": [1, 1, 2, 2], "b": ["x", "y", "x", "y"], "n": [2, 7, 5, 1]}).write_csv(path)
    reader = SparkCells(spark, path, 3, 3)
    cells = reader(path, ("a", "b"), "n")
    assert cells.equals(read_cells(path, ("a", "b"), "n"))  # as the polars engine reads them
    assert reader.checked is not None
    assert check_totals(reader.checked, cells, ("a", "b"), [(0,), (1,), ()]) == 3
    changed = cells.with_columns(n=pl.Series([2, 7, 4, 2]))  # row totals hold, columns do not
    assert check_totals(reader.checked, changed, ("a", "b"), [(0,)]) == 1
    with pytest.raises(PersuasiveError, match=r"^internal error: .* totals of margin b; nothing"):
        check_totals(reader.checked, changed, ("a", "b"), [(0,), (1,)])


# ------------------------------------------------------------------------ bad inputs
BAD_CSV = {
    "duplicated key": "a,b,n\n1,x,3\n2,y,4\n1,y,2\n1,x,5\n",
    "negative count": "a,b,n\n1,x,3\n2,y,-4\n",
    "non-integer count": "a,b,n\n1,x,3\n2,y,2.5\n",
    "text count": "a,b,n\n1,x,3\n2,y,abc\n",
    "missing count": "a,b,n\n1,x,3\n2,y,\n",
    "missing key value": "a,b,n\n1,x,3\n2,,4\n",
    "missing column": "a,c,n\n1,x,3\n2,y,4\n",
    "missing count column": "a,b,m\n1,x,3\n",
    "empty table": "a,b,n\n",
    # each count a valid int64, the total of row a=1 (and the grand total) beyond 2**63 - 1
    "margin total beyond int64": f"a,b,n\n1,x,{2**62}\n2,y,5\n1,y,{2**62}\n2,x,1\n",
}
MARGIN_OPTS: dict[str, Any] = {"keys": ["a", "b"], "margins": "rows,cols"}


def error_of(path: Path, engine: str, spark: Any = None) -> tuple[type, str]:
    """The type of the error the release of ``path`` raises, and its message."""
    with pytest.raises(Exception) as exc:
        release(path, engine, spark, **MARGIN_OPTS)
    return type(exc.value), str(exc.value)


@pytest.mark.parametrize("case", list(BAD_CSV))
def test_bad_csv_same_message(spark: Any, tmp_path: Path, case: str) -> None:
    path = tmp_path / "bad.csv"
    path.write_text(BAD_CSV[case], encoding="utf-8")
    mem, on_spark = error_of(path, "polars"), error_of(path, "spark", spark)
    assert issubclass(mem[0], ValidationError), mem
    assert on_spark[0] is mem[0], on_spark[1].splitlines()[0]
    assert on_spark[1] == mem[1]
    assert "\n" not in on_spark[1]


runner = CliRunner()


def cli(*args: str) -> Any:
    return runner.invoke(app, list(args))


def margins_args(path: Path, out: Path, *extra: str) -> list[str]:
    args = ["release", "table", str(path), "--keys", "a,b", "--count", "n", "--h", "3"]
    means = f"{MEANS[0]}:{MEANS[1]}"
    return [*args, "--poisson-mean", means, "--margins", "rows,cols", "--out", str(out), *extra]


SPARK_CLI = ("--engine", "spark", "--spark-master", "local[2]")


@pytest.mark.parametrize(
    "case",
    [
        "duplicated key",
        "negative count",
        "non-integer count",
        "missing column",
        "empty table",
        "margin total beyond int64",
    ],
)
def test_cli_bad_csv_same_exit_and_error_line(spark: Any, tmp_path: Path, case: str) -> None:
    path = tmp_path / "bad.csv"
    path.write_text(BAD_CSV[case], encoding="utf-8")
    runs = [
        cli(*margins_args(path, tmp_path / "polars")),
        cli(*margins_args(path, tmp_path / "spark", *SPARK_CLI)),
    ]
    for r in runs:
        assert r.exit_code == 2, r.stderr
        assert len(r.stderr.splitlines()) == 1 and r.stderr.startswith("error: "), r.stderr
    assert runs[1].stderr == runs[0].stderr
    assert not (tmp_path / "polars").exists() and not (tmp_path / "spark").exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bad.csv"]  # nothing else left


# ------------------------------------------------------------------------ refusals
@pytest.fixture
def small(tmp_path: Path) -> Path:
    path = tmp_path / "t.csv"
    frame = pl.DataFrame({"a": [1, 1, 2, 2], "b": ["x", "y", "x", "y"], "n": [2, 7, 5, 9]})
    frame.with_columns(pub=pl.col("n") > 6).write_csv(path)
    return path


def refusal(path: Path, **kw: Any) -> str:
    opts = {**MARGIN_OPTS, "count": "n", "h": 3, "receiver": RECEIVER, **kw}
    with pytest.raises(ValidationError) as exc:
        release_table_with_margins(path, **opts)
    msg = str(exc.value)
    assert "\n" not in msg
    return msg


def test_refusals_name_the_argument(spark: Any, small: Path) -> None:
    before = job_ids(spark)
    msg = refusal(small, engine="spark", spark=spark, microdata=True)
    assert msg.startswith("microdata=True") and "engine='polars'" in msg
    msg = refusal(small, engine="spark", spark=spark, known="pub")
    assert msg.startswith("known = 'pub'") and "engine='polars'" in msg
    msg = refusal(small, engine="streaming")
    assert msg.startswith("engine = 'streaming'") and "margins" in msg
    msg = refusal(small, engine="polars", spark=spark)
    assert msg.startswith("spark = ") and msg.endswith("needs engine='spark'")
    msg = refusal(small, engine="polars", spark="local[2]")
    assert msg == "spark = 'local[2]' needs engine='spark'"
    assert job_ids(spark) == before  # refused before any Spark job
    # what the refusals stand in for works with the polars engine
    rel = release_table_with_margins(
        small, **MARGIN_OPTS, count="n", h=3, receiver=RECEIVER, known="pub"
    )
    assert rel.known_keys == (("1", "y"), ("2", "y"))


def test_cli_streaming_with_margins_refused(spark: Any, small: Path, tmp_path: Path) -> None:
    r = cli(*margins_args(small, tmp_path / "o", "--engine", "streaming"))
    assert r.exit_code == 2 and len(r.stderr.splitlines()) == 1
    assert r.stderr.startswith("error: --engine streaming") and "--margins" in r.stderr
    assert not (tmp_path / "o").exists()


# ------------------------------------------------------------------------ command line
@pytest.mark.parametrize("target", [None, "6"])
def test_cli_release_same_folder_and_verifies(
    spark: Any, spy: Spy, tmp_path: Path, target: str | None
) -> None:
    from persuasive.spark.session import session_of

    assert session_of("local[2]") is spark  # --spark-master re-uses the module's session
    path, _ = build(Case((6, 6), "rows,cols", seed=0), tmp_path)
    a, b = tmp_path / "polars", tmp_path / "spark"
    extra = ("-q",) if target is None else ("-q", "--target-kappa", target)
    mem = cli(*margins_args(path, a, *extra))
    on_spark = cli(*margins_args(path, b, *extra, *SPARK_CLI))
    # with the target the guarantee holds (exit 0); without, cells are disclosed (exit 1)
    assert mem.exit_code == (1 if target is None else 0), mem.stdout
    assert on_spark.exit_code == mem.exit_code, on_spark.stdout
    assert on_spark.stdout.replace(str(b), "OUT") == mem.stdout.replace(str(a), "OUT")
    assert_same_folders(a, b)
    assert_ran_on_spark(spark, spy)
    if target is not None:
        assert any(name == "_run" and n == 4 for name, n, _ in spy.calls)  # the planner's runs
    for folder in (a, b):  # the certificate recomputes, and its guarantee (its κ) holds
        cert = str(folder / "certificate.json")
        checked = cli("verify", cert, "--published", str(folder))
        assert checked.exit_code == 0, checked.stdout
        assert cli("verify", cert).exit_code == 0  # the published files beside it


# ------------------------------------------------- the audit without the grid on the driver
def _audit_case(seed: int, shape: tuple[int, ...], margins: str, tmp: Path) -> tuple[Any, ...]:
    """A shuffled CSV table of small Poisson counts; its keys ``a``, ``b``, ``c``."""
    rng = np.random.default_rng(seed)
    names = ["a", "b", "c"][: len(shape)]
    grids = np.meshgrid(*[np.arange(s) for s in shape], indexing="ij")
    counts = rng.poisson(rng.uniform(2, 7), size=shape)
    cols = {n: [f"L{v:02d}" for v in g.ravel()] for n, g in zip(names, grids, strict=True)}
    df = pl.DataFrame({**cols, "n": counts.ravel()}).sample(fraction=1.0, shuffle=True, seed=seed)
    path = tmp / f"audit{seed}.csv"
    df.write_csv(path)
    return path, names, margins


@pytest.mark.parametrize(
    ("seed", "shape", "margins"),
    [
        (1, (9, 8), "a,b"),
        (2, (5, 4, 3), "a+b,c"),
        (3, (7, 6), "a,b,total"),
        (4, (4, 4, 4), "a,b,c"),
        (5, (30, 4, 4), "a+b,a+c"),  # one table per level of a: many components
    ],
)
def test_the_spark_audit_equals_the_in_memory_audit_of_the_primary_pattern(
    spark: Any, tmp_path: Path, seed: int, shape: tuple[int, ...], margins: str
) -> None:
    from persuasive.spark.margin_audit import audit_margins_spark

    path, names, m = _audit_case(seed, shape, margins, tmp_path)
    rel = release_table_with_margins(path, keys=names, count="n", h=3, receiver=RECEIVER, margins=m)
    got = audit_margins_spark(
        path, keys=names, count="n", h=3, receiver=RECEIVER, margins=m, spark=spark
    )
    rows = pl.from_arrow(got.cells.toArrow())
    assert isinstance(rows, pl.DataFrame)
    w, table = rel.primary_worst, rel.primary
    at = tuple(
        np.searchsorted(np.array(table.levels[k], dtype=object), rows[k].to_numpy()) for k in names
    )
    # every suppressed cell once, with its true count, and the in-memory values bit for bit
    assert got.n_suppressed == rows.height == int(table.suppressed.sum())
    assert bool(table.suppressed[at].all()) and rows["n"].to_list() == table.counts[at].tolist()
    for name in ("kappa_lower", "kappa_upper", "kappa_published", "disclosed"):
        np.testing.assert_array_equal(rows[name].to_numpy(), getattr(w, name)[at], strict=True)
    assert got.max_kappa_published == float(w.kappa_published.max())
    assert got.n_disclosed == int(w.disclosed.sum()) and got.n_cells == table.n_cells
    # the components found on Spark are the graph components of the in-memory constraints
    from persuasive.margins.constraints import _labels, full_incidence

    full, _ = full_incidence(table)
    cells = np.flatnonzero(table.suppressed.ravel())
    A = full[:, cells].tocsr()
    lab = _labels(A[np.asarray(A.sum(axis=1)).ravel() > 0].tocsr(), cells.size)
    ours = dict(zip(cells.tolist(), lab.tolist(), strict=True))
    flat = np.ravel_multi_index(at, table.shape)
    pairs = set(zip(rows["component"].to_list(), [ours[int(f)] for f in flat], strict=True))
    assert got.n_components == len(pairs) == int(lab.max()) + 1  # a bijection of labels
    if seed == 5:  # many components: audited by several tasks, not one after another
        assert got.n_components > 5 and got.cells.rdd.getNumPartitions() > 1


def test_the_spark_audit_refuses_what_it_cannot_audit(
    spark: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from persuasive.classes.receivers import SmallCellReceiver
    from persuasive.spark import margin_audit

    path, names, m = _audit_case(1, (9, 8), "a,b", tmp_path)
    kw: dict[str, Any] = {"keys": names, "count": "n", "h": 3, "spark": spark}
    with pytest.raises(ValidationError, match="kappa = inf once a margin is published"):
        margin_audit.audit_margins_spark(path, receiver=SmallCellReceiver(0.5), margins=m, **kw)
    with pytest.raises(ValidationError, match="margins: no margin given"):
        margin_audit.audit_margins_spark(path, receiver=RECEIVER, margins="", **kw)
    monkeypatch.setattr(margin_audit, "MAX_BOX_CELLS", 4)
    with pytest.raises(ValidationError, match=r"spans \d+ cells .* above MAX_BOX_CELLS = 4"):
        margin_audit.audit_margins_spark(path, receiver=RECEIVER, margins=m, **kw)
    bad = tmp_path / "dup.csv"
    bad.write_text("a,b,n\nx,y,1\nx,y,2\n", encoding="utf-8")
    with pytest.raises(ValidationError) as spark_err:
        margin_audit.audit_margins_spark(bad, receiver=RECEIVER, margins="a,b", **kw)
    with pytest.raises(ValidationError) as polars_err:
        release_table_with_margins(
            bad, keys=["a", "b"], count="n", h=3, receiver=RECEIVER, margins="a,b"
        )
    assert str(spark_err.value) == str(polars_err.value)
