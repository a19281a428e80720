/* plain_method.c — plain decoding as methods of the registry: greedy (temperature 0) and sampling. Neither has a
 * proposer: every round verifies the pending token alone. */
#include <math.h>

#include "registry.h"

static int greedy_method_finish(method_spec *s, int strict, sp_error *err) {
    if (method_spec_given(s, "--temperature") && s->sampling.temperature != 0 && strict)
        return sp_fail(err, "--method greedy decodes at temperature 0; drop --temperature or use --method sample");
    s->sampling.temperature = 0;
    return 0;
}

static int plain_method_round(const method_spec *s, const run_accounting *runs, const method_costs *c,
                              method_round *out) {
    (void)s;
    out->tokens = accounting_tokens_per_pass(runs);
    out->alpha = NAN;
    out->m = 1;
    out->pass = c->pass(c->ctx, 1);
    out->proposer = (method_cost){0, 0};
    return 0;
}

const method_desc greedy_method = {
    .name = "greedy",
    .summary = "plain decoding at temperature 0: the target's argmax, one token a pass",
    .traits = METHOD_GREEDY_ONLY,
    .finish = greedy_method_finish,
    .round = plain_method_round,
};

const method_desc sample_method = {
    .name = "sample",
    .summary = "plain sampling from the target's processed distribution, one token a pass",
    .round = plain_method_round,
};
