r"""Verify a margins certificate from the published files alone.

``persuasive verify CERT.json --published DIR`` (:func:`persuasive.report.verify
.verify_certificate` dispatches here on ``"format": "persuasive-margins-certificate"``):

1. read the published table and margins (:func:`~persuasive.report.margins_certificate
   .read_publication`) and check the SHA-256 of the canonical publication;
2. rebuild the Receiver model from ``claim.receiver`` and a table consistent with the
   publication — an integer completion of the suppressed cells with every published margin
   met (:func:`~persuasive.report.margins_certificate.publication_table`);
3. recompute :func:`persuasive.margins.worst_case_losses` on it and rebuild the whole document
   (:func:`~persuasive.report.margins_certificate.certificate_document`); ``kappa_published``
   does not depend on the completion (it is a maximum over every value the publication leaves
   possible);
4. compare the stated document with the recomputed one field by field (numbers within
   ``persuasive._tolerances.LOSS_ATOL``) and name every field that differs, e.g.
   ``guarantee.kappa_published``, ``claim.class``, ``publication.sha256`` or
   ``cells[religious=4, occupation=1].kappa_published``.

Nothing but the publication and the certificate is read: no hidden count is needed.
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from persuasive import _tolerances as tol
from persuasive.errors import PersuasiveError, ValidationError
from persuasive.report import margins_certificate as mc

__all__ = ["MarginsVerification", "verify_margins"]

#: Fields not compared: the library version may differ between release and verification.
IGNORED = ("library",)


@dataclass(frozen=True)
class Recomputed:
    """The recomputed certificate document (``to_dict()`` gives it)."""

    document: dict[str, Any]

    def to_dict(self) -> dict[str, Any]:
        return self.document


@dataclass(frozen=True)
class MarginsVerification:
    """The outcome of :func:`verify_margins` (the shape of
    :class:`persuasive.report.verify.Verification`)."""

    ok: bool
    mismatches: tuple[str, ...]
    recomputed: Recomputed | None

    def explain(self) -> str:
        if self.ok:
            assert self.recomputed is not None
            g = self.recomputed.document["guarantee"]
            return (
                "verified: the margins certificate holds as stated for the published table "
                f"(kappa_published = {_fmt(g['kappa_published'])}, certified = "
                f"{str(g['certified']).lower()}; {mc.BASIS})"
            )
        return "NOT verified:\n" + "\n".join(f"- {m}" for m in self.mismatches)


def _fmt(x: Any) -> str:
    if isinstance(x, float):
        return "inf" if math.isinf(x) else f"{x:.7g}"
    return repr(x) if isinstance(x, str) else str(x)


def _check_structure(doc: Mapping[str, Any]) -> None:
    version = doc.get("format_version")
    if isinstance(version, bool) or version not in mc.SUPPORTED_VERSIONS:
        raise ValidationError(
            f"format_version {version!r} of the margins certificate is not supported; this "
            f"version of persuasive reads {', '.join(map(str, mc.SUPPORTED_VERSIONS))}"
        )
    for key in mc.REQUIRED:
        if key not in doc:
            raise ValidationError(f"certificate field '{key}' is missing")
    for key in ("claim", "publication", "guarantee"):
        if not isinstance(doc[key], dict):
            raise ValidationError(f"{key} must be a JSON object; got {doc[key]!r:.80}")
    pub = doc["publication"]
    keys = pub.get("keys")
    if not (isinstance(keys, list) and keys and all(isinstance(k, str) for k in keys)):
        raise ValidationError(f"publication.keys must be a list of column names; got {keys!r}")
    if not isinstance(pub.get("count"), str):
        raise ValidationError(f"publication.count must be a column name; got {pub.get('count')!r}")


def _equal(a: Any, b: Any) -> bool:
    if isinstance(a, bool) or isinstance(b, bool) or a is None or b is None:
        return a is b or (a == b and type(a) is type(b))
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return abs(float(a) - float(b)) <= tol.LOSS_ATOL or float(a) == float(b)
    return bool(a == b)


def _cell_name(keys: Sequence[str], label: Any) -> str:
    if isinstance(label, list) and len(label) == len(keys):
        return ", ".join(f"{k}={v}" for k, v in zip(keys, label, strict=True))
    return repr(label)


def _by_key(cells: Any) -> dict[str, Any]:
    if not isinstance(cells, list):
        return {"?": cells}
    return {repr(c.get("key")) if isinstance(c, dict) else repr(c): c for c in cells}


def _diff(stated: Any, want: Any, path: str, keys: Sequence[str], out: list[str]) -> None:
    if path == "cells":
        s, w = _by_key(stated), _by_key(want)
        for k in sorted(set(s) | set(w)):
            entry = w.get(k, s.get(k))
            label = entry.get("key") if isinstance(entry, dict) else k
            where = f"cells[{_cell_name(keys, label)}]"
            if k not in w:
                out.append(f"{where}: stated, but not a suppressed cell of the publication")
            elif k not in s:
                out.append(f"{where}: suppressed in the publication, missing from the certificate")
            else:
                _diff(s[k], w[k], where, keys, out)
        return
    if isinstance(stated, dict) and isinstance(want, dict):
        for k in sorted(set(stated) | set(want)):
            sub = f"{path}.{k}" if path else k
            if not path and k in IGNORED:
                continue
            if k not in want:
                out.append(f"{sub}: stated, but not part of a margins certificate")
            elif k not in stated:
                out.append(f"{sub}: missing (recomputed {_fmt(want[k])})")
            else:
                _diff(stated[k], want[k], sub, keys, out)
        return
    if isinstance(stated, list) and isinstance(want, list) and len(stated) == len(want):
        for i, (a, b) in enumerate(zip(stated, want, strict=True)):
            _diff(a, b, f"{path}[{i}]", keys, out)
        return
    if not _equal(stated, want):
        hint = _HINTS.get(path.rsplit(".", 1)[-1], "")
        out.append(f"{path}: stated {_fmt(stated)}, recomputed {_fmt(want)}{hint}")


_HINTS = {
    "kappa_published": " (κ edited, or the class or the publication changed?)",
    "sha256": " (a published count, total or status was edited after certification)",
    "claim_sha256": " (the claim was edited after certification)",
    "class": " (the Receiver class was edited)",
}


def verify_margins(
    doc: Mapping[str, Any],
    published: str | os.PathLike[str] | Sequence[str | os.PathLike[str]] | None,
) -> MarginsVerification:
    """Recompute a margins certificate from the published files and compare field by field.

    Parameters
    ----------
    doc : mapping
        The parsed certificate (``"format": "persuasive-margins-certificate"``).
    published : path or sequence of paths
        The release folder (``released.*`` and ``margins.*``) or the two files.

    Returns
    -------
    MarginsVerification
        ``ok`` only if every stated field equals the recomputed one; ``mismatches`` names
        each field that differs (or what makes the publication inconsistent).

    Raises
    ------
    ValidationError
        A malformed certificate, no ``published`` given, or unreadable published files.
    """
    from persuasive.classes.receivers import receiver_from_dict
    from persuasive.margins import worst_case_losses

    if published is None or (not isinstance(published, (str, os.PathLike)) and not published):
        raise ValidationError(
            "a margins certificate is checked against the publication: pass the release "
            "folder or its published files, e.g. persuasive verify CERT.json --published DIR"
        )
    _check_structure(doc)
    claim, pub_doc = doc["claim"], doc["publication"]
    keys = list(pub_doc["keys"])
    out: list[str] = []
    if doc["claim_sha256"] != mc.spec_sha256(claim):
        out.append(
            f"claim_sha256: stated {str(doc['claim_sha256'])[:16]}... is not the hash of the "
            "claim: the claim was edited after certification"
        )
    pub = mc.read_publication(published, keys, pub_doc["count"])
    if pub_doc.get("sha256") != pub.sha256():
        out.append(
            f"publication.sha256: stated {str(pub_doc.get('sha256'))[:16]}... but the published "
            f"files hash to {pub.sha256()[:16]}...: a published count, total or status was "
            "edited after certification (or these are not the certified files)"
        )
    try:
        receiver = receiver_from_dict(claim.get("receiver", {}))
        if not hasattr(receiver, "mean_max"):
            raise ValidationError(
                f"the model {claim['receiver'].get('model')!r} has no finite κ with margins "
                "(κ = ∞ once a margin is published)"
            )
        h, r = claim.get("h"), claim.get("r")
        margins = claim.get("margins")
        if not isinstance(margins, list) or not margins:
            raise ValidationError(f"claim.margins must be a non-empty list; got {margins!r}")
        target = claim.get("target_kappa")
        want_claim = mc.margins_claim(receiver, h=h, r=r, margins=margins, target_kappa=target)
    except (PersuasiveError, TypeError, ValueError) as exc:
        out.append(f"claim: cannot be rebuilt: {' '.join(str(exc).split())}")
        return MarginsVerification(False, tuple(out), None)
    try:
        table, labels = mc.publication_table(pub, int(h), margins)
        worst = worst_case_losses(table, receiver, r=int(r))
    except PersuasiveError as exc:
        out.append(f"publication: inconsistent with the claim: {' '.join(str(exc).split())}")
        return MarginsVerification(False, tuple(out), None)
    want = mc.certificate_document(want_claim, pub, table, labels, worst)
    found: list[str] = []
    _diff(dict(doc), want, "", keys, found)
    # the hash lines above say more than the generic ones
    out += [m for m in found if not m.startswith(("claim_sha256:", "publication.sha256:"))]
    return MarginsVerification(not out, tuple(out), Recomputed(want))
