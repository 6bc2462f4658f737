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
from persuasive.cli._common import JsonOpt

app = typer.Typer(add_completion=False)


@app.command("verify")
def verify_cmd(
    certificate: Annotated[
        Path, typer.Argument(help="A certificate.json written by a release.", show_default=False)
    ],
    json_: JsonOpt = False,
    published: Annotated[
        list[Path] | None,
        typer.Option(
            "--published",
            help="The release folder (or its published files): also recompute the publication "
            "section and check the published files. Needed for a table with margins.",
            show_default=False,
        ),
    ] = None,
) -> None:
    """Recompute a certificate and compare every field; exit 0 only if it is consistent and
    claims a guarantee that holds, 1 if not, 2 if it is not a persuasive certificate."""
    from persuasive.report.verify import verify_certificate

    result = verify_certificate(certificate, published=published or None)
    if json_:
        c.emit_json({"certificate": str(certificate), **result.to_dict()})
    elif result.ok:
        c.stdout().print(result.explain(), markup=False)
    else:
        console = c.stdout()
        console.print(f"NOT verified: {certificate}", markup=False)
        if not result.consistent:
            for m in result.mismatches:
                console.print(f"mismatch: {m}", markup=False)
        else:
            console.print(f"the certificate claims no guarantee: {result.statement}", markup=False)
    raise typer.Exit(0 if result.ok else 1)
