/* emu_plants.cc — the planted kernels of emu_plants.h: each the smallest kernel that breaks one rule, and a runner
 * that launches it on the emulator and reports what the emulator made of it. Compiled for the emulator only. */
#include "emu_plants.h"

#include <stdio.h>
#include <string.h>

#include "kn_common.cuh"

__global__ void plant_oversized_block(float *out) { out[threadIdx.x] = 1.0f; }

static cudaError_t launch_oversized_block(float *out) { return KN_LAUNCH(plant_oversized_block, 1, 2048, 0, 0, out); }

int emu_plant_refused_launch_named(char *msg, size_t msg_size) {
    float out[1];
    kn_launch_failure_clear();
    const int was = kn_debug_launches(1);
    const cudaError_t e = launch_oversized_block(out);
    kn_debug_launches(was);
    const char *named = kn_launch_failure();
    snprintf(msg, msg_size, "launch: %s; named: \"%s\"", cudaGetErrorString(e), named);
    const int ok = e != cudaSuccess && strstr(named, "launch_oversized_block: plant_oversized_block<<<") &&
                   strstr(named, "block (2048,1,1)") && strstr(named, cudaGetErrorString(e));
    kn_launch_failure_clear();
    return ok ? 0 : 1;
}
