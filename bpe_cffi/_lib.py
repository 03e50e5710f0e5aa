"""The compiled C library, the translation of its error codes into Python exceptions, and
the arrays it reads."""
import numpy as np

from ._native import ffi, lib

_ERRORS = {
    lib.BPE_ENOMEM: (MemoryError, "out of memory"),
    lib.BPE_EINVAL: (ValueError, "invalid arguments"),
    lib.BPE_EOVERFLOW: (OverflowError, "a count or size does not fit in 64 bits"),
    lib.BPE_EINTERNAL: (RuntimeError, "internal error (a bug in bpe_cffi; please report it)"),
    lib.BPE_EUTF8: (ValueError, "the text is not valid UTF-8"),
}


def check(rc: int, what: str) -> None:
    """Raises the exception for a BPE_E* code returned by the C call named `what`."""
    if rc != lib.BPE_OK:
        exc, message = _ERRORS.get(rc, (RuntimeError, f"unknown error code {rc}"))
        raise exc(f"{what}: {message}")


def c_ready(values, dtype) -> np.ndarray:
    """values as an array that C reads as a plain array of dtype: contiguous and aligned,
    copied only if it is not already. (np.ascontiguousarray keeps a view that starts at an odd
    address as it is, as Dask's results and views into buffers do, and C read it misaligned:
    undefined behaviour, which UBSan reports.)"""
    return np.require(values, dtype, ["C_CONTIGUOUS", "ALIGNED"])


__all__ = ["ffi", "lib", "check", "c_ready"]
