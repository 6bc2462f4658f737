r"""The one writer of release folders: atomic, private until complete, never deleting others' files.

Every release (and the demo) writes its folder through :class:`OutputFolder`:

1. **Before any work**, :meth:`OutputFolder.check` refuses a destination it may not write:
   an empty name, a symbolic link (it would be replaced by a folder), a path below a file, the
   working directory or a parent of it, a folder holding one of the release's inputs (or a
   parent of one), and an existing folder that is not empty — unless ``force`` is given *and*
   the folder was written by persuasive (its marker file :data:`MARKER` lists every file in
   it, and it holds nothing else).
2. The files are written into a **private temporary folder** (mode 0700) created inside the
   destination's parent, so that nobody else can read true values while they are written.
3. On success the folder is **renamed into place** atomically (an existing destination is
   exchanged with it in one ``renameat2(RENAME_EXCHANGE)`` call where Linux offers it), with
   SIGINT, SIGTERM and SIGHUP held back during the swap (:mod:`persuasive.files.signals`).
4. On any error, and on SIGINT, SIGTERM or SIGHUP at any moment, the temporary folder is
   removed before the process exits: nothing with true values (custodian files, per-cell
   losses) survives outside the final folder.
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import json
import os
import shutil
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from persuasive.errors import ValidationError
from persuasive.files.signals import COMMITTED, handle_signals, signals_deferred

__all__ = ["MARKER", "OutputFolder", "read_marker", "relocate"]

#: The marker file persuasive writes into every folder it creates: a JSON manifest of the files.
MARKER = ".persuasive-output.json"
#: What the marker says it is.
MARKER_FORMAT = "persuasive-output"


def _libc() -> Any:
    name = ctypes.util.find_library("c")
    try:
        return ctypes.CDLL(name, use_errno=True)
    except OSError:  # pragma: no cover - no C library to load
        return None


_RENAME_EXCHANGE = 2
_AT_FDCWD = -100


def _exchange(a: Path, b: Path) -> bool:
    """Swap two paths atomically (Linux ``renameat2``); False where that is not available."""
    libc = _libc()
    fn = getattr(libc, "renameat2", None) if libc is not None else None
    if fn is None:
        return False
    fn.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_uint]
    rc = fn(_AT_FDCWD, os.fsencode(a), _AT_FDCWD, os.fsencode(b), _RENAME_EXCHANGE)
    if rc == 0:
        return True
    err = ctypes.get_errno()
    if err in (22, 38, 95):  # EINVAL / ENOSYS / EOPNOTSUPP: the file system cannot exchange
        return False
    raise OSError(err, os.strerror(err), str(b))


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def _is_within(path: Path, folder: Path) -> bool:
    """Whether ``path`` is ``folder`` or inside it (both resolved)."""
    return path == folder or folder in path.parents


def read_marker(folder: Path) -> dict[str, Any] | None:
    """The marker of a folder persuasive wrote, or None if it has none (or a broken one)."""
    try:
        doc = json.loads((folder / MARKER).read_text(encoding="utf-8"))
    except (OSError, ValueError, RecursionError):
        return None
    if not isinstance(doc, dict) or doc.get("format") != MARKER_FORMAT:
        return None
    files = doc.get("files")
    if not isinstance(files, list) or not all(isinstance(f, str) for f in files):
        return None
    return doc


def _listing(folder: Path) -> list[str]:
    """Every file and folder below ``folder``, as POSIX paths relative to it (folders end in /)."""
    out = []
    for root, dirs, files in os.walk(folder):
        rel = Path(root).relative_to(folder)
        out += [(rel / d).as_posix() + "/" for d in dirs]
        out += [(rel / f).as_posix() for f in files]
    return sorted(p.removeprefix("./") for p in out)


class OutputFolder:
    """The output folder of a release, written atomically (see the module docstring).

    Parameters
    ----------
    path : str or path-like
        The destination folder.
    force : bool
        Replace an existing folder that persuasive wrote (and nothing else).
    inputs : sequence of paths
        The files the release reads: a destination holding one of them is refused.
    option : str
        How the destination is named in messages (``--out``, ``OUT_DIR``).
    kind : str
        What the folder holds, recorded in the marker (``table``, ``demo`` …).
    replace_kinds : sequence of str
        Kinds of earlier folders that may be replaced without ``force`` (the demo replaces its
        own earlier output).

    Examples
    --------
    >>> import pathlib, tempfile
    >>> root = pathlib.Path(tempfile.mkdtemp())
    >>> with OutputFolder(root / "out", kind="example") as tmp:
    ...     _ = (tmp / "a.txt").write_text("a")
    >>> sorted(p.name for p in (root / "out").iterdir())
    ['.persuasive-output.json', 'a.txt']
    >>> with OutputFolder(root / "out", force=True, kind="example") as tmp:
    ...     _ = (tmp / "b.txt").write_text("b")
    >>> sorted(p.name for p in (root / "out").iterdir()), sorted(p.name for p in root.iterdir())
    (['.persuasive-output.json', 'b.txt'], ['out'])
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        force: bool = False,
        inputs: Sequence[str | os.PathLike[str]] = (),
        option: str = "--out",
        kind: str = "release",
        replace_kinds: Sequence[str] = (),
    ) -> None:
        self.option = option
        if not isinstance(path, (str, os.PathLike)) or str(path).strip() == "":
            raise ValidationError(f"{option} must name a folder; got {str(path)!r}")
        self.path = Path(path)
        self.force = bool(force)
        self.inputs = tuple(Path(p) for p in inputs)
        self.kind = kind
        self.replace_kinds = tuple(replace_kinds)
        self.tmp: Path | None = None
        self._stack: contextlib.ExitStack | None = None
        self._created: list[Path] = []

    # ---------------------------------------------------------------- the guard
    def check(self) -> Path:
        """Refuse a destination this release may not write (a ValidationError naming it and
        the fix); return the destination. Called again just before the final rename."""
        name, dest = self.option, self.path
        if dest.is_symlink():
            target = os.readlink(dest)
            raise ValidationError(
                f"{name} '{dest}' is a symbolic link (to '{target}'); give the real folder: "
                "a release replaces its destination and would replace the link"
            )
        for parent in dest.parents:
            if parent.exists() and not parent.is_dir():
                raise ValidationError(
                    f"{name} '{dest}': '{parent}' is a file, not a folder; choose another path"
                )
        real = dest.resolve()
        cwd = Path.cwd().resolve()
        if _is_within(cwd, real):
            what = "the working directory" if real == cwd else "a parent of the working directory"
            raise ValidationError(
                f"{name} '{dest}' is {what}; a release replaces its destination, so write into a "
                "new folder, e.g. --out released/"
            )
        for inp in self.inputs:
            if _is_within(inp.resolve(), real):
                what = "is the input" if inp.resolve() == real else f"holds the input '{inp}'"
                raise ValidationError(
                    f"{name} '{dest}' {what}; a release replaces its destination, so choose a "
                    "new folder that does not contain its input"
                )
        if dest.exists() and not dest.is_dir():
            raise ValidationError(
                f"{name} '{dest}' exists and is a file, not a folder; choose another path"
            )
        if dest.is_dir():
            self._check_existing(dest)
        return dest

    def _check_existing(self, dest: Path) -> None:
        name = self.option
        try:
            present = _listing(dest)
        except OSError as exc:
            raise ValidationError(f"{name} '{dest}' cannot be read: {exc.strerror}") from None
        if not present:
            return
        marker = read_marker(dest)
        ours = marker is not None and (self.force or marker.get("kind") in self.replace_kinds)
        if not ours:
            if marker is None:
                why = (
                    "it was not written by persuasive (no marker file), so --force will not "
                    "replace it either"
                    if self.force
                    else "choose a new folder, or pass --force to replace a folder persuasive wrote"
                )
            else:
                why = "pass --force to replace it"
            raise ValidationError(f"{name} '{dest}' exists and is not empty; {why}")
        assert marker is not None
        listed = set(marker["files"]) | {MARKER}
        foreign = [p for p in present if p not in listed and not p.endswith("/")]
        folders = {p.as_posix() + "/" for f in listed for p in Path(f).parents if p != Path(".")}
        foreign += [p for p in present if p.endswith("/") and p not in folders]
        if foreign:
            shown = ", ".join(sorted(foreign)[:5]) + (" ..." if len(foreign) > 5 else "")
            raise ValidationError(
                f"{name} '{dest}' holds files persuasive did not write ({shown}); move them out "
                "or choose another folder: a release never deletes files that are not its own"
            )

    # ---------------------------------------------------------------- writing
    def __enter__(self) -> Path:
        dest = self.check()
        stack = contextlib.ExitStack()
        stack.enter_context(handle_signals())
        self._created = []
        try:
            with signals_deferred():  # no signal between creating a folder and owning it
                for parent in reversed(dest.parents):
                    if not parent.exists():
                        parent.mkdir()
                        self._created.append(parent)
                self.tmp = Path(
                    tempfile.mkdtemp(
                        prefix=f".{dest.name}.", suffix=".persuasive-tmp", dir=dest.parent
                    )
                )
                os.chmod(self.tmp, 0o700)
        except OSError as exc:
            self._remove_created()
            stack.close()
            raise ValidationError(
                f"{self.option} '{dest}': cannot create a folder in '{dest.parent}': {exc.strerror}"
            ) from None
        except BaseException:
            if self.tmp is not None:
                shutil.rmtree(self.tmp, ignore_errors=True)
            self._remove_created()
            stack.close()
            raise
        self._stack = stack
        return self.tmp

    def _remove_created(self) -> None:
        """Remove the parent folders this release created, if they are still empty."""
        for folder in reversed(self._created):
            with contextlib.suppress(OSError):
                folder.rmdir()

    def __exit__(self, exc_type: Any, exc: Any, tb: Any) -> None:
        assert self.tmp is not None and self._stack is not None
        tmp, stack = self.tmp, self._stack
        try:
            if exc_type is None:
                self._commit(tmp)
            else:
                with signals_deferred():
                    shutil.rmtree(tmp, ignore_errors=True)
                    self._remove_created()
        except BaseException:
            with signals_deferred():
                shutil.rmtree(tmp, ignore_errors=True)
                if not COMMITTED or COMMITTED[-1] != self.path:
                    self._remove_created()
            raise
        finally:
            stack.close()

    def _commit(self, tmp: Path) -> None:
        files = [p for p in _listing(tmp) if not p.endswith("/")]
        marker = {"format": MARKER_FORMAT, "kind": self.kind, "files": sorted(files)}
        (tmp / MARKER).write_text(json.dumps(marker, indent=2) + "\n", encoding="utf-8")
        dest = self.check()  # again: the destination may have changed while we worked
        with signals_deferred():
            os.chmod(tmp, 0o777 & ~_umask())
            if dest.exists():
                if _exchange(tmp, dest):
                    COMMITTED.append(self.path)
                    shutil.rmtree(tmp, ignore_errors=True)  # tmp now holds the old folder
                    return
                old = Path(
                    tempfile.mkdtemp(prefix=f".{dest.name}.", suffix=".old", dir=dest.parent)
                )
                os.replace(dest, old / dest.name)
                os.replace(tmp, dest)
                COMMITTED.append(self.path)
                shutil.rmtree(old, ignore_errors=True)
            else:
                os.replace(tmp, dest)
                COMMITTED.append(self.path)


def relocate(paths: dict[str, Path], tmp: Path, dest: Path) -> dict[str, Path]:
    """The final paths of files written into ``tmp`` once it has become ``dest``."""
    return {k: dest / p.relative_to(tmp) for k, p in paths.items()}
