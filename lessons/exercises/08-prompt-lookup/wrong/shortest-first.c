/* A wrong solution to exercise 8; its checker must reject it (tests/parts/exercises.sh).
 * Mistake: tries the n-gram lengths from 1 up, so a one-token match wins over a longer one.
 * Caught by: exercise_prompt_lookup/hand */
#include "lookup.h"

static int same_ngram(const int *ctx, int a, int b, int m) {
    for (int i = 0; i < m; i++)
        if (ctx[a - i] != ctx[b - i]) return 0;
    return 1;
}

int lookup_find(const int *ctx, int n, int max_ngram, int k, int *drafts) {
    const int longest = max_ngram < n - 1 ? max_ngram : n - 1;
    for (int m = 1; m <= longest; m++)
        for (int j = n - 2; j >= m - 1; j--) {
            if (!same_ngram(ctx, j, n - 1, m)) continue;
            for (int i = 0; i < k; i++) drafts[i] = j + 1 + i < n ? ctx[j + 1 + i] : drafts[j + 1 + i - n];
            return k;
        }
    return 0;
}
