/* audit_specula.c — specula's methods as an audit arm (audit_specula.h):
 * the factory and the round loop, exactly as `specula generate` runs them,
 * one decode per sample. */
#include "audit_specula.h"

#include "registry.h"

#include <stdlib.h>
#include <string.h>

int audit_specula_draw(const method_spec *spec, const method_parts *parts, const int *prompt, int n_prompt,
                       uint64_t seed_base, int n, audit_progress_fn progress, void *user, audit_samples *out,
                       audit_drafting *drafting, sp_error *err) {
    method_spec s = *spec;
    if (drafting) memset(drafting, 0, sizeof *drafting);
    s.stop_at_eos = 0;
    s.max_tokens = out->L;
    for (int i = 0; i < n; i++) {
        s.seed = seed_base + (uint64_t)i;
        decode_output o;
        if (method_generate(&s, parts, prompt, n_prompt, &o, err)) return -1;
        int rc = o.n < out->L ? sp_fail(err, "audit: a decode gave %d tokens, asked for %d", o.n, out->L)
                              : audit_samples_add(out, o.tokens, err);
        if (drafting) {
            drafting->rounds += o.acc.target_passes;
            drafting->drafted_rounds += o.acc.proposed[1];
            for (int d = 1; d <= ACC_MAX_DEPTH; d++) drafting->proposed += o.acc.proposed[d];
            drafting->accepted += o.acc.accepted_total;
        }
        decode_output_free(&o);
        if (rc) return -1;
        if (progress && ((i + 1) % 200 == 0 || i + 1 == n)) progress(user, i + 1, n);
    }
    return 0;
}

method_spec audit_specula_off(const method_spec *s) {
    method_spec off = method_spec_defaults();
    off.method = &sample_method;
    off.sampling = s->sampling;
    off.max_tokens = s->max_tokens;
    off.stop_at_eos = 0;
    return off;
}
