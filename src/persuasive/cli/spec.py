"""``certify``, ``audit``, ``validate``, ``examples``: TOML specs, proved and searched.

Exit status: 0 the guarantee holds (``audit``: no violation found; ``examples``: every example
reproduced), 1 it does not (a violation found; some example did not reproduce), 2 bad input, 3
an internal error (:mod:`persuasive.cli._app`).
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from persuasive.cli._common import JsonOpt, QuietOpt, SeedOpt, checked, print_pairs
from persuasive.cli._common import stdout as _stdout

if TYPE_CHECKING:
    from persuasive.spec import Spec

app = typer.Typer(add_completion=False)

SpecArg = Annotated[
    Path,
    typer.Argument(
        help="A TOML spec file (see docs/cli.md), or - to read it from standard input.",
        show_default=False,
        metavar="SPEC.toml",
    ),
]
SamplesOpt = Annotated[
    int | None,
    typer.Option(
        "--samples",
        help="Monte Carlo sample size (2 to 10^10; drawn in chunks).",
        show_default=False,
    ),
]


def _emit_json(payload: Any) -> None:
    from persuasive.cli._common import emit_json

    emit_json(payload)


def _load(spec: Path) -> Spec:
    if str(spec) == "-":
        return _load_stdin()
    from persuasive.spec import load_spec

    return load_spec(spec)


def _load_stdin() -> Spec:
    """The spec read from standard input (``-``), named ``stdin`` unless it sets ``name``."""
    import sys
    import tomllib

    from persuasive.errors import ValidationError
    from persuasive.spec import spec_from_dict

    where = "the spec on standard input"
    try:
        text = sys.stdin.buffer.read().decode("utf-8")
    except UnicodeDecodeError:
        raise ValidationError(f"{where} is not UTF-8 text") from None
    except (OSError, AttributeError, ValueError) as exc:
        raise ValidationError(f"cannot read {where}: {exc}") from None
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ValidationError(f"{where} is not valid TOML: {exc}") from None
    try:
        return spec_from_dict(data, source="<stdin>", name="stdin")
    except ValidationError as exc:
        raise ValidationError(f"<stdin>: {exc}") from None


def _status(message: str, quiet: bool) -> Any:
    from persuasive.cli._common import progress

    return progress([message], quiet)


# --------------------------------------------------------------------------------------------
# Presentation (no computation)
# --------------------------------------------------------------------------------------------


def _num(x: Any) -> str:
    if isinstance(x, str):
        return x
    if x is None:
        return "-"
    x = float(x)
    return "inf" if math.isinf(x) else f"{x:.6g}"


def _call(d: dict[str, Any], head: str) -> str:
    name = str(d.get(head, "?")).removesuffix("Mechanism")
    args = []
    for k, val in d.items():
        if k == head:
            continue
        if isinstance(val, dict):
            args.append(_call(val, head) if head in val else f"{k}={val}")
        elif isinstance(val, float):
            args.append(f"{k}={_num(val)}")
        elif isinstance(val, list) and len(str(val)) > 30:
            args.append(f"{k}=[...]")
        else:
            args.append(f"{k}={val}")
    return f"{name}({', '.join(args)})"


def _mechanism_text(spec: Any) -> str:
    return _call(spec.mechanism.describe(), "mechanism")


def _definition_text(spec: Any) -> str:
    d = spec.definition.describe()
    if d["definition"] == "PersuasivePrivacy":
        return f"PP κ={_num(d['kappa'])}, δ={_num(d['delta'])}"
    risk = dict(d["risk"])
    label = risk.pop("risk")
    if label == "f-divergence":
        label = risk.pop("name")
    extra = ", ".join(f"{k}={_num(val)}" for k, val in risk.items())
    return f"PPE κ={_num(d['kappa'])} ({label}{', ' + extra if extra else ''})"


def _spec_rows(spec: Any) -> list[tuple[str, str]]:
    return [
        ("spec", spec.name + (f"  ({spec.source})" if spec.source else "")),
        ("description", spec.description or "-"),
        ("mechanism", _mechanism_text(spec)),
        ("definition", _definition_text(spec)),
    ]


def _verdict(holds: bool) -> str:
    return "holds" if holds else "does NOT hold"


# --------------------------------------------------------------------------------------------
# Commands
# --------------------------------------------------------------------------------------------


@app.command()
def certify(spec: SpecArg, json_: JsonOpt = False, quiet: QuietOpt = False) -> None:
    """Prove the spec's guarantee; exit 0 if it holds, 1 if not, 2 on bad input."""
    s = _load(spec)
    with _status(f"certifying {s.name} ...", quiet or json_) as step:
        step(f"certifying {s.name} ...")
        cert = s.certify()
    if json_:
        _emit_json({"spec": str(spec), "name": s.name, **cert.to_dict()})
    else:
        rows = [
            *_spec_rows(s),
            ("certified κ", _num(cert.kappa)),
            ("at δ", _num(cert.delta)),
            ("basis", str(cert.basis)),
            ("exact", "yes" if cert.exact else "no (upper bound)"),
            *[("note", str(n)) for n in cert.notes],
            ("verdict", _verdict(cert.holds)),
        ]
        print_pairs(rows, "Certificate")
        _stdout().print(cert.explain(), markup=False)
    raise typer.Exit(0 if cert.holds else 1)


@app.command()
def audit(
    spec: SpecArg,
    json_: JsonOpt = False,
    seed: SeedOpt = None,
    samples: SamplesOpt = None,
    quiet: QuietOpt = False,
) -> None:
    """Search for a violation; exit 0 if none is found, 1 if one is, 2 on bad input."""
    s = _load(spec)
    seed, samples = checked("--seed", seed), checked("--samples", samples)
    with _status(f"auditing {s.name} ...", quiet or json_) as step:
        step(f"auditing {s.name} ...")
        result = s.audit(seed=seed, n_samples=samples)
    if json_:
        _emit_json({"spec": str(spec), "name": s.name, **result.to_dict()})
    else:
        rows = [
            *_spec_rows(s),
            ("audited κ", _num(result.kappa)),
            ("at δ", _num(result.delta)),
            ("method", str(result.method)),
            ("confidence", _num(result.confidence)),
            ("evaluations", str(result.evaluations)),
            *[("note", str(n)) for n in result.notes],
            ("verdict", "no violation found" if result.holds else "VIOLATION found"),
        ]
        if result.witness is not None:
            rows.insert(-1, ("witness", json.dumps(result.witness.to_dict())))
        print_pairs(rows, "Audit")
        _stdout().print(result.explain(), markup=False)
    raise typer.Exit(0 if result.holds else 1)


@app.command()
def validate(spec: SpecArg, json_: JsonOpt = False) -> None:
    """Parse a spec and print what it declares; exit 0 if valid, 2 otherwise."""
    s = _load(spec)
    if json_:
        _emit_json({"spec": str(spec), **s.describe()})
    else:
        print_pairs(_spec_rows(s), "Spec")


@dataclass
class _Row:
    """One bundled example, certified and audited (presentation only)."""

    spec: Any
    path: Path
    certificate: Any = None
    audit: Any = None
    errors: tuple[str, ...] = ()

    @property
    def consistent(self) -> bool | None:
        """Whether the audit's κ stays below the certificate's (None if either is missing)."""
        if self.certificate is None or self.audit is None:
            return None
        from persuasive import _tolerances as tol

        return bool(self.audit.kappa <= self.certificate.kappa + tol.LOSS_ATOL)

    @property
    def verdict(self) -> str:
        if self.certificate is not None:
            return "holds" if self.certificate.holds else "fails"
        if self.audit is not None and not self.audit.holds:
            return "fails"
        return "unknown"

    @property
    def ok(self) -> bool:
        expected = None if self.spec is None else self.spec.expected
        return (
            not self.errors
            and self.consistent is not False
            and (expected is None or expected == self.verdict)
        )

    def to_dict(self) -> dict[str, Any]:
        s = self.spec
        return {
            "spec": str(self.path),
            "name": self.path.stem if s is None else s.name,
            "description": None if s is None else s.description,
            "expected": None if s is None else s.expected,
            "certificate": None if self.certificate is None else self.certificate.to_dict(),
            "audit": None if self.audit is None else self.audit.to_dict(),
            "audit_below_certificate": self.consistent,
            "verdict": self.verdict,
            "ok": self.ok,
            "errors": list(self.errors),
        }


def _run_example(path: Path, seed: int | None, samples: int | None) -> _Row:
    from persuasive.errors import PersuasiveError
    from persuasive.spec import load_spec

    try:
        spec = load_spec(path)
    except PersuasiveError as exc:
        return _Row(None, path, errors=(f"spec: {exc}",))
    row = _Row(spec, path)
    errors = []
    try:
        row.certificate = spec.certify()
    except PersuasiveError as exc:
        errors.append(f"certify: {exc}")
    try:
        row.audit = spec.audit(seed=seed, n_samples=samples)
    except PersuasiveError as exc:
        errors.append(f"audit: {exc}")
    row.errors = tuple(errors)
    return row


def _examples_table(rows: list[_Row]) -> Any:
    from rich.table import Table
    from rich.text import Text

    table = Table(
        title="Bundled examples: certificate (proof) vs audit (search)", title_justify="left"
    )
    for col in (
        "spec",
        "mechanism",
        "definition (κ, δ)",
        "certified κ",
        "basis",
        "exact",
        "audited κ",
        "audit ≤ cert",
        "verdict",
    ):
        table.add_column(col, overflow="fold")
    for r in rows:
        cert, aud = r.certificate, r.audit
        check = {None: "-", True: "ok", False: "CONFLICT"}[r.consistent]
        verdict = r.verdict
        if r.spec is not None and r.spec.expected is not None:
            verdict += (
                " (as expected)"
                if r.spec.expected == r.verdict
                else (f" (EXPECTED {r.spec.expected})")
            )
        table.add_row(
            *map(
                Text,
                (
                    r.path.stem,
                    "-" if r.spec is None else _mechanism_text(r.spec),
                    "-" if r.spec is None else _definition_text(r.spec),
                    "n/a" if cert is None else _num(cert.kappa),
                    "n/a" if cert is None else str(cert.basis),
                    "-" if cert is None else ("yes" if cert.exact else "bound"),
                    "n/a" if aud is None else _num(aud.kappa),
                    check,
                    verdict,
                ),
            )
        )
    return table


@app.command()
def examples(
    json_: JsonOpt = False,
    seed: SeedOpt = None,
    samples: SamplesOpt = None,
    quiet: QuietOpt = False,
) -> None:
    """Certify and audit every bundled example spec; exit 0 if all reproduce, else 1.

    An example reproduces when both steps run, the audited κ does not exceed the certified κ,
    and the verdict is the one the spec's ``expected`` key states.
    """
    from persuasive.spec import example_paths

    seed, samples = checked("--seed", seed), checked("--samples", samples)
    rows = []
    paths = example_paths()
    with _status("examples", quiet or json_) as step:
        for path in paths:
            step(f"certifying and auditing {path.stem} ...")
            rows.append(_run_example(path, seed, samples))
    if json_:
        _emit_json([r.to_dict() for r in rows])
    else:
        console = _stdout()
        from rich.markup import escape

        console.print(_examples_table(rows))
        for r in rows:
            if r.spec is not None and r.spec.description:
                console.print(f"[bold]{escape(r.path.stem)}[/bold]: {escape(r.spec.description)}")
        for r in rows:
            for e in r.errors:
                console.print(f"[red]{escape(r.path.stem)}[/red]: {escape(' '.join(e.split()))}")
        n_ok = sum(r.ok for r in rows)
        console.print(f"{n_ok} of {len(rows)} examples reproduced.")
    raise typer.Exit(0 if rows and all(r.ok for r in rows) else 1)
