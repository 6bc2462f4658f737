"""The ``persuasive`` command: a thin typer app over the library, one module per command group.

* :mod:`persuasive.cli.spec` — ``certify``, ``audit``, ``validate``, ``examples`` (TOML specs);
* :mod:`persuasive.cli.release` — ``release table`` (with :mod:`~persuasive.cli.margins` for
  ``--margins``), ``release mean``, and :mod:`~persuasive.cli.linear` ``release linear``;
* :mod:`persuasive.cli.verify` — ``verify``; :mod:`persuasive.cli.demo` — ``demo``;
* :mod:`persuasive.cli._app` — error handling and exit codes (0 holds, 1 does not hold, 2 bad
  input, 3 internal error); :mod:`persuasive.cli._common` — shared options and printing.

Importing this package imports typer only: every command imports the library when it runs, so
``persuasive --help`` and ``persuasive --version`` answer fast.
"""

from __future__ import annotations

from typing import Annotated

import typer

from persuasive.cli import choose, demo, release, spec, verify
from persuasive.cli._app import DEBUG, PersuasiveGroup

__all__ = ["app", "main"]

app = typer.Typer(
    name="persuasive",
    cls=PersuasiveGroup,
    help=(
        "Certify and audit Persuasive Privacy guarantees (Bon et al. 2026) from TOML specs; "
        "release count tables, means and linear statistics with a certificate anyone can "
        "verify.\n\n"
        "Exit status: 0 holds / verified; 1 does not hold, refused, tampered, claims no "
        "guarantee, or a violation found; 2 bad input or usage (one 'error:' line); 3 internal "
        "error (one line; the traceback with --debug); 128 + the signal when interrupted."
    ),
    no_args_is_help=True,
    add_completion=True,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
)


def _version(value: bool) -> None:
    if value:
        from importlib.metadata import PackageNotFoundError, version

        try:
            typer.echo(f"persuasive {version('persuasive-privacy')}")
        except PackageNotFoundError:  # pragma: no cover - running from a source tree
            typer.echo("persuasive (not installed)")
        raise typer.Exit(0)


@app.callback()
def _root(
    debug: Annotated[
        bool, typer.Option("--debug", help="Print the traceback of an internal error (exit 3).")
    ] = False,
    version_: Annotated[
        bool,
        typer.Option(
            "--version", help="Print the version and exit.", callback=_version, is_eager=True
        ),
    ] = False,
) -> None:
    """Persuasive Privacy: certify, audit, release, verify."""
    if debug:
        DEBUG["on"] = True


for _group in (spec.app, verify.app, demo.app):
    for _cmd in _group.registered_commands:
        app.registered_commands.append(_cmd)
app.add_typer(release.app, name="release")
app.add_typer(choose.app, name="choose")


@app.command("version")
def version_cmd() -> None:
    """Print the version of persuasive."""
    _version(True)


def main() -> None:  # pragma: no cover - console entry point alias
    app()
