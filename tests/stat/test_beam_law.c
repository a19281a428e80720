/* test_beam_law.c — beam search against its own rules evaluated on the exact sequence law (verify/beam_law.h).
 * This separates the search from the state handling and ties every score to the law; tests/unit/test_beam_brute.c
 * checks the exhaustive ranking and a second implementation over fresh forwards. */
#include <check.h>

#include "beam_law.h"
#include "fixtures.h"
#include "harness.h"
#include "verify_cases.h"

/* For each of 30 prompts the micro model's law over three tokens is enumerated once. A brute-force search of
 * beam.h's rules (K candidates by score, parent rank, token; finished hypotheses from the first b, scored
 * sum / length^penalty; the three early-stopping modes) runs on that table alone, with no model, state or KV
 * blocks, and beam_run must return the same hypotheses, scores (within 1e-9) and passes for 8 settings per prompt
 * (width 1–5, penalty, mode, 1–3 new tokens, EOS on or off with 1–3 ids). Negative controls: the same comparison
 * against the oracle with each planted slip must find mismatches. */
START_TEST(test_beam_follows_its_rules_on_the_law) {
    fixture_model f;
    fixture_model_open(&f, "micro", 31, verify_world_target_config);
    beam_law_report rep;
    sp_error err;
    ck_assert_msg(beam_law_check(&f.m, 30, 8, &rep, &err) == 0, "%s", err.msg);
    ck_assert_int_eq(rep.settings, 240);
    ck_assert_msg(rep.mismatches == 0, "%d of %d settings differ; first: %s", rep.mismatches, rep.settings,
                  rep.first_mismatch);
    /* the settings must reach the paths the slips live on (the counts seen are in docs/verification.md) */
    ck_assert_msg(rep.early_ends >= 10, "only %d searches stopped before max_new_tokens", rep.early_ends);
    ck_assert_msg(rep.eos_finishes >= 30, "only %d hypotheses ended by EOS", rep.eos_finishes);
    /* each slip caught in several settings, not by one lucky setting */
    for (int slip = 1; slip < BEAM_SLIP_COUNT; slip++)
        ck_assert_msg(rep.slip_mismatches[slip] >= 5, "the comparison missed the slip \"%s\" (%d of %d settings)",
                      beam_slip_name((beam_slip)slip), rep.slip_mismatches[slip], rep.settings);
    fixture_model_close(&f);
}
END_TEST

Suite *beam_law_suite(void) {
    Suite *s = suite_create("beam_law");
    TCase *tc = harness_tcase("beam_law", 120);
    tcase_add_test(tc, test_beam_follows_its_rules_on_the_law);
    suite_add_tcase(s, tc);
    return s;
}
