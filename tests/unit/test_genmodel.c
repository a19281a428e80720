/* test_genmodel.c — the random checkpoint generator (tools/genmodel): every preset in both layouts loads back with
 * exactly the tensors of layout_build, the same seed gives identical bytes, every parameter kind is drawn in its
 * range (norms not zero), and config.json round-trips for odd configs. */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "config.h"
#include "footprint.h"
#include "genmodel/randmodel.h"
#include "harness.h"
#include "safetensors.h"
#include "layout.h"

/* ---- helpers ------------------------------------------------------------------ */

static void write_model(const char *dir, const model_config *c, const randmodel_opts *o) {
    sp_error err;
    ck_assert_msg(randmodel_write(dir, c, o, NULL, &err) == 0, "randmodel_write(%s): %s", dir, err.msg);
}

static void *read_all(const char *path, size_t *size) {
    FILE *f = fopen(path, "rb");
    ck_assert_msg(f != NULL, "cannot open %s", path);
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    void *buf = malloc((size_t)n + 1);
    ck_assert_uint_eq(fread(buf, 1, (size_t)n, f), (size_t)n);
    fclose(f);
    *size = (size_t)n;
    return buf;
}

static int same_file(const char *a, const char *b) {
    size_t na, nb;
    void *x = read_all(a, &na), *y = read_all(b, &nb);
    int same = na == nb && memcmp(x, y, na) == 0;
    free(x);
    free(y);
    return same;
}

/* Loads dir back and checks it against cfg and the layout: config fields,
 * then every spec present with its shape and dtype, and nothing else. */
static void check_loads_back(const char *dir, const model_config *want, const char *prefix, dtype_t dtype) {
    model_config got;
    sp_error err;
    ck_assert_msg(config_load(dir, &got, &err) == 0, "%s", err.msg);
    ck_assert_str_eq(got.tensor_prefix, prefix);
    ck_assert_int_eq(got.vocab_size, want->vocab_size);
    ck_assert_int_eq(got.hidden_size, want->hidden_size);
    ck_assert_int_eq(got.intermediate_size, want->intermediate_size);
    ck_assert_int_eq(got.num_layers, want->num_layers);
    ck_assert_int_eq(got.num_heads, want->num_heads);
    ck_assert_int_eq(got.num_kv_heads, want->num_kv_heads);
    ck_assert_int_eq(got.head_dim, want->head_dim);
    ck_assert_int_eq(got.rotary_dim, want->rotary_dim);
    ck_assert(got.rope_theta == want->rope_theta);
    ck_assert_int_eq(got.conv_kernel, want->conv_kernel);
    ck_assert_int_eq(got.lin_k_heads, want->lin_k_heads);
    ck_assert_int_eq(got.lin_v_heads, want->lin_v_heads);
    ck_assert_int_eq(got.lin_k_dim, want->lin_k_dim);
    ck_assert_int_eq(got.lin_v_dim, want->lin_v_dim);
    ck_assert(got.rms_norm_eps == want->rms_norm_eps);
    ck_assert_int_eq(got.tie_word_embeddings, want->tie_word_embeddings);
    ck_assert_int_eq(got.mtp_num_layers, want->mtp_num_layers);
    ck_assert_int_eq(got.max_position_embeddings, want->max_position_embeddings);
    ck_assert_int_eq(got.num_eos, want->num_eos);
    for (int e = 0; e < got.num_eos; e++) ck_assert_int_eq(got.eos_token_ids[e], want->eos_token_ids[e]);
    for (int l = 0; l < got.num_layers; l++) ck_assert_int_eq(got.layer_types[l], want->layer_types[l]);

    st_set s;
    ck_assert_msg(st_open(&s, dir, &err) == 0, "%s", err.msg);
    tensor_spec *specs = calloc((size_t)layout_max_tensors(&got), sizeof *specs);
    int n = layout_build(&got, got.mtp_num_layers > 0, specs);
    ck_assert_int_eq(s.n_tensors, n);
    for (int i = 0; i < n; i++) {
        const st_tensor *t = st_find(&s, specs[i].name);
        ck_assert_msg(t != NULL, "%s: tensor %s missing", dir, specs[i].name);
        ck_assert_int_eq(t->dtype, dtype);
        ck_assert_msg(t->ndim == specs[i].ndim, "%s: ndim %d, want %d", specs[i].name, t->ndim, specs[i].ndim);
        for (int d = 0; d < t->ndim; d++)
            ck_assert_msg(t->shape[d] == specs[i].shape[d], "%s: shape[%d] = %lld, want %lld", specs[i].name, d,
                          (long long)t->shape[d], (long long)specs[i].shape[d]);
        if (strncmp(specs[i].name, "mtp.", 4) && strcmp(specs[i].name, "lm_head.weight"))
            ck_assert_msg(strncmp(specs[i].name, prefix, strlen(prefix)) == 0, "%s not under %s", specs[i].name,
                          prefix);
    }
    ck_assert_int_eq(st_find(&s, "lm_head.weight") != NULL, !want->tie_word_embeddings);
    ck_assert_int_eq(st_find(&s, "mtp.fc.weight") != NULL, want->mtp_num_layers > 0);
    free(specs);
    st_close(&s);
}

/* A tensor's values as float32. */
static float *values(const st_set *s, const char *name, int64_t *n) {
    const st_tensor *t = st_find(s, name);
    ck_assert_msg(t != NULL, "%s missing", name);
    *n = st_numel(t);
    float *v = malloc((size_t)*n * sizeof *v);
    dtype_to_f32(v, t->data, t->dtype, (size_t)*n);
    return v;
}

/* Parameter count from the architecture's formulas, written out here
 * independently of layout.c: embed, layers, final norm, lm_head, MTP. */
static long long layer_params(const model_config *c, layer_type t) {
    long long D = c->hidden_size, F = c->intermediate_size, n = 2 * D + 3 * D * F;
    if (t == LAYER_FULL_ATTENTION) {
        long long H = c->num_heads, Hkv = c->num_kv_heads, Dh = c->head_dim;
        return n + 2 * H * Dh * D + 2 * Hkv * Dh * D + D * H * Dh + 2 * Dh;
    }
    long long Hk = c->lin_k_heads, Hv = c->lin_v_heads, Dk = c->lin_k_dim, Dv = c->lin_v_dim, K = c->conv_kernel;
    long long C = 2 * Hk * Dk + Hv * Dv;
    return n + C * D + Hv * Dv * D + 2 * Hv * D + C * K + 2 * Hv + Dv + D * Hv * Dv;
}

static long long count_params(const model_config *c, long long *mtp) {
    long long V = c->vocab_size, D = c->hidden_size, n = V * D + D + (c->tie_word_embeddings ? 0 : V * D);
    for (int l = 0; l < c->num_layers; l++) n += layer_params(c, c->layer_types[l]);
    *mtp = c->mtp_num_layers ? 2 * D * D + 3 * D + layer_params(c, LAYER_FULL_ATTENTION) : 0;
    return n + *mtp;
}

/* ---- tests ------------------------------------------------------------------------ */

START_TEST(test_every_preset_loads_back) {
    char dir[256], sub[320];
    harness_tmpdir(dir, sizeof dir);
    int count = 0;
    for (const randmodel_preset_info *p = randmodel_presets(); p->name; p++, count++) {
        model_config c;
        sp_error err;
        ck_assert_msg(randmodel_preset(p->name, &c, &err) == 0, "%s", err.msg);
        ck_assert_msg(c.vocab_size >= 16, "%s: vocab %d", p->name, c.vocab_size);
        if (p->large) continue; /* hundreds of MB: its numbers are checked in test_bench_preset */
        for (int layout = 0; layout < 2; layout++) {
            randmodel_opts o;
            randmodel_default_opts(&o);
            o.layout = (randmodel_layout)layout;
            snprintf(sub, sizeof sub, "%s/%s-%d", dir, p->name, layout);
            write_model(sub, &c, &o);
            check_loads_back(sub, &c, layout ? "model." : "model.language_model.", DTYPE_BF16);
        }
    }
    ck_assert_int_ge(count, 6);
    harness_rmtree(dir);
}
END_TEST

/* micro and micro-draft pair up; the micro variants differ where the tests
 * need them to (head dims, pattern, rotary fraction, tying). */
START_TEST(test_presets_differ_where_needed) {
    model_config m, d, t, deep;
    sp_error err;
    ck_assert(randmodel_preset("micro", &m, &err) == 0 && randmodel_preset("micro-draft", &d, &err) == 0);
    ck_assert(randmodel_preset("micro-tied", &t, &err) == 0 && randmodel_preset("micro-deep", &deep, &err) == 0);
    ck_assert_int_eq(m.vocab_size, d.vocab_size);
    ck_assert_int_lt(d.hidden_size, m.hidden_size);
    ck_assert(t.tie_word_embeddings && !m.tie_word_embeddings);
    ck_assert(t.head_dim != m.head_dim && deep.head_dim != m.head_dim);
    ck_assert(t.rotary_dim * m.head_dim != m.rotary_dim * t.head_dim); /* rotary fractions differ */
    ck_assert(t.layer_types[1] != m.layer_types[1] && deep.layer_types[2] != m.layer_types[2]);
    model_config sm, sd;
    ck_assert(randmodel_preset("small", &sm, &err) == 0 && randmodel_preset("small-draft", &sd, &err) == 0);
    ck_assert_int_eq(sm.vocab_size, sd.vocab_size);
    long long mtp, params = count_params(&sm, &mtp);
    ck_assert_msg(params > 2000000 && params < 20000000, "small has %lld parameters", params);
    ck_assert_int_eq(randmodel_preset("nano", &m, &err), -1);
    ck_assert_msg(strstr(err.msg, "unknown preset \"nano\"") && strstr(err.msg, "micro-draft"), "%s", err.msg);
}
END_TEST

/* The benchmark preset (never written by the tests): the 27B's layout at
 * 150-300M parameters, bf16 by default, a decode step reading weights well
 * beyond a few MB of cache, and the config.json it would write reads back. */
START_TEST(test_bench_preset) {
    model_config c;
    sp_error err;
    const randmodel_preset_info *info = NULL;
    for (const randmodel_preset_info *p = randmodel_presets(); p->name; p++)
        if (!strcmp(p->name, "bench")) info = p;
    ck_assert_msg(info && info->large, "no large preset named bench");
    ck_assert(randmodel_preset("bench", &c, &err) == 0);
    long long mtp, params = count_params(&c, &mtp);
    ck_assert_msg(params >= 150000000 && params <= 300000000, "bench has %lld parameters", params);
    ck_assert_int_eq(c.vocab_size, 32768);
    ck_assert_int_eq(c.hidden_size, 1024);
    ck_assert_int_eq(c.num_layers, 12);
    ck_assert_int_eq(config_num_full(&c), 3); /* 3 Gated DeltaNet : 1 attention */
    for (int l = 0; l < c.num_layers; l++)
        ck_assert_int_eq(c.layer_types[l], (l + 1) % 4 ? LAYER_LINEAR_ATTENTION : LAYER_FULL_ATTENTION);
    ck_assert(c.mtp_num_layers == 1 && mtp > 0 && !c.tie_word_embeddings);
    ck_assert_int_eq(c.head_dim, 256);
    ck_assert_int_eq(c.rotary_dim * 4, c.head_dim);
    ck_assert_int_eq(c.lin_v_heads, 3 * c.lin_k_heads);
    model_footprint fp;
    footprint_compute(&c, 1, 2.0, 2.0, &fp);
    ck_assert_msg(fp.weight_bytes_per_step > 4.0e8 && fp.weight_bytes_per_step < 5.0e8, "%.0f bytes per step",
                  fp.weight_bytes_per_step);
    randmodel_opts o;
    randmodel_default_opts(&o);
    ck_assert_int_eq(o.dtype, DTYPE_BF16);
    char *json = NULL;
    ck_assert_msg(randmodel_config_json(&c, &o, &json, &err) == 0, "%s", err.msg);
    free(json);
}
END_TEST

/* A draft for every preset: same vocabulary and eos, fewer parameters, no
 * MTP, and it writes and loads back like any model. */
START_TEST(test_draft_for_any_config) {
    char dir[256], sub[320];
    harness_tmpdir(dir, sizeof dir);
    for (const randmodel_preset_info *p = randmodel_presets(); p->name; p++) {
        model_config t, d;
        sp_error err;
        ck_assert(randmodel_preset(p->name, &t, &err) == 0);
        randmodel_draft_config(&t, &d);
        ck_assert_int_eq(d.vocab_size, t.vocab_size);
        ck_assert_int_eq(d.num_eos, t.num_eos);
        ck_assert_int_eq(d.eos_token_ids[0], t.eos_token_ids[0]);
        ck_assert_int_eq(d.mtp_num_layers, 0);
        long long mt, md;
        ck_assert_msg(count_params(&d, &md) < count_params(&t, &mt), "draft of %s is not smaller", p->name);
        if (p->large) continue; /* its draft is tens of MB: not written here */
        randmodel_opts o;
        randmodel_default_opts(&o);
        snprintf(sub, sizeof sub, "%s/%s", dir, p->name);
        write_model(sub, &d, &o);
        check_loads_back(sub, &d, "model.language_model.", DTYPE_BF16);
    }
    harness_rmtree(dir);
}
END_TEST

START_TEST(test_same_seed_same_bytes) {
    char dir[256], a[320], b[320], c2[320], pa[400], pb[400];
    harness_tmpdir(dir, sizeof dir);
    model_config c;
    sp_error err;
    ck_assert(randmodel_preset("micro", &c, &err) == 0);
    randmodel_opts o;
    randmodel_default_opts(&o);
    o.seed = 1234;
    snprintf(a, sizeof a, "%s/a", dir);
    snprintf(b, sizeof b, "%s/b", dir);
    snprintf(c2, sizeof c2, "%s/c", dir);
    write_model(a, &c, &o);
    write_model(b, &c, &o);
    o.seed = 1235;
    write_model(c2, &c, &o);
    snprintf(pa, sizeof pa, "%s/model.safetensors", a);
    snprintf(pb, sizeof pb, "%s/model.safetensors", b);
    ck_assert_msg(same_file(pa, pb), "same seed, different checkpoint bytes");
    snprintf(pa, sizeof pa, "%s/config.json", a);
    snprintf(pb, sizeof pb, "%s/config.json", b);
    ck_assert(same_file(pa, pb));
    /* another seed: every tensor differs (elementwise, in most elements) */
    st_set sa, sc;
    ck_assert_msg(st_open(&sa, a, &err) == 0, "%s", err.msg);
    ck_assert_msg(st_open(&sc, c2, &err) == 0, "%s", err.msg);
    for (int i = 0; i < sa.n_tensors; i++) {
        int64_t n, m;
        float *x = values(&sa, sa.tensors[i].name, &n), *y = values(&sc, sa.tensors[i].name, &m);
        int64_t same = 0;
        for (int64_t e = 0; e < n; e++) same += x[e] == y[e];
        ck_assert_msg(same * 4 < n + 3, "%s: %lld of %lld values equal across seeds", sa.tensors[i].name,
                      (long long)same, (long long)n);
        free(x);
        free(y);
    }
    st_close(&sa);
    st_close(&sc);
    harness_rmtree(dir);
}
END_TEST

/* Every parameter kind in its range; zero-centred norms are not all zero. */
START_TEST(test_value_ranges) {
    char dir[256];
    harness_tmpdir(dir, sizeof dir);
    model_config c;
    sp_error err;
    ck_assert(randmodel_preset("micro", &c, &err) == 0);
    randmodel_opts o;
    randmodel_default_opts(&o);
    o.dtype = DTYPE_F32;
    write_model(dir, &c, &o);
    st_set s;
    ck_assert_msg(st_open(&s, dir, &err) == 0, "%s", err.msg);
    tensor_spec *specs = calloc((size_t)layout_max_tensors(&c), sizeof *specs);
    int n = layout_build(&c, 1, specs);
    int kinds_seen[8] = {0};
    for (int i = 0; i < n; i++) {
        int64_t m;
        float *v = values(&s, specs[i].name, &m);
        double sum = 0, sq = 0, lo = INFINITY, hi = -INFINITY;
        for (int64_t e = 0; e < m; e++) {
            sum += v[e], sq += (double)v[e] * v[e];
            lo = fmin(lo, v[e]), hi = fmax(hi, v[e]);
        }
        double mean = sum / (double)m, sd = sqrt(fmax(sq / (double)m - mean * mean, 0));
        const char *nm = specs[i].name;
        kinds_seen[specs[i].kind] = 1;
        switch (specs[i].kind) {
        case TENSOR_NORM:
            /* uniform(-0.35, 0.35): sd 0.20; the bounds below hold for any
             * tensor of >= 16 elements except with negligible probability */
            ck_assert_msg(lo >= -0.35 && hi <= 0.35, "%s outside ±0.35: [%g, %g]", nm, lo, hi);
            ck_assert_msg(sd > 0.1 && fabs(mean) < 0.2, "%s: mean %g sd %g", nm, mean, sd);
            break;
        case TENSOR_NORM_PLAIN:
            ck_assert_msg(lo >= 0.65 && hi <= 1.35 && fabs(mean - 1) < 0.2 && sd > 0.1, "%s: mean %g sd %g", nm, mean,
                          sd);
            break;
        case TENSOR_A_LOG:
            ck_assert_msg(lo >= 0 && hi <= log(16.0) + 1e-6 && sd > 0.1, "%s: [%g, %g]", nm, lo, hi);
            break;
        case TENSOR_DT_BIAS: ck_assert_msg(lo >= -3 && hi <= 1 && sd > 0.2, "%s: [%g, %g]", nm, lo, hi); break;
        case TENSOR_MATRIX:
        case TENSOR_EMBEDDING:
        case TENSOR_CONV: {
            int64_t fan_in = specs[i].kind == TENSOR_CONV ? specs[i].shape[2] : specs[i].shape[1];
            double want = (specs[i].kind == TENSOR_EMBEDDING ? 2.0 : 1.0) / sqrt((double)fan_in);
            /* >= 64 samples of a uniform: the sample sd is within 25 % of
             * the true one with overwhelming probability */
            ck_assert_msg(fabs(sd / want - 1) < 0.25, "%s: sd %g, want %g", nm, sd, want);
            ck_assert_msg(fabs(mean) < 0.5 * want, "%s: mean %g", nm, mean);
            break;
        }
        }
        free(v);
    }
    for (int k = TENSOR_MATRIX; k <= TENSOR_DT_BIAS; k++) ck_assert_msg(kinds_seen[k], "kind %d never drawn", k);
    free(specs);
    st_close(&s);
    harness_rmtree(dir);
}
END_TEST

/* The same seed writes the same values in both layouts (only the names
 * differ), in every dtype (up to its rounding) and split into shards. */
START_TEST(test_layouts_dtypes_and_shards_agree) {
    char dir[256], full[320], text[320], sh[320], f16[320];
    harness_tmpdir(dir, sizeof dir);
    model_config c;
    sp_error err;
    ck_assert(randmodel_preset("micro-tied", &c, &err) == 0);
    randmodel_opts o;
    randmodel_default_opts(&o);
    o.dtype = DTYPE_F32;
    snprintf(full, sizeof full, "%s/full", dir);
    snprintf(text, sizeof text, "%s/text", dir);
    snprintf(sh, sizeof sh, "%s/sharded", dir);
    snprintf(f16, sizeof f16, "%s/f16", dir);
    write_model(full, &c, &o);
    o.layout = RANDMODEL_LAYOUT_TEXT;
    write_model(text, &c, &o);
    o.layout = RANDMODEL_LAYOUT_FULL;
    o.n_shards = 3;
    write_model(sh, &c, &o);
    check_loads_back(sh, &c, "model.language_model.", DTYPE_F32);
    o.n_shards = 1;
    o.dtype = DTYPE_F16;
    write_model(f16, &c, &o);
    check_loads_back(f16, &c, "model.language_model.", DTYPE_F16);
    st_set sf, st, ss, sh16;
    ck_assert(st_open(&sf, full, &err) == 0 && st_open(&st, text, &err) == 0);
    ck_assert(st_open(&ss, sh, &err) == 0 && st_open(&sh16, f16, &err) == 0);
    ck_assert_int_eq(ss.n_files, 3);
    for (int i = 0; i < sf.n_tensors; i++) {
        const char *name = sf.tensors[i].name;
        char text_name[200];
        const char *pfx = "model.language_model.";
        if (strncmp(name, pfx, strlen(pfx)) == 0)
            snprintf(text_name, sizeof text_name, "model.%s", name + strlen(pfx));
        else
            snprintf(text_name, sizeof text_name, "%s", name);
        const st_tensor *a = &sf.tensors[i], *b = st_find(&st, text_name), *d = st_find(&ss, name),
                        *h = st_find(&sh16, name);
        ck_assert_msg(b && d && h, "%s missing in a variant", name);
        ck_assert_msg(a->nbytes == b->nbytes && memcmp(a->data, b->data, a->nbytes) == 0, "%s: layouts differ", name);
        ck_assert_msg(memcmp(a->data, d->data, a->nbytes) == 0, "%s: sharded differs", name);
        int64_t n;
        float *x = values(&sf, name, &n), *y = values(&sh16, name, &n);
        for (int64_t e = 0; e < n; e++) ck_assert(y[e] == f16_to_f32(f32_to_f16(x[e])));
        free(x);
        free(y);
    }
    st_close(&sf);
    st_close(&st);
    st_close(&ss);
    st_close(&sh16);
    harness_rmtree(dir);
}
END_TEST

/* Configs whose config.json needs care: a rotary fraction of 1/3, several
 * eos ids, none, a pattern without full attention, tied and no MTP. */
START_TEST(test_config_round_trip_odd_configs) {
    char dir[256], sub[320];
    harness_tmpdir(dir, sizeof dir);
    model_config c;
    sp_error err;
    ck_assert(randmodel_preset("micro", &c, &err) == 0);
    randmodel_opts o;
    randmodel_default_opts(&o);
    for (int variant = 0; variant < 4; variant++) {
        model_config v = c;
        if (variant == 0) v.head_dim = 12, v.rotary_dim = 4; /* factor 1/3: int(12 · f) must stay 4 */
        if (variant == 1) v.num_eos = 3, v.eos_token_ids[1] = 0, v.eos_token_ids[2] = 7, v.rope_theta = 12345.678;
        if (variant == 2) {
            v.num_eos = 0, v.tie_word_embeddings = 1, v.mtp_num_layers = 0, v.rms_norm_eps = 3e-5f;
            for (int l = 0; l < v.num_layers; l++) v.layer_types[l] = LAYER_LINEAR_ATTENTION;
        }
        if (variant == 3) v.head_dim = 10, v.rotary_dim = 6, v.num_layers = 1, v.layer_types[0] = LAYER_FULL_ATTENTION;
        for (int layout = 0; layout < 2; layout++) {
            o.layout = (randmodel_layout)layout;
            snprintf(sub, sizeof sub, "%s/v%d-%d", dir, variant, layout);
            write_model(sub, &v, &o);
            check_loads_back(sub, &v, layout ? "model." : "model.language_model.", DTYPE_BF16);
        }
    }
    harness_rmtree(dir);
}
END_TEST

START_TEST(test_refuses_what_it_cannot_write) {
    char dir[256];
    harness_tmpdir(dir, sizeof dir);
    model_config c;
    sp_error err;
    ck_assert(randmodel_preset("micro", &c, &err) == 0);
    randmodel_opts o;
    randmodel_default_opts(&o);
    model_config odd = c;
    odd.rotary_dim = 5;
    ck_assert_int_eq(randmodel_write(dir, &odd, &o, NULL, &err), -1);
    ck_assert_msg(strstr(err.msg, "rotary dims 5 must be even"), "%s", err.msg);
    model_config gqa = c;
    gqa.num_kv_heads = 3;
    ck_assert_int_eq(randmodel_write(dir, &gqa, &o, NULL, &err), -1);
    ck_assert_msg(strstr(err.msg, "num_attention_heads 4 is not a multiple of num_key_value_heads 3"), "%s", err.msg);
    model_config eos = c;
    eos.eos_token_ids[0] = 32;
    ck_assert_int_eq(randmodel_write(dir, &eos, &o, NULL, &err), -1);
    ck_assert_msg(strstr(err.msg, "eos_token_id 32 is outside the vocabulary"), "%s", err.msg);
    o.medusa_heads = -1;
    ck_assert_int_eq(randmodel_write(dir, &c, &o, NULL, &err), -1);
    ck_assert_msg(strstr(err.msg, "Medusa"), "%s", err.msg);
    o.medusa_heads = 0;
    o.n_shards = 0;
    ck_assert_int_eq(randmodel_write(dir, &c, &o, NULL, &err), -1);
    ck_assert_msg(strstr(err.msg, "shards"), "%s", err.msg);
    char path[320];
    snprintf(path, sizeof path, "%s/config.json", dir);
    ck_assert_int_ne(access(path, F_OK), 0); /* nothing was written */
    harness_rmtree(dir);
}
END_TEST

START_TEST(test_report) {
    char dir[256];
    harness_tmpdir(dir, sizeof dir);
    model_config c;
    sp_error err;
    ck_assert(randmodel_preset("micro", &c, &err) == 0);
    randmodel_opts o;
    randmodel_default_opts(&o);
    o.n_shards = 2;
    randmodel_report r;
    ck_assert_msg(randmodel_write(dir, &c, &o, &r, &err) == 0, "%s", err.msg);
    long long mtp, params = count_params(&c, &mtp);
    ck_assert_int_eq(r.params, params);
    ck_assert_int_eq(r.mtp_params, mtp);
    ck_assert_int_eq(r.tensor_bytes, 2 * params);
    ck_assert_int_eq(r.n_files, 2);
    ck_assert_int_gt(r.file_bytes, r.tensor_bytes);
    harness_rmtree(dir);
}
END_TEST

Suite *genmodel_suite(void) {
    Suite *s = suite_create("genmodel");
    TCase *tc = harness_tcase("core", 60);
    tcase_add_test(tc, test_every_preset_loads_back);
    tcase_add_test(tc, test_presets_differ_where_needed);
    tcase_add_test(tc, test_bench_preset);
    tcase_add_test(tc, test_draft_for_any_config);
    tcase_add_test(tc, test_same_seed_same_bytes);
    tcase_add_test(tc, test_value_ranges);
    tcase_add_test(tc, test_layouts_dtypes_and_shards_agree);
    tcase_add_test(tc, test_config_round_trip_odd_configs);
    tcase_add_test(tc, test_refuses_what_it_cannot_write);
    tcase_add_test(tc, test_report);
    suite_add_tcase(s, tc);
    return s;
}
