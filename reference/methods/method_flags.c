/* method_flags.c — the method flags as one table: each flag's value, the
 * methods it applies to, its help line and its setter. Parsing, the checks
 * of a combination, the help text and the one-line label all read it, so a
 * flag means the same in every command (see method.h). */
#include <stdlib.h>
#include <string.h>

#include "lookup.h"
#include "method.h"
#include "parse.h"

#define ONLY(kind) (1u << (kind))
#define NOT_BEAM (METHODS_ALL & ~ONLY(METHOD_BEAM))
#define CHAINS (ONLY(METHOD_SPEC) | ONLY(METHOD_MTP) | ONLY(METHOD_LOOKUP))
#define PROPOSERS (CHAINS | ONLY(METHOD_MEDUSA))

static const char *const kind_names[METHOD_COUNT] = {"greedy", "sample", "beam", "spec", "medusa", "mtp", "lookup"};
static const char *const rule_names[] = {"default", "exact", "exact-norepl", "typical", "greedy"};

const char *method_kind_name(method_kind kind) { return (unsigned)kind < METHOD_COUNT ? kind_names[kind] : "?"; }

int method_kind_parse(const char *name, method_kind *out) {
    for (int k = 0; k < METHOD_COUNT; k++)
        if (!strcmp(name, kind_names[k])) {
            *out = (method_kind)k;
            return 0;
        }
    return -1;
}

const char *method_rule_name(method_rule rule) { return (unsigned)rule <= METHOD_RULE_GREEDY ? rule_names[rule] : "?"; }

const char *mtp_drafts_name(mtp_drafts d) { return d == MTP_DRAFTS_SAMPLED ? "sampled" : "argmax"; }

method_spec method_spec_defaults(void) {
    method_spec s;
    memset(&s, 0, sizeof s);
    s.kind = METHOD_SAMPLE;
    s.k = 4;
    s.ngram = 3;
    s.sampling = sampler_defaults();
    s.seed = 1;
    s.max_tokens = 32;
    s.stop_at_eos = 1;
    s.typical_epsilon = 0.09f;
    s.typical_delta = 0.3f;
    s.beam = beam_defaults();
    return s;
}

/* ---- setters ------------------------------------------------------------------ */

static int set_method(method_spec *s, const char *f, const char *v, sp_error *err) {
    if (method_kind_parse(v, &s->kind))
        return sp_fail(err, "%s: unknown method '%s' (greedy, sample, beam, spec, medusa, mtp or lookup)", f, v);
    return 0;
}
static int set_k(method_spec *s, const char *f, const char *v, sp_error *err) {
    return parse_int(f, v, 1, 32, &s->k, err);
}
static int set_temperature(method_spec *s, const char *f, const char *v, sp_error *err) {
    return parse_float(f, v, 0, 100, &s->sampling.temperature, err);
}
static int set_top_k(method_spec *s, const char *f, const char *v, sp_error *err) {
    return parse_int(f, v, 0, 1 << 30, &s->sampling.top_k, err);
}
static int set_top_p(method_spec *s, const char *f, const char *v, sp_error *err) {
    return parse_float(f, v, 1e-6, 1, &s->sampling.top_p, err);
}
static int set_min_p(method_spec *s, const char *f, const char *v, sp_error *err) {
    return parse_float(f, v, 0, 0.999999, &s->sampling.min_p, err);
}
static int set_seed(method_spec *s, const char *f, const char *v, sp_error *err) {
    return parse_u64(f, v, &s->seed, err);
}
static int set_max_tokens(method_spec *s, const char *f, const char *v, sp_error *err) {
    return parse_int(f, v, 1, 1 << 20, &s->max_tokens, err);
}
static int set_no_eos(method_spec *s, const char *f, const char *v, sp_error *err) {
    (void)f, (void)v, (void)err;
    s->stop_at_eos = 0;
    return 0;
}
static int set_mtp_sample(method_spec *s, const char *f, const char *v, sp_error *err) {
    (void)f, (void)v, (void)err;
    s->drafts = MTP_DRAFTS_SAMPLED;
    return 0;
}
static int set_mtp_argmax(method_spec *s, const char *f, const char *v, sp_error *err) {
    (void)f, (void)v, (void)err;
    s->drafts = MTP_DRAFTS_ARGMAX;
    return 0;
}
static int set_ngram(method_spec *s, const char *f, const char *v, sp_error *err) {
    return parse_int(f, v, 1, LOOKUP_MAX_NGRAM, &s->ngram, err);
}
static int set_rule(method_spec *s, const char *f, const char *v, sp_error *err) {
    for (int r = METHOD_RULE_EXACT; r <= METHOD_RULE_GREEDY; r++)
        if (!strcmp(v, rule_names[r])) {
            s->rule = (method_rule)r;
            return 0;
        }
    return sp_fail(err, "%s '%s': expected exact, exact-norepl, typical or greedy", f, v);
}
static int set_tree(method_spec *s, const char *f, const char *v, sp_error *err) {
    if (strlen(v) >= sizeof s->tree_path) return sp_fail(err, "%s: the path is too long", f);
    snprintf(s->tree_path, sizeof s->tree_path, "%s", v);
    snprintf(s->tree_origin, sizeof s->tree_origin, "tree file %s", v);
    s->tree_given = 0;
    return 0;
}
static int set_tree_shape(method_spec *s, const char *f, const char *v, sp_error *err) {
    return tree_shape_parse(f, v, &s->shape, err);
}
static int set_tree_budget(method_spec *s, const char *f, const char *v, sp_error *err) {
    return parse_int(f, v, 1, TREE_SHAPE_MAX_NODES, &s->tree_budget, err);
}
static int set_tree_raw_confidence(method_spec *s, const char *f, const char *v, sp_error *err) {
    (void)f, (void)v, (void)err;
    s->tree_raw_confidence = 1;
    return 0;
}
static int set_epsilon(method_spec *s, const char *f, const char *v, sp_error *err) {
    return parse_float(f, v, 0, 1, &s->typical_epsilon, err);
}
static int set_delta(method_spec *s, const char *f, const char *v, sp_error *err) {
    return parse_float(f, v, 0, 1e6, &s->typical_delta, err);
}
static int set_beams(method_spec *s, const char *f, const char *v, sp_error *err) {
    return parse_int(f, v, 1, 4096, &s->beam.num_beams, err);
}
static int set_length_penalty(method_spec *s, const char *f, const char *v, sp_error *err) {
    return parse_float(f, v, -100, 100, &s->beam.length_penalty, err);
}
static int set_early_stopping(method_spec *s, const char *f, const char *v, sp_error *err) {
    if (beam_early_stopping_parse(v, &s->beam.early_stopping))
        return sp_fail(err, "%s expects true, heuristic or never (Hugging Face's False is heuristic), got '%s'", f, v);
    return 0;
}
static int set_num_return(method_spec *s, const char *f, const char *v, sp_error *err) {
    return parse_int(f, v, 1, 4096, &s->beam.num_return, err);
}

/* ---- the table ------------------------------------------------------------------ */

typedef struct {
    const char *flag;
    const char *value;        /* the value's name in the help; NULL for a switch */
    unsigned applies;         /* the methods it applies to */
    const char *not_beam_why; /* for a flag beam search refuses: why */
    const char *help;
    int (*set)(method_spec *s, const char *flag, const char *value, sp_error *err);
} flag_def;

enum {
    F_METHOD,
    F_K,
    F_TEMPERATURE,
    F_TOP_K,
    F_TOP_P,
    F_MIN_P,
    F_SEED,
    F_MAX_TOKENS,
    F_NO_EOS,
    F_MTP_SAMPLE,
    F_MTP_ARGMAX,
    F_NGRAM,
    F_RULE,
    F_TREE,
    F_TREE_SHAPE,
    F_TREE_BUDGET,
    F_TREE_RAW_CONFIDENCE,
    F_EPSILON,
    F_DELTA,
    F_BEAMS,
    F_LENGTH_PENALTY,
    F_EARLY_STOPPING,
    F_NUM_RETURN,
    F_COUNT
};

static const char *const cuts_why = "it scores raw log-probabilities (temperature and cuts apply only to sampling)";

/* clang-format off */
static const flag_def flags[F_COUNT] = {
    [F_METHOD] = {"--method", "NAME", METHODS_ALL, NULL,
                  "greedy | sample | beam | spec | medusa | mtp | lookup   (default sample)", set_method},
    [F_K] = {"--k", "N", CHAINS, "it proposes no draft tokens",
             "tokens proposed per round (spec, mtp, lookup; default 4)", set_k},
    [F_TEMPERATURE] = {"--temperature", "T", NOT_BEAM, cuts_why,
                       "default 1 (greedy: 0); the same processing applies to p and q;\n"
                       "beam search scores raw log-probabilities and takes none of these", set_temperature},
    [F_TOP_K] = {"--top-k", "K", NOT_BEAM, cuts_why, "cuts of the processed distribution (0: off)", set_top_k},
    [F_TOP_P] = {"--top-p", "P", NOT_BEAM, cuts_why, "(1: off)", set_top_p},
    [F_MIN_P] = {"--min-p", "P", NOT_BEAM, cuts_why, "(0: off)", set_min_p},
    [F_SEED] = {"--seed", "N", NOT_BEAM, "it draws nothing at random", "seed of every random draw (default 1)",
                set_seed},
    [F_MAX_TOKENS] = {"--max-tokens", "N", METHODS_ALL, NULL, "tokens to generate (default 32)", set_max_tokens},
    [F_NO_EOS] = {"--no-eos", NULL, METHODS_ALL, NULL, "keep going past the end-of-sequence token", set_no_eos},
    [F_MTP_SAMPLE] = {"--mtp-sample", NULL, ONLY(METHOD_MTP), NULL,
                      "MTP drafts sampled from its processed distribution (the default above\n"
                      "temperature 0: measured to be accepted more often than argmax drafts)", set_mtp_sample},
    [F_MTP_ARGMAX] = {"--mtp-argmax", NULL, ONLY(METHOD_MTP), NULL,
                      "MTP drafts are its argmax, q one-hot (the default at temperature 0)", set_mtp_argmax},
    [F_NGRAM] = {"--ngram", "N", ONLY(METHOD_LOOKUP), NULL,
                 "lookup: match the context's last N tokens, then N - 1, ..., 1, against the\n"
                 "prompt and the tokens so far (default 3, at most 16)", set_ngram},
    [F_RULE] = {"--rule", "NAME", PROPOSERS, NULL,
                "exact | exact-norepl | typical | greedy (default: exact; Medusa and --tree-shape:\n"
                "greedy at temperature 0, else exact-norepl). A tree's children under exact are drawn\n"
                "i.i.d. from q (each Medusa head's, the draft's, the MTP's), under exact-norepl\n"
                "without replacement, under typical and greedy they are the top-ranked tokens", set_rule},
    [F_TREE] = {"--tree", "FILE", ONLY(METHOD_MEDUSA), NULL,
                "Medusa candidate tree as JSON rank paths, e.g. [[0],[1],[0,0]] (default:\n"
                "built-in, 63 nodes over 4 heads)", set_tree},
    [F_TREE_SHAPE] = {"--tree-shape", "LIST", ONLY(METHOD_SPEC) | ONLY(METHOD_MTP), NULL,
                      "spec, mtp: a tree of drafts, LIST = B1,B2,...: B1 children under the root,\n"
                      "B2 under each of those, ... (e.g. 2,2,1,1: 14 nodes), verified in one pass; its\n"
                      "depth replaces --k. Children drawn from the proposer's q (--rule exact: i.i.d.,\n"
                      "exact-norepl: without replacement, the default above temperature 0) or its\n"
                      "top ranks (--rule greedy, the default at 0, or typical)", set_tree_shape},
    [F_TREE_BUDGET] = {"--tree-budget", "N", ONLY(METHOD_SPEC) | ONLY(METHOD_MTP), NULL,
                       "spec, mtp: a dynamic tree of N nodes to depth --k (or within --tree-shape's\n"
                       "caps), grown one child at a time where the draft's path probability is\n"
                       "highest; children chosen as under --tree-shape", set_tree_budget},
    [F_TREE_RAW_CONFIDENCE] = {"--tree-raw-confidence", NULL, ONLY(METHOD_SPEC) | ONLY(METHOD_MTP), NULL,
                               "--tree-budget: rank nodes by the draft's confidences as they are (EAGLE-2's\n"
                               "rule) instead of calibrating them by the earlier rounds' verdicts", set_tree_raw_confidence},
    [F_EPSILON] = {"--typical-epsilon", "E", PROPOSERS, NULL, "typical rule: p(x) > min(E, D·exp(-H(p))) (default 0.09)",
                   set_epsilon},
    [F_DELTA] = {"--typical-delta", "D", PROPOSERS, NULL, "(default 0.3)", set_delta},
    [F_BEAMS] = {"--beams", "N", ONLY(METHOD_BEAM), NULL, "beam width (default 4)", set_beams},
    [F_LENGTH_PENALTY] = {"--length-penalty", "X", ONLY(METHOD_BEAM), NULL,
                          "beam: score = sum log p / generated_length^X (default 1)", set_length_penalty},
    [F_EARLY_STOPPING] = {"--early-stopping", "M", ONLY(METHOD_BEAM), NULL,
                          "beam: true | heuristic | never (default heuristic, Hugging Face's False)",
                          set_early_stopping},
    [F_NUM_RETURN] = {"--num-return", "N", ONLY(METHOD_BEAM), NULL,
                      "beam: hypotheses returned, best first, N <= beams (default 1)", set_num_return},
};
/* clang-format on */

static int find_flag(const char *name) {
    for (int f = 0; f < F_COUNT; f++)
        if (!strcmp(name, flags[f].flag)) return f;
    return -1;
}

int method_spec_given(const method_spec *s, const char *name) {
    const int f = find_flag(name);
    return f >= 0 && (s->given >> f & 1u);
}

int method_spec_flag(method_spec *s, int argc, char **argv, int *i, sp_error *err) {
    const int f = find_flag(argv[*i]);
    if (f < 0) return 0;
    const char *v = NULL;
    if (flags[f].value) {
        if (*i + 1 >= argc) return sp_fail(err, "%s needs a value", argv[*i]);
        v = argv[++*i];
    }
    if (flags[f].set(s, flags[f].flag, v, err)) return -1;
    s->given |= 1u << f;
    return 1;
}

int method_spec_parse(method_spec *s, const char *text, sp_error *err) {
    char buf[512], *argv[sizeof buf / 2 + 1], *save = NULL; /* words of ≥ 1 character and a space: room for all */
    int argc = 0;
    if (strlen(text) >= sizeof buf) return sp_fail(err, "method flags \"%.40s…\" are too long", text);
    snprintf(buf, sizeof buf, "%s", text);
    for (char *tok = strtok_r(buf, " ", &save); tok; tok = strtok_r(NULL, " ", &save)) argv[argc++] = tok;
    for (int i = 0; i < argc; i++) {
        int rc = method_spec_flag(s, argc, argv, &i, err);
        if (rc < 0) return sp_wrap(err, "method \"%s\": ", text);
        if (rc == 0) return sp_fail(err, "method \"%s\": '%s' is not a method flag", text, argv[i]);
    }
    return method_spec_finish(s, 1, err) ? sp_wrap(err, "method \"%s\": ", text) : 0;
}

/* "--method spec and mtp", "--method medusa", … for the methods in `mask`. */
static void methods_text(unsigned mask, char *buf, size_t size) {
    int n = 0, total = 0;
    for (int k = 0; k < METHOD_COUNT; k++) total += mask >> k & 1u;
    buf[0] = 0;
    for (int k = 0; k < METHOD_COUNT; k++) {
        if (!(mask >> k & 1u)) continue;
        const size_t len = strlen(buf);
        snprintf(buf + len, size - len, "%s%s", n == 0 ? "--method " : n == total - 1 ? " and " : ", ", kind_names[k]);
        n++;
    }
}

/* The first given flag that does not apply to s->kind, with the reason. */
static int check_applies(const method_spec *s, sp_error *err) {
    for (int f = 0; f < F_COUNT; f++) {
        const flag_def *d = &flags[f];
        if (!(s->given >> f & 1u) || (d->applies >> s->kind & 1u)) continue;
        if (s->kind == METHOD_BEAM && d->not_beam_why)
            return sp_fail(err, "%s does not apply to --method beam: %s", d->flag, d->not_beam_why);
        char which[160];
        methods_text(d->applies, which, sizeof which);
        return sp_fail(err, "%s only applies to %s%s", d->flag, which,
                       f == F_K && s->kind == METHOD_MEDUSA ? " (Medusa's depth is the tree's: see --tree)" : "");
    }
    return 0;
}

/* The rule: its default for the method and temperature, and the pairs that cannot work. */
static int resolve_rule(method_spec *s, int strict, sp_error *err) {
    const float t = s->sampling.temperature;
    const int medusa = s->kind == METHOD_MEDUSA,
              tree = medusa || ((s->kind == METHOD_SPEC || s->kind == METHOD_MTP) && s->shape.depth > 0);
    if (s->rule == METHOD_RULE_DEFAULT)
        s->rule = !tree ? METHOD_RULE_EXACT : t == 0 ? METHOD_RULE_GREEDY : METHOD_RULE_EXACT_NOREPL;
    if (s->rule == METHOD_RULE_GREEDY && t != 0)
        return sp_fail(err,
                       "--rule greedy decodes at temperature 0 (give --temperature 0), or use --rule exact%s or "
                       "typical to sample at temperature %g",
                       tree ? ", exact-norepl" : "", t);
    if (s->rule == METHOD_RULE_EXACT_NOREPL && !tree) {
        if (strict)
            return sp_fail(err, "--rule exact-norepl applies to trees only (Medusa, or spec and mtp with --tree-shape; "
                                "a chain has one child per node)");
        s->rule = METHOD_RULE_EXACT; /* for a chain the two are the same rule */
    }
    if ((s->given >> F_EPSILON & 1u || s->given >> F_DELTA & 1u) && s->rule != METHOD_RULE_TYPICAL && strict)
        return sp_fail(err, "--typical-epsilon and --typical-delta only apply to --rule typical");
    return 0;
}

int method_spec_finish(method_spec *s, int strict, sp_error *err) {
    /* the later flag would silently win */
    if ((s->given >> F_MTP_SAMPLE & 1u) && (s->given >> F_MTP_ARGMAX & 1u))
        return sp_fail(err, "--mtp-sample and --mtp-argmax contradict each other: give one");
    if (strict && check_applies(s, err)) return -1;
    const int treed = s->kind == METHOD_SPEC || s->kind == METHOD_MTP;
    if (treed && (s->given >> F_TREE_SHAPE & 1u) && (s->given >> F_K & 1u) && strict)
        return sp_fail(err, "--k and --tree-shape both set the depth of the drafts: give one");
    if (!treed) memset(&s->shape, 0, sizeof s->shape); /* bench's other rows: no tree */
    if (treed && s->tree_budget > 0) {                 /* a dynamic tree: within --tree-shape's caps, else to depth k */
        if (s->given >> F_TREE_SHAPE & 1u)
            s->shape.budget = s->tree_budget;
        else
            s->shape = tree_shape_dynamic(s->tree_budget, s->k);
        if (tree_shape_check_budget(&s->shape, "--tree-budget: a tree", err)) return -1;
        s->shape.raw_confidence = s->tree_raw_confidence;
    } else if (treed && s->tree_raw_confidence && strict) {
        return sp_fail(err, "--tree-raw-confidence applies to dynamic trees (--tree-budget)");
    }
    if (s->kind == METHOD_MTP && s->shape.depth > 0) { /* a tree's children are chosen by the rule */
        if (s->given >> F_MTP_ARGMAX & 1u && strict)
            return sp_fail(err, "--mtp-argmax gives every sibling the same token: an MTP tree draws its children "
                                "from q or takes its top ranks (--rule)");
        s->drafts = MTP_DRAFTS_SAMPLED;
    }
    if (s->kind == METHOD_GREEDY) {
        if (s->given >> F_TEMPERATURE & 1u && s->sampling.temperature != 0 && strict)
            return sp_fail(err, "--method greedy decodes at temperature 0; drop --temperature or use --method sample");
        s->sampling.temperature = 0;
    }
    if (CHAINS >> s->kind & 1u || s->kind == METHOD_MEDUSA) {
        if (resolve_rule(s, strict, err)) return -1;
    } else {
        s->rule = METHOD_RULE_DEFAULT;
    }
    if (s->kind == METHOD_MTP && s->drafts == MTP_DRAFTS_DEFAULT)
        s->drafts = s->sampling.temperature > 0 ? MTP_DRAFTS_SAMPLED : MTP_DRAFTS_ARGMAX;
    if (s->kind == METHOD_BEAM) {
        if (s->beam.num_return > s->beam.num_beams)
            return sp_fail(err, "--num-return %d exceeds --beams %d", s->beam.num_return, s->beam.num_beams);
        s->beam.max_new_tokens = s->max_tokens;
        s->beam.stop_at_eos = s->stop_at_eos;
        return beam_validate(&s->beam, err);
    }
    return sampler_validate(&s->sampling, err);
}

int method_spec_for(const method_spec *base, method_kind kind, method_spec *out, sp_error *err) {
    *out = *base; /* base is not finished: its defaults are still unresolved */
    out->kind = kind;
    return method_spec_finish(out, 0, err);
}

static int listed(const char *flag, const char *const *list) {
    for (int i = 0; list && list[i]; i++)
        if (!strcmp(flag, list[i])) return 1;
    return 0;
}

void method_spec_usage(FILE *f, unsigned methods, const char *const *except) {
    for (int i = 0; i < F_COUNT; i++) {
        const flag_def *d = &flags[i];
        if (!(d->applies & methods) || listed(d->flag, except)) continue;
        char head[40];
        snprintf(head, sizeof head, "%s%s%s", d->flag, d->value ? " " : "", d->value ? d->value : "");
        fprintf(f, "  %-20s ", head);
        for (const char *p = d->help; *p; p++) {
            fputc(*p, f);
            if (*p == '\n') fprintf(f, "  %-20s ", "");
        }
        fputc('\n', f);
    }
}

void method_spec_label(const method_spec *s, char *buf, size_t size) {
    const char *name = method_kind_name(s->kind);
    const char *rule = method_rule_name(s->rule);
    switch (s->kind) {
    case METHOD_SPEC:
        if (s->shape.depth > 0) {
            char shape[3 * TREE_SHAPE_MAX_DEPTH + 1];
            tree_shape_format(&s->shape, shape, sizeof shape);
            snprintf(buf, size, "%s tree %s (%d nodes), %s rule", name, shape, tree_shape_nodes(&s->shape), rule);
        } else {
            snprintf(buf, size, "%s k=%d, %s rule", name, s->k, rule);
        }
        break;
    case METHOD_LOOKUP: snprintf(buf, size, "%s k=%d, ngram %d, %s rule", name, s->k, s->ngram, rule); break;
    case METHOD_MTP:
        if (s->shape.depth > 0) {
            char shape[3 * TREE_SHAPE_MAX_DEPTH + 1];
            tree_shape_format(&s->shape, shape, sizeof shape);
            snprintf(buf, size, "%s tree %s (%d nodes), %s rule", name, shape, tree_shape_nodes(&s->shape), rule);
        } else {
            snprintf(buf, size, "%s k=%d, %s drafts, %s rule", name, s->k, mtp_drafts_name(s->drafts), rule);
        }
        break;
    case METHOD_MEDUSA:
        if (s->tree.n > 0)
            snprintf(buf, size, "%s (%d-node tree of depth %d), %s rule", name, s->tree.n, s->tree.max_depth, rule);
        else
            snprintf(buf, size, "%s (built-in tree), %s rule", name, rule);
        break;
    case METHOD_BEAM: snprintf(buf, size, "%s (%d beams)", name, s->beam.num_beams); break;
    default: snprintf(buf, size, "%s", name);
    }
}
