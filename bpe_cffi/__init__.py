"""bpe_cffi: exact, fast byte-level BPE training and tokenization over a C core (cffi)."""
from .counting import count_words
from .files import load_counts, save, save_counts
from .patterns import GPT2_PATTERN, PATTERNS
from .sample import sample_path
from .tokenizer import Tokenizer
from .iterator_counting import count_words_from_iterator
from .training import train_bpe, train_from_counts, train_from_iterator

__all__ = ["GPT2_PATTERN", "PATTERNS", "Tokenizer", "count_words", "count_words_from_iterator",
           "load_counts", "sample_path", "save", "save_counts", "train_bpe",
           "train_from_counts", "train_from_iterator"]
__version__ = "0.1.0"
