"""Reading a spec document into a mechanism and a definition, and the public entry points."""

from __future__ import annotations

import difflib
import importlib.resources
import tomllib
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from persuasive.definitions import (
    Definition,
    FDivergence,
    Mean,
    PersuasivePrivacy,
    PersuasivePrivacyExpectation,
    Renyi,
    Risk,
)
from persuasive.errors import ValidationError
from persuasive.mechanisms.base import Mechanism
from persuasive.spec.schema import (
    AUDIT,
    DEFINITION,
    DEFINITION_KEYS,
    MECHANISMS,
    PRIOR_CLASSES,
    SCORES,
    TOP_LEVEL,
    Builder,
    Param,
    echo,
)


def _unknown(key: str, path: str, allowed: tuple[str, ...], where: str) -> ValidationError:
    full = f"{path}.{key}" if path else key
    close = difflib.get_close_matches(key, allowed, n=1)
    hint = f" (did you mean '{close[0]}'?)" if close else ""
    return ValidationError(
        f"unknown key '{full}'{hint}; allowed keys in {where}: {', '.join(allowed)}"
    )


def _read(
    table: Any,
    path: str,
    params: Mapping[str, Param],
    *,
    allowed: tuple[str, ...] | None = None,
    where: str | None = None,
    skip: tuple[str, ...] = (),
) -> dict[str, Any]:
    """Validate a table against ``params``: reject unknown keys, fill defaults, check values.

    ``allowed`` restricts the keys (default: all of ``params``), ``skip`` names keys already
    read by the caller (such as ``type``), listed as allowed but not returned.
    """
    where = where or (f"[{path}]" if path else "the spec")
    if not isinstance(table, dict):
        raise ValidationError(f"{path or 'the spec'} must be a table; got {echo(table)}")
    keys = allowed if allowed is not None else (*skip, *params)
    for key in table:
        if key not in keys:
            raise _unknown(key, path, keys, where)
    out: dict[str, Any] = {}
    for name in keys:
        if name in skip:
            continue
        p = params[name]
        full = f"{path}.{name}" if path else name
        if name in table:
            out[name] = p.check(full, table[name])
        elif p.required:
            raise ValidationError(f"{full} is required: {p.domain()}")
        else:
            out[name] = p.default
    return out


def _typed(
    table: Any,
    path: str,
    tag: str,
    registry: Mapping[str, tuple[dict[str, Param], Builder]],
    nested: Callable[[Any, str], Any] | None = None,
) -> Any:
    """Read a table whose ``tag`` key selects its schema in ``registry``, and build it."""
    if not isinstance(table, dict):
        raise ValidationError(f"{path} must be a table; got {echo(table)}")
    choices = tuple(registry)
    if tag not in table:
        raise ValidationError(
            f"{path}.{tag} is required: one of " + ", ".join(f'"{c}"' for c in choices)
        )
    kind = Param("str", choices=choices).check(f"{path}.{tag}", table[tag])
    params, build = registry[kind]
    values = _read(table, path, params, skip=(tag,), where=f'[{path}] with {tag} = "{kind}"')
    if nested is not None:
        for key, p in params.items():
            if p.kind == "table":
                values[key] = nested(values[key], f"{path}.{key}")
    try:
        return build(values)
    except ValidationError as exc:
        raise ValidationError(f"{path}: {exc}") from None


def _mechanism(table: Any, path: str) -> Mechanism:
    m = _typed(table, path, "type", MECHANISMS, nested=_mechanism)
    assert isinstance(m, Mechanism)
    return m


def _risk(values: dict[str, Any]) -> Risk:
    risk = values["risk"]
    alpha = values["alpha"]
    if risk == "renyi":
        if alpha is None:
            raise ValidationError(
                'definition.alpha is required when risk = "renyi": ' + DEFINITION["alpha"].domain()
            )
        return Renyi(alpha)
    if alpha is not None:
        raise ValidationError(
            f'definition.alpha is only allowed with risk = "renyi"; got risk = "{risk}"'
        )
    return Mean() if risk == "mean" else FDivergence(risk)


def _definition(table: Any) -> Definition:
    path = "definition"
    if not isinstance(table, dict):
        raise ValidationError(f"{path} must be a table; got {echo(table)}")
    if "kind" not in table:
        raise ValidationError(f"{path}.kind is required: {DEFINITION['kind'].domain()}")
    kind = DEFINITION["kind"].check(f"{path}.kind", table["kind"])
    for key in table:
        other = [k for k, keys in DEFINITION_KEYS.items() if key in keys and k != kind]
        if key not in DEFINITION_KEYS[kind] and other:
            raise ValidationError(
                f'{path}.{key} is only allowed with kind = "{other[0]}"; got kind = "{kind}" '
                f"(allowed keys: {', '.join(DEFINITION_KEYS[kind])})"
            )
    values = _read(
        table,
        path,
        DEFINITION,
        allowed=DEFINITION_KEYS[kind],
        where=f'[{path}] with kind = "{kind}"',
    )
    scores = [
        _typed(s, f"{path}.scores[{k}]", "type", SCORES) for k, s in enumerate(values["scores"])
    ]
    priors = _typed(values["priors"], f"{path}.priors", "class", PRIOR_CLASSES)
    try:
        if kind == "pp":
            return PersuasivePrivacy(scores, priors, values["kappa"], values["delta"])
        return PersuasivePrivacyExpectation(scores, priors, values["kappa"], _risk(values))
    except ValidationError as exc:
        msg = str(exc)
        raise ValidationError(msg if msg.startswith(path) else f"{path}: {msg}") from None


# --------------------------------------------------------------------------------------------
# Public API
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Spec:
    """A parsed spec: the mechanism, the definition and how to present and audit them.

    Iterating gives ``(mechanism, definition)``, so ``m, d = load_spec(path)`` works.

    Attributes
    ----------
    mechanism : Mechanism
        The release mechanism M.
    definition : PersuasivePrivacy or PersuasivePrivacyExpectation
        The guarantee to check.
    name : str
        Short name (the file name without ``.toml`` unless the spec sets ``name``).
    description : str
        One line for humans.
    expected : {"holds", "fails"} or None
        The verdict the author expects, checked by ``persuasive examples``.
    audit_options : dict
        Options for :func:`persuasive.audit` that the spec sets (``n_samples``, ``seed`` —
        passed as ``rng`` —, ``confidence``, ``n_starts``).
    source : str or None
        The file the spec was read from.
    """

    mechanism: Mechanism
    definition: Definition
    name: str = ""
    description: str = ""
    expected: str | None = None
    audit_options: Mapping[str, Any] = field(default_factory=dict)
    source: str | None = None

    def __iter__(self) -> Iterator[Any]:
        yield self.mechanism
        yield self.definition

    def certify(self) -> Any:
        """Certify the mechanism against the definition (:func:`persuasive.certify`)."""
        from persuasive.certify import certify

        return certify(self.mechanism, self.definition)

    def audit(self, **overrides: Any) -> Any:
        """Audit with the spec's ``[audit]`` options, updated by ``overrides``
        (:func:`persuasive.audit`); ``None`` overrides are ignored."""
        from persuasive.audit import audit

        options = {
            **self.audit_options,
            **{k: val for k, val in overrides.items() if val is not None},
        }
        if "seed" in options:  # the spec's "seed" is audit()'s ``rng``
            options["rng"] = options.pop("seed")
        return audit(self.mechanism, self.definition, **options)

    def describe(self) -> dict[str, Any]:
        """A JSON-ready description (name, source, mechanism, definition)."""
        return {
            "name": self.name,
            "description": self.description,
            "source": self.source,
            "expected": self.expected,
            "mechanism": self.mechanism.describe(),
            "definition": self.definition.describe(),
            "audit": dict(self.audit_options),
        }


def spec_from_dict(
    data: Mapping[str, Any], *, source: str | None = None, name: str | None = None
) -> Spec:
    """Build a :class:`Spec` from a parsed TOML document.

    Parameters
    ----------
    data : mapping
        The document, e.g. ``tomllib.load(f)``.
    source : str, optional
        Where it came from (kept in the spec, shown in reports).
    name : str, optional
        Name used when the document has no ``name`` key.

    Returns
    -------
    Spec

    Raises
    ------
    ValidationError
        For an unknown key or table, a missing key or a value outside its domain; the message
        names the key path (e.g. ``definition.priors.r2``), echoes the value and says what is
        allowed.
    """
    top = _read(dict(data), "", TOP_LEVEL, where="the top level of a spec")
    mechanism = _mechanism(top["mechanism"], "mechanism")
    definition = _definition(top["definition"])
    audit = _read(top["audit"] or {}, "audit", AUDIT)
    return Spec(
        mechanism=mechanism,
        definition=definition,
        name=top["name"] or name or "",
        description=top["description"],
        expected=top["expected"],
        audit_options={k: val for k, val in audit.items() if val is not None},
        source=source,
    )


def load_spec(path: str | Path) -> Spec:
    """Read and validate a TOML spec file.

    Parameters
    ----------
    path : str or Path
        The ``.toml`` file.

    Returns
    -------
    Spec
        Named after the file unless the spec sets ``name``.

    Raises
    ------
    ValidationError
        If the file is missing or unreadable, is not valid TOML (the message gives the line and
        column) or does not follow the schema (see :func:`spec_from_dict`).
    """
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ValidationError(f"spec file '{p}' not found") from None
    except IsADirectoryError:
        raise ValidationError(f"spec file '{p}' is a directory; pass a .toml file") from None
    except UnicodeDecodeError:
        raise ValidationError(f"spec file '{p}' is not UTF-8 text") from None
    except OSError as exc:
        raise ValidationError(f"cannot read spec file '{p}': {exc.strerror}") from None
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ValidationError(f"spec file '{p}' is not valid TOML: {exc}") from None
    try:
        return spec_from_dict(data, source=str(p), name=p.stem)
    except ValidationError as exc:
        raise ValidationError(f"{p}: {exc}") from None


def example_paths() -> list[Path]:
    """The bundled example specs (``persuasive/examples/*.toml``), sorted by name.

    Examples
    --------
    >>> from persuasive.spec import example_paths
    >>> "prop7_exact_mean" in [p.stem for p in example_paths()]
    True
    """
    bundled = importlib.resources.files("persuasive") / "examples"
    return sorted(Path(str(p)) for p in bundled.iterdir() if p.name.endswith(".toml"))
