/* kiln's C library on bad input: every case must return the expected status with a message
 * naming what was wrong, never crash, and (run under valgrind by `make examples`) leak
 * nothing. Needs no GPU: device-less calls use a planning handle, and the device specs tried
 * are refused by every machine. Also: one planning handle used by several threads at once
 * gives each thread the single-threaded answer; a solution saved and loaded back is the same.
 * Prints `N passed, N failed` and exits non-zero on any failure. */
#include <kiln.h>

#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int passed, failed;

static void expect(const char *name, kiln_status got, kiln_status want, const char *needle) {
  const char *msg = got == KILN_SUCCESS ? "" : kiln_last_error();
  int ok = got == want && (!needle || strstr(msg, needle));
  if (want != KILN_SUCCESS && got == want && msg[0] == '\0') ok = 0; /* every failure explains */
  if (ok) {
    passed++;
  } else {
    failed++;
    printf("FAIL %s: got %s (%s), want %s containing '%s'\n", name, kiln_status_name(got), msg,
           kiln_status_name(want), needle ? needle : "");
  }
}

/* conv2_x 3x3 of ResNet-50, FP16 NHWC, batch 1. */
static kiln_conv_desc good_desc(void) {
  kiln_conv_desc d;
  kiln_conv_desc_init(&d);
  kiln_tensor_desc *t[3] = {&d.x, &d.w, &d.y};
  for (int i = 0; i < 3; i++) {
    t[i]->data_type = KILN_DATA_HALF;
    t[i]->layout = KILN_LAYOUT_NHWC;
  }
  int64_t x[5] = {1, 64, 1, 56, 56}, w[5] = {64, 64, 1, 3, 3};
  memcpy(d.x.dims, x, sizeof x);
  memcpy(d.y.dims, x, sizeof x);
  memcpy(d.w.dims, w, sizeof w);
  d.pad[1] = d.pad[2] = 1;
  return d;
}

static void problem_case(const char *name, kiln_conv_desc d, kiln_status want, const char *needle) {
  kiln_problem *p = (kiln_problem *)&d; /* must be overwritten with NULL on failure */
  kiln_status st = kiln_problem_create(&d, &p);
  expect(name, st, want, needle);
  if (st != KILN_SUCCESS && p != NULL) {
    failed++;
    printf("FAIL %s: out not cleared on failure\n", name);
  }
  kiln_problem_destroy(p);
}

static void descriptions(void) {
  kiln_conv_desc d;
  problem_case("good", good_desc(), KILN_SUCCESS, NULL);
  d = good_desc(); d.struct_size = 16;
  problem_case("struct_size", d, KILN_ERROR_BAD_PARAM, "struct_size = 16");
  const int64_t dims[] = {0, -1, 4294967296LL, -9223372036854775807LL - 1};
  const char *names[] = {"n", "c", "d", "h", "w"};
  for (int i = 0; i < 5; i++)
    for (int v = 0; v < 4; v++) {
      char name[64], needle[64];
      d = good_desc();
      d.x.dims[i] = dims[v];
      snprintf(name, sizeof name, "x.dims[%d] = %lld", i, (long long)dims[v]);
      snprintf(needle, sizeof needle, "x.dims[%d] (%s) = %lld", i, names[i], (long long)dims[v]);
      problem_case(name, d, KILN_ERROR_BAD_PARAM, needle);
    }
  d = good_desc(); d.x.data_type = 7;
  problem_case("data type 7", d, KILN_ERROR_BAD_PARAM, "x.data_type = 7");
  d = good_desc(); d.y.layout = -3;
  problem_case("layout -3", d, KILN_ERROR_BAD_PARAM, "y.layout = -3");
  d = good_desc(); d.w.layout = KILN_LAYOUT_NDHWC;
  problem_case("2-D and 3-D mixed", d, KILN_ERROR_BAD_PARAM, "all 3-D");
  d = good_desc(); d.x.dims[2] = 4;
  problem_case("depth on 2-D", d, KILN_ERROR_BAD_PARAM, "2-D layouts have d = 1");
  d = good_desc(); d.pad[0] = 1;
  problem_case("depth pad on 2-D", d, KILN_ERROR_BAD_PARAM, "pad[0] = 0");
  d = good_desc(); d.stride[1] = 0;
  problem_case("stride 0", d, KILN_ERROR_BAD_PARAM, "stride[1] (h) = 0");
  d = good_desc(); d.dilation[2] = -1;
  problem_case("dilation -1", d, KILN_ERROR_BAD_PARAM, "dilation[2] (w) = -1");
  d = good_desc(); d.pad[1] = -1;
  problem_case("pad -1", d, KILN_ERROR_BAD_PARAM, "pad[1] (h) = -1");
  d = good_desc(); d.groups = 0;
  problem_case("groups 0", d, KILN_ERROR_BAD_PARAM, "groups = 0");
  d = good_desc(); d.groups = 3;
  problem_case("groups 3 of 64", d, KILN_ERROR_BAD_PARAM, "groups = 3");
  d = good_desc(); d.y.dims[3] = 57;
  problem_case("wrong output size", d, KILN_ERROR_BAD_PARAM, "1x57x56");
  d = good_desc(); d.y.dims[1] = 32;
  problem_case("y channels", d, KILN_ERROR_BAD_PARAM, "y.dims[1] (c) = 32");
  d = good_desc(); d.math = 5;
  problem_case("math 5", d, KILN_ERROR_BAD_PARAM, "math = 5");
  d = good_desc(); d.direction = 4;
  problem_case("direction 4", d, KILN_ERROR_BAD_PARAM, "direction = 4");
  /* Review D1: sizes whose products wrap 32- and 64-bit counts. */
  d = good_desc();
  int64_t big[5] = {1, 65536, 1, 16777216, 16777216}, bw[5] = {1, 65536, 1, 16777216, 16777216};
  memcpy(d.x.dims, big, sizeof big);
  memcpy(d.w.dims, bw, sizeof bw);
  int64_t by[5] = {1, 1, 1, 3, 3};
  memcpy(d.y.dims, by, sizeof by);
  problem_case("D1 wrapping sizes", d, KILN_ERROR_BAD_PARAM, "not a valid convolution");
  /* Filter larger than the padded input. */
  d = good_desc(); d.w.dims[3] = 99; d.w.dims[4] = 99;
  problem_case("filter larger than input", d, KILN_ERROR_BAD_PARAM, "not a valid convolution");
  expect("desc NULL", kiln_problem_create(NULL, NULL), KILN_ERROR_BAD_PARAM, "out is NULL");
  kiln_problem *p = NULL;
  expect("desc NULL 2", kiln_problem_create(NULL, &p), KILN_ERROR_BAD_PARAM, "desc is NULL");
  expect("init NULL", kiln_conv_desc_init(NULL), KILN_ERROR_BAD_PARAM, "desc is NULL");
}

static void keys(void) {
  const char *bad[] = {
      "",
      "--------------",
      "64-56-56-3x3-64-56-56-1-1x1-1x1-1x1-0-NCWH-FP32-F",
      "64-56-56-3x3-64-56-56-1-1x1-1x1-1x1-0-NCHW-FP33-F",
      "64-56-56-3\xc3\x97" "3-64-56-56-1-1x1-1x1-1x1-0-NCHW-FP32-F",
      "65536-16777216-16777216-16777216x16777216-1-1-1-1-0x0-1x1-1x1-0-NCHW-FP32-F",
      "512-1-1-4x4-128-1-1-1-0x0-1x1-1x1-0-NCHW-FP32-F",
      "64-56-56-3x3-64-56-56-1-1x1-0x0-1x1-0-NCHW-FP32-F",
      "2x64x56x56x1x3x3x1x64x32x1x1x0x1x1x0x1x1x0x0x1xNCHWxFP32xF",
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    kiln_problem *p = NULL;
    char name[32];
    snprintf(name, sizeof name, "bad key %zu", i);
    expect(name, kiln_problem_create_from_key(bad[i], KILN_MATH_DEFAULT, &p), KILN_ERROR_BAD_PARAM,
           "bad find-db key");
    kiln_problem_destroy(p);
  }
  kiln_problem *p = NULL;
  expect("key NULL", kiln_problem_create_from_key(NULL, 0, &p), KILN_ERROR_BAD_PARAM, "key is NULL");
  expect("key math 9",
         kiln_problem_create_from_key("64-56-56-3x3-64-56-56-1-1x1-1x1-1x1-0-NCHW-FP32-F", 9, &p),
         KILN_ERROR_BAD_PARAM, "math = 9");
  /* A long key: 120 KB of digits. */
  char *long_key = malloc(120001);
  memset(long_key, '7', 120000);
  long_key[120000] = 0;
  expect("120 KB key", kiln_problem_create_from_key(long_key, 0, &p), KILN_ERROR_BAD_PARAM, NULL);
  free(long_key);
}

static void devices_and_targets(void) {
  const char *specs[] = {"vulkan:0", "cuda:x", "cuda:99", "cuda://GPU-nope", "hip://nope", ""};
  for (size_t i = 0; i < sizeof specs / sizeof specs[0]; i++) {
    kiln_handle *h = (kiln_handle *)specs; /* must be cleared */
    kiln_status st = kiln_handle_create(specs[i], &h);
    char name[64];
    snprintf(name, sizeof name, "device '%s'", specs[i]);
    /* No machine has these: some are malformed, the rest name devices that do not exist. */
    int ok = (st == KILN_ERROR_NO_DEVICE) && h == NULL && kiln_last_error()[0];
    if (ok) passed++;
    else {
      failed++;
      printf("FAIL %s: %s (%s)\n", name, kiln_status_name(st), kiln_last_error());
    }
    kiln_handle_destroy(h);
  }
  kiln_handle *h = NULL;
  expect("unknown target", kiln_handle_create_for_target("sm_99_1", &h), KILN_ERROR_NO_TARGET,
         "target 'sm_99_1' is not compiled into this binary");
  expect("NULL target, many embedded", kiln_handle_create_for_target(NULL, &h),
         KILN_ERROR_BAD_PARAM, "targets are embedded");
  expect("NULL CUDA context", kiln_handle_create_from_cuda_context(NULL, &h), KILN_ERROR_BAD_PARAM,
         "cu_context is NULL");
  expect("HIP ordinal -1", kiln_handle_create_from_hip_device(-1, &h), KILN_ERROR_BAD_PARAM,
         "device_ordinal = -1");
  expect("handle out NULL", kiln_handle_create_for_target("h100", NULL), KILN_ERROR_BAD_PARAM,
         "out is NULL");
  expect("info of NULL", kiln_handle_get_info(NULL, NULL), KILN_ERROR_BAD_PARAM, "handle is NULL");
}

/* Plans on one planning handle, compared across threads. */
struct plan_job {
  kiln_handle *h;
  kiln_solution_info s[16];
  size_t count;
  kiln_status st;
};

static void *plan_thread(void *arg) {
  struct plan_job *j = arg;
  kiln_conv_desc d = good_desc();
  for (int r = 0; r < 200; r++) {
    kiln_problem *p = NULL;
    j->st = kiln_problem_create(&d, &p);
    if (j->st == KILN_SUCCESS) j->st = kiln_find_solutions(j->h, p, j->s, 16, &j->count);
    kiln_problem_destroy(p);
    if (j->st != KILN_SUCCESS) break;
  }
  return NULL;
}

static void planning(void) {
  kiln_handle *h = NULL, *other = NULL;
  kiln_problem *p = NULL, *q = NULL;
  kiln_solution *sol = NULL, *back = NULL;
  kiln_solution_info s[16], info;
  size_t count = 0, size = 0, needed = 0;
  uint8_t bytes[4096];
  char key[8];
  kiln_conv_desc d = good_desc();
  expect("planning handle", kiln_handle_create_for_target("h100", &h), KILN_SUCCESS, NULL);
  expect("problem", kiln_problem_create(&d, &p), KILN_SUCCESS, NULL);
  expect("key buffer too small", kiln_problem_get_key(p, key, sizeof key, &needed),
         KILN_ERROR_BUFFER_TOO_SMALL, "needs");
  if (needed < 40) { failed++; printf("FAIL key size %zu\n", needed); } else passed++;
  expect("count only", kiln_find_solutions(h, p, NULL, 0, &count), KILN_SUCCESS, NULL);
  expect("find", kiln_find_solutions(h, p, s, 16, &count), KILN_SUCCESS, NULL);
  if (count < 1 || s[0].rank != 1 || s[0].solver[0] == 0) { failed++; printf("FAIL plan empty\n"); }
  else passed++;
  expect("find NULL out", kiln_find_solutions(h, p, NULL, 4, &count), KILN_ERROR_BAD_PARAM,
         "out is NULL with capacity 4");
  /* Backward directions: kiln's solvers run forward only. */
  kiln_conv_desc bwd = good_desc();
  bwd.direction = KILN_DIRECTION_BACKWARD_DATA;
  expect("backward problem", kiln_problem_create(&bwd, &q), KILN_SUCCESS, NULL);
  expect("backward: no solution", kiln_find_solutions(h, q, s + 8, 8, &count),
         KILN_ERROR_NO_SOLUTION, "F");
  kiln_problem_destroy(q);
  q = NULL;

  /* Choose, save, load back. */
  expect("find again", kiln_find_solutions(h, p, s, 16, &count), KILN_SUCCESS, NULL);
  expect("choose", kiln_solution_create(h, p, &s[0], &sol), KILN_SUCCESS, NULL);
  expect("save size", kiln_solution_save(sol, NULL, 0, &size), KILN_ERROR_BUFFER_TOO_SMALL, "needs");
  expect("save", kiln_solution_save(sol, bytes, sizeof bytes, &size), KILN_SUCCESS, NULL);
  expect("load", kiln_solution_load(h, bytes, size, &back), KILN_SUCCESS, NULL);
  expect("loaded info", kiln_solution_get_info(back, &info), KILN_SUCCESS, NULL);
  if (strcmp(info.solver, s[0].solver) || strcmp(info.params, s[0].params) ||
      info.provenance != KILN_PROVENANCE_SAVED) {
    failed++;
    printf("FAIL round trip: %s [%s] vs %s [%s]\n", info.solver, info.params, s[0].solver, s[0].params);
  } else passed++;
  expect("loaded problem", kiln_solution_get_problem(back, &q), KILN_SUCCESS, NULL);
  char k1[256], k2[256];
  kiln_problem_get_key(p, k1, sizeof k1, NULL);
  kiln_problem_get_key(q, k2, sizeof k2, NULL);
  if (strcmp(k1, k2)) { failed++; printf("FAIL loaded problem %s vs %s\n", k2, k1); } else passed++;
  /* The caller's info is input, not what get_info reports: the workspace is the solution's
   * own, and a provenance none of the KILN_PROVENANCE_* values is refused. */
  kiln_solution_info echoed = s[0];
  echoed.workspace_bytes = UINT64_MAX;
  kiln_solution *mine = NULL;
  expect("choose with a forged workspace", kiln_solution_create(h, p, &echoed, &mine), KILN_SUCCESS, NULL);
  expect("forged info", kiln_solution_get_info(mine, &info), KILN_SUCCESS, NULL);
  if (info.workspace_bytes != s[0].workspace_bytes) {
    failed++;
    printf("FAIL workspace echoed: %llu, the plan says %llu\n",
           (unsigned long long)info.workspace_bytes, (unsigned long long)s[0].workspace_bytes);
  } else passed++;
  kiln_solution_destroy(mine);
  mine = NULL;
  echoed = s[0];
  echoed.provenance = 77;
  expect("choose with provenance 77", kiln_solution_create(h, p, &echoed, &mine),
         KILN_ERROR_BAD_PARAM, "info.provenance 77");
  kiln_solution_destroy(mine);
  expect("run without device",
         kiln_solution_run(sol, (void *)16, 1 << 20, (void *)16, 1 << 20, (void *)16, 1 << 20, NULL,
                           0, NULL),
         KILN_ERROR_NO_DEVICE, "without a device");

  /* Saved bytes spoiled line by line, and saved for another target. */
  char spoiled[4096];
  const char *from[] = {"kiln-solution 1", "problem 64", "math default", "solver Conv", "params "};
  const char *to[] = {"kiln-solution 9", "problem x4", "math turbo00", "solver:Conv", "params:"};
  const char *line[] = {"line 1", "line 3", "line 4", "line 5", "line 6"};
  for (int i = 0; i < 5; i++) {
    kiln_solution *bad = NULL;
    memcpy(spoiled, bytes, size);
    spoiled[size] = 0;
    char *at = strstr(spoiled, from[i]);
    if (!at) { failed++; printf("FAIL no '%s' in saved bytes\n", from[i]); continue; }
    memcpy(at, to[i], strlen(to[i]));
    expect(line[i], kiln_solution_load(h, (const uint8_t *)spoiled, size, &bad),
           KILN_ERROR_BAD_SOLUTION, line[i]);
    kiln_solution_destroy(bad);
  }
  kiln_solution *bad = NULL;
  expect("truncated", kiln_solution_load(h, bytes, size / 2, &bad), KILN_ERROR_BAD_SOLUTION, "lines");
  expect("bytes NULL", kiln_solution_load(h, NULL, 10, &bad), KILN_ERROR_BAD_PARAM, "bytes is NULL");
  expect("other target", kiln_handle_create_for_target("a100", &other), KILN_SUCCESS, NULL);
  expect("saved for h100, loaded on a100", kiln_solution_load(other, bytes, size, &bad),
         KILN_ERROR_BAD_SOLUTION, "saved for target sm_90_132");
  kiln_solution_info forged = s[0];
  strcpy(forged.solver, "ConvNotASolver");
  expect("unknown solver", kiln_solution_create(h, p, &forged, &bad), KILN_ERROR_BAD_SOLUTION,
         "ConvNotASolver");
  forged = s[0];
  strcpy(forged.params, "1,2,3");
  expect("foreign perf config", kiln_solution_create(h, p, &forged, &bad), KILN_ERROR_BAD_SOLUTION,
         "1,2,3");
  forged = s[0];
  memset(forged.solver, 'A', sizeof forged.solver);
  expect("unterminated solver", kiln_solution_create(h, p, &forged, &bad), KILN_ERROR_BAD_PARAM,
         "not NUL-terminated");
  forged = s[0];
  forged.struct_size = 8;
  expect("info of another size", kiln_solution_create(h, p, &forged, &bad), KILN_ERROR_BAD_PARAM,
         "info.struct_size = 8");
  expect("found infos carry their size", s[0].struct_size == sizeof(kiln_solution_info) ? KILN_SUCCESS : -1,
         KILN_SUCCESS, NULL);

  /* Several threads on one handle give the single-threaded plan. */
  enum { T = 4 };
  pthread_t tid[T];
  struct plan_job jobs[T];
  for (int t = 0; t < T; t++) {
    jobs[t].h = h;
    pthread_create(&tid[t], NULL, plan_thread, &jobs[t]);
  }
  expect("find (main thread)", kiln_find_solutions(h, p, s, 16, &count), KILN_SUCCESS, NULL);
  int same = 0;
  for (int t = 0; t < T; t++) {
    pthread_join(tid[t], NULL);
    same += jobs[t].st == KILN_SUCCESS && jobs[t].count == count &&
            !memcmp(jobs[t].s, s, count * sizeof s[0]);
  }
  if (same == T) passed++;
  else { failed++; printf("FAIL threads: %d of %d plans equal\n", same, T); }

  kiln_solution_destroy(back);
  kiln_solution_destroy(sol);
  kiln_problem_destroy(q);
  kiln_problem_destroy(p);
  kiln_handle_destroy(other);
  kiln_handle_destroy(h);
  /* NULL is accepted by every destroy function. */
  kiln_handle_destroy(NULL);
  kiln_problem_destroy(NULL);
  kiln_solution_destroy(NULL);
  kiln_buffer_destroy(NULL);
  if (strcmp(kiln_status_name(42), "KILN_UNKNOWN_STATUS")) { failed++; printf("FAIL status 42\n"); }
  else passed++;
}

/* A bad KILN_LOG_LEVEL is refused by every handle constructor, as the binaries refuse it
 * (usage error), with the value quoted short and escaped. */
static void log_level(void) {
  kiln_handle *h = NULL;
  setenv("KILN_LOG_LEVEL", "loud\x1b]0;x", 1);
  expect("log level: planning handle", kiln_handle_create_for_target("sm_90_132", &h),
         KILN_ERROR_BAD_PARAM, "KILN_LOG_LEVEL='loud\\u{1b}]0;x'");
  kiln_handle_destroy(h);
  h = NULL;
  expect("log level: device handle", kiln_handle_create(NULL, &h), KILN_ERROR_BAD_PARAM,
         "not a log level");
  kiln_handle_destroy(h);
  unsetenv("KILN_LOG_LEVEL");
  /* A 200 KB target name is echoed short. */
  char *long_name = malloc(200001);
  memset(long_name, 'T', 200000);
  long_name[200000] = '\0';
  h = NULL;
  expect("200 KB target", kiln_handle_create_for_target(long_name, &h), KILN_ERROR_NO_TARGET,
         "(200000 bytes)");
  if (strlen(kiln_last_error()) > 1000) {
    failed++;
    printf("FAIL 200 KB target echoed at %zu bytes\n", strlen(kiln_last_error()));
  } else passed++;
  kiln_handle_destroy(h);
  free(long_name);
}

/* Whole networks: names listed, bad arguments refused naming them, a planning handle refused. */
static void networks(void) {
  kiln_handle *h = NULL;
  kiln_net *n = (kiln_net *)&h; /* must be overwritten with NULL on failure */
  kiln_net_info info;
  const char junk[16] = "not safetensors";
  expect("first network", strcmp(kiln_net_model_name(0), "resnet50") == 0 ? KILN_SUCCESS : -1,
         KILN_SUCCESS, NULL);
  expect("past the last network", kiln_net_model_name(1000) == NULL ? KILN_SUCCESS : -1,
         KILN_SUCCESS, NULL);
  expect("planning handle", kiln_handle_create_for_target("h100", &h), KILN_SUCCESS, NULL);
  expect("net out NULL", kiln_net_create_random(h, "resnet50", 1, 1, KILN_DATA_HALF, NULL),
         KILN_ERROR_BAD_PARAM, "out is NULL");
  expect("net model NULL", kiln_net_create_random(h, NULL, 1, 1, KILN_DATA_HALF, &n),
         KILN_ERROR_BAD_PARAM, "model is NULL");
  if (n != NULL) {
    failed++;
    printf("FAIL net: out not cleared on failure\n");
  }
  expect("unknown network", kiln_net_create_random(h, "vgg16", 1, 1, KILN_DATA_HALF, &n),
         KILN_ERROR_BAD_PARAM, "known: resnet50");
  expect("weights NULL", kiln_net_create(h, "resnet50", NULL, 0, 1, KILN_DATA_HALF, &n),
         KILN_ERROR_BAD_PARAM, "weights is NULL");
  expect("weights not safetensors",
         kiln_net_create(h, "resnet50", junk, sizeof junk, 1, KILN_DATA_HALF, &n),
         KILN_ERROR_BAD_PARAM, "not a safetensors file");
  expect("net data type 7", kiln_net_create_random(h, "resnet50", 1, 1, 7, &n),
         KILN_ERROR_BAD_PARAM, "data_type = 7");
  expect("net on a planning handle", kiln_net_create_random(h, "resnet50", 1, 1, KILN_DATA_HALF, &n),
         KILN_ERROR_NO_DEVICE, "without a device");
  expect("net handle NULL", kiln_net_create_random(NULL, "resnet50", 1, 1, KILN_DATA_HALF, &n),
         KILN_ERROR_BAD_PARAM, "handle is NULL");
  expect("net info of NULL", kiln_net_get_info(NULL, &info), KILN_ERROR_BAD_PARAM, "net is NULL");
  expect("net run NULL", kiln_net_run(NULL, NULL), KILN_ERROR_BAD_PARAM, "net is NULL");
  kiln_net_destroy(NULL);
  kiln_handle_destroy(h);
}

/* The host program's side: version numbers, the log routed to a callback, devices. */
static int log_lines, log_warnings_named;
static void on_log(kiln_log_level level, const char *message, void *user) {
  (void)user;
  log_lines++;
  if (level == KILN_LOG_WARN && strstr(message, "no measured find-db")) log_warnings_named++;
}

static void host(void) {
  uint32_t major = 99, minor = 99, patch = 99, count = 99;
  kiln_version_numbers(&major, &minor, &patch);
  expect("version numbers match the header",
         major == KILN_VERSION_MAJOR && minor == KILN_VERSION_MINOR && patch == KILN_VERSION_PATCH
             ? KILN_SUCCESS
             : -1,
         KILN_SUCCESS, NULL);
  expect("log level 9", kiln_set_log_callback(on_log, NULL, 9), KILN_ERROR_BAD_PARAM, "max_level = 9");
  expect("log callback", kiln_set_log_callback(on_log, NULL, KILN_LOG_WARN), KILN_SUCCESS, NULL);
  kiln_handle *h = NULL;
  /* An sm_80 target has no measured find-db: kiln warns, through the callback. */
  expect("warned handle", kiln_handle_create_for_target("sm_80_108", &h), KILN_SUCCESS, NULL);
  kiln_handle_destroy(h);
  expect("the warning reached the callback", log_warnings_named > 0 ? KILN_SUCCESS : -1, KILN_SUCCESS,
         NULL);
  expect("log back to stderr", kiln_set_log_callback(NULL, NULL, KILN_LOG_WARN), KILN_SUCCESS, NULL);
  int before = log_lines;
  expect("quiet handle", kiln_handle_create_for_target("sm_80_108", &h), KILN_SUCCESS, NULL);
  kiln_handle_destroy(h);
  expect("no line after the callback is removed", log_lines == before ? KILN_SUCCESS : -1,
         KILN_SUCCESS, NULL);
  expect("device count", kiln_device_count(&count), KILN_SUCCESS, NULL);
  kiln_device_info info;
  expect("device past the last", kiln_device_get_info(count, &info), KILN_ERROR_BAD_PARAM,
         "device(s)");
  expect("no driver code for a bad argument", kiln_last_error_code() == 0 ? KILN_SUCCESS : -1,
         KILN_SUCCESS, NULL);
  expect("device count NULL", kiln_device_count(NULL), KILN_ERROR_BAD_PARAM, "count is NULL");
  kiln_selftest_result st;
  expect("selftest without a handle", kiln_selftest(NULL, &st), KILN_ERROR_BAD_PARAM, "handle is NULL");
  kiln_handle *planning = NULL;
  expect("planning handle for selftest", kiln_handle_create_for_target("h100", &planning), KILN_SUCCESS,
         NULL);
  expect("selftest on a planning handle", kiln_selftest(planning, &st), KILN_ERROR_NO_DEVICE,
         "without a device");
  expect("selftest result NULL", kiln_selftest(planning, NULL), KILN_ERROR_BAD_PARAM, "result is NULL");
  kiln_handle_destroy(planning);
  expect("out-of-memory name",
         strcmp(kiln_status_name(KILN_ERROR_OUT_OF_MEMORY), "KILN_ERROR_OUT_OF_MEMORY") == 0
             ? KILN_SUCCESS
             : -1,
         KILN_SUCCESS, NULL);
}

int main(void) {
  printf("kiln %s: C interface on bad input\n", kiln_version());
  descriptions();
  keys();
  devices_and_targets();
  planning();
  networks();
  host();
  log_level();
  printf("%d passed, %d failed\n", passed, failed);
  return failed != 0;
}
