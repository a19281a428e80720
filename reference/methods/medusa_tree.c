/* medusa_tree.c — Medusa candidate trees: parse a JSON list of rank paths,
 * validate it, build the default tree, and print one (see medusa.h). */
#include "medusa.h"

#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "regular_file.h"

typedef struct {
    int len;
    int r[MEDUSA_MAX_HEADS];
} rank_path;

static int cmp_path(const void *pa, const void *pb) {
    const rank_path *a = pa, *b = pb;
    if (a->len != b->len) return a->len - b->len;
    for (int i = 0; i < a->len; i++)
        if (a->r[i] != b->r[i]) return a->r[i] < b->r[i] ? -1 : 1;
    return 0;
}

/* Room for the text of any path: MEDUSA_MAX_HEADS ranks of up to 10 digits
 * (a rank is at most 2^30), ", " between them, the brackets and the NUL. A
 * smaller buffer would cut deep paths of large ranks short, and
 * medusa_tree_format would print a tree that does not parse back
 * (tests/fuzz/fuzz_medusa_tree.c checks the round trip). */
#define PATH_TEXT_SIZE (MEDUSA_MAX_HEADS * 12 + 3)

static void path_text(const rank_path *p, char *buf, size_t size) {
    size_t off = (size_t)snprintf(buf, size, "[");
    for (int i = 0; i < p->len && off < size; i++)
        off += (size_t)snprintf(buf + off, size - off, "%s%d", i ? ", " : "", p->r[i]);
    if (off < size) snprintf(buf + off, size - off, "]");
}

/* Builds t from paths (sorted here); checks duplicates and prefixes. */
static int tree_from_paths(medusa_tree *t, rank_path *paths, int n, const char *origin, sp_error *err) {
    memset(t, 0, sizeof *t);
    qsort(paths, (size_t)n, sizeof *paths, cmp_path);
    char a[PATH_TEXT_SIZE];
    for (int k = 0; k < n; k++) {
        if (k && cmp_path(&paths[k - 1], &paths[k]) == 0) {
            path_text(&paths[k], a, sizeof a);
            return sp_fail(err, "%s: the path %s is given twice", origin, a);
        }
        int parent = -1;
        if (paths[k].len > 1) { /* the prefix sorts before the path: search the nodes so far */
            rank_path pre = paths[k];
            pre.len--;
            for (int j = k - 1; j >= 0 && parent < 0; j--)
                if (cmp_path(&paths[j], &pre) == 0) parent = j;
            if (parent < 0) {
                char b[PATH_TEXT_SIZE];
                path_text(&paths[k], a, sizeof a);
                path_text(&pre, b, sizeof b);
                return sp_fail(err, "%s: the path %s needs its prefix %s, which is not in the tree", origin, a, b);
            }
        }
        t->depth[k] = paths[k].len;
        t->rank[k] = paths[k].r[paths[k].len - 1];
        t->parent[k] = parent;
        t->sibling[k] = (k && t->parent[k - 1] == parent && t->depth[k - 1] == t->depth[k]) ? t->sibling[k - 1] + 1 : 0;
        if (t->depth[k] > t->max_depth) t->max_depth = t->depth[k];
        if (t->rank[k] > t->max_rank) t->max_rank = t->rank[k];
    }
    t->n = n;
    return 0;
}

int medusa_tree_build(medusa_tree *t, int n, const int *depths, const int *ranks, const char *origin, sp_error *err) {
    memset(t, 0, sizeof *t);
    if (n < 1 || n > MEDUSA_MAX_NODES)
        return sp_fail(err, "%s: %d paths, expected 1 to %d", origin, n, MEDUSA_MAX_NODES);
    rank_path *paths = sp_xcalloc((size_t)n, sizeof *paths, "tree paths");
    for (int k = 0; k < n; k++) {
        if (depths[k] < 1 || depths[k] > MEDUSA_MAX_HEADS) {
            free(paths);
            return sp_fail(err, "%s: path %d has depth %d, expected 1 to %d", origin, k, depths[k], MEDUSA_MAX_HEADS);
        }
        paths[k].len = depths[k];
        for (int d = 0; d < depths[k]; d++) {
            const int r = ranks[k * MEDUSA_MAX_HEADS + d];
            if (r < 0) {
                free(paths);
                return sp_fail(err, "%s: path %d has the negative rank %d", origin, k, r);
            }
            paths[k].r[d] = r;
        }
    }
    int rc = tree_from_paths(t, paths, n, origin, err);
    free(paths);
    return rc;
}

int medusa_tree_parse(medusa_tree *t, const char *json_text, const char *origin, sp_error *err) {
    memset(t, 0, sizeof *t);
    json_error_t jerr;
    json_t *root = json_loads(json_text, JSON_REJECT_DUPLICATES, &jerr);
    if (!root) return sp_fail(err, "%s: not valid JSON (line %d: %s)", origin, jerr.line, jerr.text);
    int rc = -1;
    rank_path *paths = NULL;
    size_t n = json_is_array(root) ? json_array_size(root) : 0;
    if (n == 0) {
        sp_fail(err, "%s: expected a non-empty JSON array of paths such as [[0], [1], [0, 0]]", origin);
        goto done;
    }
    if (n > MEDUSA_MAX_NODES) {
        sp_fail(err, "%s: %zu paths, at most %d are supported", origin, n, MEDUSA_MAX_NODES);
        goto done;
    }
    paths = sp_xcalloc(n, sizeof *paths, "tree paths");
    for (size_t k = 0; k < n; k++) {
        json_t *p = json_array_get(root, k);
        size_t len = json_is_array(p) ? json_array_size(p) : 0;
        if (len == 0) {
            sp_fail(err, "%s: entry %zu is not a non-empty array of ranks", origin, k);
            goto done;
        }
        if (len > MEDUSA_MAX_HEADS) {
            sp_fail(err, "%s: entry %zu has depth %zu, at most %d (one head per depth) is supported", origin, k, len,
                    MEDUSA_MAX_HEADS);
            goto done;
        }
        paths[k].len = (int)len;
        for (size_t d = 0; d < len; d++) {
            json_t *r = json_array_get(p, d);
            if (!json_is_integer(r) || json_integer_value(r) < 0 || json_integer_value(r) > (1 << 30)) {
                sp_fail(err, "%s: entry %zu, element %zu: a rank must be an integer ≥ 0", origin, k, d);
                goto done;
            }
            paths[k].r[d] = (int)json_integer_value(r);
        }
    }
    rc = tree_from_paths(t, paths, (int)n, origin, err);
done:
    free(paths);
    json_decref(root);
    if (rc) memset(t, 0, sizeof *t);
    return rc;
}

int medusa_tree_load(medusa_tree *t, const char *path, sp_error *err) {
    FILE *f = regular_fopen(path, NULL, err);
    if (!f) return sp_wrap(err, "tree file ");
    char *text = NULL;
    size_t len = 0, cap = 0, got;
    char buf[4096];
    while ((got = fread(buf, 1, sizeof buf, f)) > 0) {
        if (len + got + 1 > cap) text = sp_xrealloc(text, cap = 2 * (len + got + 1), 1, "tree file");
        memcpy(text + len, buf, got);
        len += got;
    }
    int bad = ferror(f);
    fclose(f);
    if (bad) {
        free(text);
        return sp_fail(err, "tree file %s: read error", path);
    }
    if (!text) text = sp_xcalloc(1, 1, "tree file");
    text[len] = '\0';
    char origin[4200];
    snprintf(origin, sizeof origin, "tree file %s", path);
    int rc = medusa_tree_parse(t, text, origin, err);
    free(text);
    return rc;
}

int medusa_tree_validate(const medusa_tree *t, int n_heads, int V, const char *origin, sp_error *err) {
    if (t->n < 1) return sp_fail(err, "%s: the tree is empty", origin);
    int ranks[MEDUSA_MAX_HEADS];
    char a[PATH_TEXT_SIZE];
    for (int k = 0; k < t->n; k++) {
        if (t->depth[k] <= n_heads && t->rank[k] < V) continue;
        rank_path p = {t->depth[k], {0}};
        medusa_tree_path(t, k, ranks);
        memcpy(p.r, ranks, sizeof ranks);
        path_text(&p, a, sizeof a);
        if (t->depth[k] > n_heads)
            return sp_fail(err, "%s: the path %s has depth %d, but there are only %d Medusa heads (one per depth)",
                           origin, a, t->depth[k], n_heads);
        return sp_fail(err, "%s: the path %s asks for rank %d, but the vocabulary has %d tokens (ranks 0 to %d)",
                       origin, a, t->rank[k], V, V - 1);
    }
    return 0;
}

void medusa_tree_path(const medusa_tree *t, int k, int *ranks) {
    for (int x = k; x >= 0; x = t->parent[x]) ranks[t->depth[x] - 1] = t->rank[x];
}

void medusa_tree_format(const medusa_tree *t, char *buf, size_t size) {
    size_t off = (size_t)snprintf(buf, size, "[");
    int ranks[MEDUSA_MAX_HEADS];
    for (int k = 0; k < t->n && off < size; k++) {
        rank_path p = {t->depth[k], {0}};
        medusa_tree_path(t, k, ranks);
        memcpy(p.r, ranks, sizeof ranks);
        char a[PATH_TEXT_SIZE];
        path_text(&p, a, sizeof a);
        off += (size_t)snprintf(buf + off, size - off, "%s%s", k ? ", " : "", a);
    }
    if (off < size) snprintf(buf + off, size - off, "]");
}

/* ---- choosing a tree ------------------------------------------------------------------- */

void medusa_tree_from_accuracies(medusa_tree *t, const double *acc, int depth, int n_ranks, int n_nodes) {
    if (depth > MEDUSA_MAX_HEADS) depth = MEDUSA_MAX_HEADS;
    if (n_nodes > MEDUSA_MAX_NODES) n_nodes = MEDUSA_MAX_NODES;
    /* Grow the tree one node at a time: the candidates are the children of
     * the nodes already taken (and the root's), and the most probable one
     * joins. A path is never more probable than its prefix, so this picks
     * the n_nodes most probable paths, and the result is prefix-closed. */
    rank_path paths[MEDUSA_MAX_NODES];
    double prob[MEDUSA_MAX_NODES];
    /* used[(parent + 1)·n_ranks + r]: the child of rank r of that parent (−1 = the root) is taken */
    unsigned char *used = sp_xcalloc((size_t)(n_nodes + 1) * n_ranks, 1, "tree candidates");
    int n = 0;
    while (n < n_nodes) {
        rank_path best = {0, {0}};
        double best_p = 0;
        int best_slot = -1;
        for (int parent = -1; parent < n; parent++) {
            int d = parent < 0 ? 0 : paths[parent].len;
            if (d >= depth) continue;
            double pp = parent < 0 ? 1.0 : prob[parent];
            for (int r = 0; r < n_ranks; r++) {
                int slot = (parent + 1) * n_ranks + r;
                double pc = pp * acc[d * n_ranks + r];
                if (used[slot] || !(pc >= best_p) || pc <= 0) continue;
                rank_path c = parent < 0 ? (rank_path){0, {0}} : paths[parent];
                c.r[c.len++] = r;
                if (pc > best_p || cmp_path(&c, &best) < 0) best = c, best_p = pc, best_slot = slot;
            }
        }
        if (best_slot < 0) break;
        used[best_slot] = 1;
        paths[n] = best;
        prob[n++] = best_p;
    }
    free(used);
    sp_error err;
    if (tree_from_paths(t, paths, n, "accuracy tree", &err))
        t->n = 0; /* cannot happen: prefix-closed by construction */
}

/* The default tree. A node's value is the probability that its whole path is
 * accepted; the sum over the nodes is the expected number of accepted tokens
 * per round, so the best tree of N nodes is the N most probable paths. The
 * table is the assumed chance that the right token is the rank-r candidate of
 * the head at depth d (given the path so far was right): the top-1 figures
 * follow what Medusa-1 heads reach on a small model (about 0.6 for the first
 * head, falling by a third per depth), and the tail falls off roughly as
 * 1/r², as top-k accuracy curves of language models do; ranks beyond it are
 * taken to be worth too little. 63 nodes (64 with the root) is one
 * verification batch that a GPU runs at the cost of one position, as in
 * Medusa's 63-node tree. `specula medusa-train` prints the table of trained
 * heads and the tree it suggests. */
#define DEFAULT_RANKS 10
static const double default_accuracy[4][DEFAULT_RANKS] = {
    {0.60, 0.12, 0.05, 0.03, 0.02, 0.015, 0.011, 0.008, 0.006, 0.005},
    {0.42, 0.10, 0.045, 0.025, 0.016, 0.011, 0.008, 0.006, 0.005, 0.004},
    {0.30, 0.08, 0.035, 0.02, 0.013, 0.009, 0.007, 0.005, 0.004, 0.003},
    {0.22, 0.06, 0.027, 0.016, 0.01, 0.007, 0.005, 0.004, 0.003, 0.002},
};

void medusa_tree_default(medusa_tree *t, int n_heads) {
    int depth = n_heads < 4 ? n_heads : 4;
    medusa_tree_from_accuracies(t, &default_accuracy[0][0], depth, DEFAULT_RANKS, 63);
}
