r"""``persuasive verify``: re-derive a certificate and say exactly what it claims.

:func:`verify_certificate` reads a certificate strictly
(:func:`persuasive.report.certificate.loads`),
reads the parameters of its claim, recomputes **every** field from them by the code of its kind
(:mod:`persuasive.report.kinds`) — the canonical claim, the guarantee, the notes, any
kind-specific section, and, when the publication is given, the publication section and the
checks a publication must pass — and compares the stated document with the recomputed one
field by field, exactly. ``library.version`` and the claim's inputs (each kind's ``inputs``:
nothing else states them) are not recomputed; they are bound, like everything else, by the
document's ``digest``, and a failed digest names them.

The outcome (:class:`Verification`) separates two questions: whether the certificate is
**consistent** (nothing edited: no mismatch) and whether it **claims a guarantee** that holds
(``guarantee.holds``). Only a consistent certificate that claims a guarantee is *verified*.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

import polars as pl

from persuasive._progress import task
from persuasive.errors import PersuasiveError, ValidationError
from persuasive.report import certificate as cd
from persuasive.report.certificate_file import (
    check_format,
    locate_publication,
    publication_beside,
    published_names,
    read,
)
from persuasive.report.kinds import Publication, kind_of, leaves
from persuasive.report.verification import Verification

__all__ = [
    "Verification",
    "locate_publication",
    "publication_beside",
    "recompute",
    "verify_certificate",
]


def recompute(
    kind_name: str,
    params: Any,
    publication: Publication | None,
    *,
    version: str,
    stated_publication: Any = None,
) -> dict[str, Any]:
    """The whole certificate document of a claim's parameters (and publication)."""
    kind = kind_of(kind_name)
    body = kind.certify(params, publication)
    section = publication.section() if publication is not None else stated_publication
    return cd.envelope(
        kind_name,
        kind.claim(params),
        body.guarantee,
        body.notes,
        section or {},
        version=version,
        extra=body.extra,
    )


def _stated_form(publication: Publication, stated: Any) -> Publication:
    """The publication with each file entry in the form the certificate states it: a table
    written before tables were bound by the digest of their rows
    (:mod:`persuasive.files.table_digest`) is bound by the SHA-256 and size of its one file,
    which are recomputed instead (both forms bind the file)."""
    entries = stated.get("files") if isinstance(stated, dict) else None
    old = {
        e.get("name")
        for e in (entries if isinstance(entries, list) else [])
        if isinstance(e, dict)
        and set(e) == {"name", "sha256", "bytes"}
        and isinstance(e["name"], str)
    }
    keep = {
        n: e
        for n, e in publication.entries.items()
        if n not in old or not publication.files[n].is_file()
    }
    return publication if keep == publication.entries else replace(publication, entries=keep)


def _label(path: str, index: int, entry: Any) -> str | None:
    if path == "cells" and isinstance(entry, dict) and isinstance(entry.get("key"), list):
        return ",".join(map(str, entry["key"]))
    if path == "publication.files" and isinstance(entry, dict):
        return str(entry.get("name"))
    return None


def verify_certificate(
    path_or_doc: str | os.PathLike[str] | Mapping[str, Any], *, published: Any = None
) -> Verification:
    """Recompute a certificate from its claim (and its publication) and compare every field.

    Parameters
    ----------
    path_or_doc : str, path-like or mapping
        A ``certificate.json`` or its parsed document.
    published : path or sequence of paths, optional
        The release folder, or the published files: the publication section is then
        recomputed from them and the publication is checked (no shown count below h …).
        Required for a table with margins, whose guarantee is computed from its publication.

    Returns
    -------
    Verification

    Raises
    ------
    ValidationError
        The file cannot be read, is not strict JSON, is not a persuasive certificate of a
        supported format version, or the publication cannot be read.

    Examples
    --------
    >>> from persuasive.classes.receivers import PoissonReceiver
    >>> from persuasive.report.kinds.table import KIND, TableParams
    >>> p = TableParams(10, 10, PoissonReceiver(1, 40), ("county",), "n")
    >>> import persuasive
    >>> doc = recompute("table", p, None, version=persuasive.__version__,
    ...                 stated_publication={"files": []})
    >>> verify_certificate(doc).consistent
    True
    >>> doc["guarantee"]["kappa"] = 100
    >>> [line.split(":")[0] for line in verify_certificate(doc).mismatches]
    ['guarantee.kappa', 'digest']
    >>> verify_certificate(doc).mismatches[0][:42]
    'guarantee.kappa: stated 100, recomputed 19'
    >>> verify_certificate(doc).ok
    False
    """
    with task("verify: recompute the certificate", total=3) as advance:
        return _verify(path_or_doc, published, advance)


def _verify(
    path_or_doc: str | os.PathLike[str] | Mapping[str, Any],
    published: Any,
    advance: Callable[..., None],
) -> Verification:
    """:func:`verify_certificate`, reporting progress: the publication read, the certificate
    recomputed, the fields compared."""
    doc, twice, source = read(path_or_doc)
    check_format(doc, source)
    if doc.get("kind") == "linked":  # several tables, one publication (docs/linked.md)
        from persuasive.release.linked_output import verify_linked

        beside = None if isinstance(path_or_doc, Mapping) else Path(path_or_doc).parent
        return verify_linked(doc, beside if published is None else published, twice)
    out = [f"{k}: the key appears twice; a reader would see only the last value" for k in twice]
    version = (
        doc.get("library", {}).get("version") if isinstance(doc.get("library"), dict) else None
    )
    if not isinstance(version, str):
        out.append(f"library.version: must be a version string; got {version!r:.40}")
        version = "?"
    kind_name = doc.get("kind")
    try:
        kind = kind_of(kind_name)
    except ValidationError as exc:
        return Verification(
            False, False, False, (*out, " ".join(str(exc).split())), kind=str(kind_name)
        )

    def refused(lines: list[str]) -> Verification:
        return Verification(
            False, False, False, (*lines, *_digest_lines(doc, kind, version)), kind=kind.name
        )

    try:
        claim = doc.get("claim")
        params = kind.parameters(claim if isinstance(claim, dict) else {})
    except PersuasiveError as exc:
        return refused([*out, f"claim: cannot be read: {' '.join(str(exc).split())}"])
    publication: Publication | None = None
    if published is not None:
        files = locate_publication(kind.published, published, published_names(doc))
        try:
            publication = kind.read_publication(params, files)
        except (pl.exceptions.PolarsError, PersuasiveError, ValueError, KeyError) as exc:
            first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
            publication = Publication(
                files, {}, [f"publication: cannot be read as the claim states: {first}"]
            )
        publication = _stated_form(publication, doc.get("publication"))
        out += publication.problems
    elif kind.needs_publication:
        raise ValidationError(
            f"a {kind.name} certificate is recomputed from its publication: pass the release "
            "folder, e.g. persuasive verify CERT.json --published DIR"
        )
    advance()
    try:
        want = recompute(
            kind.name,
            params,
            publication,
            version=version,
            stated_publication=doc.get("publication"),
        )
    except PersuasiveError as exc:
        if publication is None or not publication.problems:
            out.append(f"claim: cannot be certified: {' '.join(str(exc).split())}")
        if publication is not None:  # still name the published files that changed
            out += cd.diff(
                doc.get("publication"), publication.section(), "publication", label=_label
            )
        return refused(out)
    advance()
    out += cd.diff(
        {k: v for k, v in doc.items() if k != "digest"},
        {k: v for k, v in want.items() if k != "digest"},
        label=_label,
    )
    out += _digest_lines(doc, kind, version, after=bool(out))
    advance()
    claims = bool(want["guarantee"]["holds"])
    consistent = not out
    return Verification(
        ok=consistent and claims,
        consistent=consistent,
        claims=claims,
        mismatches=tuple(out),
        statement=str(want["guarantee"]["statement"]),
        kind=kind.name,
        published_checked=publication is not None,
        recomputed=want,
    )


def _digest_lines(doc: Mapping[str, Any], kind: Any, version: str, after: bool = True) -> list[str]:
    """The digest check, naming the fields only the digest protects when it fails, and a hint
    when another version wrote the certificate."""
    out = []
    stated = doc.get("digest")
    real = cd.digest_of(doc)
    if stated != real:
        raw = doc.get("claim")
        claim: dict[str, Any] = raw if isinstance(raw, dict) else {}
        inputs = [
            path
            for prefix in kind.inputs
            if prefix.split(".")[0] in claim
            for path in leaves(_at(claim, prefix), f"claim.{prefix}")
        ]
        absent = [f"claim.{p}" for p in kind.inputs if p.split(".")[0] not in claim]
        out.append(
            f"digest: stated {str(stated)[:15]}..., recomputed {real[:15]}...: the document was "
            "edited after it was written; unless a mismatch above explains it, one of the "
            "fields only the digest protects was: "
            + ", ".join([*inputs, "library.version"])
            + (f" (or one of these was removed: {', '.join(absent)})" if absent else "")
        )
    if (out or after) and version != _version():
        out.append(
            f"library.version: written by persuasive {version}, checked with {_version()}; "
            "a difference may come from the version (verify with the version that wrote it)"
        )
    return out


def _at(doc: Any, dotted: str) -> Any:
    for part in dotted.split("."):
        doc = doc.get(part) if isinstance(doc, Mapping) else None
    return doc


def _version() -> str:
    import persuasive

    return str(persuasive.__version__)
