"""Training benchmarks: end to end against the anchors in each pattern family, the merge
phase alone, and counting alone in each family.

    pytest benchmarks/ --benchmark-only                       # run
    pytest benchmarks/ --benchmark-only --benchmark-autosave  # run and save
    pytest-benchmark compare                                  # compare saved runs

The corpus is realmix (27.5 MB) when ../shared/bench is beside the repository, else the
packaged sample; BPE_BENCH_CORPUS=path picks another. Vocabulary 10 000. Timings are reported,
never asserted; docs/performance.md holds the figures and the goals they are read against.
"""
import pytest

import anchors

VOCAB = 10_000
EOT = "<|endoftext|>"
FAMILIES = ["gpt2", "cl100k", "o200k"]


def _train_group(family: str):
    return pytest.mark.benchmark(group=f"train end-to-end, {family}")


@pytest.mark.parametrize("family", [pytest.param(f, marks=_train_group(f)) for f in FAMILIES])
@pytest.mark.parametrize("tool", list(anchors.TRAINERS))
def test_train_end_to_end(benchmark, corpus, tool, family):
    pytest.importorskip(anchors.MODULES[tool])
    if tool in ("gigabpe", "gigatoken") and family != "gpt2":
        pytest.skip(f"{tool} trains with GPT-2's pattern only")
    fn = anchors.TRAINERS[tool]
    benchmark.pedantic(fn, args=(corpus, VOCAB, family), rounds=3, iterations=1)


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
@pytest.mark.parametrize("family", FAMILIES)
@pytest.mark.parametrize("workers", [1, None])
def test_count_words(benchmark, corpus, workers, family):
    import bpe_cffi
    benchmark.pedantic(bpe_cffi.count_words, args=(corpus, [EOT]),
                       kwargs={"num_workers": workers, "pattern": family}, rounds=5,
                       iterations=1)
