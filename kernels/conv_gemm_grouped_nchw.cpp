// ConvGemmGroupedNchwFwd: grouped 2-D convolution in NCHW (and 3-D in NCDHW), FP32 on CUDA
// cores, as one implicit GEMM per group: Y[k][col] = sum over (tap, c) of W[k][c][tap] *
// X[c][col shifted by tap], col = (n, [od,] oh, ow). A block of 256 threads computes KILN_BM
// output channels of one group by KILN_BN output pixels; each thread a (KILN_BM / 16) x
// (KILN_BN / 16) micro-tile, 16 apart.
//
// Groups of KILN_BK channels or more: the reduction runs tap by tap, then over the group's
// input channels KILN_BK at a time, so a thread's input column has one offset per tap (no
// index division per element, which the general implicit GEMM pays) and consecutive channels
// are a plane apart. Narrower groups (an RGB stem) would leave most of each step empty: the
// reduction then runs over (channel, tap) flattened, as W stores it, and each input load finds
// its channel and tap by division. Every thread loads the same pixel column at every step (256
// is a multiple of KILN_BN). The next step's operands are loaded into registers while this
// step's products run, into the other of two shared-memory buffers: one barrier a step.
//
// Launch: grid (ceil(N * [Z *] P * Q / KILN_BN), ceil(K / groups / KILN_BM), groups), block
// (256). The solver keeps the output pixels N * [Z *] P * Q and one input volume [D *] H * W
// within 2^31 (32-bit column and in-plane indices); image and channel offsets are 64-bit.
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

// The block's work; kFlat: the flattened (channel, tap) reduction. Two bodies, so that neither
// path carries the other's index arithmetic in its loop.
template <bool kFlat>
static __device__ KILN_INLINE void kiln_gg_body(const kiln_t* __restrict__ x,
                                                const kiln_t* __restrict__ w,
                                                kiln_t* __restrict__ y, const KilnConvArgs& a,
                                                const KilnEpilogue& e,
                                                float (*As)[KILN_BK][KILN_BM],
                                                float (*Bs)[KILN_BK][KILN_BN]) {
  const int tid = threadIdx.x;
  const kiln_i32 g = blockIdx.z;
  const kiln_i32 cpg = a.c / a.groups, kpg = a.k / a.groups;
  const kiln_i32 taps_hw = a.fil_h * a.fil_w, taps = a.fil_d * taps_hw;
  const kiln_i32 plane = a.in_d * a.in_h * a.in_w;
  const kiln_i32 out_hw = a.out_h * a.out_w, osp = a.out_d * out_hw;
  const kiln_i32 cols = a.n * osp;
  const kiln_i32 m0 = blockIdx.y * KILN_BM;
  const kiln_i32 col0 = blockIdx.x * KILN_BN;

  // This thread's B column, the same at every step, and its window's corner in x.
  const int b_col = tid % KILN_BN, b_row = tid / KILN_BN;
  const kiln_i32 col = col0 + b_col;
  const bool col_in = col < cols;
  const kiln_i32 img = col_in ? col / osp : 0;
  const kiln_i32 sp = col_in ? col - img * osp : 0;
  const kiln_i32 od = sp / out_hw, sp_hw = sp - od * out_hw;
  const kiln_i32 oh = sp_hw / a.out_w, ow = sp_hw - oh * a.out_w;
  const kiln_i32 id0 = od * a.stride_d - a.pad_d, ih0 = oh * a.stride_h - a.pad_h;
  const kiln_i32 iw0 = ow * a.stride_w - a.pad_w;
  const kiln_t* x_group = x + ((kiln_i64)img * a.c + (kiln_i64)g * cpg) * plane;
  // This thread's A rows: output channel m0 + a_m of the group, channels a_row + j * step.
  const int a_m = tid % KILN_BM, a_row = tid / KILN_BM;
  const bool m_in = m0 + a_m < kpg;
  const kiln_t* w_row = w + (kiln_i64)(g * kpg + (m_in ? m0 + a_m : 0)) * cpg * taps;

  // Where the column reads x at filter tap (fz, fy, fx); `inside` false in the padding.
  auto tap_offset = [&](kiln_i32 fz, kiln_i32 fy, kiln_i32 fx, bool& inside) -> kiln_i32 {
    const kiln_i32 id = id0 + fz * a.dil_d, ih = ih0 + fy * a.dil_h, iw = iw0 + fx * a.dil_w;
    inside = col_in && id >= 0 && id < a.in_d && ih >= 0 && ih < a.in_h && iw >= 0 &&
             iw < a.in_w;
    return inside ? (id * a.in_h + ih) * a.in_w + iw : 0;
  };

  const bool flat = kFlat;
  const kiln_i32 depth = cpg * taps;
  float a_next[KILN_GG_A_LOADS], b_next[KILN_GG_B_LOADS];
  // The step being loaded: tap (counted along its three axes, no division), first channel;
  // and the tap's input offset for the column (by channel), or the first reduction index
  // (flat).
  kiln_i32 tap = 0, fz = 0, fy = 0, fx = 0, c0 = 0, x_off = 0, r0 = 0;
  bool tap_in = false;
  auto enter_tap = [&]() { x_off = tap_offset(fz, fy, fx, tap_in); };
  auto next_tap = [&]() {
    if (++fx == a.fil_w) {
      fx = 0;
      if (++fy == a.fil_h) {
        fy = 0;
        ++fz;
      }
    }
  };
  auto load_step = [&]() {
    if (flat) {
#pragma unroll
      for (int j = 0; j < KILN_GG_A_LOADS; ++j) {
        const kiln_i32 r = r0 + a_row + j * (KILN_GG_THREADS / KILN_BM);
        a_next[j] = m_in && r < depth ? kiln_load(w_row, r) : 0.0f;
      }
#pragma unroll
      for (int j = 0; j < KILN_GG_B_LOADS; ++j) {
        const kiln_i32 r = r0 + b_row + j * (KILN_GG_THREADS / KILN_BN);
        const kiln_i32 c = r / taps, t = r - c * taps;
        const kiln_i32 tz = t / taps_hw, t_hw = t - tz * taps_hw;
        const kiln_i32 ty = t_hw / a.fil_w, tx = t_hw - ty * a.fil_w;
        bool inside = false;
        const kiln_i32 off = r < depth ? tap_offset(tz, ty, tx, inside) : 0;
        b_next[j] = inside ? kiln_load(x_group, (kiln_i64)c * plane + off) : 0.0f;
      }
      return;
    }
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
  const kiln_i32 steps = flat ? (depth + KILN_BK - 1) / KILN_BK : taps * chunks;
  const int trow = tid / 16, tcol = tid % 16;
  if (!flat) enter_tap();
  load_step();
  for (kiln_i32 s = 0; s < steps; ++s) {
    const int buf = s & 1;
    store_step(buf);
    __syncthreads();
    if (s + 1 < steps) {
      if (flat) {
        r0 += KILN_BK;
      } else {
        c0 += KILN_BK;
        if (c0 >= cpg) {
          c0 = 0;
          ++tap;
          next_tap();
          enter_tap();
        }
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

extern "C" __global__ void __launch_bounds__(KILN_GG_THREADS)
    conv_gemm_grouped_nchw_fwd(const kiln_t* __restrict__ x, const kiln_t* __restrict__ w,
                               kiln_t* __restrict__ y, KilnConvArgs a, KilnEpilogue e) {
  __shared__ float As[2][KILN_BK][KILN_BM];
  __shared__ float Bs[2][KILN_BK][KILN_BN];
  // Groups narrower than a step reduce over (channel, tap) flattened.
  if (a.c / a.groups < KILN_BK)
    kiln_gg_body<true>(x, w, y, a, e, As, Bs);
  else
    kiln_gg_body<false>(x, w, y, a, e, As, Bs);
}
