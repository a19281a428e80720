/* attention.h — the engine's attention for one head and one query:
 * op_attention_head (ops/ops.h) with its dot products q·k added in 16
 * lanes (lane l takes the terms d ≡ l mod 16, then a fixed tree over the
 * lanes, then the last Dh mod 16 terms in order), which the compiler
 * vectorises; the softmax is cpu_act_softmax (activations.h) and the
 * weighted sum of the values the reference's, each out[d] adding its terms
 * in order. Only the last bits differ from the reference's; the engine's
 * exact cross-test mode (float32 weights) calls op_attention_head itself. */
#ifndef SPECULA_CPU_ATTENTION_H
#define SPECULA_CPU_ATTENTION_H

/* out[Dh] = Σ_t softmax(scale · q·keys[t])_t · values[t], over t < n; scores[n] is scratch. */
void cpu_attention_head(float *out, const float *q, const float *const *keys, const float *const *values, int n, int Dh,
                        float scale, float *scores);

#endif
