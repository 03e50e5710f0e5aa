"""Trainers measured side by side: ours and the anchors, each as `train(path, vocab_size)`.

Every function trains GPT-2-pattern byte-level BPE with <|endoftext|> as the only special
token. An anchor that is not installed raises ImportError (the benchmarks then skip it).
"""
from __future__ import annotations

EOT = "<|endoftext|>"
GPT2_PATTERN = r"""'(?:[sdmt]|ll|ve|re)| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+"""


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


def train_bpe_cffi(path: str, vocab_size: int):
    import bpe_cffi
    return bpe_cffi.train_bpe(path, vocab_size, [EOT])


def train_rustbpe(path: str, vocab_size: int):
    import rustbpe
    tok = rustbpe.Tokenizer()
    # rustbpe has no special tokens: leave room for one, as the others count it in vocab_size.
    tok.train_from_iterator(_documents(path), vocab_size - 1, pattern=GPT2_PATTERN)
    return tok


def train_hf_tokenizers(path: str, vocab_size: int):
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=vocab_size, special_tokens=[EOT],
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
                                  show_progress=False)
    tok.train_from_iterator(_documents(path), trainer=trainer)
    return tok


def train_bpeasy(path: str, vocab_size: int):
    import bpeasy
    return bpeasy.train_bpe(_documents(path), GPT2_PATTERN, 128, vocab_size - 1)


TRAINERS = {
    "bpe_cffi": train_bpe_cffi,
    "rustbpe": train_rustbpe,
    "hf_tokenizers": train_hf_tokenizers,
    "bpeasy": train_bpeasy,
}

#: the module each trainer needs, for skipping the ones that are not installed
MODULES = {"bpe_cffi": "bpe_cffi", "rustbpe": "rustbpe", "hf_tokenizers": "tokenizers",
           "bpeasy": "bpeasy"}
