/* bpe.c — byte-level BPE: vocabulary and merge tables read from the "model"
 * object of tokenizer.json, and the merge loop for one word (see bpe.h).
 * Lookups use small open-addressing hash tables written here, because none
 * of the Debian libraries the project depends on provides one. */
#include "bpe.h"

#include <stdlib.h>
#include <string.h>

#define BPE_MAX_ID (1 << 24) /* 16.7M: far above any released vocabulary */

/* ---- GPT-2 byte <-> code point mapping ------------------------------------ */

static int byte_is_printable(unsigned char b) {
    return (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || b >= 0xAE;
}

/* The 68 other bytes, in byte order, take U+0100 onwards: 0x00-0x20 become
 * U+0100-U+0120, 0x7F-0xA0 become U+0121-U+0142, and 0xAD becomes U+0143. */
uint32_t bpe_byte_to_cp(unsigned char b) {
    if (byte_is_printable(b)) return b;
    if (b <= 0x20) return 0x100 + b;
    if (b <= 0xA0) return 0x121 + (b - 0x7F);
    return 0x143; /* 0xAD, the soft hyphen */
}

int bpe_cp_to_byte(uint32_t cp) {
    if (cp < 0x100) return byte_is_printable((unsigned char)cp) ? (int)cp : -1;
    if (cp <= 0x120) return (int)(cp - 0x100);
    if (cp <= 0x142) return (int)(cp - 0x121 + 0x7F);
    return cp == 0x143 ? 0xAD : -1;
}

/* ---- hash tables ----------------------------------------------------------- */

static uint64_t hash_bytes(const char *s, size_t n) { /* FNV-1a */
    uint64_t h = 0xcbf29ce484222325ull;
    for (size_t i = 0; i < n; i++) h = (h ^ (unsigned char)s[i]) * 0x100000001b3ull;
    return h;
}

static uint64_t hash_pair(int a, int b) { /* splitmix64 finaliser */
    uint64_t x = ((uint64_t)(uint32_t)a << 32) | (uint32_t)b;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

static uint32_t table_size(size_t n) {
    uint32_t size = 16;
    while (size < 2 * n) size *= 2;
    return size;
}

int bpe_lookup(const bpe_model *m, const char *text, size_t len) {
    for (uint32_t i = (uint32_t)hash_bytes(text, len) & m->vocab_mask;; i = (i + 1) & m->vocab_mask) {
        uint32_t slot = m->vocab_slots[i];
        if (!slot) return -1;
        int id = (int)slot - 1;
        if (m->n_text[id] == len && !memcmp(m->text[id], text, len)) return id;
    }
}

/* Rank of the merge (a, b), or -1. */
static int merge_rank(const bpe_model *m, int a, int b) {
    for (uint32_t i = (uint32_t)hash_pair(a, b) & m->merge_mask;; i = (i + 1) & m->merge_mask) {
        uint32_t slot = m->merge_slots[i];
        if (!slot) return -1;
        int r = (int)slot - 1;
        if (m->merge_left[r] == a && m->merge_right[r] == b) return r;
    }
}

/* A pair listed twice keeps its last rank, as a hash map filled in file
 * order does in the `tokenizers` crate. */
static void merge_insert(bpe_model *m, int rank) {
    int a = m->merge_left[rank], b = m->merge_right[rank];
    for (uint32_t i = (uint32_t)hash_pair(a, b) & m->merge_mask;; i = (i + 1) & m->merge_mask) {
        uint32_t slot = m->merge_slots[i];
        if (!slot || (m->merge_left[slot - 1] == a && m->merge_right[slot - 1] == b)) {
            m->merge_slots[i] = (uint32_t)rank + 1;
            return;
        }
    }
}

/* ---- reading the model object ------------------------------------------ */

static int check_absent_or(json_t *model, const char *origin, const char *field, const char *allowed, sp_error *err) {
    json_t *v = json_object_get(model, field);
    if (!v || json_is_null(v)) return 0;
    if (!strcmp(allowed, "false") && json_is_false(v)) return 0;
    if (!strcmp(allowed, "\"\"") && json_is_string(v) && json_string_length(v) == 0) return 0;
    return sp_fail(err, "%s: model.%s must be null or %s for byte-level BPE; other values are not supported", origin,
                   field, allowed);
}

static int read_vocab(bpe_model *m, json_t *vocab, const char *origin, sp_error *err) {
    if (!json_is_object(vocab)) return sp_fail(err, "%s: model.vocab must be an object of token -> id", origin);
    const char *key;
    json_t *v;
    int max_id = -1;
    json_object_foreach(vocab, key, v) {
        if (!json_is_integer(v) || json_integer_value(v) < 0 || json_integer_value(v) >= BPE_MAX_ID)
            return sp_fail(err, "%s: model.vocab[\"%s\"] must be an integer id in [0, %d)", origin, key, BPE_MAX_ID);
        if (json_integer_value(v) > max_id) max_id = (int)json_integer_value(v);
    }
    if (max_id < 0) return sp_fail(err, "%s: model.vocab is empty", origin);
    m->n_ids = max_id + 1;
    m->text = sp_xcalloc((size_t)m->n_ids, sizeof *m->text, "tokenizer vocabulary");
    m->n_text = sp_xcalloc((size_t)m->n_ids, sizeof *m->n_text, "tokenizer vocabulary");
    uint32_t size = table_size(json_object_size(vocab));
    m->vocab_mask = size - 1;
    m->vocab_slots = sp_xcalloc(size, sizeof *m->vocab_slots, "tokenizer vocabulary table");
    json_object_foreach(vocab, key, v) {
        int id = (int)json_integer_value(v);
        if (m->text[id])
            return sp_fail(err, "%s: model.vocab gives id %d to both \"%s\" and \"%s\"", origin, id, m->text[id], key);
        m->n_text[id] = strlen(key);
        m->text[id] = sp_xcalloc(m->n_text[id] + 1, 1, "tokenizer vocabulary");
        memcpy(m->text[id], key, m->n_text[id]);
        uint32_t i = (uint32_t)hash_bytes(key, m->n_text[id]) & m->vocab_mask;
        while (m->vocab_slots[i]) i = (i + 1) & m->vocab_mask; /* keys are unique in a JSON object */
        m->vocab_slots[i] = (uint32_t)id + 1;
    }
    return 0;
}

/* Splits merge number r into its two parts: "a b" (one space) or ["a", "b"]. */
static int merge_parts(json_t *merge, int r, const char *origin, const char **a, size_t *na, const char **b, size_t *nb,
                       sp_error *err) {
    if (json_is_string(merge)) {
        const char *s = json_string_value(merge), *sp = strchr(s, ' ');
        if (!sp || strchr(sp + 1, ' '))
            return sp_fail(err, "%s: model.merges[%d] = \"%s\" must be two tokens separated by one space", origin, r,
                           s);
        *a = s, *na = (size_t)(sp - s), *b = sp + 1, *nb = strlen(sp + 1);
        return 0;
    }
    if (json_is_array(merge) && json_array_size(merge) == 2 && json_is_string(json_array_get(merge, 0)) &&
        json_is_string(json_array_get(merge, 1))) {
        *a = json_string_value(json_array_get(merge, 0)), *na = json_string_length(json_array_get(merge, 0));
        *b = json_string_value(json_array_get(merge, 1)), *nb = json_string_length(json_array_get(merge, 1));
        return 0;
    }
    return sp_fail(err, "%s: model.merges[%d] must be a string \"a b\" or a list [\"a\", \"b\"]", origin, r);
}

static int read_merges(bpe_model *m, json_t *merges, const char *origin, sp_error *err) {
    if (!json_is_array(merges)) return sp_fail(err, "%s: model.merges must be a list", origin);
    if (json_array_size(merges) >= BPE_MAX_ID) return sp_fail(err, "%s: model.merges is too long", origin);
    m->n_merges = (int)json_array_size(merges);
    m->merge_left = sp_xcalloc((size_t)m->n_merges, sizeof(int), "tokenizer merges");
    m->merge_right = sp_xcalloc((size_t)m->n_merges, sizeof(int), "tokenizer merges");
    m->merge_result = sp_xcalloc((size_t)m->n_merges, sizeof(int), "tokenizer merges");
    uint32_t size = table_size((size_t)m->n_merges);
    m->merge_mask = size - 1;
    m->merge_slots = sp_xcalloc(size, sizeof *m->merge_slots, "tokenizer merge table");
    char *joined = NULL;
    size_t joined_cap = 0;
    for (int r = 0; r < m->n_merges; r++) {
        const char *a = NULL, *b = NULL;
        size_t na = 0, nb = 0;
        if (merge_parts(json_array_get(merges, (size_t)r), r, origin, &a, &na, &b, &nb, err)) goto fail;
        m->merge_left[r] = bpe_lookup(m, a, na);
        m->merge_right[r] = bpe_lookup(m, b, nb);
        if (na + nb + 1 > joined_cap) {
            joined_cap = 2 * (na + nb + 1);
            free(joined);
            joined = sp_xcalloc(joined_cap, 1, "tokenizer merges");
        }
        memcpy(joined, a, na);
        memcpy(joined + na, b, nb);
        joined[na + nb] = '\0';
        m->merge_result[r] = bpe_lookup(m, joined, na + nb);
        if (m->merge_left[r] < 0 || m->merge_right[r] < 0 || m->merge_result[r] < 0) {
            const char *missing = m->merge_left[r] < 0 ? a : m->merge_right[r] < 0 ? b : joined;
            size_t nmissing = m->merge_left[r] < 0 ? na : m->merge_right[r] < 0 ? nb : na + nb;
            sp_fail(err, "%s: model.merges[%d] uses \"%.*s\", which is not in model.vocab", origin, r, (int)nmissing,
                    missing);
            goto fail;
        }
        merge_insert(m, r);
    }
    free(joined);
    return 0;
fail:
    free(joined);
    return -1;
}

int bpe_build(bpe_model *m, json_t *model, const char *origin, sp_error *err) {
    memset(m, 0, sizeof *m);
    if (!json_is_object(model)) return sp_fail(err, "%s: \"model\" must be an object", origin);
    const char *type = json_string_value(json_object_get(model, "type"));
    if (!type || strcmp(type, "BPE"))
        return sp_fail(err, "%s: model.type is \"%s\"; only \"BPE\" is supported", origin, type ? type : "(missing)");
    if (check_absent_or(model, origin, "dropout", "null", err) ||
        check_absent_or(model, origin, "unk_token", "null", err) ||
        check_absent_or(model, origin, "continuing_subword_prefix", "\"\"", err) ||
        check_absent_or(model, origin, "end_of_word_suffix", "\"\"", err) ||
        check_absent_or(model, origin, "fuse_unk", "false", err) ||
        check_absent_or(model, origin, "byte_fallback", "false", err) ||
        check_absent_or(model, origin, "ignore_merges", "false", err))
        return -1;
    if (read_vocab(m, json_object_get(model, "vocab"), origin, err) ||
        read_merges(m, json_object_get(model, "merges"), origin, err))
        goto fail;
    for (int b = 0; b < 256; b++) {
        char sym[3];
        uint32_t cp = bpe_byte_to_cp((unsigned char)b);
        size_t n = 1;
        if (cp < 0x80) {
            sym[0] = (char)cp;
        } else {
            sym[0] = (char)(0xC0 | (cp >> 6)), sym[1] = (char)(0x80 | (cp & 0x3F)), n = 2;
        }
        m->byte_id[b] = bpe_lookup(m, sym, n);
        if (m->byte_id[b] < 0) {
            sp_fail(err,
                    "%s: model.vocab lacks \"%.*s\", the symbol of byte 0x%02x, so some text could not be encoded "
                    "(byte-level BPE needs all 256)",
                    origin, (int)n, sym, b);
            goto fail;
        }
    }
    return 0;
fail:
    bpe_free(m);
    return -1;
}

void bpe_free(bpe_model *m) {
    if (m->text)
        for (int i = 0; i < m->n_ids; i++) free(m->text[i]);
    free(m->text);
    free(m->n_text);
    free(m->vocab_slots);
    free(m->merge_left);
    free(m->merge_right);
    free(m->merge_result);
    free(m->merge_slots);
    memset(m, 0, sizeof *m);
}

/* ---- the merge loop ------------------------------------------------------- */

struct bpe_symbol {
    int id;
    int prev, next; /* neighbours in the word, -1 at the ends */
    int alive;      /* 0 once merged into its left neighbour */
};

struct bpe_candidate { /* a possible merge of symbol pos with its right neighbour */
    int rank, pos, result;
};

/* The candidate to apply first: lowest rank, then leftmost. */
static int before(const struct bpe_candidate *x, const struct bpe_candidate *y) {
    return x->rank != y->rank ? x->rank < y->rank : x->pos < y->pos;
}

static void heap_push(struct bpe_candidate *h, size_t *n, struct bpe_candidate c) {
    size_t i = (*n)++;
    while (i > 0 && before(&c, &h[(i - 1) / 2])) {
        h[i] = h[(i - 1) / 2];
        i = (i - 1) / 2;
    }
    h[i] = c;
}

static struct bpe_candidate heap_pop(struct bpe_candidate *h, size_t *n) {
    struct bpe_candidate top = h[0], last = h[--*n];
    size_t i = 0;
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= *n) break;
        if (c + 1 < *n && before(&h[c + 1], &h[c])) c++;
        if (!before(&h[c], &last)) break;
        h[i] = h[c];
        i = c;
    }
    if (*n) h[i] = last;
    return top;
}

static void push_if_merge(const bpe_model *m, struct bpe_candidate *h, size_t *nh, const struct bpe_symbol *sym,
                          int pos) {
    int r = merge_rank(m, sym[pos].id, sym[sym[pos].next].id);
    if (r >= 0) heap_push(h, nh, (struct bpe_candidate){r, pos, m->merge_result[r]});
}

void bpe_scratch_free(bpe_scratch *s) {
    free(s->sym);
    free(s->heap);
    memset(s, 0, sizeof *s);
}

size_t bpe_encode_word(const bpe_model *m, const unsigned char *word, size_t n, bpe_scratch *s, int *out) {
    if (n == 0) return 0;
    /* each merge removes one symbol and adds at most two candidates */
    if (n > s->sym_cap) {
        free(s->sym);
        free(s->heap);
        s->sym_cap = n;
        s->heap_cap = 3 * n;
        s->sym = sp_xcalloc(s->sym_cap, sizeof *s->sym, "BPE word");
        s->heap = sp_xcalloc(s->heap_cap, sizeof *s->heap, "BPE word");
    }
    struct bpe_symbol *sym = s->sym;
    struct bpe_candidate *heap = s->heap;
    size_t nh = 0;
    for (size_t i = 0; i < n; i++)
        sym[i] = (struct bpe_symbol){m->byte_id[word[i]], (int)i - 1, i + 1 < n ? (int)i + 1 : -1, 1};
    for (size_t i = 0; i + 1 < n; i++) push_if_merge(m, heap, &nh, sym, (int)i);
    while (nh) {
        struct bpe_candidate top = heap_pop(heap, &nh);
        struct bpe_symbol *cur = &sym[top.pos];
        if (!cur->alive || cur->next < 0) continue;
        /* Stale candidate: the symbols changed since it was pushed. Like the
         * `tokenizers` crate, only the merge result is compared. */
        int r = merge_rank(m, cur->id, sym[cur->next].id);
        if (r < 0 || m->merge_result[r] != top.result) continue;
        struct bpe_symbol *right = &sym[cur->next];
        cur->id = top.result;
        cur->next = right->next;
        right->alive = 0;
        if (cur->next >= 0) sym[cur->next].prev = top.pos;
        if (cur->prev >= 0) push_if_merge(m, heap, &nh, sym, cur->prev);
        if (cur->next >= 0) push_if_merge(m, heap, &nh, sym, top.pos);
    }
    size_t k = 0;
    for (int i = 0; i >= 0; i = sym[i].next) out[k++] = sym[i].id;
    return k;
}
