/* method_cli.h — what the commands that decode share on the command line:
 * the method flags (method.h, one table for every command) and the models a
 * method runs with — the target, a draft model, Medusa heads — loaded and
 * put behind the decoding layer's interfaces (reference_target.h). */
#ifndef SPECULA_CLI_METHOD_H
#define SPECULA_CLI_METHOD_H

#include <stdio.h>

#include "engine.h"
#include "medusa.h"
#include "method.h"
#include "registry.h"
#include "model.h"

typedef enum { BACKEND_REFERENCE = 0, BACKEND_CPU, BACKEND_CUDA } backend_kind;

/* The backends that are the engine (optimized/): every one but the reference. */
static inline int backend_is_engine(backend_kind b) { return b != BACKEND_REFERENCE; }

/* The model flags: --model DIR, --draft DIR, --medusa FILE, --medusa-ignore-base,
 * and where the models run: --backend reference|cpu|cuda, --threads N, --dtype bf16|f32, --cuda-graphs on|off,
 * --kv-cache f32|bf16|q8|q4. */
typedef struct {
    const char *model_dir;  /* NULL: the embedded default */
    const char *draft_dir;  /* NULL: MODEL-draft */
    const char *heads_path; /* NULL: MODEL-medusa/medusa_heads.safetensors */
    int ignore_base;
    const char *draft_flag;  /* "--draft" when given, for "only applies to" errors */
    const char *medusa_flag; /* the first Medusa model flag given */
    backend_kind backend;    /* the command's default until --backend is given */
    int threads;             /* cpu: ≥ 1 (default 1) */
    int f32;                 /* cpu: matrices in float32 (--dtype f32) */
    int dtype_given;         /* --dtype was given: a rounding asked for, not announced */
    const char *engine_flag; /* --threads or --dtype when given, for the reference's refusal */
    int cuda_eager;          /* cuda: launch op by op, no CUDA graphs (--cuda-graphs off) */
    int cuda_debug;          /* cuda: wait after every launch, name the first that fails (--cuda-debug) */
    const char *cuda_flag;   /* --cuda-graphs or --cuda-debug when given, for the other backends' refusal */
    kv_format kv;            /* engine: the KV cache (--kv-cache; KV_DEFAULT: the backend's own) */
    const char *kv_flag;     /* "--kv-cache" when given */
} model_flags;

/* The model flags with the command's default backend. */
model_flags model_flags_defaults(backend_kind backend);
const char *backend_name(backend_kind b); /* "reference", "cpu", "cuda" */

/* Reads argv[*i] as --backend, --threads, --dtype, --cuda-graphs, --cuda-debug or --kv-cache: 1 consumed, 0 not one,
 * −1 a bad value (printed). */
int backend_flags_read(model_flags *f, int argc, char **argv, int *i);
/* Reads argv[*i] as a model flag (the three above included): 1 consumed
 * (value too), 0 not one, −1 a missing or bad value (printed). */
int model_flags_read(model_flags *f, int argc, char **argv, int *i);
/* Reads argv[*i] as a method flag or a model flag: 1 consumed, 0 neither,
 * −1 a bad value (printed with the command's name). */
int method_cli_flag(method_spec *s, model_flags *f, int argc, char **argv, int *i, const char *cmd);
/* The help lines of the model flags. */
void model_flags_usage(FILE *f);
/* Refuses --draft without --method spec, the Medusa flags without --method
 * medusa and the engine's flags with the reference (printed; returns 2), else 0. */
int model_flags_check(const model_flags *f, const method_spec *s, const char *cmd);
/* The last check alone, for commands that run several methods. */
int model_flags_backend_check(const model_flags *f, const char *cmd);

/* Which companions to load. A companion named on the command line must
 * load whatever the need. */
typedef enum {
    COMPANION_NO = 0,  /* not loaded */
    COMPANION_PRESENT, /* loaded when it sits beside the model; present but broken is an error */
    COMPANION_IF_FITS, /* Medusa heads beside the model that do not load (another checkpoint's, say) are
                        * left out with a message: "no Medusa points: why" */
    COMPANION_NEEDED   /* must load, from beside the model when not named */
} companion_need;

typedef struct {
    backend_kind backend;
    model target, draft;    /* the reference's models (backend reference) */
    engine etarget, edraft; /* the engine's (backend cpu) */
    medusa_heads heads;
    float *lm_head_f32; /* the engine's bf16 lm_head widened, for Medusa heads that share it; else NULL */
    int have_target, have_draft, have_heads;
    decode_target target_if, draft_if;
    stepper draft_stepper, mtp_stepper;
    method_parts parts; /* what the factory takes; NULL where a companion is absent */
} loaded_models;

/* The target's configuration and checkpoint directory, on either backend. */
const model_config *models_config(const loaded_models *lm);

/* Loads the target (and the companions asked for) and builds the parts.
 * Prints "specula CMD: reason" and returns 1 on failure (nothing is left
 * loaded; the command exits EXIT_BAD_INPUT), 0 on success. */
int models_load(loaded_models *lm, const model_flags *f, companion_need draft, companion_need heads, const char *cmd);
/* The same in two steps, for a command that goes on without a target:
 * the target alone (nothing printed; err says why), then the companions. */
int models_load_target(loaded_models *lm, const model_flags *f, sp_error *err);
int models_load_companions(loaded_models *lm, const model_flags *f, companion_need draft, companion_need heads,
                           const char *cmd);

/* Refuses (printed, returns 2) any of the method flags in `flags` (NULL
 * terminated) that was given, saying why the command has no use for it. */
int method_cli_refuse(const method_spec *s, const char *const *flags, const char *why, const char *cmd);
void models_release(loaded_models *lm);

/* Refuses (printed, returns 2) a prompt of n_prompt tokens (given by
 * prompt_flag, NULL: the prompt itself) followed by n_new generated ones
 * (given by new_flag) that would run past the model's
 * max_position_embeddings: positions it was never trained on would
 * otherwise be decoded without a word. */
int context_check(const model_config *c, const char *prompt_flag, int n_prompt, const char *new_flag, long n_new,
                  const char *cmd);

/* The companion directories of a model: MODEL-draft and
 * MODEL-medusa/medusa_heads.safetensors (trailing slashes ignored). */
void model_beside(const char *model_dir, const char *suffix, char *buf, size_t size);

#endif
