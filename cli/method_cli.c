/* method_cli.c — the method and model flags of the decoding commands, and
 * the models behind the interfaces (see method_cli.h). */
#include "method_cli.h"

#include <string.h>
#include <unistd.h>

#include "args.h"
#include "reference_target.h"

int model_flags_read(model_flags *f, int argc, char **argv, int *i) {
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
    fprintf(f,
            "  --model DIR          target model (default %s)\n"
            "  --draft DIR          draft model for --method spec (default MODEL-draft)\n"
            "  --medusa FILE        Medusa heads (default MODEL-medusa/medusa_heads.safetensors)\n"
            "  --medusa-ignore-base accept heads trained against another checkpoint (random test heads only)\n",
            default_model_dir());
}

int model_flags_check(const model_flags *f, method_kind kind, const char *cmd) {
    if (f->draft_flag && kind != METHOD_SPEC) {
        fprintf(stderr, "specula %s: --draft only applies to --method spec\n", cmd);
        return 2;
    }
    if (f->medusa_flag && kind != METHOD_MEDUSA) {
        fprintf(stderr, "specula %s: %s only applies to --method medusa\n", cmd, f->medusa_flag);
        return 2;
    }
    return 0;
}

void model_beside(const char *model_dir, const char *suffix, char *buf, size_t size) {
    size_t n = strlen(model_dir);
    while (n > 1 && model_dir[n - 1] == '/') n--;
    snprintf(buf, size, "%.*s%s", (int)n, model_dir, suffix);
}

/* The draft: named, or beside the model. 1 loaded, 0 absent (optional), -1 error (printed). */
static int load_draft(loaded_models *lm, const model_flags *f, const char *dir, companion_need need, const char *cmd) {
    char beside[4200], config[4300];
    model_beside(dir, "-draft", beside, sizeof beside);
    snprintf(config, sizeof config, "%s/config.json", beside);
    if (need != COMPANION_NEEDED && !f->draft_dir && access(config, F_OK)) return 0;
    sp_error err;
    if (model_load(&lm->draft, f->draft_dir ? f->draft_dir : beside, &err)) {
        fprintf(stderr, "specula %s: %s\n", cmd, err.msg);
        return -1;
    }
    return 1;
}

/* Medusa heads: named, or beside the model; heads beside it that belong to
 * another checkpoint are left out when optional. 1, 0 or -1 as above. */
static int load_heads(loaded_models *lm, const model_flags *f, const char *dir, companion_need need, const char *cmd) {
    char beside[4300];
    model_beside(dir, "-medusa/medusa_heads.safetensors", beside, sizeof beside);
    if (need != COMPANION_NEEDED && !f->heads_path && access(beside, F_OK)) return 0;
    sp_error err;
    const medusa_base base = reference_medusa_base(&lm->target);
    if (medusa_load(&lm->heads, f->heads_path ? f->heads_path : beside, &base, f->ignore_base, &err)) {
        const int leave_out = need == COMPANION_IF_FITS && !f->heads_path;
        fprintf(stderr, "specula %s: %s%s\n", cmd, leave_out ? "no Medusa points: " : "", err.msg);
        return leave_out ? 0 : -1;
    }
    return 1;
}

int models_load_target(loaded_models *lm, const model_flags *f, sp_error *err) {
    memset(lm, 0, sizeof *lm);
    if (model_load(&lm->target, f->model_dir ? f->model_dir : default_model_dir(), err)) return 1;
    lm->have_target = 1;
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

int models_load_companions(loaded_models *lm, const model_flags *f, companion_need draft, companion_need heads,
                           const char *cmd) {
    const char *dir = f->model_dir ? f->model_dir : default_model_dir();
    sp_error err;
    int d = draft ? load_draft(lm, f, dir, draft, cmd) : 0;
    int h = d >= 0 && heads ? load_heads(lm, f, dir, heads, cmd) : 0;
    lm->have_draft = d > 0;
    lm->have_heads = h > 0;
    if (d < 0 || h < 0) {
        models_release(lm);
        return 1;
    }
    reference_target_build(&lm->target_if, &lm->target);
    lm->parts.target = &lm->target_if;
    if (lm->have_draft) {
        reference_draft_stepper_build(&lm->draft_stepper, &lm->draft);
        lm->parts.draft = &lm->draft_stepper;
    }
    if (lm->target.w.has_mtp && reference_mtp_stepper_build(&lm->mtp_stepper, &lm->target, &err) == 0)
        lm->parts.mtp = &lm->mtp_stepper;
    if (lm->have_heads) lm->parts.heads = &lm->heads;
    return 0;
}

int method_cli_refuse(const method_spec *s, const char *const *flags, const char *why, const char *cmd) {
    for (int i = 0; flags[i]; i++)
        if (method_spec_given(s, flags[i])) {
            fprintf(stderr, "specula %s: %s does not apply here: %s\n", cmd, flags[i], why);
            return 2;
        }
    return 0;
}

void models_release(loaded_models *lm) {
    if (lm->parts.mtp) lm->mtp_stepper.release(&lm->mtp_stepper);
    if (lm->parts.draft) lm->draft_stepper.release(&lm->draft_stepper);
    if (lm->parts.target) lm->target_if.release(&lm->target_if);
    if (lm->have_heads) medusa_free(&lm->heads);
    if (lm->have_draft) model_free(&lm->draft);
    if (lm->have_target) model_free(&lm->target);
    memset(lm, 0, sizeof *lm);
}
