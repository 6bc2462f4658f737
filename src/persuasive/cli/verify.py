"""``persuasive verify CERT.json [--published DIR]``: recompute a certificate, say what it claims.

Exit status 0 only when the certificate is consistent (no field edited) and claims a guarantee
that holds as stated; 1 when a field disagrees (each one named) or the certificate claims no
guarantee; 2 when the file is not a readable persuasive certificate.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from persuasive.cli import _common as c
from persuasive.cli._common import JsonOpt, QuietOpt

app = typer.Typer(add_completion=False)


@app.command("verify")
def verify_cmd(
    certificate: Annotated[
        Path,
        typer.Argument(
            help="A certificate.json written by a release.",
            show_default=False,
            metavar="CERT.json",
        ),
    ],
    json_: JsonOpt = False,
    published: Annotated[
        list[Path] | None,
        typer.Option(
            "--published",
            help="The release folder (or its published files): also recompute the publication "
            "section and check the published files (default: the certificate's own folder, "
            "when it holds them). Needed for a table with margins.",
            metavar="DIR_OR_FILE",
            show_default=False,
        ),
    ] = None,
    quiet: QuietOpt = False,
) -> None:
    """Recompute a certificate and compare every field; exit 0 only if it is consistent and
    claims a guarantee that holds, 1 if not (a field differs, or it claims no guarantee), 2 if
    it is not a readable persuasive certificate or the publication cannot be found."""
    from persuasive.report.verify import publication_beside, verify_certificate

    given = published or None
    if given is None:  # in a release folder: check the published files beside it too
        beside = publication_beside(certificate)
        given = None if beside is None else [beside]
    with c.progress(["verify"], quiet or json_) as step:
        step(f"verifying {certificate} ...")
        result = verify_certificate(certificate, published=given)
    if json_:
        c.emit_json({"certificate": str(certificate), **result.to_dict()})
    elif result.ok:  # plain lines, never wrapped: one line per finding, for scripts too
        typer.echo(result.explain())
    else:
        typer.echo(f"NOT verified: {certificate}")
        if not result.consistent:
            for m in result.mismatches:
                typer.echo(f"mismatch: {m}")
        else:
            typer.echo(f"the certificate claims no guarantee: {result.statement}")
    raise typer.Exit(0 if result.ok else 1)
