/* A wrong solution to exercise 8; its checker must reject it (tests/parts/exercises.sh).
 * Mistake: only the longest n-gram (min(max_ngram, n − 1) tokens) is looked up; no shorter one when it fails.
 * Caught by: exercise_prompt_lookup/hand */
#include "lookup.h"

static int same_ngram(const int *ctx, int a, int b, int m) {
    for (int i = 0; i < m; i++)
        if (ctx[a - i] != ctx[b - i]) return 0;
    return 1;
}

int lookup_find(const int *ctx, int n, int max_ngram, int k, int *drafts) {
    const int m = max_ngram < n - 1 ? max_ngram : n - 1;
    if (m < 1) return 0;
    for (int j = n - 2; j >= m - 1; j--) {
        if (!same_ngram(ctx, j, n - 1, m)) continue;
        for (int i = 0; i < k; i++) drafts[i] = j + 1 + i < n ? ctx[j + 1 + i] : drafts[j + 1 + i - n];
        return k;
    }
    return 0;
}
