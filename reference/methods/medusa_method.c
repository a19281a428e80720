/* medusa_method.c — Medusa as a method of the registry: heads on the target's hidden state propose a tree of
 * top-k rank paths (medusa.h), the built-in tree or one given with --tree. */
#include <math.h>
#include <string.h>

#include "registry.h"

static int set_tree(method_spec *s, const char *f, const char *v, sp_error *err) {
    if (strlen(v) >= sizeof s->tree_path) return sp_fail(err, "%s: the path is too long", f);
    snprintf(s->tree_path, sizeof s->tree_path, "%s", v);
    snprintf(s->tree_origin, sizeof s->tree_origin, "tree file %s", v);
    s->tree_given = 0;
    return 0;
}

static const method_flag medusa_flags[] = {
    {"--tree", "FILE",
     "Medusa candidate tree as JSON rank paths, e.g. [[0],[1],[0,0]] (default:\n"
     "built-in, 63 nodes over 4 heads)",
     set_tree},
    {NULL, NULL, NULL, NULL},
};

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

/* The tree is read here, against the heads; the proposer keeps a pointer to it, in the spec the built method
 * keeps. */
static int medusa_method_build(proposer *p, method_spec *s, const method_parts *parts, sp_error *err) {
    const medusa_heads *h = parts->heads;
    if (method_spec_tree(s, h->n_heads, parts->target->cfg->vocab_size, &s->tree, err)) return -1;
    s->tree_given = 1;
    return medusa_proposer_build(p, h, parts->target, &s->tree, method_children(s), err);
}

static void medusa_method_label(const method_spec *s, char *buf, size_t size) {
    if (s->tree.n > 0)
        snprintf(buf, size, "medusa (%d-node tree of depth %d)", s->tree.n, s->tree.max_depth);
    else
        snprintf(buf, size, "medusa (built-in tree)");
}

static int medusa_method_round(const method_spec *s, const run_accounting *runs, const method_costs *c,
                               method_round *out) {
    (void)s;
    out->tokens = accounting_tokens_per_pass(runs);
    out->alpha = NAN;
    out->m = c->heads_nodes;
    out->pass = c->heads_pass;
    out->proposer = c->heads_round;
    return out->m > 0 ? 0 : -1;
}

const method_desc medusa_method = {
    .name = "medusa",
    .summary = "Medusa: heads on the target's hidden state propose a tree of candidates, verified in one pass",
    .traits = METHOD_PROPOSES | METHOD_OWN_TREE | METHOD_HEADS | METHOD_SAMPLED_DRAFTS,
    .flags = medusa_flags,
    .build = medusa_method_build,
    .label = medusa_method_label,
    .round = medusa_method_round,
};
