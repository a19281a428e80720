/* cmd_plot.c — `specula plot`: measures the speculative methods on the
 * embedded models (or the ones given), writes every plot's data file and
 * gnuplot script, and draws them through gnuplot when it is installed. The
 * large model's figures come from its config alone. */
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "args.h"
#include "bench_batch.h"
#include "commands.h"
#include "footprint.h"
#include "method_cli.h"
#include "outputs.h"
#include "plots/plots.h"
#include "tokenizer.h"

#define MAX_TEMPERATURES 8

/* Prompts in the embedded corpus's style; token prompts stand in when the
 * model has no tokenizer.json. */
static const char *const text_prompts[] = {
    "ROMEO:\n",
    "JULIET:\nO Romeo, Romeo! wherefore art thou",
    "First Citizen:\nBefore we proceed any further, hear me speak.\n",
    "KING RICHARD III:\nNow is the winter of our discontent\n",
    "MENENIUS:\nWhat work's, my countrymen, in hand?",
    "DUKE VINCENTIO:\n",
    "LADY MACBETH:\nOut, damned spot!",
    "HAMLET:\nTo be, or not to be, that is the question:\n",
};
#define N_TEXT_PROMPTS (int)(sizeof text_prompts / sizeof text_prompts[0])

typedef struct {
    const char *out, *term, *big_dir;
    model_flags models;
    method_spec base; /* the method flags every measured point is built from */
    int measure, prompts;
    double temperatures[MAX_TEMPERATURES];
    int n_temperatures;
    plot_measure_opts mo;
    roofline_device device;
    double alpha;
    int context;
    const char *extra_path; /* --extra */
    plot_extra extra;
} plot_args;

/* Method flags plot sets itself, per point. */
static const char *const refused[] = {"--temperature", "--max-tokens", "--no-eos", NULL};

static void usage(FILE *f) {
    fprintf(f,
            "usage: specula plot [options]\n"
            "Writes the plots of expected tokens per target pass against the acceptance rate, with\n"
            "points measured on real models: every plot as NAME.dat (data, columns described in its\n"
            "header) + NAME.gp (gnuplot script) + NAME.png and NAME.svg.\n"
            "  (a) tokens_per_pass  E(α,k) for k = 1…8, its Monte-Carlo check, the measured runs\n"
            "  (b) acceptance       measured acceptance per draft position, per method and temperature\n"
            "  (c) speedup_k        expected speed-up against k for a few (α, c), best k marked\n"
            "  (d) bytes_per_token  weight bytes per committed token against k (embedded pair, large model)\n"
            "  (e) speedup_batch    a roofline model of the speed-up against batch size, and the MTP speed-up\n"
            "                       measured on the CPU engine at B = 1, 2, 4, 8 (when MODEL has an MTP module)\n"
            "options:\n"
            "  --out DIR            output folder (default build/plots)\n"
            "  --term T             png | svg | both (default) | dumb (draws (a) in this terminal) |\n"
            "                       none (data and scripts only)\n"
            "  --model DIR          target (default %s)\n"
            "  --draft DIR          draft model (default MODEL-draft when it exists)\n"
            "  --medusa FILE        Medusa heads (default MODEL-medusa/medusa_heads.safetensors when it exists)\n"
            "  --backend NAME       reference (default) | cpu, with --threads N, --dtype bf16|f32\n"
            "  --no-measure         the formulas only: no generations\n"
            "  --extra FILE         points of your own on (a): LABEL ALPHA TOKENS_PER_PASS a line, '#' comments\n"
            "  --method NAME        also measure this method (one that drafts without a model of its own: lookup,\n"
            "                       bigram, plugin:PATH[:ARGS]) beside the draft model, MTP and Medusa\n"
            "  --temperatures LIST  temperatures of the measured runs (default 0,0.7,1)\n"
            "  --prompts N          prompts per temperature, 1..%d (default 6)\n"
            "  --tokens N           tokens per generation (default 96)\n"
            "  --big DIR            config of the large model for (d) and (e) (default models/qwen3.8-27b)\n"
            "  --alpha A            acceptance rate assumed by the batch model (default 0.8)\n"
            "  --context N          context length assumed by the batch model (default 4096)\n"
            "  --bandwidth TBPS     memory bandwidth assumed, TB/s (default 4.8, H200 datasheet)\n"
            "  --tflops T           dense bf16 peak assumed, TFLOP/s (default 989, H200 datasheet)\n"
            "Progress of the measured runs goes to stderr. gnuplot (Debian: gnuplot-nox) draws the\n"
            "images; without it the data and scripts are still written.\n"
            "The measured methods take the method flags of `specula generate` (and `bench`), with the\n"
            "same defaults; --seed also seeds the simulation, and run i of a point uses seed + i:\n",
            default_model_dir(), N_TEXT_PROMPTS);
    method_spec_usage(f, METHOD_PROPOSES, METHOD_MAY_IDLE, refused);
}

/* "0,0.7,1" → temperatures. */
static int parse_temperatures(const char *text, plot_args *a) {
    char buf[256];
    snprintf(buf, sizeof buf, "%s", text);
    a->n_temperatures = 0;
    for (char *save = NULL, *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        float t;
        if (a->n_temperatures == MAX_TEMPERATURES) {
            fprintf(stderr, "specula plot: --temperatures takes at most %d values\n", MAX_TEMPERATURES);
            return -1;
        }
        if (arg_float("--temperatures", tok, 0, 100, &t)) return -1;
        a->temperatures[a->n_temperatures++] = t;
    }
    if (!a->n_temperatures) {
        fprintf(stderr, "specula plot: --temperatures needs at least one value\n");
        return -1;
    }
    return 0;
}

static int parse(int argc, char **argv, plot_args *a) {
    memset(a, 0, sizeof *a);
    a->models = model_flags_defaults(BACKEND_REFERENCE); /* the figures of the docs are the reference's */
    a->out = "build/plots";
    a->term = "both";
    a->measure = 1;
    a->prompts = 6;
    a->mo.tokens = 96;
    a->base = method_spec_defaults();
    a->device = roofline_h200();
    a->alpha = 0.8;
    a->context = 4096;
    a->temperatures[0] = 0, a->temperatures[1] = 0.7, a->temperatures[2] = 1.0;
    a->n_temperatures = 3;
    int custom_device = 0;
    for (int i = 1; i < argc; i++) {
        const char *f = argv[i], *v = NULL;
        float x;
#define VALUE()                                                                                                        \
    if (!(v = arg_value(argc, argv, &i))) return 2
        if (!strcmp(f, "--help") || !strcmp(f, "-h")) {
            usage(stdout);
            return 1;
        } else if (!strcmp(f, "--out")) {
            VALUE();
            a->out = v;
        } else if (!strcmp(f, "--term")) {
            VALUE();
            if (!strcmp(v, "pngcairo")) v = "png";
            if (strcmp(v, "png") && strcmp(v, "svg") && strcmp(v, "both") && strcmp(v, "dumb") && strcmp(v, "none")) {
                fprintf(stderr, "specula plot: --term expects png, svg, both, dumb or none, got '%s'\n", v);
                return 2;
            }
            a->term = v;
        } else if (!strcmp(f, "--big")) {
            VALUE();
            a->big_dir = v;
        } else if (!strcmp(f, "--extra")) {
            VALUE();
            a->extra_path = v;
        } else if (!strcmp(f, "--no-measure")) {
            a->measure = 0;
        } else if (!strcmp(f, "--temperatures")) {
            VALUE();
            if (parse_temperatures(v, a)) return 2;
        } else if (!strcmp(f, "--prompts")) {
            VALUE();
            if (arg_int(f, v, 1, N_TEXT_PROMPTS, &a->prompts)) return 2;
        } else if (!strcmp(f, "--tokens")) {
            VALUE();
            if (arg_int(f, v, 2, 1 << 16, &a->mo.tokens)) return 2;
        } else if (!strcmp(f, "--alpha")) {
            VALUE();
            if (arg_float(f, v, 0, 1, &x)) return 2;
            a->alpha = x;
        } else if (!strcmp(f, "--context")) {
            VALUE();
            if (arg_int(f, v, 0, 1 << 24, &a->context)) return 2;
        } else if (!strcmp(f, "--bandwidth")) {
            VALUE();
            if (arg_float(f, v, 1e-3, 1e3, &x)) return 2;
            a->device.bandwidth = x * 1e12;
            custom_device = 1;
        } else if (!strcmp(f, "--tflops")) {
            VALUE();
            if (arg_float(f, v, 1e-3, 1e6, &x)) return 2;
            a->device.peak_flops = x * 1e12;
            custom_device = 1;
        } else {
            const int rc = method_cli_flag(&a->base, &a->models, argc, argv, &i, "plot");
            if (rc < 0) return 2;
            if (rc == 0) {
                fprintf(stderr, "specula plot: unknown option '%s' (`specula plot --help` for the options)\n", f);
                return 2;
            }
        }
#undef VALUE
    }
    static const char *const beam_flags[] = {"--beams", "--length-penalty", "--early-stopping", "--num-return", NULL};
    static const char *const lookup_flags[] = {"--ngram", NULL};
    if (model_flags_backend_check(&a->models, "plot") ||
        method_cli_refuse(&a->base, refused, "plot measures each method at --temperatures for --tokens tokens",
                          "plot") ||
        method_cli_refuse(&a->base, beam_flags, "plot measures no beam search", "plot") ||
        (!method_spec_given(&a->base, "--method") &&
         method_cli_refuse(&a->base, lookup_flags, "--ngram is prompt lookup's: give --method lookup", "plot")))
        return 2;
    if (method_spec_given(&a->base, "--method") &&
        (!method_has(&a->base, METHOD_PROPOSES) || method_has(&a->base, METHOD_DRAFT_MODEL) ||
         method_has(&a->base, METHOD_MTP_MODULE) || method_has(&a->base, METHOD_HEADS))) {
        fprintf(stderr, "specula plot: --method adds a method that drafts to the draft model, MTP and Medusa, which "
                        "are measured whenever the model has them (lookup, bigram, a plug-in)\n");
        return 2;
    }
    if (custom_device) a->device.name = "custom device (--bandwidth/--tflops)";
    a->mo.temperatures = a->temperatures;
    a->mo.n_temperatures = a->n_temperatures;
    a->mo.seed = a->base.seed;
    a->mo.progress = 1;
    return 0;
}

/* The longest prompt and --tokens within the model's context (2 if not). */
static int prompts_fit(const plot_prompts *p, const model_config *c, int tokens) {
    int longest = 0;
    for (int i = 0; i < p->n; i++)
        if (p->len[i] > longest) longest = p->len[i];
    return context_check(c, NULL, longest, "--tokens", tokens, "plot");
}

/* The prompts as ids: text through MODEL/tokenizer.json when it is there
 * (the ids must fit the model's vocabulary), else fixed token sequences;
 * each with --tokens after it within the context. 0, or the exit status. */
static int build_prompts(const char *dir, const model_config *c, int n, int tokens, plot_prompts *p) {
    const int V = c->vocab_size;
    char path[4200];
    snprintf(path, sizeof path, "%s/tokenizer.json", dir);
    p->n = n;
    p->ids = calloc((size_t)n, sizeof *p->ids);
    p->len = calloc((size_t)n, sizeof *p->len);
    if (!p->ids || !p->len) return 1;
    tokenizer tok;
    sp_error err;
    const int have_tok = access(path, R_OK) == 0;
    if (have_tok && tokenizer_load(&tok, path, &err)) { /* broken, not absent: no silent token prompts */
        fprintf(stderr, "specula plot: %s\n", err.msg);
        return EXIT_BAD_INPUT;
    }
    for (int i = 0; i < n; i++) {
        if (have_tok) {
            if (tokenizer_encode(&tok, text_prompts[i], strlen(text_prompts[i]), &p->ids[i], &p->len[i], &err)) {
                fprintf(stderr, "specula plot: prompt %d: %s\n", i, err.msg);
                tokenizer_free(&tok);
                return EXIT_BAD_INPUT;
            }
            for (int t = 0; t < p->len[i]; t++)
                if (p->ids[i][t] >= V) {
                    fprintf(stderr, "specula plot: %s gives token %d, outside the model's vocabulary of %d\n", path,
                            p->ids[i][t], V);
                    tokenizer_free(&tok);
                    return EXIT_BAD_INPUT;
                }
        } else {
            /* 3..6 tokens: at least two, so the MTP module has a hidden state to start from */
            p->len[i] = 3 + i % 4;
            p->ids[i] = calloc((size_t)p->len[i], sizeof(int));
            if (!p->ids[i]) return 1;
            for (int t = 0; t < p->len[i]; t++) p->ids[i][t] = (i * 7 + t * 3 + 1) % V;
        }
    }
    if (have_tok) tokenizer_free(&tok);
    if (prompts_fit(p, c, tokens)) return EXIT_BAD_INPUT;
    fprintf(stderr, "specula plot: %d %s prompts\n", n, have_tok ? "text" : "token");
    return 0;
}

static void free_prompts(plot_prompts *p) {
    for (int i = 0; p->ids && i < p->n; i++) free(p->ids[i]);
    free(p->ids);
    free(p->len);
}

/* The folder that holds the default model (the models/ of the source tree). */
static void models_root(char *buf, size_t size) {
    char tmp[4096];
    snprintf(tmp, sizeof tmp, "%s", default_model_dir());
    snprintf(buf, size, "%s", dirname(tmp));
}

static const char *base_name(const char *path, char *buf, size_t size) {
    char tmp[4096];
    snprintf(tmp, sizeof tmp, "%s", path);
    size_t n = strlen(tmp);
    while (n > 1 && tmp[n - 1] == '/') tmp[--n] = '\0';
    snprintf(buf, size, "%s", basename(tmp));
    return buf;
}

/* The images of the written plots in the format asked for; 0, or 1 after
 * printing why. */
static int draw(const plot_args *a, const int *written) {
    sp_error err;
    if (!strcmp(a->term, "none")) return 0;
    if (!plots_have_gnuplot()) {
        fprintf(stderr,
                "specula plot: gnuplot is not installed, so no images were drawn; the .dat and .gp files are in "
                "%s/ (Debian: apt-get install gnuplot-nox, or `make deps`)\n",
                a->out);
        return 1;
    }
    if (!strcmp(a->term, "dumb")) {
        if (plots_render(a->out, plots_names[0], "dumb", &err)) {
            fprintf(stderr, "specula plot: %s\n", err.msg);
            return 1;
        }
        return 0;
    }
    static const char *const fmts[2] = {"png", "svg"};
    for (int i = 0; i < PLOTS_COUNT; i++) {
        if (!written[i]) continue;
        for (int j = 0; j < 2; j++) {
            if (strcmp(a->term, "both") && strcmp(a->term, fmts[j])) continue;
            if (plots_render(a->out, plots_names[i], fmts[j], &err)) {
                fprintf(stderr, "specula plot: %s\n", err.msg);
                return 1;
            }
            printf("%s/%s.%s\n", a->out, plots_names[i], fmts[j]);
        }
    }
    return 0;
}

/* (e)'s measured points, on the CPU engine whatever --backend says (the passes over several sequences are the
 * engine's); none, with a line saying why, when the model has no MTP module. 0, or the exit status. */
static int measure_batch(const char *dir, const plot_args *a, plot_batch_points *out) {
    sp_error err;
    const int threads = a->models.backend == BACKEND_CPU ? a->models.threads : 1;
    const int rc = plot_batch_measure(dir, threads, out, &err);
    if (rc < 0) fprintf(stderr, "specula plot: %s\n", err.msg);
    if (rc > 0) fprintf(stderr, "specula plot: no measured points on plot (e): %s has no MTP module\n", dir);
    return rc < 0 ? 1 : 0;
}

int cmd_plot(int argc, char **argv) {
    plot_args a;
    int rc = parse(argc, argv, &a);
    if (rc) return rc == 1 ? 0 : rc;
    const char *dir = a.models.model_dir ? a.models.model_dir : default_model_dir();
    char root[4096], big_default[4200], name[256], pair_name[600], big_name[600];
    models_root(root, sizeof root);
    snprintf(big_default, sizeof big_default, "%s/qwen3.8-27b", root);
    if (!a.big_dir) a.big_dir = big_default;

    plot_theory t;
    memset(&t, 0, sizeof t);
    t.device = a.device;
    t.batch_alpha = a.alpha;
    t.mc_rounds = 20000;
    t.mc_seed = a.mo.seed;
    if (a.extra_path) {
        sp_error xerr;
        if (plots_extra_read(a.extra_path, &a.extra, &xerr)) {
            fprintf(stderr, "specula plot: %s\n", xerr.msg);
            return EXIT_BAD_INPUT;
        }
        t.extra = &a.extra;
    }

    /* the folder made and a file creatable in it before minutes of measuring, not after */
    char probe[4200];
    snprintf(probe, sizeof probe, "%s/measured.dat", a.out);
    const char *outs[] = {probe}, *inputs[] = {a.extra_path};
    sp_error derr;
    if (plots_make_dir(a.out, &derr)) {
        fprintf(stderr, "specula plot: %s\n", derr.msg);
        return EXIT_BAD_INPUT;
    }
    if (outputs_check("plot", outs, 1, NULL, inputs, 1)) return EXIT_BAD_INPUT;

    /* the models: measured points and the embedded pair's bytes */
    loaded_models lm;
    int have_target = 0, status = 0;
    sp_error err;
    if (models_load_target(&lm, &a.models, &err) == 0) {
        have_target = 1;
    } else if (a.models.model_dir) { /* named, so required */
        fprintf(stderr, "specula plot: %s\n", err.msg);
        return EXIT_BAD_INPUT;
    } else {
        fprintf(stderr, "specula plot: no measured points or embedded-pair curves: %s\n", err.msg);
    }
    if (have_target) {
        if (models_load_companions(&lm, &a.models, COMPANION_PRESENT, COMPANION_IF_FITS, "plot")) return EXIT_BAD_INPUT;
        if (method_spec_given(&a.base, "--tree") && !lm.have_heads) {
            fprintf(stderr, "specula plot: --tree given, but there are no Medusa heads to run it with\n");
            models_release(&lm);
            return EXIT_BAD_INPUT;
        }
        const decode_target *target = lm.parts.target;
        t.pair_target_bytes = target->weight_bytes_per_pass;
        t.pair_draft_bytes = lm.parts.draft ? lm.parts.draft->bytes_per_step : 0;
        t.pair_mtp_bytes = lm.parts.mtp ? lm.parts.mtp->bytes_per_step : 0;
        snprintf(pair_name, sizeof pair_name, "%s%s (%s)", base_name(dir, name, sizeof name),
                 lm.have_draft ? " + its draft" : "",
                 target->storage_bytes == 2 ? "16-bit weights" : "float32 weights");
        t.pair_name = pair_name;
    }

    /* the large model, from its config alone, in bf16 */
    model_config big;
    if (config_load(a.big_dir, &big, &err) == 0) {
        model_footprint fp;
        footprint_compute(&big, big.mtp_num_layers > 0, 2.0, 2.0, &fp);
        t.big_target_bytes = fp.weight_bytes_per_step;
        t.big_mtp_bytes = fp.mtp_bytes_per_step;
        snprintf(big_name, sizeof big_name, "%s, bf16 weights", base_name(a.big_dir, name, sizeof name));
        if (!strcmp(name, "qwen3.8-27b")) snprintf(big_name, sizeof big_name, "Qwen3.8-27B + MTP layer, bf16 weights");
        t.big_name = big_name;
        roofline_workload_build(&big, 2.0, 2.0, a.context, &t.big_workload);
    } else {
        fprintf(stderr, "specula plot: no large-model curves: %s\n", err.msg);
    }

    plot_measurements m;
    memset(&m, 0, sizeof m);
    if (have_target && a.measure) {
        plot_prompts prompts;
        memset(&prompts, 0, sizeof prompts);
        if ((status = build_prompts(dir, models_config(&lm), a.prompts, a.mo.tokens, &prompts)) != 0) {
        } else if (plots_measure(&lm.parts, &a.base, &prompts, &a.mo, &m, &err)) {
            fprintf(stderr, "specula plot: %s\n", err.msg);
            status = 1;
        } else if ((status = measure_batch(dir, &a, &m.batch)) != 0) {
            plots_measurements_free(&m);
        }
        free_prompts(&prompts);
    }
    if (have_target) models_release(&lm);
    if (status) return status;

    int written[PLOTS_COUNT];
    if (plots_write(a.out, &t, &m, written, &err)) {
        fprintf(stderr, "specula plot: %s\n", err.msg);
        plots_measurements_free(&m);
        return 1;
    }
    plots_measurements_free(&m);
    fprintf(stderr, "specula plot: data and scripts written to %s/\n", a.out);

    return draw(&a, written);
}
