// CTorchKernels: the SIMD-critical kernels of SwiftTorch, compiled per ISA
// (AVX-512 / AVX2+FMA / baseline) and picked at run time (docs/architecture.md §5).
// Everything else in SwiftTorch is Swift.
#ifndef CTORCH_KERNELS_H
#define CTORCH_KERNELS_H

#include <stdint.h>
#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

// MARK: - Runtime ISA

/// 0 = baseline, 1 = AVX2+FMA, 2 = AVX-512F. Honors CTORCH_ISA=baseline|avx2|avx512 when set.
int ct_isa_level(void);
/// Replaces the selected ISA level (clamped to what the CPU supports) and returns the previous one, for tests
/// that compare the instantiations in one process. Not for use while other threads run kernels.
int ct_set_isa_level(int level);
/// With AVX-512 selected, the vector-math and sum kernels (ct_vexp_f32 ... ct_vsum_f32) run their 512-bit code only for
/// calls on at least this many bytes and the AVX2 code below (0: always 512-bit). Chosen once from the CPU's
/// vendor and model (Intel Skylake-SP/Cascade Lake lower the clock for 512-bit code; see isa.c), overridable
/// with CTORCH_AVX512_MIN_BYTES=<bytes>.
size_t ct_avx512_min_bytes(void);
/// Replaces that threshold (0: 512-bit whenever AVX-512 is selected), for tests and measurements; returns the
/// previous value.
size_t ct_set_avx512_min_bytes(size_t bytes);
/// Name of the selected ISA ("avx512", "avx2", "baseline").
const char *ct_isa_name(void);

// MARK: - CRC-32

/// Whether ct_crc32_clmul uses carry-less multiplication (x86 PCLMULQDQ + SSE4.1).
int ct_crc32_clmul_available(void);
/// The zlib CRC-32 of `len` bytes continuing `crc` (0 to start; the finished value of the bytes
/// before). Fast only when ct_crc32_clmul_available() and len >= 64; bitwise otherwise.
uint32_t ct_crc32_clmul(uint32_t crc, const void *data, size_t len);

/// The Swift runtime's allocation of an instance of the class `metadata` (header set, +1 reference, stored
/// properties uninitialised), for copying an object whose class has no suitable initialiser.
void *ct_alloc_object(const void *metadata, size_t size, size_t align_mask);

// MARK: - Thread pool

/// A persistent pool of worker threads that spin briefly before sleeping.
/// `n` counts the calling thread; n <= 1 runs everything on the caller.
/// The first ct_get_num_threads() before any ct_set_num_threads() picks the default: the first valid
/// (a positive integer) of SWIFTTORCH_NUM_THREADS, MKL_NUM_THREADS, OMP_NUM_THREADS, else the CPUs
/// of the process's affinity mask; an invalid value is ignored with a warning on stderr, as PyTorch does.
void ct_set_num_threads(int n);
int ct_get_num_threads(void);

/// Inter-op threads (PyTorch's set_num_interop_threads semantics): ct_set_num_interop_threads
/// stores a positive `n` and returns 0 the first time, before ct_start_interop(); it returns -1 and
/// changes nothing when `n` < 1, when a count was already set, or once inter-op work started.
int ct_set_num_interop_threads(int n);
/// The count set, else the default (the CPUs of the affinity mask; no variable is read), else,
/// once started, the count that was in force then.
int ct_get_num_interop_threads(void);
/// Marks inter-op work as started (later sets fail) and returns the count it runs with.
int ct_start_interop(void);

/// The body of a parallel region: processes [begin, end).
typedef void (*ct_range_fn)(void *ctx, int64_t begin, int64_t end);

/// Splits [0, n) into at most num_threads contiguous chunks of at least `grain`
/// items and runs `fn` on them, the caller taking the first chunk. Returns when
/// all chunks are done. Runs inline when n <= grain, when one thread is set, or
/// when called from inside a parallel region (no nesting).
/// Thread-safe: while one user thread's region runs, another user thread's
/// call runs its whole range inline. Workers are detached (they never keep the
/// process alive) and are re-created on demand in a fork()ed child.
void ct_parallel_for(int64_t n, int64_t grain, ct_range_fn fn, void *ctx);

/// One region body's totals in the parallel model (threadpool.c explains the model).
typedef struct {
  const void *fn;        // the region's body
  uint64_t regions;      // calls that reached the pool
  uint64_t chunks;       // chunks over all those calls
  uint64_t work_ns;      // time of all chunks
  uint64_t critical_ns;  // sum over calls of the longest chunk
} ct_parallel_model_row;

/// Starts the parallel model: from now on every top-level ct_parallel_for splits its range as it would with
/// ct_get_num_threads() threads but runs the chunks one after another on the calling thread, timing each, so a
/// machine with few cores can project a many-core run (see threadpool.c). Clears earlier totals.
void ct_parallel_model_begin(void);
/// Stops the model (regions run on the pool again) and fixes its wall time.
void ct_parallel_model_end(void);
/// Copies up to `capacity` rows into `out`, stores the model's wall time (so far, while it runs) in
/// `*wall_ns`, and returns the number of rows there are.
int ct_parallel_model_rows(ct_parallel_model_row *out, int capacity, uint64_t *wall_ns);

// MARK: - Streaming prefetch

/// Elementwise loops over arrays of at least this many bytes prefetch in software; smaller ones
/// (and every array when this is SIZE_MAX) run the plain loop. Chosen once from what the CPU
/// reports (vendor, cache sizes), overridable with CTORCH_PREFETCH_MIN_BYTES=<bytes>|off; the
/// rule and the measurements behind it are in isa.c.
size_t ct_prefetch_min_bytes(void);
/// Replaces the policy's threshold (SIZE_MAX: never prefetch), for tests and measurements that must
/// exercise one path whatever the CPU; returns the previous value.
size_t ct_set_prefetch_min_bytes(size_t bytes);
/// How far ahead (bytes) a streaming loop prefetches.
#define CT_PREFETCH_DISTANCE 4096

/// Prefetches the cache lines `CT_PREFETCH_DISTANCE` bytes ahead of `[w, w + wbytes)` for
/// writing, and of `[r1, r1 + r1bytes)` and `[r2, r2 + r2bytes)` for reading (`r2` may be NULL).
/// One call per chunk of a streaming loop written outside C (an inline prefetch is not inlined
/// into Swift, whose functions have other target attributes). Never faults.
void ct_prefetch_ahead(const void *w, size_t wbytes, const void *r1, size_t r1bytes, const void *r2,
                       size_t r2bytes);

// MARK: - GEMM

/// C[m,n] = alpha * sum_k A[m,k] * B[k,n] + beta * C[m,n]
/// A element (m,k) is at A[m*rsa + k*csa]; B (k,n) at B[k*rsb + n*csb];
/// C (m,n) at C[m*rsc + n] (C rows contiguous). Any strides for A and B
/// (transposes are handled in packing). beta == 0 means C is not read
/// (it may hold garbage or NaN). Parallel over the pool when large enough
/// (about 0.5M multiply-adds); callable from any thread, re-entrant.
void ct_sgemm(int64_t M, int64_t N, int64_t K, float alpha,
              const float *A, int64_t rsa, int64_t csa,
              const float *B, int64_t rsb, int64_t csb,
              float beta, float *C, int64_t rsc);

/// A (M x K, element (i, k) at A[i*rsa + k*csa]) packed once for ct_sgemm_prepacked: M*K floats at
/// `packed`, laid out for the current ISA level (ct_isa_level()), and valid only for that level.
void ct_sgemm_pack_a(int64_t M, int64_t K, const float *A, int64_t rsa, int64_t csa, float *packed);
/// ct_sgemm with A from ct_sgemm_pack_a at the same ISA level, for N of at least 16 (the same results
/// as ct_sgemm on the unpacked A, bit for bit).
void ct_sgemm_prepacked(int64_t M, int64_t N, int64_t K, float alpha, const float *packed_a,
                        const float *B, int64_t rsb, int64_t csb, float beta, float *C, int64_t rsc);
void ct_dgemm(int64_t M, int64_t N, int64_t K, double alpha,
              const double *A, int64_t rsa, int64_t csa,
              const double *B, int64_t rsb, int64_t csb,
              double beta, double *C, int64_t rsc);

// MARK: - Vectorized float math (contiguous, y may alias x)

void ct_vexp_f32(const float *x, float *y, int64_t n);
void ct_vlog_f32(const float *x, float *y, int64_t n);
void ct_vtanh_f32(const float *x, float *y, int64_t n);
void ct_vsigmoid_f32(const float *x, float *y, int64_t n);

/// Sum of n contiguous floats, accumulated in float with many vector lanes
/// (pairwise-like accuracy, like PyTorch's cascade sum).
float ct_vsum_f32(const float *x, int64_t n);

// MARK: - Batch-norm reductions (float32 data, double sums)

/// Statistics of `channels` channels over `rows` rows of `l` floats: channel j's row r at x + r·stride + j·l
/// (an (N, C, L) tensor: x at channel c0, stride C·L). Per channel the mean (a double sum rounded to float)
/// and the sum of squared deviations from that mean (float products, double sums).
void ct_bn_stats_f32(const float *x, int64_t rows, int64_t stride, int64_t l, int64_t channels, float *mean,
                     double *m2);
/// Σ g and Σ (x − mean[j])·g per channel, laid out as in ct_bn_stats_f32 (float products, double sums).
void ct_bn_grad_sums_f32(const float *g, const float *x, int64_t rows, int64_t stride, int64_t l, int64_t channels,
                         const float *mean, double *sum, double *dot);

// MARK: - Recurrent cells (float32, contiguous rows)

/// One LSTM time step after the recurrent GEMM, over `rows` rows of hidden size `h`:
/// `gates` (row stride 4h) holds the pre-activations of blocks i, f, g, o; `bias` (4h, or NULL)
/// is added, the activated gates are written back (sigmoid, sigmoid, tanh, sigmoid), then
/// c = f*c_prev + i*g, tc = tanh(c), h_out = o*tc (each rows x h).
void ct_lstm_cell_fwd_f32(int64_t rows, int64_t h, float *gates, const float *bias,
                          const float *c_prev, float *c, float *tc, float *h_out);

/// Backward of one LSTM step: from the activated `gates`, `tc` = tanh(c), `c_prev` and the
/// gradient `dh` of the step's output, writes the pre-activation gradients `dgates`
/// (row stride 4h), turns `dc` (gradient of c, in) into the gradient of c_prev (out), and adds
/// the column sums of `dgates` into `dbias` (4h) unless it is NULL.
void ct_lstm_cell_bwd_f32(int64_t rows, int64_t h, const float *gates, const float *tc,
                          const float *c_prev, const float *dh, float *dc, float *dgates,
                          float *dbias);

// Depthwise convolution forward of one channel plane (float32): y[oh][ow] = bias + the taps of w [kh][kw] over x
// [ih][iw] with the given strides, paddings (before) and dilations; taps in the padding are skipped. Kernels of at
// most ct_depthwise_max_kernel_rows() rows.
int64_t ct_depthwise_max_kernel_rows(void);
void ct_depthwise_plane_f32(const float *x, int64_t ih, int64_t iw, const float *w, int64_t kh, int64_t kw,
                            int64_t sh, int64_t sw, int64_t ph, int64_t pw, int64_t dh, int64_t dw, float bias,
                            float *y, int64_t oh, int64_t ow);

// Max pooling, one output row: output ow is the maximum over the window rows row_base[0..<nrows] (in-plane
// offsets of each window row's column 0) and the columns first[ow] + j*step, j < count[ow]; indices get the
// in-plane index of the maximum (first in scan order, NaN wins). Empty windows give -inf and index 0.
void ct_maxpool_row_f32(const float *x, const int64_t *row_base, int64_t nrows, const int64_t *first,
                        const int64_t *count, int64_t step, int64_t outw, float *y, int64_t *indices);
void ct_maxpool_row_f64(const double *x, const int64_t *row_base, int64_t nrows, const int64_t *first,
                        const int64_t *count, int64_t step, int64_t outw, double *y, int64_t *indices);
// Max pooling values only (no indices), one output row of a fixed-window axis: output ow is the maximum over
// the window rows row_base[0..<nrows] and the padded columns ow*stride + j*dilation, j < kernel, where padded
// column c is input column c - pad_left (-inf outside the input). colmax is scratch of colmax_len >=
// max(pad_left + width, (outw-1)*stride + (kernel-1)*dilation + 1) elements. NaN propagates.
void ct_maxpool_values_row_f32(const float *x, const int64_t *row_base, int64_t nrows, int64_t width,
                               int64_t pad_left, int64_t stride, int64_t dilation, int64_t kernel, int64_t outw,
                               float *colmax, int64_t colmax_len, float *y);
void ct_maxpool_values_row_f64(const double *x, const int64_t *row_base, int64_t nrows, int64_t width,
                               int64_t pad_left, int64_t stride, int64_t dilation, int64_t kernel, int64_t outw,
                               double *colmax, int64_t colmax_len, double *y);
// The 2x2 stride-2 case of one row: output ow is the maximum of r0[2ow], r0[2ow + 1], r1[2ow], r1[2ow + 1],
// with in-plane indices i0 + 2ow, ... (31-bit), on SSE2 masks four windows at a time.
void ct_maxpool_row2x2_f32(const float *r0, const float *r1, int64_t i0, int64_t i1, int64_t outw, float *y,
                           int64_t *indices);

// Winograd F(2x2, 3x3) tile transforms (Torch's WinogradKernels.swift drives them).
// Each works on one channel plane, tiles numbered ty * tw + t (th x tw tiles), in bands of tile rows.
// scratch: ct_winograd_scratch_f32(tw) floats.
int64_t ct_winograd_scratch_f32(int64_t tw);
// Input: V[xi * vstride + ty * tw + t] = (B^T d B)[xi] for the input tile d at row 2ty - padh, column
// 2t - padw of the height x width plane (zero outside it).
void ct_winograd_input_plane_f32(const float *plane, int64_t height, int64_t width, int64_t padh, int64_t padw,
                                 int64_t th, int64_t tw, float *v, int64_t vstride, float *scratch);
// Output: the oh x ow plane, each 2x2 tile A^T m A + bias with m[xi] = M[xi * mstride + ty * tw + t],
// clipped at the plane's edge.
void ct_winograd_output_plane_f32(const float *m, int64_t mstride, int64_t th, int64_t tw, float bias, float *out,
                                  int64_t oh, int64_t ow, float *scratch);
// Weight gradient: Z[xi * zstride + ty * tw + t] = (A dy A^T)[xi] for the 2x2 tiles of the oh x ow output
// gradient plane, entries past its edge taken as zero.
void ct_winograd_grad_plane_f32(const float *dy, int64_t oh, int64_t ow, int64_t th, int64_t tw, float *z,
                                int64_t zstride, float *scratch);

// MARK: - Direct convolution (few channels, stride 1; Torch's DirectConvolution.swift drives it)

/// Output channels per forward block for `cout` output channels (the weight packing's block; it depends on
/// the ISA level, so pack and run under the same one) and floats per vector.
int64_t ct_direct_conv_block_f32(int64_t cout);
int64_t ct_direct_conv_width_f32(void);
/// y[co * ystride + j] = bias[co] + sum over c < cin, t < taps of w[co][c][t] * x[c * plane + off[t] + j], for
/// co < cout and j < nj rounded up to two vectors (x must be readable and y writable that far). `wp` is the weight
/// packed per block of ct_direct_conv_block_f32(cout) output channels as [block][c][t][channel in block], zero
/// past cout; `bias` is NULL or padded to whole blocks.
void ct_direct_conv_f32(const float *x, int64_t cin, int64_t plane, const int64_t *off, int64_t taps,
                        const float *wp, const float *bias, int64_t cout, float *y, int64_t ystride, int64_t nj);
/// Lane-wise weight-gradient sums: with L = ct_direct_conv_width_f32(), lane l of
/// dw_lanes[((co * cin + c) * taps + t) * L + l] += sum over j < nj, j = l (mod L), of
/// dy[co * dystride + j] * x[c * plane + off[t] + j]; nj a multiple of L. Call it per image on one buffer
/// (zeroed first), then ct_direct_conv_wgrad_reduce_f32 once.
void ct_direct_conv_wgrad_f32(const float *dy, int64_t dystride, int64_t cout, const float *x, int64_t cin,
                              int64_t plane, const int64_t *off, int64_t taps, int64_t nj, float *dw_lanes);
/// dw[i] = the sum of the L lanes of dw_lanes[i * L ..< (i + 1) * L] for i < count.
void ct_direct_conv_wgrad_reduce_f32(const float *dw_lanes, int64_t count, float *dw);

#ifdef __cplusplus
}
#endif

#endif
