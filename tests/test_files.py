"""Files (SPEC 3): the four formats, lossless round trips, other libraries, malformed input."""
from __future__ import annotations

import base64
import codecs
import copy
import errno
import json
import os
import pickle
import re
import stat

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

import bpe_cffi
from bpe_cffi import Tokenizer, files
from bpe_cffi.encoder import merges_from_ranks

EOT = "<|endoftext|>"
TEXT = "In the beginning<|endoftext|> God created  the heaven\n\nand the earth. 'tis 123 🙂"


@pytest.fixture(scope="module")
def trained():
    return bpe_cffi.train_bpe(bpe_cffi.sample_path(), 1500, [EOT])


@pytest.fixture()
def saved(trained, tmp_path):
    vocab, merges = trained
    bpe_cffi.save(vocab, merges, tmp_path / "tok", [EOT])
    return tmp_path / "tok"


def test_save_writes_four_files(saved):
    assert sorted(os.listdir(saved)) == sorted(files.FILES)


def test_load_takes_a_bytes_path(saved):
    assert Tokenizer.load(os.fsencode(saved)).encode(TEXT) == Tokenizer.load(saved).encode(TEXT)


def test_load_takes_one_file_as_tokenizers_from_file_does(saved, tmp_path):
    # A user of tokenizers passes the tokenizer.json itself (Tokenizer.from_file); it was
    # "a file, not a tokenizer directory".
    whole = Tokenizer.load(saved)
    hf = Tokenizer.load(saved / "tokenizer.json")
    assert (hf.encode(TEXT), hf.special_ids, hf.pattern) == (whole.encode(TEXT),
                                                              whole.special_ids, whole.pattern)
    renamed = tmp_path / "model-tokenizer.json"
    renamed.write_bytes((saved / "tokenizer.json").read_bytes())
    assert Tokenizer.load(renamed).encode(TEXT) == whole.encode(TEXT)
    with pytest.raises(ValueError, match="holds its own pattern and special tokens"):
        Tokenizer.load(renamed, pattern="gpt2")
    specials = {EOT: whole.special_ids[EOT]}
    rank = Tokenizer.load(saved / "tokenizer.tiktoken", special_tokens=specials)
    assert rank.encode(TEXT) == Tokenizer.load(_only(saved, "tokenizer.tiktoken", tmp_path),
                                               special_tokens=specials).encode(TEXT)
    with pytest.raises(NotADirectoryError, match="a tokenizer.json or a .tiktoken rank file"):
        Tokenizer.load(saved / "vocab.json")  # it needs its merges.txt: the directory
    out = saved / "tokenizer.json"  # the file it was loaded from is no output
    with pytest.raises(ValueError, match="is the tokenizer's file"):
        hf.encode_file(bpe_cffi.sample_path(), out)
    assert Tokenizer.load(out).encode(TEXT) == whole.encode(TEXT)


def test_load_prefers_tokenizer_json_and_keeps_specials(saved, trained):
    tok = Tokenizer.load(saved)
    assert tok.special_tokens == [EOT]
    assert tok.id_to_token == trained[0]
    assert tok.merges == trained[1]
    assert tok.encode(TEXT) == Tokenizer(*trained, [EOT]).encode(TEXT)


def _only(saved, name: str, tmp_path) -> str:
    """A directory holding only the saved file name."""
    d = tmp_path / ("only_" + name.replace(".", "_"))
    d.mkdir()
    (d / name).write_bytes((saved / name).read_bytes())
    return str(d)


def test_each_format_loads_alone(saved, trained, tmp_path):
    vocab, merges = trained
    want = Tokenizer(vocab, merges, [EOT]).encode(TEXT)
    v, m = files.load_gpt2(saved / "vocab.json", saved / "merges.txt")
    assert (v, m.pairs()) == (vocab, merges)
    v, m, specials, pattern, _, _ = files.load_hf(saved / "tokenizer.json")
    assert (v, m.pairs(), specials, pattern) == (vocab, merges, [EOT], bpe_cffi.GPT2_PATTERN)
    v = files.load_tiktoken(saved / "tokenizer.tiktoken")
    assert v == {i: t for i, t in vocab.items() if t != EOT.encode()}
    # Every split of a token into two tokens is a merge, by the token's rank: BPE's own
    # merges among them, in their order.
    recovered = merges_from_ranks(v).pairs()
    learned = set(merges)
    assert [m for m in recovered if m in learned] == merges
    assert all(a + b in v.values() for a, b in recovered)
    for ignore in (False, True):
        assert Tokenizer(v, recovered, [EOT], ignore_merges=ignore).encode(TEXT) == want
    assert Tokenizer.load(_only(saved, "tokenizer.tiktoken", tmp_path)).ignore_merges


def test_hf_tokenizers_loads_tokenizer_json_as_is(saved, trained):
    import tokenizers
    hf = tokenizers.Tokenizer.from_file(str(saved / "tokenizer.json"))
    ours = Tokenizer(*trained, [EOT])
    text = TEXT + open(bpe_cffi.sample_path(), encoding="utf-8").read()[:20_000]
    assert hf.encode(text).ids == ours.encode(text)
    assert hf.decode(ours.encode(TEXT), skip_special_tokens=False) == TEXT


def test_hf_custom_pattern_round_trips(trained, tmp_path):
    import tokenizers
    vocab, merges = trained
    bpe_cffi.save(vocab, merges, tmp_path, [EOT], pattern=r"\S+|\s+")
    assert Tokenizer.load(tmp_path).pattern == r"\S+|\s+"
    hf = tokenizers.Tokenizer.from_file(str(tmp_path / "tokenizer.json"))
    ours = Tokenizer(vocab, merges, [EOT], pattern=r"\S+|\s+")
    assert hf.encode(TEXT).ids == ours.encode(TEXT)


def test_tiktoken_loads_rank_file(saved, trained):
    import tiktoken
    from tiktoken.load import load_tiktoken_bpe
    ranks = load_tiktoken_bpe(str(saved / "tokenizer.tiktoken"))
    enc = tiktoken.Encoding("t", pat_str=bpe_cffi.GPT2_PATTERN, mergeable_ranks=ranks,
                            special_tokens={EOT: len(trained[0]) - 1})
    assert enc.encode(TEXT, allowed_special="all") == Tokenizer(*trained, [EOT]).encode(TEXT)


byte_tokens = st.lists(st.binary(min_size=2, max_size=8), unique=True, max_size=40)


@given(extra=byte_tokens)
@settings(max_examples=40, suppress_health_check=[HealthCheck.function_scoped_fixture])
def test_every_byte_string_survives_every_format(tmp_path, extra):
    vocab = {i: bytes([i]) for i in range(256)}
    merges = []
    for t in extra:  # a merge for each token: its first byte + the rest, both in the vocab
        for part in (t[:1], t[1:]):
            if part not in vocab.values():
                vocab[len(vocab)] = part
        vocab[len(vocab)] = t
        merges.append((t[:1], t[1:]))
    specials = ["<s>", "\u00a0special \ud7ff"]
    for s in specials:
        vocab[len(vocab)] = s.encode()
    out = tmp_path / "round"
    bpe_cffi.save(vocab, merges, out, specials)
    v, m = files.load_gpt2(out / "vocab.json", out / "merges.txt")
    assert (v, m.pairs()) == (vocab, merges)
    v, m, sp, _, _, _ = files.load_hf(out / "tokenizer.json")
    assert (v, m.pairs(), sp) == (vocab, merges, specials)
    plain = {i: t for i, t in vocab.items() if t not in {s.encode() for s in specials}}
    assert files.load_tiktoken(out / "tokenizer.tiktoken") == plain


@given(token=st.binary(max_size=20))
def test_token_to_str_writes_each_byte_as_gpt2s_character(token):
    assert files.token_to_str(token) == "".join(files.BYTE_TO_CHAR[b] for b in token)


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(),
    lambda inner: st.lists(inner, max_size=5) | st.tuples(inner, inner)
    | st.dictionaries(st.text(max_size=5), inner, max_size=5), max_leaves=30)


@given(value=json_values, indent=st.integers(0, 3))
@settings(max_examples=300)
def test_json_indented_is_the_json_modules_indented_text(value, indent):
    # The files are written as json.dumps with an indent writes them, whatever the nesting.
    assert files.json_indented(value, indent) == json.dumps(value, ensure_ascii=False,
                                                            indent=indent)


def test_saved_files_are_written_line_by_line_in_id_and_rank_order(tmp_path):
    # Each file's text in full, as the formats' own writers lay it out: vocab.json by id,
    # one entry a line; merges.txt by rank after its version line; the rank file by rank.
    vocab = {i: bytes([i]) for i in range(256)} | {256: b" t", 257: b" th", 258: b"\xc3\xa9"}
    merges = [(b" ", b"t"), (b" t", b"h"), (b"\xc3", b"\xa9")]
    bpe_cffi.save(vocab, merges, tmp_path, ["<s>"])
    spelled = {i: "".join(files.BYTE_TO_CHAR[b] for b in t) for i, t in vocab.items()}
    assert (tmp_path / "vocab.json").read_text(encoding="utf-8") == (
        "{\n" + ",\n".join(f"{json.dumps(s, ensure_ascii=False)}: {i}"
                           for i, s in sorted((spelled | {259: "<s>"}).items())) + "\n}")
    assert (tmp_path / "merges.txt").read_text(encoding="utf-8") == \
        "#version: 0.2\nĠ t\nĠt h\nÃ ©\n"
    assert (tmp_path / "tokenizer.tiktoken").read_text(encoding="ascii") == "".join(
        f"{base64.b64encode(t).decode()} {i}\n" for i, t in sorted(vocab.items()))
    gpt2 = tmp_path / "gpt2"
    gpt2.mkdir()
    files.save_gpt2(vocab, iter(merges), str(gpt2 / "vocab.json"), str(gpt2 / "merges.txt"))
    assert (gpt2 / "merges.txt").read_text(encoding="utf-8") == \
        (tmp_path / "merges.txt").read_text(encoding="utf-8")


def test_saved_files_are_the_json_modules_indented_text(saved):
    for name, indent in (("vocab.json", 0), ("tokenizer.json", 1)):
        text = (saved / name).read_text(encoding="utf-8")
        assert text == json.dumps(json.loads(text), ensure_ascii=False, indent=indent)


# ---- malformed files -----------------------------------------------------------------------

def test_truncated_vocab_json_names_file_and_line(saved):
    p = saved / "vocab.json"
    data = p.read_text(encoding="utf-8")
    p.write_text(data[: len(data) // 2], encoding="utf-8")
    with pytest.raises(ValueError, match=r"vocab\.json:\d+"):
        files.load_gpt2(p, saved / "merges.txt")


def test_bad_merges_line_names_file_and_line(saved):
    p = saved / "merges.txt"
    lines = p.read_text(encoding="utf-8").splitlines()
    lines[5] = "onlyonetoken"
    p.write_text("\n".join(lines), encoding="utf-8")
    with pytest.raises(ValueError, match=r"merges\.txt:6"):
        files.load_gpt2(saved / "vocab.json", p)


def test_merges_naming_unknown_token(saved):
    # Named by its line in merges.txt (past the #version line and blank lines), not by its
    # rank alone.
    p = saved / "merges.txt"
    lines = p.read_text(encoding="utf-8").split("\n")
    lines[3:3] = ["", "Ġzzzz Ġqqqq", ""]
    p.write_text("\n".join(lines), encoding="utf-8")
    (saved / "tokenizer.json").unlink()  # the directory then loads vocab.json + merges.txt
    for load in (lambda: Tokenizer.from_files(saved / "vocab.json", p),
                 lambda: Tokenizer.load(saved)):
        with pytest.raises(ValueError, match=r"merges.txt:5: merge 2 names the token b' zzzz', "
                                             "which is not in the vocabulary"):
            load()


def test_bad_tiktoken_line(saved):
    p = saved / "tokenizer.tiktoken"
    with open(p, "a", encoding="ascii") as f:
        f.write("!!!notbase64 7\n")
    n = len(p.read_text().splitlines())
    with pytest.raises(ValueError, match=rf"tokenizer\.tiktoken:{n}"):
        files.load_tiktoken(p)


def test_running_out_of_memory_on_a_rank_file_names_it(saved, monkeypatch):
    # Nested tokens (x, xx, ..., x^2000: a 2.7 MB file) imply merges of ~2.5 GB of bytes:
    # numpy's MemoryError said "Unable to allocate 2.48 GiB", and not which file.
    def merges_from_ranks(vocab):
        raise MemoryError("Unable to allocate 2.48 GiB")
    monkeypatch.setattr(bpe_cffi.tokenizer, "merges_from_ranks", merges_from_ranks)
    with pytest.raises(MemoryError, match=r"tokenizer\.tiktoken: out of memory while building "
                                          r"the tokenizer \(Unable to allocate 2\.48 GiB\)"):
        Tokenizer.load(saved / "tokenizer.tiktoken")


def test_a_rank_file_byte_that_is_not_ascii_is_placed(saved):
    # Read in chunks, a byte past the first was placed within its chunk, not the file, and no
    # line was named.
    p = saved / "tokenizer.tiktoken"
    data, want = p.read_bytes(), files.load_tiktoken(p)
    at = data.index(b"\n", 9_000) + 1  # a line start past the reader's first 8 KB
    line = data.count(b"\n", 0, at) + 1
    p.write_bytes(data[:at] + "é".encode() + data[at:])
    with pytest.raises(ValueError, match=rf"tokenizer\.tiktoken:{line}: not ASCII at byte "
                                         rf"offset {at}$"):
        files.load_tiktoken(p)
    p.write_bytes(codecs.BOM_UTF8 + data)
    with pytest.raises(ValueError, match=r"tokenizer\.tiktoken:1: not ASCII at byte offset 0 "
                                         r"\(a byte-order mark\)"):
        files.load_tiktoken(p)
    for newline in (b"\r\n", b"\r"):  # line ends that tiktoken reads as the others
        p.write_bytes(data.replace(b"\n", newline))
        assert files.load_tiktoken(p) == want


@pytest.mark.parametrize("line, message", [
    ("YWJj 0", "rank 0 is given twice"),  # replaced the byte 0x00 in silence
    ("IA== 99999", r"token b' ' is ranked twice \(first on line 33\)"),  # lost merges
    ("YWJj -1", "rank -1 is not in"), ("YWJj 2147483648", "rank 2147483648 is not in")])
def test_tiktoken_ranks_and_tokens_given_twice_or_out_of_range(saved, line, message):
    p = saved / "tokenizer.tiktoken"
    with open(p, "a", encoding="ascii") as f:
        f.write(line + "\n")
    n = len(p.read_text().splitlines())
    with pytest.raises(ValueError, match=rf"tokenizer\.tiktoken:{n}: {message}"):
        files.load_tiktoken(p)


def test_truncated_tokenizer_json(saved):
    p = saved / "tokenizer.json"
    data = p.read_text(encoding="utf-8")
    p.write_text(data[:1000], encoding="utf-8")
    with pytest.raises(ValueError, match=r"tokenizer\.json:\d+"):
        Tokenizer.load(saved)


def test_tokenizer_json_of_wrong_shape(tmp_path):
    (tmp_path / "tokenizer.json").write_text(json.dumps({"model": {"type": "WordPiece"}}))
    with pytest.raises(ValueError, match="tokenizer.json"):
        Tokenizer.load(tmp_path)


def _edited(saved, edit) -> None:
    """saved's tokenizer.json with its document changed by edit (a function of it)."""
    path = saved / "tokenizer.json"
    doc = json.loads(path.read_text(encoding="utf-8"))
    edit(doc)
    path.write_text(json.dumps(doc), encoding="utf-8")


@pytest.mark.parametrize("case, message", [
    ("pre_tokenizer a str", "not a BPE tokenizer.json"),
    ("pretokenizers null", "unsupported pre_tokenizer"),
    ("vocab id a str", "has id '256', not an int"),
    ("vocab id too large", r"has id 2147483648, not an int in \[0, 2\*\*31\)"),
    ("added id negative", "has id -1"),
    ("added id of another token", "has id 300, the id of the token"),
    ("added content empty", "has content '', not a non-empty str"),
    ("added content a lone surrogate", "UnicodeEncodeError"),
])
def test_malformed_tokenizer_json_is_a_value_error_naming_it(saved, case, message):
    # Each of these once escaped as an AttributeError, TypeError or UnicodeEncodeError
    # without the file's name, or as a misleading error about a merge.
    def edit(doc):
        vocab, added = doc["model"]["vocab"], doc["added_tokens"][0]
        if case == "pre_tokenizer a str":
            doc["pre_tokenizer"] = "ByteLevel"
        elif case == "pretokenizers null":
            doc["pre_tokenizer"] = {"type": "Sequence", "pretokenizers": None}
        elif case == "vocab id a str":
            vocab[next(t for t, i in vocab.items() if i == 256)] = "256"
        elif case == "vocab id too large":
            vocab[next(iter(vocab))] = 2**31
        elif case == "added id negative":
            added["id"] = -1
        elif case == "added id of another token":
            added["id"] = 300
        elif case == "added content empty":
            added["content"] = ""
        else:
            added["content"] = "\ud800"
    _edited(saved, edit)
    with pytest.raises(ValueError, match=f"tokenizer.json: .*{message}"):
        Tokenizer.load(saved)


@pytest.mark.parametrize("case, message", [
    # read as true by bool(): "no" applied GPT-2's regex, "no" made a token special
    ("use_regex a str", "pre_tokenizer ByteLevel use_regex is 'no', not true or false"),
    ("add_prefix_space a number", "add_prefix_space is 0, not true or false"),
    ("special a str", "has special 'no', not true or false"),
    ("added_tokens an object", "added_tokens is {}, not a list"),
    # a family's name, as a Split regex, was read as the family (tokenizers: only itself)
    ("Split regex a name", "the Split regex 'o200k' is a name of bpe_cffi's patterns"),
])
def test_tokenizer_json_settings_of_the_wrong_type_are_refused(saved, case, message):
    def edit(doc):
        if case == "use_regex a str":
            doc["pre_tokenizer"]["use_regex"] = "no"
        elif case == "add_prefix_space a number":
            doc["pre_tokenizer"]["add_prefix_space"] = 0
        elif case == "special a str":
            doc["added_tokens"][0]["special"] = "no"
        elif case == "added_tokens an object":
            doc["added_tokens"] = {}
        else:
            doc["pre_tokenizer"] = {"type": "Sequence", "pretokenizers": [
                {"type": "Split", "pattern": {"Regex": "o200k"}, "behavior": "Isolated"},
                {"type": "ByteLevel", "add_prefix_space": False, "use_regex": False}]}
    _edited(saved, edit)
    with pytest.raises(ValueError, match=f"tokenizer.json: .*{message}"):
        Tokenizer.load(saved)


def test_save_takes_ignore_merges_as_a_bool_only(trained, tmp_path):
    with pytest.raises(TypeError, match="ignore_merges must be a bool, not str"):
        bpe_cffi.save(*trained, tmp_path, ignore_merges="no")  # was written as true
    assert not os.listdir(tmp_path)


@pytest.mark.parametrize("name", ["tokenizer.json", "vocab.json", "merges.txt"])
def test_tokenizer_files_not_utf8_or_nested_too_deeply(saved, name):
    path = saved / name
    data = path.read_bytes()
    cut = data.index(b"\n") + 1
    path.write_bytes(data[:cut] + b"\xff\xfe" + data[cut:])
    load = (lambda: Tokenizer.load(saved)) if name == "tokenizer.json" else \
        (lambda: files.load_gpt2(saved / "vocab.json", saved / "merges.txt"))
    # where: merges.txt, read in blocks of lines, said only "not UTF-8 (invalid start byte)",
    # and a JSON file an offset in one block of its text
    with pytest.raises(ValueError, match=f"{name}: not UTF-8: byte offset {cut} of its text, "
                                         "line 2 "):
        load()
    if name != "merges.txt":
        path.write_text("[" * 100_000, encoding="utf-8")
        with pytest.raises(ValueError, match=f"{name}: JSON nested too deeply"):
            load()


def test_vocab_json_bad_id(tmp_path):
    (tmp_path / "vocab.json").write_text(json.dumps({"a": "zero"}))
    (tmp_path / "merges.txt").write_text("")
    with pytest.raises(ValueError, match="vocab.json"):
        files.load_gpt2(tmp_path / "vocab.json", tmp_path / "merges.txt")


# ---- atomic writes -------------------------------------------------------------------------

def test_a_full_disk_names_the_files_being_written(saved, trained, monkeypatch):
    # The write's own error named nothing: "[Errno 28] No space left on device".
    before = {n: (saved / n).read_bytes() for n in files.FILES}

    def full(*a, **k):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(files, "_write_tiktoken", full)
    with pytest.raises(OSError, match=r"cannot write .*vocab\.json.*tokenizer\.tiktoken.*: "
                                      "No space left on device") as raised:
        Tokenizer(*trained, [EOT]).save(saved)
    assert raised.value.errno == errno.ENOSPC
    assert {n: (saved / n).read_bytes() for n in files.FILES} == before
    assert not [n for n in os.listdir(saved) if n.endswith(".tmp")]
    # A rename that fails names its own file, once.
    monkeypatch.undo()
    monkeypatch.setattr(files.os, "replace", full)
    with pytest.raises(OSError) as raised:
        Tokenizer(*trained, [EOT]).save(saved)
    assert str(raised.value).count("cannot write") == 1
    assert {n: (saved / n).read_bytes() for n in files.FILES} == before


def test_a_directory_that_refuses_unlinks_leaves_the_writes_error(saved, trained, monkeypatch):
    # An append-only directory (chattr +a) lets files be made and renamed into, but never
    # removed: the rename over the first file fails, and then the clean-up's unlink of the
    # hard link to its old file and of the temporary files. Its PermissionError, naming a
    # temporary file, once replaced the rename's error, and the other temporaries stayed.
    before = {n: (saved / n).read_bytes() for n in files.FILES}
    unlinked = []

    def refused(what):
        def call(path, *a, **k):
            unlinked.append(path) if what == "unlink" else None
            raise PermissionError(errno.EPERM, os.strerror(errno.EPERM), path)
        return call

    monkeypatch.setattr(files.os, "replace", refused("replace"))
    monkeypatch.setattr(files.os, "unlink", refused("unlink"))
    with pytest.raises(OSError, match=r"cannot write '.*vocab\.json'"):
        Tokenizer(*trained, [EOT]).save(saved)
    assert {n: (saved / n).read_bytes() for n in files.FILES} == before
    temporaries = [p for p in map(os.fspath, unlinked) if p.endswith(".tmp")]
    assert len(temporaries) == len(files.FILES)  # each one tried, none stopping the rest
    monkeypatch.undo()
    for p in temporaries:
        os.unlink(p)


def test_a_name_too_long_makes_no_directory(trained, tmp_path):
    with pytest.raises(OSError) as raised:
        bpe_cffi.save(*trained, tmp_path / "new" / ("y" * 300) / "tok", [EOT])
    assert raised.value.errno == errno.ENAMETOOLONG
    assert not os.listdir(tmp_path)  # ("new" was made, then the long name refused)


def test_one_output_named_twice_is_refused(trained, tmp_path):
    path = str(tmp_path / "both.txt")
    with pytest.raises(ValueError, match="are one file"):  # one was written over the other
        files.save_gpt2(*trained, path, path)
    assert not os.listdir(tmp_path)


def test_failed_save_leaves_previous_files_whole(saved, trained, monkeypatch):
    before = {n: (saved / n).read_bytes() for n in files.FILES}

    def boom(*a, **k):
        raise RuntimeError("disk full, say")

    monkeypatch.setattr(files, "hf_tokenizer_json", boom)
    with pytest.raises(RuntimeError):
        bpe_cffi.save({i: bytes([i]) for i in range(256)}, [], saved, [])
    assert (saved / "tokenizer.json").read_bytes() == before["tokenizer.json"]
    assert not [n for n in os.listdir(saved) if n.endswith(".tmp")]


def test_save_checks_everything_before_writing(saved, trained):
    # save once replaced vocab.json and then failed on the merges, which left a tokenizer
    # that no longer loaded; a str of special tokens made each of its characters one.
    vocab, merges = trained
    before = {n: (saved / n).read_bytes() for n in files.FILES}
    byte_vocab = {i: bytes([i]) for i in range(256)}
    bad = [((byte_vocab, [("a", "b")], [EOT]), TypeError, "merge 0 must be a pair of bytes"),
           ((byte_vocab, [(b"a", b"b")], [EOT]), ValueError,
            "merge 0 makes the token b'ab', which is not in the vocabulary"),
           ((vocab, merges, EOT), TypeError, "special_tokens must be a list of str"),
           ((vocab, merges, [EOT, 5]), TypeError, "special tokens must be str"),
           ((vocab | {7: "x"}, merges, [EOT]), TypeError, "vocab values must be bytes"),
           ((vocab, merges, [EOT], "(unclosed"), ValueError, "invalid pre-tokenization")]
    for args, error, message in bad:
        with pytest.raises(error, match=message):
            bpe_cffi.save(args[0], args[1], saved, *args[2:])
    assert {n: (saved / n).read_bytes() for n in files.FILES} == before
    assert Tokenizer.load(saved).encode(TEXT) == Tokenizer(*trained, [EOT]).encode(TEXT)


def test_save_gives_a_new_special_token_the_next_id(trained, tmp_path):
    # As Tokenizer does: a special token whose bytes are no token gets the next id (save
    # once left it out of every file).
    vocab, merges = trained
    want = Tokenizer(vocab, merges, [EOT, "<|new|>"])
    bpe_cffi.save(vocab, merges, tmp_path, [EOT, "<|new|>"])
    got = Tokenizer.load(tmp_path)
    assert got.special_ids == want.special_ids == {EOT: len(vocab) - 1, "<|new|>": len(vocab)}
    assert got.encode(TEXT + "<|new|>") == want.encode(TEXT + "<|new|>")


def test_save_keeps_the_ids_of_specials_given_with_them(trained, tmp_path):
    # {special: id}, as tiktoken gives them and Tokenizer takes them: save once read the
    # dict as a list of its keys and gave each special the next id.
    vocab, merges = trained
    specials = {"<|new|>": len(vocab) + 100, EOT: len(vocab) - 1}
    want = Tokenizer(vocab, merges, specials)
    bpe_cffi.save(vocab, merges, tmp_path / "tok", specials)
    got = Tokenizer.load(tmp_path / "tok")
    assert got.special_ids == want.special_ids == specials
    assert got.encode(TEXT + "<|new|>") == want.encode(TEXT + "<|new|>")
    with pytest.raises(ValueError, match="cannot have id 5"):  # the id of an ordinary token
        bpe_cffi.save(vocab, merges, tmp_path / "bad", {"<|new|>": 5})
    assert not (tmp_path / "bad").exists() or not os.listdir(tmp_path / "bad")


@pytest.mark.parametrize("umask", [0o022, 0o077, 0o002])
def test_written_files_get_the_umask_permissions(trained, tmp_path, umask):
    # Written files were once private (0600) whatever the umask: a tokenizer shared on a
    # cluster was unreadable by the rest of the team.
    old = os.umask(umask)
    try:
        paths = bpe_cffi.save(*trained, tmp_path / "tok", [EOT])
        ids = tmp_path / "ids.npy"
        Tokenizer(*trained, [EOT]).encode_file(bpe_cffi.sample_path(), ids, num_workers=1)
    finally:
        os.umask(old)
    for p in paths + [str(ids)]:
        assert os.stat(p).st_mode & 0o777 == 0o666 & ~umask, p


def test_an_existing_output_keeps_its_permissions_and_a_read_only_one_is_refused(
        trained, tmp_path, monkeypatch):
    # An output made private (0600) became 0644 when written again under umask 022, and a
    # read-only one (0444) was replaced where open() refuses it.
    ids, tok_dir = tmp_path / "ids.npy", tmp_path / "tok"
    paths = bpe_cffi.save(*trained, tok_dir, [EOT])
    ids.write_bytes(b"old")
    for p in paths + [str(ids)]:
        os.chmod(p, 0o600)
    old = os.umask(0o022)
    try:
        bpe_cffi.save(*trained, tok_dir, [EOT])
        Tokenizer(*trained, [EOT]).encode_file(bpe_cffi.sample_path(), ids, num_workers=1)
    finally:
        os.umask(old)
    for p in paths + [str(ids)]:
        assert os.stat(p).st_mode & 0o777 == 0o600, p
    # Set-user-ID is not carried over (a write through open() clears it), and a file system
    # that refuses permissions (vfat, SMB) still takes the file, with the umask's.
    os.chmod(ids, 0o4755)
    Tokenizer(*trained, [EOT]).encode_file(bpe_cffi.sample_path(), ids, num_workers=1)
    assert os.stat(ids).st_mode & 0o7777 == 0o755

    def refused(fd, mode):
        raise PermissionError(errno.EPERM, "Operation not permitted")

    with monkeypatch.context() as m:
        m.setattr(os, "fchmod", refused)
        old = os.umask(0o022)
        try:
            bpe_cffi.save(*trained, tok_dir, [EOT])
        finally:
            os.umask(old)
    assert os.stat(paths[0]).st_mode & 0o777 == 0o644
    # Root may write anything: the refusal is made as the file system makes it for a user.
    real_access = os.access
    monkeypatch.setattr(os, "access", lambda p, mode, **kw: False if os.fspath(p) == str(ids)
                        and mode == os.W_OK else real_access(p, mode, **kw))
    with pytest.raises(PermissionError, match="it is read-only"):
        Tokenizer(*trained, [EOT]).encode_file(bpe_cffi.sample_path(), ids, num_workers=1)
    assert np.load(ids).size > 0  # the file written before, untouched


def test_an_output_through_a_link_loop_to_a_pipe_or_too_long_is_refused_first(trained, tmp_path):
    # A link loop was replaced by a file (open() refuses it); a link to a FIFO (/dev/stdout
    # into a pipe) failed naming a path that does not exist; a name too long for the file
    # system was found by the rename, once the whole corpus was encoded.
    tok = Tokenizer(*trained, [EOT])
    (tmp_path / "l1").symlink_to(tmp_path / "l2")
    (tmp_path / "l2").symlink_to(tmp_path / "l1")
    os.mkfifo(tmp_path / "fifo")
    (tmp_path / "to_fifo").symlink_to(tmp_path / "fifo")
    before = sorted(os.listdir(tmp_path))
    for name, error in [("l1", "Too many levels of symbolic links"),
                        ("to_fifo", "it leads to no regular file"),
                        ("a" * 300 + ".npy", r"is longer than the \d+ bytes")]:
        with pytest.raises((OSError, ValueError), match=error):
            tok.encode_file(bpe_cffi.sample_path(), tmp_path / name, num_workers=1)
    assert sorted(os.listdir(tmp_path)) == before and (tmp_path / "l1").is_symlink()


def test_missing_output_directory_is_named(trained, tmp_path):
    tok = Tokenizer(*trained, [EOT])
    with pytest.raises(FileNotFoundError, match="no such directory"):
        tok.encode_file(bpe_cffi.sample_path(), tmp_path / "nowhere" / "ids.npy")


def test_bad_output_paths_are_refused_first(trained, tmp_path, monkeypatch):
    # An empty path made the temporary file in the working directory's parent and failed
    # only at the rename, after all the work; so did a directory.
    from bpe_cffi import encode_file
    from bpe_cffi.cli import main
    tok = Tokenizer(*trained, [EOT])
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(encode_file, "plan_file", lambda *a: pytest.fail("work started"))
    with pytest.raises(ValueError, match="the output path is empty"):
        tok.encode_file(bpe_cffi.sample_path(), "")
    for directory in (".", str(tmp_path)):
        with pytest.raises(IsADirectoryError, match="it is a directory"):
            tok.encode_file(bpe_cffi.sample_path(), directory)
    assert os.listdir(tmp_path) == []
    assert not [n for n in os.listdir(tmp_path.parent) if n.endswith(".tmp")]
    (tmp_path / "a_file").write_text("x")
    monkeypatch.setattr("bpe_cffi.cli.count_words_arrays", lambda *a, **k: pytest.fail("work"))
    for out in ("a_file", ""):
        assert main(["train", "--sample", "--vocab-size", "300", "--out", out]) == 1


# ---- outputs never overwrite inputs -------------------------------------------------------

@pytest.mark.parametrize("link", ["same", "symlink", "hard link", "file:// URL"])
def test_encode_file_refuses_its_input_as_output(trained, tmp_path, link):
    # encode_file("in.txt", "in.txt") once replaced the corpus with the ids and returned.
    src = tmp_path / "in.txt"
    src.write_text(TEXT * 100, encoding="utf-8")
    out = src
    if link == "symlink":
        out = tmp_path / "link.txt"
        os.symlink(src, out)
    elif link == "hard link":
        out = tmp_path / "hard.txt"
        os.link(src, out)
    given = src.as_uri() if link == "file:// URL" else src  # read through fsspec
    with pytest.raises(ValueError, match="refusing to overwrite"):
        Tokenizer(*trained, [EOT]).encode_file(given, out)
    assert src.read_text(encoding="utf-8") == TEXT * 100


def test_cli_refuses_to_overwrite_inputs(saved, tmp_path):
    from bpe_cffi.cli import main
    corpus = tmp_path / "merges.txt"  # a corpus that train --out would overwrite
    corpus.write_text(TEXT * 100, encoding="utf-8")
    assert main(["encode", str(corpus), "--tokenizer", str(saved), "--out", str(corpus)]) == 1
    assert main(["train", str(corpus), "--vocab-size", "300", "--out", str(tmp_path),
                 "--quiet"]) == 1
    ids = tmp_path / "ids.npy"
    assert main(["encode", str(corpus), "--tokenizer", str(saved), "--out", str(ids),
                 "--quiet"]) == 0
    before = ids.read_bytes()
    assert main(["decode", str(ids), "--tokenizer", str(saved), "--out", str(ids)]) == 1
    assert main(["encode", str(corpus), "--tokenizer", str(saved),
                 "--out", str(saved / "vocab.json")]) == 1
    assert corpus.read_text(encoding="utf-8") == TEXT * 100
    assert ids.read_bytes() == before
    assert Tokenizer.load(saved).encode(TEXT)


@pytest.mark.parametrize("name", files.FILES)
def test_encode_file_refuses_the_files_its_tokenizer_was_loaded_from(saved, tmp_path, name,
                                                                      monkeypatch):
    # The command line refused them; the method wrote the ids over the tokenizer's file.
    corpus = tmp_path / "corpus.txt"
    corpus.write_text(TEXT * 100, encoding="utf-8")
    before = {other: (saved / other).read_bytes() for other in files.FILES}
    monkeypatch.chdir(tmp_path)
    tok = Tokenizer.load("tok")  # (saved) a relative path, then another working directory
    (tmp_path / "elsewhere").mkdir()
    monkeypatch.chdir(tmp_path / "elsewhere")
    loaded = [tok, copy.copy(tok), pickle.loads(pickle.dumps(tok))]
    if name in ("vocab.json", "merges.txt"):
        loaded.append(Tokenizer.from_files(saved / "vocab.json", saved / "merges.txt"))
    for one in loaded:
        with pytest.raises(ValueError, match=r"is the tokenizer's file .*refusing to overwrite"):
            one.encode_file(corpus, saved / name)
    assert {other: (saved / other).read_bytes() for other in files.FILES} == before
    # A tokenizer made in memory has no such files.
    (tmp_path / "elsewhere" / name).write_text("not the tokenizer's")
    assert Tokenizer(tok.id_to_token, tok.merges).encode_file(corpus, name) > 0
    assert tok.encode_file(corpus, name) > 0  # the same name in another directory


def test_absolute_output_paths_need_no_working_directory(saved, tmp_path, monkeypatch):
    gone = tmp_path / "gone"
    gone.mkdir()
    monkeypatch.chdir(gone)
    gone.rmdir()  # os.getcwd() now fails
    tok = Tokenizer.load(saved)
    tok.save(tmp_path / "again")
    assert Tokenizer.load(tmp_path / "again").encode(TEXT) == tok.encode(TEXT)


# ---- devices and other files that are not regular ------------------------------------------

@pytest.mark.skipif(not os.path.exists("/dev/zero"), reason="no /dev/zero here")
@pytest.mark.parametrize("name", ["tokenizer.json", "vocab.json", "merges.txt",
                                  "tokenizer.tiktoken"])
def test_tokenizer_files_must_be_regular(saved, name):
    # A tokenizer file linked to /dev/zero was read until the kernel killed the process.
    for other in files.FILES:
        if other != name and (name != "merges.txt" or other != "vocab.json"):
            os.unlink(saved / other)
    os.unlink(saved / name)
    os.symlink("/dev/zero", saved / name)
    with pytest.raises(ValueError, match=f"{name}: not a regular file"):
        Tokenizer.load(saved)


@pytest.mark.skipif(not os.path.exists("/dev/zero"), reason="no /dev/zero here")
def test_counts_file_must_be_regular():
    with pytest.raises(ValueError, match="/dev/zero: not a regular file"):
        bpe_cffi.load_counts("/dev/zero")


def test_counts_file_broken_or_inconsistent(tmp_path):
    # A broken zip escaped as zipfile.BadZipFile; offsets that go back gave wrong words.
    path = tmp_path / "counts.npz"
    path.write_bytes(b"PK\x03\x04" + bytes(100))
    with pytest.raises(ValueError, match="counts.npz: not a bpe_cffi word-count file"):
        bpe_cffi.load_counts(path)
    # A zip header whose extra field runs past the end (EOFError, with no message) and an
    # unknown compression method (NotImplementedError) escaped without the file's name.
    bpe_cffi.save_counts({b"ab": 1, b"cd": 3}, path)
    good = path.read_bytes()
    directory = good.find(b"PK\x01\x02")  # the central directory's first entry
    for at, what in [(29, "EOFError"), (directory + 10, "compression method")]:
        path.write_bytes(good[:at] + b"\xff" + good[at + 1:])
        with pytest.raises(ValueError, match=f"counts.npz: not a bpe_cffi word-count file "
                                             f"\\(.*{what}"):
            bpe_cffi.load_counts(path)
    # A word listed twice kept its last count only.
    # A uint64 count past int64 failed later, in training, without naming the file.
    for words, offsets, counts in [(b"abcd", [0, 3, 1, 4], [1, 1, 1]),
                                   (b"abcd", [0, 2, 4], [1, -1]), (b"abab", [0, 2, 4], [1, 2]),
                                   (b"abcd", [0, 2, 4], np.array([1, 2**63], np.uint64)),
                                   # unsigned offsets that go back, whose differences wrap
                                   (b"abcd", np.array([0, 9, 4], np.uint64), [1, 1])]:
        with open(path, "wb") as f:
            np.savez(f, words=np.frombuffer(words, np.uint8), offsets=np.array(offsets),
                     counts=np.asarray(counts), format=np.array(["bpe_cffi word counts 1"]))
        with pytest.raises(ValueError, match="counts.npz: inconsistent word-count file"):
            bpe_cffi.load_counts(path)


def test_save_counts_refuses_arrays_load_counts_would_refuse(tmp_path):
    # Arrays that go back, or list a word twice, were written, and the file refused on reading;
    # a list of (word, count) pairs failed with "not enough values to unpack".
    path = tmp_path / "counts.npz"
    for counts, error in [(None, TypeError), ([(b"ab", 3)], TypeError),
                          ((b"abc", [0, 1], [5]), ValueError),
                          ((b"abcd", [0, 3, 1, 4], [1, 1, 1]), ValueError),
                          ((b"abab", [0, 2, 4], [1, 2]), ValueError),
                          ((b"abcd", [0, 2, 4], [1, -1]), ValueError),
                          ((b"abcd", np.array([0, 9, 4], np.uint64), [1, 1]), ValueError)]:
        with pytest.raises(error, match="counts"):
            bpe_cffi.save_counts(counts, path)
        assert not path.exists()
    bpe_cffi.save_counts((b"abcd", np.array([0, 2, 4]), np.array([1, 3])), path)
    assert bpe_cffi.load_counts(path) == {b"ab": 1, b"cd": 3}
    bpe_cffi.save_counts((np.frombuffer(b"abcd", np.uint8), [0, 2, 4], [1, 3]), path)
    assert bpe_cffi.load_counts(path) == {b"ab": 1, b"cd": 3}
    bpe_cffi.save_counts((b"", [0], []), path)  # none: the empty list is no float array
    assert bpe_cffi.load_counts(path) == {}


# ---- many files to one array ---------------------------------------------------------------

def test_a_file_without_edges_is_planned_once(trained, tmp_path, monkeypatch):
    # One range (no edge to cut at) went to this process, which planned the file again: a
    # search of the whole file at ~0.4 us a byte where the text has no edge ("\n/" for o200k).
    from bpe_cffi import encode_file
    calls = []
    plan = encode_file.plan_file
    monkeypatch.setattr(encode_file, "plan_file", lambda *a: calls.append(a) or plan(*a))
    path = tmp_path / "one_word.txt"
    path.write_text("a" * (3 << 19))  # 1.5 MB, over the smallest range, and no edge
    tok = Tokenizer(*trained, [EOT])
    assert tok.encode_file(path, tmp_path / "ids.npy", num_workers=2) > 0
    assert len(calls) == 1
    assert np.load(tmp_path / "ids.npy").tolist() == tok.encode("a" * (3 << 19))


@pytest.mark.parametrize("workers", [1, 2])
def test_many_files_to_one_array(trained, tmp_path, workers):
    texts = [TEXT * 3, "", "second file\n" * 2000, "🙂 last"]
    paths = []
    for k, text in enumerate(texts):
        paths.append(tmp_path / f"part{k}.txt")
        paths[-1].write_text(text, encoding="utf-8")
    tok = Tokenizer(*trained, [EOT])
    out = tmp_path / "ids.npy"
    n = tok.encode_file(paths, out, num_workers=workers)
    assert np.load(out).tolist() == tok.encode(EOT.join(texts)) and n == len(np.load(out))
    tok.encode_file(str(tmp_path / "part*.txt"), out, num_workers=workers, separator=None)
    assert np.load(out).tolist() == tok.encode("".join(texts))
    tok.encode_file(paths, out, num_workers=workers, separator="\n\n", allowed_special=set())
    assert np.load(out).tolist() == tok.encode("\n\n".join(texts), allowed_special=set())
    # The documents' specials as text, the separator still the special's id: the boundaries
    # stay apart from text that reads <|endoftext|>.
    tok.encode_file(paths, out, num_workers=workers, allowed_special=set())
    eot = tok.encode(EOT)
    want = []
    for k, text in enumerate(texts):
        want += (eot if k else []) + tok.encode(text, allowed_special=set())
    assert np.load(out).tolist() == want
    no_eot = Tokenizer(*trained)  # no <|endoftext|> special: nothing between files by default
    no_eot.encode_file(paths, out, num_workers=workers)
    assert np.load(out).tolist() == no_eot.encode("".join(texts))


@pytest.mark.parametrize("target", [1, 100, 5_000, 1 << 20])
def test_small_files_share_a_job(trained, tmp_path, monkeypatch, target):
    # Plain files smaller than a range go to the pool in runs of about a range's bytes, each
    # file a document of the run: around a large file, after an empty one, with another
    # format between them, the array is that of the texts joined by the separator.
    from bpe_cffi import encode_file
    monkeypatch.setattr(encode_file, "chunk_target", lambda size, workers: target)
    texts = [f"file {k}: " + TEXT[: 37 * k] for k in range(40)]
    texts[7] = ""
    texts[20] = TEXT * 20  # larger than most targets: its own ranges
    paths = []
    for k, text in enumerate(texts):
        paths.append(tmp_path / f"f{k:02d}.txt")
        paths[-1].write_text(text, encoding="utf-8")
    jsonl = tmp_path / "docs.jsonl"
    jsonl.write_text('{"text": "a record"}\n{"text": "another"}\n', encoding="utf-8")
    paths.insert(30, jsonl)
    tok = Tokenizer(*trained, [EOT])
    out = tmp_path / "ids.npy"
    tok.encode_file(paths, out, num_workers=2)
    joined = texts[:30] + ["a record", "another"] + texts[30:]
    assert np.load(out).tolist() == tok.encode(EOT.join(joined))
    jobs = encode_file._jobs([str(p) for p in paths], encode_file.Edges([], None), target,
                             "text", "all", [], str(tmp_path))
    firsts = [job for job in jobs if job[1] == "files" or job[2] == 0]  # of each file
    assert [p for job in firsts for p in ([p for p, _ in job[0]] if job[1] == "files"
                                          else [job[0]])] == [str(p) for p in paths]
    assert any(job[1] == "files" and len(job[0]) > 1 for job in jobs) == (target >= 100)


def test_thread_jobs_reuse_their_buffers(trained, tmp_path, monkeypatch):
    # Ranges on threads are read and encoded in buffers that later jobs take over: ranges
    # whose sizes rise and fall (each cut before a space, a safe edge), ranges so dense in a
    # short special token that their room for ids (one a byte of text, one a special) is
    # more than the buffer holds, and a byte without a token after all that: each range's
    # ids are its own.
    import random
    from bpe_cffi import encode_file
    made = []

    class CountedScratch(encode_file._Scratch):
        def __init__(self):
            super().__init__()
            made.append(self)

    rng = random.Random(7)
    words = ["the", "heaven", "earth", "123", "\U0001f642", "<s><s><s>", "\u00e9t\u00e9"]
    text = " ".join(rng.choice(words) for _ in range(8_000)) + " " + \
        " ".join(["<s><s><s>"] * 2_000) + " " + " ".join(rng.choice(words) for _ in range(2_000))
    data = text.encode()
    ranges, at = [], 0
    for size in [7, 3_000, 40, 9_000, 600, 12_000, 1, 20_000, 300, 5_000] * 10:
        cut = data.find(b" ", at + size)
        if cut < 0:
            break
        ranges.append((at, cut))
        at = cut
    ranges.append((at, len(data)))
    path = tmp_path / "corpus.txt"
    path.write_bytes(data)
    monkeypatch.setattr(encode_file, "_Scratch", CountedScratch)
    monkeypatch.setattr(encode_file, "chunk_target", lambda size, workers: 1_000)
    real_plan = encode_file.plan_file
    monkeypatch.setattr(encode_file, "plan_file", lambda p, edges, target: list(ranges))
    tok = Tokenizer(*trained, [EOT, "<s>"])
    out = tmp_path / "ids.npy"
    tok.encode_file(path, out, num_workers=2)
    assert np.load(out).tolist() == tok.encode(text)
    assert len(ranges) > 15 and 1 <= len(made) <= 2  # a scratch a thread, not a range
    vocab, merges = trained
    no_tab = Tokenizer({i: t for i, t in vocab.items() if t != b"\t"}, merges)
    path.write_text(TEXT * 200 + "\t" + TEXT * 10, encoding="utf-8")
    monkeypatch.setattr(encode_file, "plan_file", real_plan)
    at = len((TEXT * 200).encode())
    with pytest.raises(ValueError, match=f"byte offset {at}: the text holds byte"):
        no_tab.encode_file(path, out, num_workers=2)


def test_only_thread_jobs_take_the_smaller_ranges(trained, tmp_path, monkeypatch):
    # Ranges for threads are cut at most _THREAD_RANGE_BYTES long; one worker (whose ranges
    # the tokenizer's threads share) and the pool keep chunk_target's.
    from bpe_cffi import encode_file
    targets = []
    real_plan = encode_file.plan_file

    def plan(path, edges, target):
        targets.append(target)
        return real_plan(path, edges, target)

    monkeypatch.setattr(encode_file, "plan_file", plan)
    monkeypatch.setattr(encode_file, "chunk_target", lambda size, workers: 10_000)
    monkeypatch.setattr(encode_file, "_THREAD_RANGE_BYTES", 3_000)
    path = tmp_path / "corpus.txt"
    path.write_text(TEXT * 500, encoding="utf-8")
    out = tmp_path / "ids.npy"
    for pattern, workers, want in (("gpt2", 2, 3_000), ("gpt2", 1, 10_000),
                                   (r"\S+|\s+", 2, 10_000)):
        tok = Tokenizer(*trained, [EOT], pattern)
        targets.clear()
        tok.encode_file(path, out, num_workers=workers)
        assert targets == [want]
        assert np.load(out).tolist() == tok.encode(TEXT * 500)


def test_encode_here_copies_its_ids_out_of_the_scratch(trained):
    # A caller's next call reuses the scratch: the ids returned are not in it, even as int32.
    tok = Tokenizer(*trained, [EOT])
    encoder = tok._encoder_for("all")
    scratch = np.empty(10_000, np.int32)
    first = encoder.encode_here(TEXT.encode(), np.int32, scratch)
    kept = first.tolist()
    encoder.encode_here(("other words " * 50).encode(), np.int32, scratch)
    assert first.tolist() == kept == tok.encode(TEXT)
    short = np.empty(3, np.int32)  # too short: a new array is used, the scratch untouched
    short[:] = -7
    assert encoder.encode_here(TEXT.encode(), np.uint16, short).tolist() == kept
    assert short.tolist() == [-7, -7, -7]


def test_output_is_written_back_as_it_comes(trained, tmp_path, monkeypatch):
    # Every _WRITE_BACK_BYTES of output, the kernel is asked to start writing it to the
    # disk: the ranges asked for follow each other from the header's end, and the file is
    # the same as without.
    from bpe_cffi import encode_file
    if not hasattr(os, "posix_fadvise"):
        pytest.skip("no posix_fadvise here")
    asked = []
    real = os.posix_fadvise

    def fadvise(fd, offset, length, advice):
        asked.append((offset, length, advice))
        return real(fd, offset, length, advice)

    monkeypatch.setattr(os, "posix_fadvise", fadvise)
    monkeypatch.setattr(encode_file, "_WRITE_BACK_BYTES", 1_000)
    monkeypatch.setattr(encode_file, "chunk_target", lambda size, workers: 2_000)
    path = tmp_path / "corpus.txt"
    path.write_text(TEXT * 400, encoding="utf-8")
    tok = Tokenizer(*trained, [EOT])
    out = tmp_path / "ids.npy"
    for workers in (1, 2):
        asked.clear()
        tok.encode_file([path, path], out, num_workers=workers)
        ids = np.load(out)
        assert ids.tolist() == tok.encode(TEXT * 400 + EOT + TEXT * 400)
        assert len(asked) > 5 and all(advice == os.POSIX_FADV_DONTNEED for *_, advice in asked)
        assert asked[0][0] == 128  # the header's end
        assert all(a + n == b for (a, n, _), (b, _, _) in zip(asked, asked[1:]))
        assert 0 <= os.path.getsize(out) - (asked[-1][0] + asked[-1][1]) < 1_000 + 2_000 * 2


def test_cli_encodes_many_files(saved, tmp_path):
    from bpe_cffi.cli import main
    for k in range(3):
        (tmp_path / f"doc{k}.txt").write_text(f"document {k}\n" * 100, encoding="utf-8")
    out = tmp_path / "ids.npy"
    assert main(["encode", "--tokenizer", str(saved), str(tmp_path / "doc*.txt"), "--out",
                 str(out), "--quiet"]) == 0
    tok = Tokenizer.load(saved)
    want = EOT.join(f"document {k}\n" * 100 for k in range(3))
    assert np.load(out).tolist() == tok.encode(want)
    assert main(["encode", "--tokenizer", str(saved), str(tmp_path / "doc0.txt"),
                 str(tmp_path / "doc1.txt"), "--out", str(out), "--no-separator",
                 "--quiet"]) == 0
    assert np.load(out).tolist() == tok.encode("document 0\n" * 100 + "document 1\n" * 100)


# ---- settings of tokenizer.json that change ids, and tiktoken's whole-token rule ----

def _hostile_lines() -> list[str]:
    sample = open(bpe_cffi.sample_path(), encoding="utf-8").read()[:60_000]
    return sample.splitlines() + [TEXT, "Hello  world 1234567 \u00e9\u0301 \r\n x\u3000y !?  ",
                                  " ab abc abcd  tab  the then there "]


@pytest.mark.parametrize("case, message", [
    ("add_prefix_space", "add_prefix_space"),
    ("normalizer", "normalizer is"),
    ("dropout", "model.dropout is 0.1"),
    ("end_of_word_suffix", "model.end_of_word_suffix"),
    ("continuing_subword_prefix", "model.continuing_subword_prefix"),
    ("byte_fallback", "model.byte_fallback"),
    ("ignore_merges not a bool", "model.ignore_merges is 'yes'"),
    ("added lstrip", "has lstrip set"),
    ("split removed", "behavior 'Removed'"),
    ("split inverted", "invert True"),
    ("three steps", "unsupported pre_tokenizer"),
    ("byte level splits after split", "unsupported pre_tokenizer"),
])
def test_tokenizer_json_settings_that_change_ids_are_refused(trained, tmp_path, case, message):
    # tokenizers applies each of these; reading the file without them gave other ids than
    # tokenizers', without a word.
    vocab, merges = trained
    pattern = "cl100k" if case in ("split removed", "split inverted", "three steps",
                                   "byte level splits after split") else "gpt2"
    bpe_cffi.save(vocab, merges, tmp_path / "tok", [EOT], pattern)

    def edit(doc):
        model, pre = doc["model"], doc["pre_tokenizer"]
        if case == "add_prefix_space":
            pre["add_prefix_space"] = True
        elif case == "normalizer":
            doc["normalizer"] = {"type": "Lowercase"}
        elif case in ("dropout", "end_of_word_suffix", "continuing_subword_prefix",
                      "byte_fallback"):
            model[case] = {"dropout": 0.1, "end_of_word_suffix": "</w>",
                           "continuing_subword_prefix": "##", "byte_fallback": True}[case]
        elif case == "ignore_merges not a bool":
            model["ignore_merges"] = "yes"
        elif case == "added lstrip":
            doc["added_tokens"][0]["lstrip"] = True
        elif case == "split removed":
            pre["pretokenizers"][0]["behavior"] = "Removed"
        elif case == "split inverted":
            pre["pretokenizers"][0]["invert"] = True
        elif case == "three steps":
            pre["pretokenizers"].insert(1, {"type": "Digits", "individual_digits": True})
        else:
            pre["pretokenizers"][1]["use_regex"] = True
    _edited(tmp_path / "tok", edit)
    with pytest.raises(ValueError, match=f"tokenizer.json: .*{message}"):
        Tokenizer.load(tmp_path / "tok")


def _added(content: str, i: int, special: bool = True) -> dict:
    return {"id": i, "content": content, "single_word": False, "lstrip": False,
            "rstrip": False, "normalized": False, "special": special}


def test_an_added_token_listed_twice_is_refused(saved):
    # tokenizers keeps the first <a> and numbers <b> as if the second were not there, where
    # bpe_cffi took the file's ids: "<a><b>" gave [2000, 2001] against ours [2000, 2002].
    import tokenizers
    n = len(Tokenizer.load(saved))

    def edit(doc):
        doc["added_tokens"] += [_added("<a>", n), _added("<a>", n + 1), _added("<b>", n + 2)]
    _edited(saved, edit)
    hf = tokenizers.Tokenizer.from_file(str(saved / "tokenizer.json"))
    assert hf.encode("<a><b>", add_special_tokens=False).ids == [n, n + 1]  # not the file's
    with pytest.raises(ValueError, match="tokenizer.json: added token '<a>' is listed twice"):
        Tokenizer.load(saved)


_BYTE_LEVEL = {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": True,
               "use_regex": True}


@pytest.mark.parametrize("decoder, refused", [
    ({"type": "Sequence", "decoders": [_BYTE_LEVEL, {"type": "Strip", "content": " ",
                                                     "start": 1, "stop": 0}]},
     r"decoder Sequence\[ByteLevel.*Strip\]"),
    ({"type": "Metaspace", "replacement": "\u2581", "prepend_scheme": "always",
      "split": True}, "decoder Metaspace"),
    ({"type": "Sequence", "decoders": [_BYTE_LEVEL]}, None),
    (dict(_BYTE_LEVEL, add_prefix_space=False, trim_offsets=False, use_regex=False), None),
])
def test_a_decoder_other_than_byte_level_is_refused(saved, decoder, refused):
    # The decoder was never read: with these, tokenizers decodes " hello" to "hello", or
    # U+2581 to a space, where bpe_cffi gives the tokens' bytes.
    import tokenizers
    _edited(saved, lambda doc: doc.__setitem__("decoder", decoder))
    hf = tokenizers.Tokenizer.from_file(str(saved / "tokenizer.json"))
    text = " hello \u2581world"
    if refused:
        assert hf.decode(hf.encode(text).ids) != text
        with pytest.raises(ValueError, match=f"tokenizer.json: {refused} would decode ids"):
            Tokenizer.load(saved)
    else:
        tok = Tokenizer.load(saved)
        assert tok.decode(tok.encode(text)) == hf.decode(hf.encode(text).ids) == text


def test_a_file_without_a_decoder_loads_with_a_warning(saved):
    import tokenizers
    _edited(saved, lambda doc: doc.__setitem__("decoder", None))
    hf = tokenizers.Tokenizer.from_file(str(saved / "tokenizer.json"))
    for path in (saved, saved / "tokenizer.json"):
        with pytest.warns(UserWarning, match="tokenizer.json: it has no decoder") as warned:
            tok = Tokenizer.load(path)
        assert warned[0].filename == __file__  # the caller's line, not the package's
    assert tok.encode(TEXT) == hf.encode(TEXT).ids
    assert hf.decode(hf.encode(TEXT).ids) != TEXT  # tokens in GPT-2's characters, spaced
    assert tok.decode(tok.encode(TEXT)) == TEXT


def test_added_tokens_decode_as_their_text(saved):
    # tokenizers' ByteLevel decoder decodes a token written only in GPT-2's byte characters as
    # the bytes they stand for, added tokens too ("\u0120hi" as " hi", the "\u00f1" of
    # "<|a\u00f1o|>" as the byte 0xF1); a character that is none (a space, U+2581, CJK) makes it
    # decode the token as its text, and printable ASCII is its own byte character. bpe_cffi
    # decodes every added token as its text (docs/spec.md 3.2): the ids agree, and so do the
    # decodes but for the first kind.
    import tokenizers
    n = len(Tokenizer.load(saved))
    as_bytes = ["<|a\u00f1o|>", "\u0120hi", "\u00ab\u00bb"]
    as_text = ["<|x y|>", "\u2581\u00f1", "\u00f1\u65e5", "<|tool|>"]
    _edited(saved, lambda doc: doc["added_tokens"].extend(
        _added(c, n + k, special=False) for k, c in enumerate(as_bytes + as_text)))
    hf = tokenizers.Tokenizer.from_file(str(saved / "tokenizer.json"))
    tok = Tokenizer.load(saved)
    for k, content in enumerate(as_bytes):
        assert tok.encode(content) == hf.encode(content).ids == [n + k]
        assert tok.decode([n + k]) == content
        assert hf.decode([n + k], skip_special_tokens=False) != content
    text = "a" + "b".join(as_text) + " c"
    assert tok.encode(text) == hf.encode(text).ids
    assert tok.decode(tok.encode(text)) == hf.decode(hf.encode(text).ids,
                                                     skip_special_tokens=False) == text


def test_an_unknown_token_with_a_missing_byte_is_refused(tmp_path):
    # tokenizers encodes a byte that has no token as unk_token; bpe_cffi refuses text holding
    # it. Loaded, the file gave tokenizers' ids until such a byte came, then an error.
    import tokenizers
    vocab = {i: bytes([b]) for i, b in enumerate(b for b in range(256) if b != ord("Q"))}
    Tokenizer(vocab, [], [EOT]).save(tmp_path)

    def edit(doc):
        doc["model"]["unk_token"] = "A"
    _edited(tmp_path, edit)
    hf = tokenizers.Tokenizer.from_file(str(tmp_path / "tokenizer.json"))
    a = hf.token_to_id("A")
    assert hf.encode("aQb").ids == [hf.token_to_id("a"), a, hf.token_to_id("b")]
    with pytest.raises(ValueError, match="model.unk_token is 'A' and no token is the byte"
                                         r"\(s\) 0x51: tokenizers encodes"):
        Tokenizer.load(tmp_path)
    _edited(tmp_path, lambda doc: doc["model"].__setitem__("unk_token", None))
    tok = Tokenizer.load(tmp_path)  # no unk_token: the text is refused when encoded
    with pytest.raises(ValueError, match="0x51"):
        tok.encode("aQb")
    Tokenizer({i: bytes([i]) for i in range(256)}, [], [EOT]).save(tmp_path / "all")
    _edited(tmp_path / "all", edit)  # every byte a token: unk_token is never used
    hf = tokenizers.Tokenizer.from_file(str(tmp_path / "all" / "tokenizer.json"))
    assert Tokenizer.load(tmp_path / "all").encode("aQb") == hf.encode("aQb").ids == list(b"aQb")


@pytest.mark.parametrize("pre, named", [
    (None, "pre_tokenizer None"),
    ({"type": "Metaspace", "replacement": "\u2581"}, "pre_tokenizer Metaspace"),
    ({"type": "Sequence", "pretokenizers": [
        {"type": "Split", "pattern": {"String": " "}, "behavior": "Isolated"},
        {"type": "ByteLevel", "add_prefix_space": False, "use_regex": False}]},
     r"Sequence\[Split\(String\), ByteLevel\(use_regex=False\)\]"),
])
def test_an_unsupported_pre_tokenizer_is_named(saved, pre, named):
    _edited(saved, lambda doc: doc.__setitem__("pre_tokenizer", pre))
    with pytest.raises(ValueError, match=f"unsupported {named}" if pre is None else
                       f"unsupported pre_tokenizer {named.split('pre_tokenizer ')[-1]}"):
        Tokenizer.load(saved)


def test_a_model_that_is_no_object_is_named(saved):
    # It escaped as "AttributeError: 'NoneType' object has no attribute 'get'".
    _edited(saved, lambda doc: doc.__setitem__("model", None))
    with pytest.raises(ValueError, match="tokenizer.json: model is None, not a BPE model"):
        Tokenizer.load(saved)


@pytest.mark.parametrize("pattern", ["gpt2", "cl100k"])
def test_tokenizer_json_lists_that_change_nothing_are_read(trained, tmp_path, pattern):
    # An empty list of normalizers, and a pre-tokenizer in a Sequence of one, do what none and
    # the one do in tokenizers: the file is read (it was refused) and gives tokenizers' ids.
    import tokenizers
    vocab, merges = trained
    bpe_cffi.save(vocab, merges, tmp_path / "tok", [EOT], pattern)

    def edit(doc):
        doc["normalizer"] = {"type": "Sequence", "normalizers": []}
        doc["pre_tokenizer"] = {"type": "Sequence", "pretokenizers": [doc["pre_tokenizer"]]}
    _edited(tmp_path / "tok", edit)
    hf = tokenizers.Tokenizer.from_file(str(tmp_path / "tok" / "tokenizer.json"))
    ours = Tokenizer.load(tmp_path / "tok")
    assert ours.pretokenizer.name == pattern
    for line in _hostile_lines()[-40:]:
        assert ours.encode(line) == hf.encode(line).ids


def test_added_tokens_that_are_not_special_are_taken_out_as_tokenizers_does(saved):
    import tokenizers
    vocab_size = len(json.loads((saved / "tokenizer.json").read_text())["model"]["vocab"]) + 1

    def edit(doc):
        doc["added_tokens"].append({"id": vocab_size, "content": "<tool>", "single_word": False,
                                    "lstrip": False, "rstrip": False, "normalized": True,
                                    "special": False})
    _edited(saved, edit)
    hf = tokenizers.Tokenizer.from_file(str(saved / "tokenizer.json"))
    ours = Tokenizer.load(saved)
    for text in ["use <tool> here", "<tool><tool>x", TEXT + "<tool>"]:
        assert ours.encode(text) == hf.encode(text).ids


def _unreachable_vocab(trained):
    """The trained vocabulary (its special token left for save to add last, where tokenizers
    numbers it alike) with tokens no merge makes: ' xyzzy', and one of 151 bytes."""
    vocab, merges = trained
    vocab = {i: t for i, t in vocab.items() if t != EOT.encode()}
    n = max(vocab) + 1
    vocab[n], vocab[n + 1] = b" xyzzy", b" " + b"q" * 150  # one pre-token, past 128 bytes
    return vocab, merges


@pytest.mark.parametrize("ignore_merges", [False, True])
def test_ignore_merges_gives_tokenizers_ids(trained, tmp_path, ignore_merges):
    import tokenizers
    vocab, merges = _unreachable_vocab(trained)
    bpe_cffi.save(vocab, merges, tmp_path, [EOT], ignore_merges=ignore_merges)
    assert json.loads((tmp_path / "tokenizer.json").read_text())["model"]["ignore_merges"] \
        is ignore_merges
    hf = tokenizers.Tokenizer.from_file(str(tmp_path / "tokenizer.json"))
    ours = Tokenizer.load(tmp_path)
    assert ours.ignore_merges is ignore_merges
    long_token = vocab[max(vocab)].decode()
    texts = _hostile_lines() + [" xyzzy", "a xyzzy, xyzzy", long_token, " " + long_token]
    for text in texts:
        assert ours.encode(text) == hf.encode(text).ids, text
    if ignore_merges:
        assert ours.encode(" xyzzy") == [ours.token_to_id[b" xyzzy"]]
        assert ours.encode(long_token) == [ours.token_to_id[long_token.encode()]]
    big = "\n".join(texts) * 20  # long enough for the cache and units paths
    assert ours.encode(big) == hf.encode(big).ids
    assert pickle.loads(pickle.dumps(ours)).ignore_merges is ignore_merges


def _ranks_file(path, ranks: dict[bytes, int]) -> None:
    with open(path, "w") as f:
        for token, rank in sorted(ranks.items(), key=lambda x: x[1]):
            f.write(f"{base64.b64encode(token).decode()} {rank}\n")


def test_tiktoken_rank_files_give_tiktokens_ids(saved, tmp_path):
    # Ranks that BPE did not learn: a token no merge reaches, and every seventh token of a
    # learned table left out (so tokens are made of parts ranked after them).
    import tiktoken
    learned = files.load_tiktoken(saved / "tokenizer.tiktoken")
    cases = {
        "unreachable": {**{bytes([b]): b for b in range(256)}, b"abc": 256, b" ab": 257},
        "every seventh out": {t: r for r, t in learned.items() if r < 256 or r % 7},
    }
    for name, ranks in cases.items():
        d = tmp_path / name.replace(" ", "_")
        d.mkdir()
        _ranks_file(d / "tokenizer.tiktoken", ranks)
        ours = Tokenizer.load(d)
        theirs = tiktoken.Encoding(name, pat_str=ours.pattern, mergeable_ranks=ranks,
                                   special_tokens={})
        texts = _hostile_lines() + ["abc", "xabc abcabc", " ab abc"]
        for text in texts:
            assert ours.encode(text) == theirs.encode(text), (name, text)
        big = "\n".join(texts) * 5
        assert ours.encode(big) == theirs.encode(big), name


def test_save_keeps_a_special_token_that_is_an_ordinary_token(tmp_path):
    # A special token whose bytes are already a token keeps that token's id (spec 4): the
    # model's vocabulary and the rank file must keep the token, which the merges use.
    import tokenizers
    v = {i: bytes([i]) for i in range(256)}
    v[256], v[257] = b"ab", b" ab"
    merges = [(b"a", b"b"), (b" ", b"ab")]
    bpe_cffi.save(v, merges, tmp_path, ["ab", "a", EOT])
    hf = tokenizers.Tokenizer.from_file(str(tmp_path / "tokenizer.json"))
    ours = Tokenizer.load(tmp_path)
    assert ours.special_ids == {"ab": 256, "a": 97, EOT: 258}
    for text in ["x ab ab", "aab b", f"a{EOT} ab"]:
        assert ours.encode(text) == hf.encode(text).ids
    ranks = files.load_tiktoken(tmp_path / "tokenizer.tiktoken")
    assert ranks[256] == b"ab" and ranks[97] == b"a" and 258 not in ranks
    Tokenizer.load(_only(tmp_path, "tokenizer.tiktoken", tmp_path))


def test_a_failed_save_leaves_the_directory_as_it_was(trained, tmp_path, monkeypatch):
    # Each file was atomic, but a failure after the first two (a full disk) left vocab.json
    # and merges.txt new beside an old tokenizer.json and rank file.
    vocab, merges = trained
    bpe_cffi.save(vocab, merges, tmp_path, [EOT])
    before = {name: (tmp_path / name).read_bytes() for name in files.FILES}

    def full_disk(*args):
        raise OSError(28, "No space left on device")
    monkeypatch.setattr(files, "_write_tiktoken", full_disk)
    small = {i: t for i, t in vocab.items() if i < 300}
    with pytest.raises(OSError, match="No space left"):
        bpe_cffi.save(small, merges[:44], tmp_path, [EOT])
    assert {name: (tmp_path / name).read_bytes() for name in files.FILES} == before
    assert sorted(os.listdir(tmp_path)) == sorted(files.FILES)  # no temporary file left


def test_save_writes_a_token_listed_twice_once(tmp_path):
    # Every format maps a token's bytes to one id: the lowest, which encoding gives (spec
    # 2.4). vocab.json took the last, and the rank file listed both, which no loader takes.
    import tokenizers
    v = {i: bytes([i]) for i in range(256)}
    v[256], v[257], v[258] = b"ab", b"cd", b"ab"
    merges = [(b"a", b"b"), (b"c", b"d")]
    tok = Tokenizer(v, merges, [EOT])
    assert tok.encode("abcd ab") == [256, 257, 32, 256]
    tok.save(tmp_path)
    ranks = files.load_tiktoken(tmp_path / "tokenizer.tiktoken")
    assert ranks[256] == b"ab" and 258 not in ranks
    gpt2 = _only(tmp_path, "vocab.json", tmp_path)
    (tmp_path / gpt2 / "merges.txt").write_bytes((tmp_path / "merges.txt").read_bytes())
    for directory in (tmp_path, _only(tmp_path, "tokenizer.tiktoken", tmp_path), gpt2):
        assert Tokenizer.load(directory).encode("abcd ab") == [256, 257, 32, 256]
    hf = tokenizers.Tokenizer.from_file(str(tmp_path / "tokenizer.json"))
    assert hf.encode("abcd ab").ids == [256, 257, 32, 256]
    with pytest.raises(ValueError, match="token 259 of the vocabulary has no bytes"):
        bpe_cffi.save({**v, 259: b""}, merges, tmp_path / "empty")


def test_training_gives_a_special_token_that_is_a_token_no_second_id(tmp_path):
    # spec 1.1: the special "a" keeps the byte's id, so every file can hold the vocabulary;
    # it was a second id, which tokenizers then used for every "a" of the text.
    import tokenizers
    vocab, merges = bpe_cffi.train_bpe(bpe_cffi.sample_path(), 300, ["a", EOT])
    assert sorted(t for t in vocab.values()).count(b"a") == 1
    assert max(vocab) == 298 and vocab[298] == EOT.encode()
    tok = Tokenizer(vocab, merges, ["a", EOT])
    assert tok.special_ids == {"a": 97, EOT: 298}
    tok.save(tmp_path)
    hf = tokenizers.Tokenizer.from_file(str(tmp_path / "tokenizer.json"))
    for text in ["banana", f"a{EOT}b a"]:
        assert hf.encode(text).ids == tok.encode(text) == Tokenizer.load(tmp_path).encode(text)


def test_save_into_a_symbolic_link_to_nothing_says_so(tmp_path, trained):
    # os.makedirs raised "File exists" for it.
    os.symlink(tmp_path / "nowhere" / "x", tmp_path / "out")
    with pytest.raises(FileNotFoundError, match="out'?: it is a symbolic link to nothing"):
        bpe_cffi.save(*trained, tmp_path / "out")
    assert sorted(os.listdir(tmp_path)) == ["out"]


def test_an_output_that_is_a_symlink_is_written_through(tmp_path):
    target = tmp_path / "real.npy"
    target.write_bytes(b"old")
    link = tmp_path / "link.npy"
    link.symlink_to(target)
    with files.atomic_write(str(link), "wb") as f:
        f.write(b"new")
    assert link.is_symlink() and target.read_bytes() == b"new"


def test_outputs_below_a_link_and_dot_dot_go_where_the_system_reads_them(
        saved, tmp_path, monkeypatch):
    # "link/.." is the parent of the link's target, not the link's own directory: the
    # directory was made there while its files were looked for beside the link.
    (tmp_path / "real" / "sub").mkdir(parents=True)
    (tmp_path / "link").symlink_to(tmp_path / "real" / "sub")
    (tmp_path / "notes.txt").write_text("hello world " * 100)
    monkeypatch.chdir(tmp_path)
    tok = Tokenizer.load(saved)
    tok.save("link/../saved_here")
    assert sorted(os.listdir(tmp_path / "real" / "saved_here")) == sorted(files.FILES)
    assert Tokenizer.load("link/../saved_here").encode("hello") == tok.encode("hello")
    for workers in (1, 2):
        tok.encode_file("notes.txt", "link/../ids.npy", num_workers=workers)
        assert np.load(tmp_path / "real" / "ids.npy").tolist() == tok.encode("hello world " * 100)
    from bpe_cffi.cli import main
    assert main(["train", "notes.txt", "--vocab-size", "300", "--out", "link/../cli"]) == 0
    assert sorted(os.listdir(tmp_path / "real" / "cli")) == sorted(files.FILES)
    assert not (tmp_path / "saved_here").exists() and not (tmp_path / "cli").exists()


def test_outputs_that_are_one_file_are_refused_before_anything_is_written(saved, tmp_path,
                                                                        capsys):
    # vocab.json a link to merges.txt: both were written, the merges over the vocabulary.
    out = tmp_path / "out"
    out.mkdir()
    (out / "merges.txt").write_text("old")
    (out / "vocab.json").symlink_to("merges.txt")
    tok = Tokenizer.load(saved)
    with pytest.raises(ValueError, match=r"the outputs .*vocab.json.* and .*merges.txt.* are "
                                         "one file"):
        tok.save(out)
    assert (out / "merges.txt").read_text() == "old"
    assert sorted(os.listdir(out)) == ["merges.txt", "vocab.json"]
    # The command line refuses it before training.
    from bpe_cffi.cli import main
    assert main(["train", "--sample", "--vocab-size", "300", "--out", str(out)]) == 1
    assert "are one file" in capsys.readouterr().err


def test_inputs_of_the_wrong_type_say_so(tmp_path):
    for bad, message in ((5, "not int"), (3.5, "not float"), ([1], "must be a str or path-like")):
        with pytest.raises(TypeError, match=message):
            bpe_cffi.count_words(bad)
    np.save(tmp_path / "ids.npy", np.arange(5))
    with pytest.raises(ValueError, match="not an .npz archive"):
        bpe_cffi.load_counts(tmp_path / "ids.npy")


@pytest.mark.parametrize("case, where, message", [
    ("a merge naming no token", "tokenizer.json", "merge 1 names the token b'(zz|qq)'"),
    ("a bad Split regex", "tokenizer.json", "invalid pre-tokenization pattern"),
    # The regex module parses nested groups by recursion: a RecursionError, without the file.
    ("a Split regex of 400 nested groups", "tokenizer.json", "nests its groups too deeply"),
    ("an id of 5000 digits", "tokenizer.json", "digits"),
    ("a merges.txt line naming no token", "merges.txt:6", "merge 4 names the token b'(zz|qq)'"),
])
def test_errors_about_a_files_contents_name_the_file(saved, case, where, message):
    if case == "a merges.txt line naming no token":
        (saved / "tokenizer.json").unlink()
        lines = (saved / "merges.txt").read_text(encoding="utf-8").split("\n")
        lines[5] = "zz qq"
        (saved / "merges.txt").write_text("\n".join(lines), encoding="utf-8")
    elif case == "an id of 5000 digits":
        path = saved / "tokenizer.json"
        path.write_text(path.read_text(encoding="utf-8").replace(
            '"id": 1499', '"id": ' + "9" * 5000, 1), encoding="utf-8")
    else:
        def edit(doc):
            if case == "a merge naming no token":
                doc["model"]["merges"][1] = "zz qq"
            else:
                bad = "((" if case == "a bad Split regex" else "(" * 400 + ")" * 400 + "|."
                doc["pre_tokenizer"] = {"type": "Sequence", "pretokenizers": [
                    {"type": "Split", "pattern": {"Regex": bad}, "behavior": "Isolated",
                     "invert": False},
                    {"type": "ByteLevel", "add_prefix_space": False, "use_regex": False}]}
        _edited(saved, edit)
    with pytest.raises(ValueError, match=f"{where}: .*{message}"):
        Tokenizer.load(saved)


def test_a_broken_link_to_tokenizer_json_is_an_error(saved):
    # It read the vocab.json beside it instead: no specials, GPT-2's pattern, in silence.
    (saved / "tokenizer.json").unlink()
    (saved / "tokenizer.json").symlink_to(saved / "elsewhere.json")
    with pytest.raises(FileNotFoundError, match="tokenizer.json"):
        Tokenizer.load(saved)


def _has_border(token: bytes) -> bool:
    """Whether a proper prefix of token is also its suffix (then two of its splits into two
    tokens can overlap at once: the one case where spec 3.3 and tiktoken differ)."""
    return any(token[:k] == token[-k:] for k in range(1, len(token)))


@st.composite
def rank_tables_and_texts(draw):
    """A tiktoken rank table that BPE did not learn: the 256 bytes, then tokens drawn from a
    few letters at random ranks (some made of two tokens ranked after them, some of no two
    tokens at all); and a text made of its tokens, letters and spaces."""
    letters = b"abc "
    tokens = draw(st.lists(st.binary(min_size=2, max_size=5).map(
        lambda b: bytes(letters[x % len(letters)] for x in b)), max_size=12, unique=True))
    tokens = [t for t in tokens if not _has_border(t)]
    order = draw(st.permutations(tokens))
    ranks = {bytes([b]): b for b in range(256)}
    ranks.update({t: 256 + k for k, t in enumerate(order)})
    pieces = [t.decode() for t in tokens] + ["a", "b", "c", " ", "\n", "d"]
    text = "".join(draw(st.lists(st.sampled_from(pieces), max_size=30)))
    return ranks, text


def reference_merges_from_ranks(vocab):
    """Every split of a token into two tokens, by (token's rank, left's, right's, cut): the
    rule of spec 3.3 with dict lookups."""
    ranks = {t: i for i, t in vocab.items()}
    found = sorted((r, ranks[t[:k]], ranks[t[k:]], k) for r, t in vocab.items()
                   for k in range(1, len(t)) if t[:k] in ranks and t[k:] in ranks)
    return [(vocab[r][:k], vocab[r][k:]) for r, _, _, k in found]


@given(parts=st.lists(st.binary(min_size=1, max_size=25).map(
           lambda b: bytes(b"ab\xff"[x % 3] for x in b)), min_size=1, max_size=30),
       data=st.data())
@settings(max_examples=300)
def test_merges_from_ranks_are_every_split_into_two_tokens(parts, data):
    # Tokens joined from others, so that they split, some past 16 bytes (the word table
    # keeps the first 16 in its slot); ranks scattered and listed out of order.
    pairs = data.draw(st.lists(st.tuples(st.integers(0, 99), st.integers(0, 99)), max_size=40))
    tokens = list(parts)
    for i, j in pairs:
        tokens.append(tokens[i % len(tokens)] + tokens[j % len(tokens)])
    tokens = list(dict.fromkeys(tokens))
    ranks = data.draw(st.lists(st.integers(0, 2**31 - 1), min_size=len(tokens),
                               max_size=len(tokens), unique=True))
    vocab = dict(zip(ranks, tokens))
    got = merges_from_ranks(vocab)
    assert got.pairs() == reference_merges_from_ranks(vocab)
    assert len(got) == len(got.pairs())


@given(table=rank_tables_and_texts())
@settings(max_examples=300, deadline=None)
def test_rank_table_gives_tiktokens_ids(table):
    # A rank table loads with every split of a token into two tokens as a merge, and
    # tiktoken's whole-token rule (spec 3.3); tiktoken is the oracle.
    import tiktoken
    ranks, text = table
    vocab = {r: t for t, r in ranks.items()}
    ours = Tokenizer(vocab, merges_from_ranks(vocab), ignore_merges=True)
    theirs = tiktoken.Encoding("hyp", pat_str=ours.pattern, mergeable_ranks=ranks,
                               special_tokens={})
    assert ours.encode(text) == theirs.encode(text)
    assert ours.encode(text * 3000) == theirs.encode(text * 3000)  # the cache's path too


@st.composite
def merges_and_texts(draw):
    """A vocabulary of the 256 bytes, merges that each join two tokens into one (in any
    order, not as BPE would learn them: a token's bytes may merge into other tokens), tokens
    no merge makes, and a text made of them."""
    tokens = [bytes([b]) for b in b"abc "]
    merges = []
    for _ in range(draw(st.integers(0, 14))):
        a, b = draw(st.sampled_from(tokens)), draw(st.sampled_from(tokens))
        if a + b not in tokens and len(a + b) <= 6:
            merges.append((a, b))
            tokens.append(a + b)
    loose = draw(st.lists(st.sampled_from(["abc", "cab", " ca", "bb", "abca"]), max_size=3,
                          unique=True))
    vocab = {b: bytes([b]) for b in range(256)}
    for t in [t for t in tokens if len(t) > 1] + [t.encode() for t in loose]:
        if t not in vocab.values():
            vocab[len(vocab)] = t
    pieces = [t.decode() for t in list(vocab.values())[256:]] + ["a", "b", "c", " ", "\n", "d"]
    text = "".join(draw(st.lists(st.sampled_from(pieces), max_size=30)))
    return vocab, merges, text


@given(case=merges_and_texts(), ignore_merges=st.booleans())
@settings(max_examples=200, deadline=None)
def test_merges_with_and_without_ignore_merges_give_tokenizers_ids(case, ignore_merges):
    # tokenizers' BPE model with the same vocabulary, merges and ignore_merges is the oracle.
    import tokenizers
    from tokenizers import models, pre_tokenizers
    vocab, merges, text = case
    to_str = files.token_to_str
    hf = tokenizers.Tokenizer(models.BPE(
        vocab={to_str(t): i for i, t in vocab.items()},
        merges=[(to_str(a), to_str(b)) for a, b in merges], ignore_merges=ignore_merges))
    hf.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
    ours = Tokenizer(vocab, merges, ignore_merges=ignore_merges)
    assert ours.encode(text) == hf.encode(text).ids
    assert ours.encode(text * 3000) == hf.encode(text * 3000).ids


def test_load_takes_the_pattern_and_specials_the_files_do_not_hold(trained, tmp_path):
    # vocab.json + merges.txt and a rank file hold no pattern and no special token: they were
    # read with GPT-2's pattern and none, with no way to say otherwise.
    vocab, merges = trained
    bpe_cffi.save(vocab, merges, tmp_path / "full", [EOT], "o200k")
    want = Tokenizer.load(tmp_path / "full")
    text = TEXT + " Don't STOP 12345 \u00c9t\u00e9\n\n/x"
    gpt2 = _only(tmp_path / "full", "vocab.json", tmp_path)
    (tmp_path / gpt2 / "merges.txt").write_bytes((tmp_path / "full" / "merges.txt").read_bytes())
    for directory in (gpt2, _only(tmp_path / "full", "tokenizer.tiktoken", tmp_path)):
        got = Tokenizer.load(directory, pattern="o200k", special_tokens=[EOT])
        assert got.pattern == want.pattern and got.special_ids == want.special_ids
        assert got.encode(text) == want.encode(text)
        assert Tokenizer.load(directory).pattern == bpe_cffi.GPT2_PATTERN
    with pytest.raises(ValueError, match="holds its own pattern and special tokens"):
        Tokenizer.load(tmp_path / "full", pattern="o200k")
    with pytest.raises(ValueError, match="did you mean 'o200k'"):
        Tokenizer.load(gpt2, pattern="O200K")


def _hf_trained(tmp_path, special: str):
    """A tokenizer.json written by Hugging Face's own trainer, which puts its special tokens at
    the first ids of the model's vocabulary, as their text."""
    from tokenizers import Tokenizer as HFTokenizer, decoders, models, pre_tokenizers, trainers
    hf = HFTokenizer(models.BPE())
    hf.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    hf.decoder = decoders.ByteLevel()
    hf.train_from_iterator(["hello world, some text é ü to train on"] * 50, trainers.BpeTrainer(
        vocab_size=300, special_tokens=[special], show_progress=False,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet()))
    path = tmp_path / "hf"
    path.mkdir()
    hf.save(str(path / "tokenizer.json"))
    return hf, path


@pytest.mark.parametrize("special", [EOT, "<|end of text|>", "<|é|>", "‹｜begin▁of▁sentence｜>"])
def test_hugging_face_trained_files_load_and_save_with_their_ids(tmp_path, special):
    # Its trainer writes the specials into the model's vocabulary as their text: one with a
    # space or a character outside GPT-2's byte table was refused as not a GPT-2 byte
    # character, and saving the file again moved the special from id 0 to the end, where
    # tokenizers then gave it another id.
    import tokenizers
    hf, path = _hf_trained(tmp_path, special)
    ours = Tokenizer.load(path)
    assert ours.special_ids == {special: 0}
    text = f"hello {special} world é{special}ü"
    want = hf.encode(text, add_special_tokens=False).ids
    assert ours.encode(text) == want
    ours.save(tmp_path / "again")
    again = tokenizers.Tokenizer.from_file(str(tmp_path / "again" / "tokenizer.json"))
    assert again.encode(text, add_special_tokens=False).ids == want
    assert Tokenizer.load(tmp_path / "again").encode(text) == want
    ranks_only = Tokenizer.load(_only(tmp_path / "again", "tokenizer.tiktoken", tmp_path),
                                pattern="gpt2", special_tokens=[special])
    assert ranks_only.special_ids == {special: 0} and ranks_only.encode(text) == want


def test_added_tokens_that_are_not_special_stay_so_when_saved_again(tmp_path):
    # An added token marked "special": false was written back as special, so that Hugging
    # Face's decode with skip_special_tokens then dropped its text.
    import tokenizers
    hf, path = _hf_trained(tmp_path, EOT)
    hf.add_tokens([tokenizers.AddedToken("<think>", special=False, normalized=False)])
    hf.save(str(path / "tokenizer.json"))
    ours = Tokenizer.load(path)
    text = f"a <think>b{EOT}c"
    want = hf.encode(text, add_special_tokens=False).ids
    assert ours.encode(text) == want
    ours.save(tmp_path / "again")
    again = tokenizers.Tokenizer.from_file(str(tmp_path / "again" / "tokenizer.json"))
    assert {t.content: t.special for t in again.get_added_tokens_decoder().values()} == \
        {EOT: True, "<think>": False}
    assert again.encode(text, add_special_tokens=False).ids == want
    assert again.decode(want, skip_special_tokens=True) == \
        hf.decode(want, skip_special_tokens=True)
    assert Tokenizer.load(tmp_path / "again").encode(text) == want
    for copied in (pickle.loads(pickle.dumps(ours)), copy.deepcopy(ours)):  # kept there too
        copied.save(tmp_path / "copied")
        assert tokenizers.Tokenizer.from_file(str(tmp_path / "copied" / "tokenizer.json")) \
            .decode(want, skip_special_tokens=True) == hf.decode(want, skip_special_tokens=True)
    with pytest.raises(ValueError, match="not_special names \\['<x>'\\]"):
        bpe_cffi.save(ours.id_to_token, ours.merges, tmp_path / "bad", [EOT],
                      not_special=["<x>"])


@pytest.mark.parametrize("content", [" world", "\n\n", "ld"])
@pytest.mark.parametrize("special", [True, False])
def test_an_added_token_with_the_bytes_of_a_model_token_at_another_id(tmp_path, content,
                                                                       special):
    # tokenizers gives the text of such an added token (" world", which the model spells
    # "Ġworld" at a lower id) the added token's own id; a special token whose bytes are a
    # token takes that token's id here (docs/spec.md), so the file loaded with other ids than
    # tokenizers gives. It is refused. One whose text is the model's key ("ld") is that token.
    import tokenizers
    from tokenizers import decoders, models, pre_tokenizers, trainers
    hf = tokenizers.Tokenizer(models.BPE())
    hf.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    hf.decoder = decoders.ByteLevel()
    hf.train_from_iterator(["hello world, some text\n\n"] * 50, trainers.BpeTrainer(
        vocab_size=300, show_progress=False, initial_alphabet=pre_tokenizers.ByteLevel.alphabet()))
    hf.add_tokens([tokenizers.AddedToken(content, special=special, normalized=False)])
    (tmp_path / "hf").mkdir()
    hf.save(str(tmp_path / "hf" / "tokenizer.json"))
    spelled = "".join(files.BYTE_TO_CHAR[b] for b in content.encode())
    assert spelled in hf.get_vocab()
    if spelled == content:
        text = f"hello world{content}\n\nx"
        assert Tokenizer.load(tmp_path / "hf").encode(text) == \
            hf.encode(text, add_special_tokens=False).ids
        return
    with pytest.raises(ValueError, match=re.escape(f"added token {content!r} (id ") + ".*" +
                       re.escape(f"has the bytes of the model's token {spelled!r}")):
        Tokenizer.load(tmp_path / "hf")


@pytest.mark.parametrize("ids", [(1499, 1500), (1500, 1499), (1499, 1503), (1502, 1503)])
def test_added_token_ids_that_tokenizers_numbers_otherwise_are_refused(trained, tmp_path, ids):
    # tokenizers numbers an added token that is not in the model's vocabulary itself, after
    # the vocabulary and the added tokens before it, whatever id the file gives: a file whose
    # ids are out of order or leave gaps (made by hand) loaded with the file's ids, so other
    # ids than tokenizers gives. Its own numbering loads.
    import tokenizers
    vocab, merges = trained
    bpe_cffi.save(vocab, merges, tmp_path / "tok", [EOT, "<|x|>"])
    path = tmp_path / "tok" / "tokenizer.json"
    doc = json.loads(path.read_text(encoding="utf-8"))
    for t, i in zip(doc["added_tokens"], ids):
        t["id"] = i
    path.write_text(json.dumps(doc), encoding="utf-8")
    hf = tokenizers.Tokenizer.from_file(str(path))
    assert [hf.token_to_id(s) for s in (EOT, "<|x|>")] == [1499, 1500]  # whatever the file says
    if ids == (1499, 1500):
        text = f"a{EOT}b<|x|>"
        assert Tokenizer.load(tmp_path / "tok").encode(text) == hf.encode(text).ids
        return
    with pytest.raises(ValueError, match="but tokenizers numbers it"):
        Tokenizer.load(tmp_path / "tok")


def test_a_special_token_that_is_a_token_no_merge_makes_keeps_its_id_in_every_file(tmp_path):
    # <|x|> is an ordinary token of this vocabulary (id 256, below the merge's 257): the rank
    # file left it out, and loading that file gave the special the next id, 258.
    import tokenizers
    vocab = {i: bytes([i]) for i in range(256)}
    vocab[256], vocab[257] = b"<|x|>", b"ab"
    tok = Tokenizer(vocab, [(b"a", b"b")], ["<|x|>"])
    tok.save(tmp_path / "tok")
    hf = tokenizers.Tokenizer.from_file(str(tmp_path / "tok" / "tokenizer.json"))
    assert hf.encode("ab<|x|>ab").ids == tok.encode("ab<|x|>ab") == [257, 256, 257]
    ranks = files.load_tiktoken(tmp_path / "tok" / "tokenizer.tiktoken")
    assert ranks[256] == b"<|x|>"
    only = Tokenizer.load(_only(tmp_path / "tok", "tokenizer.tiktoken", tmp_path),
                          special_tokens=["<|x|>"])
    assert only.special_ids == {"<|x|>": 256}
    # Specials after every other id, as training puts them, stay out of the rank file.
    trained = Tokenizer(*bpe_cffi.train_bpe(bpe_cffi.sample_path(), 400, [EOT, "<|y|>"]),
                        [EOT, "<|y|>"])
    trained.save(tmp_path / "trained")
    ranks = files.load_tiktoken(tmp_path / "trained" / "tokenizer.tiktoken")
    assert sorted(ranks) == list(range(398))


@pytest.mark.parametrize("special", ["é", "Ġ", "Ċ"])
def test_save_refuses_a_special_token_spelled_like_another_token(tmp_path, special):
    # tokenizers gives an added token the id its text has in the model's vocabulary, where "é"
    # spells the byte 0xE9: the file gave the special that byte's id, and its text changed.
    vocab = {i: bytes([i]) for i in range(256)}
    with pytest.raises(ValueError, match=f"both written {special!r} in tokenizer.json"):
        bpe_cffi.save(vocab, [], tmp_path / "tok", [EOT, special])
    assert not (tmp_path / "tok").exists() or not os.listdir(tmp_path / "tok")


def test_tokenizer_json_added_tokens_against_the_models_vocabulary(saved, trained):
    # tokenizers gives an added token the model's id for its text: followed where the model's
    # entry is the same bytes, refused where it spells another token ("Ġ" is the space).
    import tokenizers
    vocab, _ = trained
    the = next(i for i, t in vocab.items() if t == b" the")

    def add(content, token_id):
        def edit(doc):
            doc["added_tokens"].append({"id": token_id, "content": content, "single_word": False,
                                        "lstrip": False, "rstrip": False, "normalized": False,
                                        "special": True})
        return edit

    _edited(saved, add("and", 1501))
    hf = tokenizers.Tokenizer.from_file(str(saved / "tokenizer.json"))
    ours = Tokenizer.load(saved)
    text = "sand and hand"
    assert ours.encode(text) == hf.encode(text).ids
    assert ours.special_ids["and"] == hf.token_to_id("and") != 1501
    _edited(saved, add("Ġthe", 1502))
    with pytest.raises(ValueError, match="tokenizer.json: added token 'Ġthe' has id 1502, but "
                                         "'Ġthe' is also the model's key for the token "
                                         rf"b' the' \(id {the}\), and tokenizers would give"):
        Tokenizer.load(saved)


def test_an_added_token_that_is_a_byte_spelled_in_gpt2_characters_is_refused(saved):
    # "Ġ" at the id of the space: the model's token is the byte, the added token its text.
    def edit(doc):
        doc["added_tokens"].append({"id": 32, "content": "Ġ", "single_word": False,
                                    "lstrip": False, "rstrip": False, "normalized": False,
                                    "special": True})
    _edited(saved, edit)
    with pytest.raises(ValueError, match="added token 'Ġ' is also the model's token b' '"):
        Tokenizer.load(saved)


def test_a_special_token_with_a_lone_surrogate_is_named():
    with pytest.raises(ValueError, match="special token '\\\\ud800' holds a lone surrogate"):
        Tokenizer({i: bytes([i]) for i in range(256)}, [], ["\ud800"])


@settings(max_examples=300, deadline=None)
@given(st.data())
def test_specials_left_out_of_a_file_get_their_ids_back(data):
    # The specials a file leaves out (special_only_ids) must come back with the ids they had:
    # a loader gives each, in the specials' order, the next id after the file's, and
    # tokenizers counts them after a model vocabulary without a gap.
    from bpe_cffi.specials import add_special_ids, special_only_ids
    n = data.draw(st.integers(1, 12))
    if data.draw(st.booleans()):
        # As files have them: ids from 0 without a gap, the specials among the top ones (in
        # their order or not) and a few others. (Ids drawn at random seldom run without a gap,
        # and then no special is left out.)
        ids = list(range(n))
        special_ids = list(range(n - data.draw(st.integers(0, n)), n))
        if data.draw(st.booleans()):
            special_ids = data.draw(st.permutations(special_ids))
        special_ids = list(dict.fromkeys(special_ids + data.draw(st.lists(st.sampled_from(ids),
                                                                          max_size=2))))
    else:
        ids = data.draw(st.lists(st.integers(0, 15), min_size=n, max_size=n, unique=True))
        special_ids = data.draw(st.lists(st.sampled_from(ids), unique=True))
    ordinary = set(data.draw(st.lists(st.sampled_from(ids), max_size=3)))
    only = special_only_ids(ids, special_ids, ordinary.__contains__)
    assert only <= set(special_ids) - ordinary
    kept = {i: b"t%d" % i for i in ids if i not in only}
    assert not kept or max(kept) == len(kept) - 1 or not only
    names = [b"t%d" % i for i in special_ids]
    given_back = add_special_ids([t.decode() for t in names], dict(kept),
                                 {t: i for i, t in kept.items()})
    assert [given_back[t.decode()] for t in names] == special_ids


@pytest.mark.parametrize("name", ["tokenizer.json", "vocab.json"])
def test_a_token_of_no_bytes_is_refused_on_load_as_on_save(saved, name):
    # It loaded, and then save refused the tokenizer (no rank file can hold it).
    if name == "tokenizer.json":
        _edited(saved, lambda doc: doc["model"]["vocab"].update({"": 1500}))
    else:
        (saved / "tokenizer.json").unlink()
        path = saved / "vocab.json"
        vocab = json.loads(path.read_text(encoding="utf-8"))
        vocab[""] = 1500
        path.write_text(json.dumps(vocab), encoding="utf-8")
    with pytest.raises(ValueError, match=f"{name}: the token '' \\(id 1500\\) has no bytes"):
        Tokenizer.load(saved)


def test_save_refuses_what_load_would_refuse(tmp_path):
    # A special "é" kept among the tokens of a vocabulary without the byte 0xE9 was written as
    # its text, which its own loader then refused (the text spells that byte).
    tokens = [bytes([i]) for i in range(256) if i != 0xE9]
    tokens.insert(100, "é".encode())
    with pytest.raises(ValueError, match=r"special token 'é' would be written in tokenizer.json "
                                         r"as its text, which spells the token b'\\xe9'"):
        Tokenizer(dict(enumerate(tokens)), [], ["é"]).save(tmp_path / "tok")
    assert not (tmp_path / "tok").exists()


def test_specials_no_vocabulary_could_be_saved_with_are_told_before_training(tmp_path):
    # bpe-cffi train checks them first (a special "é" failed only in the save, once trained):
    # the check refuses exactly what the save of the 256 bytes refuses.
    bytes_only = {i: bytes([i]) for i in range(256)}
    for special in [*files.BYTE_TO_CHAR.values(), "字", "<|x|>", "ĠĠ", "é!", "\u0100\u0101"]:
        try:
            Tokenizer(bytes_only, [], [special]).save(tmp_path / "tok")
            saved = True
        except ValueError:
            saved = False
        if saved:
            files.check_specials_saveable([special])
        else:
            with pytest.raises(ValueError, match="cannot be saved"):
                files.check_specials_saveable([special])


def test_an_added_token_listed_twice_takes_the_models_id(tmp_path):
    # The copy listed first, at another id, failed with "KeyError: 0".
    import tokenizers
    vocab = {0: b"<s>", **{i + 1: bytes([i]) for i in range(256)}}  # as Hugging Face's trainer
    Tokenizer(vocab, [], ["<s>"]).save(tmp_path)

    def edit(doc):
        doc["added_tokens"].insert(0, dict(doc["added_tokens"][0], id=300))
    _edited(tmp_path, edit)
    hf = tokenizers.Tokenizer.from_file(str(tmp_path / "tokenizer.json"))
    ours = Tokenizer.load(tmp_path)
    assert ours.special_ids == {"<s>": 0}
    assert ours.encode("a<s>") == hf.encode("a<s>").ids == [98, 0]


def test_a_special_that_is_an_ordinary_token_written_otherwise_is_refused(tmp_path):
    # " a" is a merge's result, which tokenizer.json writes "Ġa": the added token " a" was then
    # no key of the model's vocabulary, and tokenizers gave it an id of its own (258, after
    # "<s>"), where bpe_cffi gives it the token's id, 256. So was "\n", the byte written "Ċ".
    import tokenizers
    vocab = {i: bytes([i]) for i in range(256)}
    vocab[256] = b" a"
    for specials, text in (([" a", "<s>"], " a"), (["<s>", "\n"], "\n")):
        tok = Tokenizer(vocab, [(b" ", b"a")], specials)
        with pytest.raises(ValueError, match=f"{re.escape(repr(text))} cannot be saved"):
            tok.save(tmp_path / "out")
        assert not (tmp_path / "out").exists()
    with pytest.raises(ValueError, match="cannot be saved"):
        files.check_specials_saveable(["<s>", "\t"])  # bpe-cffi train, before it trains
    tok = Tokenizer(vocab, [(b" ", b"a")], ["<s>", "<"])  # "<" is written "<": a key
    tok.save(tmp_path / "out")
    hf = tokenizers.Tokenizer.from_file(str(tmp_path / "out" / "tokenizer.json"))
    assert tok.encode("x<s> a<") == hf.encode("x<s> a<").ids == [120, 257, 256, 60]


def test_an_added_token_numbered_by_tokenizers_not_by_the_file_is_refused(saved, tmp_path):
    # The file gives "\n" the id of the byte token "Ċ"; its text is no key of the model's
    # vocabulary, so tokenizers numbers it after the model's (it was loaded with id 10).
    import tokenizers
    doc = json.loads((saved / "tokenizer.json").read_text(encoding="utf-8"))
    doc["added_tokens"].append({"id": 10, "content": "\n", "single_word": False,
                                "lstrip": False, "rstrip": False, "normalized": False,
                                "special": True})
    (tmp_path / "tokenizer.json").write_text(json.dumps(doc), encoding="utf-8")
    hf = tokenizers.Tokenizer.from_file(str(tmp_path / "tokenizer.json"))
    assert hf.encode("a\nb").ids[1] != 10
    with pytest.raises(ValueError, match=re.escape(f"added token {chr(10)!r} has id 10, but "
                                                   "tokenizers numbers it")):
        Tokenizer.load(tmp_path)


def test_added_tokens_of_both_kinds_that_can_overlap_are_refused(tmp_path):
    # tokenizers takes the added tokens that are not normalized out of the text first:
    # "<tool>x</tool>" gave it "x</tool>" whole, and bpe_cffi "<tool>x" first.
    import tokenizers
    hf = tokenizers.Tokenizer(tokenizers.models.BPE(
        {files.BYTE_TO_CHAR[b]: b for b in range(256)}, []))
    hf.pre_tokenizer = tokenizers.pre_tokenizers.ByteLevel(add_prefix_space=False)
    hf.decoder = tokenizers.decoders.ByteLevel()
    hf.add_tokens(["<tool>x"])  # normalized, as add_tokens makes them
    hf.add_special_tokens(["x</tool>"])  # not normalized
    hf.save(str(tmp_path / "tokenizer.json"))
    with pytest.raises(ValueError, match="'x</tool>' .not normalized. and '<tool>x' "
                                         ".normalized. can overlap"):
        Tokenizer.load(tmp_path)


def _can_overlap(a: str, b: str) -> bool:
    """Whether two different texts can overlap: one inside the other, or an end of one the
    start of the other (every split point tried)."""
    return a in b or b in a or any(a[-k:] == b[:k] or b[-k:] == a[:k]
                                   for k in range(1, min(len(a), len(b))))


_ADDED_TEXT = st.text(st.sampled_from("ab<|>\0\u00e9\U0001F600"), min_size=1, max_size=7)


@settings(max_examples=400, deadline=None)
@given(st.lists(st.tuples(_ADDED_TEXT, st.booleans()), min_size=1, max_size=8))
def test_added_tokens_of_two_kinds_are_refused_exactly_when_a_pair_can_overlap(tokens):
    # One search of each token for all the tokens of the other kind, against every pair.
    added = [{"id": i, "content": c, "normalized": n} for i, (c, n) in enumerate(tokens)]
    kinds = {n: {c for c, m in tokens if m == n} for n in (False, True)}
    clash = [(a, b) for a in kinds[False] for b in kinds[True] if a != b and _can_overlap(a, b)]
    if clash:
        with pytest.raises(ValueError, match="can overlap") as e:
            files._refuse_overlapping_kinds(added, "t.json")
        kind = r" \((not normalized|normalized|both kinds)\)"
        named = re.match(f"t.json: added tokens (.*){kind} and (.*){kind}", str(e.value))
        a, b = eval(named[1]), eval(named[3])
        assert a != b and _can_overlap(a, b)
        for token, said in ((a, named[2]), (b, named[4])):
            is_kind = {n: any(c == token and m == n for c, m in tokens) for n in (False, True)}
            assert said == ("both kinds" if all(is_kind.values()) else
                            "normalized" if is_kind[True] else "not normalized")
    else:
        files._refuse_overlapping_kinds(added, "t.json")


def test_added_tokens_of_two_kinds_are_compared_in_one_pass(tmp_path):
    # 4 000 tokens of 100 characters, 2 000 of each kind, none overlapping: a test of every
    # pair took 39 s for half as many, ~2 minutes for these.
    added = [{"id": 1 + k, "content": f"<{k}>" + "x" * 100, "normalized": k % 2 == 0,
              "special": True} for k in range(4000)]
    files._refuse_overlapping_kinds(added, "t.json")
    added.append({"id": 5000, "content": "!<3>", "normalized": True, "special": True})
    with pytest.raises(ValueError, match=re.escape("'<3>" + "x" * 100 + "' (not normalized) "
                                                   "and '!<3>' (normalized) can overlap")):
        files._refuse_overlapping_kinds(added, "t.json")


def test_an_added_token_spelling_other_bytes_is_refused_with_ignore_merges(tmp_path):
    # With ignore_merges, tokenizers finds the pre-token " b" as the key "Ġb", the added
    # token's text: it gave " b" the added token's id, bpe_cffi [32, 98].
    import tokenizers
    vocab = {files.BYTE_TO_CHAR[b]: b for b in range(256)} | {"ab": 256, "Ġb": 257}
    hf = tokenizers.Tokenizer(tokenizers.models.BPE(vocab, [("a", "b")], ignore_merges=True))
    hf.pre_tokenizer = tokenizers.pre_tokenizers.ByteLevel(add_prefix_space=False)
    hf.decoder = tokenizers.decoders.ByteLevel()
    hf.add_special_tokens(["Ġb"])  # the model's key: its id, 257
    hf.save(str(tmp_path / "tokenizer.json"))
    assert hf.encode("a b").ids == [97, 257]
    with pytest.raises(ValueError, match="added token 'Ġb' is also the model's token b' b'"):
        Tokenizer.load(tmp_path)
    # Saved, the special "Ġb" (no merge makes it, nor is it the last id) is a key as its
    # text, which tokenizers with ignore_merges would give " b" too.
    tok = Tokenizer({i: bytes([i]) for i in range(256)} | {256: "Ġb".encode(), 257: b"ab"},
                    [(b"a", b"b")], ["Ġb"], ignore_merges=True)
    with pytest.raises(ValueError, match="would be written in tokenizer.json as its text"):
        tok.save(tmp_path / "out")


def test_from_files_blames_its_arguments_not_the_files(saved):
    # Wrapped whole to name merges.txt, it named it for a bad pattern or special token too.
    for kwargs, error in (({"pattern": "(unclosed"}, "invalid pre-tokenization pattern"),
                          ({"special_tokens": [""]}, "empty string"),
                          ({"num_threads": 0}, "num_threads must be")):
        with pytest.raises(ValueError, match=error) as info:
            Tokenizer.from_files(saved / "vocab.json", saved / "merges.txt", **kwargs)
        assert "merges.txt" not in str(info.value)


def test_an_output_that_is_a_fifo_is_refused_not_replaced(tmp_path):
    # Renaming over it would have replaced the node by a regular file (/dev/null too, as root).
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    with pytest.raises(ValueError, match="not a regular file"):
        with files.atomic_write(str(fifo), "wb") as f:
            f.write(b"ids")
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)
    assert os.listdir(tmp_path) == ["pipe"]


def test_an_output_name_near_the_length_limit_is_written(tmp_path):
    # The temporary file's name was the output's and 18 bytes more: past 255, refused.
    out = tmp_path / ("a" * 245 + ".npy")
    with files.atomic_write(str(out), "wb") as f:
        f.write(b"ids")
    assert out.read_bytes() == b"ids" and os.listdir(tmp_path) == [out.name]


def test_an_output_path_ending_in_a_separator_is_refused_before_writing(tmp_path):
    # It was found at the rename, after all the work, with the temporary file's name.
    with pytest.raises(ValueError, match="cannot end in a separator"):
        with files.atomic_write(str(tmp_path / "ids.npy") + os.sep, "wb"):
            pytest.fail("the work started")
    assert os.listdir(tmp_path) == []


@pytest.mark.parametrize("fails", ["fsync", "replace"])
@pytest.mark.parametrize("call", [1, 2, 3, 4])
def test_a_save_failing_at_an_fsync_or_a_rename_leaves_the_directory_as_it_was(
        saved, monkeypatch, fails, call):
    # Each file was renamed as soon as it was complete: a failure on a later one (a full disk
    # at its fsync, a file made immutable at its rename) left the directory half old, half new.
    before = {p.name: p.read_bytes() for p in saved.iterdir()}
    real = getattr(os, fails)
    calls = []

    def failing(*args):
        calls.append(args)
        if len(calls) == call:
            raise OSError(errno.EIO, "input/output error")
        return real(*args)

    vocab = {i: bytes([i]) for i in range(256)}
    vocab[256] = b"ab"
    monkeypatch.setattr(os, fails, failing)
    with pytest.raises(OSError, match="input/output error"):
        bpe_cffi.save(vocab, [(b"a", b"b")], saved)
    monkeypatch.undo()
    assert {p.name: p.read_bytes() for p in saved.iterdir()} == before  # no temporary left
