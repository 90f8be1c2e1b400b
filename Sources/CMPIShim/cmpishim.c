// Run-time binding of libmpi for SwiftTorch's `dist` (see include/cmpishim.h). The two ABIs'
// wrappers come from mpi_abi.inc, included once per ABI; a dispatch table points at the loaded one.
#include "cmpishim.h"
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

struct stmpi_dispatch {
    int (*initialized)(int *);
    int (*finalized)(int *);
    int (*init_thread)(int, int *);
    int (*finalize)(void);
    int (*abort)(stmpi_comm, int);
    double (*wtime)(void);
    void (*error_string)(int, char *, size_t);
    void (*library_version)(char *, size_t);
    stmpi_comm (*comm_world)(void);
    int (*comm_rank)(stmpi_comm, int *);
    int (*comm_size)(stmpi_comm, int *);
    int (*comm_dup)(stmpi_comm, stmpi_comm *);
    int (*comm_free)(stmpi_comm);
    int (*comm_set_errors_return)(stmpi_comm);
    int (*barrier)(stmpi_comm);
    int (*ibarrier)(stmpi_comm, stmpi_request *);
    int (*allreduce)(const void *, void *, int, int, int, stmpi_comm);
    int (*iallreduce)(const void *, void *, int, int, int, stmpi_comm, stmpi_request *);
    int (*bcast)(void *, int, int, int, stmpi_comm);
    int (*ibcast)(void *, int, int, int, stmpi_comm, stmpi_request *);
    int (*reduce)(const void *, void *, int, int, int, int, stmpi_comm);
    int (*allgather)(const void *, int, void *, int, stmpi_comm);
    int (*reduce_scatter_block)(const void *, void *, int, int, int, stmpi_comm);
    int (*gather)(const void *, int, void *, int, int, stmpi_comm);
    int (*scatter)(const void *, int, void *, int, int, stmpi_comm);
    int (*alltoall)(const void *, int, void *, int, stmpi_comm);
    int (*send)(const void *, int, int, int, int, stmpi_comm);
    int (*recv)(void *, int, int, int, int, stmpi_comm, int *);
    int (*isend)(const void *, int, int, int, int, stmpi_comm, stmpi_request *);
    int (*irecv)(void *, int, int, int, int, stmpi_comm, stmpi_request *);
    int (*test)(stmpi_request *, int *, int *);
    int (*wait)(stmpi_request *, int *);
    int (*has_shared_windows)(void);
    int (*comm_split_shared)(stmpi_comm, int, stmpi_comm *);
    int (*win_allocate_shared)(size_t, stmpi_comm, void **, stmpi_win *);
    int (*win_shared_query)(stmpi_win, int, void **, size_t *);
    int (*win_sync)(stmpi_win);
    int (*win_free)(stmpi_win);
};

static void *lib_handle;
static int loaded_flavor = STMPI_FLAVOR_NONE;
static char loaded_name[256];
static const struct stmpi_dispatch *D;

// MARK: Open MPI: MPI_IN_PLACE = (void *)1, MPI_ANY_SOURCE = -1, MPI_Status starts with MPI_SOURCE,
// MPI_COMM_TYPE_SHARED = 0, MPI_MODE_NOCHECK = 1, MPI_INFO_NULL = &ompi_mpi_info_null (bound at load).
#define ompi_in_place ((void *)1)
#define ompi_any_source (-1)
#define ompi_source_index 0
#define ompi_comm_type_shared 0
#define ompi_mode_nocheck 1
typedef void *ompi_handle;
#define ABI ompi
#define MPIH ompi_handle
#include "mpi_abi.inc"

// MARK: MPICH: MPI_IN_PLACE = (void *)-1, MPI_ANY_SOURCE = -2, MPI_Status = {count_lo,
// count_hi_and_cancelled, MPI_SOURCE, MPI_TAG, MPI_ERROR}; MPI_COMM_TYPE_SHARED = 1, MPI_MODE_NOCHECK = 1024,
// MPI_INFO_NULL = 0x1c000000.
#define mpich_in_place ((void *)-1)
#define mpich_any_source (-2)
#define mpich_source_index 2
#define mpich_comm_type_shared 1
#define mpich_mode_nocheck 1024
typedef int mpich_handle;
#define ABI mpich
#define MPIH mpich_handle
#include "mpi_abi.inc"

/// Open MPI's predefined handles are the addresses of exported globals.
static int ompi_bind_handles(void *lib, char *err, size_t errlen) {
    static const char *dtype_symbols[STMPI_DTYPE_COUNT] = {
        "ompi_mpi_byte", "ompi_mpi_float", "ompi_mpi_double", "ompi_mpi_int64_t", "ompi_mpi_int32_t",
        "ompi_mpi_uint8_t", "ompi_mpi_c_bool"};
    static const char *op_symbols[STMPI_OP_COUNT] = {
        "ompi_mpi_op_sum", "ompi_mpi_op_prod", "ompi_mpi_op_min", "ompi_mpi_op_max", "ompi_mpi_op_land",
        "ompi_mpi_op_lor"};
    const char *missing = NULL;
    if (!(ompi_world = dlsym(lib, "ompi_mpi_comm_world"))) missing = "ompi_mpi_comm_world";
    if (!(ompi_errors_return = dlsym(lib, "ompi_mpi_errors_return"))) missing = "ompi_mpi_errors_return";
    if (!(ompi_info_null = dlsym(lib, "ompi_mpi_info_null"))) missing = "ompi_mpi_info_null";
    for (int i = 0; i < STMPI_DTYPE_COUNT; i++)
        if (!(ompi_dtypes[i] = dlsym(lib, dtype_symbols[i]))) missing = dtype_symbols[i];
    for (int i = 0; i < STMPI_OP_COUNT; i++)
        if (!(ompi_ops[i] = dlsym(lib, op_symbols[i]))) missing = op_symbols[i];
    if (missing) snprintf(err, errlen, "%s has no symbol %s", loaded_name, missing);
    return missing == NULL;
}

/// MPICH's handle constants (mpi.h of MPICH 3.x/4.x; the ABI is stable across its derivatives).
static void mpich_bind_handles(void) {
    mpich_world = 0x44000000;
    mpich_errors_return = 0x54000001;
    mpich_info_null = 0x1c000000;
    const int dtypes[STMPI_DTYPE_COUNT] = {0x4c00010d, 0x4c00040a, 0x4c00080b, 0x4c00083a, 0x4c000439,
                                           0x4c00013b, 0x4c00013f};
    const int ops[STMPI_OP_COUNT] = {0x58000003, 0x58000004, 0x58000002, 0x58000001, 0x58000005, 0x58000007};
    memcpy(mpich_dtypes, dtypes, sizeof dtypes);
    memcpy(mpich_ops, ops, sizeof ops);
}

int stmpi_load(const char *path, char *err, size_t errlen) {
    if (loaded_flavor != STMPI_FLAVOR_NONE) return loaded_flavor;
    static const char *candidates[] = {"libmpi.so.40", "libmpi.so.12", "libmpich.so.12", "libmpi.so"};
    const char *tried = path ? path : "libmpi.so.40, libmpi.so.12, libmpich.so.12, libmpi.so";
    void *lib = NULL;
    // RTLD_GLOBAL: Open MPI's components, loaded by libmpi itself, resolve libmpi's symbols.
    if (path) {
        lib = dlopen(path, RTLD_NOW | RTLD_GLOBAL);
        if (lib) snprintf(loaded_name, sizeof loaded_name, "%s", path);
    } else {
        for (size_t i = 0; i < sizeof candidates / sizeof *candidates && !lib; i++) {
            lib = dlopen(candidates[i], RTLD_NOW | RTLD_GLOBAL);
            if (lib) snprintf(loaded_name, sizeof loaded_name, "%s", candidates[i]);
        }
    }
    if (!lib) {
        snprintf(err, errlen, "could not load an MPI library (tried %s)", tried);
        return STMPI_FLAVOR_NONE;
    }
    int flavor;
    if (dlsym(lib, "ompi_mpi_comm_world")) {
        if (!ompi_bind_functions(lib, err, errlen) || !ompi_bind_handles(lib, err, errlen)) return STMPI_FLAVOR_NONE;
        D = &ompi_dispatch;
        flavor = STMPI_FLAVOR_OPENMPI;
    } else {
        if (!mpich_bind_functions(lib, err, errlen)) return STMPI_FLAVOR_NONE;
        mpich_bind_handles();
        D = &mpich_dispatch;
        flavor = STMPI_FLAVOR_MPICH;
    }
    lib_handle = lib;
    loaded_flavor = flavor;
    return flavor;
}

int stmpi_flavor(void) { return loaded_flavor; }
const char *stmpi_library_name(void) { return loaded_name; }

stmpi_comm stmpi_comm_world(void) { return D->comm_world(); }
int stmpi_initialized(int *flag) { return D->initialized(flag); }
int stmpi_finalized(int *flag) { return D->finalized(flag); }
int stmpi_init_thread(int required, int *provided) { return D->init_thread(required, provided); }
int stmpi_finalize(void) { return D->finalize(); }
int stmpi_abort(stmpi_comm comm, int code) { return D->abort(comm, code); }
double stmpi_wtime(void) { return D->wtime(); }
void stmpi_error_string(int code, char *buf, size_t buflen) { D->error_string(code, buf, buflen); }
void stmpi_library_version(char *buf, size_t buflen) { D->library_version(buf, buflen); }
int stmpi_comm_rank(stmpi_comm c, int *rank) { return D->comm_rank(c, rank); }
int stmpi_comm_size(stmpi_comm c, int *size) { return D->comm_size(c, size); }
int stmpi_comm_dup(stmpi_comm c, stmpi_comm *out) { return D->comm_dup(c, out); }
int stmpi_comm_free(stmpi_comm c) { return D->comm_free(c); }
int stmpi_comm_set_errors_return(stmpi_comm c) { return D->comm_set_errors_return(c); }
int stmpi_barrier(stmpi_comm c) { return D->barrier(c); }
int stmpi_ibarrier(stmpi_comm c, stmpi_request *req) { return D->ibarrier(c, req); }
int stmpi_allreduce(const void *s, void *r, int n, int dt, int op, stmpi_comm c) { return D->allreduce(s, r, n, dt, op, c); }
int stmpi_iallreduce(const void *s, void *r, int n, int dt, int op, stmpi_comm c, stmpi_request *req) {
    return D->iallreduce(s, r, n, dt, op, c, req);
}
int stmpi_bcast(void *b, int n, int dt, int root, stmpi_comm c) { return D->bcast(b, n, dt, root, c); }
int stmpi_ibcast(void *b, int n, int dt, int root, stmpi_comm c, stmpi_request *req) {
    return D->ibcast(b, n, dt, root, c, req);
}
int stmpi_reduce(const void *s, void *r, int n, int dt, int op, int root, stmpi_comm c) {
    return D->reduce(s, r, n, dt, op, root, c);
}
int stmpi_allgather(const void *s, int n, void *r, int dt, stmpi_comm c) { return D->allgather(s, n, r, dt, c); }
int stmpi_reduce_scatter_block(const void *s, void *r, int n, int dt, int op, stmpi_comm c) {
    return D->reduce_scatter_block(s, r, n, dt, op, c);
}
int stmpi_gather(const void *s, int n, void *r, int dt, int root, stmpi_comm c) { return D->gather(s, n, r, dt, root, c); }
int stmpi_scatter(const void *s, int n, void *r, int dt, int root, stmpi_comm c) { return D->scatter(s, n, r, dt, root, c); }
int stmpi_alltoall(const void *s, int n, void *r, int dt, stmpi_comm c) { return D->alltoall(s, n, r, dt, c); }
int stmpi_send(const void *b, int n, int dt, int dst, int tag, stmpi_comm c) { return D->send(b, n, dt, dst, tag, c); }
int stmpi_recv(void *b, int n, int dt, int src, int tag, stmpi_comm c, int *actual) {
    return D->recv(b, n, dt, src, tag, c, actual);
}
int stmpi_isend(const void *b, int n, int dt, int dst, int tag, stmpi_comm c, stmpi_request *req) {
    return D->isend(b, n, dt, dst, tag, c, req);
}
int stmpi_irecv(void *b, int n, int dt, int src, int tag, stmpi_comm c, stmpi_request *req) {
    return D->irecv(b, n, dt, src, tag, c, req);
}
int stmpi_test(stmpi_request *req, int *flag, int *source) { return D->test(req, flag, source); }
int stmpi_wait(stmpi_request *req, int *source) { return D->wait(req, source); }
int stmpi_has_shared_windows(void) { return D ? D->has_shared_windows() : 0; }
int stmpi_comm_split_shared(stmpi_comm c, int key, stmpi_comm *out) { return D->comm_split_shared(c, key, out); }
int stmpi_win_allocate_shared(size_t bytes, stmpi_comm c, void **base, stmpi_win *win) {
    return D->win_allocate_shared(bytes, c, base, win);
}
int stmpi_win_shared_query(stmpi_win win, int rank, void **base, size_t *bytes) {
    return D->win_shared_query(win, rank, base, bytes);
}
int stmpi_win_sync(stmpi_win win) { return D->win_sync(win); }
int stmpi_win_free(stmpi_win win) { return D->win_free(win); }
