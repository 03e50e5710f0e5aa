/* scan_cl100k.c - the GPT-4 family: cl100k_base and the patterns built like it.
 *
 *     '(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]++[\r\n]*|
 *     \s*[\r\n]|\s+(?!\S)|\s+
 *
 * as first published (rustbpe's default), as Hugging Face tokenizer.json files carry it
 * (Llama 3: the contractions spelled out, nothing possessive, \s*[\r\n]+), with single digits
 * (Qwen2, Qwen3: \p{N}), with pairs of digits (nanochat: \p{N}{1,2}), and as tiktoken ships it
 * (\s++$ before \s*[\r\n]). The alternatives, tried in order at each position, the first that
 * matches winning:
 *
 * - a contraction: an apostrophe, then a character that matches s, d, m or t without case, or
 *   two that match ll, ve or re (case-insensitive as regex has it: the long s, U+017F, is an
 *   s);
 * - letters, after at most one character that is neither \r, \n, a letter nor a number (a
 *   space, a tab, punctuation: " hello", "(hello"). The optional character is possessive, but
 *   a non-letter taken there cannot start the letters anyway, so that changes nothing;
 * - 1 to max_digits numbers (3 in cl100k);
 * - punctuation: an optional space (U+0020 only), characters that are neither whitespace,
 *   letters nor numbers (marks among them), then every \r and \n that follows (".\n\n");
 * - in the tiktoken form, whitespace that runs to the end of the text, all of it;
 * - whitespace holding \r or \n: the run up to its last \r or \n (\s* backs off to it);
 * - whitespace: the run to the end of the text, or the run less its last character when text
 *   follows (so that a space can start the next word);
 * - else one whitespace character (\s+ and tiktoken's \s agree: a run reaches this alternative
 *   only as one character before text).
 *
 * The forms differ only in max_digits and in the tiktoken form's \s++$, which takes trailing
 * whitespace whole where \s*[\r\n] would stop at its last line break ("\n " at the end of a
 * text is one pre-token there, two here). */
#include "scan.h"

/* The end of the pre-token that starts at t[i]. */
static inline int64_t cl100k_next(const bpe_scanner *s, const uint8_t *t, int64_t n, int64_t i) {
    const uint8_t *classes = s->classes;
    int64_t end = scan_contraction_end(classes, t, n, i);
    if (end >= 0) return end;
    uint8_t c0;
    int64_t j = i + scan_char(classes, t, n, i, &c0);
    int base = CLASS_BASE(c0);
    if (base == BASE_LETTER) return scan_run_end(classes, t, n, j, BASE_LETTER);
    if (base == BASE_NUMBER) return scan_digits_end(classes, t, n, j, s->max_digits);
    if (t[i] != '\r' && t[i] != '\n' && j < n) { /* [^\r\n\p{L}\p{N}]?+\p{L}+ */
        uint8_t c1;
        int len = scan_char(classes, t, n, j, &c1);
        if (CLASS_BASE(c1) == BASE_LETTER) return scan_run_end(classes, t, n, j + len, BASE_LETTER);
    }
    end = scan_punctuation_end(classes, t, n, i, j, base, 0); /*  ?[^\s\p{L}\p{N}]++[\r\n]* */
    if (end >= 0) return end;
    space_run r = scan_space_run(classes, t, n, i); /* whitespace */
    if (r.end == n && s->space_run_ends) return n; /* \s++$ */
    if (r.line_end > i) return r.line_end;         /* \s*[\r\n] */
    if (r.end == n) return n;                      /* \s+(?!\S) */
    return r.last > i ? r.last : r.end;            /* \s+(?!\S), else \s+ */
}

int64_t scan_cl100k(const bpe_scanner *s, const uint8_t *text, int64_t n, int64_t *ends) {
    int64_t count = 0;
    for (int64_t i = 0; i < n;) ends[count++] = i = cl100k_next(s, text, n, i);
    return count;
}
