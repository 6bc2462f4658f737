"""``persuasive demo [OUT_DIR]``: the release workflow on real public data, then ``verify``."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from persuasive.cli import _common as c
from persuasive.cli._common import ForceOpt, JsonOpt, QuietOpt

app = typer.Typer(add_completion=False)


@app.command("demo")
def demo_cmd(
    out_dir: Annotated[
        Path,
        typer.Argument(help="Output folder: new, empty, or an earlier demo (replaced)."),
    ] = Path("persuasive-demo"),
    force: ForceOpt = False,
    quiet: QuietOpt = False,
    json_: JsonOpt = False,
) -> None:
    """Release real public data (bundled with statsmodels) end to end, then verify it.

    Writes the released table and means, their certificates and reports into OUT_DIR; exit 0
    when every release holds and verifies (a documented refusal counts), 1 otherwise.
    """
    from rich.table import Table
    from rich.text import Text

    from persuasive.release.demo import DEMO_STEPS, run_demo

    with c.progress(DEMO_STEPS, quiet or json_) as step:
        result = run_demo(out_dir, force=force, on_step=step)
    if json_:
        c.emit_json(result.to_dict())
        raise typer.Exit(0 if result.ok else 1)
    console = c.stdout()
    console.print(f"[bold]persuasive demo[/bold]: everything is in {Text(str(out_dir))}/\n")
    for item in result.items:
        grid = Table.grid(padding=(0, 2))
        grid.add_column(style="bold", no_wrap=True)
        grid.add_column(overflow="fold")
        if item.refusal is not None:
            grid.add_row("refused", Text(f"nothing released: {item.refusal}"))
        else:
            for role, path in item.files.items():
                grid.add_row(role, Text(str(path)))
            s = item.summary
            if "n_cells" in s:
                grid.add_row("cells", f"{s['n_cells']}, {s.get('n_suppressed', '?')} suppressed")
            grid.add_row("κ", c.num(item.kappa))
            grid.add_row("guarantee", Text(item.sentence))
            verdict = "verified" if item.verified else "NOT verified: " + "; ".join(item.mismatches)
            grid.add_row("verify", Text(verdict))
            grid.add_row("command", Text(item.command))
        console.print(Text(item.title, style="bold underline"))
        console.print(grid)
        console.print()
    for note in result.notes:
        console.print(note, markup=False)
    done = sum(i.refusal is None and i.ok for i in result.items)
    refused = sum(i.refusal is not None for i in result.items)
    console.print(
        f"{done} releases written and verified, {refused} refused with a reason"
        + ("." if result.ok else "; SOME RELEASE FAILED."),
        markup=False,
    )
    raise typer.Exit(0 if result.ok else 1)
