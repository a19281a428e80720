/* test_method.c — the method description and its factory (method.h): one table of flags, the defaults that depend
 * on the temperature, every refusal with its message, the `specula verify` catalogue parsed by the same parser,
 * and proposers that read the run's sampler params at every proposal, not a copy made at build time. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fixtures.h"
#include "harness.h"
#include "method.h"
#include "verify_cases.h"
#include "registry.h"

static method_spec parsed(const char *flags) { return fixture_spec(flags); }

/* method_spec_parse must refuse `flags` with a message containing `want`. */
static void expect_refused(const char *flags, const char *want) {
    method_spec s = method_spec_defaults();
    sp_error err;
    ck_assert_msg(method_spec_parse(&s, flags, &err) == -1, "\"%s\" was accepted", flags);
    ck_assert_msg(strstr(err.msg, want), "\"%s\": wanted \"%s\" in: %s", flags, want, err.msg);
}

START_TEST(test_defaults_follow_the_temperature) {
    method_spec s = parsed("--method mtp --temperature 0.8");
    ck_assert_int_eq(s.drafts, MTP_DRAFTS_SAMPLED);
    ck_assert_int_eq(s.rule, RULE_EXACT);
    ck_assert_int_eq(s.k, 4);
    s = parsed("--method mtp --temperature 0");
    ck_assert_int_eq(s.drafts, MTP_DRAFTS_ARGMAX);
    s = parsed("--method mtp --temperature 0.8 --mtp-argmax");
    ck_assert_int_eq(s.drafts, MTP_DRAFTS_ARGMAX);
    s = parsed("--method mtp --temperature 0 --mtp-sample");
    ck_assert_int_eq(s.drafts, MTP_DRAFTS_SAMPLED);
    s = parsed("--method medusa --temperature 0");
    ck_assert_int_eq(s.rule, RULE_GREEDY);
    s = parsed("--method medusa --temperature 0.7");
    ck_assert_int_eq(s.rule, RULE_EXACT_NOREPL);
    s = parsed("--method spec --temperature 0.7 --k 2");
    ck_assert_int_eq(s.rule, RULE_EXACT);
    ck_assert_int_eq(s.k, 2);
    s = parsed("--method greedy");
    ck_assert(s.sampling.temperature == 0);
    s = parsed("--method sample --top-k 5 --top-p 0.9 --min-p 0.1 --seed 7 --max-tokens 9 --no-eos");
    ck_assert_int_eq(s.sampling.top_k, 5);
    ck_assert(s.sampling.top_p == 0.9f && s.sampling.min_p == 0.1f);
    ck_assert(s.seed == 7 && s.max_tokens == 9 && !s.stop_at_eos);
    s = parsed("--method beam --beams 3 --num-return 2 --max-tokens 7 --no-eos");
    ck_assert(s.beam.num_beams == 3 && s.beam.num_return == 2);
    ck_assert(s.beam.max_new_tokens == 7 && !s.beam.stop_at_eos);
}
END_TEST

START_TEST(test_refusals_name_the_problem) {
    expect_refused("--method medusa --k 3",
                   "--k only applies to --method spec, mtp, lookup and bigram (Medusa's depth");
    expect_refused("--method beam --k 3", "--k does not apply to --method beam: it proposes no draft tokens");
    expect_refused("--method beam --temperature 0.5", "--temperature does not apply to --method beam");
    expect_refused("--method beam --seed 2", "--seed does not apply to --method beam");
    expect_refused("--method spec --mtp-sample", "--mtp-sample only applies to --method mtp");
    expect_refused("--method sample --beams 2", "--beams only applies to --method beam");
    expect_refused("--method greedy --temperature 0.5", "--method greedy decodes at temperature 0");
    expect_refused("--method mtp --temperature 0.5 --rule greedy", "--rule greedy decodes at temperature 0");
    expect_refused("--method spec --rule exact-norepl",
                   "applies to trees only (Medusa, or spec and mtp with --tree-shape");
    expect_refused("--method medusa --rule exact --typical-epsilon 0.1", "only apply to --rule typical");
    expect_refused("--method sample --rule exact",
                   "--rule only applies to --method spec, medusa, mtp, lookup and bigram");
    expect_refused("--method beam --beams 2 --num-return 3", "--num-return 3 exceeds --beams 2");
    expect_refused("--method fast", "--method: unknown method 'fast'");
    expect_refused("--method mtp --mtp-sample --mtp-argmax", "--mtp-sample and --mtp-argmax contradict");
    expect_refused("--method spec --k 0", "--k expects an integer in [1, 32]");
    expect_refused("--method spec --k", "--k needs a value");
    expect_refused("--method spec --draft x", "'--draft' is not a method flag");
    expect_refused("--method medusa --rule fast", "--rule 'fast': expected exact, exact-norepl, typical or greedy");
    expect_refused("--method beam --early-stopping false", "--early-stopping expects true, heuristic or never");
}
END_TEST

/* bench and plot apply one set of flags to several methods: what does not
 * apply to a method is left out for it, and a chain's exact-norepl is the exact rule. */
START_TEST(test_one_set_of_flags_for_several_methods) {
    method_spec base = method_spec_defaults();
    char *argv[] = {"x", "--k", "3", "--rule", "exact-norepl", "--mtp-argmax", "--temperature", "0.9"};
    sp_error err;
    for (int i = 1; i < 8; i++) ck_assert_int_eq(method_spec_flag(&base, 8, argv, &i, &err), 1);
    method_spec spec, mtp, medusa;
    ck_assert_msg(method_spec_for(&base, &spec_method, &spec, &err) == 0, "%s", err.msg);
    ck_assert_msg(method_spec_for(&base, &mtp_method, &mtp, &err) == 0, "%s", err.msg);
    ck_assert_msg(method_spec_for(&base, &medusa_method, &medusa, &err) == 0, "%s", err.msg);
    ck_assert_int_eq(spec.rule, RULE_EXACT);
    ck_assert_int_eq(mtp.rule, RULE_EXACT);
    ck_assert_int_eq(mtp.drafts, MTP_DRAFTS_ARGMAX);
    ck_assert_int_eq(medusa.rule, RULE_EXACT_NOREPL);
    ck_assert(spec.k == 3 && mtp.k == 3);
    ck_assert(method_spec_given(&base, "--mtp-argmax") && !method_spec_given(&base, "--mtp-sample"));
    /* the base itself stays unresolved: MTP at another temperature takes that temperature's default */
    method_spec cold = base;
    cold.drafts = MTP_DRAFTS_DEFAULT;
    cold.sampling.temperature = 0;
    ck_assert(method_spec_for(&cold, &mtp_method, &mtp, &err) == 0);
    ck_assert_int_eq(mtp.drafts, MTP_DRAFTS_ARGMAX);
    cold.sampling.temperature = 0.5f;
    ck_assert(method_spec_for(&cold, &mtp_method, &mtp, &err) == 0);
    ck_assert_int_eq(mtp.drafts, MTP_DRAFTS_SAMPLED);
}
END_TEST

START_TEST(test_labels_and_usage) {
    char label[160];
    method_spec s = parsed("--method mtp --k 3 --temperature 0.8");
    method_spec_label(&s, label, sizeof label);
    ck_assert_str_eq(label, "mtp k=3, sampled drafts, exact rule");
    s = parsed("--method spec --k 2 --temperature 1 --rule typical");
    method_spec_label(&s, label, sizeof label);
    ck_assert_str_eq(label, "spec k=2, typical rule");
    s = parsed("--method medusa --temperature 0");
    method_spec_label(&s, label, sizeof label);
    ck_assert_str_eq(label, "medusa (built-in tree), greedy rule");
    s = parsed("--method beam --beams 3");
    method_spec_label(&s, label, sizeof label);
    ck_assert_str_eq(label, "beam (3 beams)");
    /* every flag of the table appears in the help, each once */
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    method_spec_usage(f, 0, 0, NULL);
    fclose(f);
    static const char *const all[] = {"--method",         "--k",
                                      "--temperature",    "--top-k",
                                      "--top-p",          "--min-p",
                                      "--seed",           "--max-tokens",
                                      "--no-eos",         "--mtp-sample",
                                      "--mtp-argmax",     "--rule",
                                      "--tree",           "--typical-epsilon",
                                      "--typical-delta",  "--beams",
                                      "--length-penalty", "--early-stopping",
                                      "--num-return",     "--ngram",
                                      "--bigram-min",     "--bigram-greedy",
                                      "--tree-shape",     "--tree-budget"};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) {
        char needle[40];
        snprintf(needle, sizeof needle, "  %s ", all[i]);
        const char *at = strstr(text, needle);
        ck_assert_msg(at, "%s is missing from the help", all[i]);
        ck_assert_msg(!strstr(at + 1, needle), "%s appears twice in the help", all[i]);
    }
    free(text);
}
END_TEST

/* The catalogue of `specula verify` is written in generate's flags: every
 * entry parses, and its name says what its flags say. */
START_TEST(test_catalogue_is_written_in_flags) {
    int n = 0;
    for (const verify_case *c = verify_cases(); c->name; c++, n++) {
        const method_spec *s = &c->spec;
        ck_assert_msg(strstr(c->name, method_name(s)), "%s: method %s", c->name, method_name(s));
        if (s->shape.depth > 0) { /* a tree of drafts names its shape (its drafts are sampled or top ranks) */
            char shape[100], want[110];
            tree_shape_format(&s->shape, shape, sizeof shape);
            snprintf(want, sizeof want, "tree %s ", shape);
            ck_assert_msg(strstr(c->name, want), "%s: shape %s", c->name, shape);
            snprintf(want, sizeof want, "budget %d ", s->shape.budget);
            ck_assert_msg(s->shape.budget == 0 || strstr(c->name, want), "%s: budget %d", c->name, s->shape.budget);
        } else if (method_has(s, METHOD_MTP_MODULE)) {
            ck_assert_msg(strstr(c->name, mtp_drafts_name(s->drafts)) || strstr(c->name, "typical"), "%s: drafts %s",
                          c->name, mtp_drafts_name(s->drafts));
        }
        if (strstr(c->name, "typical")) ck_assert_int_eq(s->rule, RULE_TYPICAL);
        char t[32];
        snprintf(t, sizeof t, "T=%g", s->sampling.temperature);
        ck_assert_msg(strstr(c->name, t), "%s: temperature %g", c->name, s->sampling.temperature);
        ck_assert_int_eq(s->max_tokens, c->max_tokens);
        /* the EOS world's rows stop at EOS, and say so */
        ck_assert_int_eq(s->stop_at_eos, c->world == VERIFY_EOS);
        ck_assert_msg((c->world == VERIFY_EOS) == (strstr(c->name, " EOS ") != NULL), "%s: EOS stop %d", c->name,
                      s->stop_at_eos);
    }
    ck_assert_int_eq(n, verify_case_count());
}
END_TEST

/* Every default row of a method that drafts compares a window that always
 * holds its k drafts, the bonus token after them and the first token of the
 * next round (L ≥ k + 2), with a budget that lets that round draft
 * (max_tokens ≥ L + 1): a bonus or next-round bug cannot fall outside it.
 * Together the rows cover k = 1…4. */
START_TEST(test_default_windows_hold_the_bonus) {
    int seen_k[5] = {0}, rows = 0;
    for (const verify_case *c = verify_cases(); c->name; c++) {
        if (!c->primary || c->k == 0) continue;
        rows++;
        ck_assert_msg(c->L >= c->k + 2, "%s: window %d, k = %d: the bonus or the next round falls outside", c->name,
                      c->L, c->k);
        ck_assert_msg(c->max_tokens >= c->L + 1, "%s: budget %d leaves the round after the bonus no draft", c->name,
                      c->max_tokens);
        if (c->k <= 4) seen_k[c->k] = 1;
    }
    ck_assert_int_ge(rows, 10);
    for (int k = 1; k <= 4; k++) ck_assert_msg(seen_k[k], "no default row with k = %d", k);
}
END_TEST

/* A proposer holds no copy of the sampler params: each proposal processes q
 * with the params the round hands it. */
START_TEST(test_proposers_take_the_round_params) {
    fixture_model t, d;
    fixture_model_open(&t, "micro", 31, NULL);
    fixture_model_open(&d, "micro-draft", 32, NULL);
    fixture_parts p;
    fixture_parts_open(&p, &t.m, &d.m, NULL);
    static const char *const flags[] = {"--method spec --k 2 --temperature 0.8",
                                        "--method mtp --k 2 --temperature 0.8 --mtp-sample"};
    const int V = t.m.cfg.vocab_size, D = t.m.cfg.hidden_size;
    int prompt[3] = {1, 2, 3};
    float *hidden = calloc((size_t)2 * D, sizeof(float));
    for (int f = 0; f < 2; f++) {
        float first[64];
        for (int pass = 0; pass < 2; pass++) {
            method_spec s = parsed(flags[f]);
            method_built b;
            sp_error err;
            ck_assert_msg(method_build(&b, &s, &p.parts, &err) == 0, "%s", err.msg);
            /* the target's hidden states of the prompt, for the MTP module */
            const int seq = p.target.seq_open(&p.target, &err);
            ck_assert(p.target.prefill(&p.target, seq, prompt, 2, NULL, hidden, &err) == 0);
            p.target.seq_close(&p.target, seq);
            ck_assert(b.proposer->commit(b.proposer, prompt, hidden, 2, prompt[2], &err) == 0);
            sampler_params sp = s.sampling;
            sp.temperature = pass ? 0.3f : 0.8f;
            token_tree tree;
            tree_build(&tree, V, b.proposer->tree_capacity + 1);
            tree_reset(&tree, prompt[2], b.proposer->kind);
            const propose_call call = {&sp, 9, 0, 2, 8};
            ck_assert_msg(b.proposer->propose(b.proposer, &tree, &call, &err) == 0, "%s", err.msg);
            ck_assert_int_eq(tree.n, 3);
            if (!pass)
                memcpy(first, tree_q(&tree, 0), (size_t)V * sizeof(float));
            else
                ck_assert_msg(memcmp(first, tree_q(&tree, 0), (size_t)V * sizeof(float)) != 0,
                              "%s: q did not follow the round's temperature", flags[f]);
            tree_free(&tree);
            method_release(&b);
        }
    }
    free(hidden);
    fixture_parts_close(&p);
    fixture_model_close(&d);
    fixture_model_close(&t);
}
END_TEST

/* The registry: every method parses by its name, finishes, labels itself and keeps its traits consistent (what a
 * command reads instead of the method's identity); its own flags are refused under another method, with the name of
 * the one they belong to. */
START_TEST(test_every_method_of_the_registry) {
    ck_assert_int_ge(method_count(), 8);
    for (int i = 0; i < method_count(); i++) {
        const method_desc *m = method_at(i);
        ck_assert_ptr_eq(method_find(m->name), m);
        char flags[64], label[200];
        snprintf(flags, sizeof flags, "--method %s%s", m->name,
                 m->traits & METHOD_BEAM_SEARCH ? "" : " --temperature 0");
        method_spec s = method_spec_defaults();
        sp_error err;
        ck_assert_msg(method_spec_parse(&s, flags, &err) == 0, "%s: %s", m->name, err.msg);
        ck_assert_ptr_eq(s.method, m);
        method_spec_label(&s, label, sizeof label);
        ck_assert_msg(strstr(label, m->name), "%s labels itself \"%s\"", m->name, label);
        const unsigned t = m->traits;
        const unsigned needs_proposer = METHOD_CHAIN | METHOD_TREES | METHOD_OWN_TREE | METHOD_DRAFT_MODEL |
                                        METHOD_MTP_MODULE | METHOD_HEADS | METHOD_MAY_IDLE;
        ck_assert_msg(!(t & needs_proposer) || (t & METHOD_PROPOSES), "%s: drafting traits without a proposer",
                      m->name);
        ck_assert_msg(!(t & METHOD_PROPOSES) == !m->build, "%s: a proposer exactly when it builds one", m->name);
        ck_assert_msg(m->summary && m->summary[0], "%s has no summary", m->name);
        ck_assert_int_eq(method_depth(&s), t & METHOD_CHAIN ? s.k : 0);
    }
    ck_assert_ptr_null(method_find("plugin"));
    ck_assert_ptr_null(method_find("nonsense"));
    expect_refused("--method lookup --bigram-min 2", "--bigram-min only applies to --method bigram");
    expect_refused("--method spec --ngram 2", "--ngram only applies to --method lookup");
    expect_refused("--method nonsense", "plugin:PATH[:ARGS]");
    expect_refused("--method plugin:", "the path is empty");
}
END_TEST

Suite *method_suite(void) {
    Suite *s = suite_create("method");
    TCase *tc = harness_tcase("method", 30);
    tcase_add_test(tc, test_defaults_follow_the_temperature);
    tcase_add_test(tc, test_refusals_name_the_problem);
    tcase_add_test(tc, test_one_set_of_flags_for_several_methods);
    tcase_add_test(tc, test_labels_and_usage);
    tcase_add_test(tc, test_every_method_of_the_registry);
    tcase_add_test(tc, test_catalogue_is_written_in_flags);
    tcase_add_test(tc, test_default_windows_hold_the_bonus);
    tcase_add_test(tc, test_proposers_take_the_round_params);
    suite_add_tcase(s, tc);
    return s;
}
