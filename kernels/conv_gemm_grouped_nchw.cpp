// ConvGemmGroupedNchwFwd: grouped 2-D convolution in NCHW, FP32 on CUDA cores, as one implicit
// GEMM per group: Y[k][col] = sum over (tap, c) of W[k][c][tap] * X[c][col shifted by tap],
// col = (n, oh, ow). A block of 256 threads computes KILN_BM output channels of one group by
// KILN_BN output pixels; each thread a (KILN_BM / 16) x (KILN_BN / 16) micro-tile, 16 apart.
//
// The reduction runs tap by tap, then over the group's input channels KILN_BK at a time, so a
// thread's input column has one row and column offset per tap (no index division per element,
// which the general implicit GEMM pays) and consecutive channels are a plane apart. Every
// thread loads the same pixel column at every step (256 is a multiple of KILN_BN). The next
// step's operands are loaded into registers while this step's products run, into the other of
// two shared-memory buffers: one barrier a step.
//
// Launch: grid (ceil(N * P * Q / KILN_BN), ceil(K / groups / KILN_BM), groups), block (256).
// The solver keeps N * C * H * W and N * K * P * Q within 2^31 elements (32-bit offsets).
#include "epilogue.h"

#if !defined(KILN_BM) || !defined(KILN_BN) || !defined(KILN_BK)
#error "the perf config defines KILN_BM, KILN_BN and KILN_BK"
#endif
#define KILN_GG_THREADS 256
#define KILN_GG_TM (KILN_BM / 16)
#define KILN_GG_TN (KILN_BN / 16)
// Operand elements each thread loads a step.
#define KILN_GG_A_LOADS (KILN_BK * KILN_BM / KILN_GG_THREADS)
#define KILN_GG_B_LOADS (KILN_BK * KILN_BN / KILN_GG_THREADS)
static_assert(KILN_BM % 16 == 0 && KILN_BN % 16 == 0, "tiles are multiples of 16");
static_assert(KILN_GG_A_LOADS * KILN_GG_THREADS == KILN_BK * KILN_BM, "whole A loads");
static_assert(KILN_GG_B_LOADS * KILN_GG_THREADS == KILN_BK * KILN_BN, "whole B loads");

extern "C" __global__ void __launch_bounds__(KILN_GG_THREADS)
    conv_gemm_grouped_nchw_fwd(const kiln_t* __restrict__ x, const kiln_t* __restrict__ w,
                               kiln_t* __restrict__ y, KilnConvArgs a, KilnEpilogue e) {
  __shared__ float As[2][KILN_BK][KILN_BM];
  __shared__ float Bs[2][KILN_BK][KILN_BN];
  const int tid = threadIdx.x;
  const kiln_i32 g = blockIdx.z;
  const kiln_i32 cpg = a.c / a.groups, kpg = a.k / a.groups;
  const kiln_i32 taps = a.fil_h * a.fil_w;
  const kiln_i32 plane = a.in_h * a.in_w;
  const kiln_i32 osp = a.out_h * a.out_w;
  const kiln_i32 cols = a.n * osp;
  const kiln_i32 m0 = blockIdx.y * KILN_BM;
  const kiln_i32 col0 = blockIdx.x * KILN_BN;

  // This thread's B column, the same at every step.
  const int b_col = tid % KILN_BN, b_row = tid / KILN_BN;
  const kiln_i32 col = col0 + b_col;
  const bool col_in = col < cols;
  const kiln_i32 img = col_in ? col / osp : 0;
  const kiln_i32 sp = col_in ? col - img * osp : 0;
  const kiln_i32 oh = sp / a.out_w, ow = sp - (sp / a.out_w) * a.out_w;
  const kiln_t* x_group = x + ((kiln_i64)img * a.c + (kiln_i64)g * cpg) * plane;
  // This thread's A rows: output channel m0 + a_m of the group, channels a_row + j * step.
  const int a_m = tid % KILN_BM, a_row = tid / KILN_BM;
  const bool m_in = m0 + a_m < kpg;
  const kiln_t* w_row = w + (kiln_i64)(g * kpg + (m_in ? m0 + a_m : 0)) * cpg * taps;

  float a_next[KILN_GG_A_LOADS], b_next[KILN_GG_B_LOADS];
  // The step being loaded: tap, first channel; and the tap's input offset for the column.
  kiln_i32 tap = 0, c0 = 0, x_off = 0;
  bool tap_in = false;
  auto enter_tap = [&]() {
    const kiln_i32 fy = tap / a.fil_w, fx = tap - (tap / a.fil_w) * a.fil_w;
    const kiln_i32 ih = oh * a.stride_h - a.pad_h + fy * a.dil_h;
    const kiln_i32 iw = ow * a.stride_w - a.pad_w + fx * a.dil_w;
    tap_in = col_in && ih >= 0 && ih < a.in_h && iw >= 0 && iw < a.in_w;
    x_off = tap_in ? ih * a.in_w + iw : 0;
  };
  auto load_step = [&]() {
#pragma unroll
    for (int j = 0; j < KILN_GG_A_LOADS; ++j) {
      const kiln_i32 c = c0 + a_row + j * (KILN_GG_THREADS / KILN_BM);
      a_next[j] = m_in && c < cpg ? kiln_load(w_row, (kiln_i64)c * taps + tap) : 0.0f;
    }
#pragma unroll
    for (int j = 0; j < KILN_GG_B_LOADS; ++j) {
      const kiln_i32 c = c0 + b_row + j * (KILN_GG_THREADS / KILN_BN);
      b_next[j] = tap_in && c < cpg ? kiln_load(x_group, (kiln_i64)c * plane + x_off) : 0.0f;
    }
  };
  auto store_step = [&](int buf) {
#pragma unroll
    for (int j = 0; j < KILN_GG_A_LOADS; ++j)
      As[buf][a_row + j * (KILN_GG_THREADS / KILN_BM)][a_m] = a_next[j];
#pragma unroll
    for (int j = 0; j < KILN_GG_B_LOADS; ++j)
      Bs[buf][b_row + j * (KILN_GG_THREADS / KILN_BN)][b_col] = b_next[j];
  };

  float acc[KILN_GG_TM][KILN_GG_TN];
#pragma unroll
  for (int i = 0; i < KILN_GG_TM; ++i)
#pragma unroll
    for (int j = 0; j < KILN_GG_TN; ++j) acc[i][j] = 0.0f;

  const kiln_i32 chunks = (cpg + KILN_BK - 1) / KILN_BK;
  const kiln_i32 steps = taps * chunks;
  const int trow = tid / 16, tcol = tid % 16;
  enter_tap();
  load_step();
  for (kiln_i32 s = 0; s < steps; ++s) {
    const int buf = s & 1;
    store_step(buf);
    __syncthreads();
    if (s + 1 < steps) {
      c0 += KILN_BK;
      if (c0 >= cpg) {
        c0 = 0;
        ++tap;
        enter_tap();
      }
      load_step();
    }
#pragma unroll
    for (int r = 0; r < KILN_BK; ++r) {
      float av[KILN_GG_TM], bv[KILN_GG_TN];
#pragma unroll
      for (int i = 0; i < KILN_GG_TM; ++i) av[i] = As[buf][r][trow + 16 * i];
#pragma unroll
      for (int j = 0; j < KILN_GG_TN; ++j) bv[j] = Bs[buf][r][tcol + 16 * j];
#pragma unroll
      for (int i = 0; i < KILN_GG_TM; ++i)
#pragma unroll
        for (int j = 0; j < KILN_GG_TN; ++j) acc[i][j] += av[i] * bv[j];
    }
  }

#pragma unroll
  for (int i = 0; i < KILN_GG_TM; ++i) {
    const kiln_i32 m = m0 + trow + 16 * i;
    if (m >= kpg) continue;
    const kiln_i32 k = g * kpg + m;
#pragma unroll
    for (int j = 0; j < KILN_GG_TN; ++j) {
      const kiln_i32 c = col0 + tcol + 16 * j;
      if (c >= cols) continue;
      const kiln_i32 n = c / osp;
      kiln_store_nchw(y, ((kiln_i64)n * a.k + k) * osp + (c - n * osp), k, acc[i][j], e);
    }
  }
}
