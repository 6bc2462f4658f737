r"""The certificate of a release as versioned, canonical JSON (Assumption 1, Bon et al. 2026).

A certificate states *what* was proven about a release — the mechanism and the definition (the
spec), the guarantee :math:`(\kappa, \delta)`, the theorem it rests on and whether κ is exact —
and **nothing computed from the data** (Assumption 1: the guarantee is a property of the
mechanism and the prior class, not of the table). Two releases of different data under the
same spec therefore produce byte-identical certificate files, and anyone can re-check a
certificate from the spec alone (:func:`persuasive.report.verify.verify_certificate`).

Format (``format_version`` 1)::

    {
      "format": "persuasive-certificate",
      "format_version": 1,
      "library": {"name": "persuasive-privacy", "version": "..."},
      "spec": {...},              # mechanism + definition (+ data-independent metadata)
      "spec_sha256": "...",       # SHA-256 of the canonical JSON of "spec"
      "guarantee": {"kappa": ..., "delta": ...},
      "basis": "Prop 8 (Bon et al. 2026)",
      "exact": true,
      "notes": [...]
    }

The canonical JSON of a value is ``json.dumps(value, sort_keys=True, separators=(",", ":"),
ensure_ascii=False)`` encoded as UTF-8, with floats written by ``repr`` (shortest round-trip)
and non-finite floats written as the strings ``"inf"``, ``"-inf"``, ``"nan"``.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from persuasive._io import atomic_write_text
from persuasive.errors import ValidationError
from persuasive.results import Certificate

#: The ``format`` tag of a certificate document.
FORMAT = "persuasive-certificate"
#: The ``format_version`` written by this library; :data:`SUPPORTED_VERSIONS` can be read.
FORMAT_VERSION = 1
SUPPORTED_VERSIONS: tuple[int, ...] = (1,)
#: The distribution name recorded under ``library.name``.
LIBRARY_NAME = "persuasive-privacy"


def canonical(value: Any) -> Any:
    """Convert ``value`` to plain JSON types: dicts with str keys, lists, str, int, float, bool.

    Tuples and numpy arrays become lists, numpy scalars Python scalars, non-finite floats the
    strings ``"inf"``, ``"-inf"`` and ``"nan"``.

    Examples
    --------
    >>> import numpy as np
    >>> canonical({"k": (np.float64(1.5), float("inf")), "n": np.int64(3)})
    {'k': [1.5, 'inf'], 'n': 3}
    """
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    if isinstance(value, (np.integer, int)):
        return int(value)
    if isinstance(value, (np.floating, float)):
        x = float(value)
        if math.isfinite(x):
            return x
        return "nan" if math.isnan(x) else ("inf" if x > 0 else "-inf")
    if isinstance(value, np.ndarray):
        return [canonical(v) for v in value.tolist()]
    if isinstance(value, (list, tuple)):
        return [canonical(v) for v in value]
    if isinstance(value, Mapping):
        return {str(k): canonical(v) for k, v in value.items()}
    if value is None or isinstance(value, str):
        return value
    raise ValidationError(
        f"a certificate can only hold JSON values (numbers, strings, lists, tables); "
        f"got {type(value).__name__} {value!r}"
    )


def canonical_json(value: Any) -> str:
    """The compact canonical JSON text of ``value`` (sorted keys, no spaces)."""
    return json.dumps(
        canonical(value), sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False
    )


def spec_sha256(spec: Mapping[str, Any]) -> str:
    """SHA-256 (hex) of the UTF-8 canonical JSON of a spec document.

    Examples
    --------
    >>> spec_sha256({"b": 1, "a": [0.1, 2]}) == spec_sha256({"a": [0.1, 2], "b": 1})
    True
    """
    return hashlib.sha256(canonical_json(spec).encode("utf-8")).hexdigest()


def _library_version() -> str:
    import persuasive

    return str(persuasive.__version__)


def _certify_spec(spec: Mapping[str, Any]) -> Certificate:
    from persuasive.certify import certify
    from persuasive.spec import TOP_LEVEL, spec_from_dict

    parsed = spec_from_dict({k: v for k, v in spec.items() if k in TOP_LEVEL})
    return certify(parsed.mechanism, parsed.definition)


def full_spec(release_or_spec: Any) -> Any:
    """The spec document of a release with its data-independent metadata merged in.

    A release carries the spec proper as ``.spec`` (what :func:`persuasive.spec.spec_from_dict`
    reads) and may carry metadata beside it as ``.metadata`` (e.g. ``"receiver"``, the Receiver
    model α was derived from); the certificate states both. A mapping is returned as it is.
    """
    if isinstance(release_or_spec, Mapping):
        return release_or_spec
    spec = getattr(release_or_spec, "spec", None)
    metadata = getattr(release_or_spec, "metadata", None)
    if not isinstance(spec, Mapping) or not isinstance(metadata, Mapping):
        return spec
    clash = sorted(set(spec) & set(metadata))
    if clash:
        raise ValidationError(
            f"release.metadata must not redefine spec keys; both define {', '.join(clash)}"
        )
    return {**spec, **metadata}


def certificate_document(
    release_or_spec: Any, certificate: Certificate | None = None
) -> dict[str, Any]:
    """The certificate document of a release (or of a spec and its certificate).

    Parameters
    ----------
    release_or_spec : release object or mapping
        A release (anything with ``.spec``, a spec document, ``.certificate`` and optionally
        ``.metadata``, data-independent keys stated beside the spec), or a spec
        document itself (the TOML schema of ``docs/cli.md``, possibly with data-independent
        metadata keys such as ``"receiver"``).
    certificate : Certificate, optional
        The certificate to state; default: the release's, or for a bare spec the one
        :func:`persuasive.certify` proves for it.

    Returns
    -------
    dict
        The versioned document described in the module docstring. Only the spec and the
        certificate's data-independent fields (κ, δ, basis, exactness, notes) enter it; the
        release's table, values and summary never do (Assumption 1).

    Raises
    ------
    ValidationError
        If the spec is not a mapping with ``mechanism`` and ``definition`` tables or holds a
        value that is not JSON.

    Examples
    --------
    >>> spec = {"mechanism": {"type": "cell_suppression", "h": 5},
    ...         "definition": {"kind": "pp", "kappa": 1.7, "delta": 0.0,
    ...                        "scores": [{"type": "small_cell_log", "r": 5}],
    ...                        "priors": {"class": "small_cell", "h": 5, "alpha": 0.2}}}
    >>> doc = certificate_document(spec)
    >>> doc["format"], doc["basis"], round(doc["guarantee"]["kappa"], 6)
    ('persuasive-certificate', 'Prop 8 (Bon et al. 2026)', 1.609438)
    """
    spec = full_spec(release_or_spec)
    if not isinstance(release_or_spec, Mapping):
        if certificate is None:
            certificate = getattr(release_or_spec, "certificate", None)
    if not isinstance(spec, Mapping) or "mechanism" not in spec or "definition" not in spec:
        raise ValidationError(
            "release.spec must be a spec document with 'mechanism' and 'definition' tables "
            f"(docs/cli.md); got {spec!r:.80}"
        )
    spec_doc = canonical(spec)
    if certificate is None:
        certificate = _certify_spec(spec)
    if not isinstance(certificate, Certificate):
        raise ValidationError(
            f"certificate must be a persuasive.results.Certificate; got {certificate!r:.80}"
        )
    return {
        "format": FORMAT,
        "format_version": FORMAT_VERSION,
        "library": {"name": LIBRARY_NAME, "version": _library_version()},
        "spec": spec_doc,
        "spec_sha256": spec_sha256(spec_doc),
        "guarantee": canonical({"kappa": certificate.kappa, "delta": certificate.delta}),
        "basis": certificate.basis,
        "exact": bool(certificate.exact),
        "notes": [str(n) for n in certificate.notes],
    }


def dumps_certificate(doc: Mapping[str, Any]) -> str:
    """The canonical, byte-stable text of a certificate document.

    Sorted keys, two-space indentation, floats by ``repr``, ``inf`` as the string ``"inf"``,
    UTF-8 characters kept as they are, one trailing newline.

    Examples
    --------
    >>> print(dumps_certificate({"b": float("inf"), "a": 1}), end="")
    {
      "a": 1,
      "b": "inf"
    }
    """
    text = json.dumps(canonical(doc), sort_keys=True, indent=2, ensure_ascii=False, allow_nan=False)
    return text + "\n"


def write_certificate(path: str | os.PathLike[str], release: Any) -> Path:
    """Write the certificate of ``release`` to ``path`` (atomically; JSON, UTF-8).

    Parameters
    ----------
    path : str or path-like
        Destination file, typically ``certificate.json``; its folder is created if needed.
    release : release object or mapping
        As for :func:`certificate_document`.

    Returns
    -------
    Path
        ``path``.
    """
    text = dumps_certificate(certificate_document(release))
    return atomic_write_text(path, text)
