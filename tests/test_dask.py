"""Counting on Dask: same counts as the local pool, identical merges, and a worker
killed mid-job is retried without changing the result."""
from __future__ import annotations

import os
import signal
import threading
import time

import pytest

import distributed

import bpe_cffi

EOT = "<|endoftext|>"


@pytest.fixture(scope="module")
def client():
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  dashboard_address=None) as cluster, \
            distributed.Client(cluster) as c:
        yield c


@pytest.fixture(scope="module")
def corpus_files(tmp_path_factory):
    d = tmp_path_factory.mktemp("dask")
    sample = open(bpe_cffi.sample_path(), encoding="utf-8").read()
    paths = []
    for i in range(3):
        p = d / f"part{i}.txt"
        p.write_text((sample[i * 1000:] + f" extra{i} \u3000字 ") * (i + 2), encoding="utf-8")
        paths.append(str(p))
    return paths


@pytest.mark.parametrize("specials", [[], [EOT]])
@pytest.mark.parametrize("pattern", [bpe_cffi.GPT2_PATTERN, "(?:" + bpe_cffi.GPT2_PATTERN + ")"])
def test_counts_equal_local(client, corpus_files, specials, pattern):
    on_dask = bpe_cffi.count_words(corpus_files, specials, pattern=pattern, client=client)
    local = bpe_cffi.count_words(corpus_files, specials, pattern=pattern, num_workers=1)
    assert on_dask == local
    if specials:
        assert not any(EOT.encode() in w for w in on_dask)


def test_glob_and_training_identical(client, corpus_files):
    pattern = os.path.join(os.path.dirname(corpus_files[0]), "part*.txt")
    on_dask = bpe_cffi.train_bpe(pattern, 1200, [EOT], client=client)
    assert on_dask == bpe_cffi.train_bpe(corpus_files, 1200, [EOT], num_workers=2)


def test_fsspec_url_glob(client, corpus_files):
    url = "file://" + os.path.join(os.path.dirname(corpus_files[0]), "part*.txt")
    assert bpe_cffi.count_words(url, [EOT], client=client) == \
        bpe_cffi.count_words(corpus_files, [EOT], num_workers=1)


def test_cli_scheduler(client, corpus_files, tmp_path, capsys):
    from bpe_cffi.cli import main
    address = client.scheduler.address
    assert main(["train", *corpus_files, "--vocab-size", "700", "--special-token", EOT,
                 "--out", str(tmp_path / "tok"), "--scheduler", address, "--quiet"]) == 0
    assert bpe_cffi.Tokenizer.load(tmp_path / "tok").merges == \
        bpe_cffi.train_bpe(corpus_files, 700, [EOT])[1]


def test_save_and_load_counts(client, corpus_files, tmp_path):
    counts = bpe_cffi.count_words(corpus_files, [EOT], client=client)
    bpe_cffi.save_counts(counts, tmp_path / "counts.npz")
    loaded = bpe_cffi.load_counts(tmp_path / "counts.npz")
    assert loaded == counts
    assert bpe_cffi.train_from_counts(loaded, 900, [EOT]) == \
        bpe_cffi.train_from_counts(counts, 900, [EOT])
    (tmp_path / "bad.npz").write_bytes(b"nope")
    with pytest.raises(ValueError, match="bad.npz"):
        bpe_cffi.load_counts(tmp_path / "bad.npz")


@pytest.mark.slow
def test_killed_worker_is_retried(client, tmp_path):
    sample = open(bpe_cffi.sample_path(), encoding="utf-8").read()
    paths = []
    for i in range(4):  # plain-path work for several seconds on two workers
        p = tmp_path / f"big{i}.txt"
        p.write_text(sample * 30 + f" tail{i}", encoding="utf-8")
        paths.append(str(p))
    regex_path = "(?:" + bpe_cffi.GPT2_PATTERN + ")"  # split by the regex module: slow
    want = bpe_cffi.count_words(paths, [EOT], pattern=regex_path, num_workers=2)
    result = {}
    job = threading.Thread(target=lambda: result.update(
        counts=bpe_cffi.count_words(paths, [EOT], pattern=regex_path, client=client)))
    job.start()
    deadline = time.monotonic() + 30
    busy = []
    while not busy and time.monotonic() < deadline:  # a worker that is running a task now
        busy = [w for w, tasks in client.processing().items() if tasks]
        time.sleep(0.05)
    assert busy and job.is_alive(), "the job ended before a worker could be killed"
    victim = client.run(os.getpid, workers=[busy[0]])[busy[0]]
    os.kill(victim, signal.SIGKILL)
    job.join(timeout=300)
    assert not job.is_alive()
    assert result["counts"] == want
    client.wait_for_workers(2, timeout=60)
    assert victim not in client.run(os.getpid).values()  # it really died and was replaced


def test_a_relative_path_is_the_file_here_not_in_the_workers_directory(client, tmp_path,
                                                                        monkeypatch):
    # The ranges were planned here and the relative path sent as it was: workers in another
    # directory counted their own c.txt (of the same size) without an error.
    for name, word in [("here", "apple"), ("there", "mango")]:
        (tmp_path / name).mkdir()
        (tmp_path / name / "c.txt").write_text(f" {word}" * 20_000, encoding="utf-8")
    monkeypatch.chdir(tmp_path / "here")
    before = client.run(os.getcwd)
    client.run(os.chdir, str(tmp_path / "there"))
    try:
        assert bpe_cffi.count_words("c.txt", client=client) == {b" apple": 20_000}
    finally:
        for worker, cwd in before.items():
            client.run(os.chdir, cwd, workers=[worker])


def test_documents_counted_here_with_a_warning(client, corpus_files, tmp_path):
    jsonl = tmp_path / "docs.jsonl"
    jsonl.write_text('{"text": "a few words here"}\n{"text": "and more words"}\n',
                     encoding="utf-8")
    inputs = [corpus_files[0], str(jsonl)]
    with pytest.warns(UserWarning, match="1 input.*counted on local processes"):
        on_dask = bpe_cffi.count_words(inputs, [EOT], client=client)
    assert on_dask == bpe_cffi.count_words(inputs, [EOT], num_workers=1)
    assert on_dask[b" words"] >= 2
    with pytest.warns(UserWarning, match="counted on local processes") as caught:
        bpe_cffi.train_bpe(inputs, 300, [EOT], client=client)
    assert caught[0].filename == __file__  # the caller's line, not train_bpe's
