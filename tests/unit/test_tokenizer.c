/* test_tokenizer.c — the C tokenizer against the ids the `tokenizers` package gives (tests/data/tokenizer/, made by
 * tools/train/tokenizer_expected.py), decoding back, and every kind of bad input. The Qwen3 and whole-corpus cases
 * need ../shared/data and are reported skipped without it. */
#include <check.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "tokenizer.h"

#define DATA "tests/data/tokenizer/"
#define EMBEDDED "models/tiny-shakespeare"

/* ---- fixtures ----------------------------------------------------------------- */

static char *read_all(const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    ck_assert_msg(f != NULL, "cannot open %s", path);
    ck_assert_int_eq(fseek(f, 0, SEEK_END), 0);
    long n = ftell(f);
    ck_assert_int_ge(n, 0);
    rewind(f);
    char *buf = malloc((size_t)n + 1);
    ck_assert_ptr_nonnull(buf);
    ck_assert_uint_eq(fread(buf, 1, (size_t)n, f), (size_t)n);
    fclose(f);
    buf[n] = '\0';
    *len = (size_t)n;
    return buf;
}

typedef struct {
    int n_records;
    int *n;    /* [n_records] */
    int **ids; /* [n_records][n[r]] */
} id_records;

/* Reads the LEB128 varint records written by tokenizer_expected.py. Plain
 * ifs, not ck_assert: every passing ck_assert writes to Check's pipe, and
 * there are 1.5 million varints. */
static int read_varint(const unsigned char *p, size_t len, size_t *at, const char *path) {
    unsigned long long v = 0;
    for (int shift = 0;; shift += 7) {
        if (*at >= len || shift >= 35) ck_abort_msg("%s: truncated or oversized varint at byte %zu", path, *at);
        unsigned char b = p[(*at)++];
        v |= (unsigned long long)(b & 0x7F) << shift;
        if (!(b & 0x80)) break;
    }
    if (v >= (1u << 30)) ck_abort_msg("%s: value %llu out of range", path, v);
    return (int)v;
}

static id_records read_records(const char *path) {
    size_t len, at = 0;
    unsigned char *p = (unsigned char *)read_all(path, &len);
    id_records r = {0, NULL, NULL};
    while (at < len) {
        r.n = realloc(r.n, (size_t)(r.n_records + 1) * sizeof *r.n);
        r.ids = realloc(r.ids, (size_t)(r.n_records + 1) * sizeof *r.ids);
        ck_assert(r.n && r.ids);
        int n = read_varint(p, len, &at, path);
        int *ids = malloc((size_t)(n ? n : 1) * sizeof *ids);
        ck_assert_ptr_nonnull(ids);
        for (int i = 0; i < n; i++) ids[i] = read_varint(p, len, &at, path);
        r.n[r.n_records] = n, r.ids[r.n_records++] = ids;
    }
    free(p);
    return r;
}

static void free_records(id_records *r) {
    for (int i = 0; i < r->n_records; i++) free(r->ids[i]);
    free(r->n);
    free(r->ids);
}

static void load_ok(tokenizer *t, const char *path) {
    sp_error err = {{0}};
    ck_assert_msg(tokenizer_load(t, path, &err) == 0, "loading %s: %s", path, err.msg);
}

/* Encodes text and requires exactly `want`; names the first difference. */
static void expect_ids(const tokenizer *t, const char *text, size_t len, const int *want, int n_want,
                       const char *what) {
    sp_error err = {{0}};
    int *ids, n;
    ck_assert_msg(tokenizer_encode(t, text, len, &ids, &n, &err) == 0, "%s: %s", what, err.msg);
    int i = 0;
    while (i < n && i < n_want && ids[i] == want[i]) i++;
    if (i < n || i < n_want) {
        const char *got_s = i < n ? tokenizer_token_text(t, ids[i]) : "(end)";
        const char *want_s = i < n_want ? tokenizer_token_text(t, want[i]) : "(end)";
        ck_abort_msg("%s: %d ids, expected %d; first difference at id %d: got %d \"%s\", expected %d \"%s\"", what, n,
                     n_want, i, i < n ? ids[i] : -1, got_s ? got_s : "?", i < n_want ? want[i] : -1,
                     want_s ? want_s : "?");
    }
    free(ids);
}

/* Decoding ids gives exactly want[0..len). */
static void expect_decode(const tokenizer *t, const int *ids, int n, const char *want, size_t len, const char *what) {
    sp_error err = {{0}};
    char *out;
    size_t n_out;
    ck_assert_msg(tokenizer_decode(t, ids, n, &out, &n_out, &err) == 0, "%s: %s", what, err.msg);
    size_t i = 0;
    while (i < n_out && i < len && out[i] == want[i]) i++;
    ck_assert_msg(i == n_out && i == len, "%s: decoded %zu bytes, expected %zu; first difference at byte %zu", what,
                  n_out, len, i);
    free(out);
}

/* A whole text against its one record: encode, then decode back. */
static void check_text(const char *tok_path, const char *text_path, const char *ids_path) {
    tokenizer t;
    load_ok(&t, tok_path);
    size_t len;
    char *text = read_all(text_path, &len);
    id_records r = read_records(ids_path);
    ck_assert_int_eq(r.n_records, 1);
    expect_ids(&t, text, len, r.ids[0], r.n[0], text_path);
    expect_decode(&t, r.ids[0], r.n[0], text, len, text_path);
    free_records(&r);
    free(text);
    tokenizer_free(&t);
}

/* stress.txt whole and line by line; decoding gives the NFC form back. */
static void check_stress(const char *tok_path, const char *ids_path) {
    tokenizer t;
    load_ok(&t, tok_path);
    size_t len, nfc_len;
    char *text = read_all(DATA "stress.txt", &len), *nfc = read_all(DATA "stress.nfc.txt", &nfc_len);
    id_records r = read_records(ids_path);
    expect_ids(&t, text, len, r.ids[0], r.n[0], "stress.txt");
    expect_decode(&t, r.ids[0], r.n[0], nfc, nfc_len, "stress.txt");
    const char *line = text, *nfc_line = nfc;
    int k = 1;
    for (;; k++) {
        const char *end = memchr(line, '\n', (size_t)(text + len - line));
        const char *nfc_end = memchr(nfc_line, '\n', (size_t)(nfc + nfc_len - nfc_line));
        ck_assert_msg(k < r.n_records, "%s has fewer records than stress.txt has lines", ids_path);
        char what[64];
        snprintf(what, sizeof what, "stress.txt line %d", k);
        size_t n = end ? (size_t)(end - line) : (size_t)(text + len - line);
        size_t n_nfc = nfc_end ? (size_t)(nfc_end - nfc_line) : (size_t)(nfc + nfc_len - nfc_line);
        expect_ids(&t, line, n, r.ids[k], r.n[k], what);
        expect_decode(&t, r.ids[k], r.n[k], nfc_line, n_nfc, what);
        if (!end) break;
        ck_assert_ptr_nonnull(nfc_end);
        line = end + 1, nfc_line = nfc_end + 1;
    }
    ck_assert_int_eq(k + 1, r.n_records);
    free_records(&r);
    free(text);
    free(nfc);
    tokenizer_free(&t);
}

/* ---- the embedded tokenizer (always runs) ---------------------------------------- */

START_TEST(test_embedded_excerpt) { check_text(EMBEDDED, DATA "excerpt.txt", DATA "embedded.excerpt.ids"); }
END_TEST

START_TEST(test_embedded_stress) { check_stress(EMBEDDED "/tokenizer.json", DATA "embedded.stress.ids"); }
END_TEST

START_TEST(test_embedded_lookups) {
    tokenizer t;
    load_ok(&t, EMBEDDED);
    ck_assert_int_eq(tokenizer_vocab_size(&t), 512);
    int eos = tokenizer_token_id(&t, "<|endoftext|>");
    ck_assert_int_eq(eos, 509);
    ck_assert_int_eq(tokenizer_token_id(&t, "<|im_start|>"), 510);
    ck_assert_int_eq(tokenizer_token_id(&t, "<|im_end|>"), 511);
    ck_assert_int_eq(tokenizer_token_id(&t, "<think>"), -1);
    ck_assert(tokenizer_is_special(&t, eos));
    ck_assert(!tokenizer_is_special(&t, tokenizer_token_id(&t, "Ġ")));
    ck_assert_str_eq(tokenizer_token_text(&t, eos), "<|endoftext|>");
    ck_assert_ptr_null(tokenizer_token_text(&t, 512));
    ck_assert_ptr_null(tokenizer_token_text(&t, -1));
    size_t n;
    const unsigned char *b = tokenizer_token_bytes(&t, tokenizer_token_id(&t, "Ġ"), &n);
    ck_assert(b && n == 1 && b[0] == ' ');
    b = tokenizer_token_bytes(&t, tokenizer_token_id(&t, "Ċ"), &n);
    ck_assert(b && n == 1 && b[0] == '\n');
    b = tokenizer_token_bytes(&t, eos, &n);
    ck_assert(b && n == 13 && !memcmp(b, "<|endoftext|>", 13));
    /* every one of the 256 bytes is a token, so any UTF-8 text round-trips */
    const char *odd = "\x01\x7f\xc3\xa9\xf0\x9f\x98\x80 \t\r\n\xe2\x80\xa8";
    int *ids, k;
    sp_error err;
    ck_assert_int_eq(tokenizer_encode(&t, odd, strlen(odd), &ids, &k, &err), 0);
    expect_decode(&t, ids, k, odd, strlen(odd), "odd bytes");
    free(ids);
    ck_assert_int_eq(tokenizer_encode(&t, "", 0, &ids, &k, &err), 0);
    ck_assert_int_eq(k, 0);
    free(ids);
    tokenizer_free(&t);
}
END_TEST

/* Very long words and runs: one BPE word of 100k letters, 200k spaces (a
 * single regex match), 30k two-byte letters. Round trip only: the `tokenizers`
 * ids for these are not stored, the point is no crash and no regex limit. */
START_TEST(test_embedded_long_runs) {
    tokenizer t;
    load_ok(&t, EMBEDDED);
    size_t n = 200000;
    char *s = malloc(n + 2);
    ck_assert_ptr_nonnull(s);
    const char *fills[3] = {"a", " ", "\xc3\xa9"};
    for (int f = 0; f < 3; f++) {
        size_t k = strlen(fills[f]), len = 0;
        while (len + k <= (f == 0 ? n / 2 : n)) memcpy(s + len, fills[f], k), len += k;
        s[len++] = 'x';
        int *ids, m;
        sp_error err;
        ck_assert_msg(tokenizer_encode(&t, s, len, &ids, &m, &err) == 0, "fill %d: %s", f, err.msg);
        ck_assert_int_le(m, (int)len);
        expect_decode(&t, ids, m, s, len, fills[f]);
        free(ids);
    }
    free(s);
    tokenizer_free(&t);
}
END_TEST

/* GPT-2's table, built the way GPT-2's encoder builds it: the printable
 * bytes keep their code point, the others take 256, 257, ... in byte order. */
START_TEST(test_byte_mapping) {
    int next = 256;
    for (int b = 0; b < 256; b++) {
        int printable = (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || b >= 0xAE;
        uint32_t want = printable ? (uint32_t)b : (uint32_t)next++;
        ck_assert_uint_eq(bpe_byte_to_cp((unsigned char)b), want);
        ck_assert_int_eq(bpe_cp_to_byte(want), b);
    }
    ck_assert_int_eq(next, 256 + 68);
    ck_assert_int_eq(bpe_cp_to_byte(0x20), -1); /* a space is never a symbol itself */
    ck_assert_int_eq(bpe_cp_to_byte(0x144), -1);
    ck_assert_int_eq(bpe_cp_to_byte(0x4E00), -1);
}
END_TEST

/* The older merges format, "a b" strings, must give the same tokenizer. */
START_TEST(test_string_merges) {
    json_error_t jerr;
    json_t *root = json_load_file(EMBEDDED "/tokenizer.json", 0, &jerr);
    ck_assert_msg(root != NULL, "%s", jerr.text);
    json_t *merges = json_object_get(json_object_get(root, "model"), "merges");
    ck_assert(json_array_size(merges) > 200);
    for (size_t i = 0; i < json_array_size(merges); i++) {
        json_t *pair = json_array_get(merges, i);
        char buf[256];
        snprintf(buf, sizeof buf, "%s %s", json_string_value(json_array_get(pair, 0)),
                 json_string_value(json_array_get(pair, 1)));
        json_array_set_new(merges, i, json_string(buf));
    }
    char *text = json_dumps(root, 0);
    json_decref(root);
    tokenizer t;
    sp_error err;
    ck_assert_msg(tokenizer_parse(&t, text, strlen(text), "string-merges", &err) == 0, "%s", err.msg);
    free(text);
    size_t len;
    char *excerpt = read_all(DATA "excerpt.txt", &len);
    id_records r = read_records(DATA "embedded.excerpt.ids");
    expect_ids(&t, excerpt, len, r.ids[0], r.n[0], "excerpt with string merges");
    free_records(&r);
    free(excerpt);
    tokenizer_free(&t);
}
END_TEST

/* ---- bad input: a clear error, never a crash ---------------------------------------- */

/* The embedded tokenizer.json with one edit: `path` (dot-separated object
 * keys) set to the JSON value `value`; must fail with a message holding `want`. */
static void expect_load_error(const char *path, const char *value, const char *want) {
    json_error_t jerr;
    json_t *root = json_load_file(EMBEDDED "/tokenizer.json", 0, &jerr);
    ck_assert_ptr_nonnull(root);
    char key[128];
    snprintf(key, sizeof key, "%s", path);
    json_t *obj = root;
    char *dot, *k = key;
    while ((dot = strchr(k, '.'))) {
        *dot = '\0';
        obj = json_object_get(obj, k);
        ck_assert_ptr_nonnull(obj);
        k = dot + 1;
    }
    json_t *v = json_loads(value, JSON_DECODE_ANY, &jerr);
    ck_assert_msg(v != NULL, "bad test value %s", value);
    json_object_set_new(obj, k, v);
    char *text = json_dumps(root, 0);
    json_decref(root);
    tokenizer t;
    sp_error err = {{0}};
    ck_assert_msg(tokenizer_parse(&t, text, strlen(text), "edited.json", &err) == -1, "%s = %s was accepted", path,
                  value);
    ck_assert_msg(strstr(err.msg, want) && strstr(err.msg, "edited.json"), "%s = %s: message \"%s\" lacks \"%s\"", path,
                  value, err.msg, want);
    free(text);
}

START_TEST(test_load_errors) {
    tokenizer t;
    sp_error err = {{0}};
    ck_assert_int_eq(tokenizer_load(&t, "tests/data/tokenizer/no-such-file.json", &err), -1);
    ck_assert_msg(strstr(err.msg, "no-such-file.json"), "%s", err.msg);
    char dir[512];
    harness_tmpdir(dir, sizeof dir);
    ck_assert_int_eq(tokenizer_load(&t, dir, &err), -1); /* a directory without tokenizer.json */
    ck_assert_msg(strstr(err.msg, "tokenizer.json"), "%s", err.msg);
    char file[600];
    snprintf(file, sizeof file, "%s/tokenizer.json", dir);
    harness_write_file(file, "{\"model\": {\"type\": \"BPE\", \"vocab\": {", 36);
    ck_assert_int_eq(tokenizer_load(&t, dir, &err), -1);
    ck_assert_msg(strstr(err.msg, "not valid JSON") && strstr(err.msg, file), "%s", err.msg);
    harness_write_file(file, "[1, 2]", 6);
    ck_assert_int_eq(tokenizer_load(&t, file, &err), -1);
    ck_assert_msg(strstr(err.msg, "top level"), "%s", err.msg);
    harness_rmtree(dir);

    expect_load_error("pre_tokenizer", "{\"type\": \"Metaspace\", \"replacement\": \"_\"}", "Metaspace");
    expect_load_error("pre_tokenizer", "{\"type\": \"ByteLevel\", \"add_prefix_space\": false, \"use_regex\": true}",
                      "pre_tokenizer \"ByteLevel\" is not supported");
    expect_load_error("pre_tokenizer.pretokenizers",
                      "[{\"type\": \"ByteLevel\", \"add_prefix_space\": false, \"use_regex\": true}]", "Sequence of 1");
    expect_load_error(
        "pre_tokenizer.pretokenizers",
        "[{\"type\": \"Split\", \"pattern\": {\"Regex\": \"\\\\s+\"}, \"behavior\": \"Removed\", "
        "\"invert\": false}, {\"type\": \"ByteLevel\", \"add_prefix_space\": false, \"use_regex\": false}]",
        "Removed");
    expect_load_error("pre_tokenizer.pretokenizers",
                      "[{\"type\": \"Split\", \"pattern\": {\"Regex\": \"(unclosed\"}, \"behavior\": \"Isolated\"}, "
                      "{\"type\": \"ByteLevel\", \"add_prefix_space\": false, \"use_regex\": false}]",
                      "does not compile");
    expect_load_error("pre_tokenizer.pretokenizers",
                      "[{\"type\": \"Split\", \"pattern\": {\"String\": \" \"}, \"behavior\": \"Isolated\"}, "
                      "{\"type\": \"ByteLevel\", \"add_prefix_space\": false, \"use_regex\": false}]",
                      "Regex");
    expect_load_error("normalizer", "{\"type\": \"NFKC\"}", "NFKC");
    expect_load_error("decoder", "null", "decoder");
    expect_load_error("post_processor", "{\"type\": \"TemplateProcessing\"}", "TemplateProcessing");
    expect_load_error("truncation", "{\"max_length\": 8}", "truncation");
    expect_load_error("model.type", "\"WordPiece\"", "WordPiece");
    expect_load_error("model.byte_fallback", "true", "byte_fallback");
    expect_load_error("model.merges", "[[\"a\", \"zzz\"]]", "zzz");
    expect_load_error("model.merges", "[\"a b c\"]", "one space");
    expect_load_error("model.merges", "[42]", "merges[0]");
    expect_load_error("model.vocab", "{\"a\": 0, \"b\": 0}", "id 0");
    expect_load_error("model", "{\"type\": \"BPE\", \"vocab\": {\"a\": 0, \"b\": 1}, \"merges\": []}", "byte 0x");
    expect_load_error("added_tokens", "[{\"id\": -3, \"content\": \"x\"}]", "added_tokens[0].id");
    expect_load_error("added_tokens", "[{\"id\": 600, \"content\": \"\"}]", "content");
    /* a special token on a vocabulary piece's id: which does the id mean? */
    expect_load_error("added_tokens", "[{\"id\": 5, \"content\": \"<|x|>\", \"special\": true}]",
                      "added_tokens[0] \"<|x|>\" takes id 5, which the vocabulary gives to");
    const char *dup = "{\"model\": {}, \"model\": {}}"; /* a key given twice: which one is meant? */
    ck_assert_int_eq(tokenizer_parse(&t, dup, strlen(dup), "dup.json", &err), -1);
    ck_assert_msg(strstr(err.msg, "duplicate object key"), "%s", err.msg);
}
END_TEST

START_TEST(test_bad_utf8_and_ids) {
    tokenizer t;
    load_ok(&t, EMBEDDED);
    static const struct {
        const char *text;
        size_t offset;
    } bad[] = {
        {"ok \x80", 3},          /* a continuation byte alone */
        {"ab\xe2\x82", 2},       /* cut short at the end */
        {"\xe2\x82x", 0},        /* cut short by an ASCII byte */
        {"x\xc0\xaf", 1},        /* overlong '/' */
        {"\xe0\x80\xaf", 0},     /* overlong, three bytes */
        {"e\xed\xa0\x80", 1},    /* a UTF-16 surrogate */
        {"\xf4\x90\x80\x80", 0}, /* past U+10FFFF */
        {"caf\xc3\xa9 \xff", 6}, /* 0xff never appears in UTF-8 */
        {"<|im_end|>\xfe", 10},  /* after a special token */
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        int *ids = (int *)&t, n = 7; /* must be reset even on failure */
        sp_error err = {{0}};
        ck_assert_int_eq(tokenizer_encode(&t, bad[i].text, strlen(bad[i].text), &ids, &n, &err), -1);
        char want[64];
        snprintf(want, sizeof want, "offset %zu", bad[i].offset);
        ck_assert_msg(strstr(err.msg, "UTF-8") && strstr(err.msg, want), "case %zu: \"%s\" lacks \"%s\"", i, err.msg,
                      want);
        ck_assert_ptr_null(ids);
        ck_assert_int_eq(n, 0);
    }
    int ids[3] = {5, 512, 6};
    char *out = (char *)&t;
    size_t len;
    sp_error err = {{0}};
    ck_assert_int_eq(tokenizer_decode(&t, ids, 3, &out, &len, &err), -1);
    ck_assert_msg(strstr(err.msg, "id 512") && strstr(err.msg, "position 1"), "%s", err.msg);
    ck_assert_ptr_null(out);
    ids[1] = -1;
    ck_assert_int_eq(tokenizer_decode(&t, ids, 3, &out, &len, &err), -1);
    tokenizer_free(&t);
}
END_TEST

/* ---- with ../shared/data ------------------------------------------------------------- */

START_TEST(test_embedded_corpus) {
    check_text(EMBEDDED, harness_shared_data("tinyshakespeare.txt"), DATA "embedded.corpus.ids");
}
END_TEST

START_TEST(test_qwen3_corpus) {
    char qwen[4096]; /* harness_shared_data reuses one buffer */
    snprintf(qwen, sizeof qwen, "%s", harness_shared_data("qwen3-tokenizer/tokenizer.json"));
    check_text(qwen, harness_shared_data("tinyshakespeare.txt"), DATA "qwen3.corpus.ids");
}
END_TEST

START_TEST(test_qwen3_stress) {
    check_stress(harness_shared_data("qwen3-tokenizer/tokenizer.json"), DATA "qwen3.stress.ids");
}
END_TEST

START_TEST(test_qwen3_lookups) {
    tokenizer t;
    load_ok(&t, harness_shared_data("qwen3-tokenizer"));
    ck_assert_int_eq(tokenizer_vocab_size(&t), 151669);
    ck_assert_int_eq(tokenizer_token_id(&t, "<|endoftext|>"), 151643);
    ck_assert_int_eq(tokenizer_token_id(&t, "<|im_start|>"), 151644);
    ck_assert_int_eq(tokenizer_token_id(&t, "</think>"), 151668);
    ck_assert(tokenizer_is_special(&t, 151645));
    ck_assert(!tokenizer_is_special(&t, 151667)); /* <think> is added but not special */
    ck_assert_int_eq(tokenizer_token_id(&t, "Ġthe"), 279);
    tokenizer_free(&t);
}
END_TEST

Suite *tokenizer_suite(void) {
    Suite *s = suite_create("tokenizer");
    TCase *tc = harness_tcase("embedded", 30);
    tcase_add_test(tc, test_embedded_excerpt);
    tcase_add_test(tc, test_embedded_stress);
    tcase_add_test(tc, test_embedded_lookups);
    tcase_add_test(tc, test_embedded_long_runs);
    tcase_add_test(tc, test_byte_mapping);
    tcase_add_test(tc, test_string_merges);
    tcase_add_test(tc, test_load_errors);
    tcase_add_test(tc, test_bad_utf8_and_ids);
    suite_add_tcase(s, tc);

    /* Each of these tests loads Qwen's 11 MB tokenizer.json, slow under the sanitizers: the limit leaves room for
     * it (the load times are in docs/verification.md). */
    TCase *shared = harness_tcase("shared-data", 60);
    int corpus = harness_shared_data("tinyshakespeare.txt") != NULL;
    int qwen = harness_shared_data("qwen3-tokenizer/tokenizer.json") != NULL;
    const char *no_corpus = "../shared/data/tinyshakespeare.txt is absent (the excerpt test still runs)";
    const char *no_qwen = "../shared/data/qwen3-tokenizer/tokenizer.json is absent (not part of the repository)";
    if (corpus)
        tcase_add_test(shared, test_embedded_corpus);
    else
        harness_skip("tokenizer", "embedded_corpus", no_corpus);
    if (corpus && qwen)
        tcase_add_test(shared, test_qwen3_corpus);
    else
        harness_skip("tokenizer", "qwen3_corpus", qwen ? no_corpus : no_qwen);
    if (qwen) {
        tcase_add_test(shared, test_qwen3_stress);
        tcase_add_test(shared, test_qwen3_lookups);
    } else {
        harness_skip("tokenizer", "qwen3_stress", no_qwen);
        harness_skip("tokenizer", "qwen3_lookups", no_qwen);
    }
    suite_add_tcase(s, shared);
    return s;
}
