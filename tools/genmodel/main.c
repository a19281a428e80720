/* main.c — `genmodel`: writes a deterministic random qwen3_5 checkpoint
 * (config.json + safetensors) from a preset with any dimension overridden.
 * All the work is in randmodel.c; this file is flags and messages. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "genmodel/randmodel.h"
#include "medusa.h"

static void usage(FILE *f) {
    fprintf(f, "usage: genmodel [options] OUTDIR\n"
               "Writes a random qwen3_5 checkpoint into OUTDIR: config.json and safetensors with every tensor\n"
               "of the layout (trunk, lm_head unless tied, MTP module unless disabled). Values come from\n"
               "Philox4x32-10 keyed by the seed: the same options give bit-identical files.\n"
               "\n"
               "  --preset NAME                starting config (default micro; see --list-presets)\n"
               "  --list-presets               print the presets and exit\n"
               "  --seed N                     Philox key, 0 to 2^64-1 (default 1)\n"
               "  --dtype bf16|f16|f32         storage dtype (default bf16)\n"
               "  --shards N                   safetensors files: 1 writes model.safetensors, more write\n"
               "                               model-0000i-of-0000N.safetensors + model.safetensors.index.json\n"
               "  --layout full|text           full (default): model_type qwen3_5 with text_config, tensors under\n"
               "                               model.language_model.; text: qwen3_5_text, flat config, under model.\n"
               "  --tied | --untied            lm_head shares embed_tokens, or not (default: the preset's)\n"
               "  --mtp | --no-mtp             write the MTP module (mtp.*), or not (default: the preset's)\n"
               "  --medusa-heads N             also write N random Medusa heads (recording the checkpoint's sha256)\n"
               "  --medusa-layers N            ResBlocks per Medusa head (default 1)\n"
               "  --medusa-shared              the heads share the target's lm_head (default: own projections)\n"
               "  --medusa-out FILE            the heads file (default OUTDIR-medusa/medusa_heads.safetensors,\n"
               "                               where specula generate --method medusa looks for it)\n"
               "  --draft                      write a draft model for the configured one instead: same\n"
               "                               vocabulary and eos, half the width, 2 layers, no MTP\n"
               "  --quiet                      print nothing on success\n"
               "  --help                       this text\n"
               "\n"
               "Dimensions (override the preset; names as in config.json):\n"
               "  --vocab N                    vocab_size (the eos id follows as N-1 unless --eos is given)\n"
               "  --hidden N                   hidden_size\n"
               "  --intermediate N             intermediate_size (SwiGLU width)\n"
               "  --layers N                   num_hidden_layers (the preset's layer pattern is repeated)\n"
               "  --layer-pattern P            layer_types as a pattern repeated over the layers,\n"
               "                               L = Gated DeltaNet (linear_attention), F = full_attention; e.g. LLLF\n"
               "  --full-attention-interval N  the pattern of N-1 L then F\n"
               "  --heads N                    num_attention_heads\n"
               "  --kv-heads N                 num_key_value_heads\n"
               "  --head-dim N                 head_dim\n"
               "  --partial-rotary-factor F    fraction of each head that RoPE rotates (default: the preset's)\n"
               "  --rope-theta F               rope_theta\n"
               "  --linear-k-heads N           linear_num_key_heads\n"
               "  --linear-v-heads N           linear_num_value_heads\n"
               "  --linear-k-dim N             linear_key_head_dim\n"
               "  --linear-v-dim N             linear_value_head_dim\n"
               "  --conv-kernel N              linear_conv_kernel_dim\n"
               "  --eos N[,N...]|none          eos_token_id\n"
               "  --rms-norm-eps F             rms_norm_eps\n"
               "  --max-position N             max_position_embeddings\n");
}

static void list_presets(void) {
    for (const randmodel_preset_info *p = randmodel_presets(); p->name; p++) printf("%-12s %s\n", p->name, p->summary);
}

static int bad(const char *flag, const char *value, const char *expected) {
    fprintf(stderr, "genmodel: %s expects %s, got '%s'\n", flag, expected, value);
    return 2;
}

static int parse_int(const char *flag, const char *s, int lo, int hi, int *out) {
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || end == s || *end || v < lo || v > hi) {
        char what[64];
        snprintf(what, sizeof what, "an integer in [%d, %d]", lo, hi);
        return bad(flag, s, what);
    }
    *out = (int)v;
    return 0;
}

static int parse_real(const char *flag, const char *s, double lo, double hi, double *out) {
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (errno || end == s || *end || !isfinite(v) || v < lo || v > hi) {
        char what[64];
        snprintf(what, sizeof what, "a number in [%g, %g]", lo, hi);
        return bad(flag, s, what);
    }
    *out = v;
    return 0;
}

/* The integer overrides, in flag order; -1 = keep the preset's value. */
typedef struct {
    const char *flag;
    int lo, hi;
} int_flag;

enum {
    O_VOCAB,
    O_HIDDEN,
    O_INTER,
    O_LAYERS,
    O_INTERVAL,
    O_HEADS,
    O_KV,
    O_HEAD_DIM,
    O_LK_HEADS,
    O_LV_HEADS,
    O_LK_DIM,
    O_LV_DIM,
    O_CONV,
    O_MAXPOS,
    O_SHARDS,
    O_MEDUSA_HEADS,
    O_MEDUSA_LAYERS,
    N_INT
};

static const int_flag int_flags[N_INT] = {
    [O_VOCAB] = {"--vocab", 2, 1 << 24},
    [O_HIDDEN] = {"--hidden", 1, 1 << 16},
    [O_INTER] = {"--intermediate", 1, 1 << 20},
    [O_LAYERS] = {"--layers", 1, CONFIG_MAX_LAYERS},
    [O_INTERVAL] = {"--full-attention-interval", 1, CONFIG_MAX_LAYERS},
    [O_HEADS] = {"--heads", 1, 1024},
    [O_KV] = {"--kv-heads", 1, 1024},
    [O_HEAD_DIM] = {"--head-dim", 2, 4096},
    [O_LK_HEADS] = {"--linear-k-heads", 1, 1024},
    [O_LV_HEADS] = {"--linear-v-heads", 1, 1024},
    [O_LK_DIM] = {"--linear-k-dim", 1, 4096},
    [O_LV_DIM] = {"--linear-v-dim", 1, 4096},
    [O_CONV] = {"--conv-kernel", 1, 64},
    [O_MAXPOS] = {"--max-position", 1, 1 << 30},
    [O_SHARDS] = {"--shards", 1, 99999},
    [O_MEDUSA_HEADS] = {"--medusa-heads", 1, MEDUSA_MAX_HEADS},
    [O_MEDUSA_LAYERS] = {"--medusa-layers", 1, MEDUSA_MAX_LAYERS},
};

typedef struct {
    const char *preset, *pattern, *eos, *out;
    int ints[N_INT];
    double rotary_factor, rope_theta, eps; /* NAN = keep */
    int tied, mtp;                         /* -1 = keep */
    int quiet, draft;
    randmodel_opts opts;
} args;

/* Returns 0 to go on, or the exit status. */
static int parse_args(int argc, char **argv, args *a) {
    for (int i = 0; i < N_INT; i++) a->ints[i] = -1;
    a->rotary_factor = a->rope_theta = a->eps = NAN;
    a->tied = a->mtp = -1;
    a->preset = "micro";
    randmodel_default_opts(&a->opts);
    for (int i = 1; i < argc; i++) {
        char flag[64];
        const char *arg = argv[i], *eq = strchr(arg, '='), *val = NULL;
        if (strncmp(arg, "--", 2) == 0 && eq && (size_t)(eq - arg) < sizeof flag) {
            snprintf(flag, sizeof flag, "%.*s", (int)(eq - arg), arg);
            val = eq + 1;
        } else {
            snprintf(flag, sizeof flag, "%s", arg);
        }
        if (!strcmp(flag, "--help") || !strcmp(flag, "-h")) {
            usage(stdout);
            return -1;
        }
        if (!strcmp(flag, "--list-presets")) {
            list_presets();
            return -1;
        }
        if (!strcmp(flag, "--tied") || !strcmp(flag, "--untied") || !strcmp(flag, "--mtp") ||
            !strcmp(flag, "--no-mtp") || !strcmp(flag, "--quiet") || !strcmp(flag, "--draft") ||
            !strcmp(flag, "--medusa-shared")) {
            if (val) return bad(flag, val, "no value");
            if (!strcmp(flag, "--tied")) a->tied = 1;
            if (!strcmp(flag, "--untied")) a->tied = 0;
            if (!strcmp(flag, "--mtp")) a->mtp = 1;
            if (!strcmp(flag, "--no-mtp")) a->mtp = 0;
            if (!strcmp(flag, "--quiet")) a->quiet = 1;
            if (!strcmp(flag, "--draft")) a->draft = 1;
            if (!strcmp(flag, "--medusa-shared")) a->opts.medusa_shared = 1;
            continue;
        }
        if (strncmp(flag, "--", 2) != 0) {
            if (a->out) {
                fprintf(stderr, "genmodel: one output directory expected, got '%s' and '%s'\n", a->out, arg);
                return 2;
            }
            a->out = arg;
            continue;
        }
        if (!val) {
            if (i + 1 >= argc) {
                fprintf(stderr, "genmodel: %s needs a value (see --help)\n", flag);
                return 2;
            }
            val = argv[++i];
        }
        int rc = 0, found = 0;
        for (int k = 0; k < N_INT && !found; k++)
            if (!strcmp(flag, int_flags[k].flag)) {
                found = 1;
                rc = parse_int(flag, val, int_flags[k].lo, int_flags[k].hi, &a->ints[k]);
            }
        if (found) {
            if (rc) return rc;
        } else if (!strcmp(flag, "--medusa-out")) {
            a->opts.medusa_path = val;
        } else if (!strcmp(flag, "--preset")) {
            a->preset = val;
        } else if (!strcmp(flag, "--seed")) {
            char *end;
            errno = 0;
            unsigned long long s = strtoull(val, &end, 10);
            if (errno || end == val || *end || val[0] == '-') return bad(flag, val, "an integer in [0, 2^64-1]");
            a->opts.seed = s;
        } else if (!strcmp(flag, "--dtype")) {
            if (!strcmp(val, "bf16"))
                a->opts.dtype = DTYPE_BF16;
            else if (!strcmp(val, "f16"))
                a->opts.dtype = DTYPE_F16;
            else if (!strcmp(val, "f32"))
                a->opts.dtype = DTYPE_F32;
            else
                return bad(flag, val, "bf16, f16 or f32");
        } else if (!strcmp(flag, "--layout")) {
            if (!strcmp(val, "full"))
                a->opts.layout = RANDMODEL_LAYOUT_FULL;
            else if (!strcmp(val, "text"))
                a->opts.layout = RANDMODEL_LAYOUT_TEXT;
            else
                return bad(flag, val, "full or text");
        } else if (!strcmp(flag, "--layer-pattern")) {
            if (!*val || strspn(val, "LF") != strlen(val)) return bad(flag, val, "a string of L and F");
            a->pattern = val;
        } else if (!strcmp(flag, "--eos")) {
            a->eos = val;
        } else if (!strcmp(flag, "--partial-rotary-factor")) {
            if (parse_real(flag, val, 1e-6, 1.0, &a->rotary_factor)) return 2;
        } else if (!strcmp(flag, "--rope-theta")) {
            if (parse_real(flag, val, 1.0, 1e12, &a->rope_theta)) return 2;
        } else if (!strcmp(flag, "--rms-norm-eps")) {
            if (parse_real(flag, val, 1e-12, 0.1, &a->eps)) return 2;
        } else {
            fprintf(stderr, "genmodel: unknown option %s (see --help)\n", flag);
            return 2;
        }
    }
    if (!a->out) {
        fprintf(stderr, "genmodel: no output directory given (see --help)\n");
        return 2;
    }
    if (a->ints[O_MEDUSA_HEADS] < 0 && (a->ints[O_MEDUSA_LAYERS] > 0 || a->opts.medusa_shared || a->opts.medusa_path)) {
        fprintf(stderr, "genmodel: --medusa-layers, --medusa-shared and --medusa-out need --medusa-heads N\n");
        return 2;
    }
    if (a->pattern && a->ints[O_INTERVAL] > 0) {
        fprintf(stderr, "genmodel: give --layer-pattern or --full-attention-interval, not both\n");
        return 2;
    }
    return 0;
}

static int parse_eos(const char *s, model_config *c) {
    c->num_eos = 0;
    if (!strcmp(s, "none")) return 0;
    char buf[256];
    snprintf(buf, sizeof buf, "%s", s);
    for (char *save = NULL, *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        if (c->num_eos == CONFIG_MAX_EOS) {
            fprintf(stderr, "genmodel: --eos takes at most %d ids\n", CONFIG_MAX_EOS);
            return 2;
        }
        if (parse_int("--eos", tok, 0, c->vocab_size - 1, &c->eos_token_ids[c->num_eos++])) return 2;
    }
    if (c->num_eos == 0) return bad("--eos", s, "token ids separated by commas, or none");
    return 0;
}

/* The preset with the overrides applied, in dependency order. */
static int build_config(const args *a, model_config *c) {
    sp_error err;
    if (randmodel_preset(a->preset, c, &err)) {
        fprintf(stderr, "genmodel: %s\n", err.msg);
        return 2;
    }
    const model_config p = *c;
    const double factor = (double)p.rotary_dim / p.head_dim;
    int *fields[N_INT] = {
        [O_VOCAB] = &c->vocab_size,
        [O_HIDDEN] = &c->hidden_size,
        [O_INTER] = &c->intermediate_size,
        [O_LAYERS] = &c->num_layers,
        [O_HEADS] = &c->num_heads,
        [O_KV] = &c->num_kv_heads,
        [O_HEAD_DIM] = &c->head_dim,
        [O_LK_HEADS] = &c->lin_k_heads,
        [O_LV_HEADS] = &c->lin_v_heads,
        [O_LK_DIM] = &c->lin_k_dim,
        [O_LV_DIM] = &c->lin_v_dim,
        [O_CONV] = &c->conv_kernel,
        [O_MAXPOS] = &c->max_position_embeddings,
    };
    for (int k = 0; k < N_INT; k++)
        if (fields[k] && a->ints[k] > 0) *fields[k] = a->ints[k];
    /* layer types: an explicit pattern, an interval, or the preset's list repeated */
    for (int l = 0; l < c->num_layers; l++) {
        if (a->pattern)
            c->layer_types[l] =
                a->pattern[l % strlen(a->pattern)] == 'F' ? LAYER_FULL_ATTENTION : LAYER_LINEAR_ATTENTION;
        else if (a->ints[O_INTERVAL] > 0)
            c->layer_types[l] = (l + 1) % a->ints[O_INTERVAL] ? LAYER_LINEAR_ATTENTION : LAYER_FULL_ATTENTION;
        else
            c->layer_types[l] = p.layer_types[l % p.num_layers];
    }
    double f = isnan(a->rotary_factor) ? factor : a->rotary_factor;
    c->rotary_dim = (int)(c->head_dim * f);
    c->rotary_dim -= c->rotary_dim % 2;
    if (c->rotary_dim < 2) {
        fprintf(stderr, "genmodel: partial rotary factor %g of head_dim %d leaves no rotary dimensions\n", f,
                c->head_dim);
        return 2;
    }
    if (!isnan(a->rope_theta)) c->rope_theta = a->rope_theta;
    if (!isnan(a->eps)) c->rms_norm_eps = (float)a->eps;
    if (a->tied >= 0) c->tie_word_embeddings = a->tied;
    if (a->mtp >= 0) c->mtp_num_layers = a->mtp;
    if (a->eos) return parse_eos(a->eos, c);
    if (a->ints[O_VOCAB] > 0) c->eos_token_ids[0] = c->vocab_size - 1;
    return 0;
}

int main(int argc, char **argv) {
    args a;
    memset(&a, 0, sizeof a);
    int rc = parse_args(argc, argv, &a);
    if (rc) return rc < 0 ? 0 : rc;
    model_config c;
    if ((rc = build_config(&a, &c))) return rc;
    if (a.draft) {
        model_config target = c;
        randmodel_draft_config(&target, &c);
    }
    if (a.ints[O_SHARDS] > 0) a.opts.n_shards = a.ints[O_SHARDS];
    if (a.ints[O_MEDUSA_HEADS] > 0) a.opts.medusa_heads = a.ints[O_MEDUSA_HEADS];
    if (a.ints[O_MEDUSA_LAYERS] > 0) a.opts.medusa_layers = a.ints[O_MEDUSA_LAYERS];
    randmodel_report r;
    sp_error err;
    if (randmodel_write(a.out, &c, &a.opts, &r, &err)) {
        fprintf(stderr, "genmodel: %s\n", err.msg);
        return 1;
    }
    if (!a.quiet) {
        const char *dt = a.opts.dtype == DTYPE_F32 ? "f32" : a.opts.dtype == DTYPE_F16 ? "f16" : "bf16";
        printf("wrote %s: %spreset %s, %s layout, %s, seed %llu\n", a.out, a.draft ? "the draft of " : "", a.preset,
               a.opts.layout == RANDMODEL_LAYOUT_TEXT ? "text-only" : "full", dt, (unsigned long long)a.opts.seed);
        printf("  %d layers (%d full attention, %d Gated DeltaNet), vocab %d, hidden %d, %s, %s\n", c.num_layers,
               config_num_full(&c), config_num_linear(&c), c.vocab_size, c.hidden_size,
               c.tie_word_embeddings ? "tied lm_head" : "untied lm_head", c.mtp_num_layers ? "MTP" : "no MTP");
        printf("  %d tensors, %lld parameters (%lld in the MTP module), %lld tensor bytes\n", r.n_tensors, r.params,
               r.mtp_params, r.tensor_bytes);
        printf("  %d safetensors file%s, %lld bytes on disk with config.json\n", r.n_files, r.n_files > 1 ? "s" : "",
               r.file_bytes);
        if (a.opts.medusa_heads > 0) {
            char heads[4200];
            if (a.opts.medusa_path)
                snprintf(heads, sizeof heads, "%s", a.opts.medusa_path);
            else
                randmodel_medusa_default_path(a.out, heads, sizeof heads);
            printf("  %d Medusa heads (%d ResBlock%s each, %s) in %s\n", a.opts.medusa_heads,
                   a.opts.medusa_layers ? a.opts.medusa_layers : 1, a.opts.medusa_layers > 1 ? "s" : "",
                   a.opts.medusa_shared ? "sharing the lm_head" : "own projections", heads);
        }
    }
    return 0;
}
