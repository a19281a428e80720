/* method_cli.c — the method and model flags of the decoding commands, and
 * the models behind the interfaces (see method_cli.h). */
#include "method_cli.h"

#include <string.h>

#include "args.h"

static const char *const backend_names[] = {"reference", "cpu", "cuda"};

const char *backend_name(backend_kind b) { return (unsigned)b <= BACKEND_CUDA ? backend_names[b] : "?"; }

model_flags model_flags_defaults(backend_kind backend) {
    model_flags f;
    memset(&f, 0, sizeof f);
    f.backend = backend;
    f.threads = 1;
    return f;
}

int backend_flags_read(model_flags *f, int argc, char **argv, int *i) {
    const char *flag = argv[*i], *v;
    if (!strcmp(flag, "--cuda-debug")) { /* no value */
        f->cuda_flag = flag;
        f->cuda_debug = 1;
        return 1;
    }
    if (strcmp(flag, "--backend") && strcmp(flag, "--threads") && strcmp(flag, "--dtype") &&
        strcmp(flag, "--cuda-graphs") && strcmp(flag, "--kv-cache"))
        return 0;
    if (!(v = arg_value(argc, argv, i))) return -1;
    if (!strcmp(flag, "--kv-cache")) {
        if (kv_format_parse(v, &f->kv)) {
            fprintf(stderr, "specula: --kv-cache expects f32, bf16, q8 or q4, got '%s'\n", v);
            return -1;
        }
        f->kv_flag = flag;
        return 1;
    }
    if (!strcmp(flag, "--cuda-graphs")) {
        f->cuda_flag = flag;
        if (strcmp(v, "on") && strcmp(v, "off")) {
            fprintf(stderr, "specula: --cuda-graphs expects on or off, got '%s'\n", v);
            return -1;
        }
        f->cuda_eager = !strcmp(v, "off");
        return 1;
    }
    if (!strcmp(flag, "--threads")) {
        f->engine_flag = flag;
        return arg_int(flag, v, 1, 1024, &f->threads) ? -1 : 1;
    }
    if (!strcmp(flag, "--dtype")) {
        f->engine_flag = flag;
        if (strcmp(v, "bf16") && strcmp(v, "f32")) {
            fprintf(stderr, "specula: --dtype expects bf16 or f32, got '%s'\n", v);
            return -1;
        }
        f->f32 = !strcmp(v, "f32");
        f->dtype_given = 1;
        return 1;
    }
    for (int b = 0; b <= BACKEND_CUDA; b++)
        if (!strcmp(v, backend_names[b])) {
            f->backend = (backend_kind)b;
            return 1;
        }
    fprintf(stderr, "specula: --backend expects reference, cpu or cuda, got '%s'\n", v);
    return -1;
}

int model_flags_read(model_flags *f, int argc, char **argv, int *i) {
    const int rc = backend_flags_read(f, argc, argv, i);
    if (rc) return rc;
    const char *flag = argv[*i];
    if (!strcmp(flag, "--medusa-ignore-base")) {
        f->ignore_base = 1;
        if (!f->medusa_flag) f->medusa_flag = flag;
        return 1;
    }
    const char **slot = !strcmp(flag, "--model")    ? &f->model_dir
                        : !strcmp(flag, "--draft")  ? &f->draft_dir
                        : !strcmp(flag, "--medusa") ? &f->heads_path
                                                    : NULL;
    if (!slot) return 0;
    if (!(*slot = arg_value(argc, argv, i))) return -1;
    if (slot == &f->draft_dir) f->draft_flag = flag;
    if (slot == &f->heads_path && !f->medusa_flag) f->medusa_flag = flag;
    return 1;
}

int method_cli_flag(method_spec *s, model_flags *f, int argc, char **argv, int *i, const char *cmd) {
    sp_error err;
    int rc = method_spec_flag(s, argc, argv, i, &err);
    if (rc < 0) fprintf(stderr, "specula %s: %s\n", cmd, err.msg);
    if (rc) return rc;
    return f ? model_flags_read(f, argc, argv, i) : 0;
}

void model_flags_usage(FILE *f) {
    fprintf(
        f,
        "  --model DIR          target model (default %s)\n"
        "  --draft DIR          draft model for --method spec (default MODEL-draft)\n"
        "  --medusa FILE        Medusa heads (default MODEL-medusa/medusa_heads.safetensors)\n"
        "  --medusa-ignore-base accept heads trained against another checkpoint (random test heads only)\n"
        "  --backend NAME       reference (the plain-C float32 reference) | cpu (the engine) | cuda (the engine on\n"
        "                       a GPU; in build/specula-emu, on the kernels' CPU emulator)\n"
        "  --threads N          cpu: threads of the engine (default 1)\n"
        "  --dtype D            cpu: bf16 (default) | f32 weights (f32: the reference's floats bit for bit, slower)\n"
        "  --kv-cache F         cpu: the attention layers' KV cache: f32 (default) | bf16 | q8 (8-bit, a scale per\n"
        "                       32) | q4 (4-bit, a scale per 32, Hadamard-rotated); cuda: bf16 (default) | q8 | q4\n"
        "  --cuda-graphs on|off cuda: each pass captured into CUDA graphs (on, default) or launched op by op\n"
        "  --cuda-debug         cuda: graphs off, every launch waited for, the first kernel that fails named\n",
        default_model_dir());
}

/* "spec", "medusa": the built-ins that have `trait`, in the registry's order. */
static void methods_with(unsigned trait, char *buf, size_t size) {
    buf[0] = 0;
    for (int i = 0; i < method_count(); i++)
        if (method_at(i)->traits & trait) {
            const size_t len = strlen(buf);
            snprintf(buf + len, size - len, "%s%s", len ? " or " : "", method_at(i)->name);
        }
}

int model_flags_check(const model_flags *f, const method_spec *s, const char *cmd) {
    char which[100];
    if (f->draft_flag && !method_has(s, METHOD_DRAFT_MODEL)) {
        methods_with(METHOD_DRAFT_MODEL, which, sizeof which);
        fprintf(stderr, "specula %s: --draft only applies to --method %s\n", cmd, which);
        return 2;
    }
    if (f->medusa_flag && !method_has(s, METHOD_HEADS)) {
        methods_with(METHOD_HEADS, which, sizeof which);
        fprintf(stderr, "specula %s: %s only applies to --method %s\n", cmd, f->medusa_flag, which);
        return 2;
    }
    return model_flags_backend_check(f, cmd);
}

int model_flags_backend_check(const model_flags *f, const char *cmd) {
    if (f->cuda_flag && f->backend != BACKEND_CUDA) {
        fprintf(stderr, "specula %s: %s only applies to --backend cuda (the %s launches no kernels)\n", cmd,
                f->cuda_flag, f->backend == BACKEND_REFERENCE ? "reference" : "CPU engine");
        return 2;
    }
    if (f->kv_flag && f->backend == BACKEND_REFERENCE) {
        fprintf(stderr,
                "specula %s: --kv-cache only applies to the engine (--backend cpu or cuda): the reference "
                "keeps float32\n",
                cmd);
        return 2;
    }
    if (f->kv_flag && f->backend == BACKEND_CUDA && f->kv == KV_F32) {
        fprintf(stderr,
                "specula %s: --kv-cache f32 is the CPU engine's: the CUDA backend keeps its KV cache in bf16 "
                "(default), q8 or q4\n",
                cmd);
        return 2;
    }
    if (f->engine_flag && f->backend != BACKEND_CPU) {
        fprintf(stderr, "specula %s: %s only applies to --backend cpu (%s)\n", cmd, f->engine_flag,
                f->backend == BACKEND_REFERENCE      ? "the reference is float32, one thread"
                : !strcmp(f->engine_flag, "--dtype") ? "the CUDA backend computes with bf16 weights"
                                                     : "the CUDA backend runs on the device");
        return 2;
    }
    return 0;
}

void model_beside(const char *model_dir, const char *suffix, char *buf, size_t size) {
    size_t n = strlen(model_dir);
    while (n > 1 && model_dir[n - 1] == '/') n--;
    snprintf(buf, size, "%.*s%s", (int)n, model_dir, suffix);
}

int method_cli_refuse(const method_spec *s, const char *const *flags, const char *why, const char *cmd) {
    for (int i = 0; flags[i]; i++)
        if (method_spec_given(s, flags[i])) {
            fprintf(stderr, "specula %s: %s does not apply here: %s\n", cmd, flags[i], why);
            return 2;
        }
    return 0;
}

int context_check(const model_config *c, const char *prompt_flag, int n_prompt, const char *new_flag, long n_new,
                  const char *cmd) {
    const int ctx = c->max_position_embeddings;
    char prompt[64];
    if (prompt_flag)
        snprintf(prompt, sizeof prompt, "%s %d", prompt_flag, n_prompt);
    else
        snprintf(prompt, sizeof prompt, "the prompt (%d tokens)", n_prompt);
    if (n_prompt > ctx) {
        fprintf(stderr, "specula %s: %s is past the model's context (max_position_embeddings %d)\n", cmd, prompt, ctx);
        return 2;
    }
    if (n_prompt + n_new > ctx) {
        fprintf(stderr,
                "specula %s: %s and %s %ld need %ld positions, past the model's context (max_position_embeddings %d)\n",
                cmd, prompt, new_flag, n_new, n_prompt + n_new, ctx);
        return 2;
    }
    return 0;
}
