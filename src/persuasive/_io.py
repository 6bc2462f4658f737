"""Atomic file output: nothing half-written is ever left behind.

Every file :mod:`persuasive` writes goes through :func:`atomic_write`: the content is written to a
temporary file in the destination's folder and renamed over the destination only once complete,
so an error (bad input discovered late, a full disk, an interrupt) leaves no partial output.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path

_FILE_MODE = 0o666


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


@contextlib.contextmanager
def atomic_path(path: str | os.PathLike[str]) -> Iterator[Path]:
    """Yield a temporary path beside ``path``; rename it onto ``path`` if the block succeeds.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> d = pathlib.Path(tempfile.mkdtemp())
    >>> with atomic_path(d / "out.txt") as tmp:
    ...     _ = tmp.write_text("hello")
    >>> (d / "out.txt").read_text(), sorted(p.name for p in d.iterdir())
    ('hello', ['out.txt'])
    """
    dest = Path(path)
    dest.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp_name = tempfile.mkstemp(prefix=f".{dest.name}.", suffix=".tmp", dir=dest.parent)
    os.close(fd)
    tmp = Path(tmp_name)
    try:
        yield tmp
        if tmp.is_file():  # mkstemp creates 0600; give the file the usual umask-based mode
            os.chmod(tmp, _FILE_MODE & ~_umask())
        os.replace(tmp, dest)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def atomic_write(path: str | os.PathLike[str], write: Callable[[Path], object]) -> Path:
    """Call ``write(tmp_path)`` and move the result onto ``path`` atomically; return ``path``."""
    with atomic_path(path) as tmp:
        write(tmp)
    return Path(path)
