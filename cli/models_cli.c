/* models_cli.c — the models a decoding command runs with, loaded on the
 * chosen backend and put behind the decoding layer's interfaces: the
 * reference (reference_target.h) or the engine (engine_target.h, on the CPU or CUDA backend), a
 * draft model beside the target, Medusa heads (see method_cli.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "args.h"
#include "dtype.h"
#include "engine_mtp.h"
#include "engine_target.h"
#include "method_cli.h"
#include "reference_target.h"
#include "target_stepper.h"

/* The draft: named, or beside the model. 1 loaded, 0 absent (optional), -1 error (printed). */
static int load_draft(loaded_models *lm, const model_flags *f, const char *dir, companion_need need, const char *cmd) {
    char beside[4200], config[4300];
    model_beside(dir, "-draft", beside, sizeof beside);
    snprintf(config, sizeof config, "%s/config.json", beside);
    if (need != COMPANION_NEEDED && !f->draft_dir && access(config, F_OK)) return 0;
    const char *path = f->draft_dir ? f->draft_dir : beside;
    const engine_options o = {.threads = f->threads,
                              .f32_weights = f->f32,
                              .cuda = f->backend == BACKEND_CUDA,
                              .cuda_eager = f->cuda_eager,
                              .cuda_debug = f->cuda_debug,
                              .kv = f->kv};
    sp_error err;
    const int rc =
        backend_is_engine(lm->backend) ? engine_open(&lm->edraft, path, &o, &err) : model_load(&lm->draft, path, &err);
    if (rc) {
        fprintf(stderr, "specula %s: %s\n", cmd, err.msg);
        return -1;
    }
    return 1;
}

/* What heads are checked and attached against: the target's directory, its
 * dimensions and, for heads that share it, its lm_head in float32 (the
 * engine holds one only with --dtype f32; in bf16 load_heads widens it). */
static medusa_base heads_base(const loaded_models *lm) {
    if (lm->backend == BACKEND_REFERENCE) return reference_medusa_base(&lm->target);
    const engine *e = &lm->etarget;
    const eweight *head = engine_weight(&e->w, 0, ROLE_LM_HEAD);
    const medusa_base b = {e->path, e->cfg.hidden_size, e->cfg.vocab_size,
                           head->dtype == DTYPE_F32 ? (const float *)head->data : NULL};
    return b;
}

/* Medusa heads: named, or beside the model; heads beside it that belong to
 * another checkpoint are left out when optional. 1, 0 or -1 as above. */
static int load_heads(loaded_models *lm, const model_flags *f, const char *dir, companion_need need, const char *cmd) {
    char beside[4300];
    model_beside(dir, "-medusa/medusa_heads.safetensors", beside, sizeof beside);
    if (need != COMPANION_NEEDED && !f->heads_path && access(beside, F_OK)) return 0;
    sp_error err;
    const medusa_base base = heads_base(lm);
    if (medusa_load(&lm->heads, f->heads_path ? f->heads_path : beside, &base, f->ignore_base, &err)) {
        const int leave_out = need == COMPANION_IF_FITS && !f->heads_path;
        fprintf(stderr, "specula %s: %s%s\n", cmd, leave_out ? "no Medusa points: " : "", err.msg);
        return leave_out ? 0 : -1;
    }
    if (!lm->heads.own_proj && !base.lm_head) { /* heads that share the engine's bf16 lm_head: a float32 copy */
        const eweight *head = engine_weight(&lm->etarget.w, 0, ROLE_LM_HEAD);
        const size_t n = (size_t)base.V * (size_t)base.D;
        if (n * sizeof(float) > ((size_t)256 << 20)) /* a real vocabulary: say where the memory goes */
            fprintf(stderr,
                    "specula %s: the Medusa heads share the lm_head: holding a float32 copy of it (%.0f MiB) "
                    "beside the bf16 weights\n",
                    cmd, (double)(n * sizeof(float)) / (1 << 20));
        lm->lm_head_f32 = sp_xcalloc(n, sizeof(float), "the lm_head in float32 for the Medusa heads");
        dtype_to_f32(lm->lm_head_f32, head->data, head->dtype, n);
        medusa_share_lm_head(&lm->heads, lm->lm_head_f32);
    }
    return 1;
}

int models_load_target(loaded_models *lm, const model_flags *f, sp_error *err) {
    memset(lm, 0, sizeof *lm);
    lm->backend = f->backend;
    const char *dir = f->model_dir ? f->model_dir : default_model_dir();
    const engine_options o = {.threads = f->threads,
                              .f32_weights = f->f32,
                              .cuda = f->backend == BACKEND_CUDA,
                              .cuda_eager = f->cuda_eager,
                              .cuda_debug = f->cuda_debug,
                              .kv = f->kv};
    if (backend_is_engine(f->backend) ? engine_open(&lm->etarget, dir, &o, err) : model_load(&lm->target, dir, err))
        return 1;
    lm->have_target = 1;
    /* a precision the checkpoint does not have is never taken in silence (the embedding is the first tensor) */
    const engine_weights *w = &lm->etarget.w;
    const dtype_t stored = backend_is_engine(f->backend) && w->ck.tensors ? w->ck.tensors[0]->dtype : w->matrix_dtype;
    if (!f->dtype_given && stored != w->matrix_dtype)
        fprintf(stderr, "specula: note: %s stores %s weights; the %s engine computes with them rounded to %s%s\n", dir,
                dtype_name(stored), f->backend == BACKEND_CUDA ? "cuda" : "cpu", dtype_name(w->matrix_dtype),
                f->backend == BACKEND_CPU && stored == DTYPE_F32 ? " (--dtype f32 keeps them)" : "");
    return 0;
}

int models_load(loaded_models *lm, const model_flags *f, companion_need draft, companion_need heads, const char *cmd) {
    sp_error err;
    if (models_load_target(lm, f, &err)) {
        fprintf(stderr, "specula %s: %s\n", cmd, err.msg);
        return 1;
    }
    return models_load_companions(lm, f, draft, heads, cmd);
}

/* The interfaces over what was loaded. */
static void build_parts(loaded_models *lm) {
    sp_error err;
    if (backend_is_engine(lm->backend)) {
        engine_target_build(&lm->target_if, &lm->etarget);
        if (lm->have_draft) {
            engine_target_build(&lm->draft_if, &lm->edraft);
            if (target_stepper_build(&lm->draft_stepper, &lm->draft_if, &err) == 0)
                lm->parts.draft = &lm->draft_stepper;
        }
        if (lm->etarget.w.ck.with_mtp && engine_mtp_stepper_build(&lm->mtp_stepper, &lm->etarget, &err) == 0)
            lm->parts.mtp = &lm->mtp_stepper;
    } else {
        reference_target_build(&lm->target_if, &lm->target);
        if (lm->have_draft) {
            reference_draft_stepper_build(&lm->draft_stepper, &lm->draft);
            lm->parts.draft = &lm->draft_stepper;
        }
        if (lm->target.w.has_mtp && reference_mtp_stepper_build(&lm->mtp_stepper, &lm->target, &err) == 0)
            lm->parts.mtp = &lm->mtp_stepper;
    }
    lm->parts.target = &lm->target_if;
    if (lm->have_heads) lm->parts.heads = &lm->heads;
}

int models_load_companions(loaded_models *lm, const model_flags *f, companion_need draft, companion_need heads,
                           const char *cmd) {
    const char *dir = f->model_dir ? f->model_dir : default_model_dir();
    int d = draft ? load_draft(lm, f, dir, draft, cmd) : 0;
    lm->have_draft = d > 0;
    int h = d >= 0 && heads ? load_heads(lm, f, dir, heads, cmd) : 0;
    lm->have_heads = h > 0;
    if (d < 0 || h < 0) {
        models_release(lm);
        return 1;
    }
    build_parts(lm);
    return 0;
}

const model_config *models_config(const loaded_models *lm) {
    return backend_is_engine(lm->backend) ? &lm->etarget.cfg : &lm->target.cfg;
}

void models_release(loaded_models *lm) {
    if (lm->parts.mtp) lm->mtp_stepper.release(&lm->mtp_stepper);
    if (lm->parts.draft) lm->draft_stepper.release(&lm->draft_stepper);
    if (lm->parts.target) lm->target_if.release(&lm->target_if);
    if (backend_is_engine(lm->backend) && lm->have_draft) lm->draft_if.release(&lm->draft_if);
    if (lm->have_heads) medusa_free(&lm->heads);
    free(lm->lm_head_f32);
    if (lm->have_draft) backend_is_engine(lm->backend) ? engine_close(&lm->edraft) : model_free(&lm->draft);
    if (lm->have_target) backend_is_engine(lm->backend) ? engine_close(&lm->etarget) : model_free(&lm->target);
    memset(lm, 0, sizeof *lm);
}
