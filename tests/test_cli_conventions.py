"""Command-line conventions (issue 11): readable help, shell completion, ``-`` for standard
input, no padding when piped, ``NO_COLOR`` / ``FORCE_COLOR`` / ``TERM=dumb``.

Output is checked through real processes: standard output a pipe, or a pseudo-terminal where
a terminal matters.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from persuasive.spec import example_paths

PERSUASIVE = [sys.executable, "-c", "from persuasive.cli import app; app()"]

SPEC = next(p for p in example_paths() if p.stem == "prop6_gaussian")
COMMANDS = [
    [],
    ["release"],
    ["release", "table"],
    ["release", "mean"],
    ["release", "linear"],
    ["verify"],
    ["demo"],
    ["certify"],
    ["audit"],
    ["validate"],
    ["examples"],
    ["version"],
    ["choose"],
    ["choose", "mean"],
    ["choose", "table"],
]
ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")
#: typer's and click's type labels, which say less than a metavar such as H, LO:HI or FOLDER.
NOISE = re.compile(r"<(str|int|float|bool|path|list\[[^\]]*\])>|\b(INTEGER|FLOAT|TEXT|PATH)\b")


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("NO_COLOR", "FORCE_COLOR", "COLUMNS")}
    env.pop("PERSUASIVE_DEBUG", None)
    env.update(extra)
    return env


def run(
    *args: str, stdin: str | None = None, cwd: Path | None = None, **env: str
) -> subprocess.CompletedProcess[str]:
    """The CLI in a fresh interpreter, standard output and error pipes."""
    return subprocess.run(
        [sys.executable, "-c", "from persuasive.cli import app; app()", *args],
        input=stdin, capture_output=True, text=True, env=_env(**env), cwd=cwd, check=False,
        timeout=300,
    )  # fmt: skip


def run_on_terminal(*args: str, **env: str) -> str:
    """The CLI with standard output on a pseudo-terminal; what it wrote there."""
    pty = pytest.importorskip("pty")
    main, child = pty.openpty()
    proc = subprocess.Popen(
        [sys.executable, "-c", "from persuasive.cli import app; app()", *args],
        stdout=child, stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL, env=_env(**env),
    )  # fmt: skip
    os.close(child)
    out = b""
    while True:
        try:
            chunk = os.read(main, 65536)
        except OSError:  # EIO: the child closed the terminal
            break
        if not chunk:
            break
        out += chunk
    proc.wait(timeout=300)
    os.close(main)
    return out.decode("utf-8", "replace")


# ------------------------------------------------------------------------------------- help


@pytest.mark.parametrize("command", COMMANDS, ids=lambda c: " ".join(c) or "root")
def test_help_shows_readable_types(command: list[str]) -> None:
    proc = run(*command, "--help", COLUMNS="200")
    assert proc.returncode == 0, proc.stderr
    text = proc.stdout
    assert not NOISE.search(text), NOISE.search(text)
    usage = text.splitlines()[0]
    assert "{" not in usage, usage  # DATA, not {data}


def test_help_names_values_by_what_they_look_like() -> None:
    text = run("release", "table", "--help", COLUMNS="200").stdout
    for shown in (
        "DATA",
        "--out FOLDER",
        "--keys K1,K2",
        "--h H",
        "--poisson-mean LO:HI",
        "--target-kappa K",
        "--format csv|parquet",
    ):
        assert shown in text, shown
    assert "SPEC.toml" in run("certify", "--help").stdout
    assert "CERT.json" in run("verify", "--help").stdout
    assert "[OUT_DIR]" in run("demo", "--help").stdout.splitlines()[0]


def test_version_flag() -> None:
    proc = run("--version")
    assert proc.returncode == 0 and proc.stdout.startswith("persuasive ")


# ------------------------------------------------------------------------------- completion


def test_completion_options_are_offered() -> None:
    text = run("--help").stdout
    assert "--install-completion" in text and "--show-completion" in text


@pytest.mark.parametrize("shell", ["bash", "zsh", "fish"])
def test_show_completion_prints_a_script(shell: str) -> None:
    proc = run("--show-completion", shell, _TYPER_COMPLETE_TEST_DISABLE_SHELL_DETECTION="1")
    assert proc.returncode == 0, proc.stderr
    assert "_PERSUASIVE_COMPLETE" in proc.stdout


def test_completion_completes_commands_and_options() -> None:
    got = run(_PERSUASIVE_COMPLETE="complete_bash", COMP_WORDS="persuasive rel", COMP_CWORD="1")
    assert got.returncode == 0 and got.stdout.split() == ["release"], got
    got = run(
        _PERSUASIVE_COMPLETE="complete_bash",
        COMP_WORDS="persuasive release table --negbin",
        COMP_CWORD="3",
    )
    assert set(got.stdout.split()) == {"--negbin-mean", "--negbin-size"}, got


# ------------------------------------------------------------------------- standard input


@pytest.mark.parametrize("command", ["certify", "audit", "validate"])
def test_spec_from_standard_input_equals_the_file(command: str) -> None:
    extra = ["--seed", "1", "--samples", "2000"] if command == "audit" else []
    from_file = run(command, str(SPEC), "--json", *extra)
    from_stdin = run(command, "-", "--json", *extra, stdin=SPEC.read_text(encoding="utf-8"))
    assert from_stdin.returncode == from_file.returncode == 0, from_stdin.stderr
    a, b = json.loads(from_file.stdout), json.loads(from_stdin.stdout)
    assert b.pop("spec") == "-" and a.pop("spec") == str(SPEC)
    a.pop("source", None), b.pop("source", None)
    assert a == b


def test_spec_from_standard_input_without_a_name_is_called_stdin() -> None:
    text = SPEC.read_text(encoding="utf-8").replace('name = "prop6_gaussian"', "")
    text = "\n".join(line for line in text.splitlines() if not line.startswith("name ="))
    proc = run("certify", "-", "--json", stdin=text)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["name"] == "stdin"


@pytest.mark.parametrize(
    ("text", "says"),
    [("mechanism = [", "the spec on standard input is not valid TOML"), ("", "<stdin>: ")],
)
def test_bad_spec_on_standard_input_is_one_error_line(text: str, says: str) -> None:
    proc = run("certify", "-", stdin=text)
    assert proc.returncode == 2 and proc.stdout == ""
    lines = proc.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and says in lines[0], lines


# ------------------------------------------------------------------------------ when piped


def _assert_unpadded(text: str) -> None:
    assert text, "no output"
    for line in text.splitlines():
        assert line == line.rstrip(), repr(line)
        assert not any(ch in line for ch in "│┃━─┏┗╭╰"), line  # no box around a table


@pytest.mark.parametrize(
    "args",
    [
        ["certify", str(SPEC)],
        ["audit", str(SPEC), "--seed", "1", "--samples", "2000"],
        ["validate", str(SPEC)],
        ["certify", str(SPEC), "--json"],
        ["examples", "--samples", "2000", "--seed", "1"],
    ],
    ids=lambda a: " ".join(x for x in a if not x.startswith("/")),
)
def test_piped_output_is_not_padded(args: list[str]) -> None:
    proc = run(*args)
    assert proc.returncode in (0, 1), proc.stderr
    _assert_unpadded(proc.stdout)
    assert "\x1b" not in proc.stdout and proc.stderr == ""


def test_piped_table_is_as_wide_as_its_content() -> None:
    """Nothing is folded at a guessed width: each note and the guarantee stay whole on one
    line, and the table's lines end with their value."""
    from persuasive.spec import load_spec

    cert = load_spec(SPEC).certify()
    lines = run("certify", str(SPEC)).stdout.splitlines()
    for note in cert.notes:
        assert any(line.startswith("note") and line.endswith(note) for line in lines), note
    assert lines[-1] == cert.explain()
    assert next(line for line in lines if line.startswith("verdict")).split() == [
        "verdict",
        "holds",
    ]


def test_piped_release_output_is_not_padded(tmp_path: Path) -> None:
    data = tmp_path / "t.csv"
    data.write_text("k,n\na,1\nb,12\nc,30\n", encoding="utf-8")
    proc = run(
        "release", "table", str(data), "--keys", "k", "--count", "n", "--h", "5",
        "--negbin-mean", "1:40", "--negbin-size", "1", "--out", str(tmp_path / "out"),
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    _assert_unpadded(proc.stdout)
    cert = tmp_path / "out" / "certificate.json"
    proc = run("verify", str(cert))
    assert proc.returncode == 0 and proc.stdout.startswith("verified"), proc.stderr
    _assert_unpadded(proc.stdout)


def test_columns_still_sets_the_width() -> None:
    out = run("certify", str(SPEC), COLUMNS="60").stdout
    assert max(map(len, out.splitlines())) <= 60
    _assert_unpadded(out)


# ------------------------------------------------------------------------------- colour


def test_terminal_output_has_colour_by_default() -> None:
    out = run_on_terminal("certify", str(SPEC), TERM="xterm-256color", COLUMNS="120")
    assert "certified κ" in out and ANSI.search(out)


@pytest.mark.parametrize("env", [{"NO_COLOR": "1"}, {"TERM": "dumb"}], ids=["NO_COLOR", "dumb"])
def test_no_colour_on_a_terminal(env: dict[str, str]) -> None:
    base = {"TERM": "xterm-256color", "COLUMNS": "120", **env}
    out = run_on_terminal("certify", str(SPEC), **base)
    assert "certified κ" in out and "\x1b" not in out, repr(out[:200])


def test_no_colour_wins_over_force_colour() -> None:
    proc = run("certify", str(SPEC), NO_COLOR="1", FORCE_COLOR="1")
    assert "\x1b" not in proc.stdout


def test_force_colour_colours_a_pipe_without_padding_it() -> None:
    proc = run("certify", str(SPEC), FORCE_COLOR="1")
    assert ANSI.search(proc.stdout)
    plain = ANSI.sub("", proc.stdout)
    assert "certified κ" in plain
    _assert_unpadded(plain)
    assert proc.stderr == ""  # FORCE_COLOR makes no progress bar on a pipe


def test_data_from_standard_input_is_read_and_its_copy_removed(tmp_path: Path) -> None:
    """DATA '-' reads a CSV file from standard input: the release equals the one from the file,
    and the private copy is gone when the command ends."""
    import glob
    import tempfile

    rows = "k,n\n01,3\n02,12\n03,40\n"
    src = tmp_path / "in.csv"
    src.write_text(rows, encoding="utf-8")
    before = set(glob.glob(str(Path(tempfile.gettempdir()) / "persuasive-stdin-*")))
    common = ["release", "table", "--keys", "k", "--count", "n", "--h", "5", "--alpha", "0.2"]
    piped = subprocess.run(
        [*PERSUASIVE, *common[:2], "-", *common[2:], "--out", str(tmp_path / "a")],
        input=rows.encode(),
        capture_output=True,
        check=False,
    )
    assert piped.returncode == 0, piped.stderr
    assert b"standard input" in piped.stdout
    direct = subprocess.run(
        [*PERSUASIVE, *common[:2], str(src), *common[2:], "--out", str(tmp_path / "b")],
        capture_output=True,
        check=False,
    )
    assert direct.returncode == 0, direct.stderr
    for name in ("released.csv", "certificate.json"):
        assert (tmp_path / "a" / name).read_bytes() == (tmp_path / "b" / name).read_bytes()
    assert (tmp_path / "a" / "released.csv").read_text().splitlines()[1] == "01,"
    after = set(glob.glob(str(Path(tempfile.gettempdir()) / "persuasive-stdin-*")))
    assert after <= before  # the copy of standard input is removed


def test_data_from_an_empty_standard_input_exits_2(tmp_path: Path) -> None:
    out = subprocess.run(
        [
            *PERSUASIVE,
            "release",
            "table",
            "-",
            "--keys",
            "k",
            "--count",
            "n",
            "--h",
            "5",
            "--alpha",
            "0.2",
            "--out",
            str(tmp_path / "o"),
        ],
        input=b"",
        capture_output=True,
        check=False,
    )
    assert out.returncode == 2 and out.stderr.decode().startswith("error: ")
    assert not (tmp_path / "o").exists()
