#include "gc.cuh"
void gc_family_deltanet(gc_ctx *c) { (void)c; }
void gc_family_sample(gc_ctx *c) { (void)c; }
