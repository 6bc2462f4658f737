"""The ``persuasive`` command: certify and audit TOML specs (a thin typer app over the library).

Commands
--------
``persuasive certify SPEC.toml [--json]``
    Prove a guarantee (:func:`persuasive.certify`).
``persuasive audit SPEC.toml [--json] [--seed N] [--samples N]``
    Search for a violation (:func:`persuasive.audit`).
``persuasive examples [--json] [--quiet]``
    Certify and audit every bundled example spec and print one table.
``persuasive validate SPEC.toml [--json]``
    Parse a spec and print what it declares.
``persuasive version``
    Print the version.
``persuasive release table|mean DATA ... --out DIR``, ``persuasive verify CERT.json``,
``persuasive demo [DIR]``
    Release data with a certificate, re-check a certificate, run the real-data demo
    (:mod:`persuasive.cli_release`).

Exit status: 0 the guarantee holds, 1 it does not hold (or, for ``examples``, some example did
not reproduce), 2 bad input — any :class:`~persuasive.errors.PersuasiveError`, printed as one
``error: ...`` line on standard error, without a traceback. The spec format is in
``docs/cli.md`` and :mod:`persuasive.spec`.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, NoReturn, TypeVar

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table
from rich.text import Text

from persuasive import _tolerances as tol
from persuasive.cli_release import demo, release_app, verify
from persuasive.errors import PersuasiveError
from persuasive.spec import Spec, example_paths, load_spec

app = typer.Typer(
    name="persuasive",
    help=(
        "Certify and audit Persuasive Privacy guarantees (Bon et al. 2026) from TOML specs; "
        "release tables and means with a certificate anyone can verify."
    ),
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)

SpecArg = Annotated[
    Path, typer.Argument(help="A TOML spec file (see docs/cli.md).", show_default=False)
]
JsonOpt = Annotated[bool, typer.Option("--json", help="Print JSON instead of a table.")]
SeedOpt = Annotated[
    int | None, typer.Option("--seed", help="Random seed of the audit.", min=0, show_default=False)
]
SamplesOpt = Annotated[
    int | None,
    typer.Option("--samples", help="Monte Carlo sample size.", min=2, show_default=False),
]
QuietOpt = Annotated[bool, typer.Option("--quiet", "-q", help="No progress messages.")]

T = TypeVar("T")


def _stdout() -> Console:
    console = Console(highlight=False, soft_wrap=False)
    if not console.is_terminal and "COLUMNS" not in os.environ:
        console.width = 200  # pipes and CI logs: keep the example table on one line per spec
    return console


def _fail(exc: BaseException) -> NoReturn:
    """Report bad input as one line on stderr and exit with status 2."""
    message = " ".join(str(exc).split())
    typer.echo(f"error: {message}", err=True)
    raise typer.Exit(2)


def _guard(call: Callable[[], T]) -> T:
    try:
        return call()
    except PersuasiveError as exc:
        _fail(exc)


def _emit_json(payload: Any) -> None:
    typer.echo(json.dumps(payload, indent=2))


@contextmanager
def _status(message: str, quiet: bool) -> Iterator[None]:
    if quiet:
        yield
        return
    with Console(stderr=True).status(message):
        yield


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


def _mechanism_text(spec: Spec) -> str:
    return _call(spec.mechanism.describe(), "mechanism")


def _definition_text(spec: Spec) -> str:
    d = spec.definition.describe()
    if d["definition"] == "PersuasivePrivacy":
        return f"PP κ={_num(d['kappa'])}, δ={_num(d['delta'])}"
    risk = dict(d["risk"])
    label = risk.pop("risk")
    if label == "f-divergence":
        label = risk.pop("name")
    extra = ", ".join(f"{k}={_num(val)}" for k, val in risk.items())
    return f"PPE κ={_num(d['kappa'])} ({label}{', ' + extra if extra else ''})"


def _spec_rows(spec: Spec) -> list[tuple[str, str]]:
    return [
        ("spec", spec.name + (f"  ({spec.source})" if spec.source else "")),
        ("description", spec.description or "-"),
        ("mechanism", _mechanism_text(spec)),
        ("definition", _definition_text(spec)),
    ]


def _print_pairs(rows: list[tuple[str, str]], title: str) -> None:
    table = Table(title=title, show_header=False, title_justify="left")
    table.add_column(style="bold")
    table.add_column()
    for key, val in rows:
        table.add_row(key, Text(val))
    _stdout().print(table)


def _verdict(holds: bool) -> str:
    return "holds" if holds else "does NOT hold"


# --------------------------------------------------------------------------------------------
# Commands
# --------------------------------------------------------------------------------------------


@app.command()
def certify(spec: SpecArg, json_: JsonOpt = False) -> None:
    """Prove the spec's guarantee; exit 0 if it holds, 1 if not, 2 on bad input."""
    s = _guard(lambda: load_spec(spec))
    cert = _guard(s.certify)
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
        _print_pairs(rows, "Certificate")
        _stdout().print(Text(cert.explain()))
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
    s = _guard(lambda: load_spec(spec))
    with _status(f"auditing {s.name} ...", quiet or json_):
        result = _guard(lambda: s.audit(seed=seed, n_samples=samples))
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
        _print_pairs(rows, "Audit")
        _stdout().print(Text(result.explain()))
    raise typer.Exit(0 if result.holds else 1)


@app.command()
def validate(spec: SpecArg, json_: JsonOpt = False) -> None:
    """Parse a spec and print what it declares; exit 0 if valid, 2 otherwise."""
    s = _guard(lambda: load_spec(spec))
    if json_:
        _emit_json({"spec": str(spec), **s.describe()})
    else:
        _print_pairs(_spec_rows(s), "Spec")


@dataclass
class _Row:
    """One bundled example, certified and audited (presentation only)."""

    spec: Spec | None
    path: Path
    certificate: Any = None
    audit: Any = None
    errors: tuple[str, ...] = ()

    @property
    def consistent(self) -> bool | None:
        """Whether the audit's κ stays below the certificate's (None if either is missing)."""
        if self.certificate is None or self.audit is None:
            return None
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


def _examples_table(rows: list[_Row]) -> Table:
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
    rows = []
    for path in example_paths():
        with _status(f"certifying and auditing {path.stem} ...", quiet or json_):
            rows.append(_run_example(path, seed, samples))
    if json_:
        _emit_json([r.to_dict() for r in rows])
    else:
        console = _stdout()
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


@app.command()
def version() -> None:
    """Print the version of persuasive."""
    from persuasive import __version__

    typer.echo(f"persuasive {__version__}")


app.add_typer(release_app, name="release")
app.command()(verify)
app.command()(demo)


def main() -> None:  # pragma: no cover - console entry point alias
    app()


if __name__ == "__main__":  # pragma: no cover
    main()
