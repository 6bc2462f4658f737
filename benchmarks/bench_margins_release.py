"""Releasing count tables with their margins at real size, end to end (issue 12). Not a test.

Every case goes through ``persuasive.release.margins.release_table_with_margins`` (primary
suppression below h, the planner at the target κ against κ published, the exact audit, the
attacker intervals, the verdict), and the numbers printed are read from the result:
``rel.verdict`` (``n_secondary``, ``lower_bound``, ``n_certified`` / ``n_suppressed``,
``kappa_published``, ``released``, ``reasons``).

How the tables are made (``make_counts``): ``rng = np.random.default_rng(2026)``;
``counts = rng.poisson(12, shape)``; ``small = rng.random(shape) < share``; the cells of
``small`` get ``rng.integers(0, h, shape)`` (values 0..h-1), every other cell
``max(count, h)`` so that exactly the ``small`` cells lie below h. h = 5, Receiver
``PoissonReceiver(1, 10)``, target κ = 6, objective ``count``, ``bound="publication"``.

* Flat tables ``D1xD2``: keys ``a`` (D1 levels) × ``b`` (D2 levels), margins ``rows,cols``.
* The hierarchy ``R>D>M x V``: R regions, D districts per region, M municipalities per district
  (R·D·M municipalities, labels unique across the country), crossed with a variable ``var`` of V
  levels; the counts are drawn as above over the (municipality, var) array of shape (R·D·M, V).
  Keys ``region, district, municipality, var``, ``hierarchy="region>district>municipality"``,
  and every subtotal is a published margin: ``municipality`` (over var), ``district+var``,
  ``district``, ``region+var``, ``region``, ``var``, ``total``. The default ``5>20>10x10`` has
  1000 municipalities and 10^4 cells; the API's table is the grid over the four keys' levels
  (5 × 100 × 1000 × 10 combinations, all but the 10^4 nesting ones structural zeros), which the
  incidence and the planner's search skip (``docs/margins_release.md``, "Hierarchies").

``method``: the release has no ``method`` parameter (it runs the planner's default, the greedy),
and ``method="auto"`` is the greedy on tables of more than ``optimal.AUTO_MAX_CELLS`` cells,
which every case here is. ``--auto`` also runs ``plan_suppression(rel.primary, ...,
method="auto", bound="publication")`` on the release's primary table, and says so where that is
the greedy again.

Each case runs in its own process (spawned) under ``--time-limit`` seconds; a case that exceeds
it is killed and printed as skipped. Times are wall clock of the release call and its verdict,
inside that process (imports and table generation excluded); the notes add its CPU time
(``time.process_time``: on a shared machine the wall clock also counts waiting) and its peak
resident memory (``resource.getrusage``, Linux: kilobytes).

    python benchmarks/bench_margins_release.py                  # 100x100, 1000x50, 5>20>10x10
    python benchmarks/bench_margins_release.py --quick          # 100x100 and 2>5>10x10 only
    python benchmarks/bench_margins_release.py --sizes 1000x50 --shares 0.05 --time-limit 900
    python benchmarks/bench_margins_release.py [--hierarchies 5>20>10x10] [--auto]
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import platform
import queue
import resource
import time
from typing import Any

import numpy as np

H = 5
KAPPA = 6.0
SEED = 2026
HIER_MARGINS = "municipality,district+var,district,region+var,region,var,total"


def make_counts(shape: tuple[int, int], share: float, h: int = H, seed: int = SEED) -> np.ndarray:
    """Poisson(12) counts; a ``share`` of the cells replaced by 0..h-1, the rest at least h."""
    rng = np.random.default_rng(seed)
    counts = rng.poisson(12.0, shape)
    small = rng.random(shape) < share
    return np.where(small, rng.integers(0, h, shape), np.maximum(counts, h))


def flat_case(d1: int, d2: int, share: float) -> dict[str, Any]:
    import polars as pl

    c = make_counts((d1, d2), share)
    a, b = np.indices((d1, d2))
    df = pl.DataFrame({"a": a.ravel(), "b": b.ravel(), "n": c.ravel()})
    return {"frame": df, "keys": ["a", "b"], "margins": "rows,cols", "hierarchy": None}


def hierarchy_case(r: int, d: int, m: int, v: int, share: float) -> dict[str, Any]:
    import polars as pl

    n_mun = r * d * m
    c = make_counts((n_mun, v), share)
    mun, var = (x.ravel() for x in np.indices((n_mun, v)))
    dist = mun // m
    df = pl.DataFrame(
        {"region": dist // d, "district": dist, "municipality": mun, "var": var, "n": c.ravel()}
    )
    return {
        "frame": df,
        "keys": ["region", "district", "municipality", "var"],
        "margins": HIER_MARGINS,
        "hierarchy": "region>district>municipality",
    }


def run_case(spec: tuple, auto: bool, out: Any) -> None:
    """In a child process: build the table, release it, send the verdict's numbers back."""
    from persuasive.classes.receivers import PoissonReceiver
    from persuasive.margins.optimal import AUTO_MAX_CELLS
    from persuasive.margins.planner import InfeasiblePlanError, plan_suppression
    from persuasive.release.margins import release_table_with_margins

    kind, dims, share = spec
    case = flat_case(*dims, share) if kind == "flat" else hierarchy_case(*dims, share)
    rc = PoissonReceiver(1.0, 10.0)
    res: dict[str, Any] = {"cells": case["frame"].height}
    t0, c0 = time.perf_counter(), time.process_time()
    try:
        rel = release_table_with_margins(
            case["frame"],
            keys=case["keys"],
            count="n",
            h=H,
            receiver=rc,
            margins=case["margins"],
            target_kappa=KAPPA,
            hierarchy=case["hierarchy"],
        )
        v = rel.verdict
        res["seconds"] = time.perf_counter() - t0
        res["cpu_seconds"] = time.process_time() - c0
        res["peak_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        res.update(
            grid=rel.table.n_cells,
            primary=v.n_primary,
            secondary=v.n_secondary,
            lower_bound=v.lower_bound,
            suppressed=v.n_suppressed,
            certified=v.n_certified,
            exact=v.n_exact,
            disclosed=v.n_disclosed,
            kappa_published=v.kappa_published,
            kappa_estimate=v.kappa_estimate,
            released=v.released,
            outcome="certified" if v.released and v.holds else "refused",
            reasons=list(v.reasons),
        )
        if auto:
            if rel.primary.n_cells > AUTO_MAX_CELLS:
                res["auto"] = (
                    f"auto = greedy here ({rel.primary.n_cells} cells > AUTO_MAX_CELLS = "
                    f"{AUTO_MAX_CELLS}); not run again"
                )
            else:
                t1 = time.perf_counter()
                try:
                    p = plan_suppression(rel.primary, rc, KAPPA, method="auto", bound="publication")
                    res["auto"] = (
                        f"auto: {p.n_secondary} secondary, lower bound {p.lower_bound:g}, "
                        f"certified {p.certified}, optimal {p.optimal}, "
                        f"{time.perf_counter() - t1:.1f} s"
                    )
                except InfeasiblePlanError as exc:
                    res["auto"] = (
                        f"auto: refused ({str(exc)[:100]}), {time.perf_counter() - t1:.1f} s"
                    )
    except Exception as exc:  # a refusal before any pattern, or a failure: report it
        res["seconds"] = time.perf_counter() - t0
        res.update(outcome=f"error: {type(exc).__name__}", reasons=[str(exc)])
    out.put(res)


def label(spec: tuple) -> str:
    kind, dims, share = spec
    name = "x".join(map(str, dims)) if kind == "flat" else "{}>{}>{}x{}".format(*dims)
    return f"{name:<12} {share:>4.0%}"


def fmt(x: Any, spec: str = "g") -> str:
    return "-" if x is None else format(x, spec)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="100x100,1000x50", help="flat tables D1xD2 ('' for none)")
    ap.add_argument(
        "--hierarchies",
        default="5>20>10x10",
        help="R>D>MxV: regions, districts per region, municipalities per district, x levels "
        "('' for none)",
    )
    ap.add_argument("--shares", default="0.01,0.05", help="shares of small cells")
    ap.add_argument("--time-limit", type=float, default=120.0, help="seconds per case")
    ap.add_argument("--auto", action="store_true", help="also plan with method='auto'")
    ap.add_argument(
        "--quick", action="store_true", help="100x100 and the hierarchy 2>5>10x10 (1000 cells)"
    )
    args = ap.parse_args()
    if args.quick:
        args.sizes, args.hierarchies = "100x100", "2>5>10x10"
    shares = [float(s) for s in args.shares.split(",")]
    specs: list[tuple] = []
    for size in filter(None, args.sizes.split(",")):
        specs += [("flat", tuple(int(s) for s in size.split("x")), sh) for sh in shares]
    for hs in filter(None, args.hierarchies.split(",")):
        rdm, vv = hs.split("x")
        dims = (*(int(s) for s in rdm.split(">")), int(vv))
        specs += [("hier", dims, sh) for sh in shares]
    print(
        f"h = {H}, PoissonReceiver(1, 10), target kappa = {KAPPA:g}, seed {SEED}, time limit "
        f"{args.time_limit:g} s per case; {platform.machine()}, {mp.cpu_count()} cores",
        flush=True,
    )
    head = (
        f"{'table':<12} {'small':>5} {'cells':>6} {'time s':>7} {'primary':>7} {'second.':>7} "
        f"{'l.bound':>7} {'certified':>15} {'kappa pub.':>10}  outcome"
    )
    print(head + "\n" + "-" * len(head), flush=True)
    notes: list[str] = []
    ctx = mp.get_context("spawn")
    for spec in specs:
        q = ctx.Queue()
        p = ctx.Process(target=run_case, args=(spec, args.auto, q))
        t0 = time.perf_counter()
        p.start()
        res = None
        try:
            res = q.get(timeout=args.time_limit + 30.0)  # + start-up and table generation
        except queue.Empty:
            pass
        if res is None or res.get("seconds", 0.0) > args.time_limit:
            p.kill()
            p.join()
            print(
                f"{label(spec)}  skipped: over the time limit of {args.time_limit:g} s "
                f"(killed after {time.perf_counter() - t0:.0f} s)",
                flush=True,
            )
            continue
        p.join()
        if "secondary" not in res:
            print(f"{label(spec)} {res['cells']:>6} {res['seconds']:>7.1f}  {res['outcome']}")
            notes.append(f"{label(spec)}: {res['reasons'][0]}")
            continue
        cert = f"{res['certified']}/{res['suppressed']} {res['certified'] / res['suppressed']:.0%}"
        print(
            f"{label(spec)} {res['cells']:>6} {res['seconds']:>7.1f} {res['primary']:>7} "
            f"{res['secondary']:>7} {fmt(res['lower_bound']):>7} {cert:>15} "
            f"{res['kappa_published']:>10.3f}  {res['outcome']}",
            flush=True,
        )
        extra = (
            f"{res['exact']} cells computed exactly, {res['disclosed']} disclosed, chain estimate "
            f"{fmt(res['kappa_estimate'], '.3f')}; grid {res['grid']} cells; CPU "
            f"{res['cpu_seconds']:.1f} s; peak {res['peak_mb']:.0f} MB"
        )
        why = "; ".join(res["reasons"]) if res["outcome"] == "refused" else "certified"
        notes.append(f"{label(spec)}: {extra}. {why}")
        if "auto" in res:
            notes.append(f"{label(spec)}: {res['auto']}")
    if notes:
        print("\n" + "\n".join(notes))


if __name__ == "__main__":
    main()
