/* logits_check.h — a pass's numbers checked before anything is drawn from
 * them. A finite checkpoint can still overflow float32 in its activations
 * (norm weights near the bf16 maximum), and then every logit is NaN or
 * infinite (or, past a norm that overflowed, all 0): nothing may be
 * drawn from such a row, or the run would feed a token that does not exist
 * (−1) to the next pass, or print nonsense with exit 0. One scan of V
 * values, beside a pass that multiplies V × D. */
#ifndef SPECULA_LOGITS_CHECK_H
#define SPECULA_LOGITS_CHECK_H

#include "error.h"

/* Raw logits rows[n, V], the first at `position`: 0 when every value is
 * finite and not all are 0, else -1 and one sentence naming the position and
 * the likely cause. All 0 is the other face of an overflow: a norm whose sum
 * of squares is infinite scales its input to exact zeros, and the logits no
 * longer depend on the input (a uniform draw, exit 0). */
int logits_check_raw(const float *rows, int n, int V, int position, sp_error *err);

/* Processed distributions rows[n, V] (sampler_probs): 0 when every row has
 * mass to draw from, else -1 (sampler_probs gives an all-zero row when no
 * logit is above −inf, NaN counted as −inf). */
int logits_check_mass(const float *rows, int n, int V, int position, sp_error *err);

#endif
