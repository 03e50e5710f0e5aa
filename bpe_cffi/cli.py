"""The bpe-cffi command line (also python -m bpe_cffi).

User errors (missing file, bad option, vocab too small) print one line on stderr with no
traceback and exit 2 for usage errors, 1 otherwise.
"""
from __future__ import annotations

import argparse
import codecs
import contextlib
import os
import sys
import time
import warnings

import numpy as np

from . import __version__
from .counting import MAX_WORKERS, count_words_arrays
from .decoder import UnknownId
from .files import (absolute, check_name_lengths, check_regular_file, check_specials_saveable,
                    distinct_outputs, nearest_existing, save, tokenizer_file_kind,
                    tokenizer_files, tokenizer_paths)
from .patterns import PATTERNS, pretokenizer
from .specials import unique_specials
from .sample import SAMPLE_SPECIAL, sample_path
from .sources import refuse_overwriting, resolve_inputs
from .tokenizer import Tokenizer
from .training import check_vocab_size, train_from_arrays


_FORMATS = "UTF-8 text, .jsonl (.ndjson), .parquet, .gz or .zst compressed text or JSON lines"
_DECODE_BLOCK_IDS = 1 << 20  # ids decode turns into text at a time


class UsageError(Exception):
    """A problem with the command line itself: exit status 2."""


def _peak_rss_mb() -> float | None:
    """Peak resident memory of the largest process, this one or a finished worker, in MB;
    None where the platform does not say (Windows)."""
    try:
        import resource
    except ImportError:
        return None
    peak = max(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss,
               resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)
    return peak / 2**20 if sys.platform == "darwin" else peak / 1024  # bytes there, KiB here


_SHOWN = 32  # characters (or bytes) of a token shown; a longer one is shown with its length


def _show(token: bytes) -> str:
    """A token as a quoted str, or as bytes (b'\\xe3\\x83') if it is not whole UTF-8; a long
    one by its start and its length (a run of 4 M spaces makes tokens of megabytes)."""
    try:
        whole = token.decode("utf-8")
    except UnicodeDecodeError:
        whole = token
    if len(whole) <= _SHOWN:
        return repr(whole)
    return f"{whole[:_SHOWN]!r}... ({len(token):,} bytes)"


def _warn_in_one_line(message, category, filename, lineno, file=None, line=None) -> None:
    """Warnings on the command line: one line, without Python's source location."""
    print(f"bpe-cffi: warning: {message}", file=sys.stderr)


def _longest(tokens, n: int = 5) -> str:
    return ", ".join(_show(t) for t in sorted(tokens, key=len, reverse=True)[:n])


def cmd_train(args) -> None:
    """bpe-cffi train: count, merge, save, and print a summary."""
    if args.sample:
        if args.inputs:
            raise UsageError("give INPUT files or --sample, not both")
        inputs, specials = [sample_path()], args.special_token or [SAMPLE_SPECIAL]
    elif args.inputs:
        inputs, specials = args.inputs, args.special_token or []
    else:
        raise UsageError("give INPUT files (or globs), or --sample")
    specials = unique_specials(specials)
    check_vocab_size(args.vocab_size, len(specials))
    check_specials_saveable(specials)  # found by the save, it would cost the training
    inputs = resolve_inputs(inputs)
    refuse_overwriting(tokenizer_files(args.out), inputs)
    _check_out_directory(args.out)
    progress = not args.quiet
    _note_if_regex(args.pattern)

    client = None
    if args.scheduler:
        try:
            from distributed import Client
        except ImportError:
            raise ValueError("--scheduler needs Dask: pip install 'bpe_cffi[dask]'") from None
        client = Client(args.scheduler)
    try:
        arrays, stats = count_words_arrays(inputs, specials, pattern=args.pattern,
                                           num_workers=args.workers, client=client,
                                           progress=progress, text_field=args.text_field)
    finally:
        if client is not None:
            client.close()
    t1 = time.perf_counter()
    vocab, merges = train_from_arrays(arrays, args.vocab_size, specials, progress=progress)
    t2 = time.perf_counter()
    paths = save(vocab, merges, args.out, specials, args.pattern)
    t3 = time.perf_counter()

    print(f"trained {len(vocab):,} tokens ({len(merges):,} merges, {len(specials)} special) "
          f"on {stats.n_bytes / 1e6:.1f} MB in {stats.n_files} file(s)")
    print(f"  pre-tokenizer: {stats.pretokenizer}; distinct pre-tokens: {len(arrays[2]):,} "
          f"(total {int(arrays[2].sum()):,})")
    print(f"  time: read {stats.read_s:.2f} s, pre-tokenize {stats.pretokenize_s:.2f} s "
          f"(CPU over workers; wall {stats.wall_s:.2f} s), merge {t2 - t1:.2f} s, "
          f"write {t3 - t2:.2f} s")
    peak = _peak_rss_mb()
    if peak is not None:
        print(f"  peak memory (largest process): {peak:.0f} MB")
    print(f"  longest tokens: {_longest(vocab[256 + i] for i in range(len(merges)))}")
    print(f"  wrote {', '.join(os.path.basename(p) for p in paths)} to {args.out}")


def _check_out_directory(out: str) -> None:
    """Refuses, before the training, an --out that the tokenizer's files could not be saved
    into: found only at the end, it cost the training."""
    if not out:
        raise ValueError("--out is empty")
    if os.path.islink(out) and not os.path.exists(out):
        raise FileNotFoundError(f"--out {out!r} is a symbolic link to nothing")
    if os.path.exists(out) and not os.path.isdir(out):
        raise FileExistsError(f"--out {out!r} is a file, not a directory")
    existing = nearest_existing(out)  # the directory itself, or the nearest one above it
    if not os.path.isdir(existing):
        raise NotADirectoryError(f"cannot make --out {out!r}: {existing!r} is a file")
    if not os.access(existing, os.W_OK | os.X_OK):
        raise PermissionError(f"cannot write into {existing!r} (for --out {out!r})")
    check_name_lengths(out, existing)  # save would make the directories above a long name
    if existing == absolute(out):  # its files too: a directory at vocab.json, a FIFO
        distinct_outputs(tokenizer_files(out))


def _note_if_regex(pattern: str) -> None:
    """Says once, on stderr, that a pattern no C scanner knows is split by the regex module."""
    if pretokenizer(pattern).family is None:
        print("bpe-cffi: note: no C scanner knows this pattern; the regex module splits it "
              "(slower, same result)", file=sys.stderr)


def _workers(text: str) -> int:
    """--workers: an int from 1 to MAX_WORKERS (a usage error otherwise, naming the option)."""
    try:
        n = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"invalid int value: {text!r}") from None
    if not 1 <= n <= MAX_WORKERS:
        raise argparse.ArgumentTypeError(f"must be from 1 to {MAX_WORKERS}, got {n}")
    return n


def _is_text(s: str) -> bool:
    """Whether s is valid Unicode text (an argument of bytes that are no UTF-8 is not)."""
    try:
        s.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _load_tokenizer(path: str, args) -> Tokenizer:
    """The tokenizer in a directory, or in one file (a tokenizer.json, a .tiktoken rank file),
    with --pattern and --special-token for the files that hold neither (a rank file,
    vocab.json + merges.txt)."""
    hf = path if os.path.isfile(path) else os.path.join(path, "tokenizer.json")
    if (args.pattern is not None or args.special_token is not None) and \
            tokenizer_file_kind(hf) == "json" and os.path.lexists(hf):
        raise UsageError(f"{path!r} is or holds a tokenizer.json, which has its own pattern "
                         "and special tokens: give neither --pattern nor --special-token")
    return Tokenizer.load(path, pattern=args.pattern, special_tokens=args.special_token)


def cmd_encode(args) -> None:
    """bpe-cffi encode: corpus files to one .npy of ids."""
    if args.separator == "":  # encode_file refuses it too: "" is no separator
        raise UsageError("--separator must not be empty (--no-separator writes none)")
    if args.separator is not None and args.no_separator:
        raise UsageError("give --separator or --no-separator, not both")
    if args.separator is not None and not _is_text(args.separator):
        raise UsageError("--separator is not valid Unicode text (bytes that are no UTF-8?)")
    if args.out == "-":
        raise UsageError("--out must name a .npy file (the ids are not written to standard "
                         "output)")
    refuse_overwriting([args.out], tokenizer_paths(args.tokenizer), "the tokenizer's file")
    tok = _load_tokenizer(args.tokenizer, args)
    _note_if_regex(tok.pattern)
    inputs = resolve_inputs(args.inputs)
    separator = None if args.no_separator else args.separator or "default"
    t = time.perf_counter()
    n = tok.encode_file(inputs, args.out, num_workers=args.workers, progress=not args.quiet,
                        allowed_special=set() if args.no_specials else "all",
                        separator=separator, text_field=args.text_field)
    dt = time.perf_counter() - t
    size = sum(os.path.getsize(p) for p in inputs if os.path.isfile(p))  # as stored
    print(f"encoded {len(inputs)} input(s) ({size / 1e6:.1f} MB on disk) into {n:,} ids "
          f"in {dt:.2f} s -> {args.out}")


def cmd_decode(args) -> None:
    """bpe-cffi decode: a .npy of ids back to text."""
    if args.out == "-":  # standard output, as "-" is standard input among the inputs
        args.out = None
    if args.out is not None:  # (an empty one is refused by the writer)
        refuse_overwriting([args.out], [args.ids] + tokenizer_paths(args.tokenizer))
    tok = _load_tokenizer(args.tokenizer, args)
    with open(check_regular_file(args.ids, "a .npy of ids"), "rb") as f:
        if f.read(6) != b"\x93NUMPY":
            raise ValueError(f"{args.ids}: not a .npy file (expected the ids written by "
                             "bpe-cffi encode)")
    try:
        ids = np.load(args.ids, mmap_mode="r", allow_pickle=False)
    except (ValueError, OSError) as e:
        if isinstance(e, FileNotFoundError):
            raise
        raise ValueError(f"{args.ids}: not a .npy array of ids ({e})") from None
    if ids.ndim != 1 or ids.dtype.kind not in "iu":
        raise ValueError(f"{args.ids}: expected a 1-D integer array, got {ids.dtype} {ids.shape}")
    # In blocks of ids, read from the file as they are needed: memory bounded by a block. A
    # character whose bytes two blocks share is decoded whole (an incremental decoder), as
    # decoding all the ids at once would. An id not in the vocabulary stops it with an error:
    # --out is then left as it was (written atomically); standard output has had the text of
    # the blocks before.
    utf8 = codecs.getincrementaldecoder("utf-8")(errors="replace")
    with _text_output(args.out) as f:
        for a in range(0, len(ids), _DECODE_BLOCK_IDS):
            try:
                f.write(utf8.decode(tok.decode_bytes(ids[a:a + _DECODE_BLOCK_IDS])))
            except UnknownId as e:
                raise ValueError(f"{args.ids}: id {e.id} at index {a + e.position} is not in "
                                 "the vocabulary") from None
        f.write(utf8.decode(b"", final=True))


def _text_output(path: str | None):
    """path written atomically, or standard output (left open) if None."""
    if path is not None:
        from .files import atomic_write
        return atomic_write(path)
    if sys.stdout is None:  # started with standard output closed
        raise ValueError("standard output is closed: give --out FILE")
    return contextlib.nullcontext(sys.stdout)


def cmd_info(args) -> None:
    """bpe-cffi info: what a tokenizer directory (or file) holds."""
    tok = _load_tokenizer(args.directory, args)
    special_bytes = {s.encode() for s in tok.special_tokens}  # once, not once a token
    merged = [t for t in tok.id_to_token.values() if t not in special_bytes]
    print(f"tokenizer in {args.directory}")
    ids = f" (ids 0-{tok.vocab_size - 1})" if tok.vocab_size else ""  # none in an empty rank file
    print(f"  vocabulary: {len(tok):,} tokens{ids}, {len(tok.merges):,} merges")
    specials = ", ".join(f"{s} = {tok.special_ids[s]}" for s in tok.special_tokens)
    print(f"  special tokens: {specials or 'none'}")
    name = tok.pretokenizer.name
    print(f"  pattern: {name} (C scanner)" if name != "regex"
          else f"  pattern: {tok.pattern} (no C scanner: split by the regex module)")
    if tok.ignore_merges:
        print("  ignore_merges: a pre-token whose bytes are a token is that token (tiktoken's "
              "rule)")
    print(f"  longest tokens: {_longest(merged) or 'none'}")
    first = ", ".join(f"{_show(a)}+{_show(b)}" for a, b in tok.merges[:5])
    print(f"  first merges: {first or 'none'}")
    for p in tokenizer_paths(args.directory):
        if os.path.exists(p):
            print(f"  {os.path.basename(p)}: {os.path.getsize(p):,} bytes")


def cmd_sample_path(args) -> None:
    """bpe-cffi sample-path: where the packaged sample corpus is."""
    print(sample_path())


def build_parser() -> argparse.ArgumentParser:
    """The command line's parser, one subcommand per cmd_* function."""
    p = argparse.ArgumentParser(prog="bpe-cffi", description="Exact, fast byte-level BPE.")
    p.add_argument("--version", action="version", version=f"bpe-cffi {__version__}")
    sub = p.add_subparsers(dest="command", required=True)

    t = sub.add_parser("train", help="train a tokenizer on text files")
    t.add_argument("inputs", nargs="*", metavar="INPUT",
                   help=f"corpus files or globs ({_FORMATS}); - reads standard input")
    t.add_argument("--sample", action="store_true", help="train on the packaged sample corpus")
    t.add_argument("--vocab-size", type=int, required=True, metavar="N",
                   help="tokens in all: the 256 bytes, the merges and the special tokens")
    t.add_argument("--special-token", action="append", metavar="S",
                   help="a special token (repeatable); --sample defaults to <|endoftext|>")
    t.add_argument("--pattern", default="gpt2",
                   help="pre-tokenization regex, or a family's name: "
                        f"{', '.join(PATTERNS)} (default: gpt2)")
    t.add_argument("--workers", type=_workers, default=None,
                   help="processes (default: one per core; a corpus under 32 MB with a "
                        "family's pattern is then counted on threads of this process)")
    t.add_argument("--out", required=True, metavar="DIR", help="where to write the tokenizer")
    t.add_argument("--scheduler", metavar="tcp://HOST:PORT",
                   help="count on this Dask cluster instead of local processes")
    t.add_argument("--text-field", default="text", metavar="NAME",
                   help="the field of a JSON line or Parquet record that holds its text "
                        "(default: text)")
    t.add_argument("--quiet", action="store_true", help="no progress bars")
    t.set_defaults(func=cmd_train)

    e = sub.add_parser("encode", help="encode text files into one .npy of ids")
    e.add_argument("inputs", nargs="+", metavar="INPUT",
                   help=f"corpus files or globs ({_FORMATS}), encoded in this order; - reads "
                        "standard input")
    e.add_argument("--tokenizer", required=True, metavar="DIR",
                   help="a directory written by train (or by bpe_cffi.save), or a "
                        "tokenizer.json or .tiktoken file")
    e.add_argument("--out", required=True, metavar="IDS.npy", help="the .npy to write")
    e.add_argument("--separator", metavar="S",
                   help="text whose ids go between two documents (default: <|endoftext|> when it "
                        "is a special token of the tokenizer)")
    e.add_argument("--no-separator", action="store_true",
                   help="nothing between two documents")
    e.add_argument("--text-field", default="text", metavar="NAME",
                   help="the field of a JSON line or Parquet record that holds its text "
                        "(default: text)")
    e.add_argument("--workers", type=_workers, default=None,
                   help="threads of this process for plain text with a family's pattern, "
                        "else processes (default: one per core)")
    e.add_argument("--no-specials", action="store_true",
                   help="encode special tokens' text in the documents as ordinary text, not "
                        "as their ids (the separator between documents stays one id)")
    e.add_argument("--quiet", action="store_true", help="no progress bar")
    e.set_defaults(func=cmd_encode)

    d = sub.add_parser("decode", help="decode a .npy of ids to text (stdout by default)")
    d.add_argument("ids", metavar="IDS.npy", help="ids written by encode")
    d.add_argument("--tokenizer", required=True, metavar="DIR",
                   help="the tokenizer (directory or file) the ids were encoded with")
    d.add_argument("--out", metavar="FILE", help="write the text here (default, or -: stdout)")
    d.set_defaults(func=cmd_decode)

    i = sub.add_parser("info", help="describe a tokenizer")
    i.add_argument("directory", metavar="DIR", help="a directory written by train, or a "
                   "tokenizer.json or .tiktoken file")
    i.set_defaults(func=cmd_info)

    for command in (e, d, i):
        command.add_argument("--pattern", metavar="P",
                             help="for a directory without tokenizer.json (a tiktoken rank file, "
                                  "vocab.json + merges.txt): its pre-tokenization regex or "
                                  "family name (default: gpt2)")
        command.add_argument("--special-token", action="append", metavar="S",
                             help="for a directory without tokenizer.json: a special token "
                                  "(repeatable; default: none)")

    s = sub.add_parser("sample-path", help="print the path of the packaged sample corpus")
    s.set_defaults(func=cmd_sample_path)
    return p


def main(argv: list[str] | None = None) -> int:
    """Runs the command line; returns the exit status (0, 1 for an error, 130 on Ctrl-C)."""
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        with warnings.catch_warnings():  # restores showwarning afterwards
            warnings.showwarning = _warn_in_one_line
            args.func(args)
    except UsageError as e:
        parser.error(str(e))  # prints usage and exits 2
    except KeyboardInterrupt:
        print("bpe-cffi: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:  # the reader went away (| head): not an error worth a message
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1
    except (OSError, ValueError, MemoryError, OverflowError, UnicodeError, ImportError) as e:
        # ImportError: an optional library a format or a URL needs, named in the message
        print(f"bpe-cffi: error: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
