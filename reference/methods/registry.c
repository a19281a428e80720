/* registry.c — the table of built-in methods and what is read off a descriptor alone (registry.h). */
#include "registry.h"

#include <math.h>
#include <string.h>

/* The built-ins, in the order --help lists them. A new method: its file, and a row here. */
extern const method_desc bigram_method;
static const method_desc *const builtins[] = {
    &greedy_method, &sample_method, &beam_method,   &spec_method,
    &medusa_method, &mtp_method,    &lookup_method, &bigram_method,
};
#define N_BUILTINS ((int)(sizeof builtins / sizeof builtins[0]))

int method_count(void) { return N_BUILTINS; }

const method_desc *method_at(int i) { return i >= 0 && i < N_BUILTINS ? builtins[i] : NULL; }

const method_desc *method_find(const char *name) {
    for (int i = 0; i < N_BUILTINS; i++)
        if (!strcmp(name, builtins[i]->name)) return builtins[i];
    return NULL;
}

int method_has(const method_spec *s, unsigned traits) { return s->method && (s->method->traits & traits) == traits; }

int method_depth(const method_spec *s) {
    if (method_has(s, METHOD_OWN_TREE)) return s->tree.max_depth;
    if (method_has(s, METHOD_TREES) && s->shape.depth > 0) return s->shape.depth;
    return method_has(s, METHOD_CHAIN) ? s->k : 0;
}

int method_check_parts(const method_spec *s, const method_parts *parts, sp_error *err) {
    if (method_has(s, METHOD_DRAFT_MODEL) && !parts->draft)
        return sp_fail(err, "--method %s needs a draft model (--draft DIR)", method_name(s));
    if (method_has(s, METHOD_MTP_MODULE) && !parts->mtp)
        return sp_fail(err, "%s has no MTP module (no mtp.* tensors): MTP needs one", parts->target->path);
    if (method_has(s, METHOD_HEADS) && !parts->heads)
        return sp_fail(err, "--method %s needs Medusa heads (--medusa FILE, or MODEL-medusa/ beside the model)",
                       method_name(s));
    return 0;
}

/* How a tree's children are chosen under the spec's rule (registry.h). */
children_kind method_children(const method_spec *s) {
    return s->rule == RULE_EXACT          ? CHILDREN_IID
           : s->rule == RULE_EXACT_NOREPL ? CHILDREN_NO_REPLACEMENT
                                          : CHILDREN_TOP_RANKS;
}

/* "NAME tree 2,2,1 (10 nodes)" or "NAME k=4". */
void method_drafter_label(const method_spec *s, char *buf, size_t size) {
    if (s->shape.depth > 0) {
        char shape[3 * TREE_SHAPE_MAX_DEPTH + 1];
        tree_shape_format(&s->shape, shape, sizeof shape);
        snprintf(buf, size, "%s tree %s (%d nodes)", method_name(s), shape, tree_shape_nodes(&s->shape));
    } else {
        snprintf(buf, size, "%s k=%d", method_name(s), s->k);
    }
}

/* The rounds that drafted exactly d tokens verify d + 1 nodes: t(m) averaged over the rounds as they ran; m, the
 * nodes of a round that drafted, on average (1 when none did). */
int method_round_generic(const method_spec *s, const run_accounting *runs, const method_costs *c, method_round *out) {
    (void)s;
    const long rounds = runs->target_passes;
    if (rounds < 1) return -1;
    double pass_ms = 0, pass_ratio = 0, drafted_nodes = 0;
    for (int d = 0; d <= ACC_MAX_DEPTH; d++) {
        const long at_least = d == 0 ? rounds : runs->proposed[d];
        const long beyond = d < ACC_MAX_DEPTH ? runs->proposed[d + 1] : 0;
        const double share = (double)(at_least - beyond) / (double)rounds;
        if (share <= 0) continue;
        const method_cost t = c->pass(c->ctx, d + 1);
        pass_ms += share * t.ms, pass_ratio += share * t.ratio;
        if (d > 0) drafted_nodes += (double)(at_least - beyond) * (d + 1);
    }
    out->tokens = accounting_tokens_per_pass(runs);
    out->alpha = accounting_alpha(runs);
    out->m = runs->proposed[1] ? (int)lround(drafted_nodes / (double)runs->proposed[1]) : 1;
    out->pass = (method_cost){pass_ms, pass_ratio};
    out->proposer = (method_cost){0, 0}; /* not timed apart: its time shows in the run, beside the model */
    return isfinite(pass_ratio) ? 0 : -1;
}

int method_round_drafter(const method_spec *s, const run_accounting *runs, const method_costs *c, method_cost step,
                         method_round *out) {
    if (s->shape.depth > 0) { /* a tree: one step per node with children, as many as the runs made */
        const long rounds = runs->target_passes;
        const double steps = rounds ? (double)runs->proposer_steps / rounds : NAN;
        out->m = tree_shape_nodes(&s->shape) + 1;
        out->tokens = accounting_tokens_per_pass(runs);
        out->alpha = NAN;
        out->proposer = (method_cost){steps * step.ms, steps * step.ratio};
    } else {
        out->m = s->k + 1;
        out->alpha = accounting_alpha(runs);
        out->tokens = expected_tokens_per_pass(out->alpha, s->k);
        out->proposer = (method_cost){s->k * step.ms, s->k * step.ratio};
    }
    out->pass = c->pass(c->ctx, out->m);
    return isfinite(out->pass.ratio) && isfinite(out->proposer.ratio) ? 0 : -1;
}

int method_round_model(const method_spec *s, const run_accounting *runs, const method_costs *c, method_round *out) {
    return s->method->round ? s->method->round(s, runs, c, out) : method_round_generic(s, runs, c, out);
}
