/* verify_coverage.c — the coverage table (verify_coverage.h). Every column is read from the parsed case, so the
 * table cannot drift from the catalogue. */
#include "verify_coverage.h"

#include <string.h>

#include "registry.h"
#include "verify_batch.h"

/* "chain k=3", "tree 2,2", "tree dynamic depth 3", "Medusa tree of 7 nodes, depth 3", "batch of 4: chain k=2; plain sampling; …", or
 * "—" for plain sampling. */
static void shape_text(const verify_case *c, char *out, size_t size) {
    char base[96];
    const method_spec *s = &c->spec;
    if (!method_has(s, METHOD_PROPOSES)) {
        snprintf(base, sizeof base, "—");
    } else if (method_has(s, METHOD_OWN_TREE)) {
        snprintf(base, sizeof base, "Medusa tree of %d nodes, depth %d", c->medusa_tree.n, c->medusa_tree.max_depth);
    } else if (s->shape.depth > 0) {
        char shape[64];
        tree_shape_format(&s->shape, shape, sizeof shape);
        snprintf(base, sizeof base, "tree %s", shape);
    } else {
        snprintf(base, sizeof base, "chain k=%d", c->k);
    }
    if (!c->batch) {
        snprintf(out, size, "%s", base);
        return;
    }
    int n = snprintf(out, size, "batch of %d: %s", VERIFY_BATCH_JOBS, base);
    for (int j = 1; j < VERIFY_BATCH_JOBS && n > 0 && (size_t)n < size; j++)
        n += snprintf(out + n, size - (size_t)n, "; %s", verify_batch_job_label(j));
}

/* "top-k 5, top-p 0.9, min-p 0.05", or "—". */
static void cuts_text(const sampler_params *sp, char *out, size_t size) {
    int n = 0;
    out[0] = '\0';
    if (sp->temperature > 0 && sp->top_k > 0) n += snprintf(out + n, size - (size_t)n, "top-k %d", sp->top_k);
    if (sp->temperature > 0 && sp->top_p < 1.0f)
        n += snprintf(out + n, size - (size_t)n, "%stop-p %g", n ? ", " : "", (double)sp->top_p);
    if (sp->temperature > 0 && sp->min_p > 0.0f)
        n += snprintf(out + n, size - (size_t)n, "%smin-p %g", n ? ", " : "", (double)sp->min_p);
    if (!n) snprintf(out, size, "—");
}

/* What the row's draws are compared with. */
static const char *held_to(const verify_case *c) {
    if (c->pair == VC_VS_SAMPLE) return "plain sampling's draws";
    if (c->expect_biased) return "the target's law, which it must miss";
    if (verify_case_follows_rule_law(c)) return "the typical rule's own law";
    if (c->batch) return "each sequence's own law, tagged";
    return "the target's law";
}

/* Every row runs on every backend mode `specula verify` has: the reference (--backend reference), the CPU engine in
 * its default mode (--backend cpu: bf16 weights, fast kernels, the law enumerated through it) and in its exact
 * cross-test mode (--backend cpu --dtype f32). */
#define BACKEND_MODES "reference; cpu bf16; cpu f32"

static void row(FILE *f, const verify_case *c) {
    char shape[200], cuts[96], control[96], engine_control[96];
    shape_text(c, shape, sizeof shape);
    cuts_text(&c->spec.sampling, cuts, sizeof cuts);
    verify_case_control_text(c, 0, control, sizeof control);
    verify_case_control_text(c, 1, engine_control, sizeof engine_control);
    fprintf(f, "| %s | %s | %s | %s V=%d L=%d | %s | %s | %s | %s | %g | %s | %s | %s |\n", c->name,
            c->primary ? "default" : "--all", BACKEND_MODES, verify_world_name(c->world), verify_world_vocab(c->world),
            c->L,
            c->method, shape, method_has(&c->spec, METHOD_PROPOSES) ? accept_rule_name(c->spec.rule) : "—", cuts, (double)c->spec.sampling.temperature, held_to(c),
            control, strcmp(control, engine_control) ? engine_control : "the same");
}

void verify_coverage_print(FILE *f, const verify_case *cases, int all) {
    fprintf(f, "| row | runs | backend modes | world, window | method | drafts | rule | cuts | T | held to | "
               "control (reference) | control (cpu) |\n");
    fprintf(f, "|---|---|---|---|---|---|---|---|---|---|---|---|\n");
    for (const verify_case *c = cases; c->name; c++)
        if (c->primary) row(f, c);
    if (all)
        for (const verify_case *c = cases; c->name; c++)
            if (!c->primary) row(f, c);
}
