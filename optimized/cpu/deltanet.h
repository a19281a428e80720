/* deltanet.h — the engine's gated delta-rule step: op_gated_delta_step's arithmetic (ops/ops.h), each element by
 * the same float32 operations in the same order, so state and output are the reference's bit for bit. The state
 * is walked row by row, which vectorises, read from the parent's state and stored once as the node's. */
#ifndef SPECULA_CPU_DELTANET_H
#define SPECULA_CPU_DELTANET_H

/* The widest value head the step's scratch holds (the 27B's is 128). */
#define CPU_DELTA_MAX_DV 1024

/* One step of one head: S_out[Dk, Dv] = the state after token (q, k, v)
 * from S_in (S_out may be S_in: in place), out[Dv] the read-out. q and k
 * are L2-normalised in place as op_gated_delta_step does; g is the
 * log-decay, beta the write strength. Dv ≤ CPU_DELTA_MAX_DV. step_log, when not
 * NULL, receives [1 + Dk + Dv]: the decay, the normalised k and the write
 * u, what cpu_delta_replay needs to redo the state update. */
void cpu_delta_step(float *out, float *S_out, const float *S_in, float *q, float *k, const float *v, float g,
                    float beta, int Dk, int Dv, float *step_log);

/* op_conv_step (ops/ops.h) over C channels: its sums (op_conv_taps), the SiLU by cpu_act_silu. */
void cpu_conv_step(float *out, float *state, const float *x, const float *w, int C, int K);

/* S[Dk, Dv] ← the state update a logged step made (decay·S + k uᵀ), in place, with the step's own float
 * operations: the same state, bit for bit. A tree node past the root keeps its state only in the pass's scratch
 * and logs its step; the commit replays the accepted path's steps, so a pass writes no lasting state but the
 * root's. */
void cpu_delta_replay(float *S, const float *step_log, int Dk, int Dv);

#endif
