/* round_worlds.h — the rows of the round-law suites (test_round_law.c, test_accepted_length.c): a method in
 * `specula generate` flags on a micro world of `specula verify`, and one run of it, optionally with a planted
 * acceptance bug, for both the exact explorer (round_explore.h) and the sampled runs. */
#ifndef SPECULA_TEST_ROUND_WORLDS_H
#define SPECULA_TEST_ROUND_WORLDS_H

#include "fixtures.h"
#include "planted.h"
#include "verify_cases.h"

/* A world of verify_cases.h on the fixtures' micro models (target seed 1,
 * draft seed 2, heads seed 3, as stat_common.c opens them). */
typedef struct {
    fixture_model t, d;
    medusa_heads heads;
    verify_world w;
} round_world;
void round_world_open(round_world *rw, verify_world_id id);
void round_world_close(round_world *rw);

typedef struct {
    const verify_world *w;
    method_spec spec;  /* parsed, finished; the world's tree for Medusa */
    const int *prompt; /* the world's, or prompt_ids */
    int n_prompt;
    int prompt_ids[VERIFY_CASE_MAX_PROMPT];
    planted_bug bug;  /* PLANT_NONE: the method's own rule */
    accept_fn accept; /* not NULL: this rule instead (decode_options.custom_accept) */
    void *accept_user;
} round_method;

/* Parses flags into m->spec (max_tokens given, EOS off) and the prompt, token
 * ids such as "0 2 1 0 2" (NULL: the world's). Fails the test on a bad row. */
void round_method_init(round_method *m, const verify_world *w, const char *flags, int max_tokens, const char *prompt);

/* One run with seed `seed`, on_commit(user) installed. */
int round_method_run(const round_method *m, uint64_t seed, commit_callback on_commit, void *user, sp_error *err);

#endif
