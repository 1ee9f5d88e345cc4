/* A whole network through kiln's C library: open the device, build the network (its weights
 * from a safetensors file, or seeded random ones), put a batch of images in, run the captured
 * forward pass on a stream, read every output back. A classifier's top-1 classes are printed;
 * every output's FNV-1a hash is printed as `y<i> fnv1a64 0x...`, and examples/network.rs (the
 * Rust path) prints the same lines for the same network, weights and images. Without a GPU it
 * lists kiln's networks and prints the no-device error, and exits 0.
 *
 *   network [--device SPEC] [--model NAME] [--weights FILE] [-n BATCH] [--selftest]
 *
 * --selftest first runs kiln's boot check in process (kiln_selftest: every embedded solver and
 * perf config, and the operators, checked against a reference) and stops on a failure.
 *
 * The images are FP16, NHWC, a fixed pattern: value(i) = ((i * 7919) % 2000) / 1000 - 1. */
#include <kiln.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int check(kiln_status st, const char *what) {
  if (st != KILN_SUCCESS) {
    fprintf(stderr, "network: %s: %s: %s\n", what, kiln_status_name(st), kiln_last_error());
    return 0;
  }
  return 1;
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

/* IEEE half from float, round to nearest even (the pattern's values are normal halves). */
static uint16_t to_half(float f) {
  uint32_t x;
  memcpy(&x, &f, 4);
  uint32_t sign = (x >> 16) & 0x8000u, exp = (x >> 23) & 0xffu, man = x & 0x7fffffu;
  if (exp == 0 && man == 0) return (uint16_t)sign;
  int e = (int)exp - 127 + 15;
  if (e <= 0) return (uint16_t)sign; /* below half's normal range: not in the pattern */
  uint32_t h = sign | ((uint32_t)e << 10) | (man >> 13);
  uint32_t rest = man & 0x1fffu;
  if (rest > 0x1000u || (rest == 0x1000u && (h & 1u))) h++;
  return (uint16_t)h;
}

static float from_half(uint16_t h) {
  uint32_t sign = (uint32_t)(h & 0x8000u) << 16, exp = (h >> 10) & 0x1fu, man = h & 0x3ffu;
  uint32_t x;
  if (exp == 0) {
    if (man == 0) {
      x = sign;
    } else { /* subnormal: normalize */
      int e = -1;
      do {
        man <<= 1;
        e++;
      } while (!(man & 0x400u));
      x = sign | ((uint32_t)(127 - 15 - e) << 23) | ((man & 0x3ffu) << 13);
    }
  } else if (exp == 31) {
    x = sign | 0x7f800000u | (man << 13);
  } else {
    x = sign | ((exp - 15 + 127) << 23) | (man << 13);
  }
  float f;
  memcpy(&f, &x, 4);
  return f;
}

static void *read_file(const char *path, uint64_t *bytes) {
  FILE *f = fopen(path, "rb");
  if (!f) {
    perror(path);
    return NULL;
  }
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  void *data = n > 0 ? malloc((size_t)n) : NULL;
  if (!data || fread(data, 1, (size_t)n, f) != (size_t)n) {
    fprintf(stderr, "network: cannot read %s\n", path);
    free(data);
    fclose(f);
    return NULL;
  }
  fclose(f);
  *bytes = (uint64_t)n;
  return data;
}

int main(int argc, char **argv) {
  const char *device = NULL, *model = "resnet50", *weights_path = NULL;
  uint32_t batch = 1;
  int selftest = 0;
  for (int i = 1; i < argc; i += 2) {
    if (!strcmp(argv[i], "--selftest")) {
      selftest = 1;
      i--; /* takes no value */
      continue;
    }
    if (i + 1 >= argc) {
      fprintf(stderr, "network: %s needs a value\n", argv[i]);
      return 2;
    }
    if (!strcmp(argv[i], "--device")) device = argv[i + 1];
    else if (!strcmp(argv[i], "--model")) model = argv[i + 1];
    else if (!strcmp(argv[i], "--weights")) weights_path = argv[i + 1];
    else if (!strcmp(argv[i], "-n")) batch = (uint32_t)strtoul(argv[i + 1], NULL, 10);
    else {
      fprintf(stderr, "usage: network [--device SPEC] [--model NAME] [--weights FILE] [-n BATCH] [--selftest]\n");
      return 2;
    }
  }
  kiln_handle *handle = NULL;
  kiln_status st = kiln_handle_create(device, &handle);
  if (st == KILN_ERROR_NO_DEVICE) {
    printf("kiln's networks:");
    for (uint32_t i = 0; kiln_net_model_name(i); i++) printf(" %s", kiln_net_model_name(i));
    printf("\nno device: %s\n", kiln_last_error());
    return 0;
  }
  if (!check(st, "kiln_handle_create")) return 1;
  if (selftest) {
    kiln_selftest_result r;
    kiln_status s = kiln_selftest(handle, &r);
    printf("selftest: %u problems, %u runs, %u failed\n", r.problems, r.runs, r.failures);
    if (!check(s, "kiln_selftest")) {
      kiln_handle_destroy(handle);
      return 1;
    }
  }

  int ok = 0;
  kiln_net *net = NULL;
  void *weights = NULL, *out = NULL;
  uint16_t *images = NULL;
  if (weights_path) {
    uint64_t bytes = 0;
    weights = read_file(weights_path, &bytes);
    if (!weights || !check(kiln_net_create(handle, model, weights, bytes, batch, KILN_DATA_HALF, &net),
                           "kiln_net_create"))
      goto done;
  } else if (!check(kiln_net_create_random(handle, model, 11, batch, KILN_DATA_HALF, &net),
                    "kiln_net_create_random")) {
    goto done;
  }
  kiln_net_info info;
  kiln_net_tensor input;
  if (!check(kiln_net_get_info(net, &info), "kiln_net_get_info") ||
      !check(kiln_net_get_input(net, &input), "kiln_net_get_input"))
    goto done;
  size_t n = (size_t)(input.bytes / 2);
  images = malloc(n * sizeof *images);
  if (!images) goto done;
  for (size_t i = 0; i < n; i++) images[i] = to_half((float)((i * 7919) % 2000) / 1000.0f - 1.0f);
  if (!check(kiln_net_set_input(net, images, input.bytes), "kiln_net_set_input") ||
      !check(kiln_net_run(net, NULL), "kiln_net_run") ||
      !check(kiln_handle_synchronize(handle), "kiln_handle_synchronize"))
    goto done;
  printf("%s (FP16, N=%u): %u launches in one graph, %.1f MiB of activations, %u output(s)\n",
         info.name, info.batch, info.launches, (double)info.activation_bytes / (1 << 20),
         info.outputs);
  for (uint32_t o = 0; o < info.outputs; o++) {
    kiln_net_tensor t;
    if (!check(kiln_net_get_output(net, o, &t), "kiln_net_get_output")) goto done;
    free(out);
    out = malloc(t.bytes);
    if (!out || !check(kiln_net_read_output(net, o, out, t.bytes), "kiln_net_read_output")) goto done;
    printf("y%u: %u x %u x %u x %u (NHWC)\n", o, info.batch, t.h, t.w, t.c);
    if (t.h == 1 && t.w == 1) { /* a classifier's probabilities: top-1 per sample */
      const uint16_t *p = out;
      for (uint32_t s = 0; s < info.batch && s < 8; s++) {
        uint32_t best = 0;
        for (uint32_t c = 1; c < t.c; c++)
          if (from_half(p[s * t.c + c]) > from_half(p[s * t.c + best])) best = c;
        printf("sample %u: class %u (p = %.3f)\n", s, best, from_half(p[s * t.c + best]));
      }
    }
    printf("y%u fnv1a64 0x%016llx\n", o, (unsigned long long)fnv1a64(out, (size_t)t.bytes));
  }
  ok = 1;
done:
  free(out);
  free(images);
  free(weights);
  kiln_net_destroy(net);
  kiln_handle_destroy(handle);
  return ok ? 0 : 1;
}
