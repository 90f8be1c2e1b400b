// CMPIShim: the MPI calls SwiftTorch's `dist` uses, resolved at run time from a libmpi loaded with
// dlopen, so the package builds and tests on machines without MPI. Both MPI ABIs are handled:
// Open MPI (handles are addresses of `ompi_mpi_*` globals) and MPICH and its derivatives (integer
// handle constants). Handles cross this interface as uint64_t; datatypes and reduction operators
// as the small enums below. Every call returns an MPI error code (0 = success).
#ifndef CMPISHIM_H
#define CMPISHIM_H

#include <stdint.h>
#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum { STMPI_FLAVOR_NONE = 0, STMPI_FLAVOR_OPENMPI = 1, STMPI_FLAVOR_MPICH = 2 } stmpi_flavor_t;
typedef enum {
    STMPI_BYTE = 0, STMPI_FLOAT = 1, STMPI_DOUBLE = 2, STMPI_INT64 = 3, STMPI_INT32 = 4,
    STMPI_UINT8 = 5, STMPI_BOOL = 6, STMPI_DTYPE_COUNT = 7
} stmpi_dtype_t;
typedef enum {
    STMPI_SUM = 0, STMPI_PROD = 1, STMPI_MIN = 2, STMPI_MAX = 3, STMPI_LAND = 4, STMPI_LOR = 5,
    STMPI_OP_COUNT = 6
} stmpi_op_t;
typedef uint64_t stmpi_comm;
typedef uint64_t stmpi_request;
typedef uint64_t stmpi_win;

/// Loads libmpi: `path` when non-NULL, else libmpi.so.40 (Open MPI), libmpi.so.12 / libmpich.so.12
/// (MPICH), libmpi.so. Returns the flavor, or STMPI_FLAVOR_NONE with a message in `err`.
/// Idempotent (a later call returns the loaded flavor).
int stmpi_load(const char *path, char *err, size_t errlen);
/// The loaded flavor (STMPI_FLAVOR_NONE before a successful stmpi_load).
int stmpi_flavor(void);
/// The file name that was loaded.
const char *stmpi_library_name(void);

stmpi_comm stmpi_comm_world(void);
int stmpi_initialized(int *flag);
int stmpi_finalized(int *flag);
/// MPI_Init_thread(NULL, NULL, required, provided); levels 0..3 as in mpi.h (same in both ABIs).
int stmpi_init_thread(int required, int *provided);
int stmpi_finalize(void);
int stmpi_abort(stmpi_comm comm, int code);
double stmpi_wtime(void);
/// MPI_Error_string into `buf` (always NUL-terminated).
void stmpi_error_string(int code, char *buf, size_t buflen);
/// MPI_Get_library_version into `buf` (always NUL-terminated).
void stmpi_library_version(char *buf, size_t buflen);

int stmpi_comm_rank(stmpi_comm comm, int *rank);
int stmpi_comm_size(stmpi_comm comm, int *size);
/// MPI_Comm_dup, then MPI_ERRORS_RETURN on the new communicator.
int stmpi_comm_dup(stmpi_comm comm, stmpi_comm *out);
int stmpi_comm_free(stmpi_comm comm);
/// Makes MPI calls on `comm` return error codes instead of aborting.
int stmpi_comm_set_errors_return(stmpi_comm comm);

int stmpi_barrier(stmpi_comm comm);
int stmpi_ibarrier(stmpi_comm comm, stmpi_request *req);
/// `sendbuf` NULL means MPI_IN_PLACE (the data is in `recvbuf`).
int stmpi_allreduce(const void *sendbuf, void *recvbuf, int count, int dtype, int op, stmpi_comm comm);
int stmpi_iallreduce(const void *sendbuf, void *recvbuf, int count, int dtype, int op, stmpi_comm comm,
                     stmpi_request *req);
int stmpi_bcast(void *buf, int count, int dtype, int root, stmpi_comm comm);
int stmpi_ibcast(void *buf, int count, int dtype, int root, stmpi_comm comm, stmpi_request *req);
/// `sendbuf` NULL means MPI_IN_PLACE (only meaningful on the root).
int stmpi_reduce(const void *sendbuf, void *recvbuf, int count, int dtype, int op, int root, stmpi_comm comm);
int stmpi_allgather(const void *sendbuf, int count, void *recvbuf, int dtype, stmpi_comm comm);
int stmpi_reduce_scatter_block(const void *sendbuf, void *recvbuf, int recvcount, int dtype, int op,
                               stmpi_comm comm);
int stmpi_gather(const void *sendbuf, int count, void *recvbuf, int dtype, int root, stmpi_comm comm);
int stmpi_scatter(const void *sendbuf, int count, void *recvbuf, int dtype, int root, stmpi_comm comm);
int stmpi_alltoall(const void *sendbuf, int count, void *recvbuf, int dtype, stmpi_comm comm);
int stmpi_send(const void *buf, int count, int dtype, int dest, int tag, stmpi_comm comm);
/// `source` -1 = MPI_ANY_SOURCE; `*actual_source` receives the sender's rank.
int stmpi_recv(void *buf, int count, int dtype, int source, int tag, stmpi_comm comm, int *actual_source);
int stmpi_isend(const void *buf, int count, int dtype, int dest, int tag, stmpi_comm comm, stmpi_request *req);
int stmpi_irecv(void *buf, int count, int dtype, int source, int tag, stmpi_comm comm, stmpi_request *req);
/// MPI_Test; on completion `*flag` is 1 and `*source` the status's MPI_SOURCE (for receives).
int stmpi_test(stmpi_request *req, int *flag, int *source);
int stmpi_wait(stmpi_request *req, int *source);

// MARK: MPI-3 shared-memory windows (SwiftTorch's intra-host all-reduce). MPI-3 libraries have them; the
// other calls work without them, so they are bound optionally.

/// Whether the loaded library has the calls below (1) or not (0).
int stmpi_has_shared_windows(void);
/// MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, key, MPI_INFO_NULL, out), then MPI_ERRORS_RETURN on it:
/// the ranks of `comm` that can share memory with this one.
int stmpi_comm_split_shared(stmpi_comm comm, int key, stmpi_comm *out);
/// MPI_Win_allocate_shared(bytes, 1, MPI_INFO_NULL, comm, base, win), MPI_ERRORS_RETURN on the window, then
/// MPI_Win_lock_all(MPI_MODE_NOCHECK): one passive-target epoch for the window's life, in which loads and
/// stores are ordered with MPI_Win_sync and barriers (MPI-3's shared-memory model).
int stmpi_win_allocate_shared(size_t bytes, stmpi_comm comm, void **base, stmpi_win *win);
/// MPI_Win_shared_query: where rank `rank`'s segment is mapped in this process, and its size.
int stmpi_win_shared_query(stmpi_win win, int rank, void **base, size_t *bytes);
/// MPI_Win_sync (a memory barrier for the window).
int stmpi_win_sync(stmpi_win win);
/// MPI_Win_unlock_all, then MPI_Win_free (collective over the window's communicator).
int stmpi_win_free(stmpi_win win);

/// out1[i] and out2[i] (either may be NULL) = srcs[0][i] + srcs[1][i] + ... + srcs[nsrc-1][i], summed left to
/// right in the arrays' own precision, so the bits never depend on which rank computes them (shm_reduce.c).
/// The outputs may alias no source except at the same index.
void stmpi_sum_f32(float *out1, float *out2, const float *const *srcs, int nsrc, size_t count);
void stmpi_sum_f64(double *out1, double *out2, const double *const *srcs, int nsrc, size_t count);

#ifdef __cplusplus
}
#endif
#endif
