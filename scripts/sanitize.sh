#!/usr/bin/env bash
# Builds the C extension with AddressSanitizer + UndefinedBehaviorSanitizer and runs the test
# suite under it (the sanitizer runtimes preloaded into the interpreter), less the tests marked
# slow (large inputs, every code point: the same C paths as the rest, at several times the
# cost under the sanitizers). Any report fails the run. The normal optimised build is restored
# afterwards.
#   usage: bash scripts/sanitize.sh [pytest args...]
set -euo pipefail
cd "$(dirname "$0")/.."
python -m pip install --quiet "setuptools>=77" wheel cffi  # rebuilt without build isolation
restore() { BPE_CFLAGS= BPE_LDFLAGS= python -m pip install --quiet --no-build-isolation -e . >/dev/null; }
trap restore EXIT

export BPE_CFLAGS="-std=c11 -O1 -g -fno-omit-frame-pointer -fsanitize=address,undefined -fno-sanitize-recover=undefined"
export BPE_LDFLAGS="-fsanitize=address,undefined"
python -m pip install --quiet --no-build-isolation -e .

asan=$(gcc -print-file-name=libasan.so)
ubsan=$(gcc -print-file-name=libubsan.so)
[ -f "$asan" ] && [ -f "$ubsan" ] || { echo "sanitize.sh: gcc's ASan/UBSan runtimes not found"; exit 1; }
# CPython's own allocations are not ours to judge: leak checking stays off, and Python's small
# object allocator is bypassed so ASan sees every block. Pools start their workers from a
# forkserver: ASan's allocator (gcc 12) is not fork-safe, and a worker forked while another
# thread of the test process (an executor's, left by an earlier test) held one of its locks
# hung on it for good (seen once, in test_worker_error_keeps_type_and_message).
BPE_TEST_START_METHOD=forkserver \
LD_PRELOAD="$asan:$ubsan" \
ASAN_OPTIONS="detect_leaks=0:abort_on_error=0:halt_on_error=1" \
UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1" \
PYTHONMALLOC=malloc HYPOTHESIS_PROFILE="${HYPOTHESIS_PROFILE:-dev}" \
    python -m pytest -q -p no:cacheprovider -m "not slow" "$@"
