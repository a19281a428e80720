/* engine_compare.h — what the engine's suites (test_engine.c on the CPU backend, test_engine_cuda.c on the CUDA
 * backend over the kernels' emulator) share to hold the engine up to the reference. */
#ifndef SPECULA_TEST_ENGINE_COMPARE_H
#define SPECULA_TEST_ENGINE_COMPARE_H

#include <stddef.h>

#include "dtype.h"
#include "engine_mtp.h"
#include "engine_target.h"
#include "fixtures.h"
#include "method.h"

/* The longest prefill both sides run: two prefill chunks (of 64) and five
 * KV blocks (of 16). */
#define N_PREFILL 70
#define N_MTP 7 /* MTP steps, each on the reference's hidden state of the position before */

/* The reference's outputs on one checkpoint, computed once and held up to
 * the engine in each of its modes. */
typedef struct {
    int n, V, D, has_mtp;   /* n ≤ N_PREFILL positions */
    float *logits, *hidden; /* [n, V], [n, D] */
    float *mtp;             /* [N_MTP, V] the MTP module's logits, when it has one */
} ref_outputs;

/* How far the engine's outputs are from the reference's: the largest
 * relative error of the prefill's logits, its hidden states and the MTP
 * module's logits (chained from the reference's hidden states). */
typedef struct {
    double logits, hidden, mtp;
} prefill_gap;

/* Largest |a − b| / (max |b| + tiny) over n values. */
double rel_error(const float *a, const float *b, size_t n);
/* Prefill logits and hidden states of tokens[n] through a target. */
void prefill_rows(decode_target *t, const int *tokens, int n, float *logits, float *hidden);
/* The token of prefill position i. */
int prefill_token(int i, int V);
/* Logits [(n_prompt + n_decode), V] (malloc'd) of the engine on dir with options o (its backend and KV cache):
 * the prefill of n_prompt tokens prefill_token(0 .. n_prompt), then path[n_decode] one decode step at a time, so
 * every configuration reads the same sequence. path NULL: each step takes the greedy token, written to chosen. */
float *engine_decode_logits(const char *dir, const engine_options *o, int n_prompt, int n_decode, const int *path,
                            int *chosen);
void ref_outputs_build(ref_outputs *r, const char *dir, int n);
void ref_outputs_free(ref_outputs *r);
/* The engine opened on dir with o against the reference's outputs. */
prefill_gap measure_engine(const ref_outputs *r, const char *dir, const engine_options *o);
/* Writes preset `preset` with `seed` in dtype into a fresh directory; mtp 0
 * leaves out the MTP module the preset has. */
void write_checkpoint(char *dir, size_t size, const char *preset, int mtp, uint64_t seed, dtype_t dtype);
/* The engine's own greedy oracle: one prefill of one token at a time and its argmax, no tree, no proposer, no
 * acceptance rule: out[L] after prompt[n]. */
void engine_greedy_oracle(decode_target *t, const int *prompt, int n, int L, int *out);

/* What a methods canary runs on: a target engine and a draft engine, each on its own options, and every
 * proposer over them (the draft as a stepper, the target's MTP module, Medusa heads of zero ResBlocks sharing
 * the reference model's lm_head, so each head ranks the target's own logits). Used in place: parts points into
 * the struct. */
typedef struct {
    engine te, de;
    decode_target t, dt;
    stepper draft, mtp;
    medusa_heads heads;
    method_parts parts;
} engine_parts;

void engine_parts_open(engine_parts *p, const fixture_model *target, const engine_options *target_options,
                       const fixture_model *draft, const engine_options *draft_options);
void engine_parts_close(engine_parts *p);

/* Every flags[f] (a method at temperature 0; EOS off) through parts from prompt[n] must give want[n_tokens]:
 * the greedy canary of each method, `what` naming the prompt in the failure. */
void assert_methods_give(const method_parts *parts, const char *const *flags, int n_flags, const int *prompt, int n,
                         const int *want, int n_tokens, const char *what);

#endif
