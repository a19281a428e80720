/* cmd_audit.c — `specula audit`: does an engine with speculation on still sample from the target's law? It draws
 * the three arms of verify/audit.h from specula's own decoding, an adapter program (audit_exec.h) or sample files,
 * tests each arm against the target checkpoint's law, and prints a table or JSON. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "args.h"
#include "atomic_file.h"
#include "audit_cli.h"
#include "audit_exec.h"
#include "audit_specula.h"
#include "commands.h"
#include "generate_args.h"
#include "method_cli.h"
#include "outputs.h"
#include "regular_file.h"
#include "tokenizer.h"
#include "verify_dist.h"

/* Beside the statuses of cli/commands.h (2: bad input: the command line, the model or a file it names), the
 * audit's own: 0 passed, 1 failed, 3 underpowered, the control not rejected (audit_verdict), and 4: the run could
 * not be done (an adapter or a write failed). */
#define AUDIT_EXIT_ERROR 4

static void usage(FILE *f) {
    fprintf(f,
            "usage: specula audit [options]\n"
            "Tests whether an engine with speculation on samples from the same distribution as with it off,\n"
            "and from the target's: n continuations of L tokens per arm (on, off, and a negative control:\n"
            "the on engine at another temperature), a two-sample G-test per position and over whole\n"
            "sequences with a total-variation upper bound, a goodness-of-fit test of each arm's tokens\n"
            "against the target checkpoint's processed distributions (randomised probability integral\n"
            "transform, pooled and per position), Holm-corrected. The control must be rejected at\n"
            "p < 1e-12 at the same n, else the audit reports itself underpowered. docs/audit.md.\n"
            "Where the arms come from (default: specula's own decoding, on = the method flags below,\n"
            "off = plain sampling with the same temperature and cuts):\n"
            "  --engine-cmd CMD     an adapter program (tools/audit/): run as CMD --arm on|off|control --n N\n"
            "                       --length L --temperature T --top-k K --top-p P --min-p P --seed S\n"
            "                       --prompt-ids IDS; prints N lines of L token ids\n"
            "  --samples-on F, --samples-off F, --samples-control F\n"
            "                       read the arms from sample files (one sample a line, L token ids)\n"
            "  --save-samples DIR   write the arms drawn as DIR/{on,off,control}.txt\n"
            "The audit:\n"
            "  -n, --samples N      samples per arm (default 2000; with --samples-*: the shortest file's)\n"
            "  --length L           tokens per sample (default 16)\n"
            "  --prompt TEXT        the prompt, through the model's tokenizer.json (default \"%s\")\n"
            "  --tokens IDS         the prompt as token ids\n"
            "  --control-temperature T\n"
            "                       the control arm's temperature (default 1.5 x --temperature)\n"
            "  --ban-tokens IDS     tokens the engine never draws (a server told to ignore EOS gives them a\n"
            "                       logit of -inf): the law is computed without them\n"
            "  --no-law             skip the tests against the target's law (an engine on another model)\n"
            "  --alpha A            family-wise level of the audit (default 0.001)\n"
            "  --delta D            the TV bounds hold together with probability 1 - D (default 0.001)\n"
            "  --json               print the report as JSON\n"
            "  --quiet              no progress on stderr\n"
            "The method of the on arm (specula's decoding; --seed seeds the audit's arms, --temperature and\n"
            "the cuts apply to every arm):\n",
            DEFAULT_PROMPT_ESCAPED);
    static const char *const except[] = {"--max-tokens", "--no-eos", NULL};
    method_spec_usage(f, 0, METHOD_BEAM_SEARCH | METHOD_GREEDY_ONLY, except);
    model_flags_usage(f);
    fprintf(f, "Exit status: 0 passed, 1 the engine failed the audit, 2 bad input, 3 underpowered, 4 the audit\n"
               "could not run.\n");
}

static int parse(int argc, char **argv, audit_args *a) {
    memset(a, 0, sizeof *a);
    a->spec = method_spec_defaults();
    a->models = model_flags_defaults(BACKEND_REFERENCE);
    a->n = 2000;
    a->L = 16;
    a->opt = audit_defaults();
    for (int i = 1; i < argc; i++) {
        const char *f = argv[i], *v = NULL;
        float x;
#define VALUE()                                                                                                        \
    if (!(v = arg_value(argc, argv, &i))) return 2
        if (!strcmp(f, "--help") || !strcmp(f, "-h")) {
            usage(stdout);
            return 1;
        } else if (!strcmp(f, "--engine-cmd")) {
            VALUE();
            if (!*v) {
                fprintf(stderr, "specula audit: --engine-cmd needs a command\n");
                return 2;
            }
            a->engine_cmd = v;
        } else if (!strcmp(f, "--samples-on") || !strcmp(f, "--samples-off") || !strcmp(f, "--samples-control")) {
            VALUE();
            a->files[!strcmp(f, "--samples-on") ? 0 : !strcmp(f, "--samples-off") ? 1 : 2] = v;
        } else if (!strcmp(f, "--save-samples")) {
            VALUE();
            a->save_dir = v;
        } else if (!strcmp(f, "-n") || !strcmp(f, "--samples")) {
            VALUE();
            if (arg_int(f, v, 1, 1 << 28, &a->n)) return 2;
            a->n_given = 1;
        } else if (!strcmp(f, "--length")) {
            VALUE();
            if (arg_int(f, v, 1, 4096, &a->L)) return 2;
        } else if (!strcmp(f, "--prompt")) {
            VALUE();
            a->prompt_text = v;
        } else if (!strcmp(f, "--tokens")) {
            VALUE();
            a->tokens_text = v;
        } else if (!strcmp(f, "--control-temperature")) {
            VALUE();
            if (arg_float(f, v, 1e-3, 100, &x)) return 2;
            a->control_temperature = x;
        } else if (!strcmp(f, "--ban-tokens")) {
            VALUE();
            a->banned_text = v;
        } else if (!strcmp(f, "--no-law")) {
            a->no_law = 1;
        } else if (!strcmp(f, "--alpha")) {
            VALUE();
            if (arg_float(f, v, 1e-12, 0.5, &x)) return 2;
            a->opt.alpha = x;
        } else if (!strcmp(f, "--delta")) {
            VALUE();
            if (arg_float(f, v, 1e-12, 0.5, &x)) return 2;
            a->opt.delta = x;
        } else if (!strcmp(f, "--json")) {
            a->json = 1;
        } else if (!strcmp(f, "--quiet")) {
            a->quiet = 1;
        } else {
            int r = method_cli_flag(&a->spec, &a->models, argc, argv, &i, "audit");
            if (r < 0) return 2;
            if (r == 0) {
                fprintf(stderr, "specula audit: unknown option '%s'; `specula audit --help` lists them\n", f);
                return 2;
            }
        }
#undef VALUE
    }
    static const char *const refused[] = {"--max-tokens", "--no-eos", NULL};
    if (method_cli_refuse(&a->spec, refused, "the audit sets the length (--length) and never stops at EOS", "audit"))
        return 2;
    if (method_has(&a->spec, METHOD_BEAM_SEARCH) || method_has(&a->spec, METHOD_GREEDY_ONLY)) {
        fprintf(stderr, "specula audit: --method %s is deterministic; the audit compares sampled continuations\n",
                method_name(&a->spec));
        return 2;
    }
    sp_error err;
    if (method_spec_finish(&a->spec, 1, &err)) {
        fprintf(stderr, "specula audit: %s\n", err.msg);
        return 2;
    }
    if (!(a->spec.sampling.temperature > 0)) {
        fprintf(stderr, "specula audit: --temperature must be above 0: at 0 every arm is one sequence\n");
        return 2;
    }
    int n_files = !!a->files[0] + !!a->files[1] + !!a->files[2];
    if (n_files && n_files < 3) {
        fprintf(stderr, "specula audit: give all three of --samples-on, --samples-off and --samples-control\n");
        return 2;
    }
    if (n_files && a->engine_cmd) {
        fprintf(stderr, "specula audit: --engine-cmd and --samples-* are two sources of the same arms: give one\n");
        return 2;
    }
    a->source = n_files ? AUDIT_SOURCE_FILES : a->engine_cmd ? AUDIT_SOURCE_CMD : AUDIT_SOURCE_SPECULA;
    if (a->source != AUDIT_SOURCE_SPECULA && method_spec_given(&a->spec, "--method")) {
        fprintf(stderr, "specula audit: --method describes specula's own on arm; with %s the engine decides\n",
                a->engine_cmd ? "--engine-cmd" : "--samples-*");
        return 2;
    }
    if (a->prompt_text && a->tokens_text) {
        fprintf(stderr, "specula audit: --prompt and --tokens both give the prompt: give one\n");
        return 2;
    }
    if (a->control_temperature == 0) a->control_temperature = 1.5f * a->spec.sampling.temperature;
    if (fabsf(a->control_temperature - a->spec.sampling.temperature) < 1e-6f) {
        fprintf(stderr, "specula audit: --control-temperature must differ from --temperature\n");
        return 2;
    }
    return model_flags_check(&a->models, &a->spec, "audit");
}

/* The prompt's ids: --tokens, or --prompt (or the default) through the
 * tokenizer beside the model. */
static int prompt_ids(audit_args *a, const char *dir, int V) {
    if (a->tokens_text) return arg_tokens("--tokens", a->tokens_text, V, &a->prompt, &a->n_prompt) ? 2 : 0;
    char path[4200];
    snprintf(path, sizeof path, "%s/tokenizer.json", dir);
    if (access(path, R_OK) != 0) {
        fprintf(stderr, "specula audit: %s has no tokenizer.json: give the prompt as --tokens IDS\n", dir);
        return 2;
    }
    tokenizer tok;
    sp_error err;
    if (tokenizer_load(&tok, path, &err)) {
        fprintf(stderr, "specula audit: %s\n", err.msg);
        return EXIT_BAD_INPUT;
    }
    const char *text = a->prompt_text ? a->prompt_text : DEFAULT_PROMPT;
    int rc = tokenizer_encode(&tok, text, strlen(text), &a->prompt, &a->n_prompt, &err);
    tokenizer_free(&tok);
    if (rc) {
        fprintf(stderr, "specula audit: --prompt: %s\n", err.msg);
        return 2;
    }
    if (a->n_prompt == 0) {
        fprintf(stderr, "specula audit: the prompt encodes to no tokens\n");
        free(a->prompt);
        a->prompt = NULL;
        return 2;
    }
    for (int i = 0; i < a->n_prompt; i++)
        if (a->prompt[i] >= V) {
            fprintf(stderr, "specula audit: token %d of the prompt is outside the model's vocabulary (%d)\n",
                    a->prompt[i], V);
            return 2;
        }
    return 0;
}

static void progress(void *user, int64_t done, int64_t total) {
    const char *what = user;
    /* a line every tenth (the callers report every 200 draws at most) */
    if (done == total || (done * 10 / total) != ((done - 200) * 10 / total))
        fprintf(stderr, "specula audit: %s %lld/%lld\n", what, (long long)done, (long long)total);
}

/* The seed base of arm `arm` (0 on, 1 off, 2 control): the arms' seed
 * ranges [base, base + n) never overlap (n < 2^28), and every base stays
 * below 2^31 for engines that take a signed 32-bit seed. */
static uint64_t arm_seed_base(uint64_t seed, int arm) {
    return ((uint64_t)arm << 29) + (verify_run_seed(seed, arm, 0) & ((1u << 28) - 1));
}

static const char *const arm_names[3] = {"on", "off", "control"};

static int read_file_arm(const audit_args *a, int arm, int V, audit_samples *s) {
    sp_error err;
    FILE *f = regular_fopen(a->files[arm], NULL, &err); /* a FIFO would wait for a writer forever */
    if (!f) {
        fprintf(stderr, "specula audit: --samples-%s %s\n", arm_names[arm], err.msg);
        return EXIT_BAD_INPUT;
    }
    int rc = audit_samples_read(s, f, a->files[arm], V, 0, &err);
    fclose(f);
    if (rc) {
        fprintf(stderr, "specula audit: %s\n", err.msg);
        return 2;
    }
    if (s->n == 0) {
        fprintf(stderr, "specula audit: --samples-%s %s has no samples\n", arm_names[arm], a->files[arm]);
        return EXIT_BAD_INPUT;
    }
    if (!a->n_given) return 0; /* every line; the arms are cut to the shortest in run() */
    if (s->n < a->n) {
        fprintf(stderr, "specula audit: %s has %d samples, --samples asks for %d\n", a->files[arm], s->n, a->n);
        return 2;
    }
    s->n = a->n; /* the first n, so the three arms are of one size */
    return 0;
}

/* Draws (or reads) arm `arm` into s. */
static int draw_arm(audit_args *a, loaded_models *lm, int arm, audit_samples *s) {
    const int V = models_config(lm)->vocab_size;
    audit_samples_init(s, a->L);
    if (a->source == AUDIT_SOURCE_FILES) return read_file_arm(a, arm, V, s);
    sampler_params sp = a->spec.sampling;
    if (arm == 2) sp.temperature = a->control_temperature;
    uint64_t base = arm_seed_base(a->spec.seed, arm);
    sp_error err;
    int rc;
    char label[32];
    snprintf(label, sizeof label, "arm %s", arm_names[arm]);
    if (!a->quiet)
        fprintf(stderr, "specula audit: drawing arm %s (%d samples of %d tokens)\n", arm_names[arm], a->n, a->L);
    if (a->source == AUDIT_SOURCE_CMD) {
        rc = audit_exec_draw(a->engine_cmd, arm_names[arm], a->n, &sp, base, a->prompt, a->n_prompt, V, s, &err);
    } else {
        method_spec spec = arm == 1 ? audit_specula_off(&a->spec) : a->spec;
        spec.sampling = sp;
        rc = audit_specula_draw(&spec, &lm->parts, a->prompt, a->n_prompt, base, a->n, a->quiet ? NULL : progress,
                                label, s, arm == 0 ? &a->drafting : NULL, &err);
    }
    if (rc) {
        fprintf(stderr, "specula audit: %s\n", err.msg);
        return AUDIT_EXIT_ERROR;
    }
    return 0;
}

static int save_arm(const char *dir, int arm, const audit_samples *s) {
    char path[4200];
    snprintf(path, sizeof path, "%s/%s.txt", dir, arm_names[arm]);
    atomic_file f; /* whole or not at all, like every file specula writes */
    sp_error err;
    if (atomic_open(&f, path, &err)) {
        fprintf(stderr, "specula audit: %s\n", err.msg);
        return AUDIT_EXIT_ERROR;
    }
    if (audit_samples_write(s, f.f, &err)) {
        atomic_abort(&f);
        fprintf(stderr, "specula audit: %s: %s\n", path, err.msg);
        return AUDIT_EXIT_ERROR;
    }
    if (atomic_commit(&f, &err)) {
        fprintf(stderr, "specula audit: %s\n", err.msg);
        return AUDIT_EXIT_ERROR;
    }
    return 0;
}

/* The folder of --save-samples made (one level, as before) and each arm's file creatable beside the others. */
static int check_save_dir(const audit_args *a) {
    char paths[3][4200];
    const char *outs[3];
    mkdir(a->save_dir, 0777);
    for (int arm = 0; arm < 3; arm++) {
        snprintf(paths[arm], sizeof paths[arm], "%s/%s.txt", a->save_dir, arm_names[arm]);
        outs[arm] = paths[arm];
    }
    return outputs_check("audit", outs, 3, a->model_dir, a->files, 3);
}

static int law_arm(const audit_args *a, loaded_models *lm, int arm, const audit_samples *s, audit_pit *pit) {
    char label[32];
    snprintf(label, sizeof label, "law of arm %s", arm_names[arm]);
    audit_pit_init(pit, a->L);
    sp_error err;
    if (audit_law_pit(lm->parts.target, a->prompt, a->n_prompt, &a->spec.sampling, a->banned, a->n_banned, s,
                      verify_run_seed(a->spec.seed, 10 + arm, 0), a->quiet ? NULL : progress, label, pit, &err)) {
        fprintf(stderr, "specula audit: %s\n", err.msg);
        return AUDIT_EXIT_ERROR;
    }
    return 0;
}

static int run(audit_args *a, loaded_models *lm) {
    audit_samples arms[3];
    audit_pit pits[3];
    int have_pits = 0, status = 0;
    memset(arms, 0, sizeof arms);
    memset(pits, 0, sizeof pits);
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (int arm = 0; arm < 3 && !status; arm++) status = draw_arm(a, lm, arm, &arms[arm]);
    if (!status && a->source == AUDIT_SOURCE_FILES && !a->n_given) {
        a->n = arms[0].n;
        for (int arm = 1; arm < 3; arm++) a->n = arms[arm].n < a->n ? arms[arm].n : a->n;
        for (int arm = 0; arm < 3; arm++) arms[arm].n = a->n;
    }
    if (!status && a->save_dir) {
        mkdir(a->save_dir, 0777);
        for (int arm = 0; arm < 3 && !status; arm++) status = save_arm(a->save_dir, arm, &arms[arm]);
    }
    clock_gettime(CLOCK_MONOTONIC, &t1);
    a->draw_seconds = (double)(t1.tv_sec - t0.tv_sec) + 1e-9 * (double)(t1.tv_nsec - t0.tv_nsec);
    if (!status && !a->no_law) {
        for (int arm = 0; arm < 3 && !status; arm++) status = law_arm(a, lm, arm, &arms[arm], &pits[arm]);
        have_pits = !status;
    }
    clock_gettime(CLOCK_MONOTONIC, &t0);
    a->law_seconds = (double)(t0.tv_sec - t1.tv_sec) + 1e-9 * (double)(t0.tv_nsec - t1.tv_nsec);
    audit_report r;
    sp_error err;
    if (!status) {
        if (audit_run(&arms[0], &arms[1], &arms[2], models_config(lm)->vocab_size, have_pits ? &pits[0] : NULL,
                      have_pits ? &pits[1] : NULL, have_pits ? &pits[2] : NULL, &a->opt, &r, &err)) {
            fprintf(stderr, "specula audit: %s\n", err.msg);
            status = AUDIT_EXIT_ERROR;
        } else {
            /* samples of a method that hardly drafted test plain sampling, not the method */
            if (r.verdict != AUDIT_FAILED && a->source == AUDIT_SOURCE_SPECULA &&
                method_has(&a->spec, METHOD_PROPOSES) && !audit_drafting_enough(&a->drafting))
                r.verdict = AUDIT_UNTESTED;
            if (a->json)
                audit_print_json(a, &r, stdout);
            else
                audit_print_table(a, &r, stdout);
            status = r.verdict == AUDIT_UNTESTED ? AUDIT_UNDERPOWERED : (int)r.verdict; /* exit 3: not concluded */
            audit_report_free(&r);
        }
    }
    for (int arm = 0; arm < 3; arm++) {
        audit_samples_free(&arms[arm]);
        if (pits[arm].bins) audit_pit_free(&pits[arm]);
    }
    return status;
}

int cmd_audit(int argc, char **argv) {
    audit_args a;
    int rc = parse(argc, argv, &a);
    if (rc) return rc == 1 ? 0 : rc;
    const char *dir = a.models.model_dir ? a.models.model_dir : default_model_dir();
    /* specula's own engine needs its method's companions; an external
     * engine or sample files need the target only, for the vocabulary and
     * the law */
    const int own = a.source == AUDIT_SOURCE_SPECULA;
    loaded_models lm;
    if (models_load(&lm, &a.models, own && method_has(&a.spec, METHOD_DRAFT_MODEL) ? COMPANION_NEEDED : COMPANION_NO,
                    own && method_has(&a.spec, METHOD_HEADS) ? COMPANION_NEEDED : COMPANION_NO, "audit"))
        return EXIT_BAD_INPUT;
    rc = prompt_ids(&a, dir, models_config(&lm)->vocab_size);
    if (!rc && a.banned_text &&
        arg_tokens("--ban-tokens", a.banned_text, models_config(&lm)->vocab_size, &a.banned, &a.n_banned))
        rc = 2;
    if (!rc) rc = context_check(models_config(&lm), NULL, a.n_prompt, "--length", a.L, "audit");
    a.model_dir = dir;
    if (!rc && a.save_dir) rc = check_save_dir(&a) ? EXIT_BAD_INPUT : 0; /* before the draws, not after them */
    if (!rc) rc = run(&a, &lm);
    free(a.prompt);
    free(a.banned);
    models_release(&lm);
    return rc;
}
