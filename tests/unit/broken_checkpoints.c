/* broken_checkpoints.c — the catalogue of malformed checkpoints (see
 * broken_checkpoints.h): the edits that break a valid checkpoint on disk,
 * then one entry per problem. */
#include "broken_checkpoints.h"

#include <check.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "genmodel/randmodel.h"
#include "harness.h"
#include "safetensors.h"

#define Q_PROJ BROKEN_VALUE_TENSOR
#define EMBED "model.language_model.embed_tokens.weight"

void broken_write_valid(const char *dir, const char *preset, dtype_t dtype) {
    model_config c;
    randmodel_opts o;
    sp_error err;
    ck_assert_msg(randmodel_preset(preset, &c, &err) == 0, "%s", err.msg);
    randmodel_default_opts(&o);
    o.dtype = dtype;
    ck_assert_msg(randmodel_write(dir, &c, &o, NULL, &err) == 0, "%s", err.msg);
}

const char *broken_needle(const char *needle, const char *dir, char *out, size_t size) {
    if (strcmp(needle, BROKEN_AT_DIR) == 0)
        snprintf(out, size, "%s", dir);
    else if (strcmp(needle, BROKEN_AT_FILE) == 0)
        snprintf(out, size, "%s/model.safetensors", dir);
    else
        return needle;
    return out;
}

/* ---- the edits ------------------------------------------------------------------ */

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

static char *read_whole(const char *path, size_t *size) {
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
    char *buf = read_whole(path, &size);
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
    char *text = read_whole(path, &size);
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

/* A valid micro checkpoint (bf16), then one tensor edit. */
static void micro_with(const char *dir, const tensor_edit *e) {
    broken_write_valid(dir, "micro", DTYPE_BF16);
    rewrite(dir, e);
}

/* A valid micro checkpoint (bf16), then one config edit. */
static void micro_config_with(const char *dir, const char *from, const char *to) {
    broken_write_valid(dir, "micro", DTYPE_BF16);
    edit_config(dir, from, to);
}

/* A valid micro checkpoint whose DIR/model.safetensors keeps keep_num/keep_den
 * of its bytes (keep_num bytes when keep_den is 0). */
static void micro_cut(const char *dir, size_t keep_num, size_t keep_den) {
    char path[400];
    broken_write_valid(dir, "micro", DTYPE_BF16);
    snprintf(path, sizeof path, "%s/model.safetensors", dir);
    size_t size;
    char *buf = read_whole(path, &size);
    harness_write_file(path, buf, keep_den ? size * keep_num / keep_den : keep_num);
    free(buf);
}

/* ---- the entries ----------------------------------------------------------------- */

static void missing_tensor(const char *dir) { micro_with(dir, &(tensor_edit){.drop = Q_PROJ}); }

static void missing_mtp_tensor(const char *dir) {
    micro_with(dir, &(tensor_edit){.drop = "mtp.layers.0.self_attn.k_norm.weight"});
}

/* micro: q_proj is [2·H·Dh, D] = [128, 32] */
static void shape_mismatch(const char *dir) { micro_with(dir, &(tensor_edit){.reshape = Q_PROJ, .new_rows = 64}); }

static void config_field_missing(const char *dir) { micro_config_with(dir, "\"hidden_size\": 32,", ""); }

static void no_layers(const char *dir) {
    micro_config_with(dir, "\"num_hidden_layers\": 4", "\"num_hidden_layers\": 0");
}

static void negative_eps(const char *dir) { micro_config_with(dir, "\"rms_norm_eps\": 1e-06", "\"rms_norm_eps\": -1"); }

/* a config that disagrees with the tensors: caught as a shape mismatch */
static void config_against_tensors(const char *dir) {
    micro_config_with(dir, "\"intermediate_size\": 64", "\"intermediate_size\": 48");
}

/* an 8-layer checkpoint under the config of its first 4 layers must not
 * silently run as a 4-layer model */
static void undeclared_tensors(const char *dir) {
    char path[320];
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
}

static void nan_norm(const char *dir) {
    micro_with(dir, &(tensor_edit){.poison = "model.language_model.layers.1.post_attention_layernorm.weight",
                                   .index = 5,
                                   .value = NAN});
}

static void infinite_f16_norm(const char *dir) {
    broken_write_valid(dir, "micro", DTYPE_F16);
    rewrite(dir, &(tensor_edit){
                     .poison = "model.language_model.layers.0.linear_attn.norm.weight", .index = 0, .value = INFINITY});
}

void broken_write_with_value(const char *dir, dtype_t dtype, float value) {
    broken_write_valid(dir, "micro", dtype);
    rewrite(dir, &(tensor_edit){.poison = Q_PROJ, .index = 5, .value = value});
}

/* A bf16 matrix is one a backend may use as mapped (the engine does), so it
 * is checked without being converted. */
static void nan_matrix(const char *dir) { micro_with(dir, &(tensor_edit){.poison = Q_PROJ, .index = 5, .value = NAN}); }

/* The same past the first 2¹⁴ elements: a check that walks a mapped tensor
 * in chunks must still name the element of the tensor. The micro preset
 * with a 1024-token vocabulary: the embedding has 32768 elements. */
static void infinity_deep_in_matrix(const char *dir) {
    model_config c;
    randmodel_opts o;
    sp_error err;
    ck_assert(randmodel_preset("micro", &c, &err) == 0);
    c.vocab_size = 1024;
    c.eos_token_ids[0] = 1023;
    randmodel_default_opts(&o);
    ck_assert_msg(randmodel_write(dir, &c, &o, NULL, &err) == 0, "%s", err.msg);
    rewrite(dir, &(tensor_edit){.poison = EMBED, .index = 20000, .value = -INFINITY});
}

static void truncated_data(const char *dir) { micro_cut(dir, 1, 2); }

static void truncated_header(const char *dir) { micro_cut(dir, 6, 0); }

static void header_past_end(const char *dir) {
    char path[400];
    broken_write_valid(dir, "micro", DTYPE_BF16);
    snprintf(path, sizeof path, "%s/model.safetensors", dir);
    size_t size;
    char *buf = read_whole(path, &size);
    const uint64_t big = (uint64_t)1 << 40;
    for (int i = 0; i < 8; i++) buf[i] = (char)(big >> (8 * i));
    harness_write_file(path, buf, size);
    free(buf);
}

/* layer 0's post-attention norm is moved onto its input norm's bytes */
static void make_overlap(json_t *root) {
    json_t *a = json_object_get(root, "model.language_model.layers.0.input_layernorm.weight");
    json_t *b = json_object_get(root, "model.language_model.layers.0.post_attention_layernorm.weight");
    json_object_set(b, "data_offsets", json_object_get(a, "data_offsets"));
}

static void overlapping_offsets(const char *dir) {
    broken_write_valid(dir, "micro", DTYPE_BF16);
    edit_header(dir, make_overlap);
}

static void make_unknown_dtype(json_t *root) {
    json_object_set_new(json_object_get(root, "mtp.fc.weight"), "dtype", json_string("F8_E4M3"));
}

static void unknown_dtype(const char *dir) {
    broken_write_valid(dir, "micro", DTYPE_BF16);
    edit_header(dir, make_unknown_dtype);
}

static void no_config(const char *dir) { (void)dir; }

static void no_safetensors(const char *dir) {
    char path[400];
    broken_write_valid(dir, "micro", DTYPE_BF16);
    snprintf(path, sizeof path, "%s/model.safetensors", dir);
    ck_assert_int_eq(unlink(path), 0);
}

#define DIR_ BROKEN_AT_DIR
#define FILE_ BROKEN_AT_FILE
/* one entry per two lines: the name and the breaker, then the needles */
/* clang-format off */
const broken_checkpoint broken_checkpoints[] = {
    {"missing tensor", missing_tensor,
     {DIR_, "tensor " Q_PROJ, "missing"}},
    {"missing MTP tensor", missing_mtp_tensor,
     {"tensor mtp.layers.0.self_attn.k_norm.weight", "missing"}},
    {"shape mismatch", shape_mismatch,
     {"tensor " Q_PROJ ": expected [128, 32]", "has [64, 32]", "model.safetensors"}},
    {"config field missing", config_field_missing,
     {"config.json", "config field \"hidden_size\" is missing"}},
    {"layer count out of range", no_layers,
     {"config.json", "\"num_hidden_layers\" = 0 is out of range"}},
    {"rms_norm_eps out of range", negative_eps,
     {"config.json", "\"rms_norm_eps\" = -1 is out of range"}},
    {"config against the tensors", config_against_tensors,
     {"mlp.gate_proj.weight: expected [48, 32]", "has [64, 32]"}},
    {"tensors the config does not declare", undeclared_tensors,
     {"layers.4.", "is not part of the model config.json describes"}},
    {"NaN in a norm", nan_norm,
     {"model.language_model.layers.1.post_attention_layernorm.weight", "element 5 is NaN", "norm"}},
    {"infinity in an f16 norm", infinite_f16_norm,
     {"model.language_model.layers.0.linear_attn.norm.weight", "infinite"}},
    {"NaN in a bf16 matrix", nan_matrix,
     {FILE_, "tensor " Q_PROJ, "element 5 is NaN", "weights must be finite"}},
    {"infinity deep in a bf16 matrix", infinity_deep_in_matrix,
     {"tensor " EMBED, "element 20000 is infinite"}},
    {"truncated data", truncated_data,
     {FILE_, "run past the end of the data section", "truncated"}},
    {"truncated header", truncated_header,
     {FILE_, "truncated: 6 bytes"}},
    {"header past the end", header_past_end,
     {FILE_, "header length 1099511627776 runs past the end"}},
    {"overlapping offsets", overlapping_offsets,
     {"model.safetensors", "layers.0.input_layernorm.weight", "layers.0.post_attention_layernorm.weight", "overlap"}},
    {"unknown dtype", unknown_dtype,
     {"model.safetensors", "tensor mtp.fc.weight", "\"F8_E4M3\"", "only F32, BF16 and F16"}},
    {"no config.json", no_config,
     {"config.json", "cannot open"}},
    {"no safetensors", no_safetensors,
     {DIR_, "neither model.safetensors nor model.safetensors.index.json"}},
};
/* clang-format on */
const int n_broken_checkpoints = (int)(sizeof broken_checkpoints / sizeof broken_checkpoints[0]);
