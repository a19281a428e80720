/* verify_catalogue.c — the rows of `specula verify` and tests/stat (verify_cases.h), each written in the flags of
 * `specula generate` and parsed once by the method factory. verify_cases.c runs them. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "registry.h"
#include "verify_cases.h"
/* Field order: name, primary, method, flags, pair, L, max_tokens, control bug,
 * control temperature, expect_biased, max_samples (spec and k are filled when
 * the catalogue is parsed), then optionally .prompt and .world. The planned sizes are in
 * docs/verification.md.
 * Argmax MTP drafts are named explicitly: above temperature 0 the default is
 * sampled drafts. */
#define CASE(...)                                                                                                      \
    { __VA_ARGS__, .k = 0 }

/* Prompt lookup's prompt: its last two tokens occurred before, so the first round already drafts (1, 3, 5). */
#define LOOKUP_PROMPT "3 5 1 3 5"
#define SMALL_LOOKUP_PROMPT "0 2 1 0 2"

static verify_case catalogue[] = {
    /* The default rows: the long-window world (V = 3, verify_cases.h), L = k + 2 with a budget of L + 1, so
     * that every window holds the k drafts of the first round, its bonus token when all are accepted, and
     * the first token of the next round, which drafts (K = 1) even after a full acceptance. k = 1…4 across
     * the rows; each control is a bug of that part of the round (docs/verification.md, "Default rows"). */
    CASE("sample T=0.8 L=4", 1, "sample", "--method sample --temperature 0.8", VC_EXACT, 4, 4, PLANT_NONE, 1.2f, 0, 0,
         .world = VERIFY_SMALL),
    CASE("spec k=1 T=1 L=3", 1, "spec", "--method spec --k 1 --temperature 1", VC_EXACT, 3, 4, PLANT_BONUS_FROM_PARENT,
         0.0f, 0, 0, .world = VERIFY_SMALL),
    CASE("spec k=2 T=0.8 L=4", 1, "spec", "--method spec --k 2 --temperature 0.8", VC_EXACT, 4, 5,
         PLANT_RESIDUAL_UNNORMALISED, 0.0f, 0, 0, .world = VERIFY_SMALL),
    CASE("spec k=3 T=0.8 L=5", 1, "spec", "--method spec --k 3 --temperature 0.8", VC_EXACT, 5, 6, PLANT_NONE, 0.4f, 0,
         0, .world = VERIFY_SMALL),
    CASE("spec k=4 T=1.2 top-p 0.9 L=6", 1, "spec", "--method spec --k 4 --temperature 1.2 --top-p 0.9", VC_EXACT, 6, 7,
         PLANT_BONUS_FROM_PARENT, 0.0f, 0, 0, .world = VERIFY_SMALL),
    CASE("spec k=2 T=1 L=4 vs sample", 1, "spec", "--method spec --k 2 --temperature 1", VC_VS_SAMPLE, 4, 5, PLANT_NONE,
         0.5f, 0, 0, .world = VERIFY_SMALL),
    /* MTP: argmax drafts (control: the correction drawn from p, which may return the rejected draft), and
     * sampled drafts at T = 0.6 whose control draws them at T = 1 while q is reported at 0.6 */
    CASE("mtp argmax k=2 T=1 L=4", 1, "mtp", "--method mtp --k 2 --temperature 1 --mtp-argmax", VC_EXACT, 4, 5,
         PLANT_RESIDUAL_IS_P, 0.0f, 0, 0, .world = VERIFY_SMALL),
    CASE("mtp sampled k=3 T=0.6 L=5", 1, "mtp", "--method mtp --k 3 --temperature 0.6 --mtp-sample", VC_EXACT, 5, 6,
         PLANT_NONE, 1.0f, 0, 0, .world = VERIFY_SMALL),
    CASE("typical mtp k=2 T=0.8 L=4", 1, "typical", "--method mtp --k 2 --temperature 0.8 --mtp-argmax --rule typical",
         VC_EXACT, 4, 5, PLANT_NONE, 0.0f, 1, 0, .world = VERIFY_SMALL),
    CASE("typical mtp k=2 T=0 L=4", 1, "typical", "--method mtp --k 2 --temperature 0 --mtp-argmax --rule typical",
         VC_EXACT, 4, 5, PLANT_BONUS_FROM_PARENT, 0.0f, 0, 0, .world = VERIFY_SMALL),
    /* Medusa over the small world's tree (depth 3): the residual left unnormalised shows in the later
     * siblings' tests; the draws without replacement verified as if i.i.d. */
    CASE("medusa iid T=0.8 L=5", 1, "medusa", "--method medusa --temperature 0.8 --rule exact", VC_EXACT, 5, 6,
         PLANT_RESIDUAL_UNNORMALISED, 0.0f, 0, 0, .world = VERIFY_SMALL),
    CASE("medusa without replacement T=0.8 L=5", 1, "medusa", "--method medusa --temperature 0.8 --rule exact-norepl",
         VC_EXACT, 5, 6, PLANT_NO_REPLACEMENT_AS_IID, 0.0f, 0, 0, .world = VERIFY_SMALL),
    CASE("typical medusa T=0.8 L=5", 1, "typical", "--method medusa --temperature 0.8 --rule typical", VC_EXACT, 5, 6,
         PLANT_NONE, 0.0f, 1, 0, .world = VERIFY_SMALL),
    CASE("typical medusa T=0 L=5", 1, "typical", "--method medusa --temperature 0 --rule typical", VC_EXACT, 5, 6,
         PLANT_BONUS_FROM_PARENT, 0.0f, 0, 0, .world = VERIFY_SMALL),
    /* Medusa's typical rule on a draft model's chain, tested against the rule's own law (spec_law's typical
     * branch), not the target's: epsilon 0.4 and delta 0.6 put the threshold min(0.4, 0.6·e^−H) on both sides
     * of its cap across the world's rows, so a change to the threshold moves the law. Control: the token after
     * the last accepted draft drawn from its parent's row. */
    CASE("typical spec k=2 T=1.2 L=4", 1, "typical",
         "--method spec --k 2 --temperature 1.2 --rule typical --typical-epsilon 0.4 --typical-delta 0.6", VC_EXACT,
         4, 5, PLANT_BONUS_FROM_PARENT, 0.0f, 0, 0, .world = VERIFY_SMALL),
    /* prompt lookup after a prompt whose last two tokens occurred before (it drafts 1, 0 at once) */
    CASE("lookup k=2 T=1 L=4", 1, "lookup", "--method lookup --k 2 --temperature 1", VC_EXACT, 4, 5,
         PLANT_BONUS_FROM_PARENT, 0.0f, 0, 0, .prompt = SMALL_LOOKUP_PROMPT, .world = VERIFY_SMALL),
    /* trees of drafts: depth 2, so L = 4; three children drawn without replacement are all three tokens */
    CASE("spec tree 2,2 iid T=0.8 L=4", 1, "spec-tree", "--method spec --tree-shape 2,2 --temperature 0.8 --rule exact",
         VC_EXACT, 4, 5, PLANT_NONE, 0.4f, 0, 0, .world = VERIFY_SMALL),
    CASE("spec tree 3,1 without replacement T=0.5 L=4", 1, "spec-tree",
         "--method spec --tree-shape 3,1 --temperature 0.5 --rule exact-norepl", VC_EXACT, 4, 5,
         PLANT_NO_REPLACEMENT_AS_IID, 0.0f, 0, 0, .world = VERIFY_SMALL),
    CASE("mtp tree 2,2 without replacement T=0.5 L=4", 1, "mtp-tree",
         "--method mtp --tree-shape 2,2 --temperature 0.5 --rule exact-norepl", VC_EXACT, 4, 5, PLANT_NONE, 0.25f, 0, 0,
         .world = VERIFY_SMALL),
    /* The EOS world (verify_cases.h): the runs stop at token 2, and an EOS draft accepted without the ratio
     * test shows only there — on a chain and on a tree of drafts (tests/stat runs the chain
     * only, to keep its time) */
    CASE("spec k=2 T=1 EOS L=4", 1, "spec", "--method spec --k 2 --temperature 1", VC_EXACT, 4, 5,
         PLANT_EOS_DRAFT_UNTESTED, 0.0f, 0, 0, .world = VERIFY_EOS),
    CASE("spec tree 2,2 without replacement T=1 EOS L=4", 1, "spec-tree",
         "--method spec --tree-shape 2,2 --temperature 1 --rule exact-norepl", VC_EXACT, 4, 5, PLANT_EOS_DRAFT_UNTESTED,
         0.0f, 0, 0, .world = VERIFY_EOS, .coverage = 1),
    /* bugs that show only deep in a round: the target committing one node short after two accepted drafts
     * (only the rounds after see it); q renormalised after a rejected sibling at the root only (only after
     * a partial match, under the root's one child with its three children) */
    CASE("spec k=2 T=1 L=4", 1, "spec", "--method spec --k 2 --temperature 1", VC_EXACT, 4, 5,
         PLANT_COMMIT_PARENT_AFTER_TWO, 0.0f, 0, 0, .world = VERIFY_SMALL),
    CASE("spec tree 1,3 without replacement T=1 L=4", 1, "spec-tree",
         "--method spec --tree-shape 1,3 --temperature 1 --rule exact-norepl", VC_EXACT, 4, 5,
         PLANT_NO_REPLACEMENT_ROOT_ONLY, 0.0f, 0, 0, .world = VERIFY_SMALL),
    /* The cuts, in the main world where they bind (vocabulary 8): top-k with min-p on plain sampling, and all
     * three on a chain, against laws that processed_law.h computes without the sampler's code, so a slip in a
     * cut moves the samples and not the law. A draft tree of eight siblings drawn without replacement reaches
     * a fourth and later sibling often at T = 0.6, where a slip in q's renormalisation after the third shows.
     * Like every default row, their windows hold the bonus token and the next round (L = k + 2). */
    CASE("sample T=0.9 top-k 5 min-p 0.05 L=3", 1, "sample", "--method sample --temperature 0.9 --top-k 5 --min-p 0.05",
         VC_EXACT, 3, 3, PLANT_NONE, 1.35f, 0, 0),
    CASE("spec k=1 T=0.8 top-k 5 top-p 0.9 min-p 0.05 L=3", 1, "spec",
         "--method spec --k 1 --temperature 0.8 --top-k 5 --top-p 0.9 --min-p 0.05", VC_EXACT, 3, 4,
         PLANT_BONUS_FROM_PARENT, 0.0f, 0, 0),
    CASE("spec tree 8 without replacement T=0.6 L=3", 1, "spec-tree",
         "--method spec --tree-shape 8 --temperature 0.6 --rule exact-norepl", VC_EXACT, 3, 4,
         PLANT_NO_REPLACEMENT_AS_IID, 0.0f, 0, 0),
    /* A batch: four sequences after four prompts of different lengths, each with its own method (this spec, plain
     * sampling, a 2,1 draft tree without replacement, MTP k=2), decoded together (one verify pass a round over all
     * of them); each draw reports one of them, tagged with its index, against 1/4 of that sequence's law
     * (verify_batch.h). Control: the third sequence verified against the second's distributions (planted_batch.h). */
    CASE("batch spec k=2 + sample + spec tree + mtp T=1 L=4", 1, "spec", "--method spec --k 2 --temperature 1", VC_EXACT, 4, 5, PLANT_NONE,
         0.0f, 0, 0, .world = VERIFY_SMALL, .batch = 1),
    /* The main world (V = 8) at L = 2 and 3: every method, k = 1…4, each cut. Its windows end before the
     * bonus token for k ≥ 2, so the default rows are the long windows of the small world below. */
    CASE("sample T=0.8", 0, "sample", "--method sample --temperature 0.8", VC_EXACT, 2, 2, PLANT_NONE, 1.2f, 0, 0),
    CASE("spec k=3 T=0.8", 0, "spec", "--method spec --k 3 --temperature 0.8", VC_EXACT, 2, 4, PLANT_NONE, 0.4f, 0, 0),
    CASE("spec k=3 T=0.8 vs sample", 0, "spec", "--method spec --k 3 --temperature 0.8", VC_VS_SAMPLE, 2, 4, PLANT_NONE,
         0.4f, 0, 100000),
    /* typical acceptance at temperature 0 on MTP drafts and on Medusa's top ranks: a point mass (the greedy
     * sequence; 20 000 draws bound the TV), whose control draws the next token one position early. (The L = 2
     * rows of MTP, Medusa, typical acceptance above 0 and the 2,2 draft tree are superseded by the default
     * rows' long windows; the grid below keeps L = 3, cuts, and trees wider than the small world allows.) */
    CASE("typical mtp k=3 T=0", 0, "typical", "--method mtp --k 3 --temperature 0 --mtp-argmax --rule typical",
         VC_EXACT, 2, 4, PLANT_BONUS_FROM_PARENT, 0.0f, 0, 20000),
    CASE("typical medusa T=0", 0, "typical", "--method medusa --temperature 0 --rule typical", VC_EXACT, 2, 4,
         PLANT_BONUS_FROM_PARENT, 0.0f, 0, 20000),
    /* every k = 1…4, L = 2 and 3, each cut, a budget that cuts the proposal short; Medusa over the 12-node
     * tree, children i.i.d. or without replacement (exact rule) or top ranks (typical acceptance, biased above
     * temperature 0; its control is the exact rule on i.i.d. drafts) */
    CASE("sample T=1", 0, "sample", "--method sample --temperature 1", VC_EXACT, 3, 3, PLANT_NONE, 1.5f, 0, 0),
    CASE("sample T=0.7 top-k 4", 0, "sample", "--method sample --temperature 0.7 --top-k 4", VC_EXACT, 3, 3, PLANT_NONE,
         1.05f, 0, 0),
    CASE("spec k=1 T=1", 0, "spec", "--method spec --k 1 --temperature 1", VC_EXACT, 2, 2, PLANT_NONE, 0.5f, 0, 0),
    CASE("spec k=2 T=1", 0, "spec", "--method spec --k 2 --temperature 1", VC_EXACT, 3, 3, PLANT_NONE, 0.5f, 0, 0),
    CASE("spec k=3 T=0.8 top-k 5", 0, "spec", "--method spec --k 3 --temperature 0.8 --top-k 5", VC_EXACT, 3, 4,
         PLANT_NONE, 0.4f, 0, 0),
    CASE("spec k=4 T=1.2 top-p 0.9", 0, "spec", "--method spec --k 4 --temperature 1.2 --top-p 0.9", VC_EXACT, 3, 5,
         PLANT_NONE, 0.6f, 0, 0),
    CASE("spec k=4 T=0.6 budget 2", 0, "spec", "--method spec --k 4 --temperature 0.6", VC_EXACT, 2, 2, PLANT_NONE,
         0.3f, 0, 0),
    CASE("spec k=2 T=1 vs sample", 0, "spec", "--method spec --k 2 --temperature 1", VC_VS_SAMPLE, 3, 3, PLANT_NONE,
         0.5f, 0, 0),
    CASE("mtp argmax k=2 T=1", 0, "mtp", "--method mtp --k 2 --temperature 1 --mtp-argmax", VC_EXACT, 3, 3,
         PLANT_RESIDUAL_IS_P, 0.0f, 0, 0),
    CASE("mtp argmax k=4 T=0.8 top-p 0.9", 0, "mtp", "--method mtp --k 4 --temperature 0.8 --top-p 0.9 --mtp-argmax",
         VC_EXACT, 3, 5, PLANT_RESIDUAL_IS_P, 0.0f, 0, 0),
    CASE("mtp sampled k=3 T=1", 0, "mtp", "--method mtp --k 3 --temperature 1 --mtp-sample", VC_EXACT, 3, 4, PLANT_NONE,
         0.5f, 0, 0),
    CASE("mtp sampled k=2 T=0.7 top-k 5", 0, "mtp", "--method mtp --k 2 --temperature 0.7 --top-k 5 --mtp-sample",
         VC_EXACT, 3, 3, PLANT_NONE, 0.35f, 0, 0),
    CASE("typical spec k=2 T=1", 0, "typical", "--method spec --k 2 --temperature 1 --rule typical", VC_EXACT, 3, 3,
         PLANT_NONE, 0.0f, 1, 0),
    CASE("typical mtp k=4 T=0.7 top-k 5", 0, "typical",
         "--method mtp --k 4 --temperature 0.7 --top-k 5 --mtp-argmax --rule typical", VC_EXACT, 3, 5, PLANT_NONE, 0.0f,
         1, 0),
    CASE("medusa iid T=1 top-k 5", 0, "medusa", "--method medusa --temperature 1 --top-k 5 --rule exact", VC_EXACT, 3,
         4, PLANT_RESIDUAL_UNNORMALISED, 0.0f, 0, 0),
    CASE("medusa without replacement T=1.2 top-p 0.9", 0, "medusa",
         "--method medusa --temperature 1.2 --top-p 0.9 --rule exact-norepl", VC_EXACT, 3, 4, PLANT_NONE, 0.6f, 0, 0),
    CASE("typical medusa T=1", 0, "typical", "--method medusa --temperature 1 --rule typical", VC_EXACT, 3, 4,
         PLANT_NONE, 0.0f, 1, 0),
    /* prompt lookup after a prompt with a repeat (its drafts are looked up, q a point mass): the control
     * accepts with min(1, q/p) = 1, i.e. every draft without the p test; the grid's controls draw the
     * correction from p (which may return the rejected draft) and keep the residual unnormalised */
    CASE("lookup k=3 T=0.8", 0, "lookup", "--method lookup --k 3 --temperature 0.8", VC_EXACT, 2, 4,
         PLANT_RATIO_INVERTED, 0.0f, 0, 0, .prompt = LOOKUP_PROMPT),
    CASE("lookup k=2 ngram 1 T=1", 0, "lookup", "--method lookup --k 2 --ngram 1 --temperature 1", VC_EXACT, 3, 3,
         PLANT_RESIDUAL_IS_P, 0.0f, 0, 0, .prompt = LOOKUP_PROMPT),
    CASE("lookup k=4 T=0.7 top-k 5", 0, "lookup", "--method lookup --k 4 --temperature 0.7 --top-k 5", VC_EXACT, 3, 5,
         PLANT_RESIDUAL_UNNORMALISED, 0.0f, 0, 0, .prompt = LOOKUP_PROMPT),
    /* draft trees (--method spec --tree-shape): SpecInfer's multi-round rule over the draft model's children,
     * drawn without replacement (control: verified as if i.i.d., q not renormalised after a rejected sibling);
     * the L = 3 row runs three rounds of siblings at the root with the residual left unnormalised */
    CASE("spec tree 4,1 without replacement T=0.5", 0, "spec-tree",
         "--method spec --tree-shape 4,1 --temperature 0.5 --rule exact-norepl", VC_EXACT, 2, 4,
         PLANT_NO_REPLACEMENT_AS_IID, 0.0f, 0, 0),
    CASE("spec tree 3,1 without replacement T=1 top-k 5", 0, "spec-tree",
         "--method spec --tree-shape 3,1 --temperature 1 --top-k 5 --rule exact-norepl", VC_EXACT, 3, 3,
         PLANT_RESIDUAL_UNNORMALISED, 0.0f, 0, 0),
    /* MTP trees: the module's children at every depth from its chained state, without replacement or
     * i.i.d.; the controls draw them at half the temperature of the q the rule divides by (verifying the
     * draws without replacement as i.i.d. is caught too weakly here: docs/verification.md) */
    CASE("mtp tree 4,1 without replacement T=0.5", 0, "mtp-tree",
         "--method mtp --tree-shape 4,1 --temperature 0.5 --rule exact-norepl", VC_EXACT, 2, 4, PLANT_NONE, 0.25f, 0,
         0),
    CASE("mtp tree 2,2 iid T=1", 0, "mtp-tree", "--method mtp --tree-shape 2,2 --temperature 1 --rule exact", VC_EXACT,
         3, 3, PLANT_NONE, 0.5f, 0, 0),
    /* dynamic trees (--tree-budget): best-first growth on the draft's q; the controls verify each node's
     * children in order of their q instead of the order drawn (a proposer that sorts its draws), and at
     * temperature 0 (top ranks, the greedy rule: a point mass) take the next token from the draft's
     * argmax after a miss (draft model) or one position early (MTP) */
    CASE("spec tree dynamic depth 3 budget 6 T=0.8", 0, "spec-tree",
         "--method spec --tree-budget 6 --k 3 --temperature 0.8", VC_EXACT, 2, 3, PLANT_CHILDREN_BY_Q, 0.0f, 0, 0),
    CASE("mtp tree dynamic depth 3 budget 6 iid T=0.6", 0, "mtp-tree",
         "--method mtp --tree-budget 6 --k 3 --temperature 0.6 --rule exact", VC_EXACT, 2, 3, PLANT_CHILDREN_BY_Q, 0.0f,
         0, 0),
    CASE("spec tree dynamic depth 3 budget 5 T=0", 0, "spec-tree",
         "--method spec --tree-budget 5 --k 3 --temperature 0", VC_EXACT, 2, 4, PLANT_REJECT_FROM_Q, 0.0f, 0, 2000),
    CASE("mtp tree dynamic depth 3 budget 5 T=0", 0, "mtp-tree", "--method mtp --tree-budget 5 --k 3 --temperature 0",
         VC_EXACT, 2, 4, PLANT_BONUS_FROM_PARENT, 0.0f, 0, 2000),
    /* the bonus row read one position early from generated position 4 on: a window of six tokens, in which
     * k = 2 puts a bonus at position 4 or 5 in every round after a first round of three (w = 0.36; at k = 4
     * only a first round of four accepted drafts does, w = 0.19) */
    CASE("spec k=2 T=1 L=6", 0, "spec", "--method spec --k 2 --temperature 1", VC_EXACT, 6, 7,
         PLANT_BONUS_FROM_PARENT_LATE, 0.0f, 0, 0, .world = VERIFY_SMALL, .coverage = 1),
    /* Coverage rows (--all only, verify_case.coverage): the small world's spec and EOS rows after three
     * prompts each (the world's 1 2, and two more); windows of seven tokens (positions 0…6); the three tree
     * shapes — wide-shallow, deep-narrow, unbalanced — for draft trees and Medusa; top-k, top-p and min-p
     * together. */
    CASE("spec k=2 T=1 L=4 prompt 0 0", 0, "spec", "--method spec --k 2 --temperature 1", VC_EXACT, 4, 5,
         PLANT_RESIDUAL_IS_P, 0.0f, 0, 0, .prompt = "0 0", .world = VERIFY_SMALL, .coverage = 1),
    CASE("spec k=2 T=1 L=4 prompt 2 1 0", 0, "spec", "--method spec --k 2 --temperature 1", VC_EXACT, 4, 5,
         PLANT_RATIO_INVERTED, 0.0f, 0, 0, .prompt = "2 1 0", .world = VERIFY_SMALL, .coverage = 1),
    CASE("spec k=3 T=1 EOS L=5", 0, "spec", "--method spec --k 3 --temperature 1", VC_EXACT, 5, 6,
         PLANT_EOS_DRAFT_UNTESTED, 0.0f, 0, 0, .world = VERIFY_EOS, .coverage = 1),
    CASE("spec k=2 T=1 EOS L=4 prompt 0 1", 0, "spec", "--method spec --k 2 --temperature 1", VC_EXACT, 4, 5,
         PLANT_EOS_DRAFT_UNTESTED, 0.0f, 0, 0, .prompt = "0 1", .world = VERIFY_EOS, .coverage = 1),
    CASE("spec k=2 T=1 EOS L=4 prompt 1 1 0", 0, "spec", "--method spec --k 2 --temperature 1", VC_EXACT, 4, 5,
         PLANT_EOS_DRAFT_UNTESTED, 0.0f, 0, 0, .prompt = "1 1 0", .world = VERIFY_EOS, .coverage = 1),
    CASE("spec k=4 T=0.8 L=7", 0, "spec", "--method spec --k 4 --temperature 0.8", VC_EXACT, 7, 8,
         PLANT_BONUS_FROM_PARENT_LATE, 0.0f, 0, 0, .world = VERIFY_SMALL, .coverage = 1),
    CASE("spec tree 3 wide-shallow without replacement T=1 L=3", 0, "spec-tree",
         "--method spec --tree-shape 3 --temperature 1 --rule exact-norepl", VC_EXACT, 3, 4,
         PLANT_NO_REPLACEMENT_AS_IID, 0.0f, 0, 0, .world = VERIFY_SMALL, .coverage = 1),
    CASE("spec tree 2,1,1,1 deep-narrow iid T=1 L=6", 0, "spec-tree",
         "--method spec --tree-shape 2,1,1,1 --temperature 1 --rule exact", VC_EXACT, 6, 7,
         PLANT_BONUS_FROM_PARENT_LATE, 0.0f, 0, 0, .world = VERIFY_SMALL, .coverage = 1),
    CASE("medusa wide-shallow without replacement T=1 L=4", 0, "medusa",
         "--method medusa --temperature 1 --rule exact-norepl", VC_EXACT, 4, 5, PLANT_NO_REPLACEMENT_AS_IID, 0.0f, 0, 0,
         .world = VERIFY_SMALL, .tree = "[[0], [1], [2], [0, 0], [1, 0], [2, 0]]", .coverage = 1),
    CASE("medusa deep-narrow iid T=1 L=5", 0, "medusa", "--method medusa --temperature 1 --rule exact", VC_EXACT, 5, 6,
         PLANT_BONUS_FROM_PARENT, 0.0f, 0, 0, .world = VERIFY_SMALL, .tree = "[[0], [1], [0, 0], [0, 0, 0]]",
         .coverage = 1),
    CASE("medusa unbalanced without replacement T=1 L=5", 0, "medusa",
         "--method medusa --temperature 1 --rule exact-norepl", VC_EXACT, 5, 6, PLANT_RESIDUAL_UNNORMALISED, 0.0f, 0, 0,
         .world = VERIFY_SMALL, .tree = "[[0], [1], [0, 0], [0, 1], [0, 2], [0, 0, 0]]", .coverage = 1),
    CASE("sample T=1.1 top-k 2 top-p 0.9 min-p 0.15 L=4", 0, "sample",
         "--method sample --temperature 1.1 --top-k 2 --top-p 0.9 --min-p 0.15", VC_EXACT, 4, 4, PLANT_NONE, 0.6f, 0, 0,
         .world = VERIFY_SMALL, .coverage = 1),
    CASE("spec k=2 T=1 top-k 2 min-p 0.1 L=4", 0, "spec", "--method spec --k 2 --temperature 1 --top-k 2 --min-p 0.1",
         VC_EXACT, 4, 5, PLANT_RESIDUAL_UNNORMALISED, 0.0f, 0, 0, .world = VERIFY_SMALL, .coverage = 1),
    CASE("mtp sampled k=2 T=0.9 top-p 0.8 min-p 0.2 L=4", 0, "mtp",
         "--method mtp --k 2 --temperature 0.9 --top-p 0.8 --min-p 0.2 --mtp-sample", VC_EXACT, 4, 5,
         PLANT_RESIDUAL_IS_P, 0.0f, 0, 0, .world = VERIFY_SMALL, .coverage = 1),
    CASE("spec k=3 T=0.9 top-k 6 top-p 0.9 min-p 0.05", 0, "spec",
         "--method spec --k 3 --temperature 0.9 --top-k 6 --top-p 0.9 --min-p 0.05", VC_EXACT, 3, 4,
         PLANT_REJECT_FROM_Q, 0.0f, 0, 0, .coverage = 1),
    CASE("medusa iid T=1 top-p 0.9 min-p 0.1", 0, "medusa",
         "--method medusa --temperature 1 --top-p 0.9 --min-p 0.1 --rule exact", VC_EXACT, 3, 4, PLANT_RESIDUAL_IS_P,
         0.0f, 0, 0, .coverage = 1),
    CASE(NULL, 0, NULL, NULL, VC_EXACT, 0, 0, PLANT_NONE, 0.0f, 0, 0),
};

/* The case's own prompt: at most VERIFY_CASE_MAX_PROMPT ids, each in the world's vocabulary. */
static int parse_prompt(verify_case *c, sp_error *err) {
    const char *p = c->prompt;
    char *end;
    c->n_prompt_ids = 0;
    for (;;) {
        while (*p == ' ') p++;
        if (!*p) break;
        long id = strtol(p, &end, 10);
        const int V = verify_world_vocab(c->world);
        if (end == p || id < 0 || id >= V || c->n_prompt_ids == VERIFY_CASE_MAX_PROMPT)
            return sp_fail(err, "case \"%s\": prompt \"%s\" is not up to %d ids in [0, %d)", c->name, c->prompt,
                           VERIFY_CASE_MAX_PROMPT, V);
        c->prompt_ids[c->n_prompt_ids++] = (int)id;
        p = end;
    }
    return c->n_prompt_ids ? 0 : sp_fail(err, "case \"%s\": an empty prompt", c->name);
}

void verify_case_prompt(const verify_case *c, const verify_world *w, const int **ids, int *n) {
    *ids = c->n_prompt_ids ? c->prompt_ids : w->prompt;
    *n = c->n_prompt_ids ? c->n_prompt_ids : w->n_prompt;
}

/* Parses every entry's flags (and tree) once; the budget is the case's, the
 * EOS stop on in the EOS world only. */
static void parse_catalogue(void) {
    sp_error err;
    for (verify_case *c = catalogue; c->name; c++) {
        if (medusa_tree_parse(&c->medusa_tree, c->tree ? c->tree : verify_world_tree(verify_world_vocab(c->world)),
                              c->tree ? c->name : "the verify tree", &err))
            goto bad;
        c->spec = method_spec_defaults();
        if (method_spec_parse(&c->spec, c->flags, &err)) goto bad;
        c->spec.max_tokens = c->max_tokens;
        c->spec.stop_at_eos = c->world == VERIFY_EOS;
        method_spec with_tree = c->spec; /* a method of its own tree runs over the case's */
        with_tree.tree = c->medusa_tree;
        c->k = method_depth(&with_tree);
        if (c->prompt && parse_prompt(c, &err)) goto bad;
    }
    return;
bad: /* a constant that does not parse: nothing can run */
    fprintf(stderr, "verify_cases: %s\n", err.msg);
    abort();
}

const verify_case *verify_cases(void) {
    static int parsed;
    if (!parsed) parse_catalogue();
    parsed = 1;
    return catalogue;
}

int verify_case_count(void) { return (int)(sizeof catalogue / sizeof catalogue[0]) - 1; }

/* ---- the rows of any method, given as flags (specula verify --flags) -------------------------------------- */

/* The long windows of the small world can enumerate up to 3^7 sequences. */
#define FLAGS_MAX_L 7

int verify_cases_for_flags(const char *flags, verify_case *out, int max, sp_error *err) {
    static char names[VERIFY_FLAGS_CASES][200], stored_flags[512];
    static const struct {
        planted_bug bug;
        planted_q q;
    } controls[VERIFY_FLAGS_CASES] = {
        {PLANT_NONE, PLANT_Q_OTHER_DEPTH}, {PLANT_NONE, PLANT_Q_UNIFORM}, {PLANT_BONUS_FROM_PARENT, PLANT_Q_NONE}};
    if (max < VERIFY_FLAGS_CASES + 1) return sp_fail(err, "verify --flags: room for %d cases", VERIFY_FLAGS_CASES + 1);
    if (strlen(flags) >= sizeof stored_flags)
        return sp_fail(err, "--flags: longer than %zu bytes", sizeof stored_flags - 1);
    snprintf(stored_flags, sizeof stored_flags, "%s", flags);
    verify_case base = CASE(NULL, 1, "flags", stored_flags, VC_EXACT, 0, 0, PLANT_NONE, 0.0f, 0, 0,
                            .world = VERIFY_SMALL, .generic = 1);
    base.spec = method_spec_defaults();
    if (method_spec_parse(&base.spec, flags, err)) return sp_wrap(err, "--flags: ");
    if (!method_has(&base.spec, METHOD_PROPOSES))
        return sp_fail(err,
                       "--flags \"%s\": %s has no proposer to test this way (its rows: specula verify --method "
                       "%s)",
                       flags, method_name(&base.spec), method_has(&base.spec, METHOD_BEAM_SEARCH) ? "beam" : "sample");
    if (medusa_tree_parse(&base.medusa_tree, verify_world_tree(VERIFY_SMALL_V), "the verify tree", err)) return -1;
    method_spec with_tree = base.spec;
    with_tree.tree = base.medusa_tree;
    base.k = method_depth(&with_tree);
    base.L = base.k + 2 < FLAGS_MAX_L ? base.k + 2 : FLAGS_MAX_L; /* the drafts, the bonus, the next round's first */
    base.max_tokens = base.L + 1;
    base.spec.max_tokens = base.max_tokens;
    base.spec.stop_at_eos = 0;
    if (method_has(&base.spec, METHOD_MAY_IDLE)) { /* a context with repeats, for a proposer that looks back */
        base.prompt = SMALL_LOOKUP_PROMPT;
        if (parse_prompt(&base, err)) return -1;
    }
    char label[160];
    method_spec_label(&base.spec, label, sizeof label);
    for (int i = 0; i < VERIFY_FLAGS_CASES; i++) {
        out[i] = base;
        out[i].control_bug = controls[i].bug;
        out[i].control_q = controls[i].q;
        snprintf(names[i], sizeof names[i], "%s T=%g L=%d, control %d", label, base.spec.sampling.temperature, base.L,
                 i + 1);
        out[i].name = names[i];
    }
    memset(&out[VERIFY_FLAGS_CASES], 0, sizeof out[VERIFY_FLAGS_CASES]);
    return VERIFY_FLAGS_CASES;
}
