/* method.h — one description of a decoding method (method_spec, parsed from the command line or a catalogue
 * entry with the same flags and checks) and the one factory that builds it. Every command, the statistical
 * catalogue and the notebooks build their methods here, so the same flags always give the same method. */
#ifndef SPECULA_METHOD_H
#define SPECULA_METHOD_H

#include <stdint.h>
#include <stdio.h>

#include "beam.h"
#include "decode_batch.h"
#include "medusa.h"
#include "stepper.h"
#include "target.h"

/* A method of the registry (registry.h): its name, traits, flags and builder. */
typedef struct method_desc method_desc;

typedef enum { MTP_DRAFTS_DEFAULT = 0, MTP_DRAFTS_ARGMAX, MTP_DRAFTS_SAMPLED } mtp_drafts;

#define METHOD_PLUGIN_MAX_PATH 4096
#define METHOD_PLUGIN_MAX_ARGS 512
#define METHOD_OWN_SETTINGS 8

typedef struct {
    const method_desc *method; /* the registry's (registry.h); "sample" by default */
    int k;                     /* spec, mtp, lookup: drafts per round (default 4) */
    tree_shape shape;          /* spec, mtp: a tree of drafts of this shape (--tree-shape); depth 0: a chain of k;
                                * a budget: a dynamic tree, capped by --tree-shape or to depth k */
    int tree_budget;           /* spec, mtp: --tree-budget (0: none); method_spec_finish puts it in shape */
    int tree_raw_confidence;   /* spec, mtp: --tree-raw-confidence (the dynamic tree's raw confidences) */
    int ngram;                 /* lookup: the longest n-gram it looks up (default 3) */
    sampler_params sampling;   /* default temperature 1 (greedy: 0) */
    uint64_t seed;             /* default 1 */
    int max_tokens;            /* default 32 */
    int stop_at_eos;           /* default 1 */
    mtp_drafts drafts;
    accept_rule rule;                     /* RULE_DEFAULT until method_spec_finish resolves it */
    float typical_epsilon, typical_delta; /* Medusa's defaults 0.09, 0.3 */
    /* Medusa's tree: `tree` when tree_given (set in code), else the file
     * tree_path names (--tree, read when the method is built), else the
     * built-in tree for the heads (method_spec_tree). */
    medusa_tree tree;
    int tree_given;
    char tree_path[4096];
    char tree_origin[300]; /* "tree file PATH", for messages */
    beam_options beam;
    char plugin_path[METHOD_PLUGIN_MAX_PATH]; /* --method plugin:PATH[:ARGS]: the shared library */
    char plugin_args[METHOD_PLUGIN_MAX_ARGS]; /* ... and what it is given ("" when none) */
    int own[METHOD_OWN_SETTINGS];             /* the settings of a method's own flags, as it numbers them (0: unset) */
    uint64_t given;                           /* bit f set: flag f was given (method_flags.c numbers them) */
} method_spec;

method_spec method_spec_defaults(void);

/* The method's name as --method takes it ("plugin:PATH" for a plug-in). */
const char *method_name(const method_spec *s);
const char *mtp_drafts_name(mtp_drafts d); /* "argmax", "sampled" */

/* Reads argv[*i] as a method flag (the shared ones of method_flags.c, and every method's own in the registry):
 * 1 when it was one
 * (its value consumed, *i advanced), 0 when it is not a method flag, −1 on a
 * bad value (err says which). */
int method_spec_flag(method_spec *s, int argc, char **argv, int *i, sp_error *err);
/* The same over a whole string of flags, e.g. "--method mtp --k 3
 * --temperature 0.8 --mtp-argmax" (catalogue entries), then
 * method_spec_finish. */
int method_spec_parse(method_spec *s, const char *flags, sp_error *err);

/* Resolves the defaults that depend on s->kind and the temperature, and checks the combination: a flag given
 * for a method it does not apply to is an error (strict), or ignored (!strict: bench and plot apply one set of
 * flags to several methods). The defaults:
 *   MTP drafts   argmax at temperature 0, sampled from the MTP's processed
 *                distribution above it (argmax drafts make q one-hot, and a
 *                one-hot q is rejected whenever p puts less than all its mass
 *                on it; sampled drafts are accepted more often);
 *   Medusa and   greedy at temperature 0 (children: the top ranks), exact
 *   draft-tree   without replacement above (children drawn from q);
 *   rules        (spec and mtp with --tree-shape; an MTP tree's drafts are
 *                sampled from q, or its top ranks under the greedy rule)
 *   spec, MTP,   the exact rule.
 *   lookup */
int method_spec_finish(method_spec *s, int strict, sp_error *err);
/* A copy of base (parsed, not finished) for another method, finished not
 * strictly. */
int method_spec_for(const method_spec *base, const method_desc *method, method_spec *out, sp_error *err);

/* Medusa's tree for heads of n_heads heads, chosen as method_spec.tree says,
 * checked against the heads and the vocabulary V. */
int method_spec_tree(const method_spec *s, int n_heads, int V, medusa_tree *out, sp_error *err);

/* 1 when flag `name` (e.g. "--tree") was given. */
int method_spec_given(const method_spec *s, const char *name);

/* The help lines of the method flags that apply to at least one method with every trait of `need` and none of
 * `refuse` (registry.h), leaving out the flags in `except` (NULL-terminated; may be NULL). */
void method_spec_usage(FILE *f, unsigned need, unsigned refuse, const char *const *except);

/* What the method is, in one line: "mtp k=4, sampled drafts, exact rule",
 * "medusa (63-node tree of depth 4), greedy rule", "sample". Temperature and
 * cuts are not part of it. */
void method_spec_label(const method_spec *s, char *buf, size_t size);

/* ---- the factory -------------------------------------------------------------- */

/* The models a method runs with; the factory takes what its method needs. */
typedef struct {
    decode_target *target;
    stepper *draft;            /* spec; NULL: no draft model */
    stepper *mtp;              /* mtp; NULL: the target has no MTP module */
    const medusa_heads *heads; /* medusa; NULL: no heads */
} method_parts;

/* A method ready to run: its proposer (NULL for plain decoding) and the
 * decode options of the spec. Callers may add hooks (on_commit,
 * custom_accept) to options before decode_run. */
typedef struct {
    method_spec spec;
    proposer *proposer;
    proposer storage;
    decode_options options;
} method_built;

/* Fails with a clear message when a part the method needs is missing or
 * does not fit the target, or for beam search (beam_run). */
int method_build(method_built *b, const method_spec *s, const method_parts *parts, sp_error *err);
void method_release(method_built *b);

/* Build, run on parts->target as the commands run it (decode_batch_one: decode_run's tokens, with the target's
 * hooks), release. */
int method_generate(const method_spec *s, const method_parts *parts, const int *prompt, int n_prompt,
                    decode_output *out, sp_error *err);

#endif
