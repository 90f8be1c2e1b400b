// Persistent thread pool (docs/architecture.md §5; docs/performance.md,
// "Threads and the pool"): worker threads spin ~40 µs (pause instruction;
// yielding the core after 5 µs) after each chunk before sleeping on a futex,
// so back-to-back parallel ops pay no wake-up latency while an idle
// process burns no CPU. One parallel region at a time: a second user thread
// that calls ct_parallel_for while the pool is busy runs its range inline, and
// calls made from inside a region (nesting) run inline too.
#define _GNU_SOURCE
#include "ct_internal.h"
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#ifdef __linux__
#include <linux/futex.h>
#include <sys/syscall.h>
#endif

#define CT_MAX_THREADS 256
#define CT_SPIN_NS 40000

// MARK: - wait / wake on a 32-bit word

#ifdef __linux__
static void ct_wait(atomic_uint *addr, unsigned expected) {
  syscall(SYS_futex, (unsigned *)addr, FUTEX_WAIT_PRIVATE, expected, NULL, NULL, 0);
}
static void ct_wake(atomic_uint *addr) {
  syscall(SYS_futex, (unsigned *)addr, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
}
#else
static pthread_mutex_t g_wait_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t g_wait_cv = PTHREAD_COND_INITIALIZER;
static void ct_wait(atomic_uint *addr, unsigned expected) {
  pthread_mutex_lock(&g_wait_mu);
  while (atomic_load(addr) == expected) pthread_cond_wait(&g_wait_cv, &g_wait_mu);
  pthread_mutex_unlock(&g_wait_mu);
}
static void ct_wake(atomic_uint *addr) {
  (void)addr;
  pthread_mutex_lock(&g_wait_mu);
  pthread_cond_broadcast(&g_wait_cv);
  pthread_mutex_unlock(&g_wait_mu);
}
#endif

static inline void ct_pause(void) {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  __asm__ __volatile__("yield");
#endif
}

static inline uint64_t ct_now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

// Spin bookkeeping: every 16 pauses look at the clock; past CT_YIELD_NS also
// yield the core (on an oversubscribed machine the thread we wait for may be
// queued behind us on this very core); past CT_SPIN_NS give up (sleep).
#define CT_YIELD_NS 5000
typedef struct {
  uint64_t start;
  int i;
} ct_spin_t;
static int ct_spin_step(ct_spin_t *s) {  // returns 0 when the spin budget is spent
  if ((++s->i & 15) == 0) {
    uint64_t t = ct_now_ns();
    if (s->start == 0) s->start = t;
    else if (t - s->start > CT_SPIN_NS) return 0;
    else if (t - s->start > CT_YIELD_NS) sched_yield();
  }
  ct_pause();
  return 1;
}

// Spins until *addr != expected or about CT_SPIN_NS pass; returns the last value seen.
static unsigned ct_spin_while_eq(atomic_uint *addr, unsigned expected) {
  ct_spin_t s = {0, 0};
  unsigned v;
  while ((v = atomic_load_explicit(addr, memory_order_acquire)) == expected && ct_spin_step(&s)) {
  }
  return v;
}

// MARK: - pool state

typedef struct {
  _Alignas(64) atomic_uint gen;  // bumped by the dispatcher to hand over a chunk
  atomic_uint sleeping;          // 1 while parked in ct_wait
  ct_range_fn fn;
  void *ctx;
  int64_t begin, end;
} ct_worker;

static ct_worker g_workers[CT_MAX_THREADS];
static pthread_mutex_t g_region = PTHREAD_MUTEX_INITIALIZER;  // one region at a time
static int g_spawned;                                           // guarded by g_region
static atomic_int g_nthreads;                                   // 0 = not yet chosen
static _Alignas(64) atomic_uint g_pending;  // chunks handed out and not yet finished
static atomic_uint g_caller_sleeping;
static _Thread_local int tl_in_region;
static pthread_once_t g_once = PTHREAD_ONCE_INIT;

static void *ct_worker_main(void *arg) {
  ct_worker *w = (ct_worker *)arg;
  tl_in_region = 1;
  unsigned seen = 0;  // workers are created with gen == 0 (see ct_spawn)
  for (;;) {
    unsigned g = ct_spin_while_eq(&w->gen, seen);
    if (g == seen) {
      atomic_store(&w->sleeping, 1);
      while ((g = atomic_load(&w->gen)) == seen) ct_wait(&w->gen, seen);
      atomic_store(&w->sleeping, 0);
    }
    seen = g;
    w->fn(w->ctx, w->begin, w->end);
    if (atomic_fetch_sub(&g_pending, 1) == 1 && atomic_load(&g_caller_sleeping))
      ct_wake(&g_pending);
  }
  return NULL;
}

// After fork() only the calling thread exists in the child: forget the workers
// (new ones are spawned on demand) and release the region lock.
static void ct_atfork_child(void) {
  pthread_mutex_init(&g_region, NULL);
  for (int i = 0; i < g_spawned; i++) {
    atomic_store(&g_workers[i].gen, 0);
    atomic_store(&g_workers[i].sleeping, 0);
  }
  g_spawned = 0;
  atomic_store(&g_pending, 0);
  atomic_store(&g_caller_sleeping, 0);
  tl_in_region = 0;
}

static void ct_register_atfork(void) { pthread_atfork(NULL, NULL, ct_atfork_child); }

// Makes sure at least `n` workers exist; returns how many do. Caller holds g_region.
static int ct_spawn(int n) {
  pthread_once(&g_once, ct_register_atfork);
  while (g_spawned < n) {
    ct_worker *w = &g_workers[g_spawned];
    atomic_store(&w->gen, 0);
    atomic_store(&w->sleeping, 0);
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    pthread_attr_setstacksize(&attr, 1 << 20);
    pthread_t tid;
    int rc = pthread_create(&tid, &attr, ct_worker_main, w);
    pthread_attr_destroy(&attr);
    if (rc != 0) break;
    g_spawned++;
  }
  return g_spawned;
}

// The CPUs this process may run on (its affinity mask), else the online CPUs; at least 1.
static int ct_cpu_count(void) {
  int n = 0;
#ifdef __linux__
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof set, &set) == 0) n = CPU_COUNT(&set);
#endif
  if (n <= 0) n = (int)sysconf(_SC_NPROCESSORS_ONLN);
  if (n <= 0) n = 1;
  return n;
}

// A thread count as libgomp reads OMP_NUM_THREADS, which is what PyTorch's OpenMP build ends up
// using (observed with PyTorch 2.15: "3", " 3 ", "+3", "03" and the nested-levels list "3,2" give 3;
// "0", "-2", "abc", "3abc", "1.5", "" and values past INT_MAX are rejected, with a warning, and the
// default is used): blanks, an optional '+', digits, blanks, and for a comma-separated list the
// first entry, every entry checked alike. Returns 0 when the text is not such a number.
static int ct_parse_thread_count(const char *v) {
  long long first = 0;
  const char *p = v;
  for (int entry = 0;; entry++) {
    while (*p == ' ' || (*p >= '\t' && *p <= '\r')) p++;
    if (*p == '+') p++;
    if (*p < '0' || *p > '9') return 0;
    long long x = 0;
    for (; *p >= '0' && *p <= '9'; p++) {
      x = x * 10 + (*p - '0');
      if (x > 2147483647LL) return 0;
    }
    if (x == 0) return 0;
    if (entry == 0) first = x;
    while (*p == ' ' || (*p >= '\t' && *p <= '\r')) p++;
    if (*p == '\0') return (int)first;
    if (*p++ != ',') return 0;
  }
}

// PyTorch's get_env_num_threads (aten/src/ATen/ParallelCommon.cpp): the variable's count when it is
// a valid one, `fallback` when it is unset, and `fallback` with a warning on stderr when it is not a
// positive integer (PyTorch warns "Invalid OMP_NUM_THREADS variable value", libgomp "Invalid value
// for environment variable OMP_NUM_THREADS").
static int ct_env_num_threads(const char *name, int fallback) {
  const char *v = getenv(name);
  if (v == NULL) return fallback;
  int n = ct_parse_thread_count(v);
  if (n > 0) return n;
  fprintf(stderr, "SwiftTorch warning: Invalid %s variable value \"%s\": expected a positive integer; ignored\n",
          name, v);
  return fallback;
}

// The intra-op default, in PyTorch's order (intraop_default_num_threads): OMP_NUM_THREADS, then
// MKL_NUM_THREADS over it, then our own SWIFTTORCH_NUM_THREADS over both; without a valid one, the
// CPUs of the affinity mask (as PyTorch 2.15 reports under taskset). Capped at CT_MAX_THREADS; a
// count above the CPU count is kept (PyTorch's pip build lowers it to the core count inside MKL, a
// behaviour its issue 60000 files as a dependency bug, not a design).
static int ct_default_threads(void) {
  int n = ct_env_num_threads("OMP_NUM_THREADS", 0);
  n = ct_env_num_threads("MKL_NUM_THREADS", n);
  n = ct_env_num_threads("SWIFTTORCH_NUM_THREADS", n);
  if (n <= 0) n = ct_cpu_count();
  return n > CT_MAX_THREADS ? CT_MAX_THREADS : n;
}

// MARK: - API

void ct_set_num_threads(int n) {
  if (n < 1) n = 1;
  if (n > CT_MAX_THREADS) n = CT_MAX_THREADS;
  atomic_store(&g_nthreads, n);
}

int ct_get_num_threads(void) {
  int n = atomic_load_explicit(&g_nthreads, memory_order_relaxed);
  if (n == 0) {
    int expected = 0;
    n = ct_default_threads();
    if (!atomic_compare_exchange_strong(&g_nthreads, &expected, n)) n = expected;
  }
  return n;
}

// MARK: - parallel model (Amdahl projection without the cores)
//
// A machine with few cores cannot time a 16-thread run, but it can time what a 16-thread run would execute.
// While the model is on (ct_parallel_model_begin), every top-level region splits its range exactly as it would
// with ct_get_num_threads() threads and runs the chunks one after another on the calling thread, timing each:
// a region's work is the sum of its chunks, its critical path the longest one. Code outside regions (ops too
// small to split, the autograd engine, Swift glue) is serial by construction. So
//     projected time = serial + sum of critical paths + regions x dispatch cost
// with serial = wall time - work. What the projection leaves out: memory-bandwidth contention between cores
// (chunks run one at a time here, each with the whole cache) and the pool's wake-up variance. Redundant work
// of a wide split (every GEMM thread packing the same panel) and load imbalance are in it, because the split
// is the real one. Per region body (`fn`) the table keeps calls, work, critical path and chunks, so the regions
// that limit scaling show by name.

#define CT_MODEL_SLOTS 1024
static ct_parallel_model_row g_model_rows[CT_MODEL_SLOTS];
static atomic_int g_model_on;
static uint64_t g_model_start_ns, g_model_wall_ns;

void ct_parallel_model_begin(void) {
  memset(g_model_rows, 0, sizeof g_model_rows);
  g_model_wall_ns = 0;
  g_model_start_ns = ct_now_ns();
  atomic_store(&g_model_on, 1);
}

void ct_parallel_model_end(void) {
  if (!atomic_exchange(&g_model_on, 0)) return;
  g_model_wall_ns = ct_now_ns() - g_model_start_ns;
}

static ct_parallel_model_row *ct_model_row(ct_range_fn fn) {
  size_t h = ((uintptr_t)fn >> 4) * 0x9E3779B97F4A7C15ull;
  for (size_t i = 0; i < CT_MODEL_SLOTS; i++) {
    ct_parallel_model_row *r = &g_model_rows[(h + i) % CT_MODEL_SLOTS];
    if (r->fn == (const void *)fn) return r;
    if (r->fn == NULL) {
      r->fn = (const void *)fn;
      return r;
    }
  }
  return NULL;  // table full: the region still runs, uncounted
}

// Runs one region as the model describes (only the thread that began the model should run regions).
static void ct_model_region(int64_t n, int64_t grain, ct_range_fn fn, void *ctx) {
  int nt = ct_get_num_threads();
  int64_t chunks = n <= grain ? 1 : n / grain;
  if (chunks > nt) chunks = nt;
  if (chunks < 1) chunks = 1;
  const int64_t q = n / chunks, r = n % chunks;
  uint64_t work = 0, crit = 0;
  tl_in_region = 1;
  for (int64_t i = 0; i < chunks; i++) {
    int64_t b = q * i + (i < r ? i : r), e = b + q + (i < r ? 1 : 0);
    uint64_t t0 = ct_now_ns();
    fn(ctx, b, e);
    uint64_t dt = ct_now_ns() - t0;
    work += dt;
    if (dt > crit) crit = dt;
  }
  tl_in_region = 0;
  ct_parallel_model_row *row = ct_model_row(fn);
  if (row) {
    row->regions++;
    row->chunks += (uint64_t)chunks;
    row->work_ns += work;
    row->critical_ns += crit;
  }
}

int ct_parallel_model_rows(ct_parallel_model_row *out, int capacity, uint64_t *wall_ns) {
  if (wall_ns) *wall_ns = atomic_load(&g_model_on) ? ct_now_ns() - g_model_start_ns : g_model_wall_ns;
  int k = 0;
  for (int i = 0; i < CT_MODEL_SLOTS; i++) {
    if (g_model_rows[i].fn == NULL) continue;
    if (k < capacity && out) out[k] = g_model_rows[i];
    k++;
  }
  return k;
}

void ct_parallel_for(int64_t n, int64_t grain, ct_range_fn fn, void *ctx) {
  if (n <= 0) return;
  if (grain < 1) grain = 1;
  if (atomic_load_explicit(&g_model_on, memory_order_relaxed) && !tl_in_region) {
    ct_model_region(n, grain, fn, ctx);
    return;
  }
  int nt = ct_get_num_threads();
  if (nt <= 1 || n <= grain || tl_in_region) {
    fn(ctx, 0, n);
    return;
  }
  int64_t chunks = n / grain;
  if (chunks > nt) chunks = nt;
  if (chunks <= 1 || pthread_mutex_trylock(&g_region) != 0) {
    fn(ctx, 0, n);  // too small, or another user thread owns the pool
    return;
  }
  int have = ct_spawn((int)chunks - 1);
  if (chunks > have + 1) chunks = have + 1;
  if (chunks <= 1) {
    pthread_mutex_unlock(&g_region);
    fn(ctx, 0, n);
    return;
  }
  // chunk i = [q*i + min(i, r), ...) : sizes differ by at most one, all >= grain
  const int64_t q = n / chunks, r = n % chunks;
  atomic_store(&g_pending, (unsigned)(chunks - 1));
  for (int64_t i = 1; i < chunks; i++) {
    ct_worker *w = &g_workers[i - 1];
    w->fn = fn;
    w->ctx = ctx;
    w->begin = q * i + (i < r ? i : r);
    w->end = w->begin + q + (i < r ? 1 : 0);
    atomic_fetch_add(&w->gen, 1);  // seq_cst: pairs with the worker's sleeping flag
    if (atomic_load(&w->sleeping)) ct_wake(&w->gen);
  }
  tl_in_region = 1;
  fn(ctx, 0, q + (r > 0 ? 1 : 0));
  tl_in_region = 0;
  // wait for the workers: spin first, then sleep until the last one wakes us
  ct_spin_t s = {0, 0};
  while (atomic_load_explicit(&g_pending, memory_order_acquire) != 0) {
    if (!ct_spin_step(&s)) {
      unsigned p;
      atomic_store(&g_caller_sleeping, 1);
      while ((p = atomic_load(&g_pending)) != 0) ct_wait(&g_pending, p);
      atomic_store(&g_caller_sleeping, 0);
      break;
    }
  }
  pthread_mutex_unlock(&g_region);
}

// MARK: - inter-op threads
//
// PyTorch's at::set_num_interop_threads / get_num_interop_threads (ParallelThreadPoolNative.cpp):
// the count is set at most once, and only before inter-op work starts. States: CT_INTEROP_NOT_SET ->
// a positive count (set) -> CT_INTEROP_STARTED, or CT_INTEROP_NOT_SET -> CT_INTEROP_STARTED; the
// count in force when work starts is kept in g_interop_size.

#define CT_INTEROP_NOT_SET (-1)
#define CT_INTEROP_STARTED (-2)
static atomic_int g_interop = CT_INTEROP_NOT_SET;
static atomic_int g_interop_size;  // > 0 once started

int ct_set_num_interop_threads(int n) {
  if (n < 1) return -1;
  int expected = CT_INTEROP_NOT_SET;
  return atomic_compare_exchange_strong(&g_interop, &expected, n) ? 0 : -1;
}

// PyTorch's default inter-op count, TaskThreadPoolBase::defaultNumThreads(), reads no variable.
static int ct_default_interop_threads(void) {
  int n = ct_cpu_count();
  return n > CT_MAX_THREADS ? CT_MAX_THREADS : n;
}

int ct_get_num_interop_threads(void) {
  int v = atomic_load(&g_interop);
  if (v > 0) return v;
  if (v == CT_INTEROP_NOT_SET) return ct_default_interop_threads();
  int size;
  while ((size = atomic_load(&g_interop_size)) == 0) ct_pause();  // the starter is storing it
  return size;
}

int ct_start_interop(void) {
  int v = atomic_exchange(&g_interop, CT_INTEROP_STARTED);
  if (v == CT_INTEROP_STARTED) return ct_get_num_interop_threads();
  int size = v > 0 ? v : ct_default_interop_threads();
  atomic_store(&g_interop_size, size);
  return size;
}
