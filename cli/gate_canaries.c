/* gate_canaries.c — the gate's frozen canary set (gate.h): the file read strictly and checked against the sha256
 * recorded beside it, written back from the reference, and the one-token-a-pass greedy walk that computes it. */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/evp.h>

#include "atomic_file.h"
#include "gate.h"
#include "regular_file.h"

#define GATE_MAX_IDS 4096 /* per line: a canary longer than that is no canary */

int gate_sha256_hex(const unsigned char *data, size_t n, char hex[65], sp_error *err) {
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned len = 0;
    EVP_MD_CTX *ctx = EVP_MD_CTX_new();
    int ok = ctx && EVP_DigestInit_ex(ctx, EVP_sha256(), NULL) && EVP_DigestUpdate(ctx, data, n) &&
             EVP_DigestFinal_ex(ctx, md, &len) && len == 32;
    EVP_MD_CTX_free(ctx);
    if (!ok) return sp_fail(err, "sha256: the digest failed");
    for (unsigned i = 0; i < 32; i++) snprintf(hex + 2 * i, 3, "%02x", md[i]);
    return 0;
}

/* The whole file, NUL-terminated. */
static char *slurp(const char *path, size_t *n, sp_error *err) {
    FILE *f = regular_fopen(path, NULL, err);
    if (!f) return NULL;
    size_t cap = 1 << 16, len = 0;
    char *buf = sp_xcalloc(cap, 1, "canary file");
    size_t got;
    while ((got = fread(buf + len, 1, cap - len - 1, f)) > 0) {
        len += got;
        if (len + 1 == cap) buf = sp_xrealloc(buf, cap *= 2, 1, "canary file");
    }
    int bad = ferror(f);
    fclose(f);
    if (bad) {
        free(buf);
        sp_fail(err, "%s: read error", path);
        return NULL;
    }
    buf[len] = 0;
    *n = len;
    return buf;
}

/* "3 5 9" → ids (malloc'ed); integers ≥ 0 only. */
static int parse_ids(const char *s, int **ids, int *n, const char *path, int line, sp_error *err) {
    int cap = 16;
    *ids = sp_xcalloc((size_t)cap, sizeof **ids, "canary ids");
    *n = 0;
    for (;;) {
        while (*s == ' ' || *s == '\t') s++;
        if (!*s) return 0;
        char *end;
        errno = 0;
        long v = strtol(s, &end, 10);
        if (end == s || errno || v < 0 || v > 1 << 24 || (*end && *end != ' ' && *end != '\t')) {
            free(*ids);
            *ids = NULL;
            return sp_fail(err, "%s:%d: '%.20s' is not a token id", path, line, s);
        }
        if (*n == GATE_MAX_IDS) {
            free(*ids);
            *ids = NULL;
            return sp_fail(err, "%s:%d: more than %d ids on a line", path, line, GATE_MAX_IDS);
        }
        if (*n == cap) *ids = sp_xrealloc(*ids, (size_t)(cap *= 2), sizeof **ids, "canary ids");
        (*ids)[(*n)++] = (int)v;
        s = end;
    }
}

static int parse_margins(const char *s, float *out, int n, const char *path, int line, sp_error *err) {
    for (int i = 0; i < n; i++) {
        char *end;
        errno = 0;
        double v = strtod(s, &end);
        if (end == s || errno || !isfinite(v) || v < 0)
            return sp_fail(err, "%s:%d: margin %d of %d is missing or not a number >= 0", path, line, i + 1, n);
        out[i] = (float)v;
        s = end;
    }
    while (*s == ' ' || *s == '\t') s++;
    return *s ? sp_fail(err, "%s:%d: more than %d margins", path, line, n) : 0;
}

void gate_canaries_free(gate_canaries *c) {
    for (int k = 0; k < c->n_cases; k++) {
        for (int u = 0; u < c->cases[k].n_turns; u++) {
            gate_turn *t = &c->cases[k].turns[u];
            free(t->prompt);
            free(t->expect);
            free(t->margin);
        }
        free(c->cases[k].turns);
    }
    free(c->cases);
    memset(c, 0, sizeof *c);
}

/* The sha256 recorded in PATH.sha256 (sha256sum's format: 64 hex digits, then the name), or "" when absent. */
static int read_recorded(gate_canaries *c, const char *path, sp_error *err) {
    char side[4200];
    snprintf(side, sizeof side, "%s.sha256", path);
    c->recorded[0] = 0;
    FILE *f = fopen(side, "r");
    if (!f) return errno == ENOENT ? 0 : sp_fail(err, "%s: %s", side, strerror(errno));
    char line[256] = "";
    int ok = fgets(line, sizeof line, f) != NULL;
    fclose(f);
    if (!ok || strspn(line, "0123456789abcdef") != 64)
        return sp_fail(err, "%s: the first line must start with the file's 64 lower-case hex digits", side);
    memcpy(c->recorded, line, 64);
    c->recorded[64] = 0;
    return 0;
}

/* One line: a directive and its value. */
static int parse_line(gate_canaries *c, char *s, const char *path, int line, int need_expect, sp_error *err) {
    char *value = s + strcspn(s, " \t");
    if (*value) *value++ = 0;
    gate_case *k = c->n_cases ? &c->cases[c->n_cases - 1] : NULL;
    gate_turn *t = k && k->n_turns ? &k->turns[k->n_turns - 1] : NULL;
    if (!strcmp(s, "case")) {
        while (*value == ' ') value++;
        if (!*value || strlen(value) >= sizeof k->name)
            return sp_fail(err, "%s:%d: case needs a short name", path, line);
        if (t && !t->n_expect)
            return sp_fail(err, "%s:%d: the case before has a prompt but no tokens line", path, line);
        c->cases = sp_xrealloc(c->cases, (size_t)c->n_cases + 1, sizeof *c->cases, "canary cases");
        k = &c->cases[c->n_cases++];
        memset(k, 0, sizeof *k);
        snprintf(k->name, sizeof k->name, "%s", value);
        return 0;
    }
    if (!k) return sp_fail(err, "%s:%d: '%s' before the first case line", path, line, s);
    if (!strcmp(s, "prompt")) {
        if (t && !t->n_expect) return sp_fail(err, "%s:%d: a prompt before the last one's tokens line", path, line);
        k->turns = sp_xrealloc(k->turns, (size_t)k->n_turns + 1, sizeof *k->turns, "canary turns");
        t = &k->turns[k->n_turns++];
        memset(t, 0, sizeof *t);
        if (parse_ids(value, &t->prompt, &t->n_prompt, path, line, err)) return -1;
        return t->n_prompt ? 0 : sp_fail(err, "%s:%d: an empty prompt", path, line);
    }
    if (!t) return sp_fail(err, "%s:%d: '%s' before the case's first prompt", path, line, s);
    if (!strcmp(s, "tokens")) {
        char *end;
        long n = strtol(value, &end, 10);
        if (t->n_expect || end == value || *end || n < 1 || n > GATE_MAX_IDS)
            return sp_fail(err, "%s:%d: tokens N (1 to %d) once after each prompt", path, line, GATE_MAX_IDS);
        t->n_expect = (int)n;
        return 0;
    }
    if (!t->n_expect) return sp_fail(err, "%s:%d: '%s' before the turn's tokens line", path, line, s);
    if (!strcmp(s, "expect")) {
        int n;
        if (t->expect) return sp_fail(err, "%s:%d: a second expect line", path, line);
        if (parse_ids(value, &t->expect, &n, path, line, err)) return -1;
        if (n != t->n_expect)
            return sp_fail(err, "%s:%d: %d expected tokens, the tokens line says %d", path, line, n, t->n_expect);
        return 0;
    }
    if (!strcmp(s, "margin")) {
        if (!t->expect || t->margin) return sp_fail(err, "%s:%d: one margin line, after the expect line", path, line);
        t->margin = sp_xcalloc((size_t)t->n_expect, sizeof *t->margin, "canary margins");
        if (parse_margins(value, t->margin, t->n_expect, path, line, err)) return -1;
        t->have_expect = 1;
        return 0;
    }
    (void)need_expect;
    return sp_fail(err, "%s:%d: unknown line '%s' (case, prompt, tokens, expect, margin)", path, line, s);
}

int gate_canaries_read(gate_canaries *c, const char *path, int need_expect, sp_error *err) {
    memset(c, 0, sizeof *c);
    size_t n;
    char *text = slurp(path, &n, err);
    if (!text) return -1;
    int rc = gate_sha256_hex((const unsigned char *)text, n, c->sha256, err);
    if (!rc && strlen(text) != n) rc = sp_fail(err, "%s: a NUL byte in a text file", path);
    int line = 0;
    for (char *s = text; !rc && *s;) {
        char *nl = strchr(s, '\n');
        if (nl) *nl = 0;
        line++;
        size_t len = strlen(s);
        if (len && s[len - 1] == '\r') s[--len] = 0;
        if (len && s[0] != '#') rc = parse_line(c, s, path, line, need_expect, err);
        s = nl ? nl + 1 : s + len;
    }
    free(text);
    if (!rc && !c->n_cases) rc = sp_fail(err, "%s: no case", path);
    for (int k = 0; !rc && k < c->n_cases; k++) {
        if (!c->cases[k].n_turns) rc = sp_fail(err, "%s: case %s has no prompt", path, c->cases[k].name);
        for (int u = 0; !rc && u < c->cases[k].n_turns; u++) {
            const gate_turn *t = &c->cases[k].turns[u];
            if (!t->n_expect)
                rc = sp_fail(err, "%s: case %s, turn %d: no tokens line", path, c->cases[k].name, u + 1);
            else if (need_expect && !t->have_expect)
                rc = sp_fail(err, "%s: case %s, turn %d: no expect and margin lines (write them with --write-canaries)",
                             path, c->cases[k].name, u + 1);
        }
    }
    if (!rc) rc = read_recorded(c, path, err);
    if (rc) gate_canaries_free(c);
    return rc;
}

int gate_context(const gate_case *k, int u, int **ids, int *n) {
    int total = 0;
    for (int i = 0; i <= u; i++) total += k->turns[i].n_prompt + (i < u ? k->turns[i].n_expect : 0);
    *ids = sp_xcalloc((size_t)total, sizeof **ids, "canary context");
    *n = 0;
    for (int i = 0; i <= u; i++) {
        memcpy(*ids + *n, k->turns[i].prompt, (size_t)k->turns[i].n_prompt * sizeof **ids);
        *n += k->turns[i].n_prompt;
        if (i == u) break;
        memcpy(*ids + *n, k->turns[i].expect, (size_t)k->turns[i].n_expect * sizeof **ids);
        *n += k->turns[i].n_expect;
    }
    return 0;
}

int gate_walk(decode_target *t, const int *context, int n_context, int n, const int *forced, const sampler_params *sp,
              int *tokens, float *margins, float *rows, sp_error *err) {
    const int V = t->cfg->vocab_size;
    int seq = t->seq_open(t, err);
    if (seq < 0) return -1;
    int rc = t->prefill(t, seq, context, n_context - 1, NULL, NULL, err);
    int pending = context[n_context - 1];
    token_tree tree;
    tree_build(&tree, V, 1);
    float *p = sp_xcalloc((size_t)V, sizeof *p, "gate logits[V]");
    for (int i = 0; i < n && !rc; i++) {
        tree_reset(&tree, pending, CHILDREN_IID);
        const target_job job = {.seq = seq, .tree = &tree, .p = p, .hidden = NULL};
        if ((rc = t->verify(t, &job, 1, NULL, err))) break; /* raw logits */
        int top = sampler_argmax(p, V), second = top == 0 ? 1 : 0;
        for (int j = 0; j < V; j++)
            if (j != top && p[j] > p[second]) second = j;
        tokens[i] = top;
        margins[i] = p[top] - p[second];
        if (rows) sampler_probs(sp, p, rows + (size_t)i * (size_t)V, V);
        if ((rc = t->commit(t, seq, 0, err))) break;
        pending = forced ? forced[i] : top;
    }
    free(p);
    tree_free(&tree);
    t->seq_close(t, seq);
    return rc;
}

int gate_canaries_write(gate_canaries *c, const char *path, const char *model_dir, sp_error *err) {
    atomic_file f;
    /* the model's folder name, not its path: the file's checksum must not depend on where the tree is */
    char model_name[256];
    size_t len = strlen(model_dir);
    while (len > 1 && model_dir[len - 1] == '/') len--;
    size_t start = len;
    while (start > 0 && model_dir[start - 1] != '/') start--;
    snprintf(model_name, sizeof model_name, "%.*s", (int)(len - start), model_dir + start);
    if (atomic_open(&f, path, err)) return -1;
    fprintf(f.f,
            "# specula gate canaries: frozen prompts (token ids) and the reference's greedy continuation of each on\n"
            "# the model %s.\n"
            "# Written by `specula gate --write-canaries` (the reference backend, float32, one token a pass); the\n"
            "# gate checks the file against %s.sha256 and refuses to use it when they differ.\n"
            "# case NAME: a conversation; prompt IDS: a turn's tokens, after everything before in the case;\n"
            "# tokens N: how many the reference writes after it; expect IDS: those tokens; margin X...: the\n"
            "# reference's top-1 minus top-2 logit at each. docs/gate.md.\n",
            model_name, strrchr(path, '/') ? strrchr(path, '/') + 1 : path);
    for (int k = 0; k < c->n_cases; k++) {
        fprintf(f.f, "\ncase %s\n", c->cases[k].name);
        for (int u = 0; u < c->cases[k].n_turns; u++) {
            const gate_turn *t = &c->cases[k].turns[u];
            fprintf(f.f, "prompt");
            for (int i = 0; i < t->n_prompt; i++) fprintf(f.f, " %d", t->prompt[i]);
            fprintf(f.f, "\ntokens %d\nexpect", t->n_expect);
            for (int i = 0; i < t->n_expect; i++) fprintf(f.f, " %d", t->expect[i]);
            fprintf(f.f, "\nmargin");
            for (int i = 0; i < t->n_expect; i++) fprintf(f.f, " %.4f", (double)t->margin[i]);
            fprintf(f.f, "\n");
        }
    }
    if (atomic_commit(&f, err)) return -1;
    /* the checksum of what was written, read back as the gate will read it */
    size_t n;
    char *text = slurp(path, &n, err);
    if (!text) return -1;
    int rc = gate_sha256_hex((const unsigned char *)text, n, c->sha256, err);
    free(text);
    if (rc) return -1;
    char side[4200];
    snprintf(side, sizeof side, "%s.sha256", path);
    if (atomic_open(&f, side, err)) return -1;
    fprintf(f.f, "%s  %s\n", c->sha256, strrchr(path, '/') ? strrchr(path, '/') + 1 : path);
    if (atomic_commit(&f, err)) return -1;
    memcpy(c->recorded, c->sha256, sizeof c->recorded);
    return 0;
}
