/* attention.h — the engine's attention for one head and one query: op_attention_head (ops/ops.h) with the q·k
 * products added in lanes (lanes.h) and the softmax of activations.h; the weighted sum of the values is the
 * reference's. Only the last bits differ; the exact cross-test mode calls op_attention_head itself. */
#ifndef SPECULA_CPU_ATTENTION_H
#define SPECULA_CPU_ATTENTION_H

/* out[Dh] = Σ_t softmax(scale · q·keys[t])_t · values[t], over t < n; scores[n] is scratch. */
void cpu_attention_head(float *out, const float *q, const float *const *keys, const float *const *values, int n, int Dh,
                        float scale, float *scores);

#endif
