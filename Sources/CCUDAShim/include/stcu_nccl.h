// The NCCL 2 calls SwiftTorch's `dist` backend `.nccl` uses, bound at run time from a libnccl.so.2 (the system's,
// or the one PyTorch's CUDA wheels install under nvidia/nccl/lib); no NCCL header is included. Types, constants
// and signatures are NCCL 2's (nccl.h of 2.18 to 2.28: the calls below have not changed since 2.10, which added
// ncclAvg). Enums are int-sized in the C ABI, so they are declared as int with the header's values.
//
// Each wrapper is `stcu_` + the NCCL name with the documented signature. Called before NCCL loaded it returns
// STCU_NCCL_NOT_LOADED (ncclInternalError).
#ifndef STCU_NCCL_H
#define STCU_NCCL_H

#include "ccudashim.h"
#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct ncclComm *ncclComm_t;
typedef int ncclResult_t;
typedef int ncclDataType_t;
typedef int ncclRedOp_t;

/// ncclUniqueId: 128 opaque bytes that rank 0 creates and every rank receives (here over MPI).
enum { STCU_NCCL_UNIQUE_ID_BYTES = 128 };
typedef struct {
    char internal[STCU_NCCL_UNIQUE_ID_BYTES];
} stcu_ncclUniqueId;

enum { STCU_NCCL_SUCCESS = 0, STCU_NCCL_NOT_LOADED = 3 /* ncclInternalError */ };

// ncclDataType_t
enum {
    STCU_NCCL_INT8 = 0, STCU_NCCL_UINT8 = 1, STCU_NCCL_INT32 = 2, STCU_NCCL_UINT32 = 3, STCU_NCCL_INT64 = 4,
    STCU_NCCL_UINT64 = 5, STCU_NCCL_FLOAT16 = 6, STCU_NCCL_FLOAT32 = 7, STCU_NCCL_FLOAT64 = 8, STCU_NCCL_BFLOAT16 = 9
};
// ncclRedOp_t
enum { STCU_NCCL_SUM = 0, STCU_NCCL_PROD = 1, STCU_NCCL_MAX = 2, STCU_NCCL_MIN = 3, STCU_NCCL_AVG = 4 };

/// Loads libnccl.so.2 (searched as the CUDA libraries are, SWIFTTORCH_NCCL_LIBRARY first when set) and binds the
/// calls below. 0 when loaded; otherwise non-zero with the reason in `err`. Needs no GPU.
int stcu_load_nccl(char *err, size_t errlen);
/// The full path of the libnccl loaded, or NULL.
const char *stcu_nccl_path(void);
/// Binds the calls from an opened libnccl (stcu_load_nccl's part in nccl.c); 0 with `err` set on a missing symbol.
int stcu_nccl_bind(void *lib, char *err, size_t errlen);

ncclResult_t stcu_ncclGetVersion(int *version);
ncclResult_t stcu_ncclGetUniqueId(stcu_ncclUniqueId *uniqueId);
ncclResult_t stcu_ncclCommInitRank(ncclComm_t *comm, int nranks, stcu_ncclUniqueId commId, int rank);
ncclResult_t stcu_ncclCommDestroy(ncclComm_t comm);
ncclResult_t stcu_ncclCommAbort(ncclComm_t comm);
ncclResult_t stcu_ncclAllReduce(const void *sendbuff, void *recvbuff, size_t count, ncclDataType_t datatype,
                                ncclRedOp_t op, ncclComm_t comm, CUstream stream);
ncclResult_t stcu_ncclBroadcast(const void *sendbuff, void *recvbuff, size_t count, ncclDataType_t datatype, int root,
                                ncclComm_t comm, CUstream stream);
ncclResult_t stcu_ncclReduce(const void *sendbuff, void *recvbuff, size_t count, ncclDataType_t datatype,
                             ncclRedOp_t op, int root, ncclComm_t comm, CUstream stream);
ncclResult_t stcu_ncclAllGather(const void *sendbuff, void *recvbuff, size_t sendcount, ncclDataType_t datatype,
                                ncclComm_t comm, CUstream stream);
ncclResult_t stcu_ncclReduceScatter(const void *sendbuff, void *recvbuff, size_t recvcount, ncclDataType_t datatype,
                                    ncclRedOp_t op, ncclComm_t comm, CUstream stream);
/// ncclGetErrorString, or a fixed text before NCCL loaded.
const char *stcu_ncclGetErrorString(ncclResult_t result);

#ifdef __cplusplus
}
#endif
#endif
