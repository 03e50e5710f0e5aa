"""Training and counting from an iterator of documents: each item one document, the same
merges as train_bpe on a file of the documents joined by a special token, any number of
workers and batches, and a generator read once."""
from __future__ import annotations

import warnings

import datasets
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

import bpe_cffi
from bpe_cffi import iterator_counting

EOT = "<|endoftext|>"
docs_strategy = st.lists(
    st.lists(st.sampled_from(["a", "ab", " the", "\n", "\r\n", "  ", "é", "字", "12345", "'s",
                              "<s>", EOT, "\u00a0", "!"]), max_size=15).map("".join),
    max_size=12)


@pytest.fixture()
def small_batches(monkeypatch):
    monkeypatch.setattr(iterator_counting, "BATCH_CHARS", 50)  # many batches, many workers


@pytest.mark.parametrize("pattern", ["gpt2", "cl100k", "o200k", r"\w+|\W+"])
@given(docs=docs_strategy)
@settings(max_examples=25, suppress_health_check=[HealthCheck.function_scoped_fixture])
def test_iterator_equals_file_of_joined_documents(tmp_path, small_batches, pattern, docs):
    path = tmp_path / "joined.txt"
    path.write_bytes(EOT.join(docs).encode("utf-8"))
    want_counts = bpe_cffi.count_words(path, [EOT, "<s>"], pattern=pattern, num_workers=1)
    assert bpe_cffi.count_words_from_iterator(docs, [EOT, "<s>"], pattern=pattern,
                                              num_workers=1) == want_counts
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # small texts run out of pairs: both alike
        want = bpe_cffi.train_bpe(path, 300, [EOT, "<s>"], pattern=pattern, num_workers=1)
        got = bpe_cffi.train_from_iterator(iter(docs), 300, [EOT, "<s>"], pattern=pattern,
                                           num_workers=1)
    assert got == want


@pytest.mark.parametrize("workers", [1, 2, 3])
def test_workers_and_batches_change_nothing(small_batches, real_text, workers):
    docs = real_text.split(EOT)[:200]
    want = bpe_cffi.count_words_from_iterator(docs, [EOT], num_workers=1)
    assert bpe_cffi.count_words_from_iterator(iter(docs), [EOT], num_workers=workers) == want


def test_no_pre_token_joins_two_documents():
    assert bpe_cffi.count_words_from_iterator(["ab", "cd", "ab"]) == {b"ab": 2, b"cd": 1}
    with pytest.warns(UserWarning, match="ran out of pairs after 2 of 3") as caught:
        vocab, merges = bpe_cffi.train_from_iterator(["ab", "cd"] * 3, 259)
    assert merges == [(b"c", b"d"), (b"a", b"b")]  # a tie: the greater pair first; never (b, c)
    assert caught[0].filename == __file__  # the warning points at the caller


def test_generator_list_and_datasets_column_agree(real_text):
    docs = real_text.split(EOT)[:100]
    consumed = []

    def generate():
        for d in docs:
            consumed.append(d)
            yield d

    column = datasets.Dataset.from_dict({"text": docs})["text"]
    want = bpe_cffi.train_from_iterator(docs, 800, [EOT])
    assert bpe_cffi.train_from_iterator(generate(), 800, [EOT]) == want
    assert consumed == docs  # read once, in order
    assert bpe_cffi.train_from_iterator(column, 800, [EOT]) == want


def test_bad_items_are_refused():
    with pytest.raises(TypeError, match="document 1 of the iterator is bytes"):
        bpe_cffi.count_words_from_iterator(["ok", b"bytes"])
    with pytest.raises(TypeError, match="not a single str"):
        bpe_cffi.train_from_iterator("just one string", 300)
    with pytest.raises(ValueError, match="too small"):
        bpe_cffi.train_from_iterator(["x"], 10)
    with pytest.raises(UnicodeEncodeError):
        bpe_cffi.count_words_from_iterator(["lone \ud800 surrogate"])


@pytest.mark.parametrize("workers", [1, 2])
def test_str_subclasses_count_as_their_characters(small_batches, workers):
    # Batches go to the workers pickled, and a str subclass defined in a function cannot be
    # pickled: training failed with "Can't pickle local object".
    class Text(str):
        def __str__(self):
            return "not its characters"

    docs = ["hello world %d and more" % i for i in range(200)]
    want = bpe_cffi.train_from_iterator(docs, 300, num_workers=1)
    assert bpe_cffi.train_from_iterator(map(Text, docs), 300, num_workers=workers) == want
    assert bpe_cffi.count_words_from_iterator(map(Text, docs), num_workers=workers) == \
        bpe_cffi.count_words_from_iterator(docs, num_workers=1)


@pytest.mark.parametrize("pattern", ["gpt2", r"\w+|\W+"])
@pytest.mark.parametrize("workers", [1, 2])
def test_a_lone_surrogate_is_the_error_of_its_document(small_batches, pattern, workers):
    # With workers or without, the same UnicodeEncodeError as the document's own: a worker's
    # used to come back as a bare UnicodeError, and the position counted in its whole batch.
    # Its message also says which document it is.
    long = "word " * 1000 + "\ud800" + " word" * 1000  # a worker's own error keeps ~200 chars
    for bad, at in (("bad \ud800 one", 4), (long, 5000)):
        docs = ["a fine document"] * 20 + [bad, "fine again"] * 5
        with pytest.raises(UnicodeEncodeError) as caught:
            bpe_cffi.count_words_from_iterator(docs, pattern=pattern, num_workers=workers)
        assert (caught.value.object, caught.value.start) == (bad, at)
        assert str(caught.value).endswith("surrogates not allowed (document 20 of the "
                                          "iterator)")


def test_pool_jobs_and_results_are_small(tmp_path, real_text, monkeypatch):
    # Pool.terminate hangs on a half-sent large result, and on a large job its task handler
    # is still writing (bpe_cffi/pool.py): large jobs go to the workers through spill files,
    # counts come back through them, and only their paths through the pipes.
    import multiprocessing.pool
    import os
    import pickle

    from bpe_cffi import pool
    docs = real_text.split(EOT)[:50]
    result = iterator_counting._count_batch((docs, "gpt2", (EOT,), str(tmp_path / "counts"),
                                             None))
    assert len(pickle.dumps(result)) < 512
    spilled = pool.small_job((docs, "gpt2", (EOT,), str(tmp_path / "counts"), None),
                             str(tmp_path))
    assert isinstance(spilled, pool.SpilledJob)  # its documents are ~390 KB
    assert iterator_counting._count_batch(spilled)[1:2] == result[1:2]
    assert not os.path.exists(spilled.path)
    sent = []
    for method in ("apply_async", "imap", "imap_unordered"):
        def recorded(self, func, jobs, *rest, _send=getattr(multiprocessing.pool.Pool, method),
                     _method=method, **options):
            if _method == "apply_async":  # (func, args): the job is args[0]
                sent.append(len(pickle.dumps(jobs[0])))
            else:
                jobs = list(jobs)
                sent.extend(len(pickle.dumps(job)) for job in jobs)
            return _send(self, func, jobs, *rest, **options)
        monkeypatch.setattr(multiprocessing.pool.Pool, method, recorded)
    monkeypatch.setattr(iterator_counting, "BATCH_CHARS", 100_000)
    counts = bpe_cffi.count_words_from_iterator(real_text.split(EOT), [EOT], num_workers=2)
    assert counts == bpe_cffi.count_words_from_iterator(real_text.split(EOT), [EOT],
                                                        num_workers=1)
    n_batches = len(sent)
    # encode_file's job for a run of small files lists them all: two jobs of 1 500 names of
    # 40 bytes.
    from bpe_cffi import encode_file
    monkeypatch.setattr(encode_file, "chunk_target", lambda size, workers: 12_000)
    tok = bpe_cffi.Tokenizer(*bpe_cffi.train_from_iterator(docs, 300), pattern=r"\w+|\W+")
    names = []
    for i in range(3000):
        names.append(tmp_path / f"{i:036d}.txt")
        names[-1].write_text(f"file {i} ")
    tok.encode_file([str(p) for p in names], tmp_path / "ids.npy", num_workers=2)
    assert np.load(tmp_path / "ids.npy").tolist() == tok.encode("".join(
        f"file {i} " for i in range(3000)))
    assert n_batches > 2 and len(sent) > n_batches and max(sent) <= pool._JOB_MAX_BYTES, sent


def test_empty_documents_close_batches():
    # A document counts for more than its characters: a run of empty ones was gathered into
    # one batch, whose list grew with the corpus (16 M empty documents: 434 MB).
    sizes = [len(b) for b in iterator_counting.batches("" for _ in range(1_000_000))]
    assert sum(sizes) == 1_000_000 and max(sizes) <= iterator_counting.BATCH_CHARS // 16
    docs = ["x" * 100] * 100_000  # 116 each: a batch closes once it reaches 1 M
    sizes = [len(b) for b in iterator_counting.batches(docs, 1_000_000)]
    assert sizes[0] == -(-1_000_000 // 116) and sum(sizes) == 100_000
