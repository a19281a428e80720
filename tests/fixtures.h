/* fixtures.h — models for tests: random micro checkpoints written into a
 * scratch directory and loaded back, so every test starts from files on
 * disk exactly as a user's model would be. */
#ifndef SPECULA_TEST_FIXTURES_H
#define SPECULA_TEST_FIXTURES_H

#include <stdint.h>

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

#endif
