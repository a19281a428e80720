/* emu_plants.h — planted kernels for the emulator's own tests (tests/unit/test_emu_rules.c): each breaks one rule a
 * GPU holds kernels to, and its runner says whether the emulator caught it. C linkage, for the Check suites. */
#ifndef SPECULA_EMU_PLANTS_H
#define SPECULA_EMU_PLANTS_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* A launch the device refuses (a block of 2048 threads), in the launches' debug mode: 0 when it failed and
 * kn_launch_failure named its launcher, kernel and block; else 1, with why in msg. */
int emu_plant_refused_launch_named(char *msg, size_t msg_size);

#ifdef __cplusplus
}
#endif

#endif
