"""Tampering with any field of any kind's certificate is caught by ``verify`` (issue 10).

For each kind (table, mean, group means, linear exact, linear noisy, linear noisy against the
bounded-error class, margins) a genuine release is written with the real command line; then
every field of its ``certificate.json`` is edited (every leaf changed, a key added to every
object, every key removed, every list lengthened and shortened) and
:func:`persuasive.report.verify.verify_certificate` is run with the publication:

* a plain edit (the digest left as written) is never verified;
* an edit whose digest is recomputed too — anyone can recompute it — is still caught, and the
  mismatch *names the field*, for every field that is recomputed (everything but the claim's
  parameters and ``library.version``);
* an edited parameter of the claim is named too (the contract: "edited keys are named").

The quoted cases of the issue follow: a false "also ε-DP" note, κ raised to 100, edited
library fields, extra top-level keys, a margins certificate that does not hold, a suppressed
cell filled back in, a 100 000-deep document, NaN literals and duplicated keys.
"""

from __future__ import annotations

import copy
import json
import math
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from persuasive.cli import app
from persuasive.errors import ValidationError
from persuasive.report.certificate import digest_of, dumps
from persuasive.report.verify import verify_certificate

runner = CliRunner()

Path_ = tuple[str | int, ...]

KINDS = (
    "table",
    "mean",
    "group_means",
    "linear",
    "linear_noisy",
    "linear_bounded",
    "margins",
    "margins_plan",
    "margins_apriori",
)


def _commands(root: Path) -> dict[str, list[str]]:
    (root / "t.csv").write_text("k,c\na,5\nb,1\nc,9\n", encoding="utf-8")
    (root / "m.csv").write_text("v,g\n1.5,a\n2.5,a\n3.0,b\n4.0,b\n", encoding="utf-8")
    (root / "lin.csv").write_text(
        "x,grp\n" + "".join(f"{i * 0.5},{i % 2}\n" for i in range(12)), encoding="utf-8"
    )
    # the suppressed 2 x 2 block (a..b, x..y) has two completions: no cell is disclosed
    cells = [f"{a},{b}" for a in "abc" for b in "xyz"]
    counts = [1, 2, 9, 2, 1, 8, 7, 6, 12]
    (root / "mg.csv").write_text(
        "r,c,n\n" + "".join(f"{c},{n}\n" for c, n in zip(cells, counts, strict=True)),
        encoding="utf-8",
    )
    # a lone 0 in row a and column x: planned to kappa 7 by the MIP (claim.plan, section plan)
    plan_counts = [0, 9, 8, 7, 6, 9, 8, 9, 7]
    (root / "mp.csv").write_text(
        "r,c,n\n" + "".join(f"{c},{n}\n" for c, n in zip(cells, plan_counts, strict=True)),
        encoding="utf-8",
    )
    # a-priori bounds on a suppressed cell (both completions of the block stay possible), an
    # open one on another and one on a released cell (claim.apriori)
    (root / "ap.csv").write_text("r,c,lower,upper\na,x,1,2\nb,y,,2\nc,z,10,\n", encoding="utf-8")
    table = f"release table {root / 't.csv'} --keys k --count c --h 3 --poisson-mean 1:10"
    mean = f"release mean {root / 'm.csv'} --column v --r1 1 --r2 4"
    linear = f"release linear {root / 'lin.csv'} --value x --r1 1 --r2 4 --stat all:mean:true"
    margins = (
        f"release table {root / 'mg.csv'} --keys r,c --count n --h 3 --poisson-mean 1:10 "
        "--margins rows,cols"
    )
    g0 = ["--stat", "g0:sum:grp = 0"]
    return {
        "table": table.split(),
        "mean": mean.split(),
        "group_means": [*mean.split(), "--group", "g"],
        "linear": [*linear.split(), *g0],
        "linear_noisy": [*linear.split(), *g0, "--noise-sd", "0.5"],
        "linear_bounded": [
            *linear.split(),
            *g0,
            *"--noise-sd 2 --max-stat-sd 1".split(),
            "--max-person-error",
            "1",
        ],
        "margins": margins.split(),
        "margins_apriori": [*margins.split(), "--apriori", str(root / "ap.csv")],
        "margins_plan": (
            f"release table {root / 'mp.csv'} --keys r,c --count n --h 3 --poisson-mean 1:10 "
            "--margins rows,cols --target-kappa 7 --method mip"
        ).split(),
    }


@pytest.fixture(scope="module")
def releases(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("releases")
    out = {}
    for kind, args in _commands(root).items():
        folder = root / kind
        result = runner.invoke(app, [*args, "--out", str(folder), "--quiet"])
        assert result.exit_code == 0, (kind, result.stdout, result.stderr)
        out[kind] = folder
    return out


def genuine(folder: Path) -> dict[str, Any]:
    doc = json.loads((folder / "certificate.json").read_text(encoding="utf-8"))
    assert isinstance(doc, dict)
    return doc


# --------------------------------------------------------------------------------------------
# Walking and editing a document
# --------------------------------------------------------------------------------------------


def walk(x: Any, path: Path_ = ()) -> Iterator[tuple[Path_, Any]]:
    yield path, x
    if isinstance(x, dict):
        for k, v in x.items():
            yield from walk(v, (*path, k))
    elif isinstance(x, list):
        for i, v in enumerate(x):
            yield from walk(v, (*path, i))


def name_of(doc: dict[str, Any], path: Path_) -> str:
    """A field's name as verify writes it: dotted keys, list entries by index, except a
    margins cell by its key and a published file by its name."""
    out, cur = "", doc
    for part in path:
        if isinstance(part, int):
            entry = cur[part]
            if out == "cells" and isinstance(entry, dict):
                label = ",".join(map(str, entry["key"]))
            elif out == "publication.files" and isinstance(entry, dict):
                label = str(entry["name"])
            else:
                label = str(part)
            out += f"[{label}]"
        else:
            out += ("." if out else "") + part
        cur = cur[part]
    return out


def at(doc: Any, path: Path_) -> Any:
    for part in path:
        doc = doc[part]
    return doc


def changed_values(value: Any) -> list[Any]:
    """Different values of the same leaf (and of a different JSON type where that matters)."""
    if isinstance(value, bool):
        return [not value]
    if isinstance(value, int):
        return [value + 1, float(value)]
    if isinstance(value, float):
        if not math.isfinite(value):
            return [0.0]
        bigger = value + 1.0 if abs(value) < 1e300 else value / 2
        out = [bigger, math.nextafter(value, math.inf)]
        if value.is_integer():
            out.append(int(value))
        return out
    if isinstance(value, str):
        return [value + "x", value.upper() if value.upper() != value else value.lower() + "_"]
    if value is None:
        return [1.0, "x"]
    return []


def edits(
    doc: dict[str, Any], *, thorough: bool = True
) -> Iterator[tuple[str, Path_, str, dict[str, Any]]]:
    """Every edit: (what, path of the edited field, its name, the edited document); with
    ``thorough=False`` one new value per leaf."""
    for path, value in list(walk(doc)):
        if isinstance(value, dict):
            d = copy.deepcopy(doc)
            at(d, path)["zz_extra"] = 1
            p = (*path, "zz_extra")
            yield "add key", p, name_of(doc, path) + ("." if path else "") + "zz_extra", d
            for key in value:
                d = copy.deepcopy(doc)
                del at(d, path)[key]
                yield "remove key", (*path, key), name_of(doc, (*path, key)), d
        elif isinstance(value, list):
            d = copy.deepcopy(doc)
            at(d, path).append(copy.deepcopy(value[-1]) if value else 0)
            yield "lengthen", path, name_of(doc, path), d
            if value:
                d = copy.deepcopy(doc)
                at(d, path).pop()
                yield "shorten", path, name_of(doc, path), d
        elif path:
            for new in changed_values(value)[: None if thorough else 1]:
                d = copy.deepcopy(doc)
                at(d, path[:-1])[path[-1]] = new
                yield f"set {new!r}", path, name_of(doc, path), d


_SEEN: dict[tuple[str, str], tuple[bool, list[str]]] = {}


def run_verify(doc: dict[str, Any], folder: Path) -> tuple[bool, list[str]]:
    """(verified, what verify said): a ValidationError (exit 2) is 'not verified' too, and so
    is a crash (exit 3; reported as 'CRASH ...' and tested on its own below). Memoised: the
    tests below run the same edits."""
    key = (json.dumps(doc, sort_keys=True), str(folder))
    if key not in _SEEN:
        try:
            result = verify_certificate(doc, published=folder)
        except ValidationError as exc:
            _SEEN[key] = (False, [str(exc)])
        except Exception as exc:  # any other exception is an internal error (exit 3)
            _SEEN[key] = (False, [f"CRASH {type(exc).__name__}: {exc}"])
        else:
            _SEEN[key] = (result.ok, list(result.mismatches))
    ok, said = _SEEN[key]
    return ok, list(said)


def with_digest(doc: dict[str, Any]) -> dict[str, Any]:
    doc["digest"] = digest_of(doc)
    return doc


def names(messages: list[str], field: str) -> bool:
    return any(field in m for m in messages)


#: The fields each kind's claim reads its parameters from (everything else is recomputed
#: from them, or, for the publication, from the published files).
PARAMETERS = {
    "table": (
        "claim.spec.mechanism.h",
        "claim.spec.definition.scores",
        "claim.receiver",
        "claim.columns",
        "claim.target_kappa",
        "claim.absent",
    ),
    "mean": (
        "claim.spec.mechanism",
        "claim.spec.definition.priors.r1",
        "claim.spec.definition.priors.r2",
        "claim.spec.definition.priors.max_mean_sd",
        "claim.spec.definition.delta",
        "claim.columns",
        "claim.target_kappa",
    ),
    "linear": (
        "claim.spec.mechanism.value",
        "claim.spec.mechanism.statistics",
        "claim.spec.mechanism.withheld",
        "claim.spec.mechanism.noise",
        "claim.spec.definition.priors.r1",
        "claim.spec.definition.priors.r2",
        "claim.spec.definition.priors.max_stat_sd",
        "claim.spec.definition.delta",
        "claim.design.n",
        "claim.design.statistics",
        "claim.target_kappa",
    ),
    "margins": (
        "claim.receiver",
        "claim.margins",
        "claim.columns",
        "claim.h",
        "claim.r",
        "claim.target_kappa",
        "claim.absent",
    ),
}
PARAMETERS["margins_plan"] = (*PARAMETERS["margins"], "claim.plan")
PARAMETERS["margins_apriori"] = (*PARAMETERS["margins"], "claim.apriori")
PARAMETERS["group_means"] = PARAMETERS["mean"]
PARAMETERS["linear_noisy"] = PARAMETERS["linear"]
PARAMETERS["linear_bounded"] = (
    *PARAMETERS["linear"],
    "claim.spec.definition.priors.max_person_error",
)

#: Bound by the digest alone (the contract): a forged value with a recomputed digest verifies.
DIGEST_ONLY = ("library.version", "digest")


def is_file_list(field: str) -> bool:
    """The list of published files, and the names in it (which say where the files are)."""
    return field == "publication.files" or (
        field.startswith("publication.files[") and field.endswith("].name")
    )


def is_parameter(kind: str, field: str) -> bool:
    return any(field == p or field.startswith((p + ".", p + "[")) for p in PARAMETERS[kind])


# --------------------------------------------------------------------------------------------
# Genuine certificates verify
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("kind", KINDS)
def test_genuine_certificate_verifies(releases: dict[str, Path], kind: str) -> None:
    folder = releases[kind]
    result = verify_certificate(folder / "certificate.json", published=folder)
    assert result.ok and result.consistent and result.claims, result.mismatches
    assert result.published_checked
    cli = runner.invoke(
        app, ["verify", str(folder / "certificate.json"), "--published", str(folder)]
    )
    assert cli.exit_code == 0, cli.stdout + cli.stderr
    assert cli.stdout.startswith("verified (")
    if not kind.startswith("margins"):  # the others are recomputed from their claim alone
        assert verify_certificate(folder / "certificate.json").ok


# --------------------------------------------------------------------------------------------
# Every edit is caught
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("kind", KINDS)
def test_every_plain_edit_is_not_verified(releases: dict[str, Path], kind: str) -> None:
    folder = releases[kind]
    doc = genuine(folder)
    missed = []
    count = 0
    for what, _path, field, edited in edits(doc, thorough=False):
        count += 1
        ok, _said = run_verify(edited, folder)
        if ok:
            missed.append(f"{field}: {what}")
    assert count > 40  # the walk reached every section
    assert not missed, missed


@pytest.mark.parametrize("kind", KINDS)
def test_no_edit_crashes_verify(releases: dict[str, Path], kind: str) -> None:
    folder = releases[kind]
    crashes = []
    doc = genuine(folder)
    for thorough, redigest in ((False, False), (True, True)):  # as the tests above (memoised)
        for what, _path, field, edited in edits(doc, thorough=thorough):
            if redigest:
                with_digest(edited)
            _ok, said = run_verify(edited, folder)
            crashes += [f"{field}: {what}: {m[:120]}" for m in said if m.startswith("CRASH")]
    assert not crashes, "\n".join(crashes)


@pytest.mark.parametrize("kind", KINDS)
def test_every_recomputed_field_is_named_despite_a_recomputed_digest(
    releases: dict[str, Path], kind: str
) -> None:
    """A tamperer who recomputes the digest is caught by the recomputation, field by field."""
    folder = releases[kind]
    doc = genuine(folder)
    problems = []
    for what, _path, field, edited in edits(doc):
        if field in DIGEST_ONLY or is_parameter(kind, field) or is_file_list(field):
            continue
        edited["digest"] = digest_of(edited)
        ok, said = run_verify(edited, folder)
        if ok:
            problems.append(f"VERIFIED {field}: {what}")
        elif not names(said, field):
            problems.append(f"not named {field}: {what}: {said[:2]}")
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize("kind", KINDS)
def test_edited_publication_file_list_is_named(releases: dict[str, Path], kind: str) -> None:
    folder = releases[kind]
    problems = []
    for what, _path, field, edited in edits(genuine(folder)):
        if not is_file_list(field):
            continue
        try:
            result = verify_certificate(with_digest(edited), published=folder)
        except ValidationError as exc:
            problems.append(f"exit 2 for {field}: {what}: {exc}")
            continue
        if result.ok or not names(list(result.mismatches), "publication.files"):
            problems.append(f"{field}: {what}: {result.mismatches[:2]}")
    assert not problems, "\n".join(problems)


def _parameter_edits_not_named(releases: dict[str, Path], kind: str) -> list[str]:
    folder = releases[kind]
    doc = genuine(folder)
    problems = []
    for what, _path, field, edited in edits(doc):
        if not is_parameter(kind, field):
            continue
        ok, said = run_verify(edited, folder)
        assert not ok, (field, what)
        if not (names(said, field) or names(said, field.removeprefix("claim."))):
            problems.append(f"{field}: {what}: {said[:2]}")
    return problems


@pytest.mark.parametrize("kind", KINDS)
def test_edited_parameter_is_named(releases: dict[str, Path], kind: str) -> None:
    problems = _parameter_edits_not_named(releases, kind)
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize(
    ("kind", "path"),
    [
        ("table", ("claim", "spec", "definition", "scores", 0, "r")),
        ("linear", ("claim", "spec", "mechanism", "statistics", 1, "where")),
        ("linear", ("claim", "design", "statistics", 0, "members")),
        ("linear_noisy", ("claim", "spec", "mechanism", "noise", "sigma")),
    ],
    ids=lambda v: v if isinstance(v, str) else ".".join(map(str, v)),
)
def test_missing_nested_parameter_is_named_by_its_full_path(
    releases: dict[str, Path], kind: str, path: Path_
) -> None:
    doc = genuine(releases[kind])
    del at(doc, path[:-1])[path[-1]]
    ok, said = run_verify(doc, releases[kind])
    assert not ok
    assert names(said, name_of(genuine(releases[kind]), path) + ": missing"), said


# --------------------------------------------------------------------------------------------
# The quoted cases
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("redigest", [False, True])
def test_false_dp_note_is_named(releases: dict[str, Path], kind: str, redigest: bool) -> None:
    doc = genuine(releases[kind])
    doc["notes"] = ["This release is also ε-differentially private with ε = 1 (Prop 6)."]
    if redigest:
        with_digest(doc)
    ok, said = run_verify(doc, releases[kind])
    assert not ok and names(said, "notes"), said


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("redigest", [False, True])
def test_kappa_raised_to_100_is_named(releases: dict[str, Path], kind: str, redigest: bool) -> None:
    doc = genuine(releases[kind])
    true_kappa = doc["guarantee"]["kappa"]
    assert isinstance(true_kappa, float) and true_kappa < 100
    doc["guarantee"]["kappa"] = 100
    doc["guarantee"]["exact"] = True
    if redigest:
        with_digest(doc)
    ok, said = run_verify(doc, releases[kind])
    assert not ok
    assert any(m.startswith("guarantee.kappa: stated 100") for m in said), said


def test_kappa_lowered_through_the_cli(releases: dict[str, Path], tmp_path: Path) -> None:
    folder = tmp_path / "t"
    shutil.copytree(releases["table"], folder)
    doc = genuine(folder)
    doc["guarantee"]["kappa"] = 1.0
    (folder / "certificate.json").write_text(dumps(with_digest(doc)), encoding="utf-8")
    result = runner.invoke(app, ["verify", str(folder / "certificate.json")])
    assert result.exit_code == 1
    lines = result.stdout.splitlines()
    assert lines[0].startswith("NOT verified")
    assert any(line.startswith("mismatch: guarantee.kappa: stated 1.0") for line in lines)


@pytest.mark.parametrize("kind", KINDS)
def test_library_fields(releases: dict[str, Path], kind: str) -> None:
    folder = releases[kind]
    doc = genuine(folder)
    doc["library"]["name"] = "some-other-library"
    ok, said = run_verify(with_digest(doc), folder)
    assert not ok and names(said, "library.name"), said
    doc = genuine(folder)
    doc["library"]["version"] = "99.0"
    ok, said = run_verify(doc, folder)
    assert not ok and names(said, "digest"), said
    doc = genuine(folder)
    doc["library"]["licence"] = "MIT"
    ok, said = run_verify(with_digest(doc), folder)
    assert not ok and names(said, "library.licence"), said
    doc = genuine(folder)
    del doc["library"]
    ok, said = run_verify(with_digest(doc), folder)
    assert not ok and names(said, "library"), said


@pytest.mark.parametrize("kind", KINDS)
def test_extra_top_level_keys(releases: dict[str, Path], kind: str) -> None:
    folder = releases[kind]
    for key, value in [("approved_by", "ONS"), ("also", {"pure_dp": True}), ("x", None)]:
        doc = genuine(folder)
        doc[key] = value
        ok, said = run_verify(with_digest(doc), folder)
        assert not ok, key
        assert any(m.startswith(f"{key}: not a field") for m in said), said


def test_margins_release_that_does_not_hold_writes_no_certificate(tmp_path: Path) -> None:
    """A genuine release planned against the table bound, whose published bound is above the
    target: refused (exit 1), nothing written — no certificate exists to be verified. (A
    consistent certificate claiming no guarantee is never verified: the next test.)"""
    data = tmp_path / "mg.csv"
    counts = [6, 9, 0, 15, 4, 0, 2, 1, 9, 15, 4, 12, 1, 4, 0, 4]
    cells = [(a, b) for a in "abcd" for b in "wxyz"]
    data.write_text(
        "r,c,n\n" + "".join(f"{a},{b},{n}\n" for (a, b), n in zip(cells, counts, strict=True)),
        encoding="utf-8",
    )
    out = tmp_path / "out"
    result = runner.invoke(
        app,
        ["release", "table", str(data), "--keys", "r,c", "--count", "n", "--h", "3",
         "--poisson-mean", "1:10", "--margins", "rows,cols", "--target-kappa", "9",
         "--bound", "table", "--out", str(out), "--quiet"],
    )  # fmt: skip
    assert result.exit_code == 1, result.stdout + result.stderr
    assert "NOT released" in result.stdout, result.stdout
    assert not out.exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["mg.csv"]


def test_constructed_margins_certificate_with_lowered_target_is_not_verified(
    releases: dict[str, Path], tmp_path: Path
) -> None:
    """The whole document rewritten consistently for a target below its κ: still exit 1."""
    folder = tmp_path / "m"
    shutil.copytree(releases["margins"], folder)
    doc = genuine(folder)
    doc["claim"]["target_kappa"] = 1.0
    again = verify_certificate(doc, published=folder)
    assert again.recomputed is not None
    rewritten = again.recomputed
    assert rewritten["guarantee"]["holds"] is False
    (folder / "certificate.json").write_text(dumps(rewritten), encoding="utf-8")
    cli = runner.invoke(
        app, ["verify", str(folder / "certificate.json"), "--published", str(folder)]
    )
    assert cli.exit_code == 1
    assert not cli.stdout.startswith("verified")
    assert "claims no guarantee" in cli.stdout


def test_inconsistent_margins_publication_does_not_ask_for_published(
    releases: dict[str, Path],
) -> None:
    doc = genuine(releases["margins"])
    doc["claim"]["h"] = 10  # a shown count (6) is then below h
    ok, said = run_verify(with_digest(doc), releases["margins"])
    assert not ok and any("below" in m or "count < h" in m for m in said), said
    assert not any("--published" in m for m in said), said


def test_suppressed_cell_filled_back_in_is_named(tmp_path: Path) -> None:
    data = tmp_path / "t.csv"
    data.write_text("k,c\na,5\nb,3\nc,9\n", encoding="utf-8")
    out = tmp_path / "out"
    result = runner.invoke(
        app,
        ["release", "table", str(data), "--keys", "k", "--count", "c", "--h", "5",
         "--alpha", "0.5", "--out", str(out), "--quiet"],
    )  # fmt: skip
    assert result.exit_code == 0, result.stderr
    assert (out / "released.csv").read_text(encoding="utf-8") == "k,c\na,5\nb,\nc,9\n"
    (out / "released.csv").write_text("k,c\na,5\nb,3\nc,9\n", encoding="utf-8")
    cli = runner.invoke(app, ["verify", str(out / "certificate.json"), "--published", str(out)])
    assert cli.exit_code == 1
    lines = [x for x in cli.stdout.splitlines() if x.startswith("mismatch: ")]
    assert any("k='b'" in x and "below h = 5" in x for x in lines), cli.stdout
    assert any(
        x.startswith("mismatch: publication.files[released.csv].table.sha256") for x in lines
    )
    assert any(x.startswith("mismatch: publication.suppressed") for x in lines)
    # a tamperer who also restates the publication section is caught by the check itself
    from persuasive.report.kinds import file_facts

    doc = genuine(out)
    doc["publication"]["files"] = [file_facts("released.csv", out / "released.csv")]
    doc["publication"]["suppressed"] = 0
    ok, said = run_verify(with_digest(doc), out)
    assert not ok and any("k='b'" in m and "below h" in m for m in said), said


def test_deep_json_is_one_error_line(tmp_path: Path) -> None:
    deep = tmp_path / "deep.json"
    deep.write_text("[" * 100_000 + "]" * 100_000, encoding="utf-8")
    cli = runner.invoke(app, ["verify", str(deep)])
    assert cli.exit_code == 2
    lines = cli.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), cli.stderr
    deep.write_text('{"a":' * 100_000 + "1" + "}" * 100_000, encoding="utf-8")
    cli = runner.invoke(app, ["verify", str(deep)])
    assert cli.exit_code == 2 and len(cli.stderr.splitlines()) == 1


@pytest.mark.parametrize("literal", ["NaN", "Infinity", "-Infinity"])
def test_nan_literals_are_refused(releases: dict[str, Path], tmp_path: Path, literal: str) -> None:
    text = (releases["table"] / "certificate.json").read_text(encoding="utf-8")
    kappa = genuine(releases["table"])["guarantee"]["kappa"]
    assert f'"kappa": {kappa!r}' in text
    bad = tmp_path / "bad.json"
    bad.write_text(text.replace(f'"kappa": {kappa!r}', f'"kappa": {literal}'), encoding="utf-8")
    cli = runner.invoke(app, ["verify", str(bad)])
    assert cli.exit_code == 2
    lines = cli.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and literal.lstrip("-") in lines[0]


def test_duplicated_key_is_flagged(releases: dict[str, Path], tmp_path: Path) -> None:
    text = (releases["table"] / "certificate.json").read_text(encoding="utf-8")
    # a second "holds" inside guarantee: a reader would see only the last value
    assert '"holds": true,' in text
    bad = tmp_path / "dup.json"
    bad.write_text(text.replace('"holds": true,', '"holds": false, "holds": true,'), "utf-8")
    result = verify_certificate(bad)
    assert not result.ok and names(list(result.mismatches), "holds"), result.mismatches
    cli = runner.invoke(app, ["verify", str(bad)])
    assert cli.exit_code == 1
    assert "appears twice" in cli.stdout


def test_margins_plan_fields_are_walked_and_an_inconsistent_plan_is_named(
    releases: dict[str, Path],
) -> None:
    """The planned release states claim.plan and the recomputed section plan (so the tests
    above edit each of their fields); a plan that contradicts itself is named."""
    from persuasive.report.margins_plan import FIELDS

    doc = genuine(releases["margins_plan"])
    assert tuple(sorted(doc["claim"]["plan"])) == tuple(sorted(FIELDS))
    assert set(doc["plan"]) == {"secondary", "lower_bound", "gap", "relative_gap"}
    assert doc["plan"]["secondary"] == doc["publication"]["secondary"]
    doc["claim"]["plan"]["optimal"] = None  # the MIP proved it: optimal must be true
    ok, said = run_verify(with_digest(doc), releases["margins_plan"])
    assert not ok and names(said, "claim.plan.optimal"), said


def test_margins_apriori_bounds_are_in_the_claim_and_an_edited_bound_is_caught(
    releases: dict[str, Path],
) -> None:
    """claim.apriori lists every bound; loosening one (digest recomputed) changes κ published,
    which the recomputation names; a bound that the published count contradicts is named as an
    inconsistent publication."""
    folder = releases["margins_apriori"]
    doc = genuine(folder)
    assert doc["claim"]["apriori"] == [
        {"key": ["a", "x"], "lower": 1, "upper": 2},
        {"key": ["b", "y"], "lower": 0, "upper": 2},
        {"key": ["c", "z"], "lower": 10, "upper": None},
    ]
    loose = copy.deepcopy(doc)
    loose["claim"]["apriori"][0]["lower"] = 0  # (a, x) may be 0 again: a larger kappa
    ok, said = run_verify(with_digest(loose), folder)
    assert not ok and names(said, "cells[a,x].kappa_published"), said
    wrong = copy.deepcopy(doc)
    wrong["claim"]["apriori"][2]["lower"] = 13  # the published count of (c, z) is 12
    ok, said = run_verify(with_digest(wrong), folder)
    assert not ok and names(said, "publication"), said
    assert any("a-priori bounds" in m for m in said), said


@pytest.mark.parametrize("kind", KINDS)
def test_no_change_of_json_type_crashes_verify(releases: dict[str, Path], kind: str) -> None:
    """Every leaf of the certificate replaced by a list and by an object (the digest
    recomputed, so the readers see it): verify says 'not verified', never an internal error
    (an unhashable `kind` or `receiver.model` used to raise TypeError, exit 3)."""
    folder = releases[kind]
    doc = genuine(folder)
    crashes = []
    for path, value in list(walk(doc)):
        if not path or path == ("digest",) or isinstance(value, (dict, list)):
            continue  # the digest is recomputed below
        for new in ([value], {"v": value}):
            d = copy.deepcopy(doc)
            at(d, path[:-1])[path[-1]] = new
            ok, said = run_verify(with_digest(d), folder)
            assert not ok, name_of(doc, path)
            crashes += [f"{name_of(doc, path)}: {m[:120]}" for m in said if m.startswith("CRASH")]
    assert not crashes, "\n".join(crashes)
