"""Where the wall time of one long `encode` goes on threads: for each call, when each part
started and ended (ms from the call's start) with the CPU time its thread spent on it, and
when the list was built. Before the first part starts, the str is made UTF-8 and its specials
found; parts run on the encoding threads, the list under the GIL. Each call is on a fresh copy
of the text (encode_phases.fresh).

usage: python benchmarks/encode_timeline.py CORPUS [--vocab-size 50000] [--repeat 5]
"""
from __future__ import annotations

import time

import bpe_cffi
from encode_phases import EOT, fresh, trained_on_corpus


def timeline(tok: bpe_cffi.Tokenizer, text: str) -> tuple[float, list[tuple[str, float, float, float]]]:
    """(the call's wall time, [(step, start, end, CPU time of its thread)]), in seconds from
    the call's start. Steps are found by wrapping the tokenizer's own per-part and list calls
    on this instance."""
    events: list[tuple[str, float, float, float]] = []  # list.append is atomic under the GIL
    utf8 = text.encode("utf-8")  # only to name the parts: the call encodes its own copy
    part_of = {(b - a, utf8[a:a + 64]): k for k, (a, b) in enumerate(tok._thread_parts(utf8))}
    encode_part, make_list = tok._encode_utf8, tok._id_list

    def timed_part(data):
        start, cpu = time.perf_counter(), time.thread_time()
        ids = encode_part(data)
        end, cpu = time.perf_counter(), time.thread_time() - cpu
        events.append((f"part {part_of.get((len(data), bytes(data[:64])), '?')}", start, end,
                       cpu))
        return ids

    def timed_list(parts):
        start = time.perf_counter()
        ids = make_list(parts)
        events.append(("list", start, time.perf_counter(), 0.0))
        return ids

    tok._encode_utf8, tok._id_list = timed_part, timed_list
    try:
        t0 = time.perf_counter()
        ids = tok.encode(text)
        total = time.perf_counter() - t0
        del ids  # freed after the clock stops, as in pytest-benchmark and encode_compare.py
    finally:
        del tok._encode_utf8  # back to the class's method
        tok._id_list = make_list
    return total, sorted(((name, a - t0, b - t0, cpu) for name, a, b, cpu in events),
                         key=lambda e: e[1])


def main() -> None:
    args, vocab, merges, text = trained_on_corpus(repeat=5)
    tok = bpe_cffi.Tokenizer(vocab, merges, [EOT])
    tok.encode(text)  # warm up: the encoder's first-use tables
    for _ in range(args.repeat):
        total, events = timeline(tok, fresh(text))
        steps = "  ".join(f"{name} {1000 * a:.0f}-{1000 * b:.0f}"
                          + (f" (CPU {1000 * cpu:.0f})" if name != "list" else "")
                          for name, a, b, cpu in events)
        print(f"{1000 * total:5.0f} ms: {steps}")


if __name__ == "__main__":
    main()
