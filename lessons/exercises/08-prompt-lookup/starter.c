/* Exercise 8 — a new proposer: prompt lookup (lessons/04-drafts.md, "A
 * proposer with no model"). Text with repeats often goes on the way an
 * earlier occurrence of its last few tokens did; prompt lookup proposes
 * exactly that, with no draft model at all. The proposer around your
 * function is written (reference/methods/lookup.c): it keeps the prompt and
 * the committed tokens, calls lookup_find once a round, and chains the
 * drafts under the root with a one-hot q, so the exact rule accepts each
 * draft with probability p(draft). Write lookup_find as
 * reference/methods/lookup.h specifies it. The checker (make exercise EX=8
 * FILE=this-file) tests it on hand-made contexts, against a brute-force
 * reading of the specification on random ones, through the round loop's
 * accounting on a micro model at temperature 0, and runs the project's
 * distribution suite lookup_dist with your lookups: the method's law must
 * be the target's, and every planted bug in the acceptance rule must be
 * rejected — which needs drafts to act on. */
#include "lookup.h"

/* The drafts after the context ctx[0..n):
 *   for m = min(max_ngram, n − 1) down to 1: find the most recent earlier
 *   occurrence of the last m tokens, the largest j ≤ n − 2 (j ≥ m − 1) with
 *   ctx[j − m + 1 .. j] = ctx[n − m .. n − 1]; the first m that has one wins;
 *   then drafts[i] = ctx[j + 1 + i] for i < k, and where j + 1 + i ≥ n the
 *   copy reads the drafts it already wrote: drafts[i] = drafts[j + 1 + i − n]
 *   (a repeating pattern goes on repeating); return k.
 * No occurrence for any m (or n < 2): return 0 and write nothing. */
int lookup_find(const int *ctx, int n, int max_ngram, int k, int *drafts) {
    /* ---- gap 1: the n-gram lengths m, longest first, and for each the positions j, most recent first;
     *             on a match of ctx[j − m + 1 .. j] with the context's last m tokens, go to gap 2 ---- */

    /* ---- gap 2: the forward copy of k drafts from j + 1 on, then return k ---- */

    /* ---- end of the gaps ---- */
    (void)ctx, (void)n, (void)max_ngram, (void)k, (void)drafts;
    return 0;
}
