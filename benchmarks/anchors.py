"""Trainers measured side by side: ours and the anchors, each as
`train(path, vocab_size, pattern)` where pattern is a name of bpe_cffi.PATTERNS.

Every function trains byte-level BPE with <|endoftext|> as the only special token. rustbpe and
Hugging Face tokenizers take any pattern; gigabpe and gigatoken train with GPT-2's only, and
raise ValueError for another. An anchor that is not installed raises ImportError (the
benchmarks then skip it).
"""
from __future__ import annotations

EOT = "<|endoftext|>"

#: A pattern's name -> (the pattern, its Hugging Face form or None for GPT-2's ByteLevel). A
#: harness that resolved them in another process fills it, so that an anchor's process never
#: imports bpe_cffi (~0.1 s with numpy's import, which would be timed as the anchor's).
RESOLVED: dict[str, tuple[str, str | None]] = {}


def resolve(name: str) -> tuple[str, str | None]:
    """(pattern, Hugging Face form) of a name of bpe_cffi.PATTERNS."""
    if name not in RESOLVED:
        from bpe_cffi.patterns import pretokenizer
        pre = pretokenizer(name)
        RESOLVED[name] = (pre.pattern, pre.family.hf_pattern if pre.family else None)
    return RESOLVED[name]


def _documents(path: str, block: int = 1 << 22):
    """Streams the documents between <|endoftext|> separators (bounded memory)."""
    rest = ""
    with open(path, encoding="utf-8") as f:
        while chunk := f.read(block):
            parts = (rest + chunk).split(EOT)
            rest = parts.pop()
            yield from parts
    if rest:
        yield rest


def _only_gpt2(tool: str, pattern: str) -> None:
    if pattern != "gpt2":
        raise ValueError(f"{tool} trains with GPT-2's pattern only")


def train_bpe_cffi(path: str, vocab_size: int, pattern: str = "gpt2"):
    import bpe_cffi
    return bpe_cffi.train_bpe(path, vocab_size, [EOT], pattern=pattern)


def train_rustbpe(path: str, vocab_size: int, pattern: str = "gpt2"):
    import rustbpe
    tok = rustbpe.Tokenizer()
    # rustbpe has no special tokens: leave room for one, as the others count it in vocab_size.
    tok.train_from_iterator(_documents(path), vocab_size - 1, pattern=resolve(pattern)[0])
    return tok


def train_hf_tokenizers(path: str, vocab_size: int, pattern: str = "gpt2"):
    from tokenizers import Regex, Tokenizer, decoders, models, pre_tokenizers, trainers
    tok = Tokenizer(models.BPE())
    hf_pattern = resolve(pattern)[1]
    if hf_pattern is None:  # GPT-2's: ByteLevel's own regex
        tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    else:
        tok.pre_tokenizer = pre_tokenizers.Sequence([
            pre_tokenizers.Split(Regex(hf_pattern), behavior="isolated"),
            pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)])
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=vocab_size, special_tokens=[EOT],
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
                                  show_progress=False)
    tok.train_from_iterator(_documents(path), trainer=trainer)
    return tok


def train_gigabpe(path: str, vocab_size: int, pattern: str = "gpt2"):
    _only_gpt2("gigabpe", pattern)
    import gigabpe
    return gigabpe.train_bpe([path], vocab_size, special_tokens=[EOT])


def train_gigatoken(path: str, vocab_size: int, pattern: str = "gpt2"):
    _only_gpt2("gigatoken", pattern)
    import gigatoken
    return gigatoken.train_bpe(path, vocab_size, [EOT])


def train_bpeasy(path: str, vocab_size: int, pattern: str = "gpt2"):
    import bpeasy
    return bpeasy.train_bpe(_documents(path), resolve(pattern)[0], 128, vocab_size - 1)


TRAINERS = {
    "bpe_cffi": train_bpe_cffi,
    "rustbpe": train_rustbpe,
    "hf_tokenizers": train_hf_tokenizers,
    "gigabpe": train_gigabpe,
    "gigatoken": train_gigatoken,
    "bpeasy": train_bpeasy,
}

#: the module each trainer needs, for skipping the ones that are not installed
MODULES = {"bpe_cffi": "bpe_cffi", "rustbpe": "rustbpe", "hf_tokenizers": "tokenizers",
           "gigabpe": "gigabpe", "gigatoken": "gigatoken", "bpeasy": "bpeasy"}
