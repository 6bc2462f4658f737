r"""What each release kind's certificate says, and how it is recomputed: one small protocol.

A certificate is a pure function of its **claim** (the data-independent inputs of the proof)
and, where a kind needs it, of its **publication** (the published files). Each release kind
implements :class:`Kind` once, and both the release (which writes the certificate) and
``persuasive verify`` (which re-derives it) call the same methods, so they cannot disagree:

``parameters(claim)``
    Read the claim's parameters (a ValidationError naming the field if one is unreadable).
``claim(params)``
    The canonical claim of those parameters: a verifier compares it with the stated claim, so
    an edited or extra field of the claim is named.
``certify(params, publication)``
    The recomputed fields: ``guarantee``, ``notes`` and any kind-specific section.
``read_publication(params, files)``
    Read the published files: their facts (cells, suppressed cells …) and the problems a
    publication must not have (a shown count below h, a non-finite mean …).

The registry :data:`KINDS` maps each ``kind`` of a certificate to its implementation; nothing
else switches on the kind.
"""

from __future__ import annotations

import hashlib
import importlib
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar, Protocol

from persuasive.errors import ValidationError

__all__ = [
    "KINDS",
    "Body",
    "Kind",
    "Publication",
    "certified",
    "file_facts",
    "holds_of",
    "kind_of",
    "need",
    "not_met",
    "number",
    "one_file",
]


@dataclass(frozen=True)
class Body:
    """The recomputed fields of a certificate.

    ``guarantee`` has ``holds`` (the certificate claims a guarantee that holds as stated),
    ``kappa``, ``delta``, ``exact``, ``basis`` and ``statement``; ``extra`` holds kind-specific
    top-level sections.
    """

    guarantee: dict[str, Any]
    notes: list[str]
    extra: dict[str, Any] = field(default_factory=dict)
    #: The :class:`persuasive.results.Certificate` the guarantee comes from, where there is one.
    certificate: Any = field(default=None, compare=False)


@dataclass(frozen=True)
class Publication:
    """The published files as read back: their digests, the facts the certificate states about
    them, the problems found, and what :meth:`Kind.certify` needs of them (``payload``)."""

    files: dict[str, Path]
    facts: dict[str, Any]
    problems: list[str] = field(default_factory=list)
    payload: Any = None
    #: The entry of a file in ``publication.files`` where it is not :func:`file_facts` (the
    #: digest of a table's content: :mod:`persuasive.files.table_digest`).
    entries: dict[str, dict[str, Any]] = field(default_factory=dict)

    def section(self) -> dict[str, Any]:
        """The certificate's ``publication`` section."""
        files = [self.entries.get(n) or file_facts(n, p) for n, p in sorted(self.files.items())]
        return {"files": files, **self.facts}


def certified(cert: Any, statement: str, notes: list[str] | None = None) -> Body:
    """The body of a certificate proven by :func:`persuasive.certify`: it holds when κ is
    finite and the definition's κ (the target, or ∞) is met; ``notes`` follow the theorem's."""
    holds = holds_of(cert)
    return Body(
        guarantee={
            "holds": holds,
            "kappa": cert.kappa,
            "delta": cert.delta,
            "exact": bool(cert.exact),
            "basis": cert.basis,
            "statement": statement,
        },
        notes=[*(str(n) for n in cert.notes), *(notes or [])],
        certificate=cert,
    )


def holds_of(cert: Any) -> bool:
    """Whether a :class:`persuasive.results.Certificate` claims a finite guarantee that holds."""
    return bool(cert.holds) and math.isfinite(cert.kappa)


def not_met(target: float | None, holds: bool) -> str:
    """The sentence a statement ends with when its target κ is not met."""
    if target is None or holds:
        return ""
    return f" This is above the target κ = {target:g}: the target is NOT met."


def file_facts(name: str, path: Path) -> dict[str, Any]:
    """``{"name", "sha256", "bytes"}`` of one published file (streamed, any size)."""
    h = hashlib.sha256()
    size = 0
    with open(path, "rb") as fh:
        while chunk := fh.read(1 << 20):
            h.update(chunk)
            size += len(chunk)
    return {"name": name, "sha256": h.hexdigest(), "bytes": size}


class Kind(Protocol):
    """A release kind as certificates see it (see the module docstring)."""

    name: ClassVar[str]
    #: Whether ``certify`` needs the publication (a table with margins), so that ``verify``
    #: cannot recompute the certificate without ``--published``.
    needs_publication: ClassVar[bool]
    #: The stems of the published files (``released`` …).
    published: ClassVar[tuple[str, ...]]
    #: The fields of the claim its parameters are read from (below ``claim``): nothing else
    #: states them, so only the digest protects them (and the publication, where it shows one).
    inputs: ClassVar[tuple[str, ...]]

    def parameters(self, claim: Mapping[str, Any]) -> Any: ...

    def claim(self, params: Any) -> dict[str, Any]: ...

    def certify(self, params: Any, publication: Publication | None) -> Body: ...

    def read_publication(self, params: Any, files: Mapping[str, Path]) -> Publication: ...


#: Every kind of certificate persuasive writes, and the module implementing it.
_MODULES = {
    "table": "persuasive.report.kinds.table",
    "mean": "persuasive.report.kinds.mean",
    "linear": "persuasive.report.kinds.linear",
    "margins": "persuasive.report.kinds.margins",
    "magnitude": "persuasive.magnitude.kind",
    "magnitude_margins": "persuasive.magnitude.kind_margins",
}
KINDS: tuple[str, ...] = tuple(_MODULES)


def kind_of(name: Any) -> Kind:
    """The implementation of a certificate kind (imported on first use)."""
    if not isinstance(name, str) or name not in _MODULES:
        raise ValidationError(
            f"kind must be one of {', '.join(map(repr, KINDS))}; got {name!r:.60}"
        )
    kind: Kind = importlib.import_module(_MODULES[name]).KIND
    return kind


# --------------------------------------------------------------------------------------------
# Reading a claim: each field checked and named by its path
# --------------------------------------------------------------------------------------------


def shown(parts: list[str]) -> str:
    """A path as a certificate's mismatches name it: ``claim.scores[0].r``."""
    out = ""
    for part in parts:
        out += f"[{part}]" if part.isdigit() else (f".{part}" if out else part)
    return out


def need(doc: Any, path: str, kind: type | tuple[type, ...], *, optional: bool = False) -> Any:
    """The value at a dotted ``path`` of ``doc`` (``claim.spec.definition.scores.0.r``: a
    number indexes a list), of the given JSON type(s); a ValidationError naming the path
    (``claim.spec.definition.scores[0].r``) otherwise. ``optional``: None is allowed.

    Examples
    --------
    >>> need({"claim": {"a": [{"b": 2}]}}, "claim.a.0.b", int)
    2
    >>> need({"claim": {"a": []}}, "claim.a.0.b", int)
    Traceback (most recent call last):
    ...
    persuasive.errors.ValidationError: claim.a[0]: missing
    """
    parts = path.split(".")
    value = doc
    for i, part in enumerate(parts):
        if isinstance(value, list) and part.isdigit() and int(part) < len(value):
            value = value[int(part)]
        elif isinstance(value, Mapping) and not part.isdigit() and part in value:
            value = value[part]
        else:
            raise ValidationError(f"{shown(parts[: i + 1])}: missing")
    if value is None and optional:
        return None
    kinds = kind if isinstance(kind, tuple) else (kind,)
    bad_bool = isinstance(value, bool) and bool not in kinds
    if bad_bool or not isinstance(value, kinds):
        names = " or ".join(k.__name__ for k in kinds)
        raise ValidationError(f"{shown(parts)}: must be {names}; got {value!r:.60}")
    return value


def number(doc: Any, path: str, *, optional: bool = False) -> float | None:
    """A number at ``path``; the strings ``"inf"`` / ``"-inf"`` read as ±∞."""
    value = need(doc, path, (int, float, str), optional=optional)
    if value is None:
        return None
    if isinstance(value, str):
        if value not in ("inf", "-inf"):
            raise ValidationError(
                f'{shown(path.split("."))}: must be a number or "inf"; got {value!r:.60}'
            )
        return float(value)
    return float(value)


def names(doc: Any, path: str) -> tuple[str, ...]:
    """Distinct, non-empty column names at ``path``; a ValidationError naming it otherwise."""
    value = need(doc, path, list)
    if (
        not value
        or not all(isinstance(k, str) and k for k in value)
        or len(set(value)) != len(value)
    ):
        raise ValidationError(
            f"{shown(path.split('.'))}: must be distinct column names; got {value!r:.60}"
        )
    return tuple(value)


def leaves(value: Any, prefix: str) -> list[str]:
    """Every leaf path below ``prefix`` of a JSON value, named as mismatches name fields."""
    if isinstance(value, Mapping):
        return [p for k in sorted(value) for p in leaves(value[k], f"{prefix}.{k}")] or [prefix]
    if isinstance(value, list):
        return [p for i, v in enumerate(value) for p in leaves(v, f"{prefix}[{i}]")] or [prefix]
    return [prefix]


def one_file(files: Mapping[str, Path], stem: str) -> tuple[str, Path]:
    """The one published file named ``stem.csv`` / ``stem.parquet`` / ``stem.json`` …"""
    found = [(n, p) for n, p in files.items() if Path(n).stem == stem]
    if len(found) != 1:
        raise ValidationError(
            f"the publication must hold one file named '{stem}' (.csv, .parquet or .json); got "
            f"{sorted(files) or 'none'}"
        )
    return found[0]
