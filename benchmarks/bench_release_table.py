"""Count-table release throughput (Prop 8 cell suppression) on a 10^7-cell table.

Prints, measured in this run (best of several repeats, after a warm-up):

1. in memory: ``release_table`` on a polars DataFrame (an Int64 key and an Int64 count column)
   against a numpy copy of the same count array (target: within 4x of the copy); once with the
   key sorted (uniqueness checked in one pass) and once shuffled (uniqueness by hashing);
2. Parquet to Parquet: ``release_table(path)`` + ``TableRelease.write(out.parquet)`` against
   ``pyarrow.parquet.read_table`` + ``write_table`` of the same file.

No asserts. Run: ``python benchmarks/bench_release_table.py``
"""

from __future__ import annotations

import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import polars as pl
import pyarrow.parquet as pq

from persuasive.classes.receivers import PoissonReceiver
from persuasive.release.tables import release_table

N = 10**7
H = 5
RECEIVER = PoissonReceiver(0.5, 3.0)


def best(fn: Callable[[], object], repeats: int) -> float:
    fn()  # warm-up (first-touch page faults, thread pools)
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times)


def main() -> None:
    rng = np.random.default_rng(0)
    counts = rng.poisson(8.0, N).astype(np.int64)
    sorted_df = pl.DataFrame({"cell": np.arange(N, dtype=np.int64), "n": counts})
    shuffled_df = pl.DataFrame({"cell": rng.permutation(N).astype(np.int64), "n": counts})

    t_copy = best(lambda: counts.copy(), 7)

    def release(df: pl.DataFrame) -> Callable[[], object]:
        return lambda: release_table(df, keys="cell", count="n", h=H, receiver=RECEIVER)

    t_sorted = best(release(sorted_df), 5)
    t_shuffled = best(release(shuffled_df), 3)
    mb = counts.nbytes / 1e6
    print(f"{N:.0e} cells, h = {H}, {RECEIVER!r}")
    print(f"numpy copy of the counts      : {t_copy * 1e3:8.1f} ms  ({mb / t_copy:8.0f} MB/s)")
    print(
        f"release_table, sorted key     : {t_sorted * 1e3:8.1f} ms  "
        f"({N / t_sorted / 1e6:6.1f} M cells/s)  ratio to copy {t_sorted / t_copy:5.2f}x "
        "(goal <= 4x)"
    )
    print(
        f"release_table, shuffled key   : {t_shuffled * 1e3:8.1f} ms  "
        f"({N / t_shuffled / 1e6:6.1f} M cells/s)  ratio to copy {t_shuffled / t_copy:5.2f}x "
        "(bitmap uniqueness check)"
    )

    with tempfile.TemporaryDirectory() as tmp:
        src, ours, theirs = Path(tmp) / "in.parquet", Path(tmp) / "out.parquet", Path(tmp) / "pa.pq"
        pq.write_table(sorted_df.to_arrow(), src)

        def persuasive_p2p() -> None:
            rel = release_table(src, keys="cell", count="n", h=H, receiver=RECEIVER)
            rel.write(ours)

        def pyarrow_p2p() -> None:
            pq.write_table(pq.read_table(src), theirs)

        t_ours = best(persuasive_p2p, 3)
        t_pa = best(pyarrow_p2p, 3)
        size = src.stat().st_size / 1e6
        print(f"Parquet input {size:.0f} MB")
        print(
            f"Parquet -> release -> Parquet : {t_ours * 1e3:8.1f} ms  "
            f"({N / t_ours / 1e6:6.1f} M cells/s)"
        )
        print(
            f"pyarrow read_table+write_table: {t_pa * 1e3:8.1f} ms  "
            f"({N / t_pa / 1e6:6.1f} M cells/s)  ratio {t_ours / t_pa:5.2f}x"
        )


if __name__ == "__main__":
    main()
