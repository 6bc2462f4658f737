"""The compiled kernels of the table release give what the numpy/polars path gives.

:mod:`persuasive.release.table_kernels` makes, for an in-memory frame with one Int64 key and an
Int64 count, the negatives check, the key order and the published column in one pass, and
checks unsorted keys on a bit table. Checked here: the kernels against numpy computations of
the same quantities (packbits of ``count >= h``, ``where``, ``diff``, ``unique``); whole
releases with the kernels (threshold lowered so that small frames take them, and passes split
across the threads) against the same releases with the kernels disabled — identical published
frames down to the Arrow buffers (0 behind every null), cells and errors; the silent fallback
when numba cannot be imported or cannot compile; and that a small release and the CLI start-up
never import numba.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator

import numpy as np
import polars as pl
import pytest

from persuasive.classes.receivers import PoissonReceiver
from persuasive.errors import ValidationError
from persuasive.release import table_cells as T
from persuasive.release import table_kernels as tk
from persuasive.release.tables import release_table

pytest.importorskip("numba")

RECEIVER = PoissonReceiver(0.5, 3.0)
BIG = 2**63 - 1
#: Sizes around the words of the bitmap (64 rows), the order blocks (2^16) and the parts.
SIZES = [1, 2, 63, 64, 65, 127, 129, 4095, 4097, 65535, 65536, 65537, 131073]


@pytest.fixture
def kernels_everywhere(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """The kernels serve every frame, and their passes are split in parts of 2^16 rows."""
    assert tk.kernels() is not None
    monkeypatch.setattr(tk, "MIN_ROWS", 1)
    monkeypatch.setattr(tk, "_PARALLEL_ROWS", 1 << 16)
    yield


def _arrow(df: pl.DataFrame, name: str) -> tuple[np.ndarray, np.ndarray | None]:
    """The values buffer of a column and its validity bits (None: no bitmap), row by row."""
    arr = df.get_column(name).to_arrow()
    assert arr.offset == 0
    validity, data = arr.buffers()
    values = np.frombuffer(data, dtype=np.int64)[: len(arr)].copy()
    if validity is None:
        return values, None
    bits = np.unpackbits(np.frombuffer(validity, dtype=np.uint8), bitorder="little")
    return values, bits[: len(arr)].astype(bool)


def _outcome(df: pl.DataFrame, h: int, kernels: bool, mp: pytest.MonkeyPatch) -> object:
    with mp.context() as m:
        if not kernels:
            m.setattr(tk, "_loaded", False)  # as when numba is unavailable
        try:
            rel = release_table(df, keys="cell", count="n", h=h, receiver=RECEIVER)
        except ValidationError as exc:
            return str(exc)
    return rel


def _agree(df: pl.DataFrame, h: int, mp: pytest.MonkeyPatch) -> object:
    """Release with and without the kernels: the same published frame (buffers included), the
    same cells, or the same error."""
    fast, slow = _outcome(df, h, True, mp), _outcome(df, h, False, mp)
    if isinstance(slow, str):
        assert fast == slow
        return slow
    assert not isinstance(fast, str), fast
    assert fast.published.equals(slow.published)
    assert fast.published.schema == slow.published.schema
    assert fast.cells.equals(slow.cells)
    v_fast, bits_fast = _arrow(fast.published, "n")
    v_slow, bits_slow = _arrow(slow.published, "n")
    counts = df.get_column("n").to_numpy()
    np.testing.assert_array_equal(v_fast, np.where(counts >= h, counts, 0))
    np.testing.assert_array_equal(v_fast, v_slow)
    kept = counts >= h
    for bits in (bits_fast, bits_slow):
        np.testing.assert_array_equal(kept if bits is None else bits, kept)
    return fast


@pytest.mark.parametrize("fused_rows", [1 << 25, 0])  # marked in the pass, or after it
@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("order", ["sorted", "shuffled", "offset", "late"])
def test_release_with_and_without_kernels_agree(
    n: int,
    order: str,
    fused_rows: int,
    kernels_everywhere: None,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(tk, "FUSED_ROWS", fused_rows)
    rng = np.random.default_rng(n * 7 + len(order))
    keys = np.arange(n, dtype=np.int64)
    if order == "shuffled":
        keys = rng.permutation(keys)
    if order == "offset":  # outside the direct bit table: the exact paths prove them distinct
        keys = rng.permutation(keys) * 3 - 5
    if order == "late":  # sorted over the leading block, not after it (marked after the pass)
        keys[n // 2 :] = rng.permutation(keys[n // 2 :])
    counts = rng.poisson(4.0, n).astype(np.int64)
    counts[rng.random(n) < 0.01] = BIG
    df = pl.DataFrame({"cell": keys, "n": counts})
    for h in (2, 5, 10**6):  # the extremes of h (the kernels alone: every int64, below)
        assert not isinstance(_agree(df, h, monkeypatch), str)


@pytest.mark.parametrize("fused_rows", [1 << 25, 0])
@pytest.mark.parametrize("defect", ["negative", "duplicate", "adjacent", "null key", "null n"])
@pytest.mark.parametrize("n", [65, 65537, 131073])
def test_errors_are_those_of_the_numpy_path(
    defect: str,
    n: int,
    fused_rows: int,
    kernels_everywhere: None,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(tk, "FUSED_ROWS", fused_rows)
    rng = np.random.default_rng(n)
    keys = rng.permutation(n).astype(np.int64)
    counts = rng.poisson(6.0, n).astype(np.int64)
    where = sorted(rng.choice(n, 2, replace=False).tolist())
    if defect == "negative":
        counts[where] = [-1, -(2**63)]
    elif defect == "duplicate":
        keys[where[1]] = keys[where[0]]
    elif defect == "adjacent":  # sorted keys with one repeated: the order check fails there
        keys = np.arange(n, dtype=np.int64)
        keys[where[1]] = keys[where[1] - 1]
    df = pl.DataFrame({"cell": keys, "n": counts})
    if defect.startswith("null"):
        col = "cell" if defect == "null key" else "n"
        df = df.with_columns(
            pl.when(pl.int_range(n) == where[0]).then(None).otherwise(pl.col(col)).alias(col)
        )
    error = _agree(df, 5, monkeypatch)
    assert isinstance(error, str)
    first = where[1] if defect == "adjacent" else where[0] + 1  # the first offending row
    assert f"{first}" in error


@pytest.mark.parametrize("byte_rows", [0, 1 << 25])  # bit table, byte table
@pytest.mark.parametrize("n", [1, 63, 64, 65, 1000, 65537, 200_003])
def test_kernels_against_numpy(n: int, byte_rows: int, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(tk, "_PARALLEL_ROWS", 1 << 16)
    monkeypatch.setattr(tk, "BYTE_ROWS", byte_rows)
    rng = np.random.default_rng(n)
    counts = rng.integers(-3, 20, n).astype(np.int64)
    counts[rng.random(n) < 0.05] = BIG
    for keys in (np.arange(n, dtype=np.int64), rng.permutation(n).astype(np.int64)):
        for h in (-(2**63), 0, 2, 7, BIG):
            out = tk.publish(keys, counts, h)
            assert out is not None
            negative, increasing, bits, data = out
            values = np.frombuffer(data, dtype=np.int64)
            assert negative == bool((counts < 0).any())
            assert increasing == bool(np.all(np.diff(keys) > 0))
            packed = np.packbits(counts >= h, bitorder="little")
            raw = np.frombuffer(bits, dtype=np.uint8)
            np.testing.assert_array_equal(raw[: packed.size], packed)
            assert not raw[packed.size :].any()  # bits beyond the rows are 0
            np.testing.assert_array_equal(values, np.where(counts >= h, counts, 0))
        assert tk.distinct(keys) is True
    dup = rng.permutation(n + 1)[:n].astype(np.int64)
    if n > 1:
        dup[-1] = dup[0]
        assert tk.distinct(dup) is None
    assert tk.distinct(np.array([-1] * n, dtype=np.int64)) is None  # outside the table
    assert tk.distinct(np.full(n, BIG, dtype=np.int64)) is None


@pytest.mark.parametrize("n", [1, 63, 64, 65, 1000, 65537, 200_003])
def test_fused_marking_against_numpy(n: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """publish_distinct: the published column of publish, and "distinct" exactly when the keys
    are distinct and all in the table (0..n + n // 8), whatever the split into thread parts."""
    rng = np.random.default_rng(n + 11)
    counts = rng.integers(-3, 20, n).astype(np.int64)
    slots = n + n // 8 + 1
    top = -(-slots // 64) * 64 - 1  # the last slot of the table's words
    perm = rng.permutation(n).astype(np.int64)
    cases = {"permutation": perm, "spread": rng.choice(slots, n, replace=False).astype(np.int64)}
    if n > 1:
        dup = perm.copy()
        dup[-1] = dup[0]
        cases["duplicate"] = dup
        across = perm.copy()  # the same key in the first and the last thread part
        across[0], across[-1] = across[-1], across[-1]
        cases["duplicate across parts"] = across
    cases["negative key"] = np.where(perm == perm[n // 2], -1, perm)
    cases["beyond the table"] = np.where(perm == perm[-1], top + 1, perm)
    cases["last slot"] = np.where(perm == perm[0], top, perm)
    for rows in (1 << 16, 1 << 40):  # several parts (threads), one part
        monkeypatch.setattr(tk, "_PARALLEL_ROWS", rows)
        for name, keys in cases.items():
            out = tk.publish_distinct(keys, counts, 5)
            assert out is not None
            negative, proved, bits, data = out
            assert negative == bool((counts < 0).any())
            in_table = bool(((keys >= 0) & (keys <= top)).all())
            truly = in_table and np.unique(keys).size == n
            assert proved == truly, name
            packed = np.packbits(counts >= 5, bitorder="little")
            raw = np.frombuffer(bits, dtype=np.uint8)
            np.testing.assert_array_equal(raw[: packed.size], packed)
            assert not raw[packed.size :].any()
            values = np.frombuffer(data, dtype=np.int64)
            np.testing.assert_array_equal(values, np.where(counts >= 5, counts, 0))


@pytest.mark.parametrize("how", ["import", "compile"])
def test_fallback_when_numba_is_unavailable(how: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """numba missing, or failing to compile (e.g. a cache it cannot write): the numpy/polars
    path publishes the same frame, silently."""
    n = 70_000
    rng = np.random.default_rng(3)
    df = pl.DataFrame({"cell": rng.permutation(n).astype(np.int64), "n": rng.poisson(5, n)})
    reference = T.published_column(T.read_cells(df, ("cell",), "n"), ("cell",), "n", 5)
    monkeypatch.setattr(tk, "MIN_ROWS", 1)
    monkeypatch.setattr(tk, "_loaded", None)
    if how == "import":
        monkeypatch.setitem(sys.modules, "numba", None)  # import numba raises ImportError
    else:
        import numba

        def fail(*args: object, **kwargs: object) -> object:
            raise RuntimeError("cannot cache function: no locator available")

        monkeypatch.setattr(numba, "njit", fail)
    rel = release_table(df, keys="cell", count="n", h=5, receiver=RECEIVER)
    assert tk._loaded is False and tk.kernels() is None
    assert rel.published.equals(reference)
    np.testing.assert_array_equal(_arrow(rel.published, "n")[0], _arrow(reference, "n")[0])


def test_small_releases_and_the_cli_start_up_do_not_import_numba() -> None:
    code = (
        "import sys, polars as pl\n"
        "from persuasive.cli import app\n"
        "from persuasive.release.tables import release_table\n"
        "from persuasive.classes.receivers import PoissonReceiver\n"
        "df = pl.DataFrame({'cell': list(range(1000)), 'n': [7] * 1000})\n"
        "release_table(df, keys='cell', count='n', h=5, receiver=PoissonReceiver(0.5, 3.0))\n"
        "assert 'numba' not in sys.modules, 'numba imported'\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)
    cli = (
        "import sys; sys.argv = ['persuasive', '--version']; from persuasive.cli import app; app()"
    )
    out = subprocess.run(
        [sys.executable, "-X", "importtime", "-c", cli],
        capture_output=True,
        text=True,
        check=True,
    )
    assert "numba" not in out.stderr


def test_kernels_without_prefetching_give_the_same_results(monkeypatch: pytest.MonkeyPatch) -> None:
    """An LLVM that does not know ``llvm.prefetch``: the kernels compile without it (the marking
    then gives the same answers) instead of falling back to the numpy path."""
    import numba

    def unknown() -> object:
        raise RuntimeError("unknown intrinsic")

    with_prefetch = tk.kernels()
    monkeypatch.setattr(tk, "_prefetch", unknown)
    plain = tk._compile()
    rng = np.random.default_rng(5)
    for keys in (rng.permutation(5000).astype(np.int64), np.full(5000, 7, dtype=np.int64)):
        words = -(-(keys.size + keys.size // 8 + 1) // 64)
        a, b = np.zeros(words, np.uint64), np.zeros(words, np.uint64)
        assert plain[2](keys, a) == with_prefetch[2](keys, b)
        np.testing.assert_array_equal(a, b)
    assert isinstance(plain[2], numba.core.registry.CPUDispatcher)


def test_certificates_are_computed_once_per_claim_and_never_shared() -> None:
    """The certificate is data-independent and cached by claim; each release gets its own
    dicts, and every claim (1 and 1.0 as the target κ are two) the certificate computed afresh."""
    from persuasive.release import tables
    from persuasive.report.kinds.table import KIND, TableParams

    df = pl.DataFrame({"cell": [1, 2, 3], "n": [1, 7, 9]})
    one = release_table(df, keys="cell", count="n", h=5, receiver=RECEIVER, target_kappa=1)
    two = release_table(df, keys="cell", count="n", h=5, receiver=RECEIVER, target_kappa=1)
    assert one.certificate == two.certificate
    assert one.certificate.definition is not two.certificate.definition
    one.certificate.definition["priors"]["alpha"] = 0.0  # a user's edit stays in its release
    assert two.certificate.definition["priors"]["alpha"] == RECEIVER.alpha(5)
    three = release_table(df, keys="cell", count="n", h=5, receiver=RECEIVER, target_kappa=1.0)
    for rel, kappa in ((two, 1), (three, 1.0)):
        params = TableParams(5, 5, RECEIVER, ("cell",), "n", kappa, "zero")
        assert rel.certificate == KIND.certify(params).certificate
    assert len(tables._certified) <= tables._CACHED
