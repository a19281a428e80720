/* method.c — the one factory: a finished method_spec and the models it runs
 * with become a proposer and decode options (see method.h). Every proposer
 * of the project is built here and nowhere else. */
#include "method.h"

#include <string.h>

#include "lookup.h"
#include "mtp.h"
#include "speculative.h"

/* The rule of the round loop, and how a tree's children are chosen. */
static accept_rule accept_of(method_rule r) {
    return r == METHOD_RULE_GREEDY ? RULE_GREEDY : r == METHOD_RULE_TYPICAL ? RULE_TYPICAL : RULE_EXACT;
}

static children_kind children_of(method_rule r) {
    return r == METHOD_RULE_EXACT          ? CHILDREN_IID
           : r == METHOD_RULE_EXACT_NOREPL ? CHILDREN_NO_REPLACEMENT
                                           : CHILDREN_TOP_RANKS;
}

int method_spec_tree(const method_spec *s, int n_heads, int V, medusa_tree *out, sp_error *err) {
    const char *origin = s->tree_origin[0] ? s->tree_origin : "tree file (built-in)";
    if (s->tree_given)
        *out = s->tree;
    else if (s->tree_path[0] && medusa_tree_load(out, s->tree_path, err))
        return -1;
    else if (!s->tree_path[0])
        medusa_tree_default(out, n_heads);
    return medusa_tree_validate(out, n_heads, V, origin, err);
}

static int build_medusa(method_built *b, const method_parts *parts, sp_error *err) {
    method_spec *s = &b->spec;
    const medusa_heads *h = parts->heads;
    if (!h)
        return sp_fail(err, "--method medusa needs Medusa heads (--medusa FILE, or MODEL-medusa/ beside the model)");
    if (method_spec_tree(s, h->n_heads, parts->target->cfg->vocab_size, &s->tree, err)) return -1;
    s->tree_given = 1; /* the built method holds its tree */
    return medusa_proposer_build(&b->storage, h, parts->target, &s->tree, children_of(s->rule), err);
}

static int build_proposer(method_built *b, const method_parts *parts, sp_error *err) {
    const method_spec *s = &b->spec;
    switch (s->kind) {
    case METHOD_SPEC:
        if (!parts->draft) return sp_fail(err, "--method spec needs a draft model (--draft DIR)");
        if (s->shape.depth > 0)
            return spec_tree_proposer_build(&b->storage, parts->draft, parts->target, &s->shape, children_of(s->rule),
                                            err);
        return spec_proposer_build(&b->storage, parts->draft, parts->target, s->k, err);
    case METHOD_MTP:
        if (!parts->mtp)
            return sp_fail(err, "%s has no MTP module (no mtp.* tensors): MTP needs one", parts->target->path);
        if (s->shape.depth > 0)
            return mtp_tree_proposer_build(&b->storage, parts->mtp, &s->shape, children_of(s->rule), 1, err);
        return mtp_proposer_build(&b->storage, parts->mtp, s->k, s->drafts == MTP_DRAFTS_SAMPLED, err);
    case METHOD_MEDUSA: return build_medusa(b, parts, err);
    case METHOD_LOOKUP: /* needs nothing but the target's vocabulary */
        return lookup_proposer_build(&b->storage, parts->target->cfg->vocab_size, s->k, s->ngram, err);
    case METHOD_BEAM: return sp_fail(err, "beam search has no proposer: run it with beam_run");
    default: return sp_fail(err, "method %d has no proposer", (int)s->kind);
    }
}

int method_build(method_built *b, const method_spec *s, const method_parts *parts, sp_error *err) {
    memset(b, 0, sizeof *b);
    b->spec = *s;
    if (!parts->target) return sp_fail(err, "method_build: no target");
    decode_options *o = &b->options;
    *o = decode_defaults();
    o->sampling = s->sampling;
    o->seed = s->seed;
    o->max_tokens = s->max_tokens;
    o->stop_at_eos = s->stop_at_eos;
    o->rule = accept_of(s->rule);
    o->typical_epsilon = s->typical_epsilon;
    o->typical_delta = s->typical_delta;
    if (s->kind == METHOD_GREEDY || s->kind == METHOD_SAMPLE) return 0;
    if (build_proposer(b, parts, err)) return -1;
    b->proposer = &b->storage;
    return 0;
}

void method_release(method_built *b) {
    if (b->proposer) b->proposer->release(b->proposer);
    b->proposer = NULL;
}

int method_generate(const method_spec *s, const method_parts *parts, const int *prompt, int n_prompt,
                    decode_output *out, sp_error *err) {
    method_built b;
    memset(out, 0, sizeof *out);
    if (method_build(&b, s, parts, err)) return -1;
    int rc = decode_batch_one(parts->target, b.proposer, prompt, n_prompt, &b.options, out, err);
    method_release(&b);
    return rc;
}
