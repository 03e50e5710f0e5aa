"""Training benchmarks: end to end against the anchors, merge phase alone, counting alone.

    pytest benchmarks/ --benchmark-only                       # run
    pytest benchmarks/ --benchmark-only --benchmark-autosave  # run and save
    pytest-benchmark compare                                  # compare saved runs

Targets (2-core machine, realmix 27.5 MB, vocab 10 000): merge phase <= 0.5 s; end to end
<= 0.25x rustbpe's time in the same run; counting >= 150 MB/s per core (num_workers=1 is one
core). Timings are reported, never asserted.
"""
import pytest

import anchors

VOCAB = 10_000
EOT = "<|endoftext|>"


@pytest.mark.benchmark(group="train end-to-end")
@pytest.mark.parametrize("tool", list(anchors.TRAINERS))
def test_train_end_to_end(benchmark, corpus, tool):
    pytest.importorskip(anchors.MODULES[tool])
    fn = anchors.TRAINERS[tool]
    benchmark.pedantic(fn, args=(corpus, VOCAB), rounds=3, iterations=1)


@pytest.mark.benchmark(group="merge phase")
def test_merge_phase(benchmark, corpus_counts):
    import bpe_cffi
    benchmark.pedantic(bpe_cffi.train_from_counts, args=(corpus_counts, VOCAB, [EOT]),
                       rounds=5, iterations=1)


@pytest.mark.benchmark(group="merge phase")
def test_merge_phase_pure_python(benchmark, corpus_counts):
    import bpe_cffi
    import python_trainer
    n = VOCAB - 257
    merges = benchmark.pedantic(python_trainer.train, args=(corpus_counts, n), rounds=1,
                                iterations=1)
    assert merges == bpe_cffi.train_from_counts(corpus_counts, VOCAB, [EOT])[1]


@pytest.mark.benchmark(group="pre-tokenize and count")
@pytest.mark.parametrize("workers", [1, None])
def test_count_words(benchmark, corpus, workers):
    import bpe_cffi
    benchmark.pedantic(bpe_cffi.count_words, args=(corpus, [EOT]),
                       kwargs={"num_workers": workers}, rounds=5, iterations=1)
