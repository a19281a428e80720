/* mtp_method.c — native multi-token prediction as a method of the registry: the target's own MTP layer chained k
 * times (mtp.h), its drafts argmax or sampled from its processed distribution, as a chain or a tree. */
#include "mtp.h"
#include "registry.h"

static int set_mtp_sample(method_spec *s, const char *f, const char *v, sp_error *err) {
    (void)f, (void)v, (void)err;
    s->drafts = MTP_DRAFTS_SAMPLED;
    return 0;
}

static int set_mtp_argmax(method_spec *s, const char *f, const char *v, sp_error *err) {
    (void)f, (void)v, (void)err;
    s->drafts = MTP_DRAFTS_ARGMAX;
    return 0;
}

static const method_flag mtp_flags[] = {
    {"--mtp-sample", NULL,
     "MTP drafts sampled from its processed distribution (the default above\n"
     "temperature 0: measured to be accepted more often than argmax drafts)",
     set_mtp_sample},
    {"--mtp-argmax", NULL, "MTP drafts are its argmax, q one-hot (the default at temperature 0)", set_mtp_argmax},
    {NULL, NULL, NULL, NULL},
};

/* Argmax drafts make q one-hot, which p rejects whenever it puts less than all its mass on the draft: sampled
 * drafts are accepted more often above temperature 0. A tree's children are chosen by the rule. */
static int mtp_method_finish(method_spec *s, int strict, sp_error *err) {
    if (method_spec_given(s, "--mtp-sample") && method_spec_given(s, "--mtp-argmax"))
        return sp_fail(err, "--mtp-sample and --mtp-argmax contradict each other: give one");
    if (s->shape.depth > 0) {
        if (method_spec_given(s, "--mtp-argmax") && strict)
            return sp_fail(err, "--mtp-argmax gives every sibling the same token: an MTP tree draws its children "
                                "from q or takes its top ranks (--rule)");
        s->drafts = MTP_DRAFTS_SAMPLED;
    }
    if (s->drafts == MTP_DRAFTS_DEFAULT)
        s->drafts = s->sampling.temperature > 0 ? MTP_DRAFTS_SAMPLED : MTP_DRAFTS_ARGMAX;
    return 0;
}

static int mtp_method_build(proposer *p, method_spec *s, const method_parts *parts, sp_error *err) {
    if (s->shape.depth > 0) return mtp_tree_proposer_build(p, parts->mtp, &s->shape, method_children(s), 1, err);
    return mtp_proposer_build(p, parts->mtp, s->k, s->drafts == MTP_DRAFTS_SAMPLED, err);
}

static void mtp_method_label(const method_spec *s, char *buf, size_t size) {
    if (s->shape.depth > 0)
        method_drafter_label(s, buf, size);
    else
        snprintf(buf, size, "mtp k=%d, %s drafts", s->k, mtp_drafts_name(s->drafts));
}

static int mtp_method_round(const method_spec *s, const run_accounting *runs, const method_costs *c,
                            method_round *out) {
    return method_round_drafter(s, runs, c, c->mtp_step, out);
}

const method_desc mtp_method = {
    .name = "mtp",
    .summary = "native multi-token prediction: the model's own MTP layer drafts, chained k times",
    .traits = METHOD_PROPOSES | METHOD_CHAIN | METHOD_TREES | METHOD_MTP_MODULE | METHOD_SAMPLED_DRAFTS,
    .flags = mtp_flags,
    .build = mtp_method_build,
    .finish = mtp_method_finish,
    .label = mtp_method_label,
    .round = mtp_method_round,
};
