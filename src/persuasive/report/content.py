"""What a report says, gathered once from a release and rendered as HTML or Markdown.

:func:`report_content` reads a release object by duck typing (``kind``, ``certificate``,
``spec``, ``summary()``, ``calibration_curve(...)``; for tables ``table``, ``receiver``, ``h``,
``r``; for means ``value``/``values`` and ``statement()``), draws every figure in memory and
returns a :class:`ReportContent`; nothing is written here, so a failure leaves no file.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import polars as pl

from persuasive.errors import ValidationError
from persuasive.report import plots
from persuasive.report.certificate import certificate_document, full_spec

#: Rows of the released table shown in the report.
PREVIEW_ROWS = 20

_KIND_LABELS = {
    "table": "a table of counts with small cells suppressed (Prop 8)",
    "mean": "the mean of a numeric column",
    "group_means": "one mean per group of a numeric column",
}


@dataclass(frozen=True)
class Figure:
    """One figure of the report: a file name, a caption and the PNG bytes."""

    name: str
    caption: str
    png: bytes


@dataclass(frozen=True)
class ReportContent:
    """Everything a report shows, rendered by :mod:`persuasive.report.html` and
    :mod:`persuasive.report.markdown`."""

    title: str
    kind: str
    sentence: str
    released: list[tuple[str, str]]
    certificate: list[tuple[str, str]]
    notes: list[str]
    figures: list[Figure]
    preview_columns: list[str] = field(default_factory=list)
    preview_rows: list[list[str]] = field(default_factory=list)
    preview_total: int = 0


def fmt(x: Any) -> str:
    """A number for humans: 6 significant digits, ``inf`` for infinity."""
    if isinstance(x, bool) or x is None:
        return {True: "yes", False: "no", None: "-"}[x]
    if isinstance(x, (int, np.integer)):
        return str(int(x))
    if isinstance(x, (float, np.floating)):
        return "inf" if math.isinf(x) else ("nan" if math.isnan(x) else f"{float(x):.6g}")
    return str(x)


def _percent(alpha: float) -> str:
    return f"{100 * alpha:.3g}%"


def _priors(spec: dict[str, Any]) -> dict[str, Any]:
    priors = spec.get("definition", {}).get("priors", {})
    return priors if isinstance(priors, dict) else {}


def plain_sentence(release: Any) -> str:
    """The guarantee in one plain sentence.

    For a table under the small-cell class 𝒞^{h,α} with proven κ::

        A Receiver whose prior puts at least 20% on small counts cannot raise its log-score
        on any small cell by more than 1.61 nats (a small count is one below 5).

    For a mean, ``release.statement()`` if the release has one.
    """
    cert = release.certificate
    if release.kind == "table":
        priors = _priors(release.spec)
        alpha, h = priors.get("alpha"), priors.get("h")
        if not math.isfinite(cert.kappa):
            return (
                f"No guarantee: the threshold does not cover every Receiver whose prior puts at "
                f"least {_percent(float(alpha or 0))} on counts below {h} (κ = ∞)."
            )
        return (
            f"A Receiver whose prior puts at least {_percent(float(alpha or 0))} on small counts "
            f"cannot raise its log-score on any small cell by more than {cert.kappa:.2f} nats "
            f"(a small count is one below {h})."
        )
    statement = getattr(release, "statement", None)
    if callable(statement):
        return str(statement())
    priors = _priors(release.spec)
    return (
        f"A Receiver whose Gaussian prior is in the class G^r (r1 = {fmt(priors.get('r1'))}, "
        f"r2 = {fmt(priors.get('r2'))}) cannot improve its Dawid-Sebastiani score of any "
        f"individual's value by more than {cert.kappa:.2f} nats."
    )


def _mechanism_text(mechanism: Any) -> str:
    """``chain(first=exact_mean(), post=gaussian(sigma=0.5))`` for a spec's mechanism table."""
    mech = dict(mechanism) if isinstance(mechanism, dict) else {}
    name = mech.pop("type", "?")
    args = ", ".join(
        f"{k}={_mechanism_text(v) if isinstance(v, dict) else fmt(v)}" for k, v in mech.items()
    )
    return f"{name}({args})"


def _released(release: Any) -> list[tuple[str, str]]:
    spec = full_spec(release)
    rows = [
        ("what", _KIND_LABELS.get(release.kind, str(release.kind))),
        ("mechanism", _mechanism_text(spec.get("mechanism"))),
    ]
    priors = _priors(spec)
    if priors:
        params = ", ".join(f"{k}={fmt(v)}" for k, v in sorted(priors.items()) if k != "class")
        rows.append(("prior class", f"{priors.get('class', '?')}({params})"))
    receiver = spec.get("receiver")
    if isinstance(receiver, dict):
        rows.append(("Receiver model", ", ".join(f"{k}={fmt(v)}" for k, v in receiver.items())))
    summary = release.summary() if callable(getattr(release, "summary", None)) else {}
    for attr in ("h", "r"):
        if release.kind == "table" and attr not in summary:
            rows.append((attr, fmt(getattr(release, attr, None))))
    if release.kind == "mean" and hasattr(release, "value") and "value" not in summary:
        rows.append(("released mean", fmt(release.value)))
    for key, value in dict(summary).items():
        if not isinstance(value, (dict, list, tuple, np.ndarray)):
            rows.append((str(key).replace("_", " "), fmt(value)))
    return rows


def _certificate_rows(release: Any) -> tuple[list[tuple[str, str]], list[str]]:
    doc = certificate_document(release)
    rows = [
        ("basis", doc["basis"]),
        ("κ (proven)", fmt(release.certificate.kappa)),
        ("δ", fmt(release.certificate.delta)),
        ("exact", "yes" if doc["exact"] else "no (an upper bound)"),
        ("spec SHA-256", doc["spec_sha256"]),
        ("library", f"{doc['library']['name']} {doc['library']['version']}"),
    ]
    return rows, list(doc["notes"])


def _calibration(release: Any, target_kappa: float | None) -> Figure:
    current: float | None
    if release.kind == "table":
        h = int(release.h)
        hs = np.arange(1, max(3 * h, 10) + 1)
        out = release.calibration_curve(hs)
        label, current = "threshold h", float(h)
    else:
        out = release.calibration_curve()
        noise = getattr(release, "noise", None)
        label = "noise / prior radius"
        current = float(noise[1]) if noise else getattr(release, "r1", None)
    xs, kappas = out[0], out[1]
    if len(out) > 2:
        label = str(out[2])
    png = plots.calibration_plot(
        xs, kappas, xlabel=label, current=current, target_kappa=target_kappa
    )
    return Figure("calibration.png", f"Calibration: the proven κ against the {label}.", png)


def _table_figures(release: Any) -> list[Figure]:
    table = release.table
    losses = table["loss"].to_numpy()
    kappa = float(release.certificate.kappa)
    figs = [
        Figure(
            "loss.png",
            "Per-cell relative loss under the worst prior in the class (counts on a log scale).",
            plots.loss_histogram(losses, kappa=kappa),
        )
    ]
    h = int(release.h)
    finite = np.where(np.isfinite(losses), losses, -np.inf)
    worst = int(np.argmax(finite)) if losses.size else 0
    keys = [c for c in _key_columns(release) if c in table.columns]
    cell = ", ".join(f"{k}={table[k][worst]}" for k in keys) if losses.size else ""
    law = release.receiver.worst_prior(h)
    upper = h + max(h, 10)
    if hasattr(law, "ppf"):  # show the bulk of a scipy law (99.9%), within reason
        upper = int(min(max(upper, float(law.ppf(0.999)) + 1), 10 * upper))
    support = np.arange(upper)
    pmf = law.pmf(support) if hasattr(law, "pmf") else np.asarray(law, dtype=float)[: support.size]
    figs.append(
        Figure(
            "worst_cell.png",
            f"The worst cell ({cell or 'any cell'}): the Receiver's prior against its posterior "
            "once the cell is suppressed.",
            plots.cell_prior_posterior_plot(pmf, h, cell=cell),
        )
    )
    return figs


def _mean_figures(release: Any) -> list[Figure]:
    priors = _priors(release.spec)
    kappa = float(release.certificate.kappa)
    if not (math.isfinite(kappa) and "r1" in priors and "r2" in priors):
        return []
    png = plots.gaussian_prior_posterior_plot(kappa, float(priors["r1"]), float(priors["r2"]))
    return [
        Figure(
            "worst_individual.png",
            "One standardised individual: the prior against the posterior of a Receiver "
            "attaining κ (an illustration of the worst case, not of the data).",
            png,
        )
    ]


def _key_columns(release: Any) -> list[str]:
    keys = getattr(release, "keys", None)
    if isinstance(keys, (list, tuple)) and all(isinstance(k, str) for k in keys):
        return list(keys)
    others = [c for c in release.table.columns if c not in ("suppressed", "loss")]
    return others[:-1]  # the count column is the last before the flags


def _preview(release: Any) -> tuple[list[str], list[list[str]], int]:
    table = release.table if release.kind == "table" else release.values
    head = table.head(PREVIEW_ROWS)
    rows = [["suppressed" if v is None else fmt(v) for v in row] for row in head.iter_rows()]
    return list(head.columns), rows, table.height


def report_content(release: Any, *, target_kappa: float | None = None) -> ReportContent:
    """Gather the text and draw the figures of a release's report (in memory).

    Parameters
    ----------
    release : release object
        A table, mean or group-means release (see the module docstring).
    target_kappa : float, optional
        The κ the Sender asked for, drawn on the calibration curve.

    Returns
    -------
    ReportContent
    """
    kind = getattr(release, "kind", None)
    if kind == "margins":  # a table with published totals: persuasive.report.margins
        from persuasive.report.margins import margins_report_content

        return margins_report_content(release, target_kappa=target_kappa)
    if kind not in _KIND_LABELS:
        raise ValidationError(
            f"release.kind must be one of {', '.join(map(repr, _KIND_LABELS))}; got {kind!r}"
        )
    figures = [_calibration(release, target_kappa)]
    columns: list[str] = []
    rows: list[list[str]] = []
    total = 0
    if kind == "table":
        figures.extend(_table_figures(release))
        columns, rows, total = _preview(release)
    else:
        figures.extend(_mean_figures(release))
        if kind == "group_means" and isinstance(getattr(release, "values", None), pl.DataFrame):
            columns, rows, total = _preview(release)
    cert_rows, notes = _certificate_rows(release)
    return ReportContent(
        title=f"Persuasive Privacy report: {_KIND_LABELS[kind]}",
        kind=kind,
        sentence=plain_sentence(release),
        released=_released(release),
        certificate=cert_rows,
        notes=notes,
        figures=figures,
        preview_columns=columns,
        preview_rows=rows,
        preview_total=total,
    )
