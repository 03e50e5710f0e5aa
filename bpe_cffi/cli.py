"""The bpe-cffi command line (also python -m bpe_cffi)."""
from __future__ import annotations

import argparse
import resource
import sys
import time

from . import __version__
from .counting import count_words
from .pretokenize import GPT2_PATTERN, unique_specials
from .sample import SAMPLE_SPECIAL, sample_path
from .training import check_vocab_size, train_from_counts


def _peak_rss_mb() -> float:
    """Peak resident memory of this process and of its finished children, in MB."""
    own = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    kids = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    return max(own, kids) / 1024  # Linux reports KiB


def _show(token: bytes) -> str:
    return repr(token.decode("utf-8", errors="backslashreplace"))


def cmd_train(args) -> None:
    if args.sample:
        inputs = [sample_path()]
        specials = args.special_token or [SAMPLE_SPECIAL]
    elif args.inputs:
        inputs, specials = args.inputs, args.special_token or []
    else:
        raise UsageError("give INPUT files or --sample")
    if len(inputs) > 1:
        raise UsageError("one INPUT file for now")  # several files: issue 4
    specials = unique_specials(specials)
    check_vocab_size(args.vocab_size, len(specials))
    progress = not args.quiet

    t0 = time.perf_counter()
    counts = count_words(inputs[0], specials, pattern=args.pattern, num_workers=args.workers,
                         progress=progress)
    t1 = time.perf_counter()
    vocab, merges = train_from_counts(counts, args.vocab_size, specials, progress=progress)
    t2 = time.perf_counter()

    print(f"trained {len(vocab)} tokens ({len(merges)} merges) on {inputs[0]}")
    print(f"  distinct pre-tokens: {len(counts):,}   total: {sum(counts.values()):,}")
    print(f"  time: pre-tokenize+count {t1 - t0:.2f} s, merge {t2 - t1:.2f} s")
    print(f"  peak memory: {_peak_rss_mb():.0f} MB")
    longest = sorted((vocab[256 + i] for i in range(len(merges))), key=len, reverse=True)[:5]
    print("  longest tokens: " + ", ".join(_show(t) for t in longest))


def cmd_sample_path(args) -> None:
    print(sample_path())


class UsageError(Exception):
    pass


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="bpe-cffi", description="Byte-level BPE training.")
    p.add_argument("--version", action="version", version=f"bpe-cffi {__version__}")
    sub = p.add_subparsers(dest="command", required=True)

    t = sub.add_parser("train", help="train a tokenizer on text files")
    t.add_argument("inputs", nargs="*", metavar="INPUT", help="UTF-8 text file")
    t.add_argument("--sample", action="store_true", help="train on the packaged sample corpus")
    t.add_argument("--vocab-size", type=int, required=True)
    t.add_argument("--special-token", action="append", metavar="S",
                   help="a special token (repeatable); --sample defaults to <|endoftext|>")
    t.add_argument("--pattern", default=GPT2_PATTERN, help="pre-tokenization regex")
    t.add_argument("--workers", type=int, default=None, help="processes (default: one per core)")
    t.add_argument("--quiet", action="store_true", help="no progress bars")
    t.set_defaults(func=cmd_train)

    s = sub.add_parser("sample-path", help="print the path of the packaged sample corpus")
    s.set_defaults(func=cmd_sample_path)
    return p


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        args.func(args)
    except UsageError as e:
        parser.error(str(e))  # exits 2
    except KeyboardInterrupt:
        print("bpe-cffi: interrupted", file=sys.stderr)
        return 130
    except (OSError, ValueError, TypeError, MemoryError, OverflowError) as e:
        print(f"bpe-cffi: error: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
