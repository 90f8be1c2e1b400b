// Run-time binding of NCCL 2 (see include/stcu_nccl.h). stcu_load_nccl (ccudashim.c) opens libnccl.so.2 and calls
// stcu_nccl_bind with it; the wrappers call through the bound pointers.
#include "stcu_nccl.h"

#include <dlfcn.h>
#include <stdio.h>

#define STCU_NCCL_CALLS(X)                                                                                      \
    X(ncclGetVersion, (int *version), (version))                                                                \
    X(ncclGetUniqueId, (stcu_ncclUniqueId * uniqueId), (uniqueId))                                              \
    X(ncclCommInitRank, (ncclComm_t * comm, int nranks, stcu_ncclUniqueId commId, int rank),                   \
      (comm, nranks, commId, rank))                                                                             \
    X(ncclCommDestroy, (ncclComm_t comm), (comm))                                                               \
    X(ncclCommAbort, (ncclComm_t comm), (comm))                                                                 \
    X(ncclAllReduce,                                                                                            \
      (const void *sendbuff, void *recvbuff, size_t count, ncclDataType_t datatype, ncclRedOp_t op,            \
       ncclComm_t comm, CUstream stream),                                                                       \
      (sendbuff, recvbuff, count, datatype, op, comm, stream))                                                  \
    X(ncclBroadcast,                                                                                            \
      (const void *sendbuff, void *recvbuff, size_t count, ncclDataType_t datatype, int root, ncclComm_t comm, \
       CUstream stream),                                                                                        \
      (sendbuff, recvbuff, count, datatype, root, comm, stream))                                                \
    X(ncclReduce,                                                                                               \
      (const void *sendbuff, void *recvbuff, size_t count, ncclDataType_t datatype, ncclRedOp_t op, int root,  \
       ncclComm_t comm, CUstream stream),                                                                       \
      (sendbuff, recvbuff, count, datatype, op, root, comm, stream))                                            \
    X(ncclAllGather,                                                                                            \
      (const void *sendbuff, void *recvbuff, size_t sendcount, ncclDataType_t datatype, ncclComm_t comm,       \
       CUstream stream),                                                                                        \
      (sendbuff, recvbuff, sendcount, datatype, comm, stream))                                                  \
    X(ncclReduceScatter,                                                                                        \
      (const void *sendbuff, void *recvbuff, size_t recvcount, ncclDataType_t datatype, ncclRedOp_t op,        \
       ncclComm_t comm, CUstream stream),                                                                       \
      (sendbuff, recvbuff, recvcount, datatype, op, comm, stream))

#define STCU_NCCL_POINTER(name, params, args) static ncclResult_t(*p_##name) params;
STCU_NCCL_CALLS(STCU_NCCL_POINTER)
static const char *(*p_ncclGetErrorString)(ncclResult_t);

#define STCU_NCCL_WRAPPER(name, params, args) \
    ncclResult_t stcu_##name params { return p_##name ? p_##name args : STCU_NCCL_NOT_LOADED; }
STCU_NCCL_CALLS(STCU_NCCL_WRAPPER)

const char *stcu_ncclGetErrorString(ncclResult_t result) {
    if (p_ncclGetErrorString) return p_ncclGetErrorString(result);
    return "NCCL is not loaded";
}

struct stcu_nccl_symbol {
    const char *name;
    void **slot;
};

#define STCU_NCCL_ENTRY(name, params, args) {#name, (void **)&p_##name},
static const struct stcu_nccl_symbol nccl_calls[] = {
    STCU_NCCL_CALLS(STCU_NCCL_ENTRY){"ncclGetErrorString", (void **)&p_ncclGetErrorString},
};
#define STCU_NCCL_COUNT ((int)(sizeof nccl_calls / sizeof *nccl_calls))

/// Binds every call from `lib`; on a missing symbol, unbinds all and says which in `err`.
int stcu_nccl_bind(void *lib, char *err, size_t errlen) {
    for (int i = 0; i < STCU_NCCL_COUNT; i++) {
        void *f = lib ? dlsym(lib, nccl_calls[i].name) : NULL;
        if (!f) {
            if (err && errlen > 0) snprintf(err, errlen, "libnccl.so.2 missing symbol %s", nccl_calls[i].name);
            for (int j = 0; j < STCU_NCCL_COUNT; j++) *nccl_calls[j].slot = NULL;
            return 0;
        }
        *nccl_calls[i].slot = f;
    }
    return 1;
}
