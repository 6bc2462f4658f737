r"""Re-check a certificate from its spec alone (``persuasive verify CERT.json``).

:func:`verify_certificate` reads a certificate document (:mod:`persuasive.report.certificate`),
checks that ``spec_sha256`` is the hash of the spec, rebuilds the mechanism and the definition
from the spec, proves the guarantee again with :func:`persuasive.certify` and compares, field by
field:

* ``guarantee.kappa`` must be at least the proven κ (up to ``LOSS_ATOL``): a stated κ below
  the proof is a claim the theorem does not support;
* the guarantee must hold: the proven κ is at most the definition's κ (``spec.definition.kappa``);
* ``guarantee.delta``, ``basis`` and ``exact`` must equal the recomputed ones;
* when the spec carries a Receiver model (``spec.receiver``, a table with a ``model`` key) and a
  small-cell prior class, the class's α must be the α the model gives at the class's h
  (:func:`persuasive.classes.receivers.receiver_from_dict`).

No data is needed: by Assumption 1 the certificate does not depend on it.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from persuasive import _tolerances as tol
from persuasive.errors import PersuasiveError, ValidationError
from persuasive.report.certificate import FORMAT, SUPPORTED_VERSIONS, spec_sha256
from persuasive.results import Certificate

if TYPE_CHECKING:
    from persuasive.report.verify_margins import MarginsVerification

#: Top-level keys every certificate document must have.
REQUIRED_KEYS: tuple[str, ...] = (
    "format",
    "format_version",
    "library",
    "spec",
    "spec_sha256",
    "guarantee",
    "basis",
    "exact",
    "notes",
)


@dataclass(frozen=True)
class Verification:
    """The outcome of :func:`verify_certificate`.

    Attributes
    ----------
    ok : bool
        True when every stated field agrees with the recomputation and the guarantee holds.
    mismatches : tuple of str
        One sentence per disagreeing field, naming the field, the stated and the recomputed
        value.
    recomputed : Certificate or None
        The certificate proven again from the spec (None if the spec could not be rebuilt or
        no theorem covers it).
    """

    ok: bool
    mismatches: tuple[str, ...]
    recomputed: Certificate | None

    def explain(self) -> str:
        """A human summary: "verified" or the list of mismatches."""
        if self.ok:
            assert self.recomputed is not None
            return (
                f"verified: the certificate holds as stated ({self.recomputed.basis}, "
                f"kappa = {_fmt(self.recomputed.kappa)}, delta = {_fmt(self.recomputed.delta)})"
            )
        return "NOT verified:\n" + "\n".join(f"- {m}" for m in self.mismatches)


def _fmt(x: Any) -> str:
    if isinstance(x, float):
        return "inf" if math.isinf(x) else f"{x:.7g}"
    return repr(x) if isinstance(x, str) else str(x)


def _load(path_or_doc: Any) -> dict[str, Any]:
    if isinstance(path_or_doc, Mapping):
        return dict(path_or_doc)
    if not isinstance(path_or_doc, (str, os.PathLike)):
        raise ValidationError(
            "verify_certificate needs a certificate file path or its parsed document; "
            f"got {type(path_or_doc).__name__}"
        )
    p = Path(path_or_doc)
    try:
        text = p.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ValidationError(f"certificate file '{p}' not found") from None
    except IsADirectoryError:
        raise ValidationError(f"certificate file '{p}' is a directory; pass a .json file") from None
    except UnicodeDecodeError:
        raise ValidationError(f"certificate file '{p}' is not UTF-8 text") from None
    except OSError as exc:
        raise ValidationError(f"cannot read certificate file '{p}': {exc.strerror}") from None
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ValidationError(
            f"certificate file '{p}' is not valid JSON: {exc.msg} at line {exc.lineno}, "
            f"column {exc.colno}"
        ) from None
    if not isinstance(doc, dict):
        raise ValidationError(
            f"certificate file '{p}' must hold a JSON object; got {type(doc).__name__}"
        )
    return doc


def _number(field: str, value: Any) -> float:
    if isinstance(value, str) and value in ("inf", "-inf", "nan"):
        return float(value)
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ValidationError(f'{field} must be a number or "inf"; got {value!r:.80}')
    return float(value)


def _check_structure(doc: dict[str, Any]) -> tuple[float, float]:
    """Validate the document's shape; return the stated (κ, δ)."""
    fmt = doc.get("format")
    if fmt != FORMAT:
        raise ValidationError(f"format must be {FORMAT!r} (a persuasive certificate); got {fmt!r}")
    version = doc.get("format_version")
    if isinstance(version, bool) or version not in SUPPORTED_VERSIONS:
        raise ValidationError(
            f"format_version {version!r} is not supported; this version of persuasive reads "
            f"format_version {', '.join(map(str, SUPPORTED_VERSIONS))} (upgrade persuasive?)"
        )
    for key in REQUIRED_KEYS:
        if key not in doc:
            raise ValidationError(f"certificate field '{key}' is missing")
    if not isinstance(doc["spec"], dict):
        raise ValidationError(f"spec must be a JSON object; got {doc['spec']!r:.80}")
    guarantee = doc["guarantee"]
    if not isinstance(guarantee, dict) or "kappa" not in guarantee or "delta" not in guarantee:
        raise ValidationError(
            f"guarantee must be an object with 'kappa' and 'delta'; got {guarantee!r:.80}"
        )
    if not isinstance(doc["basis"], str):
        raise ValidationError(f"basis must be a string; got {doc['basis']!r:.80}")
    if not isinstance(doc["exact"], bool):
        raise ValidationError(f"exact must be true or false; got {doc['exact']!r:.80}")
    return (
        _number("guarantee.kappa", guarantee["kappa"]),
        _number("guarantee.delta", guarantee["delta"]),
    )


def _receiver_alpha(spec: dict[str, Any]) -> list[str]:
    """Mismatches between the spec's Receiver model and its small-cell class α."""
    receiver = spec.get("receiver")
    priors = spec.get("definition", {}).get("priors", {})
    if not isinstance(receiver, dict) or "model" not in receiver:
        return []
    if not isinstance(priors, dict) or priors.get("class") != "small_cell":
        return []
    try:
        from persuasive.classes.receivers import receiver_from_dict
    except ImportError as exc:
        return [
            "spec.receiver: cannot re-derive alpha from the Receiver model "
            f"({receiver.get('model')!r}): persuasive.classes.receivers is unavailable ({exc})"
        ]
    stated = priors.get("alpha")
    h: Any = priors.get("h")
    try:
        derived = float(receiver_from_dict(receiver).alpha(h))
    except PersuasiveError as exc:
        return [f"spec.receiver: the Receiver model is invalid: {exc}"]
    if not isinstance(stated, (int, float)) or isinstance(stated, bool):
        return []  # already reported by the spec parser
    if not math.isclose(float(stated), derived, rel_tol=tol.CLASS_RTOL, abs_tol=0.0):
        return [
            f"spec.definition.priors.alpha: stated {_fmt(float(stated))} is not the "
            f"{_fmt(derived)} that the Receiver model {receiver.get('model')!r} gives at "
            f"h = {h} (class alpha changed?)"
        ]
    return []


def _compare(doc: dict[str, Any], kappa: float, delta: float, cert: Certificate) -> list[str]:
    out = []
    if not kappa >= cert.kappa - tol.LOSS_ATOL:
        out.append(
            f"guarantee.kappa: stated {_fmt(kappa)} is below the proven {_fmt(cert.kappa)} "
            "(κ lowered?)"
        )
    if not cert.holds:
        stated_def = cert.definition.get("kappa", "?")
        out.append(
            f"spec.definition.kappa: the guarantee does not hold: the proven κ = "
            f"{_fmt(cert.kappa)} exceeds the definition's κ = {_fmt(stated_def)}"
        )
    if delta != cert.delta:
        out.append(f"guarantee.delta: stated {_fmt(delta)}, recomputed {_fmt(cert.delta)}")
    if doc["basis"] != cert.basis:
        out.append(f"basis: stated {doc['basis']!r}, recomputed {cert.basis!r}")
    if doc["exact"] != cert.exact:
        out.append(f"exact: stated {doc['exact']}, recomputed {cert.exact}")
    return out


def verify_certificate(
    path_or_doc: str | os.PathLike[str] | Mapping[str, Any], *, published: Any = None
) -> Verification | MarginsVerification:
    """Re-prove a certificate from its spec and compare it field by field.

    Parameters
    ----------
    path_or_doc : str, path-like or mapping
        A certificate file (JSON) or its parsed document.
    published : path or sequence of paths, optional
        Only for a margins certificate (``"format": "persuasive-margins-certificate"``): the
        published files it is recomputed from (:mod:`persuasive.report.verify_margins`).

    Returns
    -------
    Verification
        ``ok`` is True only if the hash matches the spec, the recomputed guarantee holds and
        every stated field agrees with it; otherwise ``mismatches`` names each disagreeing
        field with its stated and recomputed value.

    Raises
    ------
    ValidationError
        If the file cannot be read, is not JSON, is not a persuasive certificate, has an
        unsupported ``format_version`` or lacks a required field (the message names it).

    Examples
    --------
    >>> from persuasive.report.certificate import certificate_document
    >>> spec = {"mechanism": {"type": "exact_mean"},
    ...         "definition": {"kind": "pp", "kappa": 2.4, "delta": 0.0,
    ...                        "scores": [{"type": "marginal_dss"}],
    ...                        "priors": {"class": "gaussian_mean", "r1": 1.0, "r2": 4.0}}}
    >>> doc = certificate_document(spec)
    >>> verify_certificate(doc).ok
    True
    >>> doc["guarantee"]["kappa"] = 2.0
    >>> print(verify_certificate(doc).mismatches[0])
    guarantee.kappa: stated 2 is below the proven 2.386294 (κ lowered?)
    """
    doc = _load(path_or_doc)
    from persuasive.report.margins_certificate import FORMAT as MARGINS_FORMAT

    if doc.get("format") == MARGINS_FORMAT:
        from persuasive.report.verify_margins import verify_margins

        return verify_margins(doc, published)
    if published is not None:
        raise ValidationError(
            "--published is only for a margins certificate; this one is re-checked from its "
            "spec alone"
        )
    kappa, delta = _check_structure(doc)
    spec: dict[str, Any] = doc["spec"]
    mismatches: list[str] = []

    computed_hash = spec_sha256(spec)
    hash_ok = doc["spec_sha256"] == computed_hash

    recomputed: Certificate | None = None
    from persuasive.certify import certify
    from persuasive.spec import TOP_LEVEL, spec_from_dict

    try:
        parsed = spec_from_dict({k: v for k, v in spec.items() if k in TOP_LEVEL})
        recomputed = certify(parsed.mechanism, parsed.definition)
    except PersuasiveError as exc:
        mismatches.append(f"spec: cannot be re-certified: {' '.join(str(exc).split())}")
    if recomputed is not None:
        mismatches.extend(_compare(doc, kappa, delta, recomputed))
        mismatches.extend(_receiver_alpha(spec))
    if not hash_ok:
        changed = sorted({m.split(":", 1)[0] for m in mismatches if m.startswith("spec")})
        hint = f"; fields that disagree: {', '.join(changed)}" if changed else ""
        mismatches.insert(
            0,
            f"spec_sha256: stated {str(doc['spec_sha256'])[:16]}... does not match the spec "
            f"(hash {computed_hash[:16]}...): the spec or the hash was edited after "
            f"certification{hint}",
        )
    return Verification(ok=not mismatches, mismatches=tuple(mismatches), recomputed=recomputed)
