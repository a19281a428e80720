/* method.c — the one factory: a finished method_spec and the models it runs with become a proposer and decode
 * options (method.h). Every proposer of the project is built here, by its method's descriptor (registry.h). */
#include "method.h"

#include <string.h>

#include "registry.h"

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
    o->rule = s->rule == RULE_DEFAULT ? RULE_EXACT : s->rule;
    o->typical_epsilon = s->typical_epsilon;
    o->typical_delta = s->typical_delta;
    if (method_has(s, METHOD_BEAM_SEARCH)) return sp_fail(err, "beam search has no proposer: run it with beam_run");
    if (!s->method->build) return 0; /* plain decoding */
    if (method_check_parts(s, parts, err) || s->method->build(&b->storage, &b->spec, parts, err)) return -1;
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
