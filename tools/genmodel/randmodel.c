/* randmodel.c — presets, config.json and random values for the generated
 * qwen3_5 checkpoints (see randmodel.h). The tensor list comes from
 * layout_build alone; this file only decides each tensor's distribution. */
#include "randmodel.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "atomic_file.h"
#include "medusa.h"
#include "philox.h"
#include "safetensors.h"

#define PREFIX_FULL "model.language_model."
#define PREFIX_TEXT "model."

/* ---- presets --------------------------------------------------------------- */

typedef struct {
    const char *name, *summary;
    int V, D, F, L;
    const char *pattern; /* repeated over the layers: L = Gated DeltaNet, F = full attention */
    int H, Hkv, Dh, R;
    double theta;
    int Hk, Hv, Dk, Dv, K;
    int tied, mtp, max_pos;
    int large; /* hundreds of MB: written by `make bench-peers` only (randmodel.h) */
} preset_def;

/* The micro models share vocabulary 32, so any of them can draft for any
 * other; they differ in head dims, layer pattern, rotary fraction and tying
 * so that one bug cannot hide behind one shape.
 *
 * `bench` is the CPU benchmark model of `make bench-peers` (tools/peer/):
 * the 27B's layout scaled down — 3 Gated DeltaNet layers to 1 gated
 * attention layer, head_dim 256 with a quarter rotary, 3 value heads per key
 * head of 128, untied lm_head, one MTP layer — at about 274M parameters.
 * Its vocabulary is 32768 (a real tokenizer size, Mistral's) rather than the
 * 27B's 248320: at D = 1024 the real one would put 508M parameters in the
 * embedding and lm_head alone and turn decoding into an lm_head benchmark;
 * at 32768 the lm_head is 15 % of the 221M parameters a decode step reads
 * (the 27B: 5 %). A step reads 442 MB of bf16 weights; how that compares
 * with the L3 of the machine it runs on is printed by the benchmark. */
/* one preset per two lines, in preset_def's field order */
/* clang-format off */
static const preset_def presets[] = {
    {"micro", "vocab 32, D 32, 4 layers LLLF, H 4 / Hkv 2 / Dh 16, rotary 1/4, untied, MTP", 32, 32, 64, 4, "LLLF",
     4, 2, 16, 4, 1e4, 2, 4, 8, 8, 4, 0, 1, 1024, 0},
    {"micro-draft", "the draft for micro: vocab 32, D 16, 2 layers LF, rotary 1/2, no MTP", 32, 16, 32, 2, "LF", 2, 1,
     8, 4, 1e4, 1, 2, 8, 8, 4, 0, 0, 1024, 0},
    {"micro-tied", "vocab 32, D 24, 4 layers LFLF, Dh 32 fully rotary, Dk 16 != Dv 8, Hv 3 per Hk, tied, MTP", 32,
     24, 48, 4, "LF", 2, 1, 32, 32, 1e6, 1, 3, 16, 8, 4, 1, 1, 1024, 0},
    {"micro-deep", "vocab 32, D 40, 6 layers LLF LLF, H 5 / Hkv 1 / Dh 8, rotary 1/2, conv 3, untied, MTP", 32, 40,
     80, 6, "LLF", 5, 1, 8, 4, 1e5, 2, 4, 4, 12, 3, 0, 1, 1024, 0},
    {"small", "about 8M parameters for benchmarks: vocab 2048, D 256, 8 layers LLLF, Dh 64, MTP", 2048, 256, 768, 8,
     "LLLF", 4, 1, 64, 16, 1e7, 2, 6, 64, 64, 4, 0, 1, 4096, 0},
    {"small-draft", "the draft for small: vocab 2048, D 128, 4 layers LLLF, no MTP", 2048, 128, 384, 4, "LLLF", 2, 1,
     64, 16, 1e7, 1, 2, 64, 64, 4, 0, 0, 4096, 0},
    {"bench", "about 274M parameters for make bench-peers: vocab 32768, D 1024, 12 layers LLLF, Dh 256, MTP",
     32768, 1024, 3072, 12, "LLLF", 8, 2, 256, 64, 1e7, 4, 12, 128, 128, 4, 0, 1, 4096, 1},
};
/* clang-format on */
#define N_PRESETS ((int)(sizeof presets / sizeof presets[0]))

const randmodel_preset_info *randmodel_presets(void) {
    static randmodel_preset_info info[N_PRESETS + 1];
    for (int i = 0; i < N_PRESETS; i++)
        info[i] = (randmodel_preset_info){presets[i].name, presets[i].summary, presets[i].large};
    info[N_PRESETS] = (randmodel_preset_info){NULL, NULL, 0};
    return info;
}

int randmodel_preset(const char *name, model_config *cfg, sp_error *err) {
    const preset_def *p = NULL;
    for (int i = 0; i < N_PRESETS; i++)
        if (strcmp(presets[i].name, name) == 0) p = &presets[i];
    if (!p) {
        char known[512] = "";
        for (int i = 0; i < N_PRESETS; i++)
            snprintf(known + strlen(known), sizeof known - strlen(known), "%s%s", i ? ", " : "", presets[i].name);
        return sp_fail(err, "unknown preset \"%s\" (known: %s)", name, known);
    }
    model_config c;
    memset(&c, 0, sizeof c);
    c.vocab_size = p->V, c.hidden_size = p->D, c.intermediate_size = p->F, c.num_layers = p->L;
    c.num_heads = p->H, c.num_kv_heads = p->Hkv, c.head_dim = p->Dh, c.rotary_dim = p->R, c.rope_theta = p->theta;
    c.lin_k_heads = p->Hk, c.lin_v_heads = p->Hv, c.lin_k_dim = p->Dk, c.lin_v_dim = p->Dv, c.conv_kernel = p->K;
    c.rms_norm_eps = 1e-6f;
    c.tie_word_embeddings = p->tied;
    c.mtp_num_layers = p->mtp;
    c.max_position_embeddings = p->max_pos;
    c.num_eos = 1;
    c.eos_token_ids[0] = p->V - 1;
    size_t plen = strlen(p->pattern);
    for (int l = 0; l < c.num_layers; l++)
        c.layer_types[l] = p->pattern[l % plen] == 'F' ? LAYER_FULL_ATTENTION : LAYER_LINEAR_ATTENTION;
    snprintf(c.tensor_prefix, sizeof c.tensor_prefix, PREFIX_FULL);
    *cfg = c;
    return 0;
}

static int at_least(int x, int lo) { return x > lo ? x : lo; }

void randmodel_draft_config(const model_config *t, model_config *d) {
    *d = *t;
    d->hidden_size = at_least(t->hidden_size / 2, 8);
    d->intermediate_size = 2 * d->hidden_size;
    d->num_layers = 2;
    d->layer_types[0] = LAYER_LINEAR_ATTENTION;
    d->layer_types[1] = LAYER_FULL_ATTENTION;
    d->num_heads = at_least(t->num_heads / 2, 1);
    d->num_kv_heads = 1;
    d->head_dim = at_least(t->head_dim / 2, 4) & ~1;
    /* the target's rotary fraction, kept even and at least one pair */
    d->rotary_dim = at_least((int)((double)d->head_dim * t->rotary_dim / t->head_dim) & ~1, 2);
    d->lin_k_heads = 1;
    d->lin_v_heads = 2;
    d->lin_k_dim = at_least(t->lin_k_dim / 2, 4);
    d->lin_v_dim = at_least(t->lin_v_dim / 2, 4);
    d->tie_word_embeddings = 0;
    d->mtp_num_layers = 0;
}

void randmodel_default_opts(randmodel_opts *o) {
    memset(o, 0, sizeof *o);
    o->seed = 1;
    o->dtype = DTYPE_BF16;
    o->n_shards = 1;
    o->layout = RANDMODEL_LAYOUT_FULL;
}

/* ---- config.json --------------------------------------------------------------- */

/* The shortest decimal that reads back as exactly x (what Python's repr
 * prints), so config.json holds 1e-06 rather than 9.9999999999999995e-07. */
static void fmt_real(char *buf, size_t size, double x) {
    if (x == floor(x) && fabs(x) < 1e15) {
        snprintf(buf, size, "%.1f", x);
        return;
    }
    for (int p = 1; p <= 17; p++) {
        snprintf(buf, size, "%.*g", p, x);
        if (strtod(buf, NULL) == x) return;
    }
}

/* partial_rotary_factor such that int(Dh · factor) == R, as both
 * transformers and config.c compute it. */
static double rotary_factor(int R, int Dh) {
    double f = (double)R / Dh;
    while ((int)(Dh * f) < R) f = nextafter(f, 2.0);
    return f;
}

static void write_text_fields(FILE *f, const model_config *c, const randmodel_opts *o, const char *ind) {
    char eps[32], theta[32], factor[32];
    /* a float eps is written as its shortest float decimal, which reads back
     * through double to the same float */
    for (int p = 1; p <= 9; p++) {
        snprintf(eps, sizeof eps, "%.*g", p, (double)c->rms_norm_eps);
        if (strtof(eps, NULL) == c->rms_norm_eps) break;
    }
    fmt_real(theta, sizeof theta, c->rope_theta);
    fmt_real(factor, sizeof factor, rotary_factor(c->rotary_dim, c->head_dim));
    const char *dtype = o->dtype == DTYPE_F32 ? "float32" : o->dtype == DTYPE_F16 ? "float16" : "bfloat16";
    fprintf(f, "%s\"attention_bias\": false,\n", ind);
    fprintf(f, "%s\"attn_output_gate\": true,\n", ind);
    fprintf(f, "%s\"dtype\": \"%s\",\n", ind, dtype);
    if (c->num_eos == 1) {
        fprintf(f, "%s\"eos_token_id\": %d,\n", ind, c->eos_token_ids[0]);
    } else if (c->num_eos > 1) {
        fprintf(f, "%s\"eos_token_id\": [", ind);
        for (int e = 0; e < c->num_eos; e++) fprintf(f, "%s%d", e ? ", " : "", c->eos_token_ids[e]);
        fprintf(f, "],\n");
    }
    fprintf(f, "%s\"head_dim\": %d,\n", ind, c->head_dim);
    fprintf(f, "%s\"hidden_act\": \"silu\",\n", ind);
    fprintf(f, "%s\"hidden_size\": %d,\n", ind, c->hidden_size);
    fprintf(f, "%s\"intermediate_size\": %d,\n", ind, c->intermediate_size);
    fprintf(f, "%s\"layer_types\": [", ind);
    for (int l = 0; l < c->num_layers; l++)
        fprintf(f, "%s\"%s\"", l ? ", " : "",
                c->layer_types[l] == LAYER_FULL_ATTENTION ? "full_attention" : "linear_attention");
    fprintf(f, "],\n");
    fprintf(f, "%s\"linear_conv_kernel_dim\": %d,\n", ind, c->conv_kernel);
    fprintf(f, "%s\"linear_key_head_dim\": %d,\n", ind, c->lin_k_dim);
    fprintf(f, "%s\"linear_num_key_heads\": %d,\n", ind, c->lin_k_heads);
    fprintf(f, "%s\"linear_num_value_heads\": %d,\n", ind, c->lin_v_heads);
    fprintf(f, "%s\"linear_value_head_dim\": %d,\n", ind, c->lin_v_dim);
    fprintf(f, "%s\"max_position_embeddings\": %d,\n", ind, c->max_position_embeddings);
    fprintf(f, "%s\"mtp_num_hidden_layers\": %d,\n", ind, c->mtp_num_layers);
    fprintf(f, "%s\"num_attention_heads\": %d,\n", ind, c->num_heads);
    fprintf(f, "%s\"num_hidden_layers\": %d,\n", ind, c->num_layers);
    fprintf(f, "%s\"num_key_value_heads\": %d,\n", ind, c->num_kv_heads);
    fprintf(f, "%s\"rms_norm_eps\": %s,\n", ind, eps);
    /* mRoPE sections split the R/2 frequencies over (t, h, w); for text the
     * three position rows are equal and the split changes nothing, but it
     * must cover R/2 for the multimodal path */
    int half = c->rotary_dim / 2, s0 = (half + 2) / 3, s1 = (half - s0 + 1) / 2, s2 = half - s0 - s1;
    fprintf(f,
            "%s\"rope_parameters\": {\"mrope_interleaved\": true, \"mrope_section\": [%d, %d, %d], "
            "\"partial_rotary_factor\": %s, \"rope_theta\": %s, \"rope_type\": \"default\"},\n",
            ind, s0, s1, s2, factor, theta);
    fprintf(f, "%s\"tie_word_embeddings\": %s,\n", ind, c->tie_word_embeddings ? "true" : "false");
    fprintf(f, "%s\"use_cache\": true,\n", ind);
    fprintf(f, "%s\"vocab_size\": %d\n", ind, c->vocab_size);
}

static char *render_config(const model_config *c, const randmodel_opts *o) {
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    if (!f) return NULL;
    if (o->layout == RANDMODEL_LAYOUT_TEXT) {
        fprintf(f, "{\n  \"architectures\": [\"Qwen3_5ForCausalLM\"],\n  \"model_type\": \"qwen3_5_text\",\n");
        write_text_fields(f, c, o, "  ");
        fprintf(f, "}\n");
    } else {
        /* A tiny vision tower keeps Qwen3_5ForConditionalGeneration cheap to
         * build from this config; its weights are not written (the loader
         * ignores model.visual.*). */
        fprintf(f, "{\n  \"architectures\": [\"Qwen3_5ForConditionalGeneration\"],\n  \"model_type\": \"qwen3_5\",\n");
        fprintf(f, "  \"tie_word_embeddings\": %s,\n", c->tie_word_embeddings ? "true" : "false");
        fprintf(f, "  \"text_config\": {\n    \"model_type\": \"qwen3_5_text\",\n");
        write_text_fields(f, c, o, "    ");
        fprintf(f, "  },\n");
        fprintf(f,
                "  \"vision_config\": {\"model_type\": \"qwen3_5_vision\", \"depth\": 1, \"hidden_size\": 16, "
                "\"intermediate_size\": 32, \"num_heads\": 2, \"patch_size\": 16, \"spatial_merge_size\": 2, "
                "\"temporal_patch_size\": 2, \"out_hidden_size\": %d, \"num_position_embeddings\": 16}\n",
                c->hidden_size);
        fprintf(f, "}\n");
    }
    if (fclose(f) != 0) {
        free(text);
        return NULL;
    }
    return text;
}

/* Names the first field where b differs from a, or returns NULL. */
static const char *config_diff(const model_config *a, const model_config *b) {
#define SAME(field, json)                                                                                              \
    if (a->field != b->field) return json
    SAME(vocab_size, "vocab_size");
    SAME(hidden_size, "hidden_size");
    SAME(intermediate_size, "intermediate_size");
    SAME(num_layers, "num_hidden_layers");
    SAME(num_heads, "num_attention_heads");
    SAME(num_kv_heads, "num_key_value_heads");
    SAME(head_dim, "head_dim");
    SAME(rotary_dim, "partial_rotary_factor (rotary dims must be even and at most head_dim)");
    SAME(rope_theta, "rope_theta");
    SAME(conv_kernel, "linear_conv_kernel_dim");
    SAME(lin_k_heads, "linear_num_key_heads");
    SAME(lin_v_heads, "linear_num_value_heads");
    SAME(lin_k_dim, "linear_key_head_dim");
    SAME(lin_v_dim, "linear_value_head_dim");
    SAME(rms_norm_eps, "rms_norm_eps");
    SAME(tie_word_embeddings, "tie_word_embeddings");
    SAME(mtp_num_layers, "mtp_num_hidden_layers");
    SAME(max_position_embeddings, "max_position_embeddings");
    SAME(num_eos, "eos_token_id");
#undef SAME
    for (int e = 0; e < a->num_eos; e++)
        if (a->eos_token_ids[e] != b->eos_token_ids[e]) return "eos_token_id";
    for (int l = 0; l < a->num_layers; l++)
        if (a->layer_types[l] != b->layer_types[l]) return "layer_types";
    if (strcmp(a->tensor_prefix, b->tensor_prefix) != 0) return "model_type (tensor prefix)";
    return NULL;
}

static int check_opts(const randmodel_opts *o, sp_error *err) {
    if ((int)o->dtype < 0 || o->dtype >= DTYPE_COUNT) return sp_fail(err, "dtype %d is not bf16, f16 or f32", o->dtype);
    if (o->layout != RANDMODEL_LAYOUT_FULL && o->layout != RANDMODEL_LAYOUT_TEXT)
        return sp_fail(err, "layout %d is neither full nor text", (int)o->layout);
    if (o->n_shards < 1) return sp_fail(err, "number of shards is %d, expected at least 1", o->n_shards);
    if (o->medusa_heads < 0 || o->medusa_heads > MEDUSA_MAX_HEADS)
        return sp_fail(err, "%d Medusa heads requested: expected 0 (none) to %d", o->medusa_heads, MEDUSA_MAX_HEADS);
    if (o->medusa_layers < 0 || o->medusa_layers > MEDUSA_MAX_LAYERS)
        return sp_fail(err, "%d ResBlocks per Medusa head requested: expected 1 to %d", o->medusa_layers,
                       MEDUSA_MAX_LAYERS);
    return 0;
}

/* cfg with the layout's prefix. */
static model_config with_layout(const model_config *cfg, const randmodel_opts *o) {
    model_config c = *cfg;
    snprintf(c.tensor_prefix, sizeof c.tensor_prefix, "%s",
             o->layout == RANDMODEL_LAYOUT_TEXT ? PREFIX_TEXT : PREFIX_FULL);
    return c;
}

int randmodel_config_json(const model_config *cfg, const randmodel_opts *opts, char **out, sp_error *err) {
    *out = NULL;
    if (check_opts(opts, err)) return -1;
    if (cfg->num_layers < 1 || cfg->num_layers > CONFIG_MAX_LAYERS)
        return sp_fail(err, "num_hidden_layers = %d is out of range [1, %d]", cfg->num_layers, CONFIG_MAX_LAYERS);
    if (cfg->num_eos < 0 || cfg->num_eos > CONFIG_MAX_EOS)
        return sp_fail(err, "%d eos ids, expected 0 to %d", cfg->num_eos, CONFIG_MAX_EOS);
    if (cfg->head_dim < 2 || cfg->rotary_dim < 2 || cfg->rotary_dim > cfg->head_dim || cfg->rotary_dim % 2)
        return sp_fail(err, "rotary dims %d must be even and in [2, head_dim = %d]", cfg->rotary_dim, cfg->head_dim);
    model_config c = with_layout(cfg, opts), back;
    char *text = render_config(&c, opts);
    if (!text) return sp_fail(err, "cannot render config.json: %s", strerror(errno));
    if (config_parse(text, "generated config.json", &back, err)) {
        free(text);
        return -1;
    }
    const char *diff = config_diff(&c, &back);
    if (diff) {
        free(text);
        return sp_fail(err, "generated config.json cannot express the requested %s", diff);
    }
    *out = text;
    return 0;
}

/* ---- random values -------------------------------------------------------------- */

/* FNV-1a of the name (without the layout prefix) and the shape: adding or
 * removing other tensors (MTP, lm_head) never changes a tensor's values, and
 * two configs that differ in a dimension do not share leading values. */
static uint64_t tensor_stream(const char *name, const tensor_spec *t) {
    uint64_t h = 0xcbf29ce484222325ull;
    for (const unsigned char *p = (const unsigned char *)name; *p; p++) h = (h ^ *p) * 0x100000001b3ull;
    for (int d = 0; d < t->ndim; d++)
        for (int b = 0; b < 8; b++) h = (h ^ (uint8_t)((uint64_t)t->shape[d] >> (8 * b))) * 0x100000001b3ull;
    return h;
}

void randmodel_fill(uint64_t seed, const tensor_spec *t, const char *prefix, float *dst, int64_t offset,
                    int64_t count) {
    size_t plen = strlen(prefix);
    const char *base = strncmp(t->name, prefix, plen) == 0 ? t->name + plen : t->name;
    const uint64_t stream = tensor_stream(base, t);
    /* Ranges: matrices keep the activation scale (std 1/sqrt(n_in)); the
     * embedding is twice that, so tied logits have std ~2 rather than being
     * flat; zero-centred norms spread ±0.35 around 0 (std 0.2: a (1+w) bug
     * shows), the plain DeltaNet norm the same around 1; conv as a matrix of
     * fan-in K; A = exp(A_log) in [1, 16]; dt_bias in [-3, 1] so
     * softplus(a + dt_bias) spans slow and fast decay. */
    double lo, hi;
    switch (t->kind) {
    case TENSOR_MATRIX: hi = sqrt(3.0 / (double)t->shape[1]), lo = -hi; break;
    case TENSOR_EMBEDDING: hi = 2.0 * sqrt(3.0 / (double)t->shape[1]), lo = -hi; break;
    case TENSOR_NORM: lo = -0.35, hi = 0.35; break;
    case TENSOR_NORM_PLAIN: lo = 0.65, hi = 1.35; break;
    case TENSOR_CONV: hi = sqrt(3.0 / (double)t->shape[2]), lo = -hi; break;
    case TENSOR_A_LOG: lo = 1.0, hi = 16.0; break;
    case TENSOR_DT_BIAS: lo = -3.0, hi = 1.0; break;
    default: lo = hi = 0; break;
    }
    uint32_t w[4];
    uint64_t have = UINT64_MAX;
    for (int64_t i = 0; i < count; i++) {
        uint64_t idx = (uint64_t)(offset + i);
        if (idx / 4 != have) philox_words(seed, stream, have = idx / 4, w);
        double u = philox_unit(w[idx % 4]);
        double v = lo + (hi - lo) * u;
        dst[i] = (float)(t->kind == TENSOR_A_LOG ? log(v) : v);
    }
}

typedef struct {
    uint64_t seed;
    const tensor_spec *spec;
    const char *prefix;
} fill_job;

static void fill_cb(void *ctx, float *dst, int64_t offset, int64_t count) {
    const fill_job *j = ctx;
    randmodel_fill(j->seed, j->spec, j->prefix, dst, offset, count);
}

static long long file_size(const char *path) {
    struct stat st;
    return stat(path, &st) == 0 ? (long long)st.st_size : 0;
}

/* mkdir -p */
static int make_dirs(const char *dir, sp_error *err) {
    char buf[4096];
    snprintf(buf, sizeof buf, "%s", dir);
    for (char *p = buf + 1;; p++) {
        if (*p != '/' && *p) continue;
        char c = *p;
        *p = '\0';
        if (mkdir(buf, 0777) != 0 && errno != EEXIST)
            return sp_fail(err, "%s: cannot create: %s", buf, strerror(errno));
        if (!(*p = c)) return 0;
    }
}

static int text_body(FILE *f, const void *text) {
    size_t n = strlen(text);
    return fwrite(text, 1, n, f) == n ? 0 : (errno ? errno : EIO);
}

static int write_text(const char *path, const char *text, sp_error *err) {
    return atomic_write(path, text_body, text, err);
}

int randmodel_write(const char *dir, const model_config *cfg, const randmodel_opts *opts, randmodel_report *rep,
                    sp_error *err) {
    char *json;
    if (randmodel_config_json(cfg, opts, &json, err)) return -1;
    const model_config c = with_layout(cfg, opts);
    if (make_dirs(dir, err)) {
        free(json);
        return -1;
    }
    char path[4200];
    int rc;
    const int with_mtp = c.mtp_num_layers > 0;
    tensor_spec *specs = sp_xcalloc((size_t)layout_max_tensors(&c), sizeof *specs, "tensor specs");
    int n = layout_build(&c, with_mtp, specs);
    st_out_tensor *out = sp_xcalloc((size_t)n, sizeof *out, "output tensors");
    fill_job *jobs = sp_xcalloc((size_t)n, sizeof *jobs, "fill jobs");
    randmodel_report r = {0};
    r.n_tensors = n;
    for (int i = 0; i < n; i++) {
        jobs[i] = (fill_job){opts->seed, &specs[i], c.tensor_prefix};
        out[i].name = specs[i].name;
        out[i].dtype = opts->dtype;
        out[i].ndim = specs[i].ndim;
        for (int d = 0; d < specs[i].ndim; d++) out[i].shape[d] = specs[i].shape[d];
        out[i].fill = fill_cb;
        out[i].fill_ctx = &jobs[i];
        long long numel = tensor_spec_numel(&specs[i]);
        r.params += numel;
        if (specs[i].group == GROUP_MTP) r.mtp_params += numel;
        r.tensor_bytes += numel * dtype_size(opts->dtype);
    }
    char seed_text[32];
    snprintf(seed_text, sizeof seed_text, "%llu", (unsigned long long)opts->seed);
    const char *mk[] = {"specula.generator", "specula.seed"}, *mv[] = {"randmodel (Philox4x32-10)", seed_text};
    /* the weights first and config.json last: a failure leaves no config
     * that points at missing or stale weights */
    rc = st_write_sharded_meta(dir, out, n, opts->n_shards, mk, mv, 2, err);
    snprintf(path, sizeof path, "%s/config.json", dir);
    if (rc == 0) rc = write_text(path, json, err);
    free(json);
    if (rc == 0) {
        r.n_files = opts->n_shards;
        r.file_bytes = file_size(path);
        if (opts->n_shards == 1) {
            snprintf(path, sizeof path, "%s/model.safetensors", dir);
            r.file_bytes += file_size(path);
        } else {
            for (int k = 1; k <= opts->n_shards; k++) {
                snprintf(path, sizeof path, "%s/model-%05d-of-%05d.safetensors", dir, k, opts->n_shards);
                r.file_bytes += file_size(path);
            }
            snprintf(path, sizeof path, "%s/model.safetensors.index.json", dir);
            r.file_bytes += file_size(path);
        }
        if (rep) *rep = r;
    }
    if (rc == 0 && opts->medusa_heads > 0) {
        char heads[4200];
        if (opts->medusa_path)
            snprintf(heads, sizeof heads, "%s", opts->medusa_path);
        else
            randmodel_medusa_default_path(dir, heads, sizeof heads);
        rc = randmodel_write_medusa(heads, dir, cfg, opts, err);
    }
    free(specs);
    free(out);
    free(jobs);
    return rc;
}

/* ---- random Medusa heads ---------------------------------------------------------- */

void randmodel_medusa_default_path(const char *dir, char *out, size_t size) {
    size_t n = strlen(dir);
    while (n > 1 && dir[n - 1] == '/') n--; /* "out/" and "out" name the same model */
    snprintf(out, size, "%.*s-medusa/medusa_heads.safetensors", (int)n, dir);
}

/* The ranges of the heads' values: ResBlock weights at the activation scale
 * (std 1/sqrt(D)), biases in ±0.35 (so a missing bias shows), projections
 * twice the lm_head's range so that each head's distribution is peaked
 * enough to differ from the others. */
static void fill_medusa(uint64_t seed, const char *name, int ndim, int64_t rows, int64_t cols, tensor_kind kind,
                        float *dst) {
    tensor_spec t;
    memset(&t, 0, sizeof t);
    snprintf(t.name, sizeof t.name, "%s", name);
    t.ndim = ndim, t.shape[0] = rows, t.shape[1] = cols, t.kind = kind;
    randmodel_fill(seed, &t, "", dst, 0, ndim == 2 ? rows * cols : rows);
}

int randmodel_write_medusa(const char *heads_path, const char *model_dir, const model_config *cfg,
                           const randmodel_opts *opts, sp_error *err) {
    if (check_opts(opts, err)) return -1;
    if (opts->medusa_heads < 1) return sp_fail(err, "random Medusa heads: at least one head is needed");
    char sha[65];
    if (medusa_base_sha256(model_dir, sha, err)) return -1;
    const int D = cfg->hidden_size, V = cfg->vocab_size, layers = opts->medusa_layers ? opts->medusa_layers : 1;
    medusa_heads h;
    if (medusa_build(&h, opts->medusa_heads, layers, D, V, !opts->medusa_shared, err)) return -1;
    char name[96];
    for (int i = 0; i < h.n_heads; i++) {
        for (int j = 0; j < layers; j++) {
            medusa_resblock *b = &h.blocks[i * layers + j];
            snprintf(name, sizeof name, "medusa_head.%d.%d.linear.weight", i, j);
            fill_medusa(opts->seed, name, 2, D, D, TENSOR_MATRIX, b->w);
            snprintf(name, sizeof name, "medusa_head.%d.%d.linear.bias", i, j);
            fill_medusa(opts->seed, name, 1, D, 0, TENSOR_NORM, b->b);
        }
        if (h.own_proj) {
            snprintf(name, sizeof name, "medusa_head.%d.%d.weight", i, layers);
            fill_medusa(opts->seed, name, 2, V, D, TENSOR_EMBEDDING, (float *)h.proj[i]);
        }
    }
    char dir[4200];
    snprintf(dir, sizeof dir, "%s", heads_path);
    char *slash = strrchr(dir, '/');
    int rc = 0;
    if (slash && slash != dir) {
        *slash = '\0';
        rc = make_dirs(dir, err);
    }
    char seed_text[32];
    snprintf(seed_text, sizeof seed_text, "%llu", (unsigned long long)opts->seed);
    const char *mk[] = {"specula.generator", "specula.seed"}, *mv[] = {"randmodel (Philox4x32-10)", seed_text};
    if (rc == 0) rc = medusa_save(&h, heads_path, opts->dtype, sha, mk, mv, 2, err);
    medusa_free(&h);
    return rc;
}
