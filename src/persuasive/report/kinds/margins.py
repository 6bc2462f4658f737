r"""The certificate of a count table released with exact margins (``docs/margins_release.md``).

Claim: the Receiver model and the class it defines once margins are out, the small-cell score,
h, r, the published margins, the target κ and the published column names — nothing from the
hidden counts. Everything else is recomputed **from the publication alone**, at release time
and by ``persuasive verify --published`` alike, by the same code:

1. read the published table and margins (:mod:`persuasive.report.margins_certificate`) and
   build a table consistent with them (an integer completion of the suppressed cells, by
   MILP);
2. compute :func:`persuasive.margins.worst_case_losses` on it: ``kappa_published`` of every
   suppressed cell is the exact supremum over the class *and* over every table consistent with
   the publication, so it does not depend on which completion was taken;
3. state the guarantee (κ = the largest ``kappa_published``; it holds when κ is at most the
   target and every component was computed exactly or a target was claimed; ``exact`` is false
   where a proven bound — the switching bound of ``docs/margins_bounds.md``, at worst the
   full-disclosure loss — stands in) and the per-cell section ``cells`` (``certified``: the
   cell's κ was computed exactly or, with the claim's target, its bound meets it).

Because the release computes the certificate from the files it wrote, exactly as the verifier
does, the two agree to the last bit.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from persuasive.errors import PersuasiveError, ValidationError
from persuasive.report.kinds import Body, Publication, names, need, not_met, number, one_file
from persuasive.report.kinds.margins_claim import (
    ABSENT_NOTES,
    HIERARCHY_NOTE,
    KNOWN_NOTE,
    MarginsParams,
    _absent,
    _hierarchy,
    _known,
    margin_words,
    margins_sentence,
)
from persuasive.report.margins_apriori import APRIORI_NOTE, apriori_claim, read_apriori

__all__ = ["KIND", "MarginsParams", "margin_words", "margins_sentence"]


class MarginsKind:
    """:class:`~persuasive.report.kinds.Kind` of a table with margins."""

    name: ClassVar[str] = "margins"
    needs_publication: ClassVar[bool] = True
    published: ClassVar[tuple[str, ...]] = ("released", "margins")
    inputs: ClassVar[tuple[str, ...]] = (
        "receiver",
        "h",
        "r",
        "margins",
        "columns",
        "target_kappa",
        "absent",
        "known",
        "hierarchy",
        "hierarchy_file",
        "plan",
        "apriori",
    )

    def parameters(self, claim: Mapping[str, Any]) -> MarginsParams:
        from persuasive.classes.receivers import receiver_from_dict
        from persuasive.files.reading import ROW
        from persuasive.margins.hrc_claim import read_claim
        from persuasive.report.margins_certificate import STATUS
        from persuasive.report.margins_plan import read_plan

        doc = {"claim": claim}
        try:
            receiver = receiver_from_dict(need(doc, "claim.receiver", dict))
        except ValidationError as exc:
            raise ValidationError(f"claim.receiver: {exc}") from None
        if not hasattr(receiver, "mean_max"):
            raise ValidationError(
                f"claim.receiver: the model {claim['receiver'].get('model')!r} has no finite κ "
                "once a margin is published"
            )
        margins = names(doc, "claim.margins")
        keys = names(doc, "claim.columns.keys")
        count = need(doc, "claim.columns.count", str)
        reserved = {ROW, STATUS, "margin", "total"}
        if not count or count in keys or reserved & {*keys, count}:
            raise ValidationError(
                f"claim.columns: the keys {list(keys)} and the count {count!r} must be distinct "
                f"column names, none of {sorted(reserved)}"
            )
        hierarchy = _hierarchy(claim, keys)
        return MarginsParams(
            receiver=receiver,
            h=need(doc, "claim.h", int),
            r=need(doc, "claim.r", int),
            margins=margins,
            keys=keys,
            count=count,
            target_kappa=number(doc, "claim.target_kappa", optional=True),
            absent=_absent(claim),
            known=_known(claim, keys),
            hierarchy=hierarchy,
            plan=read_plan(claim),
            apriori=read_apriori(claim, keys),
            hierarchy_file=read_claim(claim, hierarchy),
        )

    def claim(self, p: MarginsParams) -> dict[str, Any]:
        from persuasive.margins.hrc_claim import hrc_claim
        from persuasive.report.margins_certificate import margins_claim

        return {
            **margins_claim(
                p.receiver, h=p.h, r=p.r, margins=list(p.margins), target_kappa=p.target_kappa
            ),
            "columns": {"keys": list(p.keys), "count": p.count},
            "absent": p.absent,
            **({"known": [list(c) for c in p.known]} if p.known else {}),
            **({"hierarchy": list(p.hierarchy)} if p.hierarchy else {}),
            **hrc_claim(p.hierarchy_file),
            **({"plan": dict(p.plan)} if p.plan else {}),
            **apriori_claim(p.apriori),
        }

    def read_publication(self, p: MarginsParams, files: Mapping[str, Path]) -> Publication:
        from persuasive.report import margins_certificate as mc

        table_file = one_file(files, "released")
        margins_file = one_file(files, "margins")
        used = dict([table_file, margins_file])
        pub = mc.read_publication([table_file[1], margins_file[1]], p.keys, p.count)
        facts = {
            "sha256": pub.sha256(),
            "cells": pub.cells.height,
            "suppressed": int(pub.cells[mc.STATUS].is_not_null().sum()),
            "secondary": int((pub.cells[mc.STATUS] == "secondary").sum()),
        }
        if p.absent == "structural" or p.hierarchy:
            facts["structural_cells"] = mc.structural_count(pub)
        from persuasive.margins.hrc_claim import hrc_problems

        problems = hrc_problems(p.hierarchy_file, pub.cells, p.absent)
        payload: Any = None
        try:
            table, labels = mc.publication_table(
                pub,
                p.h,
                list(p.margins),
                known=p.known,
                hierarchy=p.hierarchy,
                absent=p.absent,
                apriori=p.apriori,
            )
            payload = (pub, table, labels)
        except PersuasiveError as exc:
            problems.append(
                f"publication: inconsistent with the claim: {' '.join(str(exc).split())}"
            )
        return Publication(used, facts, problems, payload)

    def certify(self, p: MarginsParams, publication: Publication | None = None) -> Body:
        from persuasive.margins import worst_case_losses
        from persuasive.report import margins_certificate as mc
        from persuasive.report.margins_plan import plan_notes, plan_section

        if publication is None or publication.payload is None:
            raise ValidationError(
                "a margins certificate is recomputed from its publication: pass the release "
                "folder, e.g. persuasive verify CERT.json --published DIR"
            )
        _, table, labels = publication.payload
        plan = plan_section(p, table)
        # with the claim's target, the switching bound certifies the cells of components too
        # large for the exact DP whose bound over every consistent table meets it
        worst = worst_case_losses(
            table, p.receiver, r=p.r, kappa=p.target_kappa, bound="publication"
        )
        pub_k = worst.kappa_published.ravel()
        exact = worst.computed_exactly.ravel()
        settled = worst.certified.ravel()  # exact, or kappa_published within the target
        switching = worst.switching
        sw = np.zeros(table.n_cells, bool) if switching is None else switching.ravel()
        disclosed = worst.disclosed.ravel()
        sec = table.secondary.ravel()
        cells = sorted(
            (
                {
                    "key": list(labels[i]),
                    "status": "secondary" if sec[i] else "primary",
                    "kappa_published": float(pub_k[i]),
                    "certified": bool(settled[i]),
                    "disclosed": bool(disclosed[i]) if exact[i] else None,
                }
                for i in table.suppressed_index
            ),
            key=lambda c: list(c["key"]),  # type: ignore[arg-type]
        )
        kappa = float(worst.max_published)
        certified = bool(exact.all())
        within = p.target_kappa is None or kappa <= p.target_kappa
        from persuasive.report.words import kappa_text, plural

        # kappa_published is a proven bound everywhere (exact, or the switching bound, at worst
        # the full-disclosure loss, where a component is too large): with a target it holds
        # when that bound meets it
        proven = certified or (p.target_kappa is not None and within)
        holds = proven and within and math.isfinite(kappa)
        n_disc = sum(c["disclosed"] is True for c in cells)
        text = margins_sentence(p, kappa, certified=proven, disclosed=n_disc)
        if proven:
            text += not_met(p.target_kappa, within)
        if not certified:
            big = table.suppressed.ravel() & ~exact
            n_big, n_sw = int(big.sum()), int((big & sw).sum())
            how = (
                "by what a Receiver gains by learning the count outright"
                if not n_sw
                else "by a proven bound on their posterior probability (the switching bound)"
                if n_sw == n_big
                else f"by a proven bound on their posterior probability (the switching bound) "
                f"for {n_sw} of them, and by what a Receiver gains by learning the count "
                "outright for the others"
            )
            text += (
                f" For {plural(n_big, 'suppressed cell')} the exact computation was too large: "
                f"their κ is bounded {how} (at most {kappa_text(kappa)} nats), a proof, not an "
                "estimate."
                if proven
                else f" The proven bound (a Receiver learning the count outright) is κ = "
                f"{kappa_text(kappa)} nats."
                if not n_sw
                else f" The proven bound (for {n_sw} of the {n_big} suppressed cells too large "
                "for the exact computation the switching bound on their posterior probability, "
                f"else a Receiver learning the count outright) is κ = {kappa_text(kappa)} nats."
            )
        return Body(
            guarantee={
                "holds": holds,
                "kappa": kappa,
                "delta": 0.0,
                "exact": certified,
                "basis": mc.BASIS,
                "statement": text,
            },
            notes=[
                *mc.NOTES,
                ABSENT_NOTES[p.absent],
                *([HIERARCHY_NOTE] if p.hierarchy else []),
                *([KNOWN_NOTE.format(n=len(p.known))] if p.known else []),
                *([APRIORI_NOTE.format(n=len(p.apriori))] if p.apriori else []),
                *plan_notes(p, plan),
            ],
            extra={"cells": cells, **plan},
        )


KIND = MarginsKind()
