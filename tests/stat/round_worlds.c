/* round_worlds.c — the worlds and runs of the round-law suites (round_worlds.h). */
#include "round_worlds.h"
#include "registry.h"

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void round_world_open(round_world *rw, verify_world_id id) {
    fixture_model_open(&rw->t, "micro", 1, verify_world_config(id, 0));
    fixture_model_open(&rw->d, "micro-draft", 2, verify_world_config(id, 1));
    sp_error err;
    ck_assert_msg(verify_world_heads(&rw->heads, &rw->t.m, 3, &err) == 0, "%s", err.msg);
    verify_world_init(&rw->w, &rw->t.m, &rw->d.m, &rw->heads);
}

void round_world_close(round_world *rw) {
    verify_world_free(&rw->w);
    medusa_free(&rw->heads);
    fixture_model_close(&rw->d);
    fixture_model_close(&rw->t);
}

void round_method_init(round_method *m, const verify_world *w, const char *flags, int max_tokens, const char *prompt) {
    memset(m, 0, sizeof *m);
    m->w = w;
    m->prompt = w->prompt;
    m->n_prompt = w->n_prompt;
    if (prompt) {
        m->n_prompt = 0;
        const char *s = prompt;
        char *end;
        for (long id; m->n_prompt < VERIFY_CASE_MAX_PROMPT && (id = strtol(s, &end, 10), end != s); s = end)
            m->prompt_ids[m->n_prompt++] = (int)id;
        ck_assert_msg(*s == '\0', "prompt \"%s\": token ids, at most %d", prompt, VERIFY_CASE_MAX_PROMPT);
        m->prompt = m->prompt_ids;
    }
    sp_error err;
    m->spec = method_spec_defaults();
    ck_assert_msg(method_spec_parse(&m->spec, flags, &err) == 0, "\"%s\": %s", flags, err.msg);
    m->spec.max_tokens = max_tokens;
    m->spec.stop_at_eos = 0;
    if (method_has(&m->spec, METHOD_HEADS)) {
        m->spec.tree = w->tree;
        m->spec.tree_given = 1;
        snprintf(m->spec.tree_origin, sizeof m->spec.tree_origin, "the verify tree");
    }
    m->bug = PLANT_NONE;
}

int round_method_run(const round_method *m, uint64_t seed, commit_callback on_commit, void *user, sp_error *err) {
    method_spec s = m->spec;
    s.seed = seed;
    method_built b;
    if (method_build(&b, &s, &m->w->parts, err)) return -1;
    /* planted_accept_fn takes a planted_rule: the run's first generated token
     * sits at n_prompt (decode_run's first root is at n_prompt − 1) */
    planted_rule rule = {.bug = m->bug, .first_position = m->n_prompt, .eos = m->w->eos};
    if (rule.bug != PLANT_NONE) {
        b.options.custom_accept = planted_accept_fn;
        b.options.accept_user = &rule;
    }
    if (m->accept) {
        b.options.custom_accept = m->accept;
        b.options.accept_user = m->accept_user;
    }
    b.options.on_commit = on_commit;
    b.options.user = user;
    decode_output out;
    int rc = decode_run(m->w->parts.target, b.proposer, m->prompt, m->n_prompt, &b.options, &out, err);
    method_release(&b);
    if (!rc) decode_output_free(&out);
    return rc;
}
