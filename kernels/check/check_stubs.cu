#include "gc.cuh"
void gc_family_sample(gc_ctx *c) { (void)c; }
