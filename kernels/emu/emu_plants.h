/* emu_plants.h — planted kernels for the emulator's own tests (tests/unit/test_emu_rules.c): each breaks one rule a
 * GPU holds kernels to, and its runner says whether the emulator let it pass. C linkage, for the Check suites. */
#ifndef SPECULA_EMU_PLANTS_H
#define SPECULA_EMU_PLANTS_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* A launch the device refuses (a block of 2048 threads), in the launches' debug mode: 0 when it failed and
 * kn_launch_failure named its launcher, kernel and block; else 1, with why in msg. */
int emu_plant_refused_launch_named(char *msg, size_t msg_size);

/* The plants of emu.h's rules, one per rule: emu_plant_rule(i) is the EMU_RULE_* bit that must catch plant i.
 * emu_plant_run runs it under the rules given and returns 1 when it passed (its launch succeeded and its output is
 * what a correct kernel gives), 0 when it was caught, saying how in msg. A plant runs once per process: a rule
 * left off before may leave state (static shared memory) that a second run would see. */
int emu_plant_count(void);
unsigned emu_plant_all_rules(void); /* EMU_RULES_ALL */
const char *emu_plant_name(int i);
unsigned emu_plant_rule(int i);
int emu_plant_run(int i, unsigned rules, char *msg, size_t msg_size);
/* 0 in a build where the emulator does not hold plant i's rule (the AddressSanitizer build keeps static shared
 * memory instrumented instead of poisoned: emu.h). */
int emu_plant_checked(int i);

/* A launcher that sizes its grid by the SM count and assumes a small device (16 blocks of partial sums at most):
 * 1 when its sum is right at `sm_count` multiprocessors, 0 when wrong. Run it first in its process (kn_device
 * reads the SM count once). */
int emu_plant_grid_sized_by_sms(int sm_count, char *msg, size_t msg_size);
/* The controls: over 48 KB of dynamic shared memory after cudaFuncSetAttribute, and a block of 512 threads for a
 * kernel with __launch_bounds__(PLANT_BOUND = 512, 1): 1 when it ran right under every rule. */
int emu_plant_smem_opted_in(char *msg, size_t msg_size);
int emu_plant_bounded_block(char *msg, size_t msg_size);

#ifdef __cplusplus
}
#endif

#endif
