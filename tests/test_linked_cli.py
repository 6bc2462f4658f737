"""Linked tables as a hostile user meets them (docs/linked.md): inputs refused before any work,
all or nothing without releasing the tables that cannot be published, a tampered or incomplete
publication reported as not verified, and the options the command shares with release table.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import polars as pl
import pytest
from test_linked import FAIR, small_records
from typer.testing import CliRunner

import persuasive as pp
import persuasive.release.margins as margins_module
from persuasive.classes.receivers import PoissonReceiver
from persuasive.cli import app
from persuasive.errors import ValidationError
from persuasive.release.linked_check import linked_spec
from persuasive.report.verify import verify_certificate

BASE = dict(tables="a*b;a*c", margins="a,b;a,c", h=5, receiver=PoissonReceiver(0.5, 3))


def run(*args: Any) -> Any:
    return CliRunner().invoke(app, [str(a) for a in args])


@pytest.fixture
def no_work(monkeypatch: pytest.MonkeyPatch) -> None:
    """Fail the test if any table is released (the input must be refused before)."""

    def refuse(*_a: Any, **_k: Any) -> None:
        raise AssertionError("a table was released before the input was checked")

    monkeypatch.setattr(margins_module, "release_table_with_margins", refuse)


# ------------------------------------------------------------------------ refused before work


@pytest.mark.parametrize(
    ("tables", "margins", "match"),
    [
        ("a*b;a*b", "a,b;a,b", r"the table a\*b is listed twice \(tables 1 and 2\)"),
        ("a*b;b*a", "a,b;a,b", r"the table a\*b is listed twice"),
        ("a*b;c;a*b", "a,b;total;a,b", r"listed twice \(tables 1 and 3\)"),
        # the family is checked before the margins: a one-variable table inside another is
        # named as such, not as a margin keeping every dimension
        ("a;a*b", "a;a,b", r"table 'a' \(a\) lies inside table 'a-b'"),
    ],
)
def test_family_refused_with_its_reason(tables: str, margins: str, match: str) -> None:
    with pytest.raises(ValidationError, match=match):
        linked_spec(tables, margins)


def test_unknown_variable_names_the_table(no_work: None, tmp_path: Path) -> None:
    data = small_records(tmp_path / "r.csv")
    with pytest.raises(ValidationError, match=r"^tables: variable 'nope' of table 'a-nope'") as e:
        pp.release_linked_tables(data, **{**BASE, "tables": "a*b;a*nope", "margins": "a,b;a,nope"})
    assert all(col in str(e.value) for col in pl.read_csv(data).columns)


@pytest.mark.parametrize(
    ("count", "match"),
    [("a", r"count: 'a' is a variable"), ("", "non-empty"), (" n", "non-empty")],
)
def test_count_name_checked_before_work(no_work: None, tmp_path: Path, count: str, match: str):
    data = small_records(tmp_path / "r.csv")
    with pytest.raises(ValidationError, match=match):
        pp.release_linked_tables(data, count=count, **BASE)


@pytest.mark.parametrize(
    ("args", "line"),
    [
        (["--objective", "fewest"], "error: --objective must be count or total; got 'fewest'"),
        (["--bound", "x"], "error: --bound must be publication or table; got 'x'"),
        (["--count", "a"], "error: --count 'a' is a variable of the tables"),
        (["--count", ""], "error: --count must be a column name"),
    ],
)
def test_cli_bad_options_exit_2_before_work(
    no_work: None, tmp_path: Path, args: list[str], line: str
) -> None:
    data = small_records(tmp_path / "r.csv")
    base = ["release", "linked", data, "--tables", "a*b;a*c", "--margins", "a,b;a,c"]
    got = run(*base, "--h", "5", "--poisson-mean", "0.5:3", "--out", tmp_path / "out", *args)
    assert got.exit_code == 2 and got.output.startswith(line), got.output
    assert len(got.output.strip().splitlines()) == 1 and "Traceback" not in got.output
    assert sorted(p.name for p in tmp_path.iterdir()) == ["r.csv"]


# ------------------------------------------------------------------------ all or nothing


def test_stops_at_the_first_table_not_certified(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    calls: list[tuple[str, ...]] = []
    real = margins_module.release_table_with_margins

    def counted(*a: Any, **k: Any) -> Any:
        calls.append(tuple(k["keys"]))
        return real(*a, **k)

    monkeypatch.setattr(margins_module, "release_table_with_margins", counted)
    data = small_records(tmp_path / "r.csv")
    rel = pp.release_linked_tables(data, **BASE)  # no target: a cell disclosed below r
    # the first table alone is not certified (released on its own, the same way) ...
    alone = real(
        data,
        keys=("a", "b"),
        h=5,
        receiver=PoissonReceiver(0.5 * 2, 3 * 2),  # c has 2 levels: 2 cover cells per cell
        margins="a,b",
        microdata=True,
    )
    assert not alone.ok
    # ... so the second is not released at all: nothing would be published anyway
    assert calls == [("a", "b")] and rel.releases[1] is None and not rel.ok
    assert "table 'a-b' is not certified" in rel.statement()
    s = rel.summary()
    assert s["certified"].to_list() == [False, None] and s["cells"].to_list()[1] is None
    assert s["mean_max"].to_list() == [3.0 * 2, 3.0 * 3]  # b has 3 levels
    with pytest.raises(ValidationError, match="nothing to publish"):
        rel.write(tmp_path / "out")
    assert not (tmp_path / "out").exists()


# ------------------------------------------------------------------------ verify


@pytest.fixture(scope="module")
def published(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("linked_cli")
    data = small_records(root / "r.csv")
    out = root / "out"
    got = run(
        *["release", "linked", data, "--tables", "a*b;a*c", "--margins", "a,b;a,c", "--h", "5"],
        *["--poisson-mean", "0.5:3", "--target-kappa", "6", "--out", out, "-q"],
    )
    assert got.exit_code == 0, got.output
    return out


def _copy(folder: Path, tmp_path: Path) -> Path:
    copy = tmp_path / "copy"
    shutil.copytree(folder, copy)
    return copy


@pytest.mark.parametrize(
    ("field", "value"), [("claim", "x"), ("guarantee", []), ("guarantee", {"kappa": "abc"})]
)
def test_verify_a_malformed_table_certificate_is_a_mismatch(
    published: Path, tmp_path: Path, field: str, value: Any
) -> None:
    copy = _copy(published, tmp_path)
    path = copy / "a-c" / "certificate.json"
    doc = json.loads(path.read_text())
    doc[field] = value
    path.write_text(json.dumps(doc))
    got = run("verify", copy / "certificate.json")
    assert got.exit_code == 1 and "internal error" not in got.output, got.output
    assert "mismatch: tables[a-c]" in got.output


def test_verify_a_missing_table_is_a_mismatch(published: Path, tmp_path: Path) -> None:
    copy = _copy(published, tmp_path)
    assert verify_certificate(copy / "certificate.json").ok
    shutil.rmtree(copy / "a-c")
    got = verify_certificate(copy / "certificate.json")
    assert not got.ok and got.mismatches[0] == (
        f"tables[a-c]: the folder '{copy / 'a-c'}' has no certificate.json"
    )
    assert run("verify", copy / "certificate.json").exit_code == 1
    (copy / "a-b" / "released.csv").unlink()  # a table's published file missing: also exit 1
    got = verify_certificate(copy / "certificate.json")
    assert not got.ok and any(m.startswith("tables[a-b]: --published") for m in got.mismatches)
    shutil.rmtree(copy / "a-b")  # no table at all: not a linked release folder (exit 2)
    with pytest.raises(ValidationError, match="holds none of the tables' folders"):
        verify_certificate(copy / "certificate.json")
    assert run("verify", copy / "certificate.json").exit_code == 2


# ------------------------------------------------------------------------ shared options


def _params(*path: str) -> dict[str, Any]:
    import typer

    cmd: Any = typer.main.get_command(app)
    for name in path:
        cmd = cmd.commands[name]
    return {p.opts[0]: p for p in cmd.params}


def test_options_shared_with_release_table() -> None:
    table, linked = _params("release", "table"), _params("release", "linked")
    for flag in ("--h", "--r", "--poisson-mean", "--format", "--force", "--separator"):
        assert linked[flag].help == table[flag].help, flag
    for flag in ("--objective", "--bound"):  # release table's need --margins, and say so
        assert (
            table[flag].help
            == "With --margins: " + linked[flag].help[0].lower() + (linked[flag].help[1:])
        )
    assert linked["--h"].required and not table["--h"].required
    assert linked["--report"].help == "Also write each table's report into OUT/TABLE/report/."


def test_fair_unknown_variable_exits_2(tmp_path: Path) -> None:
    got = run(
        *["release", "linked", FAIR, "--tables", "religious*nope;religious*occupation"],
        *["--margins", "religious,nope;religious,occupation", "--h", "10"],
        *["--poisson-mean", "0.6:2", "--out", tmp_path / "o"],
    )
    assert got.exit_code == 2 and got.output.startswith(
        "error: tables: variable 'nope' of table 'religious-nope' (religious*nope) is not a "
        "column of the data"
    ), got.output


def test_one_variable_tables_publish_their_total() -> None:
    with pytest.raises(ValidationError, match=r"^margins: table religious: .*'total'\)$"):
        linked_spec("religious;occupation", "religious;occupation")
    with pytest.raises(ValidationError, match=r"^margins: table a\*b: .*missing dimension 'nope'"):
        linked_spec("a*b;a*c", "a,nope;a,c")
    rel = pp.release_linked_tables(
        FAIR,
        tables="religious;occupation",
        margins="total;total",
        h=10,
        receiver=PoissonReceiver(0.6, 2),
    )
    records = pl.read_csv(FAIR, infer_schema=False)
    assert rel.ok
    for sub, v in zip(rel.releases, ("religious", "occupation"), strict=True):
        want = records.group_by(v).len().sort(v).rows()
        assert sub.published.select(v, "n").sort(v).rows() == want  # every count >= 10: shown


@pytest.mark.parametrize(
    ("edit", "match"),
    [
        (lambda d: d["claim"]["receiver"].update(model=[]), "claim.receiver must map names"),
        (lambda d: d["claim"]["tables"][0]["margins"].__setitem__(0, None), "must be a list of"),
        (lambda d: d["claim"]["tables"][1]["keys"].append({}), "must be a list of names"),
    ],
)
def test_verify_a_claim_field_of_the_wrong_type(
    published: Path, tmp_path: Path, edit: Any, match: str
) -> None:
    copy = _copy(published, tmp_path)
    cert = copy / "certificate.json"
    doc = json.loads(cert.read_text())
    edit(doc)
    cert.write_text(json.dumps(doc))
    got = verify_certificate(cert)  # no TypeError: the claim cannot be read (exit 1)
    assert not got.ok and got.mismatches[0].startswith("claim: cannot be read")
    assert match in got.mismatches[0]


def test_folder_names_distinct_ignoring_case() -> None:
    # on a file system that ignores case, 'A-b' and 'a-b' would be one folder
    assert linked_spec("A*b;a*b", "A,b;a,b").names == ("table1", "table2")
    assert linked_spec("A*b;a*c", "A,b;a,c").names == ("A-b", "a-c")
    with pytest.raises(ValidationError, match="distinct also ignoring case"):
        linked_spec("a*b;a*c", "a,b;a,c", ["first", "FIRST"])


def test_interrupted_while_writing_leaves_nothing(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    import signal

    import persuasive.release.pipeline as pipeline
    from persuasive.files.signals import Interrupted

    data = small_records(tmp_path / "r.csv")
    rel = pp.release_linked_tables(data, target_kappa=6, **BASE)
    assert rel.ok
    real, written, on_disk = pipeline.write_release, [], []

    def then_sigterm(sub: Any, folder: Path, **k: Any) -> Any:
        if written:  # the first table and its custodian files are on disk: SIGTERM now
            on_disk.append((written[0] / "custodian_cells.csv").is_file())
            raise Interrupted(signal.SIGTERM)
        written.append(folder)
        return real(sub, folder, **k)

    monkeypatch.setattr(pipeline, "write_release", then_sigterm)
    with pytest.raises(Interrupted):
        rel.write(tmp_path / "out")
    assert on_disk == [True]  # the custodian's file was written, in the private folder
    assert not written[0].exists() and not (tmp_path / "out").exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["r.csv"]  # no temporary folder left
