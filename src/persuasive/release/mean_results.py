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

from persuasive._wording import prior_sds
from persuasive.certify.noisy_mean import gaussian_noise_kappa
from persuasive.release import display
from persuasive.report.kinds.mean import KIND as MEAN_KIND
from persuasive.report.kinds.mean import MeanParams
from persuasive.results import Certificate

__all__ = ["GroupMeansRelease", "MeanRelease", "Noise"]

#: The noise of a mean release: None, ``("gaussian", sigma)`` or ``("laplace", scale)``.
Noise = tuple[str, float] | None


def _curve(p: MeanParams, xs: Any) -> tuple[NDArray[np.float64], NDArray[np.float64], str]:
    if p.max_person_error is not None:
        return _bounded_curve(p, xs)
    if p.noise_sd is None:
        grid = np.linspace(0.0, 2.0 * p.r1, 41)[1:] if xs is None else np.asarray(xs, float)
        return grid, grid + math.log(p.r2), "r1 (squared prior-mean error bound)"
    s = p.noise_sd
    grid = np.geomspace(s / 10.0, s * 10.0, 41) if xs is None else np.asarray(xs, float)
    kap = [gaussian_noise_kappa(p.r1, p.r2, float(g), p.max_mean_sd, p.delta)[0] for g in grid]
    return grid, np.asarray(kap), "Gaussian noise sd"


#: The x-axis label of κ against the noise sd under the bounded-error class.
BOUNDED_NOISE_LABEL = "Gaussian noise sd (Receivers at most r0 prior sds wrong about anyone)"
#: The δ of the noisy points of the exact mean's curve when the release's δ is 0 (at δ = 0
#: noise is certified only by the pointwise bound, which stays above r0²).
CURVE_DELTA = 0.05


def _bounded_curve(p: MeanParams, xs: Any) -> tuple[NDArray[np.float64], NDArray[np.float64], str]:
    """κ under the bounded-error class: against the noise sd (around the release's sd, or from
    V/100 to 100 V for the exact mean), or against r1 for the exact mean without V."""
    from persuasive.certify.bounded_error import bounded_error_kappa

    r0, v = p.max_person_error, p.max_mean_sd
    assert r0 is not None
    delta = p.delta if p.delta > 0 or p.noise_sd is not None else CURVE_DELTA

    def kappa(r1: float, s: float) -> float:
        return bounded_error_kappa(
            r1, p.r2, max_person_error=r0, max_mean_sd=v, sigma=s, delta=delta
        )

    if p.noise_sd is None and v is None:
        grid = np.linspace(0.0, 2.0 * p.r1, 41)[1:] if xs is None else np.asarray(xs, float)
        label = "r1 (squared prior-mean error bound; Receivers at most r0 sds wrong about anyone)"
        return grid, np.asarray([kappa(float(g), 0.0) for g in grid]), label
    if xs is not None:
        grid = np.asarray(xs, float)
    elif p.noise_sd is not None:
        grid = np.geomspace(p.noise_sd / 10.0, p.noise_sd * 10.0, 41)
    else:
        assert v is not None
        grid = np.geomspace(v / 100.0, v * 100.0, 41)
    label = BOUNDED_NOISE_LABEL + ("" if delta == p.delta else f", at δ = {delta:g}")
    return grid, np.asarray([kappa(p.r1, float(g)) for g in grid]), label


def _class_facts(p: MeanParams) -> list[tuple[str, str]]:
    """The bounded-error class in the display, when the release is against it."""
    if p.max_person_error is None:
        return []
    return [("Receivers", receivers_words(p))]


def receivers_words(p: MeanParams) -> str:
    """The Receivers of the class in plain words (the summary's line)."""
    out = f"Gaussian, r1 = {p.r1:g}, r2 = {p.r2:g}"
    if p.max_person_error is not None:
        out += f", at most {prior_sds(p.max_person_error)} wrong about any one person"
    if p.max_mean_sd is not None:
        out += f", prior sd of the mean at most {p.max_mean_sd:g}"
    return out


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
        """κ against r1 (exact mean) or against the noise sd: ``(xs, kappas, label)``; with
        ``max_person_error`` under that class, against the noise sd also for the exact mean
        when ``max_mean_sd`` is given (noise pays there)."""
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
        return noise_advice(
            p.r1, p.r2, p.noise_sd, p.max_mean_sd, p.delta, max_person_error=p.max_person_error
        )

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
        facts += _class_facts(self.params)
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
        facts += _class_facts(self.params)
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
