"""A magnitude release with margins: the pattern (primary and secondary suppression), the
published margins frame, the attacker's intervals and the release object
(``docs/magnitude.md`` §6; the maths in :mod:`persuasive.magnitude.margins`)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
import polars as pl

from persuasive.errors import ValidationError
from persuasive.magnitude.certificate import MagnitudeCertificate, MagnitudeClass
from persuasive.magnitude.contributors import Contributions
from persuasive.magnitude.kind_margins import margin_name
from persuasive.release.magnitude import MagnitudeRelease

__all__ = ["MagnitudeMarginsRelease", "MarginsPlan", "plan_margins"]


@dataclass(frozen=True)
class MarginsPlan:
    """What a release with margins publishes and why (see :func:`plan_margins`)."""

    suppressed: Any
    kappa: Any
    secondary: Any
    low: Any
    high: Any
    margins: pl.DataFrame
    refused: str | None


def _margins_frame(c: Contributions, inc: Any, keys: list[str]) -> pl.DataFrame:
    """The published margins, each an exact sum of exact cell totals
    (:mod:`persuasive.magnitude.exact`; one that cannot be written exactly is refused)."""
    from persuasive.magnitude.exact import publishable

    sums, scale, floats = c.exact_totals()
    parts = []
    for j, subset in enumerate(inc.margins):
        codes = inc.group[j] - (int(inc.group[j].min()) if inc.group[j].size else 0)
        n = max(inc.frames[j].height, 1)
        by = pl.DataFrame({"g": codes, "m": sums}).group_by("g").agg(pl.col("m").sum())
        grouped = pl.DataFrame({"g": np.arange(n, dtype=np.int64)}).join(by, on="g", how="left")
        levels = inc.frames[j]

        def label(g: int, subset: tuple[str, ...] = subset, levels: pl.DataFrame = levels) -> str:
            if not subset:
                return "the grand total"
            row = levels.row(g)
            return (
                f"margin {margin_name(subset)} ("
                + ", ".join(f"{k}={x!r}" for k, x in zip(subset, row, strict=True))
                + ")"
            )

        total = publishable(grouped["m"].fill_null(0), scale, label, "total", floats)
        cols: dict[str, Any] = {"margin": [margin_name(subset)] * n}
        for k in keys:
            cols[k] = levels[k].cast(pl.String) if k in subset else pl.Series(k, [None] * n)
        frame = pl.DataFrame(cols).with_columns(
            *(pl.col(k).cast(pl.String) for k in keys), total.alias("total")
        )
        parts.append(frame)
    return pl.concat(parts)


def plan_margins(
    c: Contributions,
    cert: MagnitudeCertificate,
    cls: MagnitudeClass,
    insiders: int,
    margins: tuple[tuple[str, ...], ...],
    target: float,
) -> MarginsPlan:
    """Primary and secondary suppression with the margins published."""
    from persuasive.magnitude.margins import attacker_intervals, incidence, protect

    inc = incidence(c.cells, margins)

    def label(j: int) -> str:
        return ", ".join(f"{k}={v!r}" for k, v in zip(c.cells.columns, c.cells.row(j), strict=True))

    out = protect(c, cert.cell, cls, insiders, inc, target, label)
    secondary = np.zeros(c.n_cells, dtype=bool)
    secondary[list(out.secondary)] = True
    if out.refused is None:
        low, high = attacker_intervals(inc.matrix(), c.total, out.suppressed)
    else:
        low = high = np.full(c.n_cells, np.nan)
    return MarginsPlan(
        out.suppressed,
        out.kappa,
        secondary,
        low,
        high,
        _margins_frame(c, inc, list(c.cells.columns)),
        out.refused,
    )


@dataclass(frozen=True, repr=False)
class MagnitudeMarginsRelease(MagnitudeRelease):
    """A magnitude table with its margins; ``refusal`` is why nothing may be published."""

    kind: ClassVar[str] = "magnitude_margins"

    margins: pl.DataFrame | None = None
    refusal: str | None = None

    @property
    def refused(self) -> bool:
        return self.refusal is not None

    def statement(self) -> str:
        if self.refusal is not None:
            return f"Refused: {self.refusal}."
        return str(self.guarantee["statement"])

    def published_files(self, table_format: str) -> dict[str, Any]:
        from persuasive.release.pipeline import frame_files

        if self.refusal is not None:
            raise ValidationError(f"nothing to publish: {self.refusal}")
        assert self.margins is not None
        return frame_files({"released": self.published, "margins": self.margins}, table_format)

    def expected(self, name: str) -> pl.DataFrame | None:
        stem = Path(name).stem
        return {"released": self.published, "margins": self.margins}.get(stem)
