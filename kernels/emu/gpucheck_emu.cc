/* gpucheck_emu.cc — main of build/emu/gpucheck: gpucheck's command line (kernels/check/gc_main.cu) on the
 * emulator, for the dry run of a GPU session's script. */
#include "gc.cuh"

int main(int argc, char **argv) { return gc_main(argc, argv); }
