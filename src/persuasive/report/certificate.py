r"""The certificate document: canonical, strict JSON in which every field is recomputable.

A certificate accompanies a publication and states what was proven about it. Its fields fall
in three groups, and ``persuasive verify`` treats each its own way
(:mod:`persuasive.report.verify`; ``docs/release.md`` lists them per kind):

* the **claim** — the data-independent inputs of the proof (the mechanism, the Receiver class,
  the published column names, the target κ), from which everything else follows;
* **recomputed fields** — ``guarantee`` (whether it holds, κ, δ, exactness, the proposition it
  rests on, the guarantee as a sentence), ``notes`` and any kind-specific section: the verifier
  recomputes them from the claim (and, for a table with margins, from the publication) and
  compares them *exactly*;
* the **publication** — the SHA-256 and size of every published file and the facts read from
  them (cells, suppressed cells …): recomputed from the files when ``--published`` gives them.

Two things cannot be recomputed: ``library.version`` (another version may verify), and the
claim's *inputs* (h, r, the Receiver model, the column names, the target κ … — each kind's
``inputs``), from which everything else follows and which nothing else states. They are bound,
with every other byte of the document, by ``digest``: the SHA-256 of the canonical JSON of the
document without ``digest``. The digest is not a signature (anyone can recompute it): it makes
an edit of an input visible, and a verifier names the inputs when it fails; a consistent edit of
an input with a recomputed digest is a certificate for another claim, which only a signature of
the release folder, or the publication (e.g. a shown count below an edited h), can expose.

Format (``format_version`` 2)::

    {
      "format": "persuasive-certificate", "format_version": 2, "kind": "table",
      "library": {"name": "persuasive-privacy", "version": "..."},
      "claim": {...},
      "guarantee": {"holds": true, "kappa": 1.52, "delta": 0.0, "exact": true,
                    "basis": "Prop 8 (Bon et al. 2026)", "statement": "..."},
      "notes": [...],
      "publication": {"files": [{"name": "released.csv", "sha256": "...", "bytes": 123}], ...},
      "digest": "sha256:..."
    }

**Canonical JSON** is ``json.dumps(value, sort_keys=True, separators=(",", ":"),
ensure_ascii=False, allow_nan=False)`` encoded as UTF-8: floats are written by ``repr`` (the
shortest text that reads back to the same float), an infinite κ is the string ``"inf"``, and a
NaN is refused. Reading is strict too (:func:`loads`): ``NaN`` / ``Infinity`` literals, a key
given twice and nesting deeper than :data:`MAX_DEPTH` are refused.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Mapping
from typing import Any

import numpy as np

from persuasive.errors import ValidationError

__all__ = [
    "FORMAT",
    "FORMAT_VERSION",
    "LIBRARY_NAME",
    "canonical",
    "canonical_json",
    "diff",
    "digest_of",
    "dumps",
    "envelope",
    "loads",
    "sha256_of",
]

#: The ``format`` tag of a certificate document.
FORMAT = "persuasive-certificate"
#: The ``format_version`` written and read by this library.
FORMAT_VERSION = 2
SUPPORTED_VERSIONS: tuple[int, ...] = (2,)
#: The distribution name recorded under ``library.name``.
LIBRARY_NAME = "persuasive-privacy"
#: The fields of ``guarantee``.
GUARANTEE_FIELDS = ("holds", "kappa", "delta", "exact", "basis", "statement")
#: The deepest nesting a certificate may have (a deeper document is refused, not recursed into).
MAX_DEPTH = 64


def canonical(value: Any) -> Any:
    """Convert ``value`` to plain JSON types: dicts with str keys, lists, str, int, float, bool.

    Tuples and numpy arrays become lists, numpy scalars Python scalars, ±∞ the strings
    ``"inf"`` and ``"-inf"``; a NaN is refused (a certificate never states a NaN).

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
        if math.isnan(x):
            raise ValidationError("a certificate cannot state NaN (not a number)")
        return x if math.isfinite(x) else ("inf" if x > 0 else "-inf")
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
        f"got {type(value).__name__} {value!r:.80}"
    )


def canonical_json(value: Any) -> str:
    """The compact canonical JSON text of ``value`` (sorted keys, no spaces)."""
    return json.dumps(
        canonical(value), sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False
    )


def sha256_of(value: Any) -> str:
    """SHA-256 (hex) of the UTF-8 canonical JSON of ``value``.

    Examples
    --------
    >>> sha256_of({"b": 1, "a": [0.1, 2]}) == sha256_of({"a": [0.1, 2], "b": 1})
    True
    """
    return hashlib.sha256(canonical_json(value).encode("utf-8")).hexdigest()


def digest_of(doc: Mapping[str, Any]) -> str:
    """``"sha256:<hex>"`` of the canonical JSON of ``doc`` without its ``digest`` field."""
    return "sha256:" + sha256_of({k: v for k, v in doc.items() if k != "digest"})


def dumps(doc: Mapping[str, Any]) -> str:
    """The byte-stable text of a document: sorted keys, two-space indentation, UTF-8, one
    trailing newline; NaN refused.

    Examples
    --------
    >>> print(dumps({"b": float("inf"), "a": 1}), end="")
    {
      "a": 1,
      "b": "inf"
    }
    """
    text = json.dumps(canonical(doc), sort_keys=True, indent=2, ensure_ascii=False, allow_nan=False)
    return text + "\n"


class _Strict:
    """``json.loads`` hooks that refuse NaN/Infinity literals and keys given twice."""

    def __init__(self) -> None:
        self.twice: list[str] = []

    def pairs(self, pairs: list[tuple[str, Any]]) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for k, v in pairs:
            if k in out:
                self.twice.append(k)
            out[k] = v
        return out

    @staticmethod
    def constant(name: str) -> Any:
        raise ValueError(f'{name} is not JSON (a certificate states an infinite κ as "inf")')


def _depth(text: str) -> int:
    depth = deepest = 0
    in_string = escaped = False
    for ch in text:
        if in_string:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                in_string = False
        elif ch == '"':
            in_string = True
        elif ch in "[{":
            depth += 1
            deepest = max(deepest, depth)
            if deepest > MAX_DEPTH:
                return deepest
        elif ch in "]}":
            depth -= 1
    return deepest


def loads(text: str, *, source: str = "certificate") -> tuple[dict[str, Any], list[str]]:
    """Parse a certificate strictly; return the document and the keys that appeared twice.

    Raises ValidationError (naming ``source``) for text that is not strict JSON, nests deeper
    than :data:`MAX_DEPTH`, or is not a JSON object.
    """
    if _depth(text) > MAX_DEPTH:
        raise ValidationError(
            f"{source} nests deeper than {MAX_DEPTH} levels; it is not a persuasive certificate"
        )
    hooks = _Strict()
    try:
        doc = json.loads(text, object_pairs_hook=hooks.pairs, parse_constant=hooks.constant)
    except json.JSONDecodeError as exc:
        raise ValidationError(
            f"{source} is not valid JSON: {exc.msg} at line {exc.lineno}, column {exc.colno}"
        ) from None
    except (ValueError, RecursionError) as exc:
        raise ValidationError(f"{source} is not strict JSON: {exc}") from None
    if not isinstance(doc, dict):
        raise ValidationError(f"{source} must hold a JSON object; got {type(doc).__name__}")
    return doc, hooks.twice


def envelope(
    kind: str,
    claim: Mapping[str, Any],
    guarantee: Mapping[str, Any],
    notes: list[str],
    publication: Mapping[str, Any],
    *,
    version: str | None = None,
    extra: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """The canonical certificate document, with its digest.

    ``version`` is the library version to state (default: this one); ``extra`` adds
    kind-specific recomputed sections (e.g. the cells of a table with margins).
    """
    if version is None:
        import persuasive

        version = str(persuasive.__version__)
    doc: dict[str, Any] = {
        "format": FORMAT,
        "format_version": FORMAT_VERSION,
        "kind": kind,
        "library": {"name": LIBRARY_NAME, "version": version},
        "claim": canonical(claim),
        "guarantee": canonical({k: guarantee[k] for k in GUARANTEE_FIELDS}),
        "notes": [str(n) for n in notes],
        "publication": canonical(publication),
        **canonical(dict(extra or {})),
    }
    doc["digest"] = digest_of(doc)
    return doc


# --------------------------------------------------------------------------------------------
# Field-by-field comparison
# --------------------------------------------------------------------------------------------


def _show(x: Any, other: Any = None) -> str:
    """A value for a mismatch line; a long string is shown around where it differs from
    ``other``."""
    if isinstance(x, float):
        return "inf" if math.isinf(x) else repr(x)
    if isinstance(x, str):
        if len(x) <= 88:
            return repr(x)
        at = 0
        if isinstance(other, str):
            at = next(
                (i for i, (a, b) in enumerate(zip(x, other, strict=False)) if a != b),
                min(len(x), len(other)),
            )
        lo = max(0, at - 30)
        return ("..." if lo else "") + repr(x[lo : lo + 80]) + ("..." if lo + 80 < len(x) else "")
    if isinstance(x, (dict, list)):
        text = canonical_json(x)
        return text if len(text) <= 90 else text[:87] + "..."
    return json.dumps(x)


def _same(a: Any, b: Any) -> bool:
    """Exact equality of JSON values, with types: ``1`` is not ``1.0``, ``true`` not ``1``."""
    if type(a) is not type(b):
        return False
    if isinstance(a, float):
        return a == b or (math.isnan(a) and math.isnan(b))
    return bool(a == b)


def diff(stated: Any, expected: Any, path: str = "", *, label: Any = None) -> list[str]:
    """One sentence per difference between two JSON values, naming each field by its path.

    ``label(path, index, entry)`` may name list entries (e.g. a cell by its key) instead of by
    position. Extra and missing keys are named as such.

    Examples
    --------
    >>> for line in diff({"a": 1, "b": [1, 2], "x": 0}, {"a": 1.0, "b": [1, 3]}):
    ...     print(line)
    a: stated 1, recomputed 1.0
    b[1]: stated 2, recomputed 3
    x: not a field of this certificate (stated 0)
    """
    out: list[str] = []
    if isinstance(stated, dict) and isinstance(expected, dict):
        for k in sorted(set(stated) | set(expected), key=str):
            sub = f"{path}.{k}" if path else str(k)
            if k not in expected:
                out.append(f"{sub}: not a field of this certificate (stated {_show(stated[k])})")
            elif k not in stated:
                out.append(f"{sub}: missing (recomputed {_show(expected[k])})")
            else:
                out += diff(stated[k], expected[k], sub, label=label)
        return out
    if isinstance(stated, list) and isinstance(expected, list):
        if len(stated) != len(expected):
            return [
                f"{path}: {len(stated)} entries stated, {len(expected)} recomputed "
                f"(stated {_show(stated)}, recomputed {_show(expected)})"
            ]
        for i, (a, b) in enumerate(zip(stated, expected, strict=True)):
            name = label(path, i, b) if label is not None else None
            out += diff(a, b, f"{path}[{i if name is None else name}]", label=label)
        return out
    if not _same(stated, expected):
        out.append(
            f"{path}: stated {_show(stated, expected)}, recomputed {_show(expected, stated)}"
        )
    return out
