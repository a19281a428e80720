/* lookup_method.c — prompt lookup as a method of the registry: drafts copied from the context after the last
 * match of its final n-gram (lookup.h), no model; q is a point mass, so verify computes its exact law. */
#include "lookup.h"
#include "parse.h"
#include "registry.h"

static int set_ngram(method_spec *s, const char *f, const char *v, sp_error *err) {
    return parse_int(f, v, 1, LOOKUP_MAX_NGRAM, &s->ngram, err);
}

static const method_flag lookup_flags[] = {
    {"--ngram", "N",
     "lookup: match the context's last N tokens, then N - 1, ..., 1, against the\n"
     "prompt and the tokens so far (default 3, at most 16)",
     set_ngram},
    {NULL, NULL, NULL, NULL},
};

static int lookup_method_build(proposer *p, method_spec *s, const method_parts *parts, sp_error *err) {
    return lookup_proposer_build(p, parts->target->cfg->vocab_size, s->k, s->ngram, err);
}

static void lookup_method_label(const method_spec *s, char *buf, size_t size) {
    snprintf(buf, size, "lookup k=%d, ngram %d", s->k, s->ngram);
}

static int lookup_method_point_drafts(const method_spec *s, const int *ctx, int n, int *drafts) {
    return lookup_find(ctx, n, s->ngram, s->k, drafts);
}

const method_desc lookup_method = {
    .name = "lookup",
    .summary = "prompt lookup: drafts copied from the context after a match of its last n-gram, no model",
    .traits = METHOD_PROPOSES | METHOD_CHAIN | METHOD_MAY_IDLE,
    .flags = lookup_flags,
    .build = lookup_method_build,
    .label = lookup_method_label,
    .point_drafts = lookup_method_point_drafts,
};
