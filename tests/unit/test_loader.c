/* test_loader.c — model_load against broken checkpoints: each test starts
 * from a generated micro model, breaks one thing (a tensor dropped or
 * reshaped, a config field removed or out of range, a NaN in a norm, the
 * file truncated, the header length, overlapping offsets, an unknown dtype)
 * and checks that loading fails with a message naming the file or tensor
 * and the problem. Valid models of every micro preset must load. */
#include <check.h>
#include <jansson.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "genmodel/randmodel.h"
#include "harness.h"
#include "model.h"
#include "safetensors.h"

#define Q_PROJ "model.language_model.layers.3.self_attn.q_proj.weight"

/* ---- helpers ------------------------------------------------------------------ */

static void gen(const char *dir, const char *preset, dtype_t dtype) {
    model_config c;
    randmodel_opts o;
    sp_error err;
    ck_assert_msg(randmodel_preset(preset, &c, &err) == 0, "%s", err.msg);
    randmodel_default_opts(&o);
    o.dtype = dtype;
    ck_assert_msg(randmodel_write(dir, &c, &o, NULL, &err) == 0, "%s", err.msg);
}

/* model_load(dir) must fail with every needle in the message. */
static void expect_load_error(const char *dir, ...) {
    model m;
    sp_error err = {{0}};
    ck_assert_msg(model_load(&m, dir, &err) == -1, "model_load(%s) accepted a broken checkpoint", dir);
    va_list ap;
    va_start(ap, dir);
    for (const char *needle; (needle = va_arg(ap, const char *)) != NULL;)
        ck_assert_msg(strstr(err.msg, needle) != NULL, "message \"%s\" lacks \"%s\"", err.msg, needle);
    va_end(ap);
}

/* One edit of the tensor list; fields left 0/NULL do nothing. */
typedef struct {
    const char *drop;    /* leave this tensor out */
    const char *reshape; /* give this tensor shape[0] = new_rows (data cut to fit) */
    int64_t new_rows;
    const char *poison; /* set element `index` of this tensor to `value` */
    int64_t index;
    float value;
} tensor_edit;

/* Rewrites DIR/model.safetensors with the edit applied, in the file's dtype. */
static void rewrite(const char *dir, const tensor_edit *e) {
    char path[400];
    snprintf(path, sizeof path, "%s/model.safetensors", dir);
    st_set s;
    sp_error err;
    ck_assert_msg(st_open(&s, path, &err) == 0, "%s", err.msg);
    st_out_tensor *out = calloc((size_t)s.n_tensors, sizeof *out);
    float **bufs = calloc((size_t)s.n_tensors, sizeof *bufs);
    int n = 0, dropped = 0, reshaped = 0, poisoned = 0;
    for (int i = 0; i < s.n_tensors; i++) {
        const st_tensor *t = &s.tensors[i];
        if (e->drop && strcmp(t->name, e->drop) == 0) {
            dropped = 1;
            continue;
        }
        int64_t numel = st_numel(t);
        bufs[n] = malloc((size_t)numel * sizeof(float));
        dtype_to_f32(bufs[n], t->data, t->dtype, (size_t)numel);
        out[n] = (st_out_tensor){.name = t->name, .dtype = t->dtype, .ndim = t->ndim, .data = bufs[n]};
        memcpy(out[n].shape, t->shape, sizeof t->shape);
        if (e->reshape && strcmp(t->name, e->reshape) == 0) out[n].shape[0] = e->new_rows, reshaped = 1;
        if (e->poison && strcmp(t->name, e->poison) == 0) bufs[n][e->index] = e->value, poisoned = 1;
        n++;
    }
    ck_assert(dropped == (e->drop != NULL) && reshaped == (e->reshape != NULL) && poisoned == (e->poison != NULL));
    ck_assert_msg(st_write(path, out, n, NULL, NULL, 0, &err) == 0, "%s", err.msg);
    for (int i = 0; i < n; i++) free(bufs[i]);
    free(bufs);
    free(out);
    st_close(&s);
}

static char *read_file(const char *path, size_t *size) {
    FILE *f = fopen(path, "rb");
    ck_assert_msg(f != NULL, "cannot open %s", path);
    fseek(f, 0, SEEK_END);
    *size = (size_t)ftell(f);
    fseek(f, 0, SEEK_SET);
    char *buf = malloc(*size + 1);
    ck_assert_uint_eq(fread(buf, 1, *size, f), *size);
    buf[*size] = '\0';
    fclose(f);
    return buf;
}

/* Parses the safetensors header of DIR/model.safetensors, lets fn change it
 * and writes the file back with the new header and the same data section. */
static void edit_header(const char *dir, void (*fn)(json_t *root)) {
    char path[400];
    snprintf(path, sizeof path, "%s/model.safetensors", dir);
    size_t size;
    char *buf = read_file(path, &size);
    uint64_t hlen = 0;
    for (int i = 7; i >= 0; i--) hlen = (hlen << 8) | (unsigned char)buf[i];
    json_t *root = json_loadb(buf + 8, (size_t)hlen, 0, NULL);
    ck_assert_ptr_nonnull(root);
    fn(root);
    char *h = json_dumps(root, JSON_COMPACT);
    json_decref(root);
    size_t nh = strlen(h), nd = size - 8 - (size_t)hlen;
    char *out = malloc(8 + nh + nd);
    for (int i = 0; i < 8; i++) out[i] = (char)((uint64_t)nh >> (8 * i));
    memcpy(out + 8, h, nh);
    memcpy(out + 8 + nh, buf + 8 + hlen, nd);
    harness_write_file(path, out, 8 + nh + nd);
    free(out);
    free(h);
    free(buf);
}

/* Replaces the first occurrence of `from` in DIR/config.json with `to`. */
static void edit_config(const char *dir, const char *from, const char *to) {
    char path[400];
    snprintf(path, sizeof path, "%s/config.json", dir);
    size_t size;
    char *text = read_file(path, &size);
    char *at = strstr(text, from);
    ck_assert_msg(at != NULL, "config.json lacks %s", from);
    size_t nf = strlen(from), nt = strlen(to);
    char *out = malloc(size - nf + nt + 1);
    memcpy(out, text, (size_t)(at - text));
    memcpy(out + (at - text), to, nt);
    memcpy(out + (at - text) + nt, at + nf, size - (size_t)(at - text) - nf);
    harness_write_file(path, out, size - nf + nt);
    free(out);
    free(text);
}

/* ---- valid checkpoints load (the positive control) ------------------------------- */

START_TEST(test_valid_models_load) {
    char dir[256], sub[320];
    harness_tmpdir(dir, sizeof dir);
    const char *presets[] = {"micro", "micro-draft", "micro-tied", "micro-deep"};
    for (int p = 0; p < 4; p++)
        for (int dt = 0; dt < DTYPE_COUNT; dt++) {
            snprintf(sub, sizeof sub, "%s/%s-%d", dir, presets[p], dt);
            gen(sub, presets[p], (dtype_t)dt);
            model m;
            sp_error err;
            ck_assert_msg(model_load(&m, sub, &err) == 0, "%s: %s", sub, err.msg);
            ck_assert_int_eq(m.w.has_mtp, m.cfg.mtp_num_layers > 0);
            ck_assert_int_eq(m.w.lm_head == m.w.embed, m.cfg.tie_word_embeddings);
            /* a norm weight arrives as stored (bf16/f16 rounding of the draw) */
            ck_assert(m.w.final_norm[0] != 0.0f && fabsf(m.w.final_norm[0]) <= 0.35f);
            model_free(&m);
        }
    harness_rmtree(dir);
}
END_TEST

/* ---- one broken checkpoint per problem ------------------------------------------ */

START_TEST(test_missing_tensor) {
    char dir[256];
    harness_tmpdir(dir, sizeof dir);
    gen(dir, "micro", DTYPE_BF16);
    rewrite(dir, &(tensor_edit){.drop = Q_PROJ});
    expect_load_error(dir, dir, "tensor " Q_PROJ, "missing", NULL);
    harness_rmtree(dir);
}
END_TEST

START_TEST(test_missing_mtp_tensor) {
    char dir[256];
    harness_tmpdir(dir, sizeof dir);
    gen(dir, "micro", DTYPE_BF16);
    rewrite(dir, &(tensor_edit){.drop = "mtp.layers.0.self_attn.k_norm.weight"});
    expect_load_error(dir, "tensor mtp.layers.0.self_attn.k_norm.weight", "missing", NULL);
    harness_rmtree(dir);
}
END_TEST

START_TEST(test_shape_mismatch) {
    char dir[256];
    harness_tmpdir(dir, sizeof dir);
    gen(dir, "micro", DTYPE_BF16); /* micro: q_proj is [2·H·Dh, D] = [128, 32] */
    rewrite(dir, &(tensor_edit){.reshape = Q_PROJ, .new_rows = 64});
    expect_load_error(dir, "tensor " Q_PROJ ": expected [128, 32]", "has [64, 32]", "model.safetensors", NULL);
    harness_rmtree(dir);
}
END_TEST

START_TEST(test_config_field_missing) {
    char dir[256];
    harness_tmpdir(dir, sizeof dir);
    gen(dir, "micro", DTYPE_BF16);
    edit_config(dir, "\"hidden_size\": 32,", "");
    expect_load_error(dir, "config.json", "config field \"hidden_size\" is missing", NULL);
    harness_rmtree(dir);
}
END_TEST

START_TEST(test_config_field_out_of_range) {
    char dir[256];
    harness_tmpdir(dir, sizeof dir);
    gen(dir, "micro", DTYPE_BF16);
    edit_config(dir, "\"num_hidden_layers\": 4", "\"num_hidden_layers\": 0");
    expect_load_error(dir, "config.json", "\"num_hidden_layers\" = 0 is out of range", NULL);
    gen(dir, "micro", DTYPE_BF16);
    edit_config(dir, "\"rms_norm_eps\": 1e-06", "\"rms_norm_eps\": -1");
    expect_load_error(dir, "config.json", "\"rms_norm_eps\" = -1 is out of range", NULL);
    /* a config that disagrees with the tensors: caught as a shape mismatch */
    gen(dir, "micro", DTYPE_BF16);
    edit_config(dir, "\"intermediate_size\": 64", "\"intermediate_size\": 48");
    expect_load_error(dir, "mlp.gate_proj.weight: expected [48, 32]", "has [64, 32]", NULL);
    harness_rmtree(dir);
}
END_TEST

START_TEST(test_tensors_the_config_does_not_declare) {
    /* an 8-layer checkpoint under the config of its first 4 layers must not
     * silently run as a 4-layer model */
    char dir[256], path[320];
    harness_tmpdir(dir, sizeof dir);
    model_config c;
    randmodel_opts o;
    sp_error err;
    ck_assert(randmodel_preset("micro", &c, &err) == 0);
    randmodel_default_opts(&o);
    model_config deep = c;
    deep.num_layers = 2 * c.num_layers;
    for (int l = c.num_layers; l < deep.num_layers; l++) deep.layer_types[l] = c.layer_types[l - c.num_layers];
    ck_assert_msg(randmodel_write(dir, &deep, &o, NULL, &err) == 0, "%s", err.msg);
    char *json;
    ck_assert_msg(randmodel_config_json(&c, &o, &json, &err) == 0, "%s", err.msg);
    snprintf(path, sizeof path, "%s/config.json", dir);
    harness_write_file(path, json, strlen(json));
    free(json);
    expect_load_error(dir, "layers.4.", "is not part of the model config.json describes", NULL);
    harness_rmtree(dir);
}
END_TEST

START_TEST(test_non_finite_norm) {
    char dir[256];
    harness_tmpdir(dir, sizeof dir);
    const char *norm = "model.language_model.layers.1.post_attention_layernorm.weight";
    gen(dir, "micro", DTYPE_BF16);
    rewrite(dir, &(tensor_edit){.poison = norm, .index = 5, .value = NAN});
    expect_load_error(dir, norm, "element 5 is NaN", "norm", NULL);
    gen(dir, "micro", DTYPE_F16);
    rewrite(dir, &(tensor_edit){
                     .poison = "model.language_model.layers.0.linear_attn.norm.weight", .index = 0, .value = INFINITY});
    expect_load_error(dir, "model.language_model.layers.0.linear_attn.norm.weight", "infinite", NULL);
    harness_rmtree(dir);
}
END_TEST

START_TEST(test_truncated_file) {
    char dir[256], path[400];
    harness_tmpdir(dir, sizeof dir);
    gen(dir, "micro", DTYPE_BF16);
    snprintf(path, sizeof path, "%s/model.safetensors", dir);
    size_t size;
    char *buf = read_file(path, &size);
    harness_write_file(path, buf, size / 2);
    expect_load_error(dir, path, "run past the end of the data section", "truncated", NULL);
    harness_write_file(path, buf, 6);
    expect_load_error(dir, path, "truncated: 6 bytes", NULL);
    free(buf);
    harness_rmtree(dir);
}
END_TEST

START_TEST(test_header_past_end) {
    char dir[256], path[400];
    harness_tmpdir(dir, sizeof dir);
    gen(dir, "micro", DTYPE_BF16);
    snprintf(path, sizeof path, "%s/model.safetensors", dir);
    size_t size;
    char *buf = read_file(path, &size);
    uint64_t big = (uint64_t)size * 2;
    for (int i = 0; i < 8; i++) buf[i] = (char)(big >> (8 * i));
    harness_write_file(path, buf, size);
    char want[64];
    snprintf(want, sizeof want, "header length %llu runs past the end", (unsigned long long)big);
    expect_load_error(dir, path, want, NULL);
    free(buf);
    harness_rmtree(dir);
}
END_TEST

/* layer 0's post-attention norm is moved onto its input norm's bytes */
static void make_overlap(json_t *root) {
    json_t *a = json_object_get(root, "model.language_model.layers.0.input_layernorm.weight");
    json_t *b = json_object_get(root, "model.language_model.layers.0.post_attention_layernorm.weight");
    json_object_set(b, "data_offsets", json_object_get(a, "data_offsets"));
}

START_TEST(test_overlapping_offsets) {
    char dir[256];
    harness_tmpdir(dir, sizeof dir);
    gen(dir, "micro", DTYPE_BF16);
    edit_header(dir, make_overlap);
    expect_load_error(dir, "model.safetensors", "layers.0.input_layernorm.weight",
                      "layers.0.post_attention_layernorm.weight", "overlap", NULL);
    harness_rmtree(dir);
}
END_TEST

static void make_unknown_dtype(json_t *root) {
    json_object_set_new(json_object_get(root, "mtp.fc.weight"), "dtype", json_string("F8_E4M3"));
}

START_TEST(test_unknown_dtype) {
    char dir[256];
    harness_tmpdir(dir, sizeof dir);
    gen(dir, "micro", DTYPE_BF16);
    edit_header(dir, make_unknown_dtype);
    expect_load_error(dir, "model.safetensors", "tensor mtp.fc.weight", "\"F8_E4M3\"", "only F32, BF16 and F16", NULL);
    harness_rmtree(dir);
}
END_TEST

START_TEST(test_no_checkpoint) {
    char dir[256], path[400];
    harness_tmpdir(dir, sizeof dir);
    expect_load_error(dir, "config.json", "cannot open", NULL);
    gen(dir, "micro", DTYPE_BF16);
    snprintf(path, sizeof path, "%s/model.safetensors", dir);
    ck_assert_int_eq(unlink(path), 0);
    expect_load_error(dir, dir, "neither model.safetensors nor model.safetensors.index.json", NULL);
    harness_rmtree(dir);
}
END_TEST

Suite *loader_suite(void) {
    Suite *s = suite_create("loader");
    TCase *tc = harness_tcase("core", 60);
    tcase_add_test(tc, test_valid_models_load);
    tcase_add_test(tc, test_missing_tensor);
    tcase_add_test(tc, test_missing_mtp_tensor);
    tcase_add_test(tc, test_shape_mismatch);
    tcase_add_test(tc, test_config_field_missing);
    tcase_add_test(tc, test_config_field_out_of_range);
    tcase_add_test(tc, test_tensors_the_config_does_not_declare);
    tcase_add_test(tc, test_non_finite_norm);
    tcase_add_test(tc, test_truncated_file);
    tcase_add_test(tc, test_header_past_end);
    tcase_add_test(tc, test_overlapping_offsets);
    tcase_add_test(tc, test_unknown_dtype);
    tcase_add_test(tc, test_no_checkpoint);
    suite_add_tcase(s, tc);
    return s;
}
