/* lanes.h — the CPU engine's one way of adding a sum in lanes, in plain C that the compiler vectorises for any
 * target. Multiply and add stay separate (-std=c11: no contraction), so every caller, vectorised or not, gets the
 * same sum for the same inputs. */
#ifndef SPECULA_CPU_LANES_H
#define SPECULA_CPU_LANES_H

#define CPU_LANES 16

/* The fixed tree over the lanes (l + l+8, l + l+4, l + l+2, 0 + 1), into lane[0]. */
static inline float lanes_reduce(float lane[CPU_LANES]) {
    for (int half = CPU_LANES / 2; half > 0; half /= 2)
        for (int l = 0; l < half; l++) lane[l] += lane[l + half];
    return lane[0];
}

/* Σ a[t]·b[t]: lane l takes the terms t ≡ l mod 16 while 16 terms remain, then the tree, then the last n mod 16
 * terms in order. */
static inline float lanes_dot(const float *a, const float *b, int n) {
    float lane[CPU_LANES] = {0};
    int t = 0;
    for (; t + CPU_LANES <= n; t += CPU_LANES)
        for (int l = 0; l < CPU_LANES; l++) lane[l] += a[t + l] * b[t + l];
    float sum = lanes_reduce(lane);
    for (; t < n; t++) sum += a[t] * b[t];
    return sum;
}

/* Σ a[t], the same way. */
static inline float lanes_sum(const float *a, int n) {
    float lane[CPU_LANES] = {0};
    int t = 0;
    for (; t + CPU_LANES <= n; t += CPU_LANES)
        for (int l = 0; l < CPU_LANES; l++) lane[l] += a[t + l];
    float sum = lanes_reduce(lane);
    for (; t < n; t++) sum += a[t];
    return sum;
}

#endif
