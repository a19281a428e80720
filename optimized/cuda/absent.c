/* absent.c — backend_cuda_build (and its graph switch) in a build without the CUDA backend
 * (build/specula on a machine without nvcc, and every CPU-only binary):
 * the engine says where the backend is instead of failing later. */
#include "backend.h"

int backend_cuda_build(engine_backend *b, const model_config *cfg, sp_error *err) {
    (void)b;
    (void)cfg;
    return sp_fail(err, "--backend cuda: this binary was built without the CUDA backend (build/specula-cuda has it, "
                        "built where nvcc is found; build/specula-emu runs it on the CPU emulator)");
}

int backend_cuda_on_device(void) { return 0; }

int backend_cuda_graphs(engine_backend *b, int mode) {
    (void)b;
    (void)mode;
    return -1;
}

int backend_cuda_debug(engine_backend *b) {
    (void)b;
    return -1;
}

int backend_cuda_graph_segments(engine_backend *b, int norms) {
    (void)b;
    (void)norms;
    return -1;
}

cuda_graph_stats backend_cuda_graph_stats(const engine_backend *b) {
    (void)b;
    const cuda_graph_stats none = {0, 0, 0, 0, 0};
    return none;
}
