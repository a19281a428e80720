/* test_medusa.c — Medusa heads and trees on micro models: the heads file
 * round trip and every loader error (base checkpoint mismatch included),
 * the ResBlock against a hand computation, tree parsing and validation,
 * the default tree's mask and positions, the proposer's trees in every
 * mode, and greedy canaries (temperature 0: every rule emits exactly the
 * plain greedy tokens), including heads that copy the target's greedy
 * continuation (every round fully accepted) and heads that never agree. */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "genmodel/randmodel.h"
#include "harness.h"
#include "medusa.h"
#include "philox.h"
#include "safetensors.h"

/* ---- fixtures --------------------------------------------------------------------- */

static char tmp[256], micro[320], other[320];

/* One micro checkpoint (V 32, D 32, DeltaNet and attention layers) and a
 * second one with another seed, written once per test case. */
static void setup(void) {
    harness_tmpdir(tmp, sizeof tmp);
    snprintf(micro, sizeof micro, "%s/micro", tmp);
    snprintf(other, sizeof other, "%s/other", tmp);
    model_config c;
    sp_error err;
    randmodel_opts o;
    randmodel_default_opts(&o);
    ck_assert(randmodel_preset("micro", &c, &err) == 0);
    ck_assert_msg(randmodel_write(micro, &c, &o, NULL, &err) == 0, "%s", err.msg);
    o.seed = 2;
    ck_assert_msg(randmodel_write(other, &c, &o, NULL, &err) == 0, "%s", err.msg);
}

static void teardown(void) { harness_rmtree(tmp); }

static void load(model *m, const char *dir) {
    sp_error err;
    ck_assert_msg(model_load(m, dir, &err) == 0, "%s", err.msg);
}

/* Heads with every weight drawn uniformly in ±scale (stream `seed`). */
static void random_heads(medusa_heads *h, const model *m, int n_heads, int n_layers, int own, uint64_t seed,
                         float scale) {
    sp_error err;
    ck_assert_msg(medusa_build(h, n_heads, n_layers, m->cfg.hidden_size, m->cfg.vocab_size, own, &err) == 0, "%s",
                  err.msg);
    for (size_t k = 0; k < h->arena_floats; k++) h->arena[k] = scale * (2 * philox_uniform(seed, 7, k, 0) - 1);
    medusa_share_lm_head(h, m->w.lm_head);
}

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
    load(&m, micro);
    char sha[65], path[400];
    sha_of(micro, sha);
    snprintf(path, sizeof path, "%s/heads.safetensors", tmp);
    /* own projections, two ResBlocks per head, float32: bit-identical */
    medusa_heads h, back;
    random_heads(&h, &m, 3, 2, 1, 1, 0.5f);
    save(&h, path, DTYPE_F32, sha);
    sp_error err;
    ck_assert_msg(medusa_load(&back, path, &m, 0, &err) == 0, "%s", err.msg);
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
    ck_assert_msg(medusa_load(&back, path, &m, 0, &err) == 0, "%s", err.msg);
    ck_assert_int_eq(back.storage_bytes, 2);
    for (size_t k = 0; k < h.arena_floats; k++) ck_assert(back.arena[k] == bf16_to_f32(f32_to_bf16(h.arena[k])));
    medusa_free(&back);
    medusa_free(&h);
    /* shared lm_head: no projection tensors, the heads point at the target's */
    random_heads(&h, &m, 2, 1, 0, 2, 0.5f);
    save(&h, path, DTYPE_F32, sha);
    ck_assert_msg(medusa_load(&back, path, &m, 0, &err) == 0, "%s", err.msg);
    ck_assert_int_eq(back.own_proj, 0);
    ck_assert(back.proj[0] == m.w.lm_head && back.proj[1] == m.w.lm_head);
    st_set st;
    ck_assert(st_open(&st, path, &err) == 0);
    ck_assert_ptr_null(st_find(&st, "medusa_head.0.1.weight"));
    ck_assert_str_eq(st_metadata(&st, "medusa_shared_lm_head"), "true");
    st_close(&st);
    /* bytes per proposal: the ResBlocks at 4 bytes, the shared lm_head once at the target's 2 */
    const double D = 32, V = 32;
    ck_assert(medusa_bytes_per_step(&back, &m) == 2 * (D * D + D) * 4 + V * D * 2);
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
    ck_assert_int_eq(medusa_load(&h, path, m, 0, &err), -1);
    ck_assert_msg(strstr(err.msg, a) != NULL, "expected \"%s\" in: %s", a, err.msg);
    if (b) ck_assert_msg(strstr(err.msg, b) != NULL, "expected \"%s\" in: %s", b, err.msg);
}

START_TEST(test_load_errors) {
    model m;
    load(&m, micro);
    char sha[65], path[400];
    sha_of(micro, sha);
    snprintf(path, sizeof path, "%s/bad.safetensors", tmp);
    medusa_heads h;
    random_heads(&h, &m, 2, 1, 1, 3, 0.5f);

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
    snprintf(path, sizeof path, "%s/absent.safetensors", tmp);
    expect_load_error(path, &m, "absent.safetensors", "cannot open");
    model_free(&m);
}
END_TEST

/* Heads trained for one checkpoint refuse another (and any change to it),
 * naming both digests; --medusa-ignore-base's switch lets them through. */
START_TEST(test_base_mismatch) {
    model m, o;
    char mine[400];
    snprintf(mine, sizeof mine, "%s/mutable", tmp); /* a copy of micro's config and seed: this test edits it */
    model_config c;
    sp_error e0;
    randmodel_opts ro;
    randmodel_default_opts(&ro);
    ck_assert(randmodel_preset("micro", &c, &e0) == 0);
    ck_assert_msg(randmodel_write(mine, &c, &ro, NULL, &e0) == 0, "%s", e0.msg);
    load(&m, mine);
    load(&o, other);
    char sha[65], sha_other[65], path[400];
    sha_of(mine, sha);
    sha_of(other, sha_other);
    ck_assert_str_ne(sha, sha_other);
    snprintf(path, sizeof path, "%s/heads.safetensors", tmp);
    medusa_heads h, back;
    random_heads(&h, &m, 2, 1, 1, 4, 0.5f);
    save(&h, path, DTYPE_F32, sha);
    expect_load_error(path, &o, sha, sha_other);
    expect_load_error(path, &o, "do not belong to this model", NULL);
    sp_error err;
    ck_assert_msg(medusa_load(&back, path, &o, 1, &err) == 0, "%s", err.msg);
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
    sha_of(micro, sha);
    char cmd[1200], line[200] = "";
    snprintf(cmd, sizeof cmd, "sha256sum %s/model.safetensors 2>/dev/null", micro);
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
    snprintf(dir, sizeof dir, "%s/sharded", tmp);
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
    snprintf(dir, sizeof dir, "%s/withheads", tmp);
    ck_assert_msg(randmodel_write(dir, &c, &o, NULL, &err) == 0, "%s", err.msg);
    randmodel_medusa_default_path(dir, path, sizeof path);
    ck_assert(strstr(path, "withheads-medusa/medusa_heads.safetensors") != NULL);
    model m;
    load(&m, dir);
    medusa_heads h;
    ck_assert_msg(medusa_load(&h, path, &m, 0, &err) == 0, "%s", err.msg);
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
    snprintf(path, sizeof path, "%s/shared/heads.safetensors", tmp);
    o.medusa_path = path;
    ck_assert_msg(randmodel_write(dir, &c, &o, NULL, &err) == 0, "%s", err.msg);
    ck_assert_msg(medusa_load(&h, path, &m, 0, &err) == 0, "%s", err.msg);
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
    snprintf(path, sizeof path, "%s/tree.json", tmp);
    const char *text = "[[0], [1],\n [0, 0]]\n";
    harness_write_file(path, text, strlen(text));
    ck_assert_msg(medusa_tree_load(&t, path, &err) == 0, "%s", err.msg);
    ck_assert_int_eq(t.n, 3);
    harness_write_file(path, "[[0], [2, 1]]", 13);
    ck_assert_int_eq(medusa_tree_load(&t, path, &err), -1);
    ck_assert_msg(strstr(err.msg, path) && strstr(err.msg, "needs its prefix [2]"), "%s", err.msg);
    snprintf(path, sizeof path, "%s/none.json", tmp);
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

/* ---- the proposer ------------------------------------------------------------------------- */

/* Builds a proposer, commits one hidden state and proposes once. */
static void propose_once(proposer *p, token_tree *tt, const medusa_heads *h, const model *m, const medusa_tree *t,
                         children_kind kind, float temperature, const float *hidden, int max_depth, uint64_t round) {
    sp_error err;
    sampler_params sp = sampler_defaults();
    sp.temperature = temperature;
    ck_assert_msg(medusa_proposer_build(p, h, m, t, kind, &sp, 5, &err) == 0, "%s", err.msg);
    tree_build(tt, m->cfg.vocab_size, p->tree_capacity + 1);
    tree_reset(tt, 3, kind);
    int path[1] = {7};
    p->commit(p, path, hidden, 1, 3);
    ck_assert_msg(p->propose(p, tt, 10, max_depth, round, &err) == 0, "%s", err.msg);
}

static void test_hidden(float *x, int D) {
    for (int d = 0; d < D; d++) x[d] = 2 * philox_uniform(11, 0, (uint64_t)d, 0) - 1;
}

/* The tree follows the default tree node for node: token = the rank-th
 * largest logit of its head, q = the head's processed distribution; the
 * attention mask and the positions are those of the paths. */
START_TEST(test_proposer_top_ranks) {
    model m;
    load(&m, micro);
    medusa_heads h;
    random_heads(&h, &m, 4, 1, 1, 6, 0.5f);
    medusa_tree t;
    medusa_tree_default(&t, 4);
    float hidden[32], logits[4][32], probs[32], scratch[64];
    test_hidden(hidden, 32);
    proposer p;
    token_tree tt;
    propose_once(&p, &tt, &h, &m, &t, CHILDREN_TOP_RANKS, 0.7f, hidden, 100, 0);
    ck_assert_int_eq(tt.n, 64);
    ck_assert_int_eq(p.steps, 1);
    sampler_params sp = sampler_defaults();
    sp.temperature = 0.7f;
    for (int i = 0; i < 4; i++) medusa_head_forward(&h, i, hidden, logits[i], scratch);
    unsigned char *mask = calloc(64 * 64, 1);
    int pos[64], ranks_k[MEDUSA_MAX_HEADS], ranks_j[MEDUSA_MAX_HEADS];
    tree_attention_mask(&tt, mask);
    tree_positions(&tt, 10, pos);
    ck_assert_int_eq(pos[0], 10);
    for (int k = 0; k < 63; k++) {
        const int node = k + 1, d = t.depth[k];
        ck_assert_int_eq(tt.depth[node], d);
        ck_assert_int_eq(pos[node], 10 + d);
        ck_assert_int_eq(tt.parent[node], t.parent[k] + 1);
        /* rank by counting: entries above, or equal with a lower index */
        const float *l = logits[d - 1];
        int x = tt.token[node], r = 0;
        for (int v = 0; v < 32; v++) r += l[v] > l[x] || (l[v] == l[x] && v < x);
        ck_assert_int_eq(r, t.rank[k]);
        /* q of the parent: head d−1's processed distribution */
        sampler_probs(&sp, l, probs, 32);
        ck_assert(memcmp(tree_q_const(&tt, tt.parent[node]), probs, sizeof probs) == 0);
        /* node j is visible from node k exactly when path j is a prefix of path k */
        medusa_tree_path(&t, k, ranks_k);
        ck_assert(mask[(size_t)node * 64 + 0]);
        for (int j = 0; j < 63; j++) {
            medusa_tree_path(&t, j, ranks_j);
            int prefix = t.depth[j] <= d && memcmp(ranks_j, ranks_k, (size_t)t.depth[j] * sizeof(int)) == 0;
            ck_assert_int_eq(mask[(size_t)node * 64 + j + 1], prefix);
        }
    }
    free(mask);
    tree_free(&tt);
    p.release(&p);
    /* the token budget cuts the tree: max_depth 2 keeps depths 1 and 2 */
    propose_once(&p, &tt, &h, &m, &t, CHILDREN_TOP_RANKS, 0.7f, hidden, 2, 0);
    int want = 1;
    for (int k = 0; k < 63; k++) want += t.depth[k] <= 2;
    ck_assert_int_eq(tt.n, want);
    ck_assert_int_eq(tree_max_depth(&tt), 2);
    tree_free(&tt);
    p.release(&p);
    medusa_free(&h);
    model_free(&m);
}
END_TEST

/* Exact modes keep the shape and draw: i.i.d. children come from q (q > 0),
 * reproducibly for a round and differently for another; children drawn
 * without replacement are distinct, and at temperature 0 (one token with
 * q > 0) only the first child of each node survives. */
START_TEST(test_proposer_draws) {
    model m;
    load(&m, micro);
    medusa_heads h;
    random_heads(&h, &m, 4, 1, 1, 6, 0.3f);
    medusa_tree t;
    medusa_tree_default(&t, 4);
    float hidden[32];
    test_hidden(hidden, 32);
    proposer p, p2;
    token_tree a, b, c;
    propose_once(&p, &a, &h, &m, &t, CHILDREN_IID, 1.0f, hidden, 100, 3);
    propose_once(&p2, &b, &h, &m, &t, CHILDREN_IID, 1.0f, hidden, 100, 3);
    ck_assert_int_eq(a.n, 64);
    ck_assert(memcmp(a.token, b.token, 64 * sizeof(int)) == 0);
    for (int u = 1; u < 64; u++) ck_assert(tree_q_const(&a, a.parent[u])[a.token[u]] > 0);
    tree_free(&b);
    p2.release(&p2);
    propose_once(&p2, &b, &h, &m, &t, CHILDREN_IID, 1.0f, hidden, 100, 4);
    ck_assert(memcmp(a.token, b.token, 64 * sizeof(int)) != 0);
    /* each draw has its own site: the root's 10 children are not one token repeated */
    int kinds = 0;
    for (int u = 1; u <= 10; u++) {
        int seen = 0;
        for (int v = 1; v < u; v++) seen |= a.token[v] == a.token[u];
        kinds += !seen;
    }
    ck_assert_int_ge(kinds, 3);
    int duplicates = 0;
    for (int u = 1; u < 64; u++)
        for (int v = u + 1; v < 64; v++) duplicates += a.parent[u] == a.parent[v] && a.token[u] == a.token[v];
    tree_free(&a), tree_free(&b);
    p.release(&p), p2.release(&p2);

    propose_once(&p, &c, &h, &m, &t, CHILDREN_NO_REPLACEMENT, 1.0f, hidden, 100, 3);
    ck_assert_int_eq(c.n, 64); /* V = 32 tokens all have q > 0: nothing runs out */
    for (int u = 1; u < 64; u++)
        for (int v = u + 1; v < 64; v++) ck_assert(!(c.parent[u] == c.parent[v] && c.token[u] == c.token[v]));
    tree_free(&c);
    p.release(&p);
    ck_assert_int_gt(duplicates, 0); /* i.i.d. draws do repeat: the distinctness above is not an accident */

    propose_once(&p, &c, &h, &m, &t, CHILDREN_NO_REPLACEMENT, 0.0f, hidden, 100, 3);
    ck_assert_int_eq(c.n, 5); /* the chain of first children [0], [0,0], [0,0,0], [0,0,0,0] */
    ck_assert_int_eq(tree_max_depth(&c), 4);
    tree_free(&c);
    p.release(&p);
    medusa_free(&h);
    model_free(&m);
}
END_TEST

START_TEST(test_proposer_errors) {
    model m;
    load(&m, micro);
    medusa_heads h;
    random_heads(&h, &m, 2, 1, 1, 6, 0.3f);
    medusa_tree t;
    medusa_tree_default(&t, 4); /* depth 4 > 2 heads */
    proposer p;
    sp_error err;
    sampler_params sp = sampler_defaults();
    ck_assert_int_eq(medusa_proposer_build(&p, &h, &m, &t, CHILDREN_TOP_RANKS, &sp, 1, &err), -1);
    ck_assert_msg(strstr(err.msg, "only 2 Medusa heads"), "%s", err.msg);
    medusa_tree_default(&t, 2);
    ck_assert_int_eq(medusa_proposer_build(&p, &h, &m, &t, (children_kind)7, &sp, 1, &err), -1);
    sp.temperature = -1;
    ck_assert_int_eq(medusa_proposer_build(&p, &h, &m, &t, CHILDREN_IID, &sp, 1, &err), -1);
    medusa_free(&h);
    ck_assert(medusa_build(&h, 2, 1, 16, 32, 1, &err) == 0);
    sp = sampler_defaults();
    ck_assert_int_eq(medusa_proposer_build(&p, &h, &m, &t, CHILDREN_IID, &sp, 1, &err), -1);
    ck_assert_msg(strstr(err.msg, "D 16"), "%s", err.msg);
    medusa_free(&h);
    ck_assert(medusa_build(&h, 2, 1, 32, 32, 0, &err) == 0); /* shared, never attached */
    ck_assert_int_eq(medusa_proposer_build(&p, &h, &m, &t, CHILDREN_IID, &sp, 1, &err), -1);
    ck_assert_msg(strstr(err.msg, "no lm_head") || strstr(err.msg, "none was attached"), "%s", err.msg);
    medusa_free(&h);
    ck_assert(medusa_rule_matches(RULE_EXACT, CHILDREN_IID) &&
              medusa_rule_matches(RULE_EXACT, CHILDREN_NO_REPLACEMENT));
    ck_assert(!medusa_rule_matches(RULE_EXACT, CHILDREN_TOP_RANKS) && !medusa_rule_matches(RULE_GREEDY, CHILDREN_IID));
    ck_assert(medusa_rule_matches(RULE_TYPICAL, CHILDREN_TOP_RANKS));
    model_free(&m);
}
END_TEST

/* ---- greedy canaries ----------------------------------------------------------------------- */

#define N_PROMPTS 20
#define N_TOKENS 48

static void greedy_reference(model *m, const int *prompt, int n, int *out) {
    decode_options o = decode_defaults();
    o.sampling.temperature = 0;
    o.max_tokens = N_TOKENS;
    o.stop_at_eos = 0;
    decode_output d;
    sp_error err;
    ck_assert_msg(decode_run(m, NULL, "greedy", 0, prompt, n, &o, &d, &err) == 0, "%s", err.msg);
    ck_assert_int_eq(d.n, N_TOKENS);
    memcpy(out, d.tokens, sizeof(int) * N_TOKENS);
    decode_output_free(&d);
}

/* Runs medusa at temperature 0 with a rule; checks the tokens against
 * greedy and adds the run's accounting into *sum. */
static void medusa_matches_greedy(model *m, const medusa_heads *h, const medusa_tree *t, accept_rule rule,
                                  children_kind kind, const int *prompt, int n, const int *want, run_accounting *sum) {
    decode_options o = decode_defaults();
    o.sampling.temperature = 0;
    o.rule = rule;
    int got[N_TOKENS];
    run_accounting acc;
    sp_error err;
    ck_assert_msg(medusa_sample_runs(m, h, t, kind, &o, prompt, n, 1, N_TOKENS, got, &acc, &err) == 0, "%s", err.msg);
    for (int i = 0; i < N_TOKENS; i++)
        ck_assert_msg(got[i] == want[i], "rule %d kind %d, prompt of %d tokens: token %d is %d, greedy says %d",
                      (int)rule, (int)kind, n, i, got[i], want[i]);
    ck_assert_int_eq(acc.committed, N_TOKENS);
    sum->target_passes += acc.target_passes;
    sum->accepted_total += acc.accepted_total;
    for (int d = 0; d <= ACC_MAX_DEPTH + 1; d++) sum->length_hist[d] += acc.length_hist[d];
}

/* Prompt p: 1 to 5 tokens (a one-token prompt proposes nothing in its
 * first round), random, or, given succ, a greedy chain from a random token. */
static int prompt_of(int p, int *prompt, const int *succ) {
    int n = 1 + p % 5;
    for (int i = 0; i < n; i++)
        prompt[i] = succ && i ? succ[prompt[i - 1]] : (int)(philox_uniform(77, (uint64_t)p, (uint64_t)i, 0) * 31);
    return n;
}

/* Random heads on the random micro model (3 DeltaNet layers: every partial
 * acceptance is a rollback across them): every rule at temperature 0 gives
 * the greedy tokens; the runs saw both rejections and acceptances. */
START_TEST(test_canary_random_heads) {
    model m;
    load(&m, micro);
    medusa_heads h;
    random_heads(&h, &m, 4, 1, 1, 8, 0.5f);
    medusa_tree full, small;
    sp_error err;
    medusa_tree_default(&full, 4);
    ck_assert(
        medusa_tree_parse(&small, "[[0],[1],[2],[3],[0,0],[0,1],[1,0],[0,0,0],[0,0,1],[0,0,0,0]]", "small", &err) == 0);
    run_accounting sum[4];
    memset(sum, 0, sizeof sum);
    for (int p = 0; p < N_PROMPTS; p++) {
        int prompt[5], want[N_TOKENS], n = prompt_of(p, prompt, NULL);
        greedy_reference(&m, prompt, n, want);
        medusa_matches_greedy(&m, &h, &full, RULE_GREEDY, CHILDREN_TOP_RANKS, prompt, n, want, &sum[0]);
        medusa_matches_greedy(&m, &h, &small, RULE_TYPICAL, CHILDREN_TOP_RANKS, prompt, n, want, &sum[1]);
        medusa_matches_greedy(&m, &h, &small, RULE_EXACT, CHILDREN_IID, prompt, n, want, &sum[2]);
        medusa_matches_greedy(&m, &h, &full, RULE_EXACT, CHILDREN_NO_REPLACEMENT, prompt, n, want, &sum[3]);
    }
    for (int r = 0; r < 4; r++) {
        ck_assert_msg(sum[r].length_hist[0] > 0, "rule %d never rejected at once", r);
        ck_assert_msg(sum[r].accepted_total > 0, "rule %d never accepted: the canary would be vacuous", r);
        ck_assert_msg(sum[r].length_hist[2] > 0, "rule %d never accepted two tokens", r);
    }
    medusa_free(&h);
    model_free(&m);
}
END_TEST

/* Solves A X = B for X, A [n, n], B [n, m] (row-major, double), in place by
 * Gauss–Jordan with partial pivoting; B becomes X. */
static void solve(double *A, double *B, int n, int m) {
    for (int c = 0; c < n; c++) {
        int piv = c;
        for (int r = c + 1; r < n; r++)
            if (fabs(A[r * n + c]) > fabs(A[piv * n + c])) piv = r;
        ck_assert_msg(fabs(A[piv * n + c]) > 1e-9, "singular system");
        for (int k = 0; k < n; k++) {
            double t = A[c * n + k];
            A[c * n + k] = A[piv * n + k], A[piv * n + k] = t;
        }
        for (int k = 0; k < m; k++) {
            double t = B[c * m + k];
            B[c * m + k] = B[piv * m + k], B[piv * m + k] = t;
        }
        for (int r = 0; r < n; r++) {
            if (r == c) continue;
            double f = A[r * n + c] / A[c * n + c];
            for (int k = 0; k < n; k++) A[r * n + k] -= f * A[c * n + k];
            for (int k = 0; k < m; k++) B[r * m + k] -= f * B[c * m + k];
        }
    }
    for (int r = 0; r < n; r++)
        for (int k = 0; k < m; k++) B[r * m + k] /= A[r * n + r];
}

/* A micro model whose layers write nothing into the residual stream is a
 * bigram model: the hidden state after token x is g(x) = norm(embed[x]) and
 * the greedy successor is f(x) = argmax lm_head·g(x). Its layers still run
 * (the DeltaNet and KV state still advance and roll back). Heads whose
 * projections map g(x) to f^{i+2}(x) (W = 0, b = 0: the ResBlock is the
 * identity) guess the greedy continuation exactly; shifted by one token
 * they never do. */
static void make_bigram(model *m, int *succ) {
    const int D = m->cfg.hidden_size, V = m->cfg.vocab_size;
    for (int l = 0; l < m->cfg.num_layers; l++) {
        layer_weights *lw = &m->w.layers[l];
        if (lw->o_proj) memset(lw->o_proj, 0, sizeof(float) * D * m->cfg.num_heads * m->cfg.head_dim);
        if (lw->out_proj) memset(lw->out_proj, 0, sizeof(float) * D * m->cfg.lin_v_heads * m->cfg.lin_v_dim);
        memset(lw->down_proj, 0, sizeof(float) * D * m->cfg.intermediate_size);
    }
    model_state s;
    state_build(&s, &m->cfg, NULL);
    float logits[64];
    for (int x = 0; x < V; x++) {
        state_reset(&s);
        model_forward(m, &s, x, logits, NULL);
        succ[x] = sampler_argmax(logits, V);
    }
    state_free(&s);
}

static void copy_heads(medusa_heads *h, model *m, const int *succ, int shift) {
    const int D = m->cfg.hidden_size, V = m->cfg.vocab_size;
    ck_assert_int_eq(D, V); /* g(x) for the V tokens span the D-space: the map is one linear solve */
    sp_error err;
    ck_assert(medusa_build(h, 4, 1, D, V, 1, &err) == 0);
    model_state s;
    state_build(&s, &m->cfg, NULL);
    double *G = calloc((size_t)V * D, sizeof(double)), *T = calloc((size_t)V * V, sizeof(double));
    float hidden[64];
    for (int i = 0; i < 4; i++) {
        /* rows of G: g(x)ᵀ; rows of T: the wanted logits of x (10 at the target token);
         * P g(x) = t(x) for all x  ⇔  G Pᵀ = T */
        for (int x = 0; x < V; x++) {
            state_reset(&s);
            model_forward(m, &s, x, NULL, hidden);
            for (int d = 0; d < D; d++) G[x * D + d] = hidden[d];
            int y = x;
            for (int k = 0; k < i + 2; k++) y = succ[y];
            for (int v = 0; v < V; v++) T[x * V + v] = v == (y + shift) % V ? 10.0 : 0.0;
        }
        solve(G, T, V, V); /* T becomes Pᵀ */
        float *P = (float *)h->proj[i];
        for (int v = 0; v < V; v++)
            for (int d = 0; d < D; d++) P[v * D + d] = (float)T[d * V + v];
    }
    free(G);
    free(T);
    state_free(&s);
}

START_TEST(test_canary_copy_heads) {
    model m;
    load(&m, micro);
    int succ[32];
    make_bigram(&m, succ);
    medusa_heads right, wrong;
    copy_heads(&right, &m, succ, 0);
    copy_heads(&wrong, &m, succ, 1);
    medusa_tree full, chain;
    sp_error err;
    medusa_tree_default(&full, 4);
    ck_assert(medusa_tree_parse(&chain, "[[0], [0, 0], [0, 0, 0], [0, 0, 0, 0]]", "chain", &err) == 0);
    run_accounting r[3], w = {0};
    memset(r, 0, sizeof r);
    for (int p = 0; p < N_PROMPTS; p++) {
        int prompt[5], want[N_TOKENS], n = prompt_of(p, prompt, succ);
        greedy_reference(&m, prompt, n, want);
        medusa_matches_greedy(&m, &right, &full, RULE_GREEDY, CHILDREN_TOP_RANKS, prompt, n, want, &r[0]);
        medusa_matches_greedy(&m, &right, &chain, RULE_EXACT, CHILDREN_IID, prompt, n, want, &r[1]);
        medusa_matches_greedy(&m, &right, &full, RULE_EXACT, CHILDREN_NO_REPLACEMENT, prompt, n, want, &r[2]);
        medusa_matches_greedy(&m, &wrong, &chain, RULE_GREEDY, CHILDREN_TOP_RANKS, prompt, n, want, &w);
    }
    /* The prompts are greedy chains, so every round with a full budget
     * accepts all 4 proposals (5 tokens a pass): 9 such rounds give 45
     * tokens, and the last round, cut by the budget, the rest (a one-token
     * prompt spends its first round without a proposal). */
    for (int k = 0; k < 3; k++)
        ck_assert_msg(r[k].length_hist[4] == 9 * N_PROMPTS, "setup %d: %ld full rounds", k, r[k].length_hist[4]);
    /* the shifted heads are refused at the first token of every round */
    long proposing = 0;
    for (int d = 0; d <= ACC_MAX_DEPTH + 1; d++) proposing += w.length_hist[d];
    ck_assert_int_gt(proposing, 0);
    ck_assert_int_eq(w.length_hist[0], proposing);
    ck_assert_int_eq(w.accepted_total, 0);
    medusa_free(&right);
    medusa_free(&wrong);
    model_free(&m);
}
END_TEST

/* The embedded target with its trained heads: the greedy and the exact
 * rules emit the greedy tokens, and trained heads get whole paths accepted.
 * A 9-node tree keeps the reference's node-by-node verification short. */
#define EMBEDDED_HEADS "models/tiny-shakespeare-medusa/medusa_heads.safetensors"

START_TEST(test_canary_embedded) {
    model m;
    load(&m, "models/tiny-shakespeare");
    medusa_heads h;
    sp_error err;
    ck_assert_msg(medusa_load(&h, EMBEDDED_HEADS, &m, 0, &err) == 0, "%s", err.msg);
    medusa_tree t;
    ck_assert(medusa_tree_parse(&t, "[[0],[1],[2],[0,0],[0,1],[1,0],[0,0,0],[0,0,1],[0,0,0,0]]", "small", &err) == 0);
    run_accounting sum[2];
    memset(sum, 0, sizeof sum);
    for (int p = 0; p < N_PROMPTS; p++) {
        int prompt[5], want[N_TOKENS], n = 1 + p % 5;
        for (int i = 0; i < n; i++) prompt[i] = (int)(philox_uniform(78, (uint64_t)p, (uint64_t)i, 0) * 500);
        greedy_reference(&m, prompt, n, want);
        medusa_matches_greedy(&m, &h, &t, RULE_GREEDY, CHILDREN_TOP_RANKS, prompt, n, want, &sum[0]);
        medusa_matches_greedy(&m, &h, &t, RULE_EXACT, CHILDREN_IID, prompt, n, want, &sum[1]);
    }
    for (int r = 0; r < 2; r++) {
        ck_assert_int_gt(sum[r].length_hist[4], 0);
        ck_assert_int_gt(sum[r].length_hist[0], 0);
    }
    medusa_free(&h);
    model_free(&m);
}
END_TEST

/* Sampled runs are reproducible by seed and differ across seeds. */
START_TEST(test_sample_runs) {
    model m;
    load(&m, micro);
    medusa_heads h;
    random_heads(&h, &m, 3, 1, 1, 9, 0.5f);
    medusa_tree t;
    medusa_tree_default(&t, 3);
    decode_options o = decode_defaults();
    o.sampling.temperature = 1;
    o.seed = 100;
    int prompt[3] = {4, 8, 15}, a[3 * 12], b[3 * 12];
    sp_error err;
    ck_assert_msg(medusa_sample_runs(&m, &h, &t, CHILDREN_NO_REPLACEMENT, &o, prompt, 3, 3, 12, a, NULL, &err) == 0,
                  "%s", err.msg);
    ck_assert(medusa_sample_runs(&m, &h, &t, CHILDREN_NO_REPLACEMENT, &o, prompt, 3, 3, 12, b, NULL, &err) == 0);
    ck_assert(memcmp(a, b, sizeof a) == 0);
    ck_assert(memcmp(a, a + 12, 12 * sizeof(int)) != 0 || memcmp(a + 12, a + 24, 12 * sizeof(int)) != 0);
    o.rule = RULE_GREEDY; /* a rule that does not fit the children kind is the exact rule's error */
    ck_assert_int_eq(medusa_sample_runs(&m, &h, &t, CHILDREN_TOP_RANKS, &o, prompt, 3, 1, 12, a, NULL, &err), 0);
    o.rule = RULE_EXACT;
    ck_assert_int_eq(medusa_sample_runs(&m, &h, &t, CHILDREN_TOP_RANKS, &o, prompt, 3, 1, 12, a, NULL, &err), -1);
    ck_assert_msg(strstr(err.msg, "top-ranked"), "%s", err.msg);
    medusa_free(&h);
    model_free(&m);
}
END_TEST

Suite *medusa_suite(void) {
    Suite *s = suite_create("medusa");
    TCase *file = harness_tcase("heads file", 30);
    tcase_add_unchecked_fixture(file, setup, teardown);
    tcase_add_test(file, test_roundtrip);
    tcase_add_test(file, test_load_errors);
    tcase_add_test(file, test_base_mismatch);
    tcase_add_test(file, test_base_digest);
    tcase_add_test(file, test_genmodel_heads);
    tcase_add_test(file, test_resblock_by_hand);
    suite_add_tcase(s, file);
    TCase *trees = harness_tcase("trees", 30);
    tcase_add_unchecked_fixture(trees, setup, teardown);
    tcase_add_test(trees, test_tree_parse);
    tcase_add_test(trees, test_tree_validate_and_load);
    tcase_add_test(trees, test_tree_from_accuracies);
    tcase_add_test(trees, test_default_tree);
    suite_add_tcase(s, trees);
    TCase *prop = harness_tcase("proposer", 60);
    tcase_add_unchecked_fixture(prop, setup, teardown);
    tcase_add_test(prop, test_proposer_top_ranks);
    tcase_add_test(prop, test_proposer_draws);
    tcase_add_test(prop, test_proposer_errors);
    tcase_add_test(prop, test_sample_runs);
    suite_add_tcase(s, prop);
    TCase *canary = harness_tcase("greedy canaries", 300);
    tcase_add_unchecked_fixture(canary, setup, teardown);
    tcase_add_test(canary, test_canary_random_heads);
    tcase_add_test(canary, test_canary_copy_heads);
    if (access("models/tiny-shakespeare/model.safetensors", R_OK) == 0 && access(EMBEDDED_HEADS, R_OK) == 0)
        tcase_add_test(canary, test_canary_embedded);
    else
        harness_skip("medusa", "canary_embedded",
                     "models/tiny-shakespeare or its Medusa heads are not in this checkout");
    suite_add_tcase(s, canary);
    return s;
}
