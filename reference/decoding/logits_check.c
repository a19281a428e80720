/* logits_check.c — see logits_check.h. */
#include "logits_check.h"

#include <math.h>
#include <stddef.h>

#define CAUSE "the model's activations overflow float32 (weights out of scale for its inputs?)"

int logits_check_raw(const float *rows, int n, int V, int position, sp_error *err) {
    for (int i = 0; i < n; i++) {
        const float *row = rows + (size_t)i * V;
        int bad = 0, nonzero = 0;
        for (int v = 0; v < V; v++) {
            bad += !isfinite(row[v]);
            nonzero |= row[v] != 0.0f;
        }
        if (bad)
            return sp_fail(err, "position %d: %d of the %d logits are NaN or infinite: %s", position + i, bad, V,
                           CAUSE);
        /* lm_head has no bias: every logit is exactly 0 only when the final normed state is zero, which a norm
         * whose sum of squares overflowed to inf makes of any input (a uniform row of other values is a model's
         * choice, and passes) */
        if (!nonzero)
            return sp_fail(err, "position %d: all %d logits are 0, whatever the input: %s", position + i, V, CAUSE);
    }
    return 0;
}

int logits_check_mass(const float *rows, int n, int V, int position, sp_error *err) {
    for (int i = 0; i < n; i++) {
        const float *row = rows + (size_t)i * V;
        int any = 0;
        for (int v = 0; v < V && !any; v++) any = row[v] > 0.0f;
        if (!any)
            return sp_fail(err, "position %d: no token has a probability above 0 (the logits are NaN or -inf): %s",
                           position + i, CAUSE);
    }
    return 0;
}
