"""bpe_cffi: exact, fast byte-level BPE training and tokenization over a C core (cffi)."""
from .counting import count_words
from .files import save
from .pretokenize import GPT2_PATTERN
from .sample import sample_path
from .tokenizer import Tokenizer
from .training import train_bpe, train_from_counts

__all__ = ["GPT2_PATTERN", "Tokenizer", "count_words", "sample_path", "save", "train_bpe",
           "train_from_counts"]
__version__ = "0.1.0"
