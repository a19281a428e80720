/* beam_method.c — beam search as a method of the registry: its flags and checks. It runs through beam_run
 * (beam.h), not the round loop, and scores raw log-probabilities, so it takes no sampling flag. */
#include <string.h>

#include "parse.h"
#include "registry.h"

static int set_beams(method_spec *s, const char *f, const char *v, sp_error *err) {
    return parse_int(f, v, 1, 4096, &s->beam.num_beams, err);
}

static int set_length_penalty(method_spec *s, const char *f, const char *v, sp_error *err) {
    return parse_float(f, v, -100, 100, &s->beam.length_penalty, err);
}

static int set_early_stopping(method_spec *s, const char *f, const char *v, sp_error *err) {
    if (beam_early_stopping_parse(v, &s->beam.early_stopping))
        return sp_fail(err, "%s expects true, heuristic or never (Hugging Face's False is heuristic), got '%s'", f, v);
    return 0;
}

static int set_num_return(method_spec *s, const char *f, const char *v, sp_error *err) {
    return parse_int(f, v, 1, 4096, &s->beam.num_return, err);
}

static const method_flag beam_flags[] = {
    {"--beams", "N", "beam width (default 4)", set_beams},
    {"--length-penalty", "X", "beam: score = sum log p / generated_length^X (default 1)", set_length_penalty},
    {"--early-stopping", "M", "beam: true | heuristic | never (default heuristic, Hugging Face's False)",
     set_early_stopping},
    {"--num-return", "N", "beam: hypotheses returned, best first, N <= beams (default 1)", set_num_return},
    {NULL, NULL, NULL, NULL},
};

static int beam_method_finish(method_spec *s, int strict, sp_error *err) {
    (void)strict;
    if (s->beam.num_return > s->beam.num_beams)
        return sp_fail(err, "--num-return %d exceeds --beams %d", s->beam.num_return, s->beam.num_beams);
    s->beam.max_new_tokens = s->max_tokens;
    s->beam.stop_at_eos = s->stop_at_eos;
    return beam_validate(&s->beam, err);
}

static void beam_method_label(const method_spec *s, char *buf, size_t size) {
    snprintf(buf, size, "beam (%d beams)", s->beam.num_beams);
}

const method_desc beam_method = {
    .name = "beam",
    .summary = "beam search (Hugging Face's rules): the most likely continuations, nothing drawn at random",
    .traits = METHOD_BEAM_SEARCH,
    .flags = beam_flags,
    .finish = beam_method_finish,
    .label = beam_method_label,
};
