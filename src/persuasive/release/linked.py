r"""Linked tables: several tables of one microdata file, released and audited as one publication.

Table :math:`k` is the margin :math:`X_{V_k}` of the cover table over all the variables, with
its own suppression and its own published margins. :func:`release_linked_tables` checks that
the family may be audited one table at a time (:mod:`persuasive.release.linked_check`: a
decomposable family, and the totals every pair of tables shares published by both), derives
each table's Receiver from the cover table's (Poisson with the mean range scaled by the number
of cover cells a table cell sums), and releases each table with its margins
(:func:`persuasive.release.margins.release_table_with_margins`). By the lemma of
``docs/linked.md`` each table's posterior given the whole publication is its posterior given
its own publication, so each table's certificate is the guarantee for the joint publication.

The outcome is all or nothing: when every table is certified (its release ``ok``), one folder
holds each table's files under its name and one ``certificate.json`` for the publication
(:mod:`persuasive.release.linked_output`); otherwise nothing is written.
"""

from __future__ import annotations

import functools
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

import polars as pl

from persuasive.errors import ValidationError
from persuasive.release import display
from persuasive.release.linked_check import (
    LinkedSpec,
    cells_per_cell,
    check_cover_receiver,
    derived_receiver,
    linked_spec,
)

__all__ = ["LinkedRelease", "release_linked_tables"]


@dataclass(frozen=True, eq=False, repr=False)
class LinkedRelease(display.ReleaseResult):
    """Linked tables released together: one :class:`~persuasive.release.margins.MarginRelease`
    per table, and what links them.

    Attributes
    ----------
    spec : LinkedSpec
        The tables' names, variables, published margins and the links between every pair.
    releases : tuple of MarginRelease or None
        Each table's release (its Receiver derived from ``receiver``); ``None`` for the tables
        after the first that is not certified (the publication is all or nothing, so they are
        not released).
    receiver : PoissonReceiver
        The Receiver of the cover table's cells.
    levels : dict
        The number of levels of every variable (the cover table is their product).
    """

    kind: ClassVar[str] = "linked"

    spec: LinkedSpec
    releases: tuple[Any, ...]
    receiver: Any
    levels: dict[str, int]
    h: int
    r: int
    count: str
    target_kappa: float | None

    @property
    def params(self) -> Any:
        return self

    @property
    def names(self) -> tuple[str, ...]:
        return self.spec.names

    def cells_per_cell(self, k: int) -> int:
        """The number of cover cells one cell of table ``k`` sums."""
        return cells_per_cell(self.levels, self.spec.keys[k])

    # ------------------------------------------------------------------ outcome
    @property
    def ok(self) -> bool:
        """Every table certified: its release ``ok`` (exit 0); otherwise nothing is written."""
        return all(rel is not None and rel.ok for rel in self.releases)

    @property
    def refused(self) -> bool:
        return not self.ok

    def statement(self) -> str:
        """Why the publication is refused (the first table that is not certified), or the
        guarantee."""
        for name, rel in zip(self.names, self.releases, strict=True):
            if rel is not None and not rel.ok:
                why = rel.verdict.statement() if rel.refused else _not_ok(rel)
                return f"table '{name}' is not certified, so no table is published: " + " ".join(
                    why.split()
                )
        return str(self.guarantee["statement"])

    @functools.cached_property
    def guarantee(self) -> dict[str, Any]:
        """The publication's guarantee as ``certificate.json`` states it (every table's)."""
        from persuasive.release.linked_output import guarantee_of

        return guarantee_of(self, [dict(rel.guarantee) for rel in self.releases])

    def summary(self) -> pl.DataFrame:
        """One row per table: name, variables, margins, cover cells per cell, the derived
        Receiver's mean range, cells, suppressed (secondary), κ published, certified (null
        for a table not released because an earlier one is not certified)."""
        rows = []
        for k, (name, rel) in enumerate(zip(self.names, self.releases, strict=True)):
            m = self.cells_per_cell(k)
            derived = derived_receiver(self.receiver, m)
            vd = None if rel is None else rel.verdict
            rows.append(
                {
                    "table": name,
                    "variables": "*".join(self.spec.keys[k]),
                    "margins": ",".join(self.spec.margin_names(k)),
                    "cover_cells_per_cell": m,
                    "mean_min": derived.mean_min,
                    "mean_max": derived.mean_max,
                    "cells": None if vd is None else int(vd.n_cells),
                    "suppressed": None if vd is None else int(vd.n_suppressed),
                    "secondary": None if vd is None else int(vd.n_secondary),
                    "kappa_published": None if vd is None else float(vd.kappa_published),
                    "certified": None if rel is None else bool(rel.ok),
                }
            )
        return pl.DataFrame(rows)

    def _display(self) -> tuple[str, list[tuple[str, str]], Any, tuple[str, ...]]:
        facts = [
            ("tables", ", ".join(self.names)),
            ("cover cells", f"{cells_per_cell(self.levels, ()):,}"),
            ("threshold h", str(self.h)),
            ("Receiver (cover cells)", display.describe_receiver(self.receiver)),
        ]
        return "Linked tables", facts, self.summary(), ()

    # ------------------------------------------------------------------ writing
    def published_files(self, table_format: str) -> dict[str, Any]:
        if self.refused:
            raise ValidationError(f"nothing to publish: {self.statement()}")
        return {}

    def write(
        self,
        folder: str | os.PathLike[str],
        *,
        format: str = "csv",
        report: bool = False,
        force: bool = False,
    ) -> Path:
        """Write the publication folder: each table's release folder under its name, and one
        ``certificate.json`` (``docs/linked.md``); nothing when a table is not certified.

        Parameters are those of :meth:`ReleaseResult.write`; the folder is written privately,
        every certificate verified, then renamed into place.
        """
        from persuasive import _validation as v
        from persuasive.files.output import OutputFolder
        from persuasive.release.linked_output import publish_linked

        format = v.choice("format", format, ("csv", "parquet"))
        self.published_files(format)  # refused: nothing to publish
        out = OutputFolder(folder, force=force, inputs=self.inputs, option="folder", kind="linked")
        out.check()
        doc, _ = publish_linked(self, out, table_format=format, report=report)
        self.__dict__["guarantee"] = dict(doc["guarantee"])
        return out.path


def _not_ok(rel: Any) -> str:
    n = int(rel.verdict.failing.sum())
    return (
        f"{n} suppressed cells fail without a target (disclosed below r, or in a part of the "
        "table too large for the exact posterior); give --target-kappa so that secondary cells "
        "are planned"
    )


def _levels(frame: Any, variables: tuple[str, ...], count: str) -> dict[str, int]:
    """The number of levels of every variable: observed in the records, or declared."""
    from persuasive.release import grid

    cells = grid.tabulate(frame, variables, count)
    declared = grid.declared_levels(frame, variables, cells.schema)
    out = {}
    for v in variables:
        seen = cells.get_column(v)
        if v in declared:
            seen = pl.concat([seen, declared[v]]) if seen.dtype == declared[v].dtype else seen
        out[v] = int(seen.n_unique())
    return out


def _check_columns(frame: Any, spec: LinkedSpec, count: str) -> None:
    """Every table's variables are columns of the records, and ``count`` names none of them
    (checked before any work: one line naming the argument)."""
    from persuasive.files import reading as rd

    if not isinstance(count, str) or not count.strip() or count != count.strip():
        raise ValidationError(
            f"count: the name of each table's count column, a non-empty name without leading or "
            f"trailing spaces; got {count!r:.40}"
        )
    if count in spec.variables:
        raise ValidationError(
            f"count: {count!r} is a variable of the tables; name the count column otherwise "
            "(e.g. count='n')"
        )
    names = rd.header(frame)
    for k, ks in enumerate(spec.keys):
        missing = [v for v in ks if v not in names]
        if missing:
            shown = ", ".join(names[:12]) + (" ..." if len(names) > 12 else "")
            raise ValidationError(
                f"tables: variable {missing[0]!r} of table '{spec.names[k]}' ({'*'.join(ks)}) "
                f"is not a column of the data; its columns: {shown}"
            )


def release_linked_tables(
    frame: Any,
    *,
    tables: Any,
    margins: Any,
    h: int,
    receiver: Any,
    target_kappa: float | None = None,
    r: int | None = None,
    objective: str = "count",
    bound: str = "publication",
    count: str = "n",
    names: Any = None,
) -> LinkedRelease:
    r"""Release several tables of one microdata file that share variables, as one publication.

    Each table :math:`k` (variables :math:`V_k`) is the margin of the cover table over
    :math:`V = \bigcup_k V_k`. The Receiver states the cover table's cells: independent
    Poisson(μ), one common μ in ``[mean_min, mean_max]``. A cell of table k sums
    :math:`m_k = \prod_{v \notin V_k} d_v` cover cells, so table k's Receiver is

    .. math:: Y^k_j \overset{ind}{\sim} \mathrm{Poi}(m_k\mu),\qquad
              m_k\mu \in [m_k\mu_-, m_k\mu_+],

    and, when the family is decomposable and every pair's shared totals are published by both,
    table k's posterior given the whole publication is its posterior given its own
    (``docs/linked.md``): its per-cell κ is the guarantee for the joint publication.

    Parameters
    ----------
    frame : polars DataFrame or path
        Microdata: one row per record.
    tables : sequence of sequences of str, or str
        The tables' variables, ``[["a", "b"], ["a", "c"]]`` or ``"a*b;a*c"``.
    margins : sequence, or str
        Each table's published margins (the syntax of
        :func:`~persuasive.release.margins.release_table_with_margins`), ``["a,b", "a,c"]`` or
        ``"a,b;a,c"``.
    h : int
        Primary threshold of every table.
    receiver : PoissonReceiver
        The Receiver of the cover table's cells (negative binomial is refused: the tables are
        then not independent given their shared totals).
    target_kappa : float, optional
        Every table's per-cell target (secondary suppression is planned per table).
    r, objective, bound
        As in :func:`~persuasive.release.margins.release_table_with_margins`.
    count : str
        The name of each table's count column (default ``"n"``).
    names : sequence of str, optional
        Each table's folder name (default: its variables joined by ``-``).

    Returns
    -------
    LinkedRelease
        ``rel.ok``: every table certified; ``rel.write(folder)`` writes the publication. The
        tables are released in order, and those after the first that is not certified are not
        released at all (``rel.releases[k]`` is None): nothing would be published anyway.

    Raises
    ------
    ValidationError
        Bad parameters (a variable that is not a column, a count name that is a variable), a
        family that is cyclic or lists a table twice or inside another, a pair of tables
        whose shared totals one of them does not publish, a negative-binomial Receiver.
    """
    from persuasive import _validation as v
    from persuasive.margins.planner import InfeasiblePlanError
    from persuasive.release.margins import release_table_with_margins
    from persuasive.release.margins_input import BOUNDS, OBJECTIVES

    spec = linked_spec(tables, margins, names)
    cover = check_cover_receiver(receiver)
    v.choice("objective", objective, OBJECTIVES)
    v.choice("bound", bound, BOUNDS)
    _check_columns(frame, spec, count)
    levels = _levels(frame, spec.variables, count)
    releases: list[Any] = []
    for k, ks in enumerate(spec.keys):
        if releases and not releases[-1].ok:  # all or nothing: the rest would not be published
            releases.append(None)
            continue
        try:
            rel = release_table_with_margins(
                frame,
                keys=ks,
                count=count,
                h=h,
                receiver=derived_receiver(cover, cells_per_cell(levels, ks)),
                margins=",".join(spec.margin_names(k)),
                target_kappa=target_kappa,
                objective=objective,
                bound=bound,
                r=r,
                microdata=True,
            )
        except InfeasiblePlanError as exc:
            raise InfeasiblePlanError(
                f"table '{spec.names[k]}' ({'*'.join(ks)}): {exc}; no table is published"
            ) from None
        wrong = [v for v in ks if len(rel.levels[v]) != levels[v]]
        if wrong:  # pragma: no cover - the same records give the same levels
            raise ValidationError(f"variable {wrong[0]!r}: its levels differ between tables")
        releases.append(rel)
    first = releases[0]
    return display.read_from(
        LinkedRelease(
            spec=spec,
            releases=tuple(releases),
            receiver=cover,
            levels=levels,
            h=first.h,
            r=first.r,
            count=count,
            target_kappa=first.target_kappa,
        ),
        frame,
    )
