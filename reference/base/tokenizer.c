/* tokenizer.c — reading tokenizer.json (jansson), decoding, and the token
 * look-ups of tokenizer.h. Only Qwen's pipeline is accepted; every other
 * normaliser, pre-tokenizer, decoder or post-processor is refused by name.
 * Encoding is in tokenizer_encode.c. */
#define PCRE2_CODE_UNIT_WIDTH 8
#include "tokenizer.h"

#include <errno.h>
#include <jansson.h>
#include <pcre2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <utf8proc.h>

#include "regular_file.h"

/* ---- pipeline checks ------------------------------------------------------- */

/* A boolean field; `dflt` when absent or null (the `tokenizers` default). */
static int get_flag(json_t *obj, const char *field, int dflt) {
    json_t *v = json_object_get(obj, field);
    return json_is_boolean(v) ? json_is_true(v) : dflt;
}

static const char *type_of(json_t *obj) {
    const char *type = json_string_value(json_object_get(obj, "type"));
    return type ? type : "(no type)";
}

static int read_normalizer(tokenizer *t, json_t *norm, const char *origin, sp_error *err) {
    if (!norm || json_is_null(norm)) return 0;
    if (json_is_object(norm) && !strcmp(type_of(norm), "NFC")) {
        t->nfc = 1;
        return 0;
    }
    return sp_fail(err, "%s: normalizer \"%s\" is not supported (only NFC or null)", origin,
                   json_is_object(norm) ? type_of(norm) : "(not an object)");
}

/* The `tokenizers` package matches its Split regexes with Oniguruma, whose
 * \s is the Unicode White_Space property. PCRE2 10.42 with UCP also counts
 * U+180E MONGOLIAN VOWEL SEPARATOR as \s (through \h), which splits text
 * differently; spelling the property out makes both engines agree. Returns a
 * malloc'd copy of re with \s and \S replaced (escapes and \Q...\E kept). */
static char *onig_to_pcre2(const char *re) {
    size_t n = strlen(re);
    char *out = sp_xcalloc(8 * n + 1, 1, "regex"), *o = out; /* 2 bytes become at most 15 */
    for (size_t i = 0; i < n;) {
        if (re[i] != '\\' || i + 1 == n) {
            *o++ = re[i++];
        } else if (re[i + 1] == 's' || re[i + 1] == 'S') {
            o += sprintf(o, "\\%c{White_Space}", re[i + 1] == 's' ? 'p' : 'P');
            i += 2;
        } else if (re[i + 1] == 'Q') { /* quoted: copied up to and including \E */
            const char *end = strstr(re + i + 2, "\\E");
            size_t k = end ? (size_t)(end - (re + i)) + 2 : n - i;
            memcpy(o, re + i, k);
            o += k, i += k;
        } else { /* any other escape: its first two bytes, the rest needs no care */
            *o++ = re[i++];
            *o++ = re[i++];
        }
    }
    *o = '\0';
    return out;
}

static int compile_split(tokenizer *t, json_t *split, const char *origin, sp_error *err) {
    const char *behavior = json_string_value(json_object_get(split, "behavior"));
    if (!behavior || strcmp(behavior, "Isolated"))
        return sp_fail(err,
                       "%s: pre_tokenizer.pretokenizers[0] is a Split with behavior \"%s\"; only \"Isolated\" "
                       "is supported",
                       origin, behavior ? behavior : "(missing)");
    if (get_flag(split, "invert", 0))
        return sp_fail(err, "%s: pre_tokenizer.pretokenizers[0] is an inverted Split, which is not supported", origin);
    const char *re = json_string_value(json_object_get(json_object_get(split, "pattern"), "Regex"));
    if (!re)
        return sp_fail(err,
                       "%s: pre_tokenizer.pretokenizers[0] must have a pattern {\"Regex\": ...}; plain string "
                       "patterns are not supported",
                       origin);
    int code;
    PCRE2_SIZE at;
    char *pcre_re = onig_to_pcre2(re);
    pcre2_code *c = pcre2_compile((PCRE2_SPTR)pcre_re, PCRE2_ZERO_TERMINATED, PCRE2_UTF | PCRE2_UCP, &code, &at, NULL);
    free(pcre_re);
    if (!c) {
        PCRE2_UCHAR msg[256];
        pcre2_get_error_message(code, msg, sizeof msg);
        return sp_fail(
            err,
            "%s: pre_tokenizer.pretokenizers[0] regex does not compile with PCRE2 (offset %zu of its PCRE2 form): %s",
            origin, (size_t)at, (const char *)msg);
    }
    pcre2_jit_compile(c, PCRE2_JIT_COMPLETE); /* optional: the interpreter gives the same matches */
    t->split_re = c;
    return 0;
}

static int read_pre_tokenizer(tokenizer *t, json_t *pre, const char *origin, sp_error *err) {
    const char *want = "the Sequence [Split(Regex, Isolated), ByteLevel(add_prefix_space false, use_regex false)]";
    if (!json_is_object(pre) || strcmp(type_of(pre), "Sequence"))
        return sp_fail(err, "%s: pre_tokenizer \"%s\" is not supported; expected %s", origin,
                       json_is_object(pre) ? type_of(pre) : "(missing)", want);
    json_t *steps = json_object_get(pre, "pretokenizers");
    json_t *split = json_array_get(steps, 0), *bytelevel = json_array_get(steps, 1);
    if (json_array_size(steps) != 2 || strcmp(type_of(split), "Split") || strcmp(type_of(bytelevel), "ByteLevel"))
        return sp_fail(err, "%s: pre_tokenizer Sequence of %zu steps (%s, ...) is not supported; expected %s", origin,
                       json_array_size(steps), split ? type_of(split) : "none", want);
    /* the `tokenizers` defaults are true for both */
    if (get_flag(bytelevel, "add_prefix_space", 1) || get_flag(bytelevel, "use_regex", 1))
        return sp_fail(err, "%s: pre_tokenizer ByteLevel must have add_prefix_space false and use_regex false", origin);
    return compile_split(t, split, origin, err);
}

static int read_pipeline(tokenizer *t, json_t *root, const char *origin, sp_error *err) {
    static const char *unused[] = {"truncation", "padding"};
    for (int i = 0; i < 2; i++) {
        json_t *v = json_object_get(root, unused[i]);
        if (v && !json_is_null(v))
            return sp_fail(err, "%s: \"%s\" must be null; it is not supported", origin, unused[i]);
    }
    json_t *dec = json_object_get(root, "decoder");
    if (!json_is_object(dec) || strcmp(type_of(dec), "ByteLevel"))
        return sp_fail(err, "%s: decoder \"%s\" is not supported (only ByteLevel)", origin,
                       json_is_object(dec) ? type_of(dec) : "(missing)");
    json_t *post = json_object_get(root, "post_processor");
    if (post && !json_is_null(post) && (!json_is_object(post) || strcmp(type_of(post), "ByteLevel")))
        return sp_fail(err, "%s: post_processor \"%s\" is not supported (only ByteLevel or null, which add no tokens)",
                       origin, json_is_object(post) ? type_of(post) : "(not an object)");
    if (read_normalizer(t, json_object_get(root, "normalizer"), origin, err)) return -1;
    return read_pre_tokenizer(t, json_object_get(root, "pre_tokenizer"), origin, err);
}

/* ---- added tokens ------------------------------------------------------------ */

static int read_added(tokenizer *t, json_t *list, const char *origin, sp_error *err) {
    if (!list || json_is_null(list)) return 0;
    if (!json_is_array(list)) return sp_fail(err, "%s: \"added_tokens\" must be a list", origin);
    t->added = sp_xcalloc(json_array_size(list), sizeof *t->added, "added tokens");
    for (size_t i = 0; i < json_array_size(list); i++) {
        json_t *a = json_array_get(list, i);
        json_t *id = json_object_get(a, "id"), *content = json_object_get(a, "content");
        if (!json_is_integer(id) || json_integer_value(id) < 0 || json_integer_value(id) >= (1 << 24))
            return sp_fail(err, "%s: added_tokens[%zu].id must be an integer in [0, %d)", origin, i, 1 << 24);
        if (!json_is_string(content) || json_string_length(content) == 0)
            return sp_fail(err, "%s: added_tokens[%zu].content must be a non-empty string", origin, i);
        tokenizer_added *e = &t->added[t->n_added++];
        e->id = (int)json_integer_value(id);
        e->special = get_flag(a, "special", 0);
        e->single_word = get_flag(a, "single_word", 0);
        e->lstrip = get_flag(a, "lstrip", 0);
        e->rstrip = get_flag(a, "rstrip", 0);
        e->normalized = get_flag(a, "normalized", !e->special);
        e->len = json_string_length(content);
        e->content = sp_xcalloc(e->len + 1, 1, "added token");
        memcpy(e->content, json_string_value(content), e->len);
        if (e->normalized && t->nfc) { /* searched for in NFC text, so written in NFC too */
            utf8proc_uint8_t *nfc = NULL;
            utf8proc_ssize_t n = utf8proc_map((const utf8proc_uint8_t *)e->content, (utf8proc_ssize_t)e->len, &nfc,
                                              UTF8PROC_STABLE | UTF8PROC_COMPOSE);
            if (n < 0) return sp_fail(err, "%s: added_tokens[%zu].content cannot be NFC-normalised", origin, i);
            e->pattern = (char *)nfc, e->pattern_len = (size_t)n;
        } else {
            e->pattern = sp_xcalloc(e->len + 1, 1, "added token");
            memcpy(e->pattern, e->content, e->len + 1);
            e->pattern_len = e->len;
        }
        for (int j = 0; j + 1 < t->n_added; j++)
            if (t->added[j].id == e->id) return sp_fail(err, "%s: added_tokens[%zu] reuses id %d", origin, i, e->id);
        /* the vocabulary's piece of the same id must be this token (some files list a piece again as added) */
        const int in_vocab = e->id < t->bpe.n_ids && t->bpe.text[e->id];
        if (in_vocab && (t->bpe.n_text[e->id] != e->len || memcmp(t->bpe.text[e->id], e->content, e->len)))
            return sp_fail(err, "%s: added_tokens[%zu] \"%s\" takes id %d, which the vocabulary gives to \"%.*s\"",
                           origin, i, e->content, e->id, (int)t->bpe.n_text[e->id], t->bpe.text[e->id]);
    }
    return 0;
}

/* ---- tables of every id ------------------------------------------------------ */

/* What the ByteLevel decoder makes of one token: when every character is in
 * the byte mapping, the mapped bytes; otherwise the token's own UTF-8 (how
 * `tokenizers` decodes "<|im_start|>"-like text it cannot map). */
static void token_bytes(const char *s, size_t n, unsigned char **out, size_t *nout) {
    unsigned char *b = sp_xcalloc(n + 1, 1, "token bytes");
    size_t k = 0;
    for (size_t i = 0; i < n;) {
        utf8proc_int32_t cp;
        utf8proc_ssize_t step = utf8proc_iterate((const utf8proc_uint8_t *)s + i, (utf8proc_ssize_t)(n - i), &cp);
        int byte = step > 0 ? bpe_cp_to_byte((uint32_t)cp) : -1;
        if (byte < 0) {
            memcpy(b, s, n);
            k = n;
            break;
        }
        b[k++] = (unsigned char)byte;
        i += (size_t)step;
    }
    *out = b, *nout = k;
}

static void build_id_tables(tokenizer *t) {
    int v = t->bpe.n_ids;
    for (int i = 0; i < t->n_added; i++)
        if (t->added[i].id >= v) v = t->added[i].id + 1;
    t->vocab_size = v;
    t->text = sp_xcalloc((size_t)v, sizeof *t->text, "token table");
    t->bytes = sp_xcalloc((size_t)v, sizeof *t->bytes, "token table");
    t->n_bytes = sp_xcalloc((size_t)v, sizeof *t->n_bytes, "token table");
    size_t *n_text = sp_xcalloc((size_t)v, sizeof *n_text, "token table");
    for (int id = 0; id < t->bpe.n_ids; id++) t->text[id] = t->bpe.text[id], n_text[id] = t->bpe.n_text[id];
    for (int i = 0; i < t->n_added; i++) /* an added token wins over a vocabulary entry of the same id */
        t->text[t->added[i].id] = t->added[i].content, n_text[t->added[i].id] = t->added[i].len;
    for (int id = 0; id < v; id++)
        if (t->text[id]) token_bytes(t->text[id], n_text[id], &t->bytes[id], &t->n_bytes[id]);
    free(n_text);
}

/* ---- load / free ------------------------------------------------------------- */

int tokenizer_parse(tokenizer *t, const char *json_text, size_t len, const char *origin, sp_error *err) {
    memset(t, 0, sizeof *t);
    json_error_t jerr;
    json_t *root = json_loadb(json_text, len, JSON_REJECT_DUPLICATES, &jerr);
    if (!root)
        return sp_fail(err, "%s: not valid JSON (line %d, column %d): %s", origin, jerr.line, jerr.column, jerr.text);
    int rc = -1;
    if (!json_is_object(root)) {
        sp_fail(err, "%s: the top level must be an object", origin);
    } else if (!read_pipeline(t, root, origin, err) &&
               !bpe_build(&t->bpe, json_object_get(root, "model"), origin, err) &&
               !read_added(t, json_object_get(root, "added_tokens"), origin, err)) {
        build_id_tables(t);
        rc = 0;
    }
    json_decref(root);
    if (rc) tokenizer_free(t);
    return rc;
}

int tokenizer_load(tokenizer *t, const char *path, sp_error *err) {
    memset(t, 0, sizeof *t);
    char file[4096];
    struct stat st;
    if (stat(path, &st)) return sp_fail(err, "cannot open tokenizer %s: %s", path, strerror(errno));
    snprintf(file, sizeof file, S_ISDIR(st.st_mode) ? "%s/tokenizer.json" : "%s", path);
    FILE *f = regular_fopen(file, NULL, err);
    if (!f) return -1;
    size_t cap = 1 << 20, n = 0, got;
    char *buf = sp_xcalloc(cap, 1, "tokenizer.json");
    while ((got = fread(buf + n, 1, cap - n, f)) > 0) {
        n += got;
        if (n == cap) {
            char *bigger = sp_xcalloc(2 * cap, 1, "tokenizer.json");
            memcpy(bigger, buf, n);
            free(buf);
            buf = bigger, cap *= 2;
        }
    }
    int bad = ferror(f);
    fclose(f);
    int rc = bad ? sp_fail(err, "cannot read tokenizer %s", file) : tokenizer_parse(t, buf, n, file, err);
    free(buf);
    return rc;
}

void tokenizer_free(tokenizer *t) {
    pcre2_code_free(t->split_re); /* accepts NULL */
    for (int i = 0; i < t->n_added; i++) free(t->added[i].content), free(t->added[i].pattern);
    free(t->added);
    if (t->bytes)
        for (int i = 0; i < t->vocab_size; i++) free(t->bytes[i]);
    free(t->bytes);
    free(t->n_bytes);
    free(t->text);
    bpe_free(&t->bpe);
    memset(t, 0, sizeof *t);
}

/* ---- decoding and look-ups ---------------------------------------------------- */

int tokenizer_decode(const tokenizer *t, const int *ids, int n, char **out, size_t *len, sp_error *err) {
    *out = NULL, *len = 0;
    size_t total = 0;
    for (int i = 0; i < n; i++) {
        if (ids[i] < 0 || ids[i] >= t->vocab_size || !t->text[ids[i]])
            return sp_fail(err, "decode: id %d at position %d is not a token of this tokenizer (vocabulary of %d)",
                           ids[i], i, t->vocab_size);
        total += t->n_bytes[ids[i]];
    }
    char *s = sp_xcalloc(total + 1, 1, "decoded text");
    for (int i = 0; i < n; i++) {
        memcpy(s + *len, t->bytes[ids[i]], t->n_bytes[ids[i]]);
        *len += t->n_bytes[ids[i]];
    }
    *out = s;
    return 0;
}

int tokenizer_vocab_size(const tokenizer *t) { return t->vocab_size; }

const char *tokenizer_token_text(const tokenizer *t, int id) {
    return id >= 0 && id < t->vocab_size ? t->text[id] : NULL;
}

const unsigned char *tokenizer_token_bytes(const tokenizer *t, int id, size_t *len) {
    if (id < 0 || id >= t->vocab_size || !t->text[id]) return NULL;
    *len = t->n_bytes[id];
    return t->bytes[id];
}

int tokenizer_token_id(const tokenizer *t, const char *text) {
    for (int i = 0; i < t->n_added; i++)
        if (!strcmp(t->added[i].content, text)) return t->added[i].id;
    return bpe_lookup(&t->bpe, text, strlen(text));
}

int tokenizer_is_special(const tokenizer *t, int id) {
    for (int i = 0; i < t->n_added; i++)
        if (t->added[i].id == id) return t->added[i].special;
    return 0;
}
