/* fixtures.h — models for tests: random micro checkpoints written into a
 * scratch directory and loaded back, so every test starts from files on
 * disk exactly as a user's model would be. */
#ifndef SPECULA_TEST_FIXTURES_H
#define SPECULA_TEST_FIXTURES_H

#include <stdint.h>

#include "method.h"
#include "model.h"

typedef struct {
    char dir[512];
    model m;
} fixture_model;

/* Writes preset `preset` (tools/genmodel presets: "micro", "micro-draft", …)
 * with `seed` in float32 into a fresh tmpdir and loads it. `tweak` (may be
 * NULL) edits the config before writing. Fails the test on error. */
void fixture_model_open(fixture_model *f, const char *preset, uint64_t seed, void (*tweak)(model_config *));
void fixture_model_close(fixture_model *f);

/* The embedded trained target (models/tiny-shakespeare), or NULL when the
 * repository does not have it. */
const char *fixture_embedded_model(void);
/* The course model (models/course: 16 layers in the 27B's proportions), or NULL when it has no weights here. */
const char *fixture_course_model(void);

/* The models behind the decoding layer's interfaces (reference_target.h):
 * parts.target always, parts.draft when draft is not NULL, parts.mtp when
 * the target has an MTP module, parts.heads = heads. Must not move once open
 * (parts points into it). */
typedef struct {
    decode_target target;
    stepper draft, mtp;
    method_parts parts;
} fixture_parts;
void fixture_parts_open(fixture_parts *f, model *target, model *draft, const medusa_heads *heads);
void fixture_parts_close(fixture_parts *f);

/* beam_run on a reference target over m, built and released around it. */
int fixture_beam_run(model *m, const int *prompt, int n, const beam_options *bo, beam_output *out, sp_error *err);

/* A spec from generate's flags, e.g. "--method spec --k 3 --temperature 0";
 * fails the test when they do not parse. */
method_spec fixture_spec(const char *flags);

/* The independent greedy oracle of the canaries: the prompt, then L tokens,
 * each the argmax of model_forward's logits after the last — no decoding
 * layer, no proposer, no verify pass, no acceptance rule. out[L]. */
void fixture_greedy_oracle(model *m, const int *prompt, int n_prompt, int L, int *out);

#endif
