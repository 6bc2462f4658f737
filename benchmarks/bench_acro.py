"""ACRO as a peer (issue 12): the same crosstabs of Fair's survey through ACRO and persuasive.

Not a test (no asserts; ``tests/test_acro.py`` checks the numbers of one table independently).
For each crosstab of the bundled survey (``persuasive.release.data.load_fair``) it runs

* **ACRO** (the SACRO output checker, ``acro.ACRO(suppress=True).crosstab(..., margins=True)``
  on the pandas frame, in a temporary working directory: ACRO writes its ``outputs/`` folder
  there only on ``finalise``, which is never called), reads its suppressed cells (NaN in the
  body of the returned table), its threshold (``safe_threshold``, 10 by default) and the totals
  it prints (the ``All`` row and column);
* the ACRO pattern through persuasive's engine (``MarginTable(..., suppressed=ACRO's mask)``,
  ``attacker_intervals``, ``worst_case_losses``) under two publications: (A) ACRO's output alone
  — its totals are recomputed from the records *left after* suppression, so they are sums of
  released cells and carry nothing about the hidden ones: Prop 8 — and (B) ACRO's pattern with
  the *exact* totals of the same margins (what a table with its margins publishes, and what other
  outputs give away: N, one-way tables; ACRO checks each output alone and only asks for "a
  manual review against other outputs for differencing");
* ACRO's own *linked* outputs: for each margin of the table, the crosstab of its variables by
  ``any_affair`` (affairs > 0); when ACRO releases it with nothing suppressed, its ``All``
  column is the exact margin, so (L) is ACRO's pattern with the margins ACRO itself publishes
  elsewhere;
* persuasive's release (``release_table_with_margins``) with h = ACRO's threshold, the
  Receiver ``NegativeBinomialReceiver(1, 40, 1)`` (mean 1 to 40, size 1) and target κ = 4.5 as
  in ``docs/margins_release.md``: the pattern its planner certifies instead.

Before anything is compared, ACRO's unsuppressed counts are checked to equal
``load_fair_crosstab``'s and its mask to equal ``counts < threshold`` (plus zeros, which ACRO
counts as disclosive; they are below the threshold anyway). ACRO 1.0.2 does **not** suppress
anything when the categories are integer-coded (its redaction query compares the integers with
the string-converted data and matches no record, while the output is recorded as "Suppression
automatically applied where needed"); the dimensions are therefore passed to ACRO as strings,
and the integer-coded run is measured beside ("ACRO int").

    python benchmarks/bench_acro.py [--target 4.5] [--tables religious*occupation,...]
"""

from __future__ import annotations

import argparse
import contextlib
import logging
import os
import subprocess
import tempfile
import time
import warnings
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from importlib.metadata import version
from pathlib import Path
from typing import Any

import numpy as np

from persuasive.classes.receivers import NegativeBinomialReceiver
from persuasive.margins import MarginTable, attacker_intervals, surprise, worst_case_losses
from persuasive.release.data import load_fair, load_fair_crosstab
from persuasive.release.margins import release_table_with_margins

#: The crosstabs: (index variables, column variables) of ``acro.crosstab``.
TABLES: tuple[tuple[tuple[str, ...], tuple[str, ...]], ...] = (
    (("religious",), ("occupation",)),
    (("rate_marriage",), ("occupation",)),
    (("religious",), ("rate_marriage",)),
    (("occupation",), ("occupation_husb",)),
    (("educ",), ("occupation",)),
    (("religious", "occupation"), ("children",)),
)
#: The Receiver model and target of docs/margins_release.md.
RECEIVER = NegativeBinomialReceiver(1, 40, 1)
TARGET = 4.5
#: The binary variable of the linked outputs (``affairs > 0``).
LINK = "any_affair"


def name_of(index: Sequence[str], columns: Sequence[str]) -> str:
    return "*".join([*index, *columns])


@contextlib.contextmanager
def _quiet_in_tmp() -> Iterator[None]:
    """Run ACRO in a temporary working directory, its INFO logging and pandas warnings off."""
    disabled = logging.root.manager.disable
    logging.disable(logging.INFO)
    old = Path.cwd()
    with tempfile.TemporaryDirectory(prefix="acro-") as tmp, warnings.catch_warnings():
        warnings.simplefilter("ignore")
        os.chdir(tmp)
        try:
            yield
        finally:
            os.chdir(old)
            logging.disable(disabled)


def fair_frame(labels: str = "str") -> Any:
    """The survey as a pandas frame; coded dimensions as strings (``"str"``) or as they are."""
    df = load_fair().to_pandas()
    df[LINK] = np.where(df["affairs"] > 0, "yes", "no")
    if labels == "str":
        for col in df.columns:
            if col not in ("affairs", LINK):
                df[col] = df[col].map(_label)
    return df


def _label(value: Any) -> str:
    """A category code as ACRO is given it: ``"3"``, ``"5.5"``; other labels unchanged."""
    if isinstance(value, str):
        return value
    return str(int(value)) if float(value).is_integer() else str(value)


def _levels(dim: str) -> list[str]:
    """ACRO's labels of ``dim`` in the numeric order ``load_fair_crosstab`` sorts by."""
    if dim == LINK:
        return ["no", "yes"]
    values = sorted(load_fair()[dim].unique().to_list())
    return [_label(v) for v in values]


@dataclass
class AcroTable:
    """One ACRO crosstab read back as arrays over ``index + columns`` (C order)."""

    index: tuple[str, ...]
    columns: tuple[str, ...]
    threshold: int
    zeros_disclosive: bool
    published: np.ndarray  # float, NaN where suppressed
    counts: np.ndarray  # ACRO's own counts without mitigation
    flagged: np.ndarray  # cells ACRO's checks flag (outcome != "ok")
    totals: dict[str, np.ndarray] = field(default_factory=dict)  # printed margins, NaN -> 0
    status: str = ""

    @property
    def dims(self) -> tuple[str, ...]:
        return (*self.index, *self.columns)

    @property
    def mask(self) -> np.ndarray:
        return np.isnan(self.published)

    @property
    def margins(self) -> str:
        """The printed margins as persuasive names them: the ``All`` column, the ``All`` row."""
        return ",".join(["+".join(self.index), "+".join(self.columns)])


def _body(table: Any, index: Sequence[str], columns: Sequence[str]) -> np.ndarray:
    import pandas as pd

    rows = (
        pd.MultiIndex.from_product([_levels(d) for d in index], names=list(index))
        if len(index) > 1
        else pd.Index(_levels(index[0]), name=index[0])
    )
    (col,) = columns
    cols = pd.Index(_levels(col), name=col)
    body = table.reindex(index=rows, columns=cols).to_numpy(dtype=np.float64)
    return body.reshape([len(_levels(d)) for d in (*index, *columns)])


def _margin_all(table: Any, index: Sequence[str], columns: Sequence[str]) -> dict[str, np.ndarray]:
    """ACRO's ``All`` column (margin keeping the index) and ``All`` row (keeping the columns)."""
    import pandas as pd

    rows = (
        pd.MultiIndex.from_product([_levels(d) for d in index], names=list(index))
        if len(index) > 1
        else pd.Index(_levels(index[0]), name=index[0])
    )
    all_row = ("All",) + ("",) * (len(index) - 1) if len(index) > 1 else "All"
    (col,) = columns
    col_total = table["All"].reindex(rows).to_numpy(dtype=np.float64)
    row_total = table.loc[all_row].reindex(_levels(col)).to_numpy(dtype=np.float64)
    return {
        "+".join(index): np.nan_to_num(col_total).reshape([len(_levels(d)) for d in index]),
        "+".join(columns): np.nan_to_num(row_total),
    }


def run_acro(index: Sequence[str], columns: Sequence[str], *, labels: str = "str") -> AcroTable:
    """``ACRO(suppress=True).crosstab(index, columns, margins=True)`` and its unmitigated run."""
    import acro

    df = fair_frame(labels)
    with _quiet_in_tmp():
        session = acro.ACRO(suppress=True)
        idx = [df[d] for d in index] if len(index) > 1 else df[index[0]]
        col = df[columns[0]]
        table = session.crosstab(idx, col, margins=True)
        (record,) = session.results.results.values()
        raw = acro.ACRO(suppress=False).crosstab(idx, col, margins=True)
    if labels != "str":  # integer labels: index and columns back to ACRO's string labels
        table = table.rename(index=_label, columns=_label)
        raw = raw.rename(index=_label, columns=_label)
        outcome = record.outcome.rename(index=_label, columns=_label)
    else:
        outcome = record.outcome
    flagged = _body((outcome != "ok").astype(float), index, columns) > 0
    appetite = session.sdc_checks.risk_appetite
    return AcroTable(
        index=tuple(index),
        columns=tuple(columns),
        threshold=int(appetite["safe_threshold"]),
        zeros_disclosive=bool(appetite["zeros_are_disclosive"]),
        published=_body(table, index, columns),
        counts=_body(raw, index, columns).astype(np.int64),
        flagged=flagged,
        totals=_margin_all(table, index, columns),
        status=str(record.status),
    )


def linked_margins(index: Sequence[str], columns: Sequence[str]) -> dict[str, np.ndarray]:
    """Margins ACRO publishes *exactly* in other outputs: ``crosstab(G, any_affair)`` per margin
    G, kept when ACRO suppresses nothing in it (then its ``All`` column is the exact margin)."""
    out: dict[str, np.ndarray] = {}
    for group in (tuple(index), tuple(columns)):
        t = run_acro(group, (LINK,))
        if not t.mask.any():
            out["+".join(group)] = t.totals["+".join(group)]
    return out


@dataclass
class Audit:
    """Persuasive's audit of a suppression pattern under one publication.

    ``above_*`` and ``kappa_*`` count only what is proven: cells of components the exact DP
    computed (certified), and cells the LP attacker pins down (their κ is B(x_i) whatever the
    component: posterior mass 1). Other cells of larger components are counted in
    ``uncertified``, and ``estimate_above`` says how many the Markov chain *estimates* above.
    """

    suppressed: int
    exposed: int  # LP attacker interval of width 0
    disclosed: int  # posterior mass 1 on the true value (exact components)
    above_table: int  # kappa at the true table > target
    above_published: int  # kappa over every table consistent with the publication > target
    kappa_max: float  # largest kappa at the table
    kappa_published_max: float
    uncertified: int  # cells of components too large for the exact DP
    estimate_above: int  # of those, the chain's estimate above the target


def audit(table: MarginTable, target: float) -> Audit:
    w = worst_case_losses(table, RECEIVER)
    a = attacker_intervals(table)
    sup = table.suppressed
    pinned = np.zeros(table.shape, dtype=bool)
    pinned.ravel()[a.cells[a.exposed]] = True
    b_x = surprise(RECEIVER, table.counts)[0]
    small = table.counts < table.h
    kappa = np.where(w.certified, w.kappa_upper, np.where(pinned & small, b_x, 0.0))
    # kappa_published of a pinned cell: its value is known to every reader, so it is B(x_i)
    published = np.where(w.certified, w.kappa_published, kappa)
    ok = sup & (w.certified | pinned)
    unc = sup & ~ok
    return Audit(
        suppressed=int(sup.sum()),
        exposed=int(pinned.sum()),
        disclosed=int((w.disclosed | pinned)[ok].sum()),
        above_table=int((kappa[ok] > target).sum()),
        above_published=int((published[ok] > target).sum()),
        kappa_max=float(kappa[ok].max(initial=0.0)),
        kappa_published_max=float(published[ok].max(initial=0.0)),
        uncertified=int(unc.sum()),
        estimate_above=int((w.estimate[unc] > target).sum()),
    )


@dataclass
class Row:
    name: str
    cells: int
    acro: AcroTable
    acro_int_suppressed: int
    same_counts: bool
    mask_is_threshold: bool
    totals_are_released_sums: bool
    alone: Audit  # (A) ACRO's output alone
    grand: Audit  # (N) with the number of respondents (6366, public)
    exact: Audit  # (B) ACRO's pattern with the exact totals
    linked: Audit | None  # (L) with the margins ACRO's own linked outputs publish
    linked_names: tuple[str, ...]
    ours: Any  # MarginRelease
    ours_error: str
    ours_seconds: float


def compare(index: Sequence[str], columns: Sequence[str], target: float = TARGET) -> Row:
    """Every number of one table (see the module docstring)."""
    at = run_acro(index, columns)
    at_int = run_acro(index, columns, labels="int")
    dims = at.dims
    frame = load_fair_crosstab(*dims)
    ours_counts = MarginTable.from_frame(frame, keys=list(dims), count="n", h=1).counts
    h = at.threshold
    threshold_mask = (at.counts < h) | (at.zeros_disclosive & (at.counts == 0))
    released = np.where(at.mask, 0, at.counts)
    base = MarginTable(at.counts, h=h, dims=dims, margins=at.margins, suppressed=at.mask)
    sums_ok = all(
        np.array_equal(at.totals[name], released.sum(axis=_drop(base, m)))
        for name, m in zip(base.margin_names(), base.margins, strict=True)
    )
    alone = audit(MarginTable(at.counts, h=h, dims=dims, suppressed=at.mask), target)
    grand = audit(
        MarginTable(at.counts, h=h, dims=dims, margins="total", suppressed=at.mask), target
    )
    exact = audit(base, target)
    links = linked_margins(index, columns)
    linked = (
        audit(
            MarginTable(
                at.counts, h=h, dims=dims, margins=",".join(links), suppressed=at.mask, totals=links
            ),
            target,
        )
        if links
        else None
    )
    t0 = time.perf_counter()
    ours, err = None, ""
    try:
        ours = release_table_with_margins(
            frame,
            keys=list(dims),
            count="n",
            h=h,
            receiver=RECEIVER,
            margins=at.margins,
            target_kappa=target,
        )
    except Exception as exc:  # a refusal is a result here
        err = f"{type(exc).__name__}: {exc}"
    return Row(
        name=name_of(index, columns),
        cells=int(at.counts.size),
        acro=at,
        acro_int_suppressed=int(at_int.mask.sum()),
        same_counts=bool(np.array_equal(at.counts, ours_counts)),
        mask_is_threshold=bool(np.array_equal(at.mask, threshold_mask)),
        totals_are_released_sums=sums_ok,
        alone=alone,
        grand=grand,
        exact=exact,
        linked=linked,
        linked_names=tuple(links),
        ours=ours,
        ours_error=err,
        ours_seconds=time.perf_counter() - t0,
    )


def _drop(table: MarginTable, margin: tuple[int, ...]) -> tuple[int, ...]:
    return tuple(a for a in range(len(table.dims)) if a not in margin)


def _cells(rel: Any) -> str:
    sec = np.argwhere(rel.table.secondary)
    labels = [tuple(rel.levels[k][i] for k, i in zip(rel.keys, c, strict=True)) for c in sec]
    return " ".join("(" + ",".join(_label(x) for x in lab) + ")" for lab in labels)


def _audit_text(a: Audit | None) -> str:
    if a is None:
        return "          -"
    cert = (
        f"; {a.uncertified} in components too large for the exact DP, chain estimate "
        f"{a.estimate_above} above κ"
        if a.uncertified
        else ""
    )
    return (
        f"exposed {a.exposed:2d} disclosed {a.disclosed:2d} above κ {a.above_table:2d} "
        f"(published {a.above_published:2d}) κ max {a.kappa_max:5.2f} "
        f"(published {a.kappa_published_max:5.2f}){cert}"
    )


def report(rows: Sequence[Row], target: float) -> str:
    lines = [
        f"ACRO {version('acro')} (suppress=True, threshold {rows[0].acro.threshold}, zeros "
        f"disclosive: {rows[0].acro.zeros_disclosive}); persuasive h = the threshold, Receiver "
        f"{RECEIVER.describe()}, target κ = {target:g}",
        "",
    ]
    for r in rows:
        a = r.acro
        checks = (
            f"counts = load_fair_crosstab: {r.same_counts}; mask = counts < {a.threshold}: "
            f"{r.mask_is_threshold}; ACRO's totals = sums of released cells: "
            f"{r.totals_are_released_sums}"
        )
        lines += [
            f"{r.name}  ({r.cells} cells, margins {a.margins}; ACRO status {a.status})",
            f"  {checks}",
            f"  ACRO suppresses {int(a.mask.sum())} cells (flags {int(a.flagged.sum())}); with "
            f"integer-coded categories it suppresses {r.acro_int_suppressed}",
            f"  (A) ACRO alone        : {_audit_text(r.alone)}",
            f"  (N) with N = {int(a.counts.sum())}    : {_audit_text(r.grand)}",
            f"  (B) with exact totals : {_audit_text(r.exact)}",
            f"  (L) ACRO linked ({','.join(r.linked_names) or 'none released'}): "
            f"{_audit_text(r.linked)}",
        ]
        if r.ours is None:
            lines.append(f"  persuasive: refused ({r.ours_error[:200]}) in {r.ours_seconds:.1f} s")
        else:
            p, rel = r.ours.plan, r.ours
            sup = rel.table.suppressed
            lines.append(
                f"  persuasive: {p.n_secondary} secondary (lower bound {p.lower_bound:g}) "
                f"[{_cells(rel)}]; κ published max {rel.worst.kappa_published[sup].max():.2f}, "
                f"at the table {rel.worst.kappa_upper[sup].max():.2f}; exposed "
                f"{int(rel.intervals.exposed.sum())}; certified {p.certified}; release ok "
                f"{rel.ok}; {r.ours_seconds:.1f} s"
            )
        lines.append("")
    return "\n".join(lines)


def _commit() -> str:
    try:
        out = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"],
            capture_output=True,
            text=True,
            cwd=Path(__file__).parent,
            check=False,
        )
        return out.stdout.strip() or "unknown"
    except OSError:
        return "unknown"


def main(argv: Sequence[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--target", type=float, default=TARGET, help="target κ (default 4.5)")
    ap.add_argument(
        "--tables",
        default="",
        help="comma-separated names such as religious*occupation (default: all)",
    )
    args = ap.parse_args(argv)
    wanted = {s.strip() for s in args.tables.split(",") if s.strip()}
    chosen = [t for t in TABLES if not wanted or name_of(*t) in wanted]
    print(f"persuasive at commit {_commit()}")
    rows = [compare(i, c, args.target) for i, c in chosen]
    print(report(rows, args.target))


if __name__ == "__main__":
    main()
