/* audit_specula.h — the audit's adapter for specula's own engines: it draws an arm with any method of method.h,
 * on whatever target and steppers `parts` holds (the reference or the CPU engine). */
#ifndef SPECULA_AUDIT_SPECULA_H
#define SPECULA_AUDIT_SPECULA_H

#include <stdint.h>

#include "audit.h"
#include "audit_law.h"
#include "audit_samples.h"
#include "method.h"

/* n continuations of out->L tokens; sample i is drawn with seed seed_base + i. EOS does not stop a sample: it
 * is drawn and decoding goes on, as plain sampling would. drafting (NULL: not wanted) sums what the method's
 * rounds did. */
int audit_specula_draw(const method_spec *spec, const method_parts *parts, const int *prompt, int n_prompt,
                       uint64_t seed_base, int n, audit_progress_fn progress, void *user, audit_samples *out,
                       audit_drafting *drafting, sp_error *err);

/* The spec of the "off" arm: plain sampling with s's temperature, cuts and
 * budget. */
method_spec audit_specula_off(const method_spec *s);

#endif
