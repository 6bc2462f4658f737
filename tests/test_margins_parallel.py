"""The pieces of a release with margins give the same results wherever they run.

:mod:`persuasive.margins.parallel` hands each exact component's posterior DP, each component's
attacker LP and the planner's four greedy runs to a *mapper* when one is installed. The mapper
here stands in for Spark's executors: it pickles every ``(fn, item)``, unpickles it, runs it
with :func:`~persuasive.margins.parallel.capture` and pickles the result back, so anything
unpicklable, and any state shared between the pieces or with the driver (the planner's memo of
components, a mutated global), shows up as a difference. Every result computed under it is
compared field by field (arrays exactly, NaN equal to NaN) with the result of the loop in one
process, and the mapper's record of its calls shows that it really ran the pieces.
"""

from __future__ import annotations

import contextlib
import dataclasses
import math
import pickle
import re
import types
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
import pytest

import persuasive as pp
from persuasive.classes.receivers import PoissonReceiver
from persuasive.errors import UnsupportedCombinationError
from persuasive.margins import (
    InfeasiblePlanError,
    MarginTable,
    attacker_intervals,
    parallel,
    plan_suppression,
    posterior_marginals,
    worst_case_losses,
)
from persuasive.margins.known import NO_UPPER
from persuasive.margins.parallel import capture, map_tasks

try:  # what Spark ships a task with, when available
    import cloudpickle as _pickler
except ImportError:  # pragma: no cover - depends on the environment
    _pickler = pickle


class PicklingMapper:
    """Runs each piece on a pickled copy of ``(fn, item)`` and returns a pickled copy of
    ``capture(fn, item)``, in item order; records ``(fn name, number of items)`` per call and
    the unpickled outcomes."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, int]] = []
        self.outcomes: list[tuple[str, list[tuple[bool, Any]]]] = []

    def __call__(self, fn: Callable[[Any], Any], items: list[Any]) -> list[tuple[bool, Any]]:
        name = getattr(fn, "__name__", repr(fn))
        self.calls.append((name, len(items)))
        out = []
        for item in items:
            f, x = pickle.loads(_pickler.dumps((fn, item), protocol=pickle.HIGHEST_PROTOCOL))
            got = capture(f, x)
            out.append(pickle.loads(_pickler.dumps(got, protocol=pickle.HIGHEST_PROTOCOL)))
        self.outcomes.append((name, out))
        return out

    def sizes(self, name: str) -> list[int]:
        return [n for f, n in self.calls if f == name]


def assert_same(a: Any, b: Any, path: str = "result") -> None:
    """``a`` and ``b`` equal field by field: dataclasses recursively, arrays exactly (dtype,
    shape, NaN equal to NaN), floats exactly (NaN equal to NaN)."""
    assert type(a) is type(b), (path, type(a), type(b))
    if dataclasses.is_dataclass(a):
        for f in dataclasses.fields(a):
            assert_same(getattr(a, f.name), getattr(b, f.name), f"{path}.{f.name}")
    elif isinstance(a, np.ndarray):
        np.testing.assert_array_equal(a, b, err_msg=path, strict=True)
    elif isinstance(a, dict):
        assert list(a) == list(b), path
        for k in a:
            assert_same(a[k], b[k], f"{path}[{k!r}]")
    elif isinstance(a, (list, tuple)):
        assert len(a) == len(b), path
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            assert_same(x, y, f"{path}[{i}]")
    elif isinstance(a, (float, np.floating)):
        assert a == b or (math.isnan(a) and math.isnan(b)), (path, a, b)
    else:
        assert a == b, (path, a, b)


def both(fn: Callable[[], Any]) -> tuple[Any, Any, PicklingMapper]:
    """``fn()`` in one process, and under a fresh pickling mapper."""
    plain = fn()
    mapper = PicklingMapper()
    with parallel.using(mapper):
        assert parallel.active()
        mapped = fn()
    assert not parallel.active()
    return plain, mapped, mapper


def outcome(fn: Callable[[], Any]) -> tuple[str, Any]:
    """``("ok", fn())`` or ``("error", (type, message))`` of the exception it raised."""
    try:
        return "ok", fn()
    except Exception as exc:  # compared both ways
        return "error", (type(exc), str(exc))


# ------------------------------------------------------------------ the tables


def _bounds(rng: np.random.Generator, x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """A-priori bounds holding for ``x`` on about half the cells (never pinning a cell)."""
    lower = np.zeros(x.shape, dtype=np.int64)
    upper = np.full(x.shape, NO_UPPER, dtype=np.int64)
    boxed = rng.random(x.shape) < 0.5
    lower[boxed] = np.maximum(0, x[boxed] - rng.integers(0, 2, size=int(boxed.sum())))
    upper[boxed] = x[boxed] + rng.integers(1, 3, size=int(boxed.sum()))
    return lower, upper


def _table(seed: int, shape: tuple[int, ...], margins: str, apriori: bool) -> MarginTable:
    rng = np.random.default_rng(seed)
    x = rng.poisson(rng.uniform(2.5, 5.0), size=shape)
    if apriori:
        lower, upper = _bounds(rng, x)
        return MarginTable(x, h=3, margins=margins, lower=lower, upper=upper)
    return MarginTable(x, h=3, margins=margins)


#: (seed, shape, margins): 2-D and 3-D tables of small counts, each with and without a-priori
#: bounds, and with max_states large (every component exact) and tiny (some need MCMC).
TABLES = [
    (0, (5, 6), "rows,cols"),
    (1, (5, 6), "rows,cols,total"),
    (2, (6, 7), "rows,cols"),
    (3, (3, 4, 3), "0+1,2"),
    (4, (3, 4, 3), "0+1,0+2,1+2"),
    (5, (3, 4, 3), "0,1,2,total"),
    (6, (5, 6), "rows,cols"),
    (7, (5, 6), "rows,cols,total"),
    (8, (6, 7), "rows,cols"),
    (9, (3, 4, 3), "0+1,2"),
    (10, (3, 4, 3), "0+1,0+2,1+2"),
]
CASES = [
    (seed, shape, margins, apriori, max_states)
    for seed, shape, margins in TABLES
    for apriori in (False, True)
    for max_states in (100_000, 3)
]


def _prior(t: MarginTable, seed: int) -> pp.IndependentCellsPrior:
    rng = np.random.default_rng(1000 + seed)
    return pp.IndependentCellsPrior(list(rng.dirichlet(np.ones(16), size=t.n_cells)))


@pytest.fixture(scope="module")
def audits() -> list[dict[str, Any]]:
    """Each case's posterior, worst-case losses and attacker intervals, both ways."""
    out = []
    for seed, shape, margins, apriori, max_states in CASES:
        t = _table(seed, shape, margins, apriori)
        q = _prior(t, seed)
        rec = PoissonReceiver(1.0, 20.0)
        got: dict[str, Any] = {"table": t}
        for name, fn in (
            ("posterior", partial(posterior_marginals, t, q, max_states=max_states, rng=seed)),
            ("worst", partial(worst_case_losses, t, rec, max_states=max_states, kappa=6.0)),
            ("attack", partial(attacker_intervals, t)),
        ):
            got[name] = both(fn)
        out.append(got)
    return out


def test_audits_are_identical_under_the_mapper(audits: list[dict[str, Any]]) -> None:
    for case, got in zip(CASES, audits, strict=True):
        for name in ("posterior", "worst", "attack"):
            plain, mapped, _ = got[name]
            assert_same(plain, mapped, f"{case} {name}")


def test_the_mapper_runs_every_exact_component(audits: list[dict[str, Any]]) -> None:
    """The mapper gets one item per exact component (per component with constraints for
    the LP), whenever there are two or more; never one item."""
    mixed = several = 0
    for case, got in zip(CASES, audits, strict=True):
        post, _, mp = got["posterior"]
        n_exact = sum(m == "exact-dp" for m in post.methods)
        assert mp.sizes("_component_dp") == ([n_exact] if n_exact > 1 else []), case
        assert set(post.methods) <= {"exact-dp", "mcmc"}
        mixed += n_exact > 1 and "mcmc" in post.methods
        several += n_exact > 1
        _, _, mp = got["worst"]
        assert all(n > 1 for _, n in mp.calls), case
        if n_exact > 1:
            assert mp.sizes("_component_dp"), case
        _, _, mp = got["attack"]
        n_comp = len(set(post.component.tolist()))
        assert mp.sizes("_bounds_of") == ([n_comp] if n_comp > 1 else []), case
    # the cases cover what they are there for
    assert several >= len(CASES) // 2
    assert mixed >= 3


def test_a_priori_bounds_are_used(audits: list[dict[str, Any]]) -> None:
    """The bounded cases do change the posterior (else the bounds tested nothing)."""
    changed = 0
    for case, got in zip(CASES, audits, strict=True):
        seed, shape, margins, apriori, max_states = case
        if not apriori or max_states < 100_000:
            continue
        assert got["table"].has_apriori, case
        t = _table(seed, shape, margins, False)
        bare = posterior_marginals(t, _prior(t, seed), max_states=max_states)
        boxed = got["posterior"][0]
        changed += bare.log_pmf.shape != boxed.log_pmf.shape or not np.array_equal(
            bare.log_pmf, boxed.log_pmf
        )
    assert changed >= len(TABLES) // 2


# ------------------------------------------------------------------ errors in item order


def _reciprocal(x: int) -> float:
    if x == 0:
        raise ZeroDivisionError("item 0")
    if x < 0:
        raise ValueError(f"item {x}")
    return 1.0 / x


def test_map_tasks_raises_the_first_failure_in_item_order() -> None:
    mp = PicklingMapper()
    with parallel.using(mp):
        with pytest.raises(ValueError, match=r"^item -2$"):
            map_tasks(_reciprocal, [4, -2, 0, -3])
        with pytest.raises(ZeroDivisionError, match=r"^item 0$"):
            map_tasks(_reciprocal, [1, 0, -1])
        assert map_tasks(_reciprocal, [4, 2, 5]) == [0.25, 0.5, 0.2]
    # every item ran on the "executors", the later failures too
    assert mp.calls == [("_reciprocal", 4), ("_reciprocal", 3), ("_reciprocal", 3)]
    oks = [[ok for ok, _ in out] for _, out in mp.outcomes]
    assert oks == [[True, False, False, False], [True, False, False], [True, True, True]]
    # the same as the loop in one process
    with pytest.raises(ValueError, match=r"^item -2$"):
        map_tasks(_reciprocal, [4, -2, 0, -3])


def test_map_tasks_runs_zero_or_one_item_here() -> None:
    mp = PicklingMapper()
    here: list[int] = []

    def local(x: int) -> int:  # unpicklable: it must never reach the mapper
        here.append(x)
        return -x

    with parallel.using(mp):
        assert map_tasks(local, []) == []
        assert map_tasks(local, [3]) == [-3]
        assert map_tasks(local, (7,)) == [-7]
        with pytest.raises(ZeroDivisionError, match="item 0"):
            map_tasks(_reciprocal, [0])
        with parallel.using(None):  # a mapper can be switched off inside
            assert not parallel.active()
            assert map_tasks(local, [1, 2]) == [-1, -2]
        assert parallel.active()
    assert mp.calls == []
    assert here == [3, 7, 1, 2]
    with pytest.raises((pickle.PicklingError, AttributeError)), parallel.using(mp):
        map_tasks(local, [1, 2])  # and the mapper does catch what would not ship


def test_exact_method_raises_the_same_error(audits: list[dict[str, Any]]) -> None:
    """method="exact" with a component too large: the same error either way, and only the
    exact components before it are handed out."""
    seen = 0
    for case, got in zip(CASES, audits, strict=True):
        auto = got["posterior"][0]
        if "mcmc" not in auto.methods:
            continue
        t, q, max_states = got["table"], _prior(got["table"], case[0]), case[4]
        first = auto.methods.index("mcmc")
        exact = partial(posterior_marginals, t, q, method="exact", max_states=max_states)
        plain, mapped, mp = both(partial(outcome, exact))
        assert plain[0] == mapped[0] == "error", case
        assert plain[1] == mapped[1], case
        assert plain[1][0] is UnsupportedCombinationError, case
        assert plain[1][1].startswith(f"component {first} ("), plain[1][1]
        assert mp.sizes("_component_dp") == ([first] if first > 1 else []), case
        seen += first > 1
    assert seen >= 2


# ------------------------------------------------------------------ the planner


def _plan_table(seed: int, shape: tuple[int, ...], margins: str) -> MarginTable:
    """Random counts; a negative seed zeroes the first row (its total determines its cells)."""
    rng = np.random.default_rng(abs(seed))
    x = rng.poisson(rng.uniform(3.0, 8.0), size=shape)
    if seed < 0:
        x[0] = 0
    return MarginTable(x, h=3, margins=margins)


#: (seed, shape, margins, kappa, keyword arguments of plan_suppression)
PLANS: list[tuple[int, tuple[int, ...], str, float, dict[str, Any]]] = [
    (8, (3, 4), "rows,cols", 6.0, {"objective": "total"}),
    (16, (3, 4), "rows,cols", 6.0, {"bound": "publication"}),
    (24, (3, 4), "rows,cols", 6.0, {"objective": "total", "bound": "publication"}),
    (25, (4, 4), "rows,cols", 8.0, {"objective": "total", "bound": "publication"}),
    (26, (4, 5), "rows,cols", 6.0, {"objective": "total", "bound": "publication"}),
    (32, (3, 4), "rows,cols", 6.0, {}),
    (39, (2, 3, 3), "0+1,1+2", 7.0, {"bound": "table"}),
    (11, (2, 3, 3), "0+1,2", 7.0, {"objective": "total"}),
    (6, (4, 5), "rows,cols,total", 6.0, {}),
    (0, (3, 4), "rows,cols", 5.0, {}),
    (7, (2, 3, 3), "0+1,1+2", 5.0, {}),
    (-9, (3, 4), "rows,cols", 6.0, {}),  # a zero row total: proven infeasible
    (16, (3, 4), "rows,cols", 6.0, {"method": "auto"}),
    (32, (3, 4), "rows,cols", 6.0, {"max_states": 2}),
    (25, (4, 4), "rows,cols", 8.0, {"max_states": 2, "mcmc_audit": False}),
]


def _untimed(plan: Any) -> Any:
    """The plan with the program's wall time (``in 0.0624 s``, a note of method "mip")
    blanked: the one part of a plan that differs from one run to the next anyway."""
    notes = tuple(re.sub(r" in \d+(\.\d+)?(e-?\d+)? s\b", " in ... s", n) for n in plan.notes)
    return dataclasses.replace(plan, notes=notes)


@pytest.fixture(scope="module")
def plans() -> list[tuple[Any, Any, PicklingMapper]]:
    out = []
    for seed, shape, margins, kappa, kw in PLANS:
        t = _plan_table(seed, shape, margins)
        run = partial(plan_suppression, t, PoissonReceiver(1.0, 10.0), kappa, **kw)
        out.append(both(partial(outcome, run)))
    return out


def test_plans_are_identical_under_the_mapper(plans: list[tuple[Any, Any, PicklingMapper]]) -> None:
    for case, (plain, mapped, _) in zip(PLANS, plans, strict=True):
        assert plain[0] == mapped[0], (case, plain, mapped)
        if plain[0] == "error":
            assert plain[1] == mapped[1], case
            assert plain[1][0] is InfeasiblePlanError, case
            continue
        a, b = (_untimed(p[1]) for p in (plain, mapped))
        np.testing.assert_array_equal(a.pattern, b.pattern, strict=True)
        np.testing.assert_array_equal(a.secondary, b.secondary, strict=True)
        assert a.objective_value == b.objective_value, case
        assert a.certified == b.certified, case
        assert a.notes == b.notes, case
        np.testing.assert_array_equal(a.worst.kappa_published, b.worst.kappa_published)
        assert_same(a, b, f"{case} plan")


def test_the_planner_hands_out_its_four_runs(plans: list[tuple[Any, Any, PicklingMapper]]) -> None:
    from persuasive.margins.search import STRATEGIES

    kinds = set()
    for case, (plain, _, mp) in zip(PLANS, plans, strict=True):
        runs = [out for name, out in mp.outcomes if name == "_run"]
        if plain[0] == "error" and "(proven)" in plain[1][1]:
            assert runs == [], case  # refused before any search
            kinds.add("proven")
            continue
        if plain[0] == "ok" and plain[1].method == "mip" and plain[1].optimal:
            assert runs == [], case  # the program's proven optimum: no greedy run
            kinds.add("mip")
            continue
        assert len(runs) == 1 and len(runs[0]) == len(STRATEGIES), case
        assert all(ok for ok, _ in runs[0]), case  # a run's failure is its result
        failed = [isinstance(got, InfeasiblePlanError) for ok, (_, got) in runs[0]]
        kinds.add("all fail" if all(failed) else "some fail" if any(failed) else "none fail")
        if not any(met for ok, (met, _) in runs[0][:2]):  # the partner runs are skipped
            kinds.add("no exact")
        if plain[0] == "ok" and plain[1].n_secondary:
            kinds.add("secondary")
        if plain[0] == "ok" and not plain[1].certified:
            kinds.add("uncertified")
    want = {"proven", "mip", "all fail", "some fail", "none fail", "no exact", "secondary"}
    want.add("uncertified")
    assert want <= kinds, kinds


# ------------------------------------------------------------------ a whole release


def _folder_bytes(folder: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()
    }


def test_a_release_is_byte_identical(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from persuasive.release import margins as release_margins
    from persuasive.release.margins import release_table_with_margins

    rng = np.random.default_rng(2)
    x = rng.poisson(5.0, size=(6, 7))
    rows, cols = np.indices(x.shape)
    df = pl.DataFrame({"a": rows.ravel(), "b": cols.ravel(), "n": x.ravel()})
    kw: dict[str, Any] = dict(
        keys=["a", "b"], count="n", h=3, receiver=PoissonReceiver(1, 20), margins="rows,cols"
    )
    kw["target_kappa"] = 18.0

    plain = release_table_with_margins(df, **kw)
    plain.write(tmp_path / "a")
    assert plain.plan is not None and plain.plan.n_secondary > 0

    # the polars engine runs its pieces here (using(None) around its analysis) even under a
    # mapper installed by the caller
    ignored = PicklingMapper()
    with parallel.using(ignored):
        again = release_table_with_margins(df, **kw)
    assert ignored.calls == []
    again.write(tmp_path / "c")

    # let the mapper installed here through, as engine="spark" installs spark_mapper there
    shim = types.SimpleNamespace(
        using=lambda m: contextlib.nullcontext() if m is None else parallel.using(m)
    )
    monkeypatch.setattr(release_margins, "parallel", shim)
    mp = PicklingMapper()
    with parallel.using(mp):
        mapped = release_table_with_margins(df, **kw)
        names = {f for f, _ in mp.calls}
        assert {"_component_dp", "_bounds_of", "_run"} <= names, mp.calls
        n_calls = len(mp.calls)
        mapped.write(tmp_path / "b")  # the certificate's audit, and its check, there too
    assert len(mp.calls) > n_calls

    want = _folder_bytes(tmp_path / "a")
    assert "certificate.json" in want, list(want)
    for other in ("b", "c"):
        got = _folder_bytes(tmp_path / other)
        assert list(got) == list(want), other
        for name in want:
            assert got[name] == want[name], (other, name)
