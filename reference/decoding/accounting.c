/* accounting.c — per-run counters and the figures derived from them. */
#include "accounting.h"

#include <math.h>
#include <string.h>

void accounting_init(run_accounting *a, const char *method, int k, double target_bytes, double proposer_bytes) {
    memset(a, 0, sizeof *a);
    a->method = method;
    a->k = k;
    a->target_bytes_per_pass = target_bytes;
    a->proposer_bytes_per_step = proposer_bytes;
}

void accounting_round(run_accounting *a, int proposed_depth, int accepted, int committed, int stopped_by_rejection) {
    if (proposed_depth > ACC_MAX_DEPTH) proposed_depth = ACC_MAX_DEPTH;
    a->target_passes++;
    a->committed += committed;
    int acc_committed = committed > 0 ? committed - 1 : 0; /* the pass itself supplies one token */
    if (acc_committed > accepted) acc_committed = accepted;
    a->accepted_total += acc_committed;
    for (int d = 1; d <= proposed_depth; d++) a->proposed[d]++;
    for (int d = 1; d <= accepted && d <= ACC_MAX_DEPTH; d++) a->accepted[d]++;
    if (proposed_depth > 0) a->length_hist[accepted <= ACC_MAX_DEPTH ? accepted : ACC_MAX_DEPTH + 1]++;
    a->rejected_rounds += stopped_by_rejection != 0;
}

double accounting_tokens_per_pass(const run_accounting *a) {
    return a->target_passes ? (double)a->committed / (double)a->target_passes : 0;
}

double accounting_alpha(const run_accounting *a) {
    long acc = 0;
    for (int d = 1; d <= ACC_MAX_DEPTH; d++) acc += a->accepted[d];
    double denom = (double)acc + (double)a->rejected_rounds;
    return denom > 0 ? (double)acc / denom : NAN;
}

double expected_tokens_per_pass(double alpha, int k) {
    if (alpha >= 1.0) return k + 1.0;
    return (1.0 - pow(alpha, k + 1)) / (1.0 - alpha);
}

double accounting_bytes_per_token(const run_accounting *a) {
    if (!a->committed) return 0;
    return (a->target_passes * a->target_bytes_per_pass + a->proposer_steps * a->proposer_bytes_per_step) /
           (double)a->committed;
}

static double decode_rate(const run_accounting *a) {
    return a->decode_s > 0 && a->committed > 1 ? (double)(a->committed - 1) / a->decode_s : 0;
}

void accounting_print(const run_accounting *a, FILE *f) {
    double alpha = accounting_alpha(a);
    fprintf(f, "method %s, k %d: %ld tokens in %ld target passes = %.3f tokens/pass\n", a->method, a->k, a->committed,
            a->target_passes, accounting_tokens_per_pass(a));
    if (a->k > 0) {
        fprintf(f, "acceptance per position:");
        for (int d = 1; d <= a->k && d <= ACC_MAX_DEPTH; d++)
            fprintf(f, " %d:%.3f", d, a->proposed[d] ? (double)a->accepted[d] / a->proposed[d] : 0.0);
        fprintf(f, "\naccepted-length histogram:");
        for (int j = 0; j <= a->k && j <= ACC_MAX_DEPTH; j++) fprintf(f, " %d:%ld", j, a->length_hist[j]);
        fprintf(f, "\nalpha estimate %.3f, E(alpha,k) = %.3f tokens/pass (observed %.3f)\n", alpha,
                isnan(alpha) ? NAN : expected_tokens_per_pass(alpha, a->k), accounting_tokens_per_pass(a));
    }
    fprintf(f, "weight bytes read per committed token %.4g (target %.4g/pass x %ld, proposer %.4g/step x %ld)\n",
            accounting_bytes_per_token(a), a->target_bytes_per_pass, a->target_passes, a->proposer_bytes_per_step,
            a->proposer_steps);
    fprintf(f, "time to first token %.3f s, decode %.1f tokens/s\n", a->ttft_s, decode_rate(a));
}

void accounting_print_json(const run_accounting *a, FILE *f) {
    double alpha = accounting_alpha(a);
    fprintf(f, "{\"method\": \"%s\", \"k\": %d, \"target_passes\": %ld, \"committed\": %ld, \"accepted\": %ld, ",
            a->method, a->k, a->target_passes, a->committed, a->accepted_total);
    fprintf(f, "\"tokens_per_pass\": %.6f, \"acceptance_per_position\": [", accounting_tokens_per_pass(a));
    for (int d = 1; d <= a->k && d <= ACC_MAX_DEPTH; d++)
        fprintf(f, "%s%.6f", d > 1 ? ", " : "", a->proposed[d] ? (double)a->accepted[d] / a->proposed[d] : 0.0);
    fprintf(f, "], \"proposed_per_position\": [");
    for (int d = 1; d <= a->k && d <= ACC_MAX_DEPTH; d++) fprintf(f, "%s%ld", d > 1 ? ", " : "", a->proposed[d]);
    fprintf(f, "], \"accepted_length_histogram\": [");
    for (int j = 0; j <= a->k && j <= ACC_MAX_DEPTH; j++) fprintf(f, "%s%ld", j ? ", " : "", a->length_hist[j]);
    fprintf(f, "], \"drafted_rounds\": %ld, \"rejected_rounds\": %ld, \"target_positions\": %ld, ", a->proposed[1],
            a->rejected_rounds, a->target_positions);
    if (isnan(alpha))
        fprintf(f, "\"alpha\": null, \"expected_tokens_per_pass\": null, ");
    else
        fprintf(f, "\"alpha\": %.6f, \"expected_tokens_per_pass\": %.6f, ", alpha,
                expected_tokens_per_pass(alpha, a->k));
    fprintf(f,
            "\"proposer_steps\": %ld, \"target_bytes_per_pass\": %.0f, \"proposer_bytes_per_step\": %.0f, "
            "\"weight_bytes_per_token\": %.1f, \"ttft_s\": %.6f, \"decode_s\": %.6f, \"decode_tokens_per_s\": %.3f}\n",
            a->proposer_steps, a->target_bytes_per_pass, a->proposer_bytes_per_step, accounting_bytes_per_token(a),
            a->ttft_s, a->decode_s, decode_rate(a));
}
