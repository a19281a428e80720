/* cmd_verify.c — `specula verify`: the statistical check that every decoding method emits the target's law
 * (verify/verify_cases.h), on random micro models written into a scratch directory. One table row per case: the
 * test, the TV upper bound and the negative control; --json prints the rows as one JSON object. */
#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "args.h"
#include "beam_law.h"
#include "commands.h"
#include "csv.h"
#include "genmodel/randmodel.h"
#include "stats.h"
#include "registry.h"
#include "verify_cases.h"
#include "verify_coverage.h"

typedef struct {
    const char *only;         /* --method: a method name or a case name */
    const char *flags;        /* --flags: any method, in generate's flags */
    const verify_case *cases; /* the catalogue, or the rows of --flags */
    int all, list, plan, coverage, json, csv, quiet;
    int engine;                       /* --backend cpu: the cases run on the CPU engine */
    int engine_f32;                   /* --dtype f32: the engine in its exact cross-test mode (else its default) */
    int64_t samples, control_samples; /* 0: planned per case (verify_case_plan) */
    double scale;
    uint64_t seed, model_seed;
    float alpha, tv_max, delta;
} verify_args;

static void usage(FILE *f) {
    fprintf(
        f,
        "usage: specula verify [options]\n"
        "Tests that every decoding method emits exactly the target's distribution: n generations of\n"
        "L tokens per case against the law enumerated over all V^L sequences (G-test, Holm-corrected,\n"
        "and a total-variation upper confidence bound), each beside a planted bug that the same test\n"
        "must reject. Runs on random micro models (vocabulary %d; %d for the default rows, whose windows\n"
        "hold the bonus token and the next round); takes two or three minutes of CPU. Each case's\n"
        "method is written in the flags of `specula generate` (shown by --list), built by the same\n"
        "factory as generate, bench and plot. Each case's draws are planned: power 0.99 against any\n"
        "law at total-variation distance 0.05, at the Holm level of the run (--plan shows the sizes).\n"
        "  --method NAME        only one method's default rows (sample | spec | spec-tree | mtp | mtp-tree |\n"
        "                       medusa | typical | lookup | beam; with --all its whole grid), or one case by name\n"
        "                       (see --list)\n"
        "  --flags \"FLAGS\"      any method, in the flags of generate (a built-in or --method plugin:PATH[:ARGS]):\n"
        "                       its law in the long-window world against the exact one, three times, beside\n"
        "                       three controls derived from it (q rows of another depth, q rows reported\n"
        "                       uniform, the bonus drawn from the parent); a control it does not reject is\n"
        "                       reported as a bug the test has no power against; a method that never drafts\n"
        "                       there fails\n"
        "  --all                the whole grid of tests/stat (k = 1..4, L = 2 and 3 at vocabulary %d,\n"
        "                       cuts) besides the default rows\n"
        "  --list               list the cases and exit\n"
        "  --plan               print each selected case's planned draws, its control's and its seed, and exit\n"
        "  --coverage           print what each row covers (window, method, drafts, rule, cuts, what it is held\n"
        "                       to, its controls) as a markdown table, and exit; with --all, the grid too\n"
        "  --backend B          reference (default) or cpu: the CPU engine runs the target and the\n"
        "                       draft, in its default mode (bf16 weights, the fast kernels) on bf16\n"
        "                       micro checkpoints, against the laws the reference computes on the same\n"
        "                       weights; its negative controls plant bugs in the engine's commit (beam\n"
        "                       search is checked on the reference only)\n"
        "  --dtype D            with --backend cpu: bf16 (default) or f32, the engine's exact\n"
        "                       cross-test mode (float32 weights, every sum in the reference's order)\n"
        "  --samples N          draws per case (default: each case's planned size)\n"
        "  --scale F            multiply every draw count by F (e.g. 0.1 for a quick look)\n"
        "  --control-samples N  draws per negative control (default: each control's planned size)\n"
        "  --seed N             seed of the run (default 1); each case draws with a seed derived from\n"
        "                       it and the case's name\n"
        "  --model-seed N       seed of the random micro target (the draft uses N + 1, the Medusa heads\n"
        "                       N + 2; default 1)\n"
        "  --alpha A            family-wise level of the Holm correction (default 0.001)\n"
        "  --tv-max D           require the TV upper bound <= D on rows against an exact law (default 0:\n"
        "                       report only; 0.02 needs about 200 000 draws at L = 2: --samples 200000)\n"
        "  --delta D            the TV bound holds with probability 1 - D (default 0.001)\n"
        "  --json               print the rows as JSON\n"
        "  --csv                print the rows as comma-separated values (a header row, then one row per case)\n"
        "  --quiet              no progress on stderr\n",
        VERIFY_WORLD_V, VERIFY_SMALL_V, VERIFY_WORLD_V);
}

static int parse_count(const char *flag, const char *v, int64_t *out) {
    int n;
    if (arg_int(flag, v, 100, 1 << 30, &n)) return -1;
    *out = n;
    return 0;
}

static int parse(int argc, char **argv, verify_args *a) {
    memset(a, 0, sizeof *a);
    a->scale = 1;
    a->seed = 1;
    a->model_seed = 1;
    a->alpha = 1e-3f;
    a->tv_max = 0;
    a->delta = 1e-3f;
    for (int i = 1; i < argc; i++) {
        const char *f = argv[i], *v = NULL;
        float x;
#define VALUE()                                                                                                        \
    if (!(v = arg_value(argc, argv, &i))) return 2
        if (!strcmp(f, "--help") || !strcmp(f, "-h")) {
            usage(stdout);
            return 1;
        } else if (!strcmp(f, "--method")) {
            VALUE();
            a->only = v;
        } else if (!strcmp(f, "--flags")) {
            VALUE();
            a->flags = v;
        } else if (!strcmp(f, "--all")) {
            a->all = 1;
        } else if (!strcmp(f, "--backend")) {
            VALUE();
            if (strcmp(v, "reference") && strcmp(v, "cpu")) {
                fprintf(stderr, "specula verify: --backend expects reference or cpu, got '%s'\n", v);
                return 2;
            }
            a->engine = !strcmp(v, "cpu");
        } else if (!strcmp(f, "--dtype")) {
            VALUE();
            if (strcmp(v, "bf16") && strcmp(v, "f32")) {
                fprintf(stderr, "specula verify: --dtype expects bf16 or f32, got '%s'\n", v);
                return 2;
            }
            a->engine_f32 = !strcmp(v, "f32");
        } else if (!strcmp(f, "--list")) {
            a->list = 1;
        } else if (!strcmp(f, "--plan")) {
            a->plan = 1;
        } else if (!strcmp(f, "--coverage")) {
            a->coverage = 1;
        } else if (!strcmp(f, "--samples")) {
            VALUE();
            if (parse_count(f, v, &a->samples)) return 2;
        } else if (!strcmp(f, "--control-samples")) {
            VALUE();
            if (parse_count(f, v, &a->control_samples)) return 2;
        } else if (!strcmp(f, "--scale")) {
            VALUE();
            if (arg_float(f, v, 1e-3, 1e3, &x)) return 2;
            a->scale = x;
        } else if (!strcmp(f, "--seed")) {
            VALUE();
            if (arg_u64(f, v, &a->seed)) return 2;
        } else if (!strcmp(f, "--model-seed")) {
            VALUE();
            if (arg_u64(f, v, &a->model_seed)) return 2;
        } else if (!strcmp(f, "--alpha")) {
            VALUE();
            if (arg_float(f, v, 1e-12, 0.5, &a->alpha)) return 2;
        } else if (!strcmp(f, "--tv-max")) {
            VALUE();
            if (arg_float(f, v, 0, 1, &a->tv_max)) return 2;
        } else if (!strcmp(f, "--delta")) {
            VALUE();
            if (arg_float(f, v, 1e-12, 0.5, &a->delta)) return 2;
        } else if (!strcmp(f, "--json")) {
            a->json = 1;
        } else if (!strcmp(f, "--csv")) {
            a->csv = 1;
        } else if (!strcmp(f, "--quiet")) {
            a->quiet = 1;
        } else {
            fprintf(stderr, "specula verify: unknown option '%s'\n", f);
            return 2;
        }
#undef VALUE
    }
    if (a->json && a->csv) {
        fprintf(stderr, "specula verify: give --json or --csv, not both\n");
        return 2;
    }
    if (a->flags && (a->only || a->all)) {
        fprintf(stderr, "specula verify: --flags runs its own rows: give it without --method and --all\n");
        return 2;
    }
    if (a->engine_f32 && !a->engine) {
        fprintf(stderr, "specula verify: --dtype sets the engine's mode: give it with --backend cpu\n");
        return 2;
    }
    if (a->engine && a->only && !strcmp(a->only, "beam")) {
        fprintf(stderr, "specula verify: beam search is checked on the reference only (--backend reference)\n");
        return 2;
    }
    return 0;
}

/* A draw count given or planned, times --scale. A point mass's planned
 * size (under a hundred draws) is never scaled down; anything else below
 * 100 draws is a usage error. */
static int scaled(const verify_args *a, int64_t given, int64_t planned, int point_mass, const char *what,
                  const verify_case *c, int64_t *out) {
    const int keep = given <= 0 && point_mass;
    *out = (int64_t)ceil((double)(given > 0 ? given : planned) * (keep && a->scale < 1 ? 1 : a->scale));
    if (*out >= 100 || keep) return 0;
    fprintf(stderr, "specula verify: --scale %g leaves fewer than 100 draws for %s of \"%s\"\n", a->scale, what,
            c->name);
    return 2;
}

/* --method NAME keeps that method's default rows (its whole grid with
 * --all); a case name selects exactly that case. */
static int selected(const verify_case *c, const verify_args *a) {
    if (a->flags) return 1;
    if (a->only && !strcmp(a->only, c->name)) return 1;
    if (a->only && strcmp(a->only, c->method)) return 0;
    return a->all || c->primary;
}

/* Beam search is deterministic: it is checked against its rules on the
 * exact law (beam_law.h), not by a distribution test, and on the reference
 * only. */
static int beam_selected(const verify_args *a) {
    return !a->engine && !a->flags && (!a->only || !strcmp(a->only, "beam"));
}

#define BEAM_PROMPTS 30
#define BEAM_SETTINGS 8

/* No setting may differ from the rules, and every planted slip (the negative controls) must differ in at least
 * one setting, or the comparison could not see a wrong search. */
static int beam_ok(const beam_law_report *r) {
    int ok = r->mismatches == 0;
    for (int s = 1; s < BEAM_SLIP_COUNT; s++) ok = ok && r->slip_mismatches[s] > 0;
    return ok;
}

static void print_beam(const beam_law_report *r, FILE *f) {
    fprintf(f,
            "\nbeam search against its rules on the exact law: %d settings (%d prompts x %d; width 1-5, penalty,\n"
            "early stopping, 1-3 new tokens, EOS), %d differ in hypotheses, scores or passes: %s\n",
            r->settings, BEAM_PROMPTS, BEAM_SETTINGS, r->mismatches, beam_ok(r) ? "exact" : "FAIL");
    if (r->mismatches) fprintf(f, "  first difference: %s\n", r->first_mismatch);
    fprintf(f, "  negative controls (settings where a planted slip differs, must be > 0):");
    for (int s = 1; s < BEAM_SLIP_COUNT; s++)
        fprintf(f, "%s %s %d", s > 1 ? "," : "", beam_slip_name((beam_slip)s), r->slip_mismatches[s]);
    fprintf(f, "\n");
}

static void print_beam_json(const beam_law_report *r, FILE *f) {
    fprintf(f, "\"beam\": {\"settings\": %d, \"mismatches\": %d, \"controls\": {", r->settings, r->mismatches);
    for (int s = 1; s < BEAM_SLIP_COUNT; s++)
        fprintf(f, "%s\"%s\": %d", s > 1 ? ", " : "", beam_slip_name((beam_slip)s), r->slip_mismatches[s]);
    fprintf(f, "}, \"pass\": %s}", beam_ok(r) ? "true" : "false");
}

/* ---- the micro world --------------------------------------------------------- */

static void remove_dir(const char *dir) {
    DIR *d = opendir(dir);
    if (!d) return;
    struct dirent *e;
    char path[1200];
    while ((e = readdir(d)))
        if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) {
            snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
            unlink(path);
        }
    closedir(d);
    rmdir(dir);
}

/* Writes a random micro checkpoint and loads it into m and, when e is not NULL, into an engine; the files go once
 * loaded. engine_f32: the engine in its exact cross-test mode (float32 weights, the reference's sums) on a float32
 * checkpoint; else in its default mode — bf16 weights, products in lanes, the fast attention and activations — on
 * a bf16 checkpoint, whose values the reference then holds exactly in float32, so that both run the same
 * weights and differ only in the order and width of their sums. */
static int write_and_load(model *m, engine *e, int engine_f32, const char *root, const char *name, const char *preset,
                          uint64_t seed, void (*adjust)(model_config *), sp_error *err) {
    model_config cfg;
    if (randmodel_preset(preset, &cfg, err)) return -1;
    adjust(&cfg);
    randmodel_opts o;
    randmodel_default_opts(&o);
    o.seed = seed;
    o.dtype = e && !engine_f32 ? DTYPE_BF16 : DTYPE_F32;
    char dir[1100];
    snprintf(dir, sizeof dir, "%s/%s", root, name);
    int rc = randmodel_write(dir, &cfg, &o, NULL, err) || model_load(m, dir, err);
    if (!rc && e) {
        engine_options eo = engine_defaults();
        eo.f32_weights = engine_f32;
        if ((rc = engine_open(e, dir, &eo, err))) model_free(m);
    }
    remove_dir(dir); /* the weights are in memory (or mapped) now */
    return rc ? -1 : 0;
}

/* ---- progress ---------------------------------------------------------------- */

typedef struct {
    int index, total;
    const char *name;
    double last;
    int quiet, tty;
} progress_state;

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* On a terminal one line per sample, rewritten about once a second; in a
 * log, one line per finished sample. */
static void on_progress(void *user, int64_t done, int64_t total) {
    progress_state *p = user;
    double t = now_s();
    if (p->quiet || (done < total && (!p->tty || t - p->last < 1.0))) return;
    p->last = t;
    fprintf(stderr, "%s  [%d/%d] %-34s %9lld / %-9lld%s", p->tty ? "\r" : "", p->index, p->total, p->name,
            (long long)done, (long long)total, done == total ? "\n" : "");
    fflush(stderr);
}

/* ---- output ------------------------------------------------------------------ */

typedef struct {
    const verify_case *c;
    enum_table exact;     /* the law it is checked against */
    verify_plan plan;     /* its planned sizes */
    int64_t n, control_n; /* the sizes it runs at: planned, or given, times --scale */
    uint64_t seed;        /* verify_case_seed of the run's --seed */
    verify_case_outcome o;
    double seconds;
    int ok;
    char why[160];                       /* the verdict */
    const char *method_why, *control_why; /* its two parts: the method's test, its control's */
    double rule_bias;                    /* a row held to its rule's own law: TV(rule's law, target's); else NAN */
    double engine_gap, gap_control;      /* the engine's default mode: TV(its law, the reference's), and the gap
                                          * check's control (verify_case_engine_gap); else NAN */
} row;

static const char *pair_text(const verify_case *c, int on_engine) {
    if (verify_case_follows_rule_law(c)) return on_engine ? "engine vs rule's law" : "reference vs rule's law";
    if (on_engine) return c->pair == VC_VS_SAMPLE ? "engine vs engine" : "engine vs exact";
    return c->pair == VC_VS_SAMPLE ? "reference vs reference" : "reference vs exact";
}

/* The p-value that joins the Holm family: the method's own for an exact
 * method; for a rule known to be biased, its control's (the exact rule on
 * the same drafts, which must pass). */
static double family_p(const row *r) {
    return r->c->expect_biased ? r->o.control.test.p_value : r->o.result.test.p_value;
}

/* A lower confidence bound on the TV distance (for a biased rule: how big
 * its bias is at least), at the same confidence as the upper bound. */
static double tv_lower(const verify_result *x) {
    double lo = x->tv.observed - x->tv.deviation;
    return lo > 0 ? lo : 0;
}

/* The row's verdict, in two parts: what the method's test found, and what its control's says about the test's
 * power. A control that is not rejected does not make the method wrong: it means this row could not have seen a bug
 * of that kind, and the row fails for that reason, said as such. */
static void judge(row *r, const verify_args *a) {
    const verify_result *m = &r->o.result;
    r->ok = 1;
    if (r->c->expect_biased) {
        r->method_why = "biased, as expected";
        r->control_why = "the exact rule on the same drafts passes";
        if (m->test.p_value >= VERIFY_CONTROL_P) r->ok = 0, r->method_why = "FAIL: bias not detected";
        if (r->o.p_holm < a->alpha) r->ok = 0, r->control_why = "FAIL: the exact control differs";
    } else {
        r->method_why = "exact";
        if (method_has(&r->c->spec, METHOD_PROPOSES) && r->o.drafted == 0)
            r->ok = 0, r->method_why = "FAIL: it never drafted (tested as plain sampling)";
        /* required only when --tv-max asks for it (a planned size bounds TV near 0.06 at L = 2), and
         * only against an exact law: a two-sample bound is about twice as wide at the same size */
        if (a->tv_max > 0 && r->c->pair == VC_EXACT && m->tv.upper > a->tv_max)
            r->ok = 0, r->method_why = "FAIL: TV bound too wide";
        if (r->o.p_holm < a->alpha) r->ok = 0, r->method_why = "FAIL: law differs";
        if (r->engine_gap > VERIFY_ENGINE_TV_MAX) /* the engine follows its own law, which is not the reference's */
            r->ok = 0, r->method_why = "FAIL: the engine's law is not the reference's";
        r->control_why = "rejected";
        if (r->o.control.test.p_value >= VERIFY_CONTROL_P) {
            if (r->c->generic) /* derived from the method, not written for it: reported, not failed */
                r->control_why = "not rejected: no power against it";
            else
                r->ok = 0, r->control_why = "FAIL: the test lost its power (control not rejected)";
        }
        if (r->gap_control >= 0 && r->gap_control <= VERIFY_ENGINE_TV_MAX)
            r->ok = 0, r->control_why = "FAIL: the engine's gap check lost its power";
    }
    /* the one-line verdict: the method's, and the control's when it failed or says something */
    const int control_failed = !strncmp(r->control_why, "FAIL", 4), method_failed = !strncmp(r->method_why, "FAIL", 4);
    if (control_failed && method_failed)
        snprintf(r->why, sizeof r->why, "%s; %s", r->method_why, r->control_why + 6);
    else if (control_failed)
        snprintf(r->why, sizeof r->why, "%s", r->control_why);
    else if (r->c->generic && !strncmp(r->control_why, "not rejected", 12))
        snprintf(r->why, sizeof r->why, "%s; no power against its control", r->method_why);
    else
        snprintf(r->why, sizeof r->why, "%s", r->method_why);
}

static void print_table(const row *rows, int m, const verify_args *a, FILE *f) {
    fprintf(f, "%-32s %-22s %8s %9s %5s %9s %9s %7s  %-28s %7s %9s  %s\n", "case", "pair", "samples", "statistic", "df",
            "p-value", "p (Holm)", "TV", "negative control", "ctl n", "control p", "verdict");
    for (int i = 0; i < m; i++) {
        const row *r = &rows[i];
        const verify_result *x = &r->o.result, *c = &r->o.control;
        char control[64];
        verify_case_control_text(r->c, a->engine, control, sizeof control);
        char tv[32];
        if (r->c->expect_biased)
            snprintf(tv, sizeof tv, ">=%.4f", tv_lower(x));
        else
            snprintf(tv, sizeof tv, "%.4f", x->tv.upper);
        fprintf(f, "%-32s %-22s %8lld %9.2f %5d %9.3g %9.3g %7s  %-28s %7lld %9.2g  %s\n", r->c->name,
                pair_text(r->c, a->engine), (long long)x->n, x->test.statistic, x->test.df, x->test.p_value,
                r->o.p_holm, tv, control, (long long)c->n, c->test.p_value, r->why);
    }
    int passed = 0;
    for (int i = 0; i < m; i++) passed += rows[i].ok;
    fprintf(f,
            "%d of %d cases pass. p (Holm): adjusted over the %d cases at family level %g (for a biased rule, its\n"
            "exact control's). TV: upper confidence bound at 1 - %g%s; for a biased rule, a lower bound on its bias.\n"
            "Controls (ctl n draws) must be rejected below p = %g.\n",
            passed, m, m, a->alpha, a->delta, a->tv_max > 0 ? ", required <= the --tv-max against exact laws" : "",
            VERIFY_CONTROL_P);
    double gap = -1, gap_control = INFINITY;
    for (int i = 0; i < m; i++) {
        if (isfinite(rows[i].engine_gap) && rows[i].engine_gap > gap) gap = rows[i].engine_gap;
        if (rows[i].gap_control >= 0 && rows[i].gap_control < gap_control) gap_control = rows[i].gap_control;
    }
    if (gap >= 0) {
        fprintf(f,
                "The engine's own laws (enumerated through it, in its default mode) are at most %.2g from the "
                "reference's\non the same weights (TV; each row must be <= %g",
                gap, VERIFY_ENGINE_TV_MAX);
        if (isfinite(gap_control)) fprintf(f, ", and the reference at 1.02 T lies at least %.2g away", gap_control);
        fprintf(f, ").\n");
    }
    for (int i = 0; i < m; i++)
        if (isfinite(rows[i].rule_bias))
            fprintf(f, "%s: held to its rule's own law, which lies %.4f (TV, computed) from the target's: the rule's bias.\n",
                    rows[i].c->name, rows[i].rule_bias);
}

static void json_number(FILE *f, const char *key, double v, int last) {
    if (isfinite(v))
        fprintf(f, "\"%s\": %.6g%s", key, v, last ? "" : ", ");
    else
        fprintf(f, "\"%s\": %s%s", key, v > 0 ? "\"inf\"" : "null", last ? "" : ", ");
}

static void print_json(const row *rows, int m, const verify_args *a, const beam_law_report *beam, FILE *f) {
    fprintf(f, "{\"seed\": %llu, \"model_seed\": %llu, \"alpha\": %g, \"tv_max\": %g, \"delta\": %g, \"cases\": [\n",
            (unsigned long long)a->seed, (unsigned long long)a->model_seed, a->alpha, a->tv_max, a->delta);
    for (int i = 0; i < m; i++) {
        const row *r = &rows[i];
        const verify_result *x = &r->o.result, *c = &r->o.control;
        char control[64];
        verify_case_control_text(r->c, a->engine, control, sizeof control);
        fprintf(f,
                "  {\"case\": \"%s\", \"method\": \"%s\", \"flags\": \"%s\", \"pair\": \"%s\", \"k\": %d, \"L\": %d, ",
                r->c->name, r->c->method, r->c->flags, pair_text(r->c, a->engine), r->c->k, r->c->L);
        fprintf(f, "\"seed\": \"%016llx\", \"samples\": %lld, \"cells\": %lld, \"pooled_cells\": %d, \"df\": %d, ",
                (unsigned long long)r->seed, (long long)x->n, (long long)x->cells, x->test.cells, x->test.df);
        json_number(f, "statistic", x->test.statistic, 0);
        json_number(f, "p_value", x->test.p_value, 0);
        json_number(f, "p_holm", r->o.p_holm, 0);
        json_number(f, "tv_upper", x->tv.upper, 0);
        json_number(f, "tv_observed", x->tv.observed, 0);
        json_number(f, "tv_lower", tv_lower(x), 0);
        fprintf(f, "\"expect_biased\": %s, \"rounds\": %ld, \"drafted_rounds\": %ld, ",
                r->c->expect_biased ? "true" : "false", r->o.rounds, r->o.drafted);
        fprintf(f, "\"control\": \"%s\", \"control_samples\": %lld, ", control, (long long)c->n);
        json_number(f, "control_statistic", c->test.statistic, 0);
        json_number(f, "control_p_value", c->test.p_value, 0);
        json_number(f, "seconds", r->seconds, 0);
        json_number(f, "rule_bias_tv", r->rule_bias, 0);
        json_number(f, "engine_gap_tv", r->engine_gap, 0);
        json_number(f, "engine_gap_control_tv", r->gap_control >= 0 ? r->gap_control : NAN, 0);
        fprintf(f, "\"method_verdict\": \"%s\", \"control_verdict\": \"%s\", ", r->method_why, r->control_why);
        fprintf(f, "\"pass\": %s, \"verdict\": \"%s\"}%s\n", r->ok ? "true" : "false", r->why, i + 1 < m ? "," : "");
    }
    int passed = 0;
    for (int i = 0; i < m; i++) passed += rows[i].ok;
    fprintf(f, "], \"passed\": %d, \"cases_run\": %d", passed, m);
    if (beam) {
        fprintf(f, ", ");
        print_beam_json(beam, f);
    }
    fprintf(f, "}\n");
}

static void print_csv(const row *rows, int m, const verify_args *a, FILE *f) {
    csv_header(f, "case,method,flags,pair,k,L,seed,samples,cells,df,statistic,p_value,p_holm,tv_upper,tv_lower,"
                  "expect_biased,control,control_samples,control_statistic,control_p_value,rounds,drafted_rounds,"
                  "seconds,pass,verdict");
    for (int i = 0; i < m; i++) {
        const row *r = &rows[i];
        const verify_result *x = &r->o.result, *c = &r->o.control;
        char control[64], seed[20];
        verify_case_control_text(r->c, a->engine, control, sizeof control);
        snprintf(seed, sizeof seed, "%016llx", (unsigned long long)r->seed);
        csv_text(f, r->c->name, 1);
        csv_text(f, r->c->method, 0);
        csv_text(f, r->c->flags, 0);
        csv_text(f, pair_text(r->c, a->engine), 0);
        csv_number(f, r->c->k, 0);
        csv_number(f, r->c->L, 0);
        csv_text(f, seed, 0);
        const double v1[] = {x->n,        x->cells,    x->test.df,  x->test.statistic,  x->test.p_value,
                             r->o.p_holm, x->tv.upper, tv_lower(x), r->c->expect_biased};
        for (size_t j = 0; j < sizeof v1 / sizeof v1[0]; j++) csv_number(f, v1[j], 0);
        csv_text(f, control, 0);
        const double v2[] = {c->n, c->test.statistic, c->test.p_value, r->o.rounds, r->o.drafted, r->seconds, r->ok};
        for (size_t j = 0; j < sizeof v2 / sizeof v2[0]; j++) csv_number(f, v2[j], 0);
        csv_text(f, r->why, 0);
        fputc('\n', f);
    }
}

/* ---- the command --------------------------------------------------------------- */

/* --list, or one line for a --method that matches nothing: a bad flag gets
 * one line on stderr (docs/reliability.md), the list is a command away. */
static int list_cases(const verify_args *a, int none) {
    const verify_case *all = a->cases;
    if (none) {
        fprintf(stderr, "specula verify: --method: no case matches '%s'; `specula verify --list` lists them\n",
                a->only);
        return 2;
    }
    FILE *f = stdout;
    for (const verify_case *c = all; c->name; c++) {
        char control[64];
        verify_case_control_text(c, a->engine, control, sizeof control);
        fprintf(f, "  %-7s %-32s %-23s V=%d L=%d  control: %s\n", c->primary ? "default" : "--all", c->name,
                pair_text(c, a->engine), verify_world_vocab(c->world), c->L, control);
        fprintf(f, "  %-7s   %s --max-tokens %d --no-eos", "", c->flags, c->max_tokens);
        for (int i = 0; i < c->n_prompt_ids; i++) fprintf(f, "%s%d", i ? "," : " --tokens ", c->prompt_ids[i]);
        fputc('\n', f);
    }
    if (!a->engine)
        fprintf(f, "  %-7s %-32s %-23s      controls: planted slips of the rules\n", "default", "beam",
                "beam vs its rules on the exact law");
    return 0;
}

/* The micro models, their Medusa heads and the world the cases run in: on
 * the reference, or (--backend cpu) on engines opened on the same files. */
typedef struct {
    model target, draft;
    engine te, de;
    medusa_heads heads;
    verify_world w;
    int engines, built;
} world_setup;

/* World `id` with the run's model seeds (target, draft + 1, heads + 2). */
static int build_world(world_setup *ws, verify_world_id id, const verify_args *a, sp_error *err) {
    memset(ws, 0, sizeof *ws);
    char root[] = "/tmp/specula-verify-XXXXXX";
    if (!mkdtemp(root)) return sp_fail(err, "cannot create a scratch directory under /tmp");
    engine *te = a->engine ? &ws->te : NULL, *de = a->engine ? &ws->de : NULL;
    int rc = write_and_load(&ws->target, te, a->engine_f32, root, "target", "micro", a->model_seed,
                            verify_world_config(id, 0), err);
    if (!rc)
        rc = write_and_load(&ws->draft, de, a->engine_f32, root, "draft", "micro-draft", a->model_seed + 1,
                            verify_world_config(id, 1), err);
    remove_dir(root);
    if (rc) return sp_wrap(err, "building the %s world's micro models: ", verify_world_name(id));
    ws->engines = a->engine;
    if (verify_world_heads(&ws->heads, &ws->target, a->model_seed + 2, err)) return sp_wrap(err, "the Medusa heads: ");
    verify_world_init(&ws->w, &ws->target, &ws->draft, &ws->heads);
    ws->built = 1;
    return a->engine ? verify_world_use_engine(&ws->w, &ws->te, &ws->de, err) : 0;
}

static void free_world(world_setup *ws) {
    if (ws->built) verify_world_free(&ws->w);
    if (ws->heads.arena) medusa_free(&ws->heads);
    if (ws->engines) engine_close(&ws->de), engine_close(&ws->te);
    if (ws->draft.arena) model_free(&ws->draft);
    if (ws->target.arena) model_free(&ws->target);
}

/* The worlds the selected cases (and beam search, which runs in the main
 * one) need; the others are not built. */
static int build_worlds(world_setup *ws, const verify_args *a, int want_beam, sp_error *err) {
    int need[VERIFY_WORLDS] = {0};
    need[VERIFY_MAIN] = want_beam;
    for (const verify_case *c = a->cases; c->name; c++)
        if (selected(c, a)) need[c->world] = 1;
    for (int id = 0; id < VERIFY_WORLDS; id++) {
        memset(&ws[id], 0, sizeof ws[id]);
        if (need[id] && build_world(&ws[id], (verify_world_id)id, a, err)) return -1;
    }
    return 0;
}

static void free_worlds(world_setup *ws) {
    for (int id = 0; id < VERIFY_WORLDS; id++) free_world(&ws[id]);
}

/* The selected cases' laws, planned sizes and seeds, in catalogue order;
 * returns the rows prepared (status set on failure: 1, or 2 for a --scale
 * that leaves too few draws). */
static int prepare_rows(const verify_args *a, const world_setup *ws, row *rows, int m, int *status) {
    verify_plan_target target = verify_plan_defaults(m);
    target.alpha = a->alpha;
    int done = 0;
    sp_error err;
    for (const verify_case *c = a->cases; c->name && !*status; c++) {
        if (!selected(c, a)) continue;
        row *r = &rows[done];
        const verify_world *w = &ws[c->world].w;
        r->c = c;
        r->seed = verify_case_seed(c, a->seed);
        if (verify_case_exact(c, w, &r->exact, &err)) {
            fprintf(stderr, "specula verify: %s\n", err.msg);
            *status = 1;
            break;
        }
        done++;
        r->rule_bias = r->engine_gap = r->gap_control = NAN;
        if (verify_case_follows_rule_law(c) && verify_case_rule_bias(c, w, &r->exact, &r->rule_bias, &err)) {
            fprintf(stderr, "specula verify: %s\n", err.msg);
            *status = 1;
        } else if (w->laws_on_engine && verify_case_engine_gap(c, w, &r->exact, &r->engine_gap, &r->gap_control, &err)) {
            fprintf(stderr, "specula verify: %s\n", err.msg);
            *status = 1;
        } else if (verify_case_plan(c, w, &r->exact, &target, &r->plan, &err)) {
            fprintf(stderr, "specula verify: %s\n", err.msg);
            *status = 1;
        } else if (scaled(a, a->samples, r->plan.n, r->plan.point_mass, "the draws", c, &r->n) ||
                   scaled(a, a->control_samples, r->plan.control_n, r->plan.point_mass, "the control", c,
                          &r->control_n)) {
            *status = 2;
        }
    }
    return done;
}

/* How a control's size was planned. */
static void plan_text(const row *r, char *out, int size) {
    if (r->c->expect_biased)
        snprintf(out, (size_t)size, "the method's (exact rule)");
    else if (r->plan.control_from_law)
        snprintf(out, (size_t)size, "its law, w %.3f", r->plan.control_w);
    else if (r->plan.point_mass)
        snprintf(out, (size_t)size, "point mass");
    else
        snprintf(out, (size_t)size, "generic, w %g", VERIFY_GENERIC_W);
}

/* --plan: what a run would draw, and with which seeds; no draws. */
static void print_plan(const row *rows, int m, const verify_args *a, FILE *f) {
    verify_plan_target t = verify_plan_defaults(m);
    t.alpha = a->alpha;
    fprintf(f, "%-32s %-22s %1s %1s %5s %8s %8s  %-26s %-16s  %s\n", "case", "pair", "V", "L", "cells", "draws",
            "ctl n", "control planned from", "seed", "negative control");
    for (int i = 0; i < m; i++) {
        const row *r = &rows[i];
        char control[64], from[48];
        verify_case_control_text(r->c, a->engine, control, sizeof control);
        plan_text(r, from, sizeof from);
        fprintf(f, "%-32s %-22s %d %d %5d %8lld %8lld  %-26s %016llx  %s\n", r->c->name, pair_text(r->c, a->engine),
                verify_world_vocab(r->c->world), r->c->L, r->plan.reachable, (long long)r->n, (long long)r->control_n,
                from, (unsigned long long)r->seed, control);
    }
    fprintf(f,
            "%d cases. draws: power %g against every law at TV >= %g (w = %g; a point mass: (1 - %g)^n <= %g),\n"
            "at the Holm level %g / %d, x %g; per sample for two samples. V: the world's vocabulary; cells: the\n"
            "sequences the law reaches.\n"
            "Controls: power %g at p < %g, x %g. Seeds: of --seed %llu and the case's name.\n",
            m, t.power, t.tv, 2 * t.tv, t.tv, 1 - t.power, t.alpha, m, VERIFY_PLAN_MARGIN, VERIFY_CONTROL_POWER,
            VERIFY_CONTROL_P, VERIFY_PLAN_MARGIN, (unsigned long long)a->seed);
}

/* Every prepared row; returns the rows run (status set on failure). */
static int run_cases(const verify_args *a, const world_setup *ws, row *rows, int m, int *status) {
    progress_state prog = {.total = m, .quiet = a->quiet, .tty = isatty(2)};
    verify_options opt = verify_defaults();
    opt.alpha = a->alpha;
    opt.delta = a->delta;
    opt.tv_max = a->tv_max;
    opt.progress = on_progress;
    opt.progress_user = &prog;
    if (!a->quiet && m > 0)
        fprintf(stderr, "specula verify: %d case(s) on the %s, %s draws\n", m, a->engine ? "cpu engine" : "reference",
                a->samples > 0 ? "the given" : "planned");
    int done = 0;
    sp_error err;
    for (; done < m && !*status; done++) {
        row *r = &rows[done];
        prog.index = done + 1;
        prog.name = r->c->name;
        prog.last = 0;
        opt.n = r->n;
        opt.seed = r->seed;
        double t0 = now_s();
        if (verify_case_run(r->c, &ws[r->c->world].w, &r->exact, &opt, r->control_n, &r->o, &err)) {
            fprintf(stderr, "specula verify: %s\n", err.msg);
            *status = 1;
            break;
        }
        r->seconds = now_s() - t0;
    }
    return done;
}

static void report(const verify_args *a, row *rows, int m, const beam_law_report *beam, int *status) {
    double *p = sp_xcalloc((size_t)(m > 0 ? m : 1), sizeof *p, "p-values");
    for (int i = 0; i < m; i++) p[i] = family_p(&rows[i]);
    stats_holm(p, m, p);
    for (int i = 0; i < m; i++) {
        rows[i].o.p_holm = p[i];
        judge(&rows[i], a);
        if (!rows[i].ok) *status = 1;
    }
    free(p);
    if (beam && !beam_ok(beam)) *status = 1;
    if (a->json) {
        print_json(rows, m, a, beam, stdout);
    } else if (a->csv) {
        print_csv(rows, m, a, stdout);
    } else {
        if (m > 0) print_table(rows, m, a, stdout);
        if (beam) print_beam(beam, stdout);
    }
}

int cmd_verify(int argc, char **argv) {
    verify_args a;
    int rc = parse(argc, argv, &a);
    if (rc) return rc == 1 ? 0 : rc;
    static verify_case custom[VERIFY_FLAGS_CASES + 1];
    a.cases = verify_cases();
    if (a.flags) {
        sp_error ferr;
        if (verify_cases_for_flags(a.flags, custom, VERIFY_FLAGS_CASES + 1, &ferr) < 0) {
            fprintf(stderr, "specula verify: %s\n", ferr.msg);
            return 2;
        }
        a.cases = custom;
    }
    if (a.coverage) {
        verify_coverage_print(stdout, a.cases, a.all);
        return 0;
    }
    int m = 0;
    for (const verify_case *c = a.cases; c->name; c++) m += selected(c, &a);
    const int want_beam = beam_selected(&a);
    if (a.list || (m == 0 && !want_beam)) return list_cases(&a, m == 0 && !want_beam);
    sp_error err;
    world_setup ws[VERIFY_WORLDS];
    if (build_worlds(ws, &a, want_beam, &err)) {
        fprintf(stderr, "specula verify: %s\n", err.msg);
        free_worlds(ws);
        return 1;
    }
    row *rows = sp_xcalloc((size_t)(m > 0 ? m : 1), sizeof *rows, "verify rows");
    int status = 0;
    const int prepared = prepare_rows(&a, ws, rows, m, &status);
    if (!status && a.plan) {
        if (m > 0) print_plan(rows, m, &a, stdout);
        if (want_beam)
            printf("beam: checked against its rules on the exact law (%d settings), no draws\n",
                   BEAM_PROMPTS * BEAM_SETTINGS);
    } else if (!status) {
        run_cases(&a, ws, rows, m, &status);
        beam_law_report beam;
        if (!status && want_beam) {
            if (!a.quiet)
                fprintf(stderr, "  beam search against its rules on the exact law (%d settings)\n",
                        BEAM_PROMPTS * BEAM_SETTINGS);
            if (beam_law_check(&ws[VERIFY_MAIN].target, BEAM_PROMPTS, BEAM_SETTINGS, &beam, &err)) {
                fprintf(stderr, "specula verify: beam: %s\n", err.msg);
                status = 1;
            }
        }
        if (!status) report(&a, rows, m, want_beam ? &beam : NULL, &status);
    }
    for (int i = 0; i < prepared; i++) {
        verify_case_outcome_free(&rows[i].o);
        enumerate_free(&rows[i].exact);
    }
    free(rows);
    free_worlds(ws);
    return status;
}
