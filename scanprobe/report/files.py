"""Files scanprobe writes for the user (``inspect --html``, ``graph -o``): never one of theirs lost.

A path is checked and resolved against the working directory *before* the user's module runs
(a module that changes directory does not move the report): it must not be a directory, the
analysed file, or any ``.py`` file, and its folder must exist. The file is written to a temporary
file in that folder and renamed into place, so a failed write leaves the old file as it was and no
temporary file behind.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from scanprobe.errors import ScanprobeError


def output_path(given: str, option: str, analysed: str | None = None, suffixes: tuple[str, ...] = ()) -> Path:
    """The absolute path to write ``given`` (an option's value) to, or a ScanprobeError saying why not."""
    if not given or not given.strip():
        raise ScanprobeError(f"{option}: empty file name", hint=f"give a file to write, e.g. {option} report{suffixes[0] if suffixes else ''}")
    path = Path(given).expanduser()
    path = path if path.is_absolute() else Path.cwd() / path
    example = f"{option} {path.stem or 'report'}{suffixes[0] if suffixes else ''}"
    if path.is_dir() or given.endswith(("/", os.sep)):
        raise ScanprobeError(f"{option} {given}: is a directory, not a file to write", hint=f"name a file in it, e.g. {example}")
    if analysed is not None:  # FILE or FILE:TARGET
        files = [Path(p).expanduser() for p in (analysed, analysed.rsplit(":", 1)[0])]
        target = next((f for f in files if f.is_file()), None)
        if target is not None and path.exists() and os.path.samefile(target, path):
            raise ScanprobeError(f"{option} {given}: that is the file being analysed; scanprobe never overwrites it",
                                 hint=f"write the report elsewhere, e.g. {example}")
    if path.suffix == ".py":
        raise ScanprobeError(f"{option} {given}: scanprobe does not write over Python sources",
                             hint=f"use another name, e.g. {path.with_suffix(suffixes[0] if suffixes else '.out').name}")
    if suffixes and path.suffix.lower() not in suffixes:
        raise ScanprobeError(f"{option} {given}: the name must end in {' or '.join(suffixes)}", hint=f"e.g. {example}")
    if not path.parent.is_dir():
        raise ScanprobeError(f"{option} {given}: the folder {path.parent} does not exist",
                             hint=f"create it first (mkdir -p {path.parent}), or write to an existing folder")
    return path


def write_atomic(path: Path, data: str | bytes) -> None:
    """Write ``data`` to ``path`` through a temporary file in the same folder, renamed into place."""
    mode = "wb" if isinstance(data, bytes) else "w"
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, mode, **({} if isinstance(data, bytes) else {"encoding": "utf-8"})) as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException as exc:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        if isinstance(exc, OSError):
            raise ScanprobeError(f"cannot write {path}: {exc.strerror or exc}", hint="check the folder's permissions and free space") from None
        raise
