"""Trainers measured side by side: ours and the anchors, each as
`train(path, vocab_size, pattern)` where pattern is a name of bpe_cffi.PATTERNS.

Every function trains byte-level BPE with <|endoftext|> as the only special token. rustbpe and
Hugging Face tokenizers take any pattern; gigabpe and gigatoken train with GPT-2's only, and
raise ValueError for another. An anchor that is not installed raises ImportError (the
benchmarks then skip it).
"""
from __future__ import annotations

EOT = "<|endoftext|>"


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
    from bpe_cffi import PATTERNS
    tok = rustbpe.Tokenizer()
    # rustbpe has no special tokens: leave room for one, as the others count it in vocab_size.
    tok.train_from_iterator(_documents(path), vocab_size - 1, pattern=PATTERNS[pattern])
    return tok


def train_hf_tokenizers(path: str, vocab_size: int, pattern: str = "gpt2"):
    from tokenizers import Regex, Tokenizer, decoders, models, pre_tokenizers, trainers
    from bpe_cffi.patterns import Pretokenizer
    tok = Tokenizer(models.BPE())
    hf_pattern = Pretokenizer(pattern).family.hf_pattern
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
    from bpe_cffi import PATTERNS
    return bpeasy.train_bpe(_documents(path), PATTERNS[pattern], 128, vocab_size - 1)


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
