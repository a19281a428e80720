/* broken_checkpoints.h — the catalogue of malformed checkpoints every loader must refuse, each with what the
 * refusal must say. test_loader.c holds model_load to the needles; test_engine.c holds engine_open to
 * model_load's very message. */
#ifndef SPECULA_TEST_BROKEN_CHECKPOINTS_H
#define SPECULA_TEST_BROKEN_CHECKPOINTS_H

#include "dtype.h"

/* Needles that stand for the checkpoint's directory and for
 * DIR/model.safetensors, which are only known when the test runs. */
#define BROKEN_AT_DIR "<dir>"
#define BROKEN_AT_FILE "<dir>/model.safetensors"

/* Each entry writes a generated micro checkpoint with one thing broken: a tensor dropped or reshaped, a config
 * field removed or out of range, a non-finite weight, the file truncated, the header length, overlapping offsets,
 * an unknown dtype, no file at all. */
typedef struct {
    const char *name;              /* what is broken, for the test's messages */
    void (*make)(const char *dir); /* writes the broken checkpoint into dir, an empty directory */
    const char *needles[6];        /* what the refusal must contain; NULL-terminated */
} broken_checkpoint;

extern const broken_checkpoint broken_checkpoints[];
extern const int n_broken_checkpoints;

/* The valid checkpoint every entry starts from: preset (tools/genmodel) in
 * dtype, seed 1, written into dir. Fails the test on error. */
void broken_write_valid(const char *dir, const char *preset, dtype_t dtype);

/* A valid micro checkpoint in dtype with element 5 of BROKEN_VALUE_TENSOR set
 * to value (a valid checkpoint or not, depending on the value). */
#define BROKEN_VALUE_TENSOR "model.language_model.layers.3.self_attn.q_proj.weight"
void broken_write_with_value(const char *dir, dtype_t dtype, float value);

/* needle with BROKEN_AT_DIR / BROKEN_AT_FILE resolved against dir, into out[size]. */
const char *broken_needle(const char *needle, const char *dir, char *out, size_t size);

#endif
