/* A wrong solution to exercise 8; its checker must reject it (tests/parts/exercises.sh).
 * Mistake: the copy stops at the end of the context and returns fewer than k drafts.
 * Caught by: exercise_prompt_lookup/hand */
#include "lookup.h"

static int same_ngram(const int *ctx, int a, int b, int m) {
    for (int i = 0; i < m; i++)
        if (ctx[a - i] != ctx[b - i]) return 0;
    return 1;
}

int lookup_find(const int *ctx, int n, int max_ngram, int k, int *drafts) {
    for (int m = max_ngram < n - 1 ? max_ngram : n - 1; m >= 1; m--)
        for (int j = n - 2; j >= m - 1; j--) {
            if (!same_ngram(ctx, j, n - 1, m)) continue;
            int got = 0;
            while (got < k && j + 1 + got < n) {
                drafts[got] = ctx[j + 1 + got];
                got++;
            }
            return got;
        }
    return 0;
}
