r"""The certificate of linear statistics (means and sums over subsets of one column).

Claim::

    {"spec": {"mechanism": {"type": "linear_statistics", "value": "...",
                            "statistics": [{"name", "kind", "where"}, ...],
                            "withheld": [...], "noise": {"type": "gaussian", "sigma": s} or null},
              "definition": {"kind": "pp", "kappa": K or "inf", "delta": δ,
                             "scores": [{"type": "marginal_dss"}],
                             "priors": {"class": "linear_gaussian", "r1", "r2",
                                        ["max_stat_sd"]}}},
                                        # or {"class": "bounded_error_linear", ...,
                                        #     "max_person_error": r0}
     "design": {"n": n, "encoding": "...", "statistics": [{"name", "rows", "members"}, ...]},
     "target_kappa": K or null}

**What the design is, and why the certificate carries it.** The statistics are
:math:`T = A x`: row j of A is :math:`1/n_j` (a mean) or 1 (a sum) on the :math:`n_j` records
statistic j covers. Which records a statistic covers is part of the *query* — it follows from
its WHERE clause and the covariates it names — not of the sensitive values x, and the
guarantee (``docs/linear.md``) is stated for a Receiver who knows the mechanism, hence A: the
class :math:`\mathcal G^r_A` and every individual's posterior are functions of A. Whether
someone is exposed (:math:`A^\top c = e_i`) and, with noise, κ itself depend on A, so a
certificate that can be re-checked must state it. ``design.statistics[j].members`` is the set
of covered records as a bitmap (one bit per record, in row order, little-endian,
zlib-compressed, base64). It reveals which rows the WHERE clauses select — the covariates the
clauses name are treated as public, as the model assumes — and nothing of the value column.

Recomputed: A from the design — by its column patterns (records covered by the same
statistics share a column of A), never as a dense k × n matrix — who it exposes (an exposed
individual means no finite κ, and the release refuses), and the guarantee by
:func:`persuasive.certify` of ``LinearGaussian.from_patterns(A's patterns, s²)`` under the
class — :class:`~persuasive.linear.LinearGaussianClass`, or with ``max_person_error`` (r0)
:class:`~persuasive.linear.bounded_error.BoundedErrorLinearClass` (``docs/linear_bounded.md``),
rebuilt from the claim so a changed or removed r0 is recomputed; old claims (without it) read
as the linear class and verify unchanged. The bitmaps are inputs: each must decode to n bits
(one whole zlib stream, nothing after it) and is stated back as written, so the zlib level is
not part of the claim (writers use :data:`ZLIB_LEVEL`; certificates written at level 9 verify
unchanged).

Publication: ``released.csv`` / ``.parquet`` (name, kind, where, value); a verifier checks
its statistics are the claim's, in order, with finite values.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
import polars as pl

from persuasive.errors import ValidationError
from persuasive.report.kinds import (
    Body,
    Publication,
    certified,
    holds_of,
    need,
    not_met,
    number,
    one_file,
)
from persuasive.report.kinds.linear_params import (
    ENCODING,
    ZLIB_LEVEL,
    LinearParams,
    decode_members,
    encode_members,
)
from persuasive.report.words import plural

__all__ = [
    "ENCODING",
    "KIND",
    "ZLIB_LEVEL",
    "LinearParams",
    "decode_members",
    "encode_members",
    "linear_sentence",
]


def _these(k: int) -> str:
    return "this linear statistic" if k == 1 else f"these {k} linear statistics"


def sds_words(r0: float) -> str:
    """``r0`` prior standard deviation(s) in words, the noun agreeing with the number shown.

    >>> sds_words(1.0), sds_words(0.5)
    ('1 prior standard deviation', '0.5 prior standard deviations')
    """
    from persuasive.report.words import number

    shown = number(r0)
    return f"{shown} prior standard deviation{'' if shown == '1' else 's'}"


def linear_sentence(p: LinearParams, kappa: float, delta: float, basis: str) -> str:
    """The guarantee of linear statistics in plain words: who is covered, κ with its unit, and
    one line saying what the unit means (no symbol, class name or formula); the sentence ends
    before the target clause (:func:`persuasive.report.kinds.not_met`)."""
    from persuasive.report.kinds.mean import gaussian_receiver
    from persuasive.report.words import kappa_text, number, proof_words, unit_line

    how = (
        "exactly"
        if p.noise_sd is None
        else f"with Gaussian noise of standard deviation {number(p.noise_sd)} added to each"
    )
    v_part = (
        f", whose prior standard deviation of each statistic is at most {number(p.max_stat_sd)}"
        if p.max_stat_sd is not None
        else ""
    )
    if p.max_person_error is not None:
        v_part += f", who is at most {sds_words(p.max_person_error)} wrong about any one person"
    of = "the statistic" if len(p.statistics) == 1 else "the statistics"
    who = gaussian_receiver(
        p.r1,
        p.r2,
        of=of,
        balance=f"the largest eigenvalue of the prior correlation matrix is at most {number(p.r2)}"
        f" × (the smallest share of a person's prior variance that {of} would leave unexplained "
        "if people were independent) times the smallest",
        max_sd=v_part,
    )
    prob = "" if delta == 0 else f", except with probability at most {number(delta)}"
    # proof_words names the linear extension alone; say which of its two theorems it is
    return (
        f"Publishing {_these(len(p.statistics))} of “{p.value}” {how} protects every individual "
        f"against {who}. Such a Receiver's Dawid–Sebastiani score (a score of a belief's mean "
        f"and variance) of any one person's value improves by at most κ = {kappa_text(kappa)} "
        f"nats{prob}: "
        + unit_line(
            kappa, what="that person's true value", density=True, believed="such a Receiver"
        )
        + f". Proof: {proof_words(basis)}."
    )


def _bounded_claim_complete(has_r0: bool, has_v: bool, noisy: bool) -> None:
    """A claim of the bounded-error class states r0, and V with noise (the release refuses
    noise under that class without V): a ValidationError naming the missing field."""
    where = "claim.spec.definition.priors"
    if not has_r0:
        raise ValidationError(
            f"{where}.max_person_error: missing; the class bounded_error_linear states r0"
        )
    if noisy and not has_v:
        raise ValidationError(
            f"{where}.max_stat_sd: missing; noise under the class bounded_error_linear is "
            "certified only with V (without it noise cannot certify below the exact statistics)"
        )


class LinearKind:
    """:class:`~persuasive.report.kinds.Kind` of linear statistics."""

    name: ClassVar[str] = "linear"
    needs_publication: ClassVar[bool] = False
    published: ClassVar[tuple[str, ...]] = ("released",)
    inputs: ClassVar[tuple[str, ...]] = (
        "spec.mechanism.value",
        "spec.mechanism.statistics",
        "spec.mechanism.withheld",
        "spec.mechanism.noise",
        "spec.definition.priors",
        "spec.definition.delta",
        "design.n",
        "design.statistics",
        "target_kappa",
    )

    def parameters(self, claim: Mapping[str, Any]) -> LinearParams:
        doc = {"claim": claim}
        mech = "claim.spec.mechanism"
        stats = need(doc, f"{mech}.statistics", list)
        triples = tuple(
            (
                need(doc, f"{mech}.statistics.{j}.name", str),
                need(doc, f"{mech}.statistics.{j}.kind", str),
                need(doc, f"{mech}.statistics.{j}.where", str),
            )
            for j in range(len(stats))
        )
        withheld = need(doc, f"{mech}.withheld", list)
        noise = need(doc, f"{mech}.noise", dict, optional=True)
        sd = None if noise is None else number(doc, f"{mech}.noise.sigma")
        n = need(doc, "claim.design.n", int)
        design = need(doc, "claim.design.statistics", list)
        if len(design) != len(triples):
            raise ValidationError(
                f"claim.design.statistics: {len(design)} entries for {len(triples)} statistics"
            )
        texts = tuple(
            need(doc, f"claim.design.statistics.{j}.members", str) for j in range(len(design))
        )
        members = tuple(
            decode_members(text, n, where=f"claim.design.statistics[{j}].members")
            for j, text in enumerate(texts)
        )
        priors = "claim.spec.definition.priors"
        stated = need(doc, priors, dict)
        has_v, has_r0 = "max_stat_sd" in stated, "max_person_error" in stated
        if stated.get("class") == "bounded_error_linear":  # what its release always states
            _bounded_claim_complete(has_r0, has_v, sd is not None)
        return LinearParams(
            value=need(doc, f"{mech}.value", str),
            statistics=triples,
            withheld=tuple(str(w) for w in withheld),
            members=members,
            n=n,
            r1=number(doc, f"{priors}.r1") or 0.0,
            r2=number(doc, f"{priors}.r2") or 0.0,
            noise_sd=sd,
            max_stat_sd=number(doc, f"{priors}.max_stat_sd") if has_v else None,
            delta=number(doc, "claim.spec.definition.delta") or 0.0,
            target_kappa=number(doc, "claim.target_kappa", optional=True),
            max_person_error=number(doc, f"{priors}.max_person_error") if has_r0 else None,
            encoded=texts,
        )

    def claim(self, p: LinearParams) -> dict[str, Any]:
        bounded = p.max_person_error is not None
        priors: dict[str, Any] = {
            "class": "bounded_error_linear" if bounded else "linear_gaussian",
            "r1": p.r1,
            "r2": p.r2,
        }
        if p.max_stat_sd is not None:
            priors["max_stat_sd"] = p.max_stat_sd
        if bounded:
            priors["max_person_error"] = p.max_person_error
        return {
            "spec": {
                "mechanism": {
                    "type": "linear_statistics",
                    "value": p.value,
                    "statistics": [{"name": a, "kind": b, "where": c} for a, b, c in p.statistics],
                    "withheld": list(p.withheld),
                    "noise": None
                    if p.noise_sd is None
                    else {"type": "gaussian", "sigma": p.noise_sd},
                },
                "definition": {
                    "kind": "pp",
                    "kappa": math.inf if p.target_kappa is None else p.target_kappa,
                    "delta": p.delta,
                    "scores": [{"type": "marginal_dss"}],
                    "priors": priors,
                },
            },
            "design": {
                "n": p.n,
                "encoding": ENCODING,
                "statistics": [
                    {"name": s[0], "rows": int(np.count_nonzero(m)), "members": text}
                    for s, m, text in zip(p.statistics, p.members, p.texts, strict=True)
                ],
            },
            "target_kappa": p.target_kappa,
        }

    def certify(self, p: LinearParams, publication: Publication | None = None) -> Body:
        import persuasive as pp

        exposed = p.exposures
        basis = "docs/linear.md (Prop 7 generalised to linear statistics, Bon et al. 2026)"
        if exposed:
            who = "; ".join(e.describe() for e in exposed[:3])
            return Body(
                guarantee={
                    "holds": False,
                    "kappa": math.inf,
                    "delta": p.delta,
                    "exact": True,
                    "basis": basis,
                    "statement": f"No guarantee: the statistics reveal "
                    f"{plural(len(exposed), 'individual')} exactly, whatever the Receiver's "
                    f"Gaussian prior ({who}).",
                },
                notes=[],
            )
        cls = p.receivers()
        mech = p.mechanism()
        kappa = math.inf if p.target_kappa is None else p.target_kappa
        cert = pp.certify(mech, pp.PersuasivePrivacy(pp.MarginalDSS(), cls, kappa, p.delta))
        holds = holds_of(cert)
        text = linear_sentence(p, cert.kappa, cert.delta, cert.basis)
        return certified(
            cert,
            text + not_met(p.target_kappa, holds),
            [
                "The certificate states which records each statistic covers: "
                "that is part of the query, which the Receiver is assumed to know; the value "
                "column is not in it."
            ],
        )

    def read_publication(self, p: LinearParams, files: Mapping[str, Path]) -> Publication:
        from persuasive.files.reading import real_expr, scan

        name, path = one_file(files, "released")
        frame = scan(path, text=["name", "kind", "where", "value"], role="published statistics")
        schema = frame.collect_schema()
        want = ["name", "kind", "where", "value"]
        if list(schema.names()) != want:
            return Publication(
                {name: path},
                {},
                [
                    f"publication: {name} has columns {list(schema.names())}; the certificate "
                    f"states {want}"
                ],
            )
        rows = frame.select(
            pl.col("name").cast(pl.String),
            pl.col("kind").cast(pl.String),
            pl.col("where").cast(pl.String),
            real_expr("value", schema["value"]).alias("value"),
        ).collect()
        problems = []
        stated = [tuple(r) for r in rows.select("name", "kind", "where").iter_rows()]
        if stated != list(p.statistics):
            problems.append(
                "publication: the published statistics (name, kind, where) are not the claim's, "
                "in order"
            )
        bad = rows.filter(~pl.col("value").is_finite().fill_null(False))
        if bad.height:
            problems.append(
                f"publication: statistic {bad['name'][0]!r} has value {bad['value'][0]!r}, not a "
                "finite number"
            )
        return Publication({name: path}, {"statistics": rows.height}, problems)


KIND = LinearKind()
