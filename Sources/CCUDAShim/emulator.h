// The host emulator's operations (emulator.c), for the device layer (device.c) and the emulated graphs
// (graph.c). Not part of the public interface: Swift reaches them through stcu_dev_* only.
#ifndef STCU_EMULATOR_H
#define STCU_EMULATOR_H

#include "stcu_device.h"

int stcu_emu_alloc(CUdeviceptr *p, size_t bytes);
int stcu_emu_free(CUdeviceptr p);
int stcu_emu_module_load(CUmodule *m, const char *path);
int stcu_emu_get_function(CUfunction *f, CUmodule m, const char *name);
int stcu_emu_launch(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
                    unsigned bz, const void *arg);
int stcu_emu_mem_info(size_t *free_bytes, size_t *total_bytes);
int stcu_emu_gemm(int transa, int transb, int m, int n, int k, double alpha, const void *A, int lda, const void *B,
                  int ldb, double beta, void *C, int ldc, int element);
/// `batch` stcu_emu_gemm calls on matrices `stride_*` elements apart (stcu_dev_gemm_batched's meaning).
int stcu_emu_gemm_batched(int transa, int transb, int m, int n, int k, double alpha, unsigned long long A, int lda,
                          long long stride_a, unsigned long long B, int ldb, long long stride_b, double beta,
                          unsigned long long C, int ldc, long long stride_c, int batch, int element);

#endif
