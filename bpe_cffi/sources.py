"""Where corpus text comes from: paths, lists, globs and fsspec URLs; byte ranges read and
decoded with errors that say where."""
from __future__ import annotations

import glob
import os
import stat
from typing import Iterable, Union

import numpy as np

PathsLike = Union[str, os.PathLike, Iterable[Union[str, os.PathLike]]]


def is_url(path: str) -> bool:
    """Whether path is a URL for fsspec (s3://, file://, ...)."""
    return "://" in path


def open_binary(path: str):
    """A local file, or (a URL such as s3:// or file://) the same through fsspec."""
    if is_url(path):
        import fsspec
        return fsspec.open(path, "rb").open()
    return open(path, "rb")


def file_size(path: str) -> int:
    """The size in bytes of a local file or a URL's."""
    if is_url(path):
        import fsspec
        fs, p = fsspec.core.url_to_fs(path)
        return fs.size(p)
    return os.path.getsize(path)


def read_range_bytes(path: str, start: int, end: int) -> bytes:
    """Bytes [start, end) of path; OSError if the file changed size while read."""
    with open_binary(path) as f:
        f.seek(start)
        data = f.read(end - start)
    if len(data) != end - start:
        raise _changed(path, start, end, len(data))
    return data


def read_range_into(path: str, start: int, end: int, buffer: np.ndarray) -> np.ndarray:
    """Bytes [start, end) of path read into the uint8 array buffer (at least end - start
    long); returns the part of it they fill. OSError if the file changed size while read."""
    n = end - start
    got = 0
    with open_binary(path) as f, memoryview(buffer)[:n] as view:
        f.seek(start)
        while got < n and (k := f.readinto(view[got:])):
            got += k
    if got != n:
        raise _changed(path, start, end, got)
    return buffer[:n]


def _changed(path: str, start: int, end: int, got: int) -> OSError:
    """The error for bytes [start, end) of path read as only `got` bytes."""
    return OSError(f"{path} changed while being read: expected {end - start} bytes at "
                   f"offset {start}, got {got}")


def decode_range(data: bytes, path: str, start: int) -> str:
    """data (bytes start.. of path) as text, with an error that says where it is not UTF-8."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise ValueError(f"{path} is not valid UTF-8: byte offset {start + e.start} "
                         f"({e.reason})") from None


def first_bad_utf8(f) -> str:
    """Where the bytes of the binary file f first are not UTF-8: ": byte offset N of its text,
    line L", or "" if they all are (the file changed since a read failed)."""
    done = lines = 0  # bytes and line breaks before `carry`
    carry = b""  # a character cut by the end of the last block
    while block := f.read(1 << 20):
        data = carry + block
        try:
            data.decode("utf-8")
            good = len(data)
        except UnicodeDecodeError as e:
            if e.reason != "unexpected end of data":
                line = lines + data.count(b"\n", 0, e.start) + 1
                return f": byte offset {done + e.start} of its text, line {line}"
            good = e.start
        carry = data[good:]
        done += good
        lines += data.count(b"\n", 0, good)
    return f": byte offset {done} of its text, at its end" if carry else ""


def read_range(path: str, start: int, end: int) -> str:
    """The text of bytes [start, end) of path."""
    return decode_range(read_range_bytes(path, start, end), path, start)


STDIN = "-"  # an input path that means standard input (a text stream)


def check_input_file(path) -> str:
    """path, if it is "-" (stdin), a regular file, or a URL of another file system than this
    machine's (fsspec reports what is wrong with those); else the error that says why not. A
    file:// URL is checked as the local path it names."""
    path = os.fspath(path)
    if path == STDIN:
        return path
    local = _local_path(path)
    if local is None:
        return path
    try:  # (a loop of links, a directory that may not be searched: the system's own error)
        mode = os.stat(local).st_mode
    except FileNotFoundError:
        raise FileNotFoundError(f"no such file: {path!r}") from None
    if stat.S_ISDIR(mode):
        raise IsADirectoryError(f"expected a text file, got a directory: {path!r}")
    if not stat.S_ISREG(mode):
        raise ValueError(f"{path!r} is not a regular file (a FIFO, socket or device cannot be "
                         "read in independent byte ranges); copy it to a file first")
    return path


def refuse_overwriting(outputs: Iterable[str], inputs: Iterable[str],
                       what: str = "the input") -> None:
    """Raises ValueError, before any work starts, if an output is the same file as an input
    (symlinks and hard links included): writing it would destroy the input. what: the
    inputs' name in the message."""
    inputs = [p for p in map(_local_path, inputs) if p is not None and os.path.exists(p)]
    for out in map(os.fspath, outputs):
        if not os.path.exists(out):
            continue
        for p in inputs:
            if os.path.samefile(out, p):
                raise ValueError(f"the output {out!r} is {what} {p!r}: refusing to overwrite "
                                 "it; choose another output path")


def _local_path(path) -> str | None:
    """path as a path of this machine's file system (a file:// URL too), or None for a URL
    of another file system."""
    path = os.fspath(path)
    if not is_url(path):
        return path
    import fsspec
    fs, local = fsspec.core.url_to_fs(path)
    protocols = fs.protocol if isinstance(fs.protocol, tuple) else (fs.protocol,)
    return local if "file" in protocols else None


def resolve_inputs(paths: PathsLike) -> list[str]:
    """One path, a list of paths, or glob patterns -> the list of files, in a stable order."""
    try:
        items = [paths] if isinstance(paths, (str, bytes, os.PathLike)) else list(paths)
    except TypeError:
        raise TypeError(f"inputs must be a path or a list of paths, not "
                        f"{type(paths).__name__}") from None
    files: list[str] = []
    for item in items:
        if not isinstance(item, (str, bytes, os.PathLike)):
            raise TypeError(f"an input path must be a str or path-like, not "
                            f"{type(item).__name__}")
        p = os.fspath(item)
        if isinstance(p, bytes):
            p = os.fsdecode(p)
        if is_url(p):
            import fsspec
            fs, _ = fsspec.core.url_to_fs(p)
            matches = fsspec.open_files(p)
            if not matches:
                raise FileNotFoundError(f"no file matches {p!r}")
            files.extend(check_input_file(fs.unstrip_protocol(f.path)) for f in matches)
            continue
        if not os.path.exists(p) and glob.has_magic(p):
            matches = sorted(m for m in glob.glob(p) if os.path.isfile(m))
            if not matches:
                raise FileNotFoundError(f"no file matches {p!r}")
            files.extend(matches)
        else:
            files.append(check_input_file(p))
    if not files:
        raise ValueError("no input files given")
    if files.count(STDIN) > 1:  # the second read would find it empty: an empty document
        raise ValueError("standard input ('-') is given more than once")
    return files
