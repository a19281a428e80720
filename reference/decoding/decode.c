/* decode.c — the decode options and decode_run, the round loop of decode.h on one sequence (its body is
 * decode_batch.c's, the same loop over B sequences). */
#include "decode.h"

#include "decode_batch.h"

#include <stdlib.h>
#include <string.h>

decode_options decode_defaults(void) {
    decode_options o;
    memset(&o, 0, sizeof o);
    o.sampling = sampler_defaults();
    o.seed = 1;
    o.max_tokens = 64;
    o.stop_at_eos = 1;
    o.rule = RULE_EXACT;
    o.typical_epsilon = 0.09f;
    o.typical_delta = 0.3f;
    return o;
}

void decode_output_free(decode_output *out) {
    free(out->tokens);
    out->tokens = NULL;
    out->n = 0;
}

/* One job on its own: the batch's loop (decode_batch.c) with a batch of one, so one sequence and many
 * decode alike by construction. */
int decode_run(decode_target *t, proposer *prop, const int *prompt, int n_prompt, const decode_options *opt,
               decode_output *out, sp_error *err) {
    decode_job job = {prop, prompt, n_prompt, *opt};
    return decode_batch_run(t, &job, 1, NULL, out, err);
}
