/* method_flags.c — the flags every method shares, as one table (each with the traits of the methods it applies to,
 * its help and its setter), and what reads them together with the methods' own flags from the registry: parsing,
 * the checks of a combination, the help text and the one-line label (method.h). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "parse.h"
#include "registry.h"

const char *mtp_drafts_name(mtp_drafts d) { return d == MTP_DRAFTS_SAMPLED ? "sampled" : "argmax"; }

const char *method_name(const method_spec *s) { return s->method ? s->method->name : "?"; }

method_spec method_spec_defaults(void) {
    method_spec s;
    memset(&s, 0, sizeof s);
    s.method = &sample_method;
    s.k = 4;
    s.ngram = 3;
    s.sampling = sampler_defaults();
    s.seed = 1;
    s.max_tokens = 32;
    s.stop_at_eos = 1;
    s.rule = RULE_DEFAULT;
    s.typical_epsilon = 0.09f;
    s.typical_delta = 0.3f;
    s.beam = beam_defaults();
    return s;
}

/* ---- setters of the shared flags --------------------------------------------------- */

/* "greedy, sample, ..., lookup" */
static void method_names(char *buf, size_t size) {
    buf[0] = 0;
    for (int i = 0; i < method_count(); i++) {
        const size_t len = strlen(buf);
        snprintf(buf + len, size - len, "%s%s", i ? ", " : "", method_at(i)->name);
    }
}

int plugin_spec_set(method_spec *s, const char *flag, const char *text, sp_error *err); /* plugin_method.c */

static int set_method(method_spec *s, const char *f, const char *v, sp_error *err) {
    if (!strncmp(v, "plugin:", 7)) return plugin_spec_set(s, f, v + 7, err);
    const method_desc *m = method_find(v);
    if (!m) {
        char names[200];
        method_names(names, sizeof names);
        return sp_fail(err, "%s: unknown method '%s' (%s, or plugin:PATH[:ARGS])", f, v, names);
    }
    s->method = m;
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
static int set_rule(method_spec *s, const char *f, const char *v, sp_error *err) {
    for (int r = RULE_EXACT; r <= RULE_GREEDY; r++)
        if (!strcmp(v, accept_rule_name((accept_rule)r))) {
            s->rule = (accept_rule)r;
            return 0;
        }
    return sp_fail(err, "%s '%s': expected exact, exact-norepl, typical or greedy", f, v);
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

/* ---- the shared flags ------------------------------------------------------------- */

typedef struct {
    const char *flag;
    const char *value;    /* the value's name in the help; NULL for a switch */
    unsigned any;         /* applies to the methods with any of these traits (0: to every method) */
    unsigned none;        /* ... and none of these */
    const char *beam_why; /* for a flag beam search refuses: why */
    const char *help;
    int (*set)(method_spec *s, const char *flag, const char *value, sp_error *err);
} shared_flag;

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
    F_RULE,
    F_TREE_SHAPE,
    F_TREE_BUDGET,
    F_TREE_RAW_CONFIDENCE,
    F_EPSILON,
    F_DELTA,
    F_SHARED
};

static const char *const cuts_why = "it scores raw log-probabilities (temperature and cuts apply only to sampling)";

/* clang-format off */
static const shared_flag shared[F_SHARED] = {
    [F_METHOD] = {"--method", "NAME", 0, 0, NULL, NULL /* the registry's names: method_usage_line */, set_method},
    [F_K] = {"--k", "N", METHOD_CHAIN, 0, "it proposes no draft tokens",
             "tokens proposed per round (spec, mtp, lookup, plug-ins; default 4)", set_k},
    [F_TEMPERATURE] = {"--temperature", "T", 0, METHOD_BEAM_SEARCH, cuts_why,
                       "default 1 (greedy: 0); the same processing applies to p and q;\n"
                       "beam search scores raw log-probabilities and takes none of these", set_temperature},
    [F_TOP_K] = {"--top-k", "K", 0, METHOD_BEAM_SEARCH, cuts_why, "cuts of the processed distribution (0: off)",
                 set_top_k},
    [F_TOP_P] = {"--top-p", "P", 0, METHOD_BEAM_SEARCH, cuts_why, "(1: off)", set_top_p},
    [F_MIN_P] = {"--min-p", "P", 0, METHOD_BEAM_SEARCH, cuts_why, "(0: off)", set_min_p},
    [F_SEED] = {"--seed", "N", 0, METHOD_BEAM_SEARCH, "it draws nothing at random",
                "seed of every random draw (default 1)", set_seed},
    [F_MAX_TOKENS] = {"--max-tokens", "N", 0, 0, NULL, "tokens to generate (default 32)", set_max_tokens},
    [F_NO_EOS] = {"--no-eos", NULL, 0, 0, NULL, "keep going past the end-of-sequence token", set_no_eos},
    [F_RULE] = {"--rule", "NAME", METHOD_PROPOSES, 0, NULL,
                "exact | exact-norepl | typical | greedy (default: exact; Medusa and --tree-shape:\n"
                "greedy at temperature 0, else exact-norepl). A tree's children under exact are drawn\n"
                "i.i.d. from q (each Medusa head's, the draft's, the MTP's), under exact-norepl\n"
                "without replacement, under typical and greedy they are the top-ranked tokens", set_rule},
    [F_TREE_SHAPE] = {"--tree-shape", "LIST", METHOD_TREES, 0, NULL,
                      "spec, mtp: a tree of drafts, LIST = B1,B2,...: B1 children under the root,\n"
                      "B2 under each of those, ... (e.g. 2,2,1,1: 14 nodes), verified in one pass; its\n"
                      "depth replaces --k. Children drawn from the proposer's q (--rule exact: i.i.d.,\n"
                      "exact-norepl: without replacement, the default above temperature 0) or its\n"
                      "top ranks (--rule greedy, the default at 0, or typical)", set_tree_shape},
    [F_TREE_BUDGET] = {"--tree-budget", "N", METHOD_TREES, 0, NULL,
                       "spec, mtp: a dynamic tree of N nodes to depth --k (or within --tree-shape's\n"
                       "caps), grown one child at a time where the draft's path probability is\n"
                       "highest; children chosen as under --tree-shape", set_tree_budget},
    [F_TREE_RAW_CONFIDENCE] = {"--tree-raw-confidence", NULL, METHOD_TREES, 0, NULL,
                               "--tree-budget: rank nodes by the draft's confidences as they are (EAGLE-2's\n"
                               "rule) instead of calibrating them by the earlier rounds' verdicts",
                               set_tree_raw_confidence},
    [F_EPSILON] = {"--typical-epsilon", "E", METHOD_PROPOSES, 0, NULL,
                   "typical rule: p(x) > min(E, D·exp(-H(p))) (default 0.09)", set_epsilon},
    [F_DELTA] = {"--typical-delta", "D", METHOD_PROPOSES, 0, NULL, "(default 0.3)", set_delta},
};
/* clang-format on */

/* ---- every flag: the shared ones, then each method's own ----------------------------- */

/* Flag f as the parser sees it. Flags are numbered once: the shared ones, then each built-in's own in the
 * registry's order; method_spec.given keeps one bit per number. */
typedef struct {
    const char *flag, *value, *help;
    int (*set)(method_spec *s, const char *flag, const char *value, sp_error *err);
    const shared_flag *shared; /* or */
    const method_desc *owner;
} flag_ref;

#define MAX_FLAGS 64
static flag_ref all_flags[MAX_FLAGS];
static int n_flags;

static void number_flags(void) {
    if (n_flags) return;
    for (int f = 0; f < F_SHARED; f++)
        all_flags[n_flags++] =
            (flag_ref){shared[f].flag, shared[f].value, shared[f].help, shared[f].set, &shared[f], NULL};
    for (int i = 0; i < method_count(); i++) {
        const method_desc *m = method_at(i);
        for (const method_flag *o = m->flags; o && o->flag; o++)
            if (n_flags < MAX_FLAGS) all_flags[n_flags++] = (flag_ref){o->flag, o->value, o->help, o->set, NULL, m};
    }
}

static int find_flag(const char *name) {
    number_flags();
    for (int f = 0; f < n_flags; f++)
        if (!strcmp(name, all_flags[f].flag)) return f;
    return -1;
}

static int given(const method_spec *s, int f) { return (int)(s->given >> f & 1u); }

int method_spec_given(const method_spec *s, const char *name) {
    const int f = find_flag(name);
    return f >= 0 && given(s, f);
}

static int applies(const flag_ref *r, const method_desc *m) {
    if (r->owner) return r->owner == m;
    return (!r->shared->any || (m->traits & r->shared->any)) && !(m->traits & r->shared->none);
}

int method_spec_flag(method_spec *s, int argc, char **argv, int *i, sp_error *err) {
    const int f = find_flag(argv[*i]);
    if (f < 0) return 0;
    const flag_ref *r = &all_flags[f];
    const char *v = NULL;
    if (r->value) {
        if (*i + 1 >= argc) return sp_fail(err, "%s needs a value", argv[*i]);
        v = argv[++*i];
    }
    if (r->set(s, r->flag, v, err)) return -1;
    s->given |= (uint64_t)1 << f;
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

/* "--method spec and mtp", "--method medusa", … for the built-ins flag r applies to. */
static void methods_text(const flag_ref *r, char *buf, size_t size) {
    int n = 0, total = 0;
    for (int i = 0; i < method_count(); i++) total += applies(r, method_at(i));
    buf[0] = 0;
    for (int i = 0; i < method_count(); i++) {
        if (!applies(r, method_at(i))) continue;
        const size_t len = strlen(buf);
        snprintf(buf + len, size - len, "%s%s",
                 n == 0           ? "--method "
                 : n == total - 1 ? " and "
                                  : ", ",
                 method_at(i)->name);
        n++;
    }
}

/* The first given flag that does not apply to the spec's method, with the reason. */
static int check_applies(const method_spec *s, sp_error *err) {
    number_flags();
    for (int f = 0; f < n_flags; f++) {
        const flag_ref *r = &all_flags[f];
        if (!given(s, f) || applies(r, s->method)) continue;
        if (method_has(s, METHOD_BEAM_SEARCH) && r->shared && r->shared->beam_why)
            return sp_fail(err, "%s does not apply to --method %s: %s", r->flag, method_name(s), r->shared->beam_why);
        char which[200];
        methods_text(r, which, sizeof which);
        return sp_fail(err, "%s only applies to %s%s", r->flag, which,
                       f == F_K && method_has(s, METHOD_OWN_TREE) ? " (Medusa's depth is the tree's: see --tree)" : "");
    }
    return 0;
}

/* The rule: its default for the method and temperature, and the pairs that cannot work. */
static int resolve_rule(method_spec *s, int strict, sp_error *err) {
    const float t = s->sampling.temperature;
    const int tree = method_has(s, METHOD_OWN_TREE) || (method_has(s, METHOD_TREES) && s->shape.depth > 0);
    if (s->rule == RULE_DEFAULT) s->rule = !tree ? RULE_EXACT : t == 0 ? RULE_GREEDY : RULE_EXACT_NOREPL;
    if (s->rule == RULE_GREEDY && t != 0)
        return sp_fail(err,
                       "--rule greedy decodes at temperature 0 (give --temperature 0), or use --rule exact%s or "
                       "typical to sample at temperature %g",
                       tree ? ", exact-norepl" : "", t);
    if (s->rule == RULE_EXACT_NOREPL && !tree) {
        if (strict)
            return sp_fail(err, "--rule exact-norepl applies to trees only (Medusa, or spec and mtp with --tree-shape; "
                                "a chain has one child per node)");
        s->rule = RULE_EXACT; /* for a chain the two are the same rule */
    }
    if ((given(s, F_EPSILON) || given(s, F_DELTA)) && s->rule != RULE_TYPICAL && strict)
        return sp_fail(err, "--typical-epsilon and --typical-delta only apply to --rule typical");
    return 0;
}

/* --tree-shape and --tree-budget of a method that drafts trees on request. */
static int resolve_tree(method_spec *s, int strict, sp_error *err) {
    const int treed = method_has(s, METHOD_TREES);
    if (treed && given(s, F_TREE_SHAPE) && given(s, F_K) && strict)
        return sp_fail(err, "--k and --tree-shape both set the depth of the drafts: give one");
    if (!treed) memset(&s->shape, 0, sizeof s->shape); /* bench's other rows: no tree */
    if (treed && s->tree_budget > 0) {                 /* a dynamic tree: within --tree-shape's caps, else to depth k */
        if (given(s, F_TREE_SHAPE))
            s->shape.budget = s->tree_budget;
        else
            s->shape = tree_shape_dynamic(s->tree_budget, s->k);
        if (tree_shape_check_budget(&s->shape, "--tree-budget: a tree", err)) return -1;
        s->shape.raw_confidence = s->tree_raw_confidence;
    } else if (treed && s->tree_raw_confidence && strict) {
        return sp_fail(err, "--tree-raw-confidence applies to dynamic trees (--tree-budget)");
    }
    return 0;
}

int method_spec_finish(method_spec *s, int strict, sp_error *err) {
    if (!s->method) return sp_fail(err, "no method");
    if (strict && check_applies(s, err)) return -1;
    if (resolve_tree(s, strict, err)) return -1;
    if (s->method->finish && s->method->finish(s, strict, err)) return -1;
    if (method_has(s, METHOD_PROPOSES)) {
        if (resolve_rule(s, strict, err)) return -1;
    } else {
        s->rule = RULE_DEFAULT;
    }
    return method_has(s, METHOD_BEAM_SEARCH) ? 0 : sampler_validate(&s->sampling, err);
}

int method_spec_for(const method_spec *base, const method_desc *method, method_spec *out, sp_error *err) {
    *out = *base; /* base is not finished: its defaults are still unresolved */
    out->method = method;
    return method_spec_finish(out, 0, err);
}

static int listed(const char *flag, const char *const *list) {
    for (int i = 0; list && list[i]; i++)
        if (!strcmp(flag, list[i])) return 1;
    return 0;
}

void method_spec_usage(FILE *f, unsigned need, unsigned refuse, const char *const *except) {
    number_flags();
    for (int i = 0; i < n_flags; i++) {
        const flag_ref *r = &all_flags[i];
        int wanted = 0;
        for (int m = 0; m < method_count() && !wanted; m++) {
            const unsigned t = method_at(m)->traits;
            wanted = (t & need) == need && !(t & refuse) && applies(r, method_at(m));
        }
        if (!wanted || listed(r->flag, except)) continue;
        char head[40], names[300];
        snprintf(head, sizeof head, "%s%s%s", r->flag, r->value ? " " : "", r->value ? r->value : "");
        fprintf(f, "  %-20s ", head);
        const char *help = r->help;
        if (!help) { /* --method: the names of the registry */
            names[0] = 0;
            for (int m = 0; m < method_count(); m++) {
                const size_t len = strlen(names);
                snprintf(names + len, sizeof names - len, "%s%s", m ? " | " : "", method_at(m)->name);
            }
            const size_t len = strlen(names);
            snprintf(names + len, sizeof names - len,
                     " | plugin:PATH[:ARGS]\n(default sample; a plug-in: a proposer in a shared library, "
                     "docs/extending.md)");
            help = names;
        }
        for (const char *p = help; *p; p++) {
            fputc(*p, f);
            if (*p == '\n') fprintf(f, "  %-20s ", "");
        }
        fputc('\n', f);
    }
}

void method_spec_label(const method_spec *s, char *buf, size_t size) {
    char what[400];
    if (s->method->label)
        s->method->label(s, what, sizeof what);
    else
        snprintf(what, sizeof what, "%s", method_name(s));
    if (method_has(s, METHOD_PROPOSES))
        snprintf(buf, size, "%s, %s rule", what, accept_rule_name(s->rule));
    else
        snprintf(buf, size, "%s", what);
}
