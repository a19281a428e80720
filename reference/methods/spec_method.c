/* spec_method.c — draft-model speculation as a method of the registry: a chain of k drafts, or a tree of a static
 * shape or a node budget, from a draft model with the target's tokenizer (speculative.h). */
#include "registry.h"
#include "speculative.h"

static int spec_method_build(proposer *p, method_spec *s, const method_parts *parts, sp_error *err) {
    if (s->shape.depth > 0)
        return spec_tree_proposer_build(p, parts->draft, parts->target, &s->shape, method_children(s), err);
    return spec_proposer_build(p, parts->draft, parts->target, s->k, err);
}

static int spec_method_round(const method_spec *s, const run_accounting *runs, const method_costs *c,
                             method_round *out) {
    return method_round_drafter(s, runs, c, c->draft_step, out);
}

const method_desc spec_method = {
    .name = "spec",
    .summary = "speculative sampling with a draft model: chains or trees of drafts, the exact rule",
    .traits = METHOD_PROPOSES | METHOD_CHAIN | METHOD_TREES | METHOD_DRAFT_MODEL | METHOD_SAMPLED_DRAFTS,
    .build = spec_method_build,
    .label = method_drafter_label,
    .round = spec_method_round,
};
