"""What every engine's count-table release has in common: the facts of its claim.

:class:`TableFacts` is the base of :class:`persuasive.release.tables.TableRelease` (in
memory), :class:`persuasive.release.streaming.StreamingTableRelease` (out of core) and
:class:`persuasive.spark.table.SparkTableRelease` (Spark). Each holds its ``params`` (the claim,
:class:`persuasive.report.kinds.table.TableParams`), its data-independent ``certificate`` (Prop
8, Bon et al. 2026) and ``r_explicit``; the facts below follow from them, and
:meth:`TableFacts.summary_of` makes the custodian's summary from the three numbers each engine
counts its own way.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from persuasive.classes.receivers import R_MIN, Receiver
from persuasive.errors import ValidationError
from persuasive.release.display import ReleaseResult
from persuasive.report.kinds.table import KIND as TABLE_KIND

if TYPE_CHECKING:
    from persuasive.report.kinds.table import TableParams
    from persuasive.results import Certificate

__all__ = ["TableFacts"]


class TableFacts(ReleaseResult):
    """The facts of a count-table release that follow from its claim (see the module
    docstring); the engines' releases are frozen dataclasses with ``params``,
    ``certificate`` and ``r_explicit`` fields."""

    params: TableParams
    certificate: Certificate
    r_explicit: bool

    @property
    def receiver(self) -> Receiver:
        return self.params.receiver

    @property
    def h(self) -> int:
        return self.params.h

    @property
    def r(self) -> int:
        return self.params.r

    @property
    def keys(self) -> tuple[str, ...]:
        return self.params.keys

    @property
    def count(self) -> str:
        return self.params.count

    @property
    def alpha(self) -> float:
        """The α of the class 𝒞^{h,α}: the Receiver model's α(h)."""
        return float(self.receiver.alpha(self.h))

    @property
    def kappa(self) -> float:
        """The certified κ = −log α."""
        return self.certificate.kappa

    @property
    def claim(self) -> dict[str, Any]:
        """The certificate's claim (:mod:`persuasive.report.kinds.table`)."""
        return TABLE_KIND.claim(self.params)

    @property
    def spec(self) -> dict[str, Any]:
        """The spec of the claim (TOML schema of ``docs/cli.md``; ``spec_from_dict`` reads it)."""
        return dict(self.claim["spec"])

    def summary_of(self, n: int, n_suppressed: int, below_r: int) -> dict[str, Any]:
        """The custodian's summary (never part of the certificate) from the number of cells, of
        suppressed cells and of cells below r."""
        return {
            "n_cells": n,
            "n_suppressed": n_suppressed,
            "n_released": n - n_suppressed,
            "share_suppressed": n_suppressed / n,
            "max_loss": self.kappa if below_r else 0.0,
            "h": self.h,
            "r": self.r,
            "alpha": self.alpha,
            "kappa": self.kappa,
        }

    def calibration_curve(
        self, hs: ArrayLike | None = None
    ) -> tuple[NDArray[np.int64], NDArray[np.float64]]:
        """κ(h) = −log α(h) of the Receiver model on thresholds ``hs``; κ = inf where α(h) = 0
        and where h is not an allowed threshold (h < R_MIN, or h < r for an explicitly given r:
        Prop 8 gives no guarantee). Default ``hs``: R_MIN, ..., 2h."""
        grid = np.arange(R_MIN, 2 * self.h + 1) if hs is None else np.asarray(hs)
        if grid.ndim != 1 or grid.size == 0 or not np.all(grid == np.round(grid)):
            raise ValidationError(f"hs must be a 1-d list of integer thresholds; got {hs!r:.60}")
        grid = grid.astype(np.int64)
        low = max(R_MIN, self.r) if self.r_explicit else R_MIN
        kappas = np.array(
            [np.inf if h < low else self.receiver.kappa(int(h)) for h in grid], dtype=np.float64
        )
        return grid, kappas

    def custodian(self, table_format: str) -> dict[str, Any]:
        """No custodian files: a table's per-cell loss is in :attr:`table`, not written."""
        return {}
