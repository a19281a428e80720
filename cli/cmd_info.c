/* cmd_info.c — `specula info MODEL`: the config in brief, parameter counts,
 * weight bytes read per token, KV and DeltaNet state per sequence. Works on
 * a directory that holds only a config.json (e.g. models/qwen3.8-27b). */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "args.h"
#include "checkpoint.h"
#include "commands.h"
#include "config.h"
#include "footprint.h"
#include "kv_quant.h"
#include "safetensors.h"

static void usage(FILE *f) {
    fprintf(f,
            "usage: specula info [MODEL] [--kv-cache F] [--json]\n"
            "Summarises a qwen3_5 model from its config.json (and its safetensors when present):\n"
            "layers, heads, parameters, weight bytes read per decode step, KV cache bytes per\n"
            "position and DeltaNet state bytes per sequence. Without safetensors, bf16 weights\n"
            "are assumed. MODEL defaults to %s.\n"
            "  --kv-cache F   the KV cache bytes for format F: f32 | bf16 (default) | q8 | q4\n"
            "                 (generate's --kv-cache; q8 and q4 carry a float32 scale per 32 elements)\n"
            "  --json         print the same figures as one JSON object\n",
            default_model_dir());
}

static const char *human(double bytes, char *buf, size_t n) {
    const char *unit[] = {"B", "KiB", "MiB", "GiB", "TiB"};
    int u = 0;
    while (bytes >= 1024 && u < 4) bytes /= 1024, u++;
    snprintf(buf, n, u ? "%.2f %s" : "%.0f %s", bytes, unit[u]);
    return buf;
}

/* Does dir hold a checkpoint (a single file or an index of shards)? */
static int has_safetensors(const char *dir) {
    char path[4200];
    snprintf(path, sizeof path, "%s/model.safetensors", dir);
    if (access(path, F_OK) == 0) return 1;
    snprintf(path, sizeof path, "%s/model.safetensors.index.json", dir);
    return access(path, F_OK) == 0;
}

/* The dtype of the checkpoint's weights (that of its first tensor) in *dt,
 * or BF16 with *assumed set when the directory has no safetensors. A
 * checkpoint that is there goes through the loader's own checks (every
 * tensor the config implies, with its shape, and nothing else), so info
 * refuses what generate would: −1 with err naming the file or tensor. The
 * weights' values are not read. */
static int weight_dtype(const char *dir, dtype_t *dt, int *assumed, int *has_mtp, sp_error *err) {
    *dt = DTYPE_BF16;
    *assumed = 1;
    *has_mtp = 0;
    if (!has_safetensors(dir)) return 0;
    checkpoint ck;
    if (checkpoint_open(&ck, dir, err)) return -1;
    *dt = ck.st.tensors[0].dtype; /* the checks passed: the layout's tensors are there */
    *assumed = 0;
    *has_mtp = ck.with_mtp;
    checkpoint_close(&ck);
    return 0;
}

int cmd_info(int argc, char **argv) {
    const char *dir = NULL;
    int json = 0;
    kv_format kv = KV_BF16;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            usage(stdout);
            return 0;
        } else if (!strcmp(argv[i], "--json")) {
            json = 1;
        } else if (!strcmp(argv[i], "--kv-cache")) {
            const char *v = arg_value(argc, argv, &i);
            if (!v) return EXIT_BAD_INPUT;
            if (kv_format_parse(v, &kv)) {
                fprintf(stderr, "specula info: --kv-cache expects f32, bf16, q8 or q4, got '%s'\n", v);
                return EXIT_BAD_INPUT;
            }
        } else if (argv[i][0] == '-' || dir) {
            fprintf(stderr, "specula info: unexpected argument '%s' (`specula info --help` for the options)\n",
                    argv[i]);
            return 2;
        } else {
            dir = argv[i];
        }
    }
    if (!dir) dir = default_model_dir();
    model_config c;
    sp_error err;
    if (config_load(dir, &c, &err)) {
        fprintf(stderr, "specula info: %s\n", err.msg);
        return EXIT_BAD_INPUT;
    }
    int assumed, file_mtp;
    dtype_t dt;
    if (weight_dtype(dir, &dt, &assumed, &file_mtp, &err)) {
        fprintf(stderr, "specula info: %s\n", err.msg);
        return EXIT_BAD_INPUT;
    }
    int with_mtp = c.mtp_num_layers > 0 && (assumed || file_mtp);
    model_footprint fp;
    footprint_compute(&c, with_mtp, dtype_size(dt), 2.0, &fp);
    int nf = config_num_full(&c), nl = config_num_linear(&c);
    /* keys and values of every attention layer's KV heads, one row each (kv_quant.h) */
    const double kv_position = 2.0 * nf * c.num_kv_heads * (double)kv_row_bytes(kv, c.head_dim);
    if (json) {
        printf("{\"model\": \"%s\", \"vocab_size\": %d, \"hidden_size\": %d, \"num_layers\": %d, "
               "\"deltanet_layers\": %d, \"attention_layers\": %d, \"params\": %lld, \"params_mtp\": %lld, "
               "\"weight_dtype\": \"%s\", \"weight_dtype_assumed\": %s, \"weight_bytes_per_step\": %.0f, "
               "\"mtp_bytes_per_step\": %.0f, \"kv_bytes_per_position_bf16\": %.0f, "
               "\"kv_cache\": \"%s\", \"kv_bytes_per_position\": %.0f, \"deltanet_state_bytes\": %.0f}\n",
               dir, c.vocab_size, c.hidden_size, c.num_layers, nl, nf, fp.params_total, fp.params_mtp, dtype_name(dt),
               assumed ? "true" : "false", fp.weight_bytes_per_step, fp.mtp_bytes_per_step, fp.kv_bytes_per_position,
               kv_format_name(kv), kv_position, fp.deltanet_bytes);
        return 0;
    }
    char b1[32], b2[32], b3[32], b4[32];
    char pattern[CONFIG_MAX_LAYERS + 1];
    for (int l = 0; l < c.num_layers; l++) pattern[l] = c.layer_types[l] == LAYER_FULL_ATTENTION ? 'A' : 'D';
    pattern[c.num_layers] = '\0';
    printf("model              %s\n", dir);
    printf("layout             %s (tensors under %s)\n",
           strcmp(c.tensor_prefix, "model.") ? "qwen3_5 with text_config" : "qwen3_5_text", c.tensor_prefix);
    printf("vocabulary         %d\n", c.vocab_size);
    printf("hidden size        %d, SwiGLU %d\n", c.hidden_size, c.intermediate_size);
    printf("layers             %d: %d Gated DeltaNet (D) + %d gated attention (A)\n", c.num_layers, nl, nf);
    printf("pattern            %s\n", pattern);
    printf("attention          %d query / %d KV heads x %d, RoPE on %d dims%s, theta %g\n", c.num_heads, c.num_kv_heads,
           c.head_dim, config_rotated_dims(&c), c.rotary_dim % 2 ? " (frequencies of an odd R, as transformers)" : "",
           c.rope_theta);
    printf("DeltaNet           %d key / %d value heads x %d/%d, conv width %d\n", c.lin_k_heads, c.lin_v_heads,
           c.lin_k_dim, c.lin_v_dim, c.conv_kernel);
    printf("lm_head            %s\n", c.tie_word_embeddings ? "tied to the embedding" : "untied");
    printf("MTP                %s\n",
           with_mtp ? "1 layer" : (c.mtp_num_layers ? "declared, not in the checkpoint" : "none"));
    printf("parameters         %.4g (embedding %.4g, lm_head %.4g), MTP %.4g\n", (double)fp.params_total,
           (double)fp.params_embedding, (double)fp.params_lm_head, (double)fp.params_mtp);
    printf("weights            %s%s\n", dtype_name(dt), assumed ? " (assumed: no safetensors here)" : "");
    printf("read per token     %s of weights per decode step\n", human(fp.weight_bytes_per_step, b1, sizeof b1));
    if (with_mtp) printf("read per MTP step  %s\n", human(fp.mtp_bytes_per_step, b2, sizeof b2));
    printf("KV cache           %s per position (%s), %s per 4096 positions\n", human(kv_position, b3, sizeof b3),
           kv_format_name(kv), human(4096 * kv_position, b2, sizeof b2));
    printf("DeltaNet state     %s per sequence (fp32; copied on every beam fork)\n",
           human(fp.deltanet_bytes, b4, sizeof b4));
    return 0;
}
