"""cffi build script (API mode): compiles csrc/ into the extension module bpe_cffi._native.

The cdef is read from csrc/bpe.h itself, so the C header stays the single description of the
interface. setup.py runs this through ``cffi_modules=["bpe_cffi/_build.py:ffibuilder"]``.
"""
import os
import re

from cffi import FFI

HERE = os.path.dirname(os.path.abspath(__file__))
CSRC = os.path.join(os.path.dirname(HERE), "csrc")
# Relative paths keep absolute build paths out of the build metadata; setup.py runs from the
# project root.
SOURCES = sorted(os.path.join("csrc", f) for f in os.listdir(CSRC) if f.endswith(".c"))


def _cdef_from_header(path):
    with open(path, encoding="utf-8") as f:
        text = f.read()
    # cffi's parser takes declarations only: drop preprocessor lines.
    return re.sub(r"(?m)^\s*#.*$", "", text)


ffibuilder = FFI()
ffibuilder.cdef(_cdef_from_header(os.path.join(CSRC, "bpe.h")))
ffibuilder.set_source(
    "bpe_cffi._native",
    '#include "bpe.h"',
    sources=SOURCES,
    include_dirs=["csrc"],
    extra_compile_args=os.environ.get("BPE_CFLAGS", "-std=c11 -O3").split(),
    extra_link_args=os.environ.get("BPE_LDFLAGS", "").split(),
)

if __name__ == "__main__":
    ffibuilder.compile(verbose=True)
