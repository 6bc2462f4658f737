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
    total = c.total
    parts = []
    for j, subset in enumerate(inc.margins):
        codes = inc.group[j] - (int(inc.group[j].min()) if inc.group[j].size else 0)
        sums = np.bincount(codes, weights=total, minlength=max(inc.frames[j].height, 1))
        n = sums.size
        cols: dict[str, Any] = {"margin": [margin_name(subset)] * n}
        for k in keys:
            cols[k] = inc.frames[j][k].cast(pl.String) if k in subset else pl.Series(k, [None] * n)
        frame = pl.DataFrame(cols).with_columns(
            *(pl.col(k).cast(pl.String) for k in keys), pl.Series("total", sums)
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
