r"""Plain words for guarantees: what a reader who never heard of the framework can follow.

Every release kind states its guarantee in one paragraph (``guarantee.statement`` of the
certificate, printed by the CLI, shown at the top of every report). The pieces here keep those
paragraphs free of internal symbols — no ``_`` or ``^``, no class names, no formulas — and make
each state κ once, with its unit, and one line saying what the unit means:

* for the **log score** (count tables, with or without margins) the relative score is
  :math:`\log q_T(x) - \log q(x)`, so κ nats bound the factor by which the release multiplies
  the probability a Receiver gives to the true value: at most :math:`e^\kappa`;
* for the **Dawid–Sebastiani score** (means, linear statistics) of a Gaussian belief,
  :math:`D = \log\sigma^2 + (x-\mu)^2/\sigma^2 = -2\log\varphi_{\mu,\sigma}(x) - \log 2\pi`, so
  κ nats bound the factor by which the release multiplies the probability *density* the
  Receiver puts on the true value: at most :math:`e^{\kappa/2}` (the priors of these classes
  are Gaussian and so are their posteriors, so this reading is exact; docs/math.md §8).

:func:`guarantee_sentence` returns the plain-words guarantee of a certificate document.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from typing import Any

__all__ = [
    "explain_certificate",
    "factor",
    "guarantee_sentence",
    "kappa_text",
    "number",
    "percent",
    "plural",
    "proof_words",
    "receiver_words",
    "unit_line",
]


def number(x: float) -> str:
    """A parameter as a person writes it: ``1``, ``0.5``, ``40``, ``1e-06`` → ``0.000001``.

    Examples
    --------
    >>> number(1.0), number(0.5), number(40.0), number(2.5e-7), number(1234567.0)
    ('1', '0.5', '40', '0.00000025', '1234567')
    >>> number(4.25e-15), number(1e20), number(-2.5e17)
    ('0.00000000000000425', '1e+20', '-2.5e+17')
    """
    x = float(x)
    if not math.isfinite(x):
        return "infinity" if x > 0 else "minus infinity"
    if x == int(x) and abs(x) < 1e15:
        return str(int(x))
    text = f"{x:.6g}"
    if abs(x) >= 1e15:  # 1e+20: written out it would be 21 digits, most of them not known
        return text
    if "e" in text:  # no exponent notation: as many decimals as 6 significant digits need
        decimals = max(0, 5 - math.floor(math.log10(abs(x))))
        text = f"{x:.{decimals}f}".rstrip("0").rstrip(".")
    return text


def percent(p: float) -> str:
    """A share as a percentage with 3 significant digits: ``0.218802`` → ``21.9 %``.

    Examples
    --------
    >>> percent(0.218802), percent(0.2), percent(1.0), percent(0.000123)
    ('21.9 %', '20 %', '100 %', '0.0123 %')
    """
    return f"{number(float(f'{100 * float(p):.3g}'))} %"


def kappa_text(kappa: float) -> str:
    """κ as every statement prints it: 4 significant digits (``1.52``, ``2.386``), or ∞."""
    if math.isinf(kappa):
        return "∞"
    text = f"{kappa:.4g}"
    return number(float(text)) if "e" in text else text


def factor(x: float) -> str:
    """A multiplicative factor ≥ 1 with 2 significant digits and no exponent notation:
    ``3.32`` → ``3.3``, ``68.2`` → ``68``, ``22026`` → ``22,000``, ``5.8e9`` → ``5.8 billion``.

    Examples
    --------
    >>> factor(3.32), factor(1.0), factor(68.2), factor(22026.0), factor(9.96)
    ('3.3', '1.0', '68', '22,000', '10')
    >>> factor(5.77e9), factor(1.2e6), factor(3e20)
    ('5.8 billion', '1.2 million', 'more than a thousand trillion')
    """
    if not math.isfinite(x):
        return "∞"
    rounded = float(f"{x:.2g}")
    if rounded < 10:
        return f"{rounded:.1f}"
    if rounded < 1e6:
        return f"{rounded:,.0f}"
    for size, name in ((1e12, "trillion"), (1e9, "billion"), (1e6, "million")):
        if size <= rounded < 1000 * size:
            return f"{number(float(f'{rounded / size:.2g}'))} {name}"
    return "more than a thousand trillion"


def _exp(x: float) -> float:
    """``e**x``, a finite stand-in beyond the float range (math.exp raises there): ``factor``
    writes it "more than a thousand trillion"; an infinite x stays infinite (∞)."""
    if math.isinf(x):
        return x if x > 0 else 0.0
    return math.exp(min(x, 700.0))


def unit_line(kappa: float, *, what: str, density: bool = False, believed: str = "") -> str:
    """The line that explains κ's unit, with the factor computed; a statement writes it right
    after κ: ``"… κ = 1.2 nats: " + unit_line(1.2, …)``.

    Parameters
    ----------
    kappa : float
        The certified κ (finite, ≥ 0).
    what : str
        What the probability (or density) is put on: ``"the true count of such a cell"``.
    density : bool
        The Dawid–Sebastiani score of a Gaussian belief: the factor is e to the power κ/2 and
        bounds a probability density.
    believed : str
        Who the Receivers are (default ``"a Receiver of this kind"``).

    Examples
    --------
    >>> unit_line(1.2, what="the true count")  # doctest: +NORMALIZE_WHITESPACE
    'whatever a Receiver of this kind believed beforehand, the release multiplies the
    probability they give to the true count by at most 3.3 (e to the power κ)'
    """
    who = believed or "a Receiver of this kind"
    if density:
        return (
            f"whatever {who} believed beforehand, the release multiplies the probability density "
            f"they put on {what} by at most {factor(_exp(kappa / 2))} (e to the power κ/2: "
            "for a Gaussian belief this score is twice the negative log density, up to a "
            "constant)"
        )
    return (
        f"whatever {who} believed beforehand, the release multiplies the probability they give "
        f"to {what} by at most {factor(_exp(kappa))} (e to the power κ)"
    )


def plural(n: int, word: str, many: str | None = None) -> str:
    """``1 cell``, ``2 cells``, ``0 cells`` (``many`` for an irregular plural).

    Examples
    --------
    >>> plural(1, "value"), plural(3, "value"), plural(2, "child", "children")
    ('1 value', '3 values', '2 children')
    """
    return f"{n} {word if n == 1 else (many or word + 's')}"


def receiver_words(receiver: Mapping[str, Any], h: int | None = None) -> str:
    """A Receiver model (its ``describe()`` dictionary) in words, for "against …".

    Examples
    --------
    >>> receiver_words({"model": "poisson", "mean_min": 0.5, "mean_max": 3.0})
    'a Receiver whose prior for each cell is Poisson with mean between 0.5 and 3'
    >>> receiver_words({"model": "small_cell", "alpha": 0.2}, h=10)
    'a Receiver whose prior for each cell puts at least 20 % on counts below 10'
    """
    model = receiver.get("model")
    if model == "small_cell":
        below = f"counts below {h}" if h is not None else "small counts"
        return (
            f"a Receiver whose prior for each cell puts at least "
            f"{percent(receiver['alpha'])} on {below}"
        )
    lo, hi = number(receiver["mean_min"]), number(receiver["mean_max"])
    if model == "poisson":
        return f"a Receiver whose prior for each cell is Poisson with mean between {lo} and {hi}"
    return (
        "a Receiver whose prior for each cell is negative binomial with mean between "
        f"{lo} and {hi} and dispersion size {number(receiver['size'])}"
    )


def proof_words(basis: str) -> str:
    """The proof a certificate rests on (its ``basis``), in words, without file paths.

    Examples
    --------
    >>> proof_words("Prop 7 (Bon et al. 2026)")
    'Bon et al. 2026, Proposition 7'
    >>> proof_words("Prop 6 + privacy-loss distribution (tight composition, docs/pld.md)")
    'Prop 6 + privacy-loss distribution (tight composition)'
    >>> proof_words("Linear statistics, bounded error on every person (persuasive extension "
    ...             "of Prop 7, Bon et al. 2026, docs/linear_bounded.md)")[-34:]
    'with bounded error on every person'

    """
    if basis.startswith("Prop 7 with noise"):
        return "this library's extension of Bon et al. 2026, Proposition 7, to Gaussian noise"
    if basis.startswith("Prop 7 with bounded error"):
        return (
            "this library's extension of Bon et al. 2026, Proposition 7, to Receivers with "
            "bounded error on every person"
        )
    if basis.startswith("Linear statistics, bounded error"):
        return (
            "this library's extension of Bon et al. 2026, Proposition 7, to linear statistics, "
            "with bounded error on every person"
        )
    if basis.startswith("Linear statistics"):
        return "this library's extension of Bon et al. 2026, Proposition 7, to linear statistics"
    plain = re.fullmatch(r"Prop (\d+) \(Bon et al\. 2026\)", basis)
    if plain:
        return f"Bon et al. 2026, Proposition {plain.group(1)}"
    basis = re.sub(r"\s*\(docs/[\w./#-]+\)", "", basis)
    return re.sub(r"[,;]\s*docs/[\w./#-]+", "", basis).replace("_", " ")


#: Scores whose relative score is a log-probability ratio, and those of the Dawid–Sebastiani
#: family (twice a log-density ratio for Gaussian beliefs), as :meth:`Score.describe` names them.
_LOG_SCORES = frozenset({"LogScore", "SmallCellLogScore"})
_DSS_SCORES = frozenset({"DawidSebastiani", "MarginalDSS"})


def explain_certificate(cert: Any) -> str:
    """:meth:`persuasive.results.Certificate.explain`: the verdict, what is proven (κ with its
    unit and δ), and what κ means for the certificate's score.

    Examples
    --------
    >>> import persuasive as pp
    >>> d = pp.PersuasivePrivacy(pp.MarginalDSS(), pp.GaussianMeanClass(1.0, 4.0), kappa=2.4)
    >>> print(pp.certify(pp.ExactMean(), d).explain())  # doctest: +NORMALIZE_WHITESPACE
    The guarantee holds. Whatever a Receiver in the class believed beforehand, the release
    improves its score on the true data by at most κ = 2.386 nats, always; this is exact: some
    Receiver in the class attains it. For this score that means: for a Gaussian belief, the
    release multiplies the probability density the Receiver puts on the true value by at most
    3.3 (e to the power κ/2). Proof: Bon et al. 2026, Proposition 7.
    """
    verdict = "holds" if cert.holds else "does NOT hold (κ is above the one asked for)"
    proof = f" Proof: {proof_words(str(cert.basis))}."
    if not math.isfinite(cert.kappa):
        return f"The guarantee {verdict}: no finite κ is proven (κ = ∞).{proof}"
    when = "always" if cert.delta == 0 else f"except with probability at most {number(cert.delta)}"
    how = (
        "this is exact: some Receiver in the class attains it"
        if cert.exact
        else "this is an upper bound: the true worst case may be smaller"
    )
    text = (
        f"The guarantee {verdict}. Whatever a Receiver in the class believed beforehand, the "
        f"release improves its score on the true data by at most κ = {kappa_text(cert.kappa)} "
        f"nats, {when}; {how}."
    )
    listed = (cert.definition or {}).get("scores") or []
    scores = {str(s.get("score")) for s in listed if isinstance(s, Mapping)}
    if scores and scores <= _LOG_SCORES:
        text += (
            " For this score that means: the release multiplies the probability the Receiver "
            f"gives to the true value by at most {factor(_exp(cert.kappa))} (e to the power "
            "κ)."
        )
    elif scores and scores <= _DSS_SCORES:
        text += (
            " For this score that means: for a Gaussian belief, the release multiplies the "
            "probability density the Receiver puts on the true value by at most "
            f"{factor(_exp(cert.kappa / 2))} (e to the power κ/2)."
        )
    return text + proof


def guarantee_sentence(doc: Mapping[str, Any]) -> str:
    """The plain-words guarantee of a certificate document (``certificate.json`` as a dict).

    It is the document's ``guarantee.statement``: each kind writes it in words
    (:mod:`persuasive.report.kinds`), and ``persuasive verify`` recomputes it, so a verified
    certificate's sentence is the one its kind's code gives.

    Examples
    --------
    >>> guarantee_sentence({"guarantee": {"statement": "A sentence."}})
    'A sentence.'
    """
    return str(doc["guarantee"]["statement"])
