/* registry.h — every decoding method as one descriptor: its name, what it needs and does (traits), its own flags,
 * how it is built, labelled and modelled. A new method is one file with its descriptor and one row in
 * registry.c; the commands, the verify catalogue and the cost model read descriptors, never a list of methods. */
#ifndef SPECULA_REGISTRY_H
#define SPECULA_REGISTRY_H

#include "accounting.h"
#include "method.h"

enum {
    METHOD_PROPOSES = 1u << 0,       /* drafts for the round loop (without it: plain decoding, or beam search) */
    METHOD_CHAIN = 1u << 1,          /* a chain of --k drafts a round */
    METHOD_TREES = 1u << 2,          /* trees of drafts on request (--tree-shape, --tree-budget) */
    METHOD_OWN_TREE = 1u << 3,       /* always a tree of its own (--tree): the round's depth is the tree's */
    METHOD_DRAFT_MODEL = 1u << 4,    /* runs with a draft model (method_parts.draft) */
    METHOD_MTP_MODULE = 1u << 5,     /* runs with the target's MTP module (method_parts.mtp) */
    METHOD_HEADS = 1u << 6,          /* runs with Medusa heads (method_parts.heads) */
    METHOD_BEAM_SEARCH = 1u << 7,    /* beam search: no round loop, raw log-probabilities, nothing drawn */
    METHOD_GREEDY_ONLY = 1u << 8,    /* decodes at temperature 0 only */
    METHOD_MAY_IDLE = 1u << 9,       /* a round may propose nothing (prompt lookup, a plug-in) */
    METHOD_PLUGIN = 1u << 10,        /* a proposer from a shared library: --method plugin:PATH[:ARGS] */
    METHOD_SAMPLED_DRAFTS = 1u << 11 /* its drafts may be drawn from q (not only top ranks or a point mass) */
};

/* One of a method's own flags (the flags every method shares are in method_flags.c). */
typedef struct {
    const char *flag;  /* "--ngram" */
    const char *value; /* the value's name in the help; NULL for a switch */
    const char *help;  /* lines after the first are indented under it */
    int (*set)(method_spec *s, const char *flag, const char *value, sp_error *err);
} method_flag;

/* A cost the cost model reads: milliseconds, and the same over t(1) (NAN: not measured). */
typedef struct {
    double ms, ratio;
} method_cost;

/* The costs measured apart from the runs (specula bench). */
typedef struct {
    method_cost (*pass)(const void *ctx, int m); /* one pass verifying a chain of m nodes, committing all of it */
    const void *ctx;
    method_cost draft_step, mtp_step;    /* one step of one position */
    method_cost heads_round, heads_pass; /* Medusa: one round's proposal, the pass over its tree */
    int heads_nodes;                     /* that tree's nodes, the root included */
} method_costs;

/* What a round costs and yields: E / (t(m)/t(1) + P/t(1)) is the predicted speed-up over plain decoding. */
typedef struct {
    double tokens;        /* E: E(α̂, k) for a chain; the measured tokens per pass for the others */
    double alpha;         /* α̂ (NAN where the method has no single α) */
    int m;                /* nodes one round verifies */
    method_cost pass;     /* t(m) */
    method_cost proposer; /* P: the proposer's time per round */
} method_round;

struct method_desc {
    const char *name;    /* --method NAME */
    const char *summary; /* one line for --help */
    unsigned traits;
    const method_flag *flags; /* its own flags, up to a {NULL} row (NULL: none) */
    /* The proposer of a finished spec over parts, which hold what the traits ask for (NULL: no proposer: plain
     * decoding, beam search). s is the spec the built method keeps: a build may complete it (Medusa's tree). */
    int (*build)(proposer *p, method_spec *s, const method_parts *parts, sp_error *err);
    /* The method's own defaults and checks after parsing, strict as method_spec_finish (NULL: none). */
    int (*finish)(method_spec *s, int strict, sp_error *err);
    /* What the method is, without its rule: "mtp k=4, sampled drafts" (NULL: its name alone). */
    void (*label)(const method_spec *s, char *buf, size_t size);
    /* The cost model of a round from the costs and the runs' pooled counters (NULL: method_round_generic). */
    int (*round)(const method_spec *s, const run_accounting *runs, const method_costs *c, method_round *out);
    /* A proposer whose drafts are a function of the context (q a point mass at each) gives the drafts of the
     * round after ctx[0..n) here, returning how many; verify computes its exact law from them (NULL: none). */
    int (*point_drafts)(const method_spec *s, const int *ctx, int n, int *drafts);
};

/* The built-ins, in the order the help lists them. */
int method_count(void);
const method_desc *method_at(int i);
/* A built-in by name, or NULL. "plugin:PATH[:ARGS]" is the plug-in method, its path and arguments in the spec. */
const method_desc *method_find(const char *name);
/* 1 when the spec's method has every one of `traits`. */
int method_has(const method_spec *s, unsigned traits);
/* The deepest draft of a round: k for a chain, a tree's depth, 0 without a proposer. */
int method_depth(const method_spec *s);
/* 0 when parts hold what the spec's method needs (a draft model, an MTP module, Medusa heads), else −1 saying
 * which is missing. */
int method_check_parts(const method_spec *s, const method_parts *parts, sp_error *err);
/* How a tree's children are chosen under the spec's rule: drawn i.i.d. or without replacement from q (the exact
 * rules), or the proposer's top ranks (typical, greedy). */
children_kind method_children(const method_spec *s);
/* The label of a drafter of chains or trees: "NAME tree 2,2,1 (10 nodes)" or "NAME k=4". */
void method_drafter_label(const method_spec *s, char *buf, size_t size);
/* The cost model for any proposer from what its runs did: m from the nodes its rounds verified on average,
 * E the measured tokens per pass, P unknown (0: a proposer's time is not timed apart). */
int method_round_generic(const method_spec *s, const run_accounting *runs, const method_costs *c, method_round *out);
/* The cost model of a drafter whose every step reads one position at cost `step`: a chain of k (E(α̂, k), m = k + 1,
 * P = k steps) or a tree (the runs' steps per round, its nodes, the measured tokens per pass). */
int method_round_drafter(const method_spec *s, const run_accounting *runs, const method_costs *c, method_cost step,
                         method_round *out);
/* The cost model of s: its method's hook, else the generic one. */
int method_round_model(const method_spec *s, const run_accounting *runs, const method_costs *c, method_round *out);

extern const method_desc greedy_method, sample_method, beam_method, spec_method, mtp_method, medusa_method,
    lookup_method, plugin_method;

#endif
