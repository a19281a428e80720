/* tokenizer_encode.c — text to ids, in the order the `tokenizers` package
 * applies its steps: added tokens in the raw text, NFC on the rest, added
 * tokens flagged `normalized` in the NFC text, the Split regex, then BPE
 * on each byte-level word. Input must be valid UTF-8 (checked first). */
#define PCRE2_CODE_UNIT_WIDTH 8
#include <limits.h>
#include <pcre2.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <utf8proc.h>

#include "tokenizer.h"

/* ---- UTF-8 and character classes --------------------------------------------- */

/* Offset of the first byte that does not belong to a well-formed UTF-8
 * sequence (overlong forms, surrogates and code points past U+10FFFF
 * included), or n when the whole text is valid. */
static size_t utf8_invalid_at(const unsigned char *s, size_t n) {
    size_t i = 0;
    while (i < n) {
        unsigned char c = s[i];
        size_t k;
        uint32_t cp, min;
        if (c < 0x80) {
            i++;
            continue;
        } else if (c >= 0xC2 && c <= 0xDF) {
            k = 1, cp = c & 0x1F, min = 0x80;
        } else if (c >= 0xE0 && c <= 0xEF) {
            k = 2, cp = c & 0x0F, min = 0x800;
        } else if (c >= 0xF0 && c <= 0xF4) {
            k = 3, cp = c & 0x07, min = 0x10000;
        } else {
            return i;
        }
        if (n - i <= k) return i;
        for (size_t j = 1; j <= k; j++) {
            if ((s[i + j] & 0xC0) != 0x80) return i;
            cp = (cp << 6) | (s[i + j] & 0x3F);
        }
        if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return i;
        i += k + 1;
    }
    return n;
}

static uint32_t decode_at(const char *s, size_t n, size_t i) {
    utf8proc_int32_t cp = 0;
    utf8proc_iterate((const utf8proc_uint8_t *)s + i, (utf8proc_ssize_t)(n - i), &cp);
    return (uint32_t)cp;
}

static size_t char_len(char lead) {
    unsigned char c = (unsigned char)lead;
    return c < 0x80 ? 1 : c < 0xE0 ? 2 : c < 0xF0 ? 3 : 4;
}

static size_t char_start_before(const char *s, size_t i) { /* i > 0, text valid */
    do i--;
    while (i > 0 && ((unsigned char)s[i] & 0xC0) == 0x80);
    return i;
}

/* Unicode White_Space, the test Rust's char::is_whitespace makes for lstrip/rstrip. */
static int is_white_space(uint32_t c) {
    return (c >= 0x09 && c <= 0x0D) || c == 0x20 || c == 0x85 || c == 0xA0 || c == 0x1680 ||
           (c >= 0x2000 && c <= 0x200A) || c == 0x2028 || c == 0x2029 || c == 0x202F || c == 0x205F || c == 0x3000;
}

/* Letters and numbers by general category: close to Rust's is_alphanumeric,
 * which also counts the marks of the Other_Alphabetic property. */
static int is_word_char(uint32_t c) {
    utf8proc_category_t k = utf8proc_category((utf8proc_int32_t)c);
    return (k >= UTF8PROC_CATEGORY_LU && k <= UTF8PROC_CATEGORY_LO) ||
           (k >= UTF8PROC_CATEGORY_ND && k <= UTF8PROC_CATEGORY_NO);
}

/* ---- the encoder's working state ---------------------------------------------- */

/* Per-call cache of word -> ids: the corpus repeats a few thousand words
 * hundreds of thousands of times. Words longer than CACHE_MAX_WORD bytes are
 * not cached; once full, the cache stops growing. */
#define CACHE_MAX_WORD 64
#define CACHE_MAX_SLOTS (1u << 17)

typedef struct {
    uint64_t hash;
    size_t key, key_len, ids, n_ids; /* offsets into the pools */
} cache_entry;

typedef struct {
    uint32_t *slots; /* entry index + 1, 0 = empty */
    uint32_t mask, n, max;
    cache_entry *entries;
    char *keys;
    int *ids;
    size_t keys_len, ids_len;
} word_cache;

typedef struct {
    const tokenizer *t;
    int *ids; /* output, grown as needed */
    size_t n, cap;
    pcre2_match_data *md;
    bpe_scratch scratch;
    word_cache cache;
    sp_error *err;
} encoder;

static void *grow(void *p, size_t *cap, size_t need, size_t elem, const char *what) {
    if (need <= *cap) return p;
    size_t cap2 = *cap ? *cap : 64;
    while (cap2 < need) cap2 *= 2;
    void *q = sp_xcalloc(cap2, elem, what);
    if (p) memcpy(q, p, *cap * elem);
    free(p);
    *cap = cap2;
    return q;
}

static void push_id(encoder *e, int id) {
    e->ids = grow(e->ids, &e->cap, e->n + 1, sizeof *e->ids, "token ids");
    e->ids[e->n++] = id;
}

static void cache_init(word_cache *c, size_t text_len) {
    uint32_t slots = 64;
    while (slots < CACHE_MAX_SLOTS && slots < text_len / 2) slots *= 2;
    c->slots = sp_xcalloc(slots, sizeof *c->slots, "word cache");
    c->mask = slots - 1;
    c->max = slots / 2;
    c->entries = sp_xcalloc(c->max, sizeof *c->entries, "word cache");
    c->keys = sp_xcalloc((size_t)c->max * CACHE_MAX_WORD, 1, "word cache");
    c->ids = sp_xcalloc((size_t)c->max * CACHE_MAX_WORD, sizeof *c->ids, "word cache");
}

static void cache_free(word_cache *c) {
    free(c->slots);
    free(c->entries);
    free(c->keys);
    free(c->ids);
}

static uint64_t hash_word(const char *s, size_t n) { /* FNV-1a */
    uint64_t h = 0xcbf29ce484222325ull;
    for (size_t i = 0; i < n; i++) h = (h ^ (unsigned char)s[i]) * 0x100000001b3ull;
    return h;
}

/* One pre-tokenized word: from the cache, or through BPE (and into the cache). */
static void emit_word(encoder *e, const char *w, size_t n) {
    word_cache *c = &e->cache;
    uint64_t h = hash_word(w, n);
    uint32_t i = (uint32_t)h & c->mask;
    if (n <= CACHE_MAX_WORD) {
        for (; c->slots[i]; i = (i + 1) & c->mask) {
            const cache_entry *ce = &c->entries[c->slots[i] - 1];
            if (ce->hash == h && ce->key_len == n && !memcmp(c->keys + ce->key, w, n)) {
                e->ids = grow(e->ids, &e->cap, e->n + ce->n_ids, sizeof *e->ids, "token ids");
                memcpy(e->ids + e->n, c->ids + ce->ids, ce->n_ids * sizeof *e->ids);
                e->n += ce->n_ids;
                return;
            }
        }
    }
    e->ids = grow(e->ids, &e->cap, e->n + n, sizeof *e->ids, "token ids"); /* at most one id per byte */
    size_t k = bpe_encode_word(&e->t->bpe, (const unsigned char *)w, n, &e->scratch, e->ids + e->n);
    if (n <= CACHE_MAX_WORD && c->n < c->max) { /* i is the empty slot the probe stopped at */
        cache_entry *ce = &c->entries[c->n];
        *ce = (cache_entry){h, c->keys_len, n, c->ids_len, k};
        memcpy(c->keys + c->keys_len, w, n);
        memcpy(c->ids + c->ids_len, e->ids + e->n, k * sizeof *c->ids);
        c->keys_len += n, c->ids_len += k;
        c->slots[i] = ++c->n;
    }
    e->n += k;
}

/* ---- pre-tokenization: Split(regex, Isolated) ------------------------------------ */

/* Every match of the Split regex in s[0..n), and every non-empty gap between
 * matches, is one word for BPE. */
static int split_words(encoder *e, const char *s, size_t n) {
    const pcre2_code *re = e->t->split_re;
    size_t pos = 0, gap = 0;
    while (pos < n) {
        /* the text was validated once; checking it again per match would be quadratic */
        int rc = pcre2_match(re, (PCRE2_SPTR)s, n, pos, PCRE2_NO_UTF_CHECK, e->md, NULL);
        if (rc == PCRE2_ERROR_JIT_STACKLIMIT) /* very long runs: the interpreter keeps its frames on the heap */
            rc = pcre2_match(re, (PCRE2_SPTR)s, n, pos, PCRE2_NO_UTF_CHECK | PCRE2_NO_JIT, e->md, NULL);
        if (rc == PCRE2_ERROR_NOMATCH) break;
        if (rc < 0) {
            PCRE2_UCHAR msg[256];
            pcre2_get_error_message(rc, msg, sizeof msg);
            return sp_fail(e->err, "encode: the pre-tokenizer regex failed at byte %zu of a piece of %zu bytes: %s",
                           pos, n, (const char *)msg);
        }
        const PCRE2_SIZE *ov = pcre2_get_ovector_pointer(e->md);
        size_t ms = ov[0], me = ov[1];
        if (me == ms) { /* an empty match splits nothing: step over one character */
            pos = me + 1;
            while (pos < n && ((unsigned char)s[pos] & 0xC0) == 0x80) pos++;
            continue;
        }
        if (ms > gap) emit_word(e, s + gap, ms - gap);
        emit_word(e, s + ms, me - ms);
        gap = pos = me;
    }
    if (gap < n) emit_word(e, s + gap, n - gap);
    return 0;
}

/* ---- added tokens --------------------------------------------------------------- */

typedef struct {
    size_t start, stop;
    int id; /* the added token, or -1 for ordinary text */
} span;

/* The longest added token (of the given `normalized` flag) written at s + i, or -1. */
static int longest_added_at(const tokenizer *t, int normalized, const char *s, size_t n, size_t i) {
    int best = -1;
    for (int a = 0; a < t->n_added; a++) {
        const tokenizer_added *ta = &t->added[a];
        if (ta->normalized == normalized && ta->pattern_len <= n - i &&
            (best < 0 || ta->pattern_len > t->added[best].pattern_len) && !memcmp(s + i, ta->pattern, ta->pattern_len))
            best = a;
    }
    return best;
}

/* Cuts s[0..n) at the added tokens whose `normalized` flag equals the
 * argument: leftmost-longest, non-overlapping matches, then the single_word,
 * lstrip and rstrip rules of the `tokenizers` crate. Returns *count spans
 * covering the text in order (malloc'd). */
static span *find_added(const tokenizer *t, int normalized, const char *s, size_t n, size_t *count) {
    span *out = NULL;
    size_t cap = 0, k = 0;
    unsigned char first[256] = {0};
    for (int a = 0; a < t->n_added; a++)
        if (t->added[a].normalized == normalized) first[(unsigned char)t->added[a].pattern[0]] = 1;
    size_t start_offset = 0, pos = 0;
    while (pos < n) {
        int best = -1;
        size_t i = pos;
        for (; i < n; i++)
            if (first[(unsigned char)s[i]] && (best = longest_added_at(t, normalized, s, n, i)) >= 0) break;
        if (best < 0) break;
        const tokenizer_added *ta = &t->added[best];
        size_t start = i, stop = i + ta->pattern_len;
        pos = stop;
        if (ta->single_word && ((start > 0 && is_word_char(decode_at(s, n, char_start_before(s, start)))) ||
                                (stop < n && is_word_char(decode_at(s, n, stop)))))
            continue;
        if (ta->lstrip) {
            size_t j = start;
            while (j > start_offset && is_white_space(decode_at(s, n, char_start_before(s, j))))
                j = char_start_before(s, j);
            start = j;
        }
        if (ta->rstrip) {
            while (stop < n && is_white_space(decode_at(s, n, stop))) stop += char_len(s[stop]);
            pos = stop; /* no match inside the swallowed whitespace (the crate would let one overlap) */
        }
        out = grow(out, &cap, k + 2, sizeof *out, "added-token spans");
        if (start_offset < start) out[k++] = (span){start_offset, start, -1};
        out[k++] = (span){start, stop, ta->id};
        start_offset = stop;
    }
    if (start_offset < n) {
        out = grow(out, &cap, k + 1, sizeof *out, "added-token spans");
        out[k++] = (span){start_offset, n, -1};
    }
    *count = k;
    return out;
}

/* Text between the raw-text added tokens: normalise, then look for the
 * added tokens that are matched after normalisation, then pre-tokenize. */
static int encode_segment(encoder *e, const char *s, size_t n) {
    const tokenizer *t = e->t;
    utf8proc_uint8_t *nfc = NULL;
    int ascii = 1;
    for (size_t i = 0; i < n && ascii; i++) ascii = (unsigned char)s[i] < 0x80;
    if (t->nfc && !ascii) { /* NFC leaves ASCII unchanged */
        utf8proc_ssize_t m =
            utf8proc_map((const utf8proc_uint8_t *)s, (utf8proc_ssize_t)n, &nfc, UTF8PROC_STABLE | UTF8PROC_COMPOSE);
        if (m < 0) return sp_fail(e->err, "encode: NFC normalisation failed: %s", utf8proc_errmsg(m));
        s = (const char *)nfc, n = (size_t)m;
    }
    size_t count;
    span *sp = find_added(t, 1, s, n, &count);
    int rc = 0;
    for (size_t i = 0; i < count && !rc; i++) {
        if (sp[i].id >= 0)
            push_id(e, sp[i].id);
        else
            rc = split_words(e, s + sp[i].start, sp[i].stop - sp[i].start);
    }
    free(sp);
    free(nfc);
    return rc;
}

int tokenizer_encode(const tokenizer *t, const char *text, size_t len, int **ids, int *n, sp_error *err) {
    *ids = NULL, *n = 0;
    if (len > INT_MAX)
        return sp_fail(err, "encode: text of %zu bytes is longer than the %d bytes supported", len, INT_MAX);
    size_t bad = utf8_invalid_at((const unsigned char *)text, len);
    if (bad < len)
        return sp_fail(err,
                       "encode: text is not valid UTF-8: byte 0x%02x at offset %zu does not start a well-formed "
                       "character",
                       (unsigned char)text[bad], bad);
    encoder e = {.t = t, .err = err};
    int rc = 0;
    e.md = pcre2_match_data_create_from_pattern(t->split_re, NULL);
    if (!e.md) rc = sp_fail(err, "encode: out of memory for the regex match data");
    cache_init(&e.cache, len);
    size_t count = 0;
    span *sp = rc ? NULL : find_added(t, 0, text, len, &count);
    for (size_t i = 0; i < count && !rc; i++) {
        if (sp[i].id >= 0)
            push_id(&e, sp[i].id);
        else
            rc = encode_segment(&e, text + sp[i].start, sp[i].stop - sp[i].start);
    }
    free(sp);
    pcre2_match_data_free(e.md); /* accepts NULL */
    bpe_scratch_free(&e.scratch);
    cache_free(&e.cache);
    if (rc) {
        free(e.ids);
        return -1;
    }
    *ids = e.ids, *n = (int)e.n;
    return 0;
}
