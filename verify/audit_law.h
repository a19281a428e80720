/* audit_law.h — where each arm's draws fall against the target's law, for engines that run one of this project's
 * checkpoints. A specula target (the reference or the engine) computes the law; each drawn token becomes a
 * randomised probability integral transform (PIT), which one goodness-of-fit test can check. */
#ifndef SPECULA_AUDIT_LAW_H
#define SPECULA_AUDIT_LAW_H

#include <stdint.h>

#include "audit.h"
#include "audit_samples.h"
#include "sampler.h"
#include "target.h"

typedef void (*audit_progress_fn)(void *user, int64_t done, int64_t total);

/* Adds the transforms of s (continuations of prompt[n_prompt], n_prompt ≥ 1)
 * under t's processed distribution at sp: at position t, p_t is the law of the
 * token after the prompt and the sample's own first t tokens, with the arms'
 * temperature and cuts. The uniforms U come from Philox
 * with `seed` (stream: the sample, counter: the position), so a run is
 * reproducible. banned[n_banned]: tokens the engine never draws (an engine
 * told to ignore EOS gives them a logit of −inf): removed from the logits
 * before the temperature and the cuts. out: audit_pit_init'ed with s->L. */
int audit_law_pit(decode_target *t, const int *prompt, int n_prompt, const sampler_params *sp, const int *banned,
                  int n_banned, const audit_samples *s, uint64_t seed, audit_progress_fn progress, void *user,
                  audit_pit *out, sp_error *err);

/* The transform of token x under probs[V] with uniform U, in [0, 1), or −1 when probs[x] is 0:
 *     u = P(tokens ranked above x) + U · p(x),   tokens ranked by descending p (ties by id).
 * If every x_t is drawn from its p_t given the prefix, each u is uniform given everything before it, so the
 * u of all samples and positions are independent and uniform: one goodness-of-fit test to the uniform law
 * checks the whole joint law of the sequences. Ranking by probability makes a too cold arm pile up near 0
 * and a too hot one spread towards 1. */
double audit_pit_value(const float *probs, int V, int x, double U);

#endif
