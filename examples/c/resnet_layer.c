/* A ResNet-50 layer through kiln's C library: open the device, describe the layer, find the
 * ranked solutions, choose the best, run it on kiln-allocated buffers and check the result
 * against a double-precision reference on the CPU. Without a GPU it prints the plan for a
 * named target and the no-device error, and exits 0.
 *
 *   resnet_layer [--device SPEC] [--target NAME] [-n BATCH] [--threads T] [--adopt-cuda-context]
 *
 * --adopt-cuda-context: the program makes its own CUDA context (libcuda loaded with dlopen, as
 * an application with its own CUDA code would have one) and hands it to
 * kiln_handle_create_from_cuda_context instead of letting kiln open the device.
 *
 * --threads T: T threads share one handle, each finds, chooses and runs the layer on its own
 * buffers; their outputs must equal the single-threaded run's bit for bit.
 *
 * The output's FNV-1a hash is printed as `y fnv1a64 0x...`; examples/resnet_layer.rs (the Rust
 * path) prints the same line for the same inputs. */
#include <kiln.h>

#include <dlfcn.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ResNet-50 conv2_x 3x3: 64 -> 64 channels on 56x56, padding 1, FP32 NHWC. */
enum { C = 64, K = 64, H = 56, W = 56, R = 3, S = 3, PAD = 1 };

static int check(kiln_status st, const char *what) {
  if (st != KILN_SUCCESS) {
    fprintf(stderr, "resnet_layer: %s: %s: %s\n", what, kiln_status_name(st), kiln_last_error());
    return 0;
  }
  return 1;
}

/* The same generator as the Rust example: exact floats in [-1, 1). */
static void fill(float *v, size_t n, uint32_t seed) {
  uint32_t s = seed;
  for (size_t i = 0; i < n; i++) {
    s = s * 1664525u + 1013904223u;
    v[i] = (float)(s >> 8) / 16777216.0f * 2.0f - 1.0f;
  }
}

static uint64_t fnv1a64(const void *data, size_t n) {
  const unsigned char *p = data;
  uint64_t h = 0xcbf29ce484222325ull;
  for (size_t i = 0; i < n; i++) {
    h ^= p[i];
    h *= 0x100000001b3ull;
  }
  return h;
}

static kiln_conv_desc layer(int n) {
  kiln_conv_desc d;
  kiln_conv_desc_init(&d);
  kiln_tensor_desc *t[3] = {&d.x, &d.w, &d.y};
  for (int i = 0; i < 3; i++) {
    t[i]->data_type = KILN_DATA_FLOAT;
    t[i]->layout = KILN_LAYOUT_NHWC;
  }
  int64_t x[5] = {n, C, 1, H, W}, w[5] = {K, C, 1, R, S}, y[5] = {n, K, 1, H, W};
  memcpy(d.x.dims, x, sizeof x);
  memcpy(d.w.dims, w, sizeof w);
  memcpy(d.y.dims, y, sizeof y);
  d.pad[1] = d.pad[2] = PAD;
  d.math = KILN_MATH_DEFAULT;
  return d;
}

static const char *provenance(kiln_provenance p) {
  switch (p) {
  case KILN_PROVENANCE_FIND_DB: return "find-db";
  case KILN_PROVENANCE_NEAREST: return "nearest";
  case KILN_PROVENANCE_COST_MODEL: return "cost model";
  default: return "saved";
  }
}

static void print_plan(const kiln_solution_info *s, size_t count) {
  printf("  %-4s %-26s %-24s %10s %10s  %s\n", "rank", "solver", "params", "time ms", "workspace",
         "ranked by");
  for (size_t i = 0; i < count; i++)
    printf("  %-4u %-26s %-24s %10.4f %10llu  %s%s%s\n", s[i].rank, s[i].solver, s[i].params,
           s[i].time_ms, (unsigned long long)s[i].workspace_bytes, provenance(s[i].provenance),
           s[i].nearest_key[0] ? " " : "", s[i].nearest_key);
}

/* Inputs, their reference output and the sizes, shared by every thread. */
struct job {
  kiln_handle *handle;
  int n;
  size_t x_len, w_len, y_len;
  float *x, *w;
  float *y;          /* this thread's output */
  uint64_t hash;     /* its FNV-1a */
  int ok;
};

/* Find, choose the best, run `repeats` times, download y. */
static void *run_layer(void *arg) {
  struct job *j = arg;
  kiln_conv_desc d = layer(j->n);
  kiln_problem *p = NULL;
  kiln_solution *sol = NULL;
  kiln_buffer *bx = NULL, *bw = NULL, *by = NULL, *bws = NULL;
  kiln_solution_info best;
  size_t count = 0;
  j->ok = 0;
  if (!check(kiln_problem_create(&d, &p), "problem") ||
      !check(kiln_find_solutions(j->handle, p, &best, 1, &count), "find") ||
      !check(kiln_solution_create(j->handle, p, &best, &sol), "choose") ||
      !check(kiln_solution_get_info(sol, &best), "solution info") ||
      !check(kiln_buffer_create(j->handle, j->x_len * 4, &bx), "alloc x") ||
      !check(kiln_buffer_create(j->handle, j->w_len * 4, &bw), "alloc w") ||
      !check(kiln_buffer_create(j->handle, j->y_len * 4, &by), "alloc y") ||
      !check(kiln_buffer_upload(bx, j->x, j->x_len * 4), "upload x") ||
      !check(kiln_buffer_upload(bw, j->w, j->w_len * 4), "upload w"))
    goto done;
  if (best.workspace_bytes > 0 &&
      !check(kiln_buffer_create(j->handle, best.workspace_bytes, &bws), "alloc workspace"))
    goto done;
  for (int r = 0; r < 10; r++) {
    if (!check(kiln_solution_run(sol, kiln_buffer_device_ptr(bx), j->x_len * 4,
                                 kiln_buffer_device_ptr(bw), j->w_len * 4,
                                 kiln_buffer_device_ptr(by), j->y_len * 4,
                                 kiln_buffer_device_ptr(bws), best.workspace_bytes, NULL),
               "run"))
      goto done;
  }
  if (!check(kiln_buffer_download(by, j->y, j->y_len * 4), "download y"))
    goto done;
  j->hash = fnv1a64(j->y, j->y_len * 4);
  j->ok = 1;
done:
  kiln_buffer_destroy(bws);
  kiln_buffer_destroy(by);
  kiln_buffer_destroy(bw);
  kiln_buffer_destroy(bx);
  kiln_solution_destroy(sol);
  kiln_problem_destroy(p);
  return NULL;
}

/* max |y - ref| / max |ref| over the output, the reference in double. */
static double reference_error(const struct job *j) {
  double worst = 0, scale = 0;
  for (int n = 0; n < j->n; n++)
    for (int oh = 0; oh < H; oh++)
      for (int ow = 0; ow < W; ow++)
        for (int k = 0; k < K; k++) {
          double acc = 0;
          for (int r = 0; r < R; r++) {
            int ih = oh - PAD + r;
            if (ih < 0 || ih >= H) continue;
            for (int s = 0; s < S; s++) {
              int iw = ow - PAD + s;
              if (iw < 0 || iw >= W) continue;
              const float *xp = j->x + (((size_t)n * H + ih) * W + iw) * C;
              const float *wp = j->w + (((size_t)k * R + r) * S + s) * C;
              for (int c = 0; c < C; c++) acc += (double)xp[c] * wp[c];
            }
          }
          double got = j->y[(((size_t)n * H + oh) * W + ow) * K + k];
          if (fabs(got - acc) > worst || isnan(got)) worst = isnan(got) ? INFINITY : fabs(got - acc);
          if (fabs(acc) > scale) scale = fabs(acc);
        }
  return worst / (scale > 0 ? scale : 1);
}

/* A CUDA context of the program's own, through the driver API (no CUDA headers needed). */
static void *own_cuda_context(void) {
  void *lib = dlopen("libcuda.so.1", RTLD_NOW);
  if (!lib) {
    fprintf(stderr, "resnet_layer: no libcuda.so.1: %s\n", dlerror());
    return NULL;
  }
  int (*cu_init)(unsigned) = (int (*)(unsigned))dlsym(lib, "cuInit");
  int (*cu_device_get)(int *, int) = (int (*)(int *, int))dlsym(lib, "cuDeviceGet");
  int (*cu_ctx_create)(void **, unsigned, int) =
      (int (*)(void **, unsigned, int))dlsym(lib, "cuCtxCreate_v2");
  void *ctx = NULL;
  int dev = 0;
  if (!cu_init || !cu_device_get || !cu_ctx_create || cu_init(0) || cu_device_get(&dev, 0) ||
      cu_ctx_create(&ctx, 0, dev)) {
    fprintf(stderr, "resnet_layer: could not create a CUDA context\n");
    return NULL;
  }
  return ctx; /* lives until the process ends, as kiln requires */
}

static int plan_only(const char *target, int n) {
  kiln_handle *h = NULL;
  kiln_problem *p = NULL;
  kiln_solution *sol = NULL;
  kiln_solution_info s[16];
  size_t count = 0, size = 0;
  uint8_t saved[4096];
  int ok = 0;
  kiln_conv_desc d = layer(n);
  char key[256];
  if (!check(kiln_handle_create_for_target(target, &h), "planning handle") ||
      !check(kiln_problem_create(&d, &p), "problem") ||
      !check(kiln_problem_get_key(p, key, sizeof key, NULL), "key") ||
      !check(kiln_find_solutions(h, p, s, 16, &count), "find"))
    goto done;
  printf("plan for %s on target %s (no device: nothing runs):\n", key, target);
  print_plan(s, count);
  if (!check(kiln_solution_create(h, p, &s[0], &sol), "choose") ||
      !check(kiln_solution_save(sol, saved, sizeof saved, &size), "save"))
    goto done;
  printf("saved solution (%zu bytes):\n%.*s", size, (int)size, (const char *)saved);
  ok = 1;
done:
  kiln_solution_destroy(sol);
  kiln_problem_destroy(p);
  kiln_handle_destroy(h);
  return ok ? 0 : 1;
}

int main(int argc, char **argv) {
  const char *device = NULL, *target = "sm_90_132";
  int n = 1, threads = 0, adopt = 0;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--device") && i + 1 < argc) device = argv[++i];
    else if (!strcmp(argv[i], "--target") && i + 1 < argc) target = argv[++i];
    else if (!strcmp(argv[i], "-n") && i + 1 < argc) n = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--threads") && i + 1 < argc) threads = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--adopt-cuda-context")) adopt = 1;
    else {
      fprintf(stderr,
              "usage: %s [--device SPEC] [--target NAME] [-n BATCH] [--threads T] "
              "[--adopt-cuda-context]\n",
              argv[0]);
      return 2;
    }
  }
  if (n < 1 || n > 256 || threads < 0 || threads > 64) {
    fprintf(stderr, "resnet_layer: -n is 1 to 256, --threads 0 to 64\n");
    return 2;
  }
  printf("kiln %s, C interface\n", kiln_version());
  kiln_handle *h = NULL;
  kiln_status st;
  if (adopt) {
    void *ctx = own_cuda_context();
    if (!ctx) return 1;
    st = kiln_handle_create_from_cuda_context(ctx, &h);
    printf("handle on the program's own CUDA context %p\n", ctx);
  } else {
    st = kiln_handle_create(device, &h);
  }
  if (st == KILN_ERROR_NO_DEVICE) {
    printf("no device: %s\n", kiln_last_error());
    return plan_only(target, n);
  }
  if (!check(st, "open device")) return 1;
  kiln_handle_info info;
  if (!check(kiln_handle_get_info(h, &info), "handle info")) return 1;
  printf("device %s (%s, %u SMs/CUs) -> target %s%s\n", info.device, info.arch,
         info.compute_units, info.target, info.exact_target ? "" : " (inexact target: closest CU count or a lower arch; see the log)");

  kiln_conv_desc d = layer(n);
  kiln_problem *p = NULL;
  kiln_solution_info s[16];
  size_t count = 0;
  char key[256];
  if (!check(kiln_problem_create(&d, &p), "problem") ||
      !check(kiln_problem_get_key(p, key, sizeof key, NULL), "key") ||
      !check(kiln_find_solutions(h, p, s, 16, &count), "find"))
    return 1;
  printf("problem %s: %zu solution(s)\n", key, count);
  print_plan(s, count);
  kiln_problem_destroy(p);

  struct job base = {.handle = h, .n = n};
  base.x_len = (size_t)n * C * H * W;
  base.w_len = (size_t)K * C * R * S;
  base.y_len = (size_t)n * K * H * W;
  base.x = malloc(base.x_len * 4);
  base.w = malloc(base.w_len * 4);
  base.y = malloc(base.y_len * 4);
  if (!base.x || !base.w || !base.y) return 1;
  fill(base.x, base.x_len, 1);
  fill(base.w, base.w_len, 2);
  run_layer(&base);
  if (!base.ok) return 1;
  double err = reference_error(&base);
  printf("ran %s [%s]: max |y - ref| / max |ref| = %.3e (FP32 bound 1e-5)\n", s[0].solver,
         s[0].params, err);
  printf("y fnv1a64 0x%016llx\n", (unsigned long long)base.hash);
  int failed = !(err <= 1e-5);

  if (threads > 0) {
    pthread_t tid[64];
    struct job jobs[64];
    for (int t = 0; t < threads; t++) {
      jobs[t] = base;
      jobs[t].y = malloc(base.y_len * 4);
      if (!jobs[t].y || pthread_create(&tid[t], NULL, run_layer, &jobs[t])) return 1;
    }
    int same = 0;
    for (int t = 0; t < threads; t++) {
      pthread_join(tid[t], NULL);
      same += jobs[t].ok && jobs[t].hash == base.hash &&
              !memcmp(jobs[t].y, base.y, base.y_len * 4);
      free(jobs[t].y);
    }
    printf("%d threads on one handle: %d of %d outputs equal the single-threaded run bit for bit\n",
           threads, same, threads);
    failed |= same != threads;
  }
  free(base.x);
  free(base.w);
  free(base.y);
  kiln_handle_destroy(h);
  printf("%s\n", failed ? "FAILED" : "passed");
  return failed;
}
