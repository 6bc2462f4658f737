"""The output folder never deletes a user's files (issue 10, ``persuasive.files.output``).

Every refusal must exit 2 with one ``error:`` line and leave the file system exactly as it was
(no temporary folder, no ``.old`` folder, the user's files byte for byte); a replacement with
``--force`` replaces only a folder persuasive wrote and that holds nothing else.
"""

from __future__ import annotations

import hashlib
import json
import os
import stat
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from persuasive.cli import app

runner = CliRunner()


def snapshot(root: Path) -> dict[str, tuple[str, str]]:
    """Everything below ``root`` (not following links): kind and content / link target."""
    out: dict[str, tuple[str, str]] = {}
    for dirpath, dirs, files in os.walk(root):
        for name in dirs + files:
            p = Path(dirpath) / name
            rel = p.relative_to(root).as_posix()
            if p.is_symlink():
                out[rel] = ("link", os.readlink(p))
            elif p.is_dir():
                out[rel] = ("dir", "")
            else:
                out[rel] = ("file", hashlib.sha256(p.read_bytes()).hexdigest())
    return out


def table_args(data: Path | str, out: Path | str, *extra: str) -> list[str]:
    return [
        "release",
        "table",
        str(data),
        "--keys",
        "k",
        "--count",
        "c",
        "--h",
        "3",
        "--alpha",
        "0.5",
        "--out",
        str(out),
        "--quiet",
        *extra,
    ]


def invoke(args: list[str]) -> Any:
    return runner.invoke(app, args)


def refused(result: Any) -> str:
    assert result.exit_code == 2, (result.exit_code, result.stdout, result.stderr)
    lines = result.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), result.stderr
    assert "Traceback" not in result.stdout + result.stderr
    return lines[0]


@pytest.fixture
def data(tmp_path: Path) -> Path:
    p = tmp_path / "in.csv"
    p.write_text("k,c\na,5\nb,1\nc,8\n", encoding="utf-8")
    return p


def release(data: Path, out: Path, *extra: str) -> None:
    result = invoke(table_args(data, out, *extra))
    assert result.exit_code == 0, result.stderr


# --------------------------------------------------------------------------------------------
# A folder holding the input, the working directory, '.', ''
# --------------------------------------------------------------------------------------------


def test_out_folder_holding_the_input_is_refused(tmp_path: Path) -> None:
    folder = tmp_path / "work"
    folder.mkdir()
    inp = folder / "in.csv"
    inp.write_text("k,c\na,5\n", encoding="utf-8")
    (folder / "notes.txt").write_text("mine", encoding="utf-8")
    before = snapshot(tmp_path)
    for extra in ([], ["--force"]):
        line = refused(invoke(table_args(inp, folder, *extra)))
        assert "in.csv" in line
    line = refused(invoke(table_args(inp, tmp_path, "--force")))  # a parent of the input
    assert snapshot(tmp_path) == before


def test_force_over_own_release_holding_the_input_is_refused(data: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    release(data, out)
    published = out / "released.csv"
    before = snapshot(tmp_path)
    line = refused(invoke(table_args(published, out, "--force")))
    assert "input" in line
    assert snapshot(tmp_path) == before


def test_out_is_the_working_directory(
    data: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cwd = tmp_path / "project"
    cwd.mkdir()
    (cwd / "thesis.tex").write_text("years of work", encoding="utf-8")
    (cwd / "sub").mkdir()
    (cwd / "sub" / "more.csv").write_text("x\n1\n", encoding="utf-8")
    monkeypatch.chdir(cwd)
    before = snapshot(tmp_path)
    for out in (str(cwd), ".", "", "./", str(tmp_path), "..", "sub/.."):
        for extra in ([], ["--force"]):
            refused(invoke(table_args(data, out, *extra)))
            assert snapshot(tmp_path) == before, out


def test_out_is_the_working_directory_written_by_persuasive(
    data: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    out = tmp_path / "out"
    release(data, out)
    monkeypatch.chdir(out)
    before = snapshot(tmp_path)
    line = refused(invoke(table_args(data, ".", "--force")))
    assert "working directory" in line
    assert snapshot(tmp_path) == before


# --------------------------------------------------------------------------------------------
# Paths that are not folders: below a file, a file, symbolic links
# --------------------------------------------------------------------------------------------


def test_out_below_a_file(data: Path, tmp_path: Path) -> None:
    afile = tmp_path / "afile"
    afile.write_text("keep", encoding="utf-8")
    before = snapshot(tmp_path)
    for out in (afile / "sub", afile / "sub" / "deeper", afile):
        line = refused(invoke(table_args(data, out, "--force")))
        assert "afile" in line
    assert snapshot(tmp_path) == before


def test_out_is_the_input_file(data: Path, tmp_path: Path) -> None:
    before = snapshot(tmp_path)
    refused(invoke(table_args(data, data, "--force")))
    assert snapshot(tmp_path) == before


@pytest.mark.parametrize("force", [False, True])
def test_out_is_a_dangling_symlink(data: Path, tmp_path: Path, force: bool) -> None:
    link = tmp_path / "dangling"
    link.symlink_to(tmp_path / "nowhere")
    before = snapshot(tmp_path)
    line = refused(invoke(table_args(data, link, *(["--force"] if force else []))))
    assert "symbolic link" in line
    assert snapshot(tmp_path) == before
    assert not (tmp_path / "nowhere").exists()


@pytest.mark.parametrize("target_kind", ["empty", "user", "release"])
@pytest.mark.parametrize("force", [False, True])
def test_out_is_a_symlink_to_a_folder(
    data: Path, tmp_path: Path, force: bool, target_kind: str
) -> None:
    target = tmp_path / "target"
    if target_kind == "release":
        release(data, target)
    else:
        target.mkdir()
        if target_kind == "user":
            (target / "mine.txt").write_text("mine", encoding="utf-8")
    link = tmp_path / "link"
    link.symlink_to(target, target_is_directory=True)
    before = snapshot(tmp_path)
    line = refused(invoke(table_args(data, link, *(["--force"] if force else []))))
    assert "symbolic link" in line
    assert snapshot(tmp_path) == before
    assert link.is_symlink() and os.readlink(link) == str(target)


# --------------------------------------------------------------------------------------------
# Existing folders: the user's, persuasive's, persuasive's with the user's files added
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("force", [False, True])
def test_users_folder_is_never_replaced(data: Path, tmp_path: Path, force: bool) -> None:
    out = tmp_path / "out"
    out.mkdir()
    (out / "released.csv").write_text("my own file with a release's name", encoding="utf-8")
    before = snapshot(tmp_path)
    line = refused(invoke(table_args(data, out, *(["--force"] if force else []))))
    assert "not empty" in line
    assert snapshot(tmp_path) == before


def test_empty_folder_is_used(data: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    out.mkdir()
    release(data, out)
    assert (out / "released.csv").is_file()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in.csv", "out"]


def test_own_release_needs_force(data: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    release(data, out)
    before = snapshot(tmp_path)
    line = refused(invoke(table_args(data, out)))
    assert "--force" in line
    assert snapshot(tmp_path) == before


@pytest.mark.parametrize(
    "added", ["notes.txt", "report/mine.png", "sub/", ".hidden", "link->/"], ids=str
)
def test_force_over_own_release_with_a_user_file_is_refused(
    data: Path, tmp_path: Path, added: str
) -> None:
    out = tmp_path / "out"
    release(data, out, "--report")
    if added.endswith("/"):
        (out / added).mkdir()
    elif "->" in added:
        name, target = added.split("->")
        (out / name).symlink_to(target)
    else:
        (out / added).write_text("the user's", encoding="utf-8")
    before = snapshot(tmp_path)
    line = refused(invoke(table_args(data, out, "--force")))
    assert "did not write" in line
    assert snapshot(tmp_path) == before


def test_force_over_genuine_release_replaces_it(data: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    release(data, out, "--report")
    assert (out / "report" / "report.html").is_file()
    data.write_text("k,c\nx,9\ny,2\n", encoding="utf-8")
    release(data, out, "--force", "--format", "parquet")
    names = sorted(p.relative_to(out).as_posix() for p in out.rglob("*"))
    assert names == [".persuasive-output.json", "certificate.json", "released.parquet"]
    marker = json.loads((out / ".persuasive-output.json").read_text(encoding="utf-8"))
    assert sorted(marker["files"]) == ["certificate.json", "released.parquet"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in.csv", "out"]
    cert = json.loads((out / "certificate.json").read_text(encoding="utf-8"))
    assert cert["publication"]["cells"] == 2


def test_destination_changed_while_writing_is_refused(
    data: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The guard is checked again before the rename: a user file put into the destination
    while the release ran is kept and nothing is published."""
    import persuasive.release.pipeline as pipeline

    out = tmp_path / "out"
    release(data, out)
    real = pipeline.write_release

    def racing(*args: Any, **kwargs: Any) -> Any:
        (out / "arrived.txt").write_text("the user's", encoding="utf-8")
        return real(*args, **kwargs)

    monkeypatch.setattr(pipeline, "write_release", racing)
    before_cert = (out / "certificate.json").read_bytes()
    refused(invoke(table_args(data, out, "--force")))
    assert (out / "arrived.txt").read_text(encoding="utf-8") == "the user's"
    assert (out / "certificate.json").read_bytes() == before_cert
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in.csv", "out"]


# --------------------------------------------------------------------------------------------
# The temporary folder is private while it is written
# --------------------------------------------------------------------------------------------


def test_temporary_folder_is_private_while_written(
    data: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import persuasive.release.pipeline as pipeline

    seen: dict[str, Any] = {}
    real = pipeline.write_frame

    def spying(frame: Any) -> Any:
        make = real(frame)

        def for_name(name: str) -> Any:
            write = make(name)

            def write_and_look(path: Path) -> None:
                folder = path.parent
                seen["mode"] = stat.S_IMODE(os.stat(folder).st_mode)
                seen["name"] = folder.name
                seen["parent"] = folder.parent
                write(path)
                seen["file_mode"] = stat.S_IMODE(os.stat(path).st_mode)

            return write_and_look

        return for_name

    monkeypatch.setattr(pipeline, "write_frame", spying)
    old = os.umask(0o022)
    try:
        release(data, tmp_path / "out")
    finally:
        os.umask(old)
    assert seen["mode"] == 0o700
    assert seen["parent"] == tmp_path  # a sibling of the destination, renamed into place
    assert seen["name"].startswith(".out.") and seen["name"].endswith(".persuasive-tmp")
    assert stat.S_IMODE(os.stat(tmp_path / "out").st_mode) == 0o755
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in.csv", "out"]


# --------------------------------------------------------------------------------------------
# The demo
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("force", [False, True])
def test_demo_over_users_folder_is_refused(tmp_path: Path, force: bool) -> None:
    out = tmp_path / "mine"
    out.mkdir()
    (out / "input").mkdir()
    (out / "input" / "cancer_counts.csv").write_text("my data", encoding="utf-8")
    (out / "paper.pdf").write_bytes(b"%PDF")
    before = snapshot(tmp_path)
    result = invoke(["demo", str(out), "--quiet", *(["--force"] if force else [])])
    refused(result)
    assert snapshot(tmp_path) == before


def test_demo_in_the_working_directory_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "keep.txt").write_text("keep", encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    before = snapshot(tmp_path)
    refused(invoke(["demo", ".", "--quiet", "--force"]))
    assert snapshot(tmp_path) == before


def test_demo_over_a_table_release_needs_force(data: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    release(data, out)
    before = snapshot(tmp_path)
    refused(invoke(["demo", str(out), "--quiet"]))
    assert snapshot(tmp_path) == before


def test_demo_replaces_its_own_output(tmp_path: Path) -> None:
    from persuasive.release.demo import run_demo

    out = tmp_path / "demo"
    first = run_demo(out, report=False)
    assert first.ok
    stale = sorted(p.relative_to(out).as_posix() for p in out.rglob("*"))
    assert not any(s.startswith("cancer_table/report") for s in stale)
    result = invoke(["demo", str(out), "--quiet"])
    assert result.exit_code == 0, result.stderr
    assert (out / "cancer_table" / "report" / "report.html").is_file()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["demo"]
    # and the user's file added later makes it refuse again
    (out / "cancer_table" / "mine.txt").write_text("mine", encoding="utf-8")
    before = snapshot(tmp_path)
    refused(invoke(["demo", str(out), "--quiet", "--force"]))
    assert snapshot(tmp_path) == before
