#!/usr/bin/env bash
# ThreadSanitizer over scripts/threads_stress.py: several threads sharing one tokenizer and
# its cache, for three pattern families and the three widths of packed ids. Fails on any data
# race reported in our C sources, or any wrong result. The extension is built with TSan in a
# copy of the sources in a temporary directory, so the installed build is left alone.
#   usage: bash scripts/tsan.sh
set -euo pipefail
cd "$(dirname "$0")/.."
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
git ls-files -z | xargs -0 cp --parents -t "$work"
# -fno-builtin: GCC expands a memcpy of unknown size into `rep movsq`, which TSan does not see.
# (-Wno-tsan: TSan does not model the seqlock's fences, the atomics on either side of them it
# does; it says so at every fence.)
flags="-std=c11 -O1 -g -fno-omit-frame-pointer -fno-builtin -fsanitize=thread -Wno-tsan"
(cd "$work" && BPE_CFLAGS="$flags" BPE_LDFLAGS="-fsanitize=thread" \
    python setup.py -q build_ext --inplace >build.log 2>&1) || { cat "$work/build.log"; exit 1; }

tsan=$(gcc -print-file-name=libtsan.so)
[ -f "$tsan" ] || { echo "tsan.sh: gcc's TSan runtime not found"; exit 1; }
# The real interpreter: `python` may be a shell shim (pyenv), which would run under TSan too.
py=$(python -c 'import sys; print(sys.executable)')
for run in "--pattern gpt2 --cache-bytes 180000" \
           "--pattern o200k --id-offset 70000" \
           "--pattern cl100k --id-offset 3000000 --cache-bytes 1000000 --num-threads 1"; do
    # shellcheck disable=SC2086  # (the run's arguments split on purpose)
    PYTHONPATH="$work" LD_PRELOAD="$tsan" TSAN_OPTIONS="halt_on_error=0 exitcode=66" \
        "$py" scripts/threads_stress.py $run
done
echo "tsan.sh: no data race, every result right"
