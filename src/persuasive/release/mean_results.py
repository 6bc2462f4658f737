"""The results of a mean release: :class:`MeanRelease` (one mean) and
:class:`GroupMeansRelease` (one mean per group), with what they share — the claim's
parameters, the calibration curve, the report and the pipeline protocol
(:mod:`persuasive.release.pipeline`). :mod:`persuasive.release.means` makes them.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
import polars as pl
from numpy.typing import ArrayLike, NDArray

from persuasive.certify.noisy_mean import gaussian_noise_kappa
from persuasive.release import display
from persuasive.report.kinds.mean import KIND as MEAN_KIND
from persuasive.report.kinds.mean import MeanParams
from persuasive.results import Certificate

__all__ = ["GroupMeansRelease", "MeanRelease", "Noise"]

#: The noise of a mean release: None, ``("gaussian", sigma)`` or ``("laplace", scale)``.
Noise = tuple[str, float] | None


def _curve(p: MeanParams, xs: Any) -> tuple[NDArray[np.float64], NDArray[np.float64], str]:
    if p.noise_sd is None:
        grid = np.linspace(0.0, 2.0 * p.r1, 41)[1:] if xs is None else np.asarray(xs, float)
        return grid, grid + math.log(p.r2), "r1 (squared prior-mean error bound)"
    s = p.noise_sd
    grid = np.geomspace(s / 10.0, s * 10.0, 41) if xs is None else np.asarray(xs, float)
    kap = [gaussian_noise_kappa(p.r1, p.r2, float(g), p.max_mean_sd, p.delta)[0] for g in grid]
    return grid, np.asarray(kap), "Gaussian noise sd"


class _Means(display.ReleaseResult):
    """What a mean and group means share: the claim's parameters, the report, ``write(folder)``
    and the display (:mod:`persuasive.release.display`)."""

    params: MeanParams
    certificate: Certificate

    @property
    def noise(self) -> Noise:
        return None if self.params.noise_sd is None else ("gaussian", self.params.noise_sd)

    @property
    def r1(self) -> float:
        return self.params.r1

    @property
    def r2(self) -> float:
        return self.params.r2

    @property
    def delta(self) -> float:
        return self.params.delta

    @property
    def spec(self) -> dict[str, Any]:
        return dict(MEAN_KIND.claim(self.params)["spec"])

    def calibration_curve(self, xs: ArrayLike | None = None) -> Any:
        """κ against r1 (exact mean) or against the noise sd: ``(xs, kappas, label)``."""
        return _curve(self.params, xs)

    @property
    def noise_advice(self) -> str | None:
        """With Gaussian noise certifying no smaller κ than the exact mean under the stated
        class: one sentence saying why, and under which class noise would pay
        (:func:`persuasive.release.mean_advice.noise_advice`); else None."""
        from persuasive.release.mean_advice import noise_advice

        p = self.params
        if p.noise_sd is None:
            return None
        return noise_advice(p.r1, p.r2, p.noise_sd, p.max_mean_sd, p.delta)

    def statement(self) -> str:
        """The guarantee in one plain sentence."""
        return str(MEAN_KIND.certify(self.params).guarantee["statement"])

    def custodian(self, table_format: str) -> dict[str, Any]:
        return {}

    def report(self, document: Mapping[str, Any], target_kappa: float | None) -> Any:
        from persuasive.release.mean_report import mean_report

        return mean_report(self, document, target_kappa)


@dataclass(frozen=True, eq=False, repr=False)
class MeanRelease(_Means):
    """A released mean with its certificate.

    ``rel.value`` is the published mean; ``rel.write(folder)`` writes the release folder
    (``released.json``, ``certificate.json``, optionally the report).
    """

    kind: ClassVar[str] = "mean"

    value: float
    n: int
    params: MeanParams
    certificate: Certificate = field(repr=False)

    def summary(self) -> dict[str, Any]:
        """Data-dependent facts for the report (never for the certificate)."""
        return {"n": self.n, "value": self.value, "kappa": self.certificate.kappa}

    def _display(self) -> tuple[str, list[tuple[str, str]], Any, tuple[str, ...]]:
        facts = [
            ("column", repr(self.params.value)),
            ("n", f"{self.n:,}"),
            ("published mean", f"{self.value:.6g}"),
        ]
        if self.params.noise_sd is not None:
            facts.append(("Gaussian noise sd", f"{self.params.noise_sd:g}"))
        return "Mean release", facts, None, ()

    def published_files(self, table_format: str) -> dict[str, Any]:
        from persuasive.release.pipeline import write_json

        return {"released.json": write_json({"mean": self.value})}

    def expected(self, name: str) -> Any:
        return {"mean": self.value} if name == "released.json" else None


@dataclass(frozen=True, eq=False, repr=False)
class GroupMeansRelease(_Means):
    """One released mean per group; ``values`` has columns group, ``mean`` and ``n`` (the
    group sizes stay with the custodian: they are counts, which the certificate does not
    cover). ``rel.published`` (group, mean) is what ``rel.write(folder)`` publishes."""

    kind: ClassVar[str] = "mean"

    values: pl.DataFrame
    params: MeanParams
    certificate: Certificate = field(repr=False)

    @property
    def published(self) -> pl.DataFrame:
        """The published columns: the group and its mean."""
        return self.values.select(self.params.group, "mean")

    def _display(self) -> tuple[str, list[tuple[str, str]], Any, tuple[str, ...]]:
        facts = [("groups", f"{self.values.height:,}"), ("column", repr(self.params.value))]
        if self.params.noise_sd is not None:
            facts.append(("Gaussian noise sd", f"{self.params.noise_sd:g}"))
        return "Group means release", facts, self.published, ()

    def summary(self) -> dict[str, Any]:
        return {
            "n_groups": self.values.height,
            "min_group_size": int(self.values["n"].min()),  # type: ignore[arg-type]
            "kappa": self.certificate.kappa,
        }

    def published_files(self, table_format: str) -> dict[str, Any]:
        from persuasive.release.pipeline import frame_files

        return frame_files({"released": self.published}, table_format)

    def expected(self, name: str) -> pl.DataFrame | None:
        return self.published if Path(name).stem == "released" else None
