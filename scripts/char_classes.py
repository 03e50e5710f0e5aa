"""Writes bpe_cffi/data/char_classes.bin, the character-class table shipped with the package,
from the installed `regex` (run it after `regex` moves to a new release; the package computes
the table itself with any release other than the file's).

usage: python scripts/char_classes.py
"""
from bpe_cffi.patterns import CLASS_TABLE_FILE, write_class_table

if __name__ == "__main__":
    write_class_table(CLASS_TABLE_FILE)
    print(f"wrote {CLASS_TABLE_FILE}")
