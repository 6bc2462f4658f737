"""Write a count table of N cells to disk, in bounded memory (batches), for the out-of-core
benchmarks (``docs/out_of_core.md``).

Usage::

    python benchmarks/make_big_table.py --cells 10000000 --out /tmp/big.parquet
    python benchmarks/make_big_table.py --cells 1000000 --out /tmp/big.csv --order shuffled
    python benchmarks/make_big_table.py --cells 1000000 --out /tmp/a.parquet --out /tmp/a.csv

The table has a key column ``cell`` and a count column ``n``. The keys are 0 .. N-1, in
increasing order (``--order sorted``, the default) or permuted (``--order shuffled``: key
``(a * i + b) mod N`` at row i, with a prime to N, a bijection, so the keys stay unique); with
``--keys text`` each key is written as text of 12 digits with leading zeros. The count of row i
is a hash of i modulo ``--max-count`` (default 20: about a quarter of the cells fall below
h = 5). Every batch of ``--batch`` rows is made, written and dropped: the memory held is one
batch whatever N. The output format follows each ``--out`` suffix (``.parquet`` or ``.csv``).
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from pathlib import Path

import numpy as np
import polars as pl
import pyarrow.parquet as pq

#: A multiplier of the permutation: a prime larger than any N used here.
_PRIME = 2_654_435_761


def multiplier(n: int) -> int:
    """A multiplier a with gcd(a, n) = 1 (so that i -> a*i + b mod n is a permutation)."""
    a = _PRIME % n if n > 1 else 1
    while math.gcd(a, n) != 1:
        a += 1
    return max(a, 1)


def batch(start: int, stop: int, n: int, order: str, keys: str, max_count: int) -> pl.DataFrame:
    """Rows start .. stop-1 of the table."""
    i = np.arange(start, stop, dtype=np.uint64)
    if order == "shuffled":
        k = ((i * np.uint64(multiplier(n))) + np.uint64(n // 3)) % np.uint64(n)
    else:
        k = i
    mixed = (i * np.uint64(0x9E3779B97F4A7C15)) >> np.uint64(40)
    counts = (mixed % np.uint64(max_count)).astype(np.int64)
    key = pl.Series("cell", k.astype(np.int64))
    if keys == "text":
        key = key.cast(pl.String).str.zfill(12)
    return pl.DataFrame([key, pl.Series("n", counts)])


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--cells", type=int, required=True, help="the number of cells N")
    p.add_argument("--out", type=Path, action="append", required=True, help=".parquet or .csv")
    p.add_argument("--order", choices=("sorted", "shuffled"), default="sorted")
    p.add_argument("--keys", choices=("int", "text"), default="int")
    p.add_argument("--max-count", type=int, default=20)
    p.add_argument("--batch", type=int, default=1 << 22, help="rows per batch")
    args = p.parse_args(argv)
    n = args.cells
    if n < 1 or args.batch < 1 or args.max_count < 1:
        p.error("--cells, --batch and --max-count must be at least 1")
    for out in args.out:
        if out.suffix.lower() not in (".parquet", ".csv"):
            p.error(f"--out {out}: the suffix must be .parquet or .csv")
    t0 = time.perf_counter()
    parquet: list[Path] = []
    csvs = []
    for out in args.out:
        out.parent.mkdir(parents=True, exist_ok=True)
        if out.suffix.lower() == ".parquet":
            parquet.append(out)
        else:
            csvs.append(open(out, "wb"))
    writers: list[pq.ParquetWriter] = []
    try:
        for start in range(0, n, args.batch):
            frame = batch(
                start, min(start + args.batch, n), n, args.order, args.keys, args.max_count
            )
            if parquet:
                table = frame.to_arrow()
                if not writers:
                    writers = [
                        pq.ParquetWriter(p, table.schema, compression="zstd") for p in parquet
                    ]
                for w in writers:
                    w.write_table(table, row_group_size=1 << 20)
            for fh in csvs:
                frame.write_csv(fh, include_header=start == 0)
    finally:
        for w in writers:
            w.close()
        for fh in csvs:
            fh.close()
    sizes = ", ".join(f"{out} {out.stat().st_size / 1e9:.3f} GB" for out in args.out)
    print(f"{n} cells in {time.perf_counter() - t0:.1f} s: {sizes}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
