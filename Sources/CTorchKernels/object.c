// A new instance of a Swift class whose stored properties are not yet initialised: what nn.DataParallel's module
// replicas start from (Sources/Torch/NN/Parallel/Replicate.swift). Swift code may not name the runtime's
// entry point itself, so it is reached through C.
#include "ctorch_kernels.h"

extern void *swift_allocObject(const void *metadata, size_t size, size_t align_mask);

void *ct_alloc_object(const void *metadata, size_t size, size_t align_mask) {
    return swift_allocObject(metadata, size, align_mask);
}
