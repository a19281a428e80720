/* test_medusa.c — Medusa heads and trees on medusa_micro models: the heads file round trip and every loader error,
 * the ResBlock against a hand computation, tree parsing and validation, and the default tree's mask and positions.
 * The proposer and its greedy canaries are in test_medusa_proposer.c. */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "genmodel/randmodel.h"
#include "harness.h"
#include "medusa.h"
#include "medusa_common.h"
#include "reference_target.h"
#include "philox.h"
#include "safetensors.h"

/* ---- fixtures --------------------------------------------------------------------- */

static void sha_of(const char *dir, char *hex) {
    sp_error err;
    ck_assert_msg(medusa_base_sha256(dir, hex, &err) == 0, "%s", err.msg);
}

static void save(const medusa_heads *h, const char *path, dtype_t dt, const char *sha) {
    sp_error err;
    ck_assert_msg(medusa_save(h, path, dt, sha, NULL, NULL, 0, &err) == 0, "%s", err.msg);
}

/* ---- the heads file --------------------------------------------------------------------- */

START_TEST(test_roundtrip) {
    model m;
    medusa_load_model(&m, medusa_micro);
    char sha[65], path[400];
    sha_of(medusa_micro, sha);
    snprintf(path, sizeof path, "%s/heads.safetensors", medusa_tmp);
    /* own projections, two ResBlocks per head, float32: bit-identical */
    medusa_heads h, back;
    medusa_random_heads(&h, &m, 3, 2, 1, 1, 0.5f);
    save(&h, path, DTYPE_F32, sha);
    sp_error err;
    ck_assert_msg(medusa_load(&back, path, medusa_base_of(&m), 0, &err) == 0, "%s", err.msg);
    ck_assert_int_eq(back.n_heads, 3);
    ck_assert_int_eq(back.n_layers, 2);
    ck_assert_int_eq(back.own_proj, 1);
    ck_assert_int_eq(back.storage_bytes, 4);
    ck_assert_str_eq(back.base_sha256, sha);
    ck_assert_uint_eq(back.arena_floats, h.arena_floats);
    ck_assert(memcmp(back.arena, h.arena, h.arena_floats * sizeof(float)) == 0);
    medusa_free(&back);
    /* bf16: the values come back rounded to nearest even */
    save(&h, path, DTYPE_BF16, sha);
    ck_assert_msg(medusa_load(&back, path, medusa_base_of(&m), 0, &err) == 0, "%s", err.msg);
    ck_assert_int_eq(back.storage_bytes, 2);
    for (size_t k = 0; k < h.arena_floats; k++) ck_assert(back.arena[k] == bf16_to_f32(f32_to_bf16(h.arena[k])));
    medusa_free(&back);
    medusa_free(&h);
    /* shared lm_head: no projection tensors, the heads point at the target's */
    medusa_random_heads(&h, &m, 2, 1, 0, 2, 0.5f);
    save(&h, path, DTYPE_F32, sha);
    ck_assert_msg(medusa_load(&back, path, medusa_base_of(&m), 0, &err) == 0, "%s", err.msg);
    ck_assert_int_eq(back.own_proj, 0);
    ck_assert(back.proj[0] == m.w.lm_head && back.proj[1] == m.w.lm_head);
    st_set st;
    ck_assert(st_open(&st, path, &err) == 0);
    ck_assert_ptr_null(st_find(&st, "medusa_head.0.1.weight"));
    ck_assert_str_eq(st_metadata(&st, "medusa_shared_lm_head"), "true");
    st_close(&st);
    /* bytes per proposal: the ResBlocks at 4 bytes, the shared lm_head once at the target's 2 */
    const double D = 32, V = 32;
    ck_assert(medusa_bytes_per_step(&back, m.storage_bytes) == 2 * (D * D + D) * 4 + V * D * 2);
    medusa_free(&back);
    medusa_free(&h);
    model_free(&m);
}
END_TEST

/* Writes h's tensors except `drop`, with the given metadata (NULL: key left out). */
static void write_variant(const char *path, const medusa_heads *h, const char *drop, const char *sha,
                          const char *n_heads) {
    st_out_tensor out[64];
    char names[64][96];
    int n = 0;
    const int D = h->D, V = h->V;
    for (int i = 0; i < h->n_heads; i++) {
        for (int j = 0; j < h->n_layers; j++) {
            const medusa_resblock *b = &h->blocks[i * h->n_layers + j];
            snprintf(names[n], 96, "medusa_head.%d.%d.linear.weight", i, j);
            out[n] = (st_out_tensor){.name = names[n], .dtype = DTYPE_F32, .ndim = 2, .shape = {D, D}, .data = b->w};
            n++;
            snprintf(names[n], 96, "medusa_head.%d.%d.linear.bias", i, j);
            out[n] = (st_out_tensor){.name = names[n], .dtype = DTYPE_F32, .ndim = 1, .shape = {D}, .data = b->b};
            n++;
        }
        if (h->own_proj) {
            snprintf(names[n], 96, "medusa_head.%d.%d.weight", i, h->n_layers);
            out[n] =
                (st_out_tensor){.name = names[n], .dtype = DTYPE_F32, .ndim = 2, .shape = {V, D}, .data = h->proj[i]};
            n++;
        }
    }
    int k = 0;
    for (int i = 0; i < n; i++)
        if (!drop || strcmp(out[i].name, drop)) out[k++] = out[i];
    const char *keys[2], *values[2];
    int nm = 0;
    if (sha) keys[nm] = "base_sha256", values[nm++] = sha;
    if (n_heads) keys[nm] = "medusa_num_heads", values[nm++] = n_heads;
    sp_error err;
    ck_assert_msg(st_write(path, out, k, keys, values, nm, &err) == 0, "%s", err.msg);
}

static void expect_load_error(const char *path, const model *m, const char *a, const char *b) {
    medusa_heads h;
    sp_error err;
    ck_assert_int_eq(medusa_load(&h, path, medusa_base_of(m), 0, &err), -1);
    ck_assert_msg(strstr(err.msg, a) != NULL, "expected \"%s\" in: %s", a, err.msg);
    if (b) ck_assert_msg(strstr(err.msg, b) != NULL, "expected \"%s\" in: %s", b, err.msg);
}

START_TEST(test_load_errors) {
    model m;
    medusa_load_model(&m, medusa_micro);
    char sha[65], path[400];
    sha_of(medusa_micro, sha);
    snprintf(path, sizeof path, "%s/bad.safetensors", medusa_tmp);
    medusa_heads h;
    medusa_random_heads(&h, &m, 2, 1, 1, 3, 0.5f);

    write_variant(path, &h, "medusa_head.1.0.linear.bias", sha, "2");
    expect_load_error(path, &m, "tensor medusa_head.1.0.linear.bias is missing", NULL);
    write_variant(path, &h, "medusa_head.1.1.weight", sha, "2");
    expect_load_error(path, &m, "tensor medusa_head.1.1.weight is missing", NULL);
    write_variant(path, &h, NULL, NULL, "2");
    expect_load_error(path, &m, "base_sha256", NULL);
    write_variant(path, &h, NULL, "1234", "2");
    expect_load_error(path, &m, "base_sha256", "1234");
    write_variant(path, &h, NULL, sha, NULL);
    expect_load_error(path, &m, "no medusa_num_heads entry", NULL);
    write_variant(path, &h, NULL, sha, "1");
    expect_load_error(path, &m, "metadata says 1 heads", "medusa_head.1.0.linear.weight");
    write_variant(path, &h, NULL, sha, "3");
    expect_load_error(path, &m, "tensor medusa_head.2.0.linear.weight is missing", NULL);
    write_variant(path, &h, NULL, sha, "two");
    expect_load_error(path, &m, "medusa_num_heads = \"two\"", NULL);
    /* head 0 shares the lm_head, head 1 has its own projection */
    write_variant(path, &h, "medusa_head.0.1.weight", sha, "2");
    expect_load_error(path, &m, "all heads must do the same", NULL);
    /* a non-finite weight */
    float keep = h.blocks[1].w[5];
    h.blocks[1].w[5] = NAN;
    write_variant(path, &h, NULL, sha, "2");
    expect_load_error(path, &m, "medusa_head.1.0.linear.weight: element 5 is NaN", NULL);
    h.blocks[1].w[5] = keep;
    medusa_free(&h);
    /* heads of another width */
    ck_assert(medusa_build(&h, 2, 1, 16, 32, 1, NULL) == 0);
    write_variant(path, &h, NULL, sha, "2");
    expect_load_error(path, &m, "medusa_head.0.0.linear.weight: expected [32, 32], the file has [16, 16]", NULL);
    medusa_free(&h);
    snprintf(path, sizeof path, "%s/absent.safetensors", medusa_tmp);
    expect_load_error(path, &m, "absent.safetensors", "cannot open");
    model_free(&m);
}
END_TEST

/* Heads trained for one checkpoint refuse another (and any change to it),
 * naming both digests; --medusa-ignore-base's switch lets them through. */
START_TEST(test_base_mismatch) {
    model m, o;
    char mine[400];
    snprintf(mine, sizeof mine, "%s/mutable",
             medusa_tmp); /* a copy of medusa_micro's config and seed: this test edits it */
    model_config c;
    sp_error e0;
    randmodel_opts ro;
    randmodel_default_opts(&ro);
    ck_assert(randmodel_preset("micro", &c, &e0) == 0);
    ck_assert_msg(randmodel_write(mine, &c, &ro, NULL, &e0) == 0, "%s", e0.msg);
    medusa_load_model(&m, mine);
    medusa_load_model(&o, medusa_other);
    char sha[65], sha_other[65], path[400];
    sha_of(mine, sha);
    sha_of(medusa_other, sha_other);
    ck_assert_str_ne(sha, sha_other);
    snprintf(path, sizeof path, "%s/heads.safetensors", medusa_tmp);
    medusa_heads h, back;
    medusa_random_heads(&h, &m, 2, 1, 1, 4, 0.5f);
    save(&h, path, DTYPE_F32, sha);
    expect_load_error(path, &o, sha, sha_other);
    expect_load_error(path, &o, "do not belong to this model", NULL);
    sp_error err;
    ck_assert_msg(medusa_load(&back, path, medusa_base_of(&o), 1, &err) == 0, "%s", err.msg);
    medusa_free(&back);
    /* one changed byte in the base checkpoint is enough */
    char file[500];
    snprintf(file, sizeof file, "%s/model.safetensors", mine);
    FILE *f = fopen(file, "r+b");
    ck_assert_ptr_nonnull(f);
    fseek(f, -1, SEEK_END);
    int byte = fgetc(f);
    fseek(f, -1, SEEK_END);
    fputc(byte ^ 1, f);
    fclose(f);
    expect_load_error(path, &m, sha, "do not belong");
    medusa_free(&h);
    model_free(&m);
    model_free(&o);
}
END_TEST

/* The digest is that of the concatenated files: sha256sum's, for the
 * single file, and shards are hashed in name order. */
START_TEST(test_base_digest) {
    char sha[65];
    sha_of(medusa_micro, sha);
    char cmd[1200], line[200] = "";
    snprintf(cmd, sizeof cmd, "sha256sum %s/model.safetensors 2>/dev/null", medusa_micro);
    FILE *p = popen(cmd, "r");
    ck_assert_ptr_nonnull(p);
    char *got = fgets(line, sizeof line, p);
    pclose(p);
    if (got && strlen(line) >= 64) { /* coreutils is everywhere the tests run; compare when it answered */
        line[64] = '\0';
        ck_assert_str_eq(sha, line);
    }
    /* two shards: the digest of their concatenation in name order */
    model_config c;
    sp_error err;
    randmodel_opts o;
    randmodel_default_opts(&o);
    o.n_shards = 2;
    ck_assert(randmodel_preset("micro", &c, &err) == 0);
    char dir[400];
    snprintf(dir, sizeof dir, "%s/sharded", medusa_tmp);
    ck_assert_msg(randmodel_write(dir, &c, &o, NULL, &err) == 0, "%s", err.msg);
    sha_of(dir, sha);
    snprintf(cmd, sizeof cmd, "cat %s/model-00001-of-00002.safetensors %s/model-00002-of-00002.safetensors | sha256sum",
             dir, dir);
    p = popen(cmd, "r");
    got = fgets(line, sizeof line, p);
    pclose(p);
    if (got && strlen(line) >= 64) {
        line[64] = '\0';
        ck_assert_str_eq(sha, line);
    }
}
END_TEST

START_TEST(test_genmodel_heads) {
    model_config c;
    sp_error err;
    randmodel_opts o;
    randmodel_default_opts(&o);
    ck_assert(randmodel_preset("micro", &c, &err) == 0);
    o.medusa_heads = 3;
    o.medusa_layers = 2;
    char dir[400], path[500];
    snprintf(dir, sizeof dir, "%s/withheads", medusa_tmp);
    ck_assert_msg(randmodel_write(dir, &c, &o, NULL, &err) == 0, "%s", err.msg);
    randmodel_medusa_default_path(dir, path, sizeof path);
    ck_assert(strstr(path, "withheads-medusa/medusa_heads.safetensors") != NULL);
    model m;
    medusa_load_model(&m, dir);
    medusa_heads h;
    ck_assert_msg(medusa_load(&h, path, medusa_base_of(&m), 0, &err) == 0, "%s", err.msg);
    ck_assert_int_eq(h.n_heads, 3);
    ck_assert_int_eq(h.n_layers, 2);
    ck_assert_int_eq(h.own_proj, 1);
    int nonzero = 0;
    for (size_t k = 0; k < h.arena_floats; k++) nonzero += h.arena[k] != 0;
    ck_assert_int_gt(nonzero, (int)h.arena_floats * 9 / 10);
    medusa_free(&h);
    /* shared projection, explicit path */
    o.medusa_shared = 1;
    o.medusa_layers = 0;
    snprintf(path, sizeof path, "%s/shared/heads.safetensors", medusa_tmp);
    o.medusa_path = path;
    ck_assert_msg(randmodel_write(dir, &c, &o, NULL, &err) == 0, "%s", err.msg);
    ck_assert_msg(medusa_load(&h, path, medusa_base_of(&m), 0, &err) == 0, "%s", err.msg);
    ck_assert_int_eq(h.own_proj, 0);
    ck_assert_int_eq(h.n_layers, 1);
    medusa_free(&h);
    model_free(&m);
    o.medusa_heads = MEDUSA_MAX_HEADS + 1;
    ck_assert_int_eq(randmodel_write(dir, &c, &o, NULL, &err), -1);
    ck_assert_msg(strstr(err.msg, "Medusa heads requested"), "%s", err.msg);
}
END_TEST

/* ---- the forward -------------------------------------------------------------------------- */

START_TEST(test_resblock_by_hand) {
    medusa_heads h;
    ck_assert(medusa_build(&h, 1, 1, 2, 3, 1, NULL) == 0);
    const float W[4] = {1, 2, 0, -1}, b[2] = {0.5f, -0.5f}, P[6] = {1, 0, 0, 1, 1, 1}, x[2] = {1, -1};
    memcpy(h.blocks[0].w, W, sizeof W);
    memcpy(h.blocks[0].b, b, sizeof b);
    memcpy((float *)h.proj[0], P, sizeof P);
    /* W x + b = (1 − 2 + 0.5, 0 + 1 − 0.5) = (−0.5, 0.5); silu(∓0.5) = ∓0.5·σ(∓0.5)
     * = −0.1887703, 0.3112297 (σ(0.5) = 0.6224593); out = x + silu(...) */
    float out[2], logits[3], scratch[4];
    medusa_resblock_forward(&h.blocks[0], x, out, 2);
    /* tolerance: float32 expf and a two-term sum, a few ulps of 1 */
    ck_assert_float_eq_tol(out[0], 0.8112297f, 1e-6f);
    ck_assert_float_eq_tol(out[1], -0.6887703f, 1e-6f);
    medusa_head_forward(&h, 0, x, logits, scratch);
    ck_assert_float_eq_tol(logits[0], 0.8112297f, 1e-6f);
    ck_assert_float_eq_tol(logits[1], -0.6887703f, 1e-6f);
    ck_assert_float_eq_tol(logits[2], 0.1224594f, 1e-6f);
    medusa_free(&h);
    /* two ResBlocks: the second reads the first's output */
    ck_assert(medusa_build(&h, 1, 2, 2, 3, 1, NULL) == 0);
    for (int j = 0; j < 2; j++) {
        memcpy(h.blocks[j].w, W, sizeof W);
        memcpy(h.blocks[j].b, b, sizeof b);
    }
    memcpy((float *)h.proj[0], P, sizeof P);
    /* W·(0.8112297, −0.6887703) + b = (0.8112297 − 1.3775406 + 0.5, 0.6887703 − 0.5) = (−0.0663109, 0.1887703)
     * silu: −0.0663109·σ(−0.0663109) = −0.0320639; 0.1887703·σ(0.1887703) = 0.1032679 */
    medusa_head_forward(&h, 0, x, logits, scratch);
    ck_assert_float_eq_tol(logits[0], 0.7791658f, 1e-5f);
    ck_assert_float_eq_tol(logits[1], -0.5855024f, 1e-5f);
    medusa_free(&h);
}
END_TEST

/* ---- trees -------------------------------------------------------------------------------- */

static void expect_tree_error(const char *json, const char *what) {
    medusa_tree t;
    sp_error err;
    ck_assert_int_eq(medusa_tree_parse(&t, json, "test tree", &err), -1);
    ck_assert_msg(strstr(err.msg, what) != NULL, "%s: expected \"%s\" in: %s", json, what, err.msg);
    ck_assert_msg(strstr(err.msg, "test tree") != NULL, "the message names the source: %s", err.msg);
}

START_TEST(test_tree_parse) {
    medusa_tree t;
    sp_error err;
    ck_assert_msg(medusa_tree_parse(&t, "[[1], [0, 1], [0], [0, 0], [1, 0, 2], [1, 0]]", "t", &err) == 0, "%s",
                  err.msg);
    /* sorted by depth, then path: [0] [1] [0,0] [0,1] [1,0] [1,0,2] */
    const int depth[] = {1, 1, 2, 2, 2, 3}, rank[] = {0, 1, 0, 1, 0, 2}, parent[] = {-1, -1, 0, 0, 1, 4},
              sibling[] = {0, 1, 0, 1, 0, 0};
    ck_assert_int_eq(t.n, 6);
    for (int k = 0; k < 6; k++) {
        ck_assert_int_eq(t.depth[k], depth[k]);
        ck_assert_int_eq(t.rank[k], rank[k]);
        ck_assert_int_eq(t.parent[k], parent[k]);
        ck_assert_int_eq(t.sibling[k], sibling[k]);
    }
    ck_assert_int_eq(t.max_depth, 3);
    ck_assert_int_eq(t.max_rank, 2);
    char buf[256];
    medusa_tree_format(&t, buf, sizeof buf);
    ck_assert_str_eq(buf, "[[0], [1], [0, 0], [0, 1], [1, 0], [1, 0, 2]]");
    /* a sibling gap is allowed: the ranks name the candidates */
    ck_assert(medusa_tree_parse(&t, "[[0], [3]]", "t", &err) == 0);
    ck_assert_int_eq(t.sibling[1], 1);

    expect_tree_error("[[0], [1]", "not valid JSON");
    expect_tree_error("{\"paths\": [[0]]}", "non-empty JSON array");
    expect_tree_error("[]", "non-empty JSON array");
    expect_tree_error("[[0], 5]", "entry 1 is not a non-empty array");
    expect_tree_error("[[0], []]", "entry 1 is not a non-empty array");
    expect_tree_error("[[-1]]", "a rank must be an integer ≥ 0");
    expect_tree_error("[[0.5]]", "a rank must be an integer ≥ 0");
    expect_tree_error("[[0], [\"1\"]]", "entry 1, element 0");
    expect_tree_error("[[0], [1], [0]]", "the path [0] is given twice");
    expect_tree_error("[[0, 1]]", "the path [0, 1] needs its prefix [0]");
    expect_tree_error("[[0], [0, 0, 1], [1]]", "the path [0, 0, 1] needs its prefix [0, 0]");
    expect_tree_error("[[0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0]]", "depth 17");
    char big[4096] = "[";
    for (int r = 0; r <= MEDUSA_MAX_NODES; r++)
        snprintf(big + strlen(big), sizeof big - strlen(big), "%s[%d]", r ? "," : "", r);
    strcat(big, "]");
    expect_tree_error(big, "256 paths, at most 255");
}
END_TEST

START_TEST(test_tree_validate_and_load) {
    medusa_tree t;
    sp_error err;
    ck_assert(medusa_tree_parse(&t, "[[0], [0, 0], [0, 0, 0], [5]]", "t", &err) == 0);
    ck_assert_int_eq(medusa_tree_validate(&t, 3, 32, "tree.json", &err), 0);
    ck_assert_int_eq(medusa_tree_validate(&t, 2, 32, "tree.json", &err), -1);
    ck_assert_msg(strstr(err.msg, "tree.json: the path [0, 0, 0] has depth 3, but there are only 2 Medusa heads"), "%s",
                  err.msg);
    ck_assert_int_eq(medusa_tree_validate(&t, 3, 5, "tree.json", &err), -1);
    ck_assert_msg(strstr(err.msg, "the path [5] asks for rank 5, but the vocabulary has 5 tokens"), "%s", err.msg);

    char path[400];
    snprintf(path, sizeof path, "%s/tree.json", medusa_tmp);
    const char *text = "[[0], [1],\n [0, 0]]\n";
    harness_write_file(path, text, strlen(text));
    ck_assert_msg(medusa_tree_load(&t, path, &err) == 0, "%s", err.msg);
    ck_assert_int_eq(t.n, 3);
    harness_write_file(path, "[[0], [2, 1]]", 13);
    ck_assert_int_eq(medusa_tree_load(&t, path, &err), -1);
    ck_assert_msg(strstr(err.msg, path) && strstr(err.msg, "needs its prefix [2]"), "%s", err.msg);
    snprintf(path, sizeof path, "%s/none.json", medusa_tmp);
    ck_assert_int_eq(medusa_tree_load(&t, path, &err), -1);
    ck_assert_msg(strstr(err.msg, "none.json: cannot open"), "%s", err.msg);
}
END_TEST

START_TEST(test_tree_from_accuracies) {
    /* path probabilities: [0] .5, [1] .3, [0,0] .3, [0,1] .1, [1,0] .18, [1,1] .06;
     * [1] and [0,0] tie and are taken in (depth, path) order */
    const double acc[] = {0.5, 0.3, 0.6, 0.2};
    medusa_tree t;
    char buf[256];
    medusa_tree_from_accuracies(&t, acc, 2, 2, 4);
    medusa_tree_format(&t, buf, sizeof buf);
    ck_assert_str_eq(buf, "[[0], [1], [0, 0], [1, 0]]");
    medusa_tree_from_accuracies(&t, acc, 2, 2, 100); /* only 6 paths exist */
    ck_assert_int_eq(t.n, 6);
    /* a rank table that is not monotone: rank 1 beats rank 0 at depth 2 */
    const double odd[] = {0.9, 0.0, 0.1, 0.5};
    medusa_tree_from_accuracies(&t, odd, 2, 2, 2);
    medusa_tree_format(&t, buf, sizeof buf);
    ck_assert_str_eq(buf, "[[0], [0, 1]]");
}
END_TEST

/* The default tree: 63 nodes over 4 heads, prefix-closed and valid; its
 * ancestor mask and positions follow from the paths. */
START_TEST(test_default_tree) {
    medusa_tree t;
    sp_error err;
    medusa_tree_default(&t, 4);
    ck_assert_int_eq(t.n, 63);
    ck_assert_int_eq(t.max_depth, 4);
    ck_assert_int_eq(medusa_tree_validate(&t, 4, 32, "default", &err), 0);
    int per_depth[5] = {0};
    for (int k = 0; k < t.n; k++) per_depth[t.depth[k]]++;
    ck_assert_int_eq(per_depth[1], 10);
    ck_assert_int_ge(per_depth[4], 1);
    /* the JSON form parses back to the same tree */
    char buf[4096];
    medusa_tree_format(&t, buf, sizeof buf);
    medusa_tree u;
    ck_assert_msg(medusa_tree_parse(&u, buf, "default", &err) == 0, "%s", err.msg);
    ck_assert(memcmp(&t, &u, sizeof t) == 0);
    medusa_tree_default(&t, 2);
    ck_assert_int_eq(t.n, 63);
    ck_assert_int_eq(t.max_depth, 2);
    medusa_tree_default(&t, 1);
    ck_assert_int_eq(t.n, 10);
}
END_TEST

Suite *medusa_suite(void) {
    Suite *s = suite_create("medusa");
    TCase *file = harness_tcase("heads file", 30);
    tcase_add_unchecked_fixture(file, medusa_setup, medusa_teardown);
    tcase_add_test(file, test_roundtrip);
    tcase_add_test(file, test_load_errors);
    tcase_add_test(file, test_base_mismatch);
    tcase_add_test(file, test_base_digest);
    tcase_add_test(file, test_genmodel_heads);
    tcase_add_test(file, test_resblock_by_hand);
    suite_add_tcase(s, file);
    TCase *trees = harness_tcase("trees", 30);
    tcase_add_unchecked_fixture(trees, medusa_setup, medusa_teardown);
    tcase_add_test(trees, test_tree_parse);
    tcase_add_test(trees, test_tree_validate_and_load);
    tcase_add_test(trees, test_tree_from_accuracies);
    tcase_add_test(trees, test_default_tree);
    suite_add_tcase(s, trees);
    return s;
}
