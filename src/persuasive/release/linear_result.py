r"""The result of a linear release (:func:`persuasive.release.linear.release_linear`): the
published statistics, the certificate or the refusal naming who is exposed, and what the
report and the release folder need.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
import polars as pl
from numpy.typing import NDArray

from persuasive.errors import ValidationError
from persuasive.linear.exposure import LinearExposure
from persuasive.release import display
from persuasive.release.statistics import Statistic
from persuasive.report.kinds.linear import KIND as LINEAR_KIND
from persuasive.report.kinds.linear import LinearParams
from persuasive.report.words import plural
from persuasive.results import Certificate

__all__ = ["LinearRelease", "statement_of"]


@dataclass(frozen=True, repr=False)
class LinearRelease(display.ReleaseResult):
    """A release of linear statistics; see :func:`release_linear`.

    ``rel.values`` is the published table; ``rel.write(folder)`` writes the release folder
    (refused when someone is exposed: there is nothing to publish).

    Attributes
    ----------
    values : polars.DataFrame
        Columns name, kind, where, value: the released statistics (value null when refused).
    statistics, withheld : tuple of Statistic
        Every statistic asked for, and those withheld (greedy withholding).
    certificate : Certificate or None
        None when the release is refused because someone is exposed.
    exposed : tuple of LinearExposure
        ``(row_id, combination)`` of each exposed individual of the statistics asked for.
    params : LinearParams or None
        The certificate's claim (None when refused).
    max_person_error : float or None
        r0 of the bounded-error class the certificate is against (None: the linear class).
    """

    kind: ClassVar[str] = "linear"

    values: pl.DataFrame
    statistics: tuple[Statistic, ...]
    withheld: tuple[Statistic, ...]
    value: str
    n: int
    r1: float
    r2: float
    delta: float
    noise_sd: float | None
    max_stat_sd: float | None
    certificate: Certificate | None
    exposed: tuple[LinearExposure, ...]
    params_: LinearParams | None = field(default=None, repr=False)
    target_kappa: float | None = None
    calibrated: str = ""
    matrix: NDArray[np.float64] = field(default_factory=lambda: np.zeros((0, 0)), repr=False)
    max_person_error: float | None = None

    def receivers(self) -> Any:
        """The Receiver class of the release (:meth:`LinearParams.receivers`)."""
        from persuasive.report.kinds.linear_params import receivers_of

        return receivers_of(self.r1, self.r2, self.max_stat_sd, self.max_person_error)

    @property
    def noise_advice(self) -> str | None:
        """With noise certifying no smaller κ than the exact statistics under the stated class:
        one sentence saying why and under which class it would
        (:func:`persuasive.linear.advice.linear_noise_advice`); None without noise, or when the
        noise does lower κ."""
        if self.noise_sd is None:
            return None
        from persuasive.linear.advice import linear_noise_advice

        return linear_noise_advice(
            self.r1,
            self.r2,
            self.noise_sd,
            max_stat_sd=self.max_stat_sd,
            delta=self.delta,
            max_person_error=self.max_person_error,
        )

    @property
    def params(self) -> LinearParams:
        if self.params_ is None:
            raise ValidationError(f"nothing to publish: {statement_of(self)}")
        return self.params_

    @property
    def refused(self) -> bool:
        return self.certificate is None

    @property
    def holds(self) -> bool:
        """Released, κ finite, and at most the target when one was given."""
        cert = self.certificate
        if cert is None or not cert.holds or not math.isfinite(cert.kappa):
            return False
        return self.target_kappa is None or cert.kappa <= self.target_kappa

    @property
    def spec(self) -> dict[str, Any]:
        return dict(LINEAR_KIND.claim(self.params)["spec"])

    def summary(self) -> dict[str, Any]:
        """Data-dependent facts for the custodian and the report (never for the certificate)."""
        return {
            "n": self.n,
            "k_asked": len(self.statistics),
            "k_released": 0 if self.refused else self.values.height,
            "withheld": [s.name for s in self.withheld],
            "exposed": [e.row_id for e in self.exposed],
            "kappa": math.inf if self.certificate is None else self.certificate.kappa,
            "delta": self.delta,
            "noise_sd": self.noise_sd,
            "max_person_error": self.max_person_error,
        }

    def statement(self) -> str:
        """The guarantee, or the refusal, in one plain sentence."""
        return statement_of(self)

    def _display(self) -> tuple[str, list[tuple[str, str]], Any, tuple[str, ...]]:
        k = 0 if self.refused else self.values.height
        facts = [("statistics", f"{k} of {len(self.statistics)}"), ("column", repr(self.value))]
        facts.append(("n", f"{self.n:,}"))
        if self.withheld:
            facts.append(("withheld", ", ".join(s.name for s in self.withheld)))
        if self.exposed:
            facts.append(("exposed individuals", str(len(self.exposed))))
        if self.noise_sd is not None:
            facts.append(("Gaussian noise sd", f"{self.noise_sd:.4g}"))
        if self.max_person_error is not None:
            from persuasive._wording import prior_sds

            facts.append(
                ("Receivers", f"at most {prior_sds(self.max_person_error)} wrong about anyone")
            )
        return "Linear statistics release", facts, self.values, ()

    def calibration_curve(self, xs: Any = None) -> tuple[Any, Any, str]:
        """κ under the class against the noise sd on every statistic: ``(sds, kappas, label)``."""
        return _curve(self, xs)

    def published_files(self, table_format: str) -> dict[str, Any]:
        from persuasive.release.pipeline import frame_files

        self.params  # noqa: B018 - a refused release has nothing to publish
        return frame_files({"released": self.values}, table_format)

    def custodian(self, table_format: str) -> dict[str, Any]:
        return {}

    def expected(self, name: str) -> pl.DataFrame | None:
        return self.values if Path(name).stem == "released" else None

    def report(self, document: Mapping[str, Any], target_kappa: float | None) -> Any:
        from persuasive.release.linear_output import linear_report

        return linear_report(self, document)


def statement_of(rel: LinearRelease) -> str:
    if rel.certificate is None:
        who = "; ".join(e.describe() for e in rel.exposed[:3])
        more = f" (and {len(rel.exposed) - 3} more)" if len(rel.exposed) > 3 else ""
        return (
            "Refused: these statistics reveal "
            f"{plural(len(rel.exposed), 'individual')} exactly, "
            f"whatever the Receiver's Gaussian prior ({who}{more}); add noise "
            "(--target-kappa) or withhold statistics (--withhold)."
        )
    from persuasive.report.kinds.linear import linear_sentence

    cert = rel.certificate
    return linear_sentence(rel.params, cert.kappa, cert.delta, cert.basis)


#: The δ of the curve's noisy points when the release's δ is 0 and it has no noise (then
#: noise is certified at δ = 0 only under the bounded-error class, by its pointwise bound).
CURVE_DELTA = 0.05


def _curve(rel: LinearRelease, xs: Any) -> tuple[Any, Any, str]:
    """κ under the release's class against the noise sd on every statistic: around the
    release's sd, or, for the exact statistics under the bounded-error class with V, from
    V/100 to 100 V (κ falls to 0 there)."""
    cls = rel.receivers()
    bounded = rel.max_person_error is not None
    keep_delta = rel.delta > 0 or (bounded and rel.noise_sd is not None)
    delta = rel.delta if keep_delta else CURVE_DELTA
    if xs is None:
        if bounded and rel.noise_sd is None and rel.max_stat_sd is not None:
            xs = np.geomspace(rel.max_stat_sd / 100.0, rel.max_stat_sd * 100.0, 31)
        else:
            s = rel.noise_sd or 1.0
            xs = np.geomspace(s / 100.0, s * 10.0, 31)
    grid = np.asarray(xs, dtype=float)
    if grid.size and (rel.params_ is None or rel.params_.exposures):
        # A checked (nobody exposed) once; κ then depends on s only. A released A exposes
        # nobody (known from its patterns); a refused one raises here.
        cls.class_kappa(rel.matrix)
    k = rel.matrix.shape[0]
    if bounded:  # a closed form per sd (docs/linear_bounded.md); short enough for the plot
        from persuasive._wording import prior_sds

        assert rel.max_person_error is not None
        kap = [cls.noise_kappa(float(g) ** 2, k, delta) for g in grid]
        label = (
            f"noise sd per statistic (δ = {delta:g}; Receivers at most "
            f"{prior_sds(rel.max_person_error)} off on anyone)"
        )
    else:
        from persuasive.linear.calibrate import ClassCurve  # = cls.noise_kappa, bit for bit

        kap = list(ClassCurve(cls, delta).many([float(g) ** 2 for g in grid], k))
        label = f"Gaussian noise sd on every statistic (δ = {delta:g})"
    return grid, np.asarray(kap, dtype=float), label
