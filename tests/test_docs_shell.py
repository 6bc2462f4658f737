"""Every ```bash block of README.md, docs/*.md and examples/README.md runs as written.

How a page is run
-----------------
The blocks of one page run in order, in one fresh temporary working directory holding a copy of
the repository's ``examples/`` (with ``examples/data/``, the bundled inputs), as a reader who
follows the page from its first command to its last would run them from the repository root.
Each command (a line, or lines joined by a trailing backslash) runs in its own ``bash -c``,
with the interpreter's ``bin/`` first on ``PATH`` (so ``persuasive`` and ``python`` are the
ones of the environment running the tests), and must exit with its documented status.

The documented status
---------------------
0 unless the command says otherwise in a comment: ``# exit 1`` (or ``# exit 1: violation
found``, ``# exit 0: verified``) at the end of the command's line, or on a comment line right
after it (``# exit 1, nothing written: ...``).

Blocks that are not run
-----------------------
A block is skipped, with a visible reason (a skipped test named after the page and line, so
``pytest -rs`` lists them and the summary counts them), when it installs packages (``pip
install``), when the Markdown line before it says ``<!-- not run: REASON -->``, or when a
program it calls other than ``persuasive``/``python`` is not installed here.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PAGES = sorted([ROOT / "README.md", ROOT / "examples" / "README.md", *(ROOT / "docs").glob("*.md")])
FENCE = re.compile(r"^```(?P<lang>[^\n`]*)\n(?P<body>.*?)^```[ \t]*$", re.S | re.M)
NOT_RUN = re.compile(r"<!--\s*not run:\s*(?P<reason>.*?)\s*-->\s*$")
EXIT = re.compile(r"#\s*exit\s+(?P<status>\d+)\b")
SHELL_LANGS = {"bash", "sh", "shell"}
#: Programs a block may call without a check that they are installed (the tests provide them).
PROVIDED = {"persuasive", "python", "cd", "echo", "cat", "ls", "mkdir", "test", "head"}
#: The longest a single documented command may take (the demo takes a few seconds).
TIMEOUT = 120


@dataclass
class Command:
    text: str
    line: int
    status: int = 0


@dataclass
class Block:
    page: Path
    line: int
    commands: list[Command] = field(default_factory=list)
    skip: str | None = None

    @property
    def where(self) -> str:
        return f"{self.page.relative_to(ROOT)}:{self.line}"


def _commands(body: str, first_line: int) -> list[Command]:
    """Split a block into commands: backslash continuations joined, comments parsed."""
    out: list[Command] = []
    pending: list[str] = []
    start = first_line
    for i, raw in enumerate(body.splitlines()):
        line = raw.rstrip()
        if not pending:
            start = first_line + i
        stripped = line.strip()
        if not pending and (not stripped or stripped.startswith("#")):
            m = EXIT.search(stripped)
            if m and out:  # a comment line right after a command states its exit status
                out[-1].status = int(m.group("status"))
            continue
        if line.endswith("\\"):
            pending.append(line)  # the backslash stays: bash joins the lines itself
            continue
        pending.append(line)
        text = "\n".join(pending)
        pending = []
        m = EXIT.search(text)
        out.append(Command(text=text, line=start, status=int(m.group("status")) if m else 0))
    assert not pending, f"a command ends with a backslash at line {start}"
    return out


def _programs(command: str) -> list[str]:
    """The programs a command starts: the first word of the command and of each part of a
    pipe or list, found by shell tokenisation (quotes respected, ``VAR=value`` prefixes
    skipped)."""
    lexer = shlex.shlex(command.replace("\\\n", " "), posix=True, punctuation_chars=True)
    lexer.whitespace_split = True
    lexer.commenters = "#"
    names, expect = [], True
    for token in lexer:
        if token in {"&&", "||", "|", ";", "&", "(", ")", "$("}:
            expect = True
        elif expect and re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*=.*", token):
            continue  # an environment assignment before the program
        elif expect:
            names.append(token)
            expect = False
    return names


def _blocks(page: Path) -> list[Block]:
    text = page.read_text(encoding="utf-8")
    blocks = []
    for m in FENCE.finditer(text):
        if m.group("lang").strip() not in SHELL_LANGS:
            continue
        line = text[: m.start()].count("\n") + 1
        before = text[: m.start()].rstrip("\n").splitlines()
        block = Block(page, line, _commands(m.group("body"), line + 1))
        marker = NOT_RUN.search(before[-1]) if before else None
        if marker:
            block.skip = f"not run: {marker.group('reason')}"
        elif re.search(r"\bpip install\b", m.group("body")):
            block.skip = "not run: installs packages (pip install)"
        else:
            missing = sorted(
                {
                    p
                    for c in block.commands
                    for p in _programs(c.text)
                    if p not in PROVIDED and shutil.which(p) is None
                }
            )
            if missing:
                block.skip = f"not run: needs {', '.join(missing)}, not installed here"
        blocks.append(block)
    return blocks


ALL = {page: _blocks(page) for page in PAGES}
RUN_PAGES = [p for p, bs in ALL.items() if any(b.skip is None for b in bs)]
SKIPPED = [b for bs in ALL.values() for b in bs if b.skip is not None]


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    env["NO_COLOR"] = "1"
    env["COLUMNS"] = "100"
    env.pop("PERSUASIVE_DEBUG", None)
    return env


def _workdir(tmp: Path) -> Path:
    work = tmp / "repo"
    work.mkdir()
    shutil.copytree(
        ROOT / "examples",
        work / "examples",
        ignore=shutil.ignore_patterns("__pycache__", "*.pyc", "__marimo__"),
    )
    return work


@pytest.mark.parametrize("page", RUN_PAGES, ids=[str(p.relative_to(ROOT)) for p in RUN_PAGES])
def test_page_shell_blocks_run_as_written(page: Path, tmp_path: Path) -> None:
    work = _workdir(tmp_path)
    env = _env()
    ran, failures = 0, []
    for block in ALL[page]:
        if block.skip is not None:
            continue
        for cmd in block.commands:
            proc = subprocess.run(
                ["bash", "-c", cmd.text],
                cwd=work,
                env=env,
                capture_output=True,
                text=True,
                timeout=TIMEOUT,
                check=False,
            )
            ran += 1
            if proc.returncode != cmd.status:  # go on: report every command that fails
                failures.append(
                    f"{page.relative_to(ROOT)}:{cmd.line}: `{cmd.text}` exited "
                    f"{proc.returncode}, documented {cmd.status}\n--- stdout ---\n"
                    f"{proc.stdout[-2000:]}\n--- stderr ---\n{proc.stderr[-2000:]}"
                )
    assert ran > 0
    assert not failures, "\n\n".join(failures)


@pytest.mark.parametrize("block", SKIPPED, ids=[b.where for b in SKIPPED])
def test_skipped_block_says_why(block: Block) -> None:
    """Each block that is not run shows up as a skipped test with its reason."""
    assert block.skip
    pytest.skip(f"{block.where}: {block.skip}")


def test_every_page_and_annotation_is_understood() -> None:
    """The parser finds the README's blocks and their documented exit statuses."""
    readme = ALL[ROOT / "README.md"]
    assert len(readme) >= 4
    statuses = [c.status for b in readme for c in b.commands]
    assert 1 in statuses and 0 in statuses
    total = sum(len(bs) for bs in ALL.values())
    print(f"\n{total} shell blocks in {len(PAGES)} pages; {len(SKIPPED)} not run:")
    for b in SKIPPED:
        print(f"  {b.where}: {b.skip}")


def test_annotation_parser() -> None:
    cmds = _commands(
        "persuasive a \\\n    --x 1   # exit 1: violation found\n"
        "# a note\npersuasive b\n# exit 2, nothing written\npersuasive c\n",
        10,
    )
    assert [(c.line, c.status) for c in cmds] == [(10, 1), (13, 2), (15, 0)]
    assert _programs("ssh-keygen -Y sign -f k x && persuasive verify y") == [
        "ssh-keygen",
        "persuasive",
    ]
    assert _programs("tr ',' '\\t' < a.csv > b.csv; X=1 sed 's/;/|/' b | head") == [
        "tr",
        "sed",
        "head",
    ]
