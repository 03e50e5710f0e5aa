#!/usr/bin/env bash
# valgrind memcheck over a small train + encode + decode run (scripts/smoke.py). Fails on any
# invalid read or write, use of uninitialised memory, bad free, or definite leak whose stack
# passes through our C sources. The normal optimised build is restored afterwards.
#   usage: bash scripts/valgrind.sh
set -euo pipefail
cd "$(dirname "$0")/.."
python -m pip install --quiet "setuptools>=77" wheel cffi  # rebuilt without build isolation
restore() { BPE_CFLAGS= python -m pip install --quiet --no-build-isolation -e . >/dev/null; }
trap restore EXIT
# Debug info, so that valgrind's stacks name our source files.
BPE_CFLAGS="-std=c11 -O1 -g" python -m pip install --quiet --no-build-isolation -e .

log=$(mktemp)
# The real interpreter: `python` may be a shell shim (pyenv), which valgrind would check instead.
py=$(python -c 'import sys; print(sys.executable)')
PYTHONMALLOC=malloc valgrind --tool=memcheck --leak-check=full --show-leak-kinds=definite \
    --track-origins=yes --num-callers=40 --log-file="$log" "$py" scripts/smoke.py
grep -q "ERROR SUMMARY" "$log" || { echo "valgrind did not check the interpreter"; exit 1; }

# Only error blocks whose stack passes through csrc/ count: CPython itself gives known false
# positives under memcheck (uninitialised reads in int.from_bytes and its allocator), and
# cffi's generated module set-up keeps a few blocks for the life of the process.
# Our sources by name, from csrc/ itself, so that a new file is never left out.
ours="($(cd csrc && ls *.c *.h | sed 's/\.[ch]$//' | sort -u | paste -sd '|'))\\\\.[ch]:"
count_ours() {  # error blocks (separated by "==PID== " lines) matching $1 that name csrc/
    awk -v pat="$1" -v ours="$ours" 'BEGIN { RS = "==[0-9]+== \n" }
        $0 ~ pat && $0 ~ ours { n++ }
        END { print n + 0 }' "$log"
}
errors=$(count_ours "Invalid (read|write)|uninitialised|Invalid free|Mismatched free")
leaks=$(count_ours "definitely lost")
echo "valgrind: $errors memory errors and $leaks definite leaks in csrc/ (full log: $log)"
[ "$errors" -eq 0 ] && [ "$leaks" -eq 0 ]
