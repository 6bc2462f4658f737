r"""The Sender's choice (eq. 5, Bon et al. 2026): the result of a search over mechanisms.

The paper states the Sender's problem — the mechanism of greatest utility within a privacy
class — and leaves it open. :mod:`persuasive.choose` answers it over the mechanism families
this library certifies; this module holds what a search returns: every family considered
(:class:`Candidate`, certified or not and why), the best certified one, and the Pareto
frontier of κ against utility (:class:`Choice`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

__all__ = ["Candidate", "Choice", "best_of", "not_certified", "withholding"]


@dataclass(frozen=True)
class Candidate:
    """One mechanism of a family, or a family the library does not certify.

    Attributes
    ----------
    family : str
        ``"exact"``, ``"gaussian"``, ``"laplace"``, ``"suppression"``, ``"withhold"``, ...
    parameter : float or None
        The family's parameter (noise sd, threshold h); None for a one-point family.
    kappa, delta : float
        The certified κ at δ (``inf`` when not certified).
    loss : float
        The utility loss the search minimises (expected squared error, cells suppressed, ...).
    certified : bool
        κ is proven at most the target at the requested δ.
    reason : str
        Why, in one sentence (what was proven, or why the family is not certified).
    withheld : tuple of str
        The parts not released (statistics withheld), when the family withholds some.
    """

    family: str
    parameter: float | None
    kappa: float
    delta: float
    loss: float
    certified: bool
    reason: str
    withheld: tuple[str, ...] = ()


@dataclass(frozen=True)
class Choice:
    """The best certified mechanism and the frontier the search walked.

    Attributes
    ----------
    best : Candidate or None
        The certified candidate of least loss (None when no family meets the target).
    candidates : tuple of Candidate
        The best of each family, certified or not, in the order searched.
    frontier : tuple of Candidate
        Points (κ, loss) of the certified families over their parameter, for the table and
        the plot: the Pareto frontier is their lower envelope.
    target_kappa, delta : float
    utility : str
        What ``loss`` measures.
    exact_search : bool
        Every family searched is one-parameter and monotone, so the best is exact up to the
        stated tolerance (else: the best on the grid searched, and ``notes`` says so).
    notes : tuple of str
    setting : tuple of (str, str)
        What was asked, for people: the Receivers, the data's shape, the target, the loss.
    """

    best: Candidate | None
    candidates: tuple[Candidate, ...]
    frontier: tuple[Candidate, ...] = field(repr=False)
    target_kappa: float = math.inf
    delta: float = 0.0
    utility: str = ""
    exact_search: bool = True
    notes: tuple[str, ...] = ()
    setting: tuple[tuple[str, str], ...] = ()

    def to_frame(self) -> Any:
        """The frontier as a polars DataFrame: family, parameter, kappa, delta, loss,
        certified (at the target)."""
        import polars as pl

        rows = [
            {
                "family": c.family,
                "parameter": c.parameter,
                "kappa": c.kappa,
                "delta": c.delta,
                "loss": c.loss,
                "certified": c.certified,
            }
            for c in self.frontier
        ]
        schema = {
            "family": pl.String,
            "parameter": pl.Float64,
            "kappa": pl.Float64,
            "delta": pl.Float64,
            "loss": pl.Float64,
            "certified": pl.Boolean,
        }
        return pl.DataFrame(rows, schema=schema)

    def statement(self) -> str:
        """The choice in one sentence."""
        why = "; ".join(f"{c.family}: {c.reason}" for c in self.candidates if not c.certified)
        if self.best is None:
            return f"No certified mechanism meets κ ≤ {self.target_kappa:g}: {why}"
        b = self.best
        if b.family == "withhold":
            return f"Only withholding meets κ ≤ {self.target_kappa:g} at δ ≤ {self.delta:g}: {why}"
        what = b.family if b.parameter is None else f"{b.family} ({b.parameter:.6g})"
        if b.withheld:
            shown = ", ".join(b.withheld[:5])
            more = f" and {len(b.withheld) - 5} more" if len(b.withheld) > 5 else ""
            what += f" withholding {shown}{more}"
        return (
            f"Best certified mechanism for κ ≤ {self.target_kappa:g} at δ ≤ {self.delta:g}: "
            f"{what}, κ = {b.kappa:.4g}, {self.utility} = {b.loss:.6g}. "
            f"{b.reason[:1].upper()}{b.reason[1:]}."
        )

    def plot(self, ax: Any = None) -> Any:
        """κ against the utility loss for each certified family, the target and the best
        (matplotlib); returns the axes."""
        import matplotlib.pyplot as plt

        if ax is None:
            _, ax = plt.subplots(figsize=(6, 4))
        families = dict.fromkeys(c.family for c in self.frontier)
        for fam in families:
            pts = [c for c in self.frontier if c.family == fam and math.isfinite(c.kappa)]
            curve = [p for p in pts if p.parameter is not None]
            alone = [p for p in pts if p.parameter is None]  # a one-point member: a marker
            if len(curve) == 1:
                curve, alone = [], pts
            color = None
            if curve:
                (line,) = ax.plot([p.loss for p in curve], [p.kappa for p in curve], "-",
                                  label=fam)  # fmt: skip
                color = line.get_color()
            if alone:
                ax.plot([p.loss for p in alone], [p.kappa for p in alone], "o", color=color,
                        label=None if curve else fam)  # fmt: skip
        if math.isfinite(self.target_kappa):
            ax.axhline(self.target_kappa, color="grey", ls="--", lw=1, label="target κ")
        if self.best is not None:
            ax.plot([self.best.loss], [self.best.kappa], "k*", ms=12, label="best")
        ax.set_xlabel(self.utility)
        ax.set_ylabel("certified κ (nats)")
        ax.legend()
        return ax

    def to_html(self, setting: tuple[tuple[str, str], ...] = ()) -> str:
        """The report as one self-contained HTML page: the statement, what was asked, the
        families searched (certified or why not), the frontier table and its plot.

        ``setting`` adds rows to "What was asked" (e.g. the input file)."""
        from persuasive.choose.report import choice_html

        return choice_html(self, setting)

    def write_report(
        self, path: Any, *, force: bool = False, setting: tuple[tuple[str, str], ...] = ()
    ) -> dict[str, Any]:
        """Write ``report.html``, ``report.md`` and ``frontier.png`` into the folder ``path``,
        atomically (:class:`persuasive.files.output.OutputFolder`: a private temporary folder
        renamed into place; an existing folder is replaced only with ``force`` and only if
        persuasive wrote it). Returns the paths written."""
        from persuasive.choose.report import write_choice_report

        return write_choice_report(self, path, force=force, setting=setting)


def not_certified(family: str, reason: str, delta: float = 0.0) -> Candidate:
    """A family listed but not certified: κ and loss infinite, and why in one sentence."""
    return Candidate(family, None, math.inf, delta, math.inf, False, reason)


def withholding(loss: float) -> Candidate:
    """Releasing nothing: κ = 0 (always certified) at the stated loss."""
    return Candidate("withhold", None, 0.0, 0.0, loss, True, "nothing is released")


def best_of(candidates: tuple[Candidate, ...]) -> Candidate:
    """The certified candidate of least loss; on a tie a release beats withholding (it
    publishes something), then fewer parts withheld, then a plain family, then the smaller κ."""
    return min(
        (c for c in candidates if c.certified),
        key=lambda c: (
            c.loss,
            c.family == "withhold",
            len(c.withheld),
            c.family == "withhold_some",
            c.kappa,
        ),
    )
