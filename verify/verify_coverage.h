/* verify_coverage.h — what the rows of `specula verify` cover, as a markdown table (`specula verify --coverage`,
 * written into docs/verification.md by tools/verify-docs.sh and compared with it by tests/parts/verify-docs.sh):
 * for each row, whether it runs by default, its world and window, the method, the shape of what it drafts, the
 * rule, the cuts and the temperature, what it is held to and its negative control on each backend. */
#ifndef SPECULA_VERIFY_COVERAGE_H
#define SPECULA_VERIFY_COVERAGE_H

#include <stdio.h>

#include "verify_cases.h"

/* The table of cases[] (NULL-name terminated): the default rows, then with all the grid of --all. */
void verify_coverage_print(FILE *f, const verify_case *cases, int all);

#endif
