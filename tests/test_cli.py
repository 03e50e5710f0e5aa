"""The bpe-cffi command line: happy paths and user errors (exit status, one line, no trace)."""
import errno
import os
import subprocess
import sys

import numpy as np
import pytest

import bpe_cffi
from bpe_cffi.cli import main


def test_train_info_encode_decode(tmp_path, capsys):
    out = tmp_path / "tok"
    assert main(["train", "--sample", "--vocab-size", "600", "--out", str(out), "--quiet"]) == 0
    summary = capsys.readouterr().out
    assert "trained 600 tokens" in summary and "longest tokens" in summary
    assert "merge" in summary and "write" in summary and "peak memory" in summary
    assert main(["info", str(out)]) == 0
    info = capsys.readouterr().out
    assert "<|endoftext|> = 599" in info and "ignore_merges" not in info

    ids = tmp_path / "ids.npy"
    assert main(["encode", "--tokenizer", str(out), bpe_cffi.sample_path(), "--out", str(ids),
                 "--quiet"]) == 0
    arr = np.load(ids)
    tok = bpe_cffi.Tokenizer.load(out)
    text = open(bpe_cffi.sample_path(), encoding="utf-8").read()
    assert arr.tolist() == tok.encode(text)
    capsys.readouterr()
    decoded = tmp_path / "t.txt"
    assert main(["decode", "--tokenizer", str(out), str(ids), "--out", str(decoded)]) == 0
    assert (tmp_path / "t.txt").read_text(encoding="utf-8") == text


def test_summary_shows_long_tokens_by_their_start_and_length(tmp_path, capsys):
    # A long run of one character makes tokens as long as the run: the summaries of train and
    # info printed the five longest whole (4 MB of spaces: 20 MB of them on the terminal).
    corpus = tmp_path / "run.txt"
    corpus.write_text(" " * 100_000 + "x\n" + "\xff" * 3000)
    out = tmp_path / "tok"
    assert main(["train", str(corpus), "--vocab-size", "290", "--out", str(out),
                 "--quiet"]) == 0
    assert main(["info", str(out)]) == 0
    summary = capsys.readouterr().out
    assert max(map(len, summary.splitlines())) < 500
    assert "'" + " " * 32 + "'... (65,536 bytes)" in summary
    assert bpe_cffi.cli._show("ÿ".encode() * 40) == repr("ÿ" * 32) + "... (80 bytes)"
    assert bpe_cffi.cli._show(b"\xff" * 33) == repr(b"\xff" * 32) + "... (33 bytes)"
    assert bpe_cffi.cli._show(b"ab") == "'ab'"


def test_train_several_files_and_glob(tmp_path, capsys):
    for i in range(3):
        (tmp_path / f"part{i}.txt").write_text(f"alpha beta gamma {i} " * 50)
    assert main(["train", str(tmp_path / "part*.txt"), "--vocab-size", "270",
                 "--out", str(tmp_path / "g"), "--quiet"]) == 0
    assert "in 3 file(s)" in capsys.readouterr().out
    from_list = bpe_cffi.train_bpe([tmp_path / f"part{i}.txt" for i in range(3)], 270)
    assert bpe_cffi.Tokenizer.load(tmp_path / "g").merges == from_list[1]


@pytest.mark.parametrize("argv, status, message", [
    (["train", "missing.txt", "--vocab-size", "300", "--out", "x"], 1, "no such file"),
    (["train", "--sample", "--vocab-size", "100", "--out", "x"], 1, "too small"),
    (["train", "--vocab-size", "300", "--out", "x"], 2, "give INPUT"),
    (["train", "--sample", "--vocab-size", "many", "--out", "x"], 2, "invalid int"),
    (["info", "does-not-exist"], 1, "no such tokenizer directory"),
    (["info", "missing/tokenizer.json"], 1, "no such tokenizer file"),
    (["frobnicate"], 2, "invalid choice"),
    (["encode", "in.txt", "--tokenizer", "t", "--out", "o.npy", "--separator", ""], 2,
     "--separator must not be empty"),  # meant the default in silence
    (["train", "-", "-", "--vocab-size", "300", "--out", "x"], 1,
     "standard input ('-') is given more than once"),  # an empty second document
    # A family's name mistyped was a regex that matched only itself: all other text dropped.
    (["train", "--sample", "--vocab-size", "300", "--pattern", "O200K", "--out", "x"], 1,
     "did you mean 'o200k'?"),
    (["train", "--sample", "--vocab-size", "300", "--pattern", "", "--out", "x"], 1,
     "pattern is empty"),
    (["train", "--sample", "--vocab-size", "300", "--pattern", "cl100k_base", "--out", "x"], 1,
     "did you mean 'cl100k_tiktoken'?"),  # tiktoken's name of the encoding
    (["train", "--sample", "--vocab-size", "300", "--pattern", "gpt-2", "--out", "x"], 1,
     "did you mean 'gpt2'?"),
    (["train", "--sample", "--vocab-size", "300", "--pattern", "gpt4", "--out", "x"], 1,
     "did you mean 'cl100k'?"),  # gigatoken's name: it dropped all text but "gpt4"
    (["train", "--sample", "--vocab-size", "300", "--pattern", "tiktoken", "--out", "x"], 1,
     "would match only its own text"),  # a name of nothing, as a regex only itself
    (["encode", "in.txt", "--tokenizer", "t", "--out", "o.npy", "--separator", "X",
      "--no-separator"], 2, "not both"),  # one was dropped in silence
    (["encode", "in.txt", "--tokenizer", "t", "--out", "-"], 2, "--out must name a .npy"),
    (["encode", "in.txt", "--tokenizer", "t", "--out", "o.npy", "--workers", "0"], 2,
     "argument --workers: must be from 1 to 4096"),  # named num_workers, exit status 1
    (["encode", "in.txt", "--tokenizer", "t", "--out", "o.npy", "--separator", "\udcff"], 2,
     "--separator is not valid Unicode text"),  # a codec's error, naming nothing
    (["train", "--sample", "--vocab-size", "300", "--pattern", "\udcff", "--out", "x"], 1,
     "not valid Unicode text"),  # once found only by save, after the training
])
def test_user_errors(tmp_path, monkeypatch, capsys, argv, status, message):
    monkeypatch.chdir(tmp_path)
    try:
        got = main(argv)
    except SystemExit as e:  # argparse usage errors
        got = e.code
    assert got == status
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err


def test_decode_rejects_non_npy(tmp_path, capsys):
    main(["train", "--sample", "--vocab-size", "300", "--out", str(tmp_path / "t"), "--quiet"])
    (tmp_path / "bad.npy").write_bytes(b"not numpy")
    assert main(["decode", "--tokenizer", str(tmp_path / "t"), str(tmp_path / "bad.npy")]) == 1
    assert "bad.npy" in capsys.readouterr().err


def test_module_entry_point():
    proc = subprocess.run([sys.executable, "-m", "bpe_cffi", "sample-path"], capture_output=True,
                          text=True, check=True)
    assert proc.stdout.strip() == bpe_cffi.sample_path()


def test_closed_pipe_is_quiet(tmp_path):
    tok = tmp_path / "tok"
    main(["train", "--sample", "--vocab-size", "300", "--out", str(tok), "--quiet"])
    ids = tmp_path / "ids.npy"
    main(["encode", "--tokenizer", str(tok), bpe_cffi.sample_path(), "--out", str(ids),
          "--quiet"])
    command = f"{sys.executable} -m bpe_cffi decode --tokenizer {tok} {ids} | head -c 10"
    proc = subprocess.run(command, shell=True, capture_output=True, text=True)
    assert proc.stdout == open(bpe_cffi.sample_path(), encoding="utf-8").read()[:10]
    assert "Traceback" not in proc.stderr and "error" not in proc.stderr


def test_encode_no_specials(tmp_path):
    out = tmp_path / "tok"
    assert main(["train", "--sample", "--vocab-size", "600", "--out", str(out), "--quiet"]) == 0
    ids = tmp_path / "ids.npy"
    assert main(["encode", "--tokenizer", str(out), bpe_cffi.sample_path(), "--out", str(ids),
                 "--no-specials", "--quiet"]) == 0
    tok = bpe_cffi.Tokenizer.load(out)
    text = open(bpe_cffi.sample_path(), encoding="utf-8").read()
    assert np.load(ids).tolist() == tok.encode(text, allowed_special=set())
    assert tok.special_ids["<|endoftext|>"] not in np.load(ids).tolist()


def test_warning_is_one_line_and_tokens_show_once_escaped(tmp_path, capsys):
    corpus = tmp_path / "tiny.txt"
    corpus.write_text("ab ab ab ウ", encoding="utf-8")
    out = tmp_path / "tok"
    assert main(["train", str(corpus), "--vocab-size", "300", "--out", str(out),
                 "--quiet"]) == 0
    err = capsys.readouterr().err
    assert err.startswith("bpe-cffi: warning: the corpus ran out of pairs") and \
        err.count("\n") == 1, err
    assert main(["info", str(out)]) == 0
    shown = capsys.readouterr().out
    assert r"b'\xe3\x82'" in shown or r"b'\xe3'" in shown  # a part of ウ, escaped once
    assert r"\\x" not in shown


@pytest.mark.parametrize("block", [1, 2, 3, 64])
def test_decode_in_blocks_equals_decoding_at_once(tmp_path, monkeypatch, capsys, block):
    # decode reads the ids in blocks (memory bounded by a block, not by the corpus): a
    # character split between two blocks, or bytes that are no UTF-8, come out as from one
    # decode of all the ids.
    from bpe_cffi import cli
    monkeypatch.setattr(cli, "_DECODE_BLOCK_IDS", block)
    vocab = {i: bytes([i]) for i in range(256)}
    bpe_cffi.save(vocab, [], tmp_path / "bytes")
    rng = np.random.default_rng(block)
    text = "é字🙂 a\n".encode() * 20
    ids = np.concatenate([np.frombuffer(text, np.uint8),
                          rng.integers(0x80, 0x100, 50), np.frombuffer(text, np.uint8),
                          [0xF0, 0x9F]]).astype(np.uint16)  # ends inside a character
    np.save(tmp_path / "ids.npy", ids)
    out = tmp_path / "out.txt"
    assert main(["decode", "--tokenizer", str(tmp_path / "bytes"), str(tmp_path / "ids.npy"),
                 "--out", str(out)]) == 0
    want = bpe_cffi.Tokenizer(vocab, []).decode(ids)
    assert out.read_bytes() == want.encode("utf-8")
    assert main(["decode", "--tokenizer", str(tmp_path / "bytes"),
                 str(tmp_path / "ids.npy")]) == 0
    assert capsys.readouterr().out == want


@pytest.mark.parametrize("block", [3, 1000])
def test_decode_names_the_file_and_index_of_an_unknown_id(tmp_path, monkeypatch, capsys, block):
    from bpe_cffi import cli
    monkeypatch.setattr(cli, "_DECODE_BLOCK_IDS", block)
    bpe_cffi.save({i: bytes([i]) for i in range(256)}, [], tmp_path / "bytes")
    ids = np.full(200, 104, np.int32)
    ids[107] = 256
    np.save(tmp_path / "ids.npy", ids)
    assert main(["decode", "--tokenizer", str(tmp_path / "bytes"), str(tmp_path / "ids.npy"),
                 "--out", str(tmp_path / "out.txt")]) == 1
    assert "ids.npy: id 256 at index 107 is not in the vocabulary" in capsys.readouterr().err
    assert not (tmp_path / "out.txt").exists()


def test_decode_refuses_a_fifo_and_a_closed_stdout(tmp_path, monkeypatch, capsys):
    import os
    tok = tmp_path / "t"
    main(["train", "--sample", "--vocab-size", "300", "--out", str(tok), "--quiet"])
    fifo = tmp_path / "ids.fifo"
    os.mkfifo(fifo)  # read with no writer, it waited for ever
    assert main(["decode", "--tokenizer", str(tok), str(fifo)]) == 1
    assert "not a regular file" in capsys.readouterr().err
    np.save(tmp_path / "ids.npy", np.array([104, 105], np.uint16))
    monkeypatch.setattr(sys, "stdout", None)
    assert main(["decode", "--tokenizer", str(tok), str(tmp_path / "ids.npy")]) == 1
    assert "standard output is closed" in capsys.readouterr().err


def test_a_missing_optional_library_is_one_line(tmp_path, monkeypatch, capsys):
    (tmp_path / "c.txt.zst").write_bytes(b"(\xb5/\xfd")  # zstandard's magic
    monkeypatch.setitem(sys.modules, "zstandard", None)  # as if it were not installed
    assert main(["train", str(tmp_path / "c.txt.zst"), "--vocab-size", "300",
                 "--out", str(tmp_path / "x"), "--quiet"]) == 1
    err = capsys.readouterr().err
    assert "zstandard" in err and "Traceback" not in err


def test_encode_no_specials_keeps_the_separator_one_id(tmp_path):
    tok = tmp_path / "t"
    main(["train", "--sample", "--vocab-size", "600", "--out", str(tok), "--quiet"])
    (tmp_path / "a.txt").write_text("hello")
    (tmp_path / "b.txt").write_text("world <|endoftext|> x")
    out = tmp_path / "ids.npy"
    assert main(["encode", "--tokenizer", str(tok), str(tmp_path / "a.txt"),
                 str(tmp_path / "b.txt"), "--no-specials", "--out", str(out), "--quiet"]) == 0
    t = bpe_cffi.Tokenizer.load(tok)
    eot = t.special_ids["<|endoftext|>"]
    assert np.load(out).tolist() == (t.encode("hello") + [eot]
                                     + t.encode("world <|endoftext|> x", allowed_special=set()))


def test_a_file_where_a_tokenizer_directory_belongs(tmp_path, capsys):
    (tmp_path / "notes.txt").write_text("hello")
    assert main(["info", str(tmp_path / "notes.txt")]) == 1
    assert "is a file, not a tokenizer directory" in capsys.readouterr().err
    vocab, merges = bpe_cffi.train_bpe(bpe_cffi.sample_path(), 300)
    with pytest.raises(FileExistsError, match="it is a file, not a directory"):
        bpe_cffi.save(vocab, merges, tmp_path / "notes.txt")
    tok = bpe_cffi.Tokenizer(vocab, merges)
    out = os.fsencode(tmp_path / "ids.npy")  # a bytes path, as os functions take
    assert tok.encode_file(str(tmp_path / "notes.txt"), out) == len(tok.encode("hello"))


def test_a_tokenizer_file_where_a_directory_would_do(tmp_path, capsys):
    # --tokenizer and info take a tokenizer.json or a .tiktoken file, as Tokenizer.load does.
    tok = tmp_path / "tok"
    main(["train", "--sample", "--vocab-size", "400", "--special-token", "<|endoftext|>",
          "--out", str(tok), "--quiet"])
    capsys.readouterr()
    assert main(["info", str(tok / "tokenizer.json")]) == 0
    assert "special tokens: <|endoftext|> = 399" in capsys.readouterr().out
    with pytest.raises(SystemExit) as exited:
        main(["info", str(tok / "tokenizer.json"), "--pattern", "o200k"])
    assert exited.value.code == 2
    assert "is or holds a tokenizer.json" in capsys.readouterr().err
    (tmp_path / "a.txt").write_text("hello world<|endoftext|>again", encoding="utf-8")
    for name in ("tokenizer.json", "tokenizer.tiktoken"):
        out = tmp_path / f"{name}.npy"
        extra = ["--special-token", "<|endoftext|>"] if name.endswith("tiktoken") else []
        assert main(["encode", "--tokenizer", str(tok / name), str(tmp_path / "a.txt"),
                     "--out", str(out), "--quiet"] + extra) == 0
        assert np.load(out).tolist() == bpe_cffi.Tokenizer.load(tok).encode(
            "hello world<|endoftext|>again")
        assert main(["encode", "--tokenizer", str(tok / name), str(tmp_path / "a.txt"),
                     "--out", str(tok / name), "--quiet"] + extra) == 1
        assert "is the tokenizer's file" in capsys.readouterr().err


def test_info_says_ignore_merges(tmp_path, capsys):
    main(["train", "--sample", "--vocab-size", "300", "--out", str(tmp_path / "t"), "--quiet"])
    (tmp_path / "ranks").mkdir()
    (tmp_path / "ranks" / "tokenizer.tiktoken").write_bytes(
        (tmp_path / "t" / "tokenizer.tiktoken").read_bytes())
    capsys.readouterr()
    assert main(["info", str(tmp_path / "ranks")]) == 0
    assert "ignore_merges: a pre-token whose bytes are a token is that token" in \
        capsys.readouterr().out


def test_pattern_and_specials_for_a_directory_without_tokenizer_json(tmp_path, capsys):
    # A rank file (or vocab.json + merges.txt) holds no pattern and no specials: --pattern and
    # --special-token give them, as Tokenizer.load's arguments do (encode used GPT-2's pattern
    # and no specials, with no way to say otherwise); beside a tokenizer.json, an error.
    eot = "<|endoftext|>"
    main(["train", "--sample", "--vocab-size", "400", "--pattern", "o200k", "--special-token",
          eot, "--out", str(tmp_path / "t"), "--quiet"])
    (tmp_path / "ranks").mkdir()
    (tmp_path / "ranks" / "tokenizer.tiktoken").write_bytes(
        (tmp_path / "t" / "tokenizer.tiktoken").read_bytes())
    text = "Don'T  \n/x 12345" + eot + "ABCdef\n\n/"
    (tmp_path / "in.txt").write_text(text, encoding="utf-8")
    options = ["--pattern", "o200k", "--special-token", eot]
    want = bpe_cffi.Tokenizer.load(tmp_path / "ranks", pattern="o200k",
                                   special_tokens=[eot]).encode(text)
    assert want != bpe_cffi.Tokenizer.load(tmp_path / "ranks").encode(text)
    out = str(tmp_path / "ids.npy")
    assert main(["encode", str(tmp_path / "in.txt"), "--tokenizer", str(tmp_path / "ranks"),
                 "--out", out, "--quiet", *options]) == 0
    assert np.load(out).tolist() == want
    capsys.readouterr()
    assert main(["decode", out, "--tokenizer", str(tmp_path / "ranks"), *options]) == 0
    assert capsys.readouterr().out == text
    assert main(["info", str(tmp_path / "ranks"), *options]) == 0
    info = capsys.readouterr().out
    assert "pattern: o200k (C scanner)" in info and f"{eot} = " in info
    with pytest.raises(SystemExit) as e:  # a usage error, naming the options
        main(["info", str(tmp_path / "t"), "--pattern", "o200k"])
    assert e.value.code == 2
    assert "give neither --pattern nor --special-token" in capsys.readouterr().err


def test_info_of_an_empty_rank_file(tmp_path, capsys):
    (tmp_path / "tokenizer.tiktoken").write_bytes(b"")  # a tokenizer of no tokens
    assert main(["info", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "vocabulary: 0 tokens, 0 merges" in out  # no id range "0--1"
    assert "longest tokens: none" in out and "first merges: none" in out


def test_a_file_url_is_checked_as_the_file_it_names(tmp_path, capsys):
    # A FIFO named by a file:// URL hung the reader; /dev/zero encoded to nothing.
    main(["train", "--sample", "--vocab-size", "300", "--out", str(tmp_path / "t"), "--quiet"])
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    for url in (fifo.as_uri(), "file:///dev/zero"):
        capsys.readouterr()
        assert main(["encode", "--tokenizer", str(tmp_path / "t"), url, "--out",
                     str(tmp_path / "ids.npy"), "--quiet"]) == 1
        assert "is not a regular file" in capsys.readouterr().err


def test_decode_to_an_empty_out_is_an_error_not_standard_output(tmp_path, capsys):
    main(["train", "--sample", "--vocab-size", "300", "--out", str(tmp_path / "t"), "--quiet"])
    np.save(tmp_path / "ids.npy", np.array([104, 105], np.uint16))
    capsys.readouterr()
    assert main(["decode", "--tokenizer", str(tmp_path / "t"), str(tmp_path / "ids.npy"),
                 "--out", ""]) == 1
    out, err = capsys.readouterr()
    assert out == "" and "the output path is empty" in err


def test_a_tokenizer_directory_that_cannot_be_read_says_so(tmp_path, monkeypatch):
    # Its files looked absent ("holds no tokenizer.json, ..."). Root reads any directory, so
    # the refusal is made here as the file system makes it for another user.
    def refused(path):
        raise PermissionError(errno.EACCES, "Permission denied", path)

    monkeypatch.setattr(os, "listdir", refused)
    with pytest.raises(PermissionError, match="cannot read the tokenizer directory"):
        bpe_cffi.Tokenizer.load(tmp_path)


@pytest.mark.parametrize("case", ["a link to nothing", "under a file"])
def test_train_refuses_an_out_it_could_not_save_into_before_training(tmp_path, capsys, case):
    # Both were found by the save, once the training was done.
    (tmp_path / "file").write_text("x")
    (tmp_path / "link").symlink_to(tmp_path / "nowhere")
    out = {"a link to nothing": "link", "under a file": "file/tok"}[case]
    assert main(["train", "--sample", "--vocab-size", "300", "--out", str(tmp_path / out)]) == 1
    captured = capsys.readouterr()
    assert "trained" not in captured.out
    assert {"a link to nothing": "symbolic link to nothing",
            "under a file": "is a file"}[case] in captured.err


def test_train_refuses_a_special_it_could_not_save_before_training(tmp_path, capsys):
    # "é" is how tokenizer.json writes the byte 0xE9: the save refused it once trained.
    assert main(["train", "--sample", "--vocab-size", "300", "--special-token", "é",
                 "--out", str(tmp_path / "tok")]) == 1
    captured = capsys.readouterr()
    assert "trained" not in captured.out and "pre-tokenize" not in captured.err
    assert "the special token 'é' cannot be saved" in captured.err
    assert not (tmp_path / "tok").exists()


def test_train_refuses_out_files_it_could_not_write_before_training(tmp_path, capsys,
                                                                    monkeypatch):
    # A directory at --out's vocab.json was found by the save, once the training was done.
    import bpe_cffi.cli

    def counting(*args, **kwargs):
        raise AssertionError("counted before refusing")

    monkeypatch.setattr(bpe_cffi.cli, "count_words_arrays", counting)
    (tmp_path / "tok" / "vocab.json").mkdir(parents=True)
    assert main(["train", "--sample", "--vocab-size", "300", "--out", str(tmp_path / "tok")]) == 1
    captured = capsys.readouterr()
    assert "vocab.json': it is a directory" in captured.err


def test_decode_out_dash_is_standard_output(tmp_path, capsys, monkeypatch):
    # It wrote a file named "-".
    monkeypatch.chdir(tmp_path)
    assert main(["train", "--sample", "--vocab-size", "300", "--out", "tok", "--quiet"]) == 0
    tok = bpe_cffi.Tokenizer.load("tok")
    np.save("ids.npy", np.array(tok.encode("hello world"), np.uint16))
    capsys.readouterr()
    assert main(["decode", "--tokenizer", "tok", "ids.npy", "--out", "-"]) == 0
    assert capsys.readouterr().out.startswith("hello world") and not (tmp_path / "-").exists()


def test_train_refuses_an_out_name_too_long_before_training(tmp_path, capsys):
    # The save found it once trained, after making the directories above it.
    out = tmp_path / "x" / ("a" * 300) / "tok"
    assert main(["train", "--sample", "--vocab-size", "300", "--out", str(out)]) == 1
    assert "bytes its file system allows" in capsys.readouterr().err
    assert not (tmp_path / "x").exists()
