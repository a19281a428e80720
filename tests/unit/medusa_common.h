/* medusa_common.h — what the Medusa suites share: a micro checkpoint (V 32,
 * D 32, DeltaNet and attention layers) and a second one with another seed,
 * written once per test case, and heads with random weights. */
#ifndef SPECULA_TEST_MEDUSA_COMMON_H
#define SPECULA_TEST_MEDUSA_COMMON_H

#include <stdint.h>

#include "medusa.h"
#include "model.h"

extern char medusa_tmp[256], medusa_micro[320], medusa_other[320];

/* Check's unchecked fixtures of a test case. */
void medusa_setup(void);
void medusa_teardown(void);

void medusa_load_model(model *m, const char *dir);

/* Heads with every weight drawn uniformly in ±scale (stream `seed`); shared
 * projections point at m's lm_head. */
void medusa_random_heads(medusa_heads *h, const model *m, int n_heads, int n_layers, int own, uint64_t seed,
                         float scale);

/* What heads are loaded against (reference_medusa_base), in a buffer that
 * the next call overwrites: pass it straight to medusa_load. */
const medusa_base *medusa_base_of(const model *m);

#endif
