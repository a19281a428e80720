/* launch.cu — the launch report behind KN_LAUNCH (kn_launch.h): every launcher's error passes through here, which
 * keeps the first failure with the launch's name and shape and, in debug mode, waits for each launch. */
#include <stdio.h>

#include "kn_launch.h"

static int debug;
static char first_failure[320];

int kn_debug_launches(int on) {
    const int old = debug;
    debug = on != 0;
    return old;
}

const char *kn_launch_failure(void) { return first_failure; }
void kn_launch_failure_clear(void) { first_failure[0] = '\0'; }

cudaError_t kn_launch_result(const char *launcher, const char *kernel, dim3 grid, dim3 block, size_t smem,
                             cudaStream_t stream, cudaError_t launched) {
    cudaError_t e = launched;
    if (debug && e == cudaSuccess) {
        cudaStreamCaptureStatus capturing = cudaStreamCaptureStatusNone;
        if (cudaStreamIsCapturing(stream, &capturing) == cudaSuccess && capturing == cudaStreamCaptureStatusNone) {
            e = cudaStreamSynchronize(stream);
            if (e == cudaSuccess) e = cudaGetLastError();
        }
    }
    if (e != cudaSuccess && !first_failure[0]) {
        snprintf(first_failure, sizeof first_failure,
                 "%s: %s<<<grid (%u,%u,%u), block (%u,%u,%u), %zu B dynamic shared>>>: %s", launcher, kernel, grid.x,
                 grid.y, grid.z, block.x, block.y, block.z, smem, cudaGetErrorString(e));
        if (debug) fprintf(stderr, "kn debug: the first failed launch: %s\n", first_failure);
    }
    return e;
}
