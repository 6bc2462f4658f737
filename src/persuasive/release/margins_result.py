"""The result of a release with margins: :class:`MarginRelease` (published tables, claim, files).

Split from :mod:`persuasive.release.margins` (the release itself, which re-exports it); its
outcome and counts come from :mod:`persuasive.release.margins_verdict`, its custodian's files
from :mod:`persuasive.release.margins_output`.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
import polars as pl
from numpy.typing import NDArray

from persuasive.classes.receivers import Receiver
from persuasive.errors import ValidationError
from persuasive.margins import AttackIntervals, MarginTable, WorstCaseLosses
from persuasive.release import display

__all__ = ["MarginRelease"]


@dataclass(frozen=True, eq=False, repr=False)
class MarginRelease(display.ReleaseResult):
    """A count table released with exact margins, its pattern, audit and comparison.

    ``rel.published`` and ``rel.published_margins`` are the published tables (polars
    DataFrames); ``rel.write(folder)`` writes the release folder (both tables,
    ``certificate.json``, the custodian's files, optionally the report).

    Attributes
    ----------
    table, primary : MarginTable
        The final pattern (primary and secondary) and the primary pattern alone.
    worst, primary_worst : WorstCaseLosses
        The exact audit of the final and of the primary pattern.
    intervals : AttackIntervals
        The attacker's LP intervals of the final pattern.
    plan : SuppressionPlan or None
        The planner's result (None without a target).
    comparison : Comparison or None
        The classical rule and the planner at the target (None without a target).
    classical, classical_worst
        The classical partner-rule pattern and its exact audit (always computed).
    """

    kind: ClassVar[str] = "margins"

    table: MarginTable
    primary: MarginTable
    worst: WorstCaseLosses
    primary_worst: WorstCaseLosses
    intervals: AttackIntervals
    plan: Any
    comparison: Any
    classical: Any
    classical_worst: WorstCaseLosses
    receiver: Receiver
    keys: tuple[str, ...]
    count: str
    levels: dict[str, list[Any]]
    dtypes: dict[str, Any]
    r: int
    target_kappa: float | None
    objective: str
    bound: str
    absent: str = "zero"
    hierarchy: tuple[tuple[str, ...], ...] = ()
    #: The hierarchy files the levels were built from (:class:`persuasive.margins.hrc.HrcFile`).
    hierarchy_files: tuple[Any, ...] = ()
    #: The planner's method asked for, and the MIP's time limit (seconds; None: greedy).
    method: str = "greedy"
    mip_time_limit: float | None = None

    @property
    def h(self) -> int:
        return self.table.h

    def _display(self) -> tuple[str, list[tuple[str, str]], Any, tuple[str, ...]]:
        sup, sec = int(self.table.suppressed.sum()), int(self.table.secondary.sum())
        facts = [
            ("cells", f"{self.table.counts.size:,}"),
            ("suppressed", f"{sup:,} ({sec:,} secondary)"),
            ("margins", ", ".join(self.table.margin_names())),
            ("threshold h", str(self.h)),
            ("Receiver", display.describe_receiver(self.receiver)),
        ]
        return "Table release with margins", facts, self.published, (self.count,)

    # ------------------------------------------------------------------ published
    def _labels(self, flat: NDArray[np.intp]) -> dict[str, pl.Series]:
        coords = np.unravel_index(flat, self.table.shape)
        return {
            k: pl.Series(k, [self.levels[k][i] for i in coords[a]], dtype=self.dtypes[k])
            for a, k in enumerate(self.keys)
        }

    @functools.cached_property
    def published(self) -> pl.DataFrame:
        """The publishable table (C order): keys, the count (null where suppressed) and
        ``suppressed`` ("primary" / "secondary", null where released)."""
        from persuasive.report.margins_certificate import STATUS

        cells = np.flatnonzero(~self.table.structural.ravel())  # structural zeros: no cell
        x, sup = self.table.counts.ravel()[cells], self.table.suppressed.ravel()[cells]
        sec = self.table.secondary.ravel()[cells]
        status = np.where(sec, "secondary", np.where(sup, "primary", ""))
        return pl.DataFrame(
            [
                *self._labels(cells).values(),
                pl.Series(
                    self.count,
                    [None if s else int(c) for s, c in zip(sup, x, strict=True)],
                    dtype=pl.Int64,
                ),
                pl.Series(STATUS, [s or None for s in status], dtype=pl.String),
            ]
        )

    @functools.cached_property
    def published_margins(self) -> pl.DataFrame:
        """One row per published total: ``margin`` (name), the keys (null where summed over),
        ``total``."""
        frames = []
        for m, name in zip(self.table.margins, self.table.margin_names(), strict=True):
            tot = self.table.totals[m]
            idx = np.indices(tot.shape).reshape(len(m), -1) if m else np.zeros((0, 1), int)
            cols = [pl.Series("margin", [name] * tot.size, dtype=pl.String)]
            for a, k in enumerate(self.keys):
                labels = (
                    [self.levels[k][i] for i in idx[m.index(a)]] if a in m else [None] * tot.size
                )
                cols.append(pl.Series(k, labels, dtype=self.dtypes[k]))
            cols.append(pl.Series("total", tot.ravel().tolist(), dtype=pl.Int64))
            frames.append(pl.DataFrame(cols))
        return pl.concat(frames, how="vertical")

    @property
    def params(self) -> Any:
        """The certificate's claim (:class:`persuasive.report.kinds.margins.MarginsParams`)."""
        from persuasive.report.kinds.margins import MarginsParams

        return MarginsParams(
            receiver=self.receiver,
            h=self.h,
            r=self.r,
            margins=tuple(self.table.margin_names()),
            keys=self.keys,
            count=self.count,
            target_kappa=self.target_kappa,
            absent=self.absent,
            known=self.known_keys,
            hierarchy=tuple(">".join(c) for c in self.hierarchy),
            plan=tuple((self.verdict.plan_claim() or {}).items()),
            apriori=self.apriori_bounds,
            hierarchy_file=self.hierarchy_files,
        )

    @property
    def apriori_bounds(self) -> tuple[tuple[tuple[str, ...], int, int | None], ...]:
        """The a-priori bounds ``(key labels, lower, upper or None)`` of every cell that has
        one, sorted by labels: the certificate's ``claim.apriori``."""
        from persuasive.margins.known import NO_UPPER

        t = self.table
        lw, up = t.lower.ravel(), t.upper.ravel()
        flat = np.flatnonzero((lw > 0) | (up != NO_UPPER))
        labels = self._labels(flat)
        rows = zip(*(labels[k].cast(pl.String).to_list() for k in self.keys), strict=True)
        out = [
            (tuple(r), int(lw[i]), None if up[i] == NO_UPPER else int(up[i]))
            for r, i in zip(rows, flat, strict=True)
        ]
        return tuple(sorted(out, key=lambda b: b[0]))

    @property
    def known_keys(self) -> tuple[tuple[str, ...], ...]:
        """The key labels (strings, as published) of the cells declared known a priori (the
        structural zeros aside), sorted: the certificate's ``claim.known``."""
        t = self.table
        flat = np.flatnonzero((t.known & ~t.structural).ravel())
        labels = self._labels(flat)
        rows = zip(*(labels[k].cast(pl.String).to_list() for k in self.keys), strict=True)
        return tuple(sorted(tuple(r) for r in rows))

    def published_files(self, table_format: str) -> dict[str, Any]:
        from persuasive.release.pipeline import frame_files

        if self.refused:
            raise ValidationError(f"nothing to publish: {self.verdict.statement()}")
        return frame_files(
            {"released": self.published, "margins": self.published_margins}, table_format
        )

    def custodian(self, table_format: str) -> dict[str, Any]:
        from persuasive.release.pipeline import frame_files, write_json
        from persuasive.report.certificate import canonical

        return {
            **frame_files({"custodian_cells": self.cells}, table_format),
            "custodian_comparison.json": write_json(canonical(self.comparison_document())),
        }

    def expected(self, name: str) -> pl.DataFrame | None:
        stem = Path(name).stem
        if stem == "released":
            return self.published
        return self.published_margins if stem == "margins" else None

    def report(self, document: Any, target_kappa: float | None) -> Any:
        from persuasive.report.margins import margins_report

        return margins_report(self, document)

    # ------------------------------------------------------------------ custodian
    @property
    def losses(self) -> NDArray[np.float64]:
        """The planned-against bound per cell (table shape): ``kappa_published`` or
        ``kappa_upper`` as ``bound`` says."""
        w = self.worst
        return w.kappa_published if self.bound == "publication" else w.kappa_upper

    @functools.cached_property
    def cells(self) -> pl.DataFrame:
        """One row per cell (C order) for the custodian: never publish it."""
        from persuasive.release.margins_output import custodian_cells

        return custodian_cells(self)

    @functools.cached_property
    def verdict(self) -> Any:
        """The one outcome of the release (:class:`persuasive.release.margins_output.Verdict`):
        certified or refused, and every count the summary, the table and the report show."""
        from persuasive.release.margins_output import verdict

        return verdict(self)

    def failing(self) -> NDArray[np.bool_]:
        """Suppressed cells (table shape) that fail. With a target: a proven bound over every
        table consistent with the publication (``kappa_published``, what the certificate
        states) above it; without one: not computed exactly, or disclosed below r.

        With a target a disclosed cell passes when its loss :math:`B(x_i)` is at most κ (the
        Receiver's prior already put that much mass on its value: Persuasive Privacy promises
        κ, not secrecy); it is listed in the report either way.
        """
        return np.asarray(self.verdict.failing)

    @property
    def ok(self) -> bool:
        """Released, its certificate holds and no cell fails (:meth:`failing`): exit 0."""
        return bool(self.verdict.ok)

    @property
    def refused(self) -> bool:
        """With a target, no pattern found is certified: nothing is published."""
        return bool(self.verdict.refused)

    def above(self) -> pl.DataFrame:
        """The custodian rows of the failing cells."""
        return self.cells.filter(pl.Series(self.failing().ravel()))

    def summary(self) -> dict[str, Any]:
        from persuasive.release.margins_output import summary

        return {**summary(self), **self.verdict.plan_summary()}

    def comparison_document(self) -> dict[str, Any]:
        from persuasive.release.margins_output import comparison_document

        return comparison_document(self)
