/* ops.h — the numerical building blocks of the qwen3_5 forward: float32, one thread, no intrinsics. They are
 * the definition of each op; the engine's CPU backend and the CUDA kernels' CPU twins call them. Shapes are
 * row-major [rows, cols]; a linear layer's weight W is [n_out, n_in], as stored in the checkpoint. */
#ifndef SPECULA_OPS_H
#define SPECULA_OPS_H

/* Scalar activations. */
float op_sigmoid(float x);
float op_silu(float x);     /* x·sigmoid(x) */
float op_softplus(float x); /* log(1 + e^x), as torch (linear above 20) */

/* The gates of one Gated DeltaNet value head at one position, from the
 * token's projections a = in_proj_a·x, b = in_proj_b·x (one entry per value
 * head) and the head's parameters A_log, dt_bias; as Hugging Face
 * transformers' qwen3_5 computes them:
 *   beta = b.sigmoid()
 *   g = -A_log.float().exp() * softplus(a.float() + dt_bias)
 * β ∈ (0, 1) is the write strength of the delta rule; g ≤ 0 is the log of the
 * state's decay (op_gated_delta_step scales the state by exp(g)). */
float op_deltanet_beta(float b);                              /* sigmoid(b) */
float op_deltanet_decay(float a, float A_log, float dt_bias); /* −exp(A_log)·softplus(a + dt_bias) */

/* The output gate of qwen3_5's gated attention (q_proj yields a gate beside
 * each head's query; transformers: attn_output * torch.sigmoid(gate), before
 * o_proj): out[i] ← out[i]·sigmoid(gate[i]) for i < n. */
void op_output_gate(float *out, const float *gate, int n);

/* out[n_out] = W[n_out, n_in] · x[n_in]. out must not alias x. */
void op_matvec(float *out, const float *W, const float *x, int n_out, int n_in);

/* Zero-centred RMSNorm: out = x · rsqrt(mean(x²) + eps) · (1 + w). out may alias x. */
void op_rmsnorm(float *out, const float *x, const float *w, int n, float eps);

/* The DeltaNet output norm: out = x · rsqrt(mean(x²) + eps) · w · silu(z)
 * (plain weight, no 1+). out may alias x. */
void op_rmsnorm_gated(float *out, const float *x, const float *w, const float *z, int n, float eps);

/* x ← x · rsqrt(Σx² + eps) (the DeltaNet q/k normalisation, eps 1e-6). */
void op_l2norm(float *x, int n, float eps);

/* out[n] = silu(gate[n]) · up[n]. out may alias either input. */
void op_swiglu(float *out, const float *gate, const float *up, int n);

/* In-place softmax over n entries (max-subtracted; −inf entries give 0). */
void op_softmax(float *x, int n);

/* Rotate-half RoPE on one head vector x[Dh] at position pos, R =
 * int(head_dim · partial_rotary_factor): with h = ⌈R/2⌉, for i < h and
 * f = pos·theta^(−2i/R),
 *   x[i]   ← x[i]·cos f − x[i+h]·sin f
 *   x[i+h] ← x[i+h]·cos f + x[i]·sin f
 * Dims 2h..Dh−1 pass through. For an odd R this rotates R + 1 dims with the
 * divisor R, as transformers does (its frequencies are θ^(−arange(0, R, 2)/R),
 * and it rotates twice as many dims as it has frequencies). */
void op_rope(float *x, int R, int pos, double theta);

/* Attention of one query head over n cached positions:
 *   out[Dh] = Σ_t softmax_t(scale · q·k_t) · v_t
 * keys[t] and values[t] point at the head's [Dh] vectors of position t, so a
 * paged cache or a tree can pass any set of positions. scores[n] is scratch. */
void op_attention_head(float *out, const float *q, const float *const *keys, const float *const *values, int n, int Dh,
                       float scale, float *scores);

/* One step of the causal depthwise conv of width K with SiLU, for C channels:
 *   out[c] = silu(Σ_{j<K−1} w[c,j]·state[c,j] + w[c,K−1]·x[c])
 * then the state shifts left by one and x enters at the end.
 * state[C, K−1] holds the previous K−1 inputs, oldest first (zeros at the start
 * of a sequence). w[C, K] is the checkpoint's conv1d.weight [C, 1, K]. */
void op_conv_step(float *out, float *state, const float *x, const float *w, int C, int K);
/* The same step without the SiLU: out[c] is the sum above, the state shifted alike (op_conv_step is this, then
 * the SiLU of each out[c]). */
void op_conv_taps(float *out, float *state, const float *x, const float *w, int C, int K);

/* One step of the gated delta rule for one value head, with the recurrent
 * state S[Dk, Dv] (fp32):
 *   q ← l2norm(q)/sqrt(Dk), k ← l2norm(k)          (eps 1e-6; q and k are modified)
 *   S ← exp(g)·S;  u = v − Sᵀk;  S ← S + k (β u)ᵀ;  out = Sᵀq
 * g ≤ 0 is the log decay op_deltanet_decay, β = op_deltanet_beta. */
void op_gated_delta_step(float *out, float *S, float *q, float *k, const float *v, float g, float beta, int Dk, int Dv);

#endif
