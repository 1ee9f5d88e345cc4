// ConvDirectFirstLayerNchwFwd: a network's first layer (1-4 input channels, e.g. RGB) in FP32
// NCHW, direct on CUDA cores with FP32 products: exact FP32, no TF32 splitting.
//
// With 3 input channels the implicit GEMMs' reduction is short (147 for a 7x7 filter) and the
// tensor-core kernels spend their time gathering and padding it; the NCHW one also writes an
// NHWC y and transposes it. Here each block stages the filters of its output channels and the
// input patch of its output rows in shared memory once, and every thread computes
// KILN_FL_WPT neighbouring output columns for KILN_FL_KPT output channels (4 or 8 each): per
// filter row it reads the input window those columns need once, then per tap 16-byte loads
// of its weights feed WPT x KPT FMAs. y is written straight into NCHW, four columns in one
// 16-byte store.
//
// Shared memory (dynamic): the filters as [c][tap][channel in block], then the patch as
// [c][row][column]. Column iw of a patch row sits at word iw + iw / (WPT * S): a thread's window
// starts WPT * S columns after its neighbour's, so the threads of a warp start an odd number
// of words apart, and every load of one window position hits 32 different banks.
//
// Built for one square filter size (KILN_FL_FIL) and stride (KILN_FL_S, both directions),
// undilated, groups 1; any padding, channel count up to what the patch holds, any K (a block's
// last channels are masked).
//
// Launch: grid (ceil(Q / (TX * WPT)) * ceil(P / ROWS), ceil(K / (TK * KPT)), N), block
// (TX * TK); shared bytes C * (FIL^2 * TK * KPT + patch rows * pitch) * 4, the solver's
// formula. channels_last = 0, 2-D, FP32. NVIDIA (float4 and __launch_bounds__).
#include "epilogue.h"

#if !defined(KILN_FL_TX) || !defined(KILN_FL_TK) || !defined(KILN_FL_ROWS) || \
    !defined(KILN_FL_FIL) || !defined(KILN_FL_S) || !defined(KILN_FL_WPT) || !defined(KILN_FL_KPT)
#error "the perf config defines KILN_FL_TX, _TK, _ROWS, _FIL, _S, _WPT and _KPT"
#endif
#if KILN_FL_WPT % 4 != 0 || KILN_FL_KPT % 4 != 0
#error "columns and channels per thread are multiples of 4 (16-byte stores and loads)"
#endif

constexpr int kFlThreads = KILN_FL_TX * KILN_FL_TK;
constexpr int kFlTileW = KILN_FL_TX * KILN_FL_WPT;  // output columns per block
constexpr int kFlTileK = KILN_FL_TK * KILN_FL_KPT;  // output channels per block
constexpr int kFlTaps = KILN_FL_FIL * KILN_FL_FIL;
constexpr int kFlInRows = (KILN_FL_ROWS - 1) * KILN_FL_S + KILN_FL_FIL;
constexpr int kFlInCols = (kFlTileW - 1) * KILN_FL_S + KILN_FL_FIL;
constexpr int kFlSpan = KILN_FL_WPT * KILN_FL_S;  // columns from one thread's window to the next
constexpr int kFlPitch = kFlInCols + kFlInCols / kFlSpan + 1;
constexpr int kFlWin = (KILN_FL_WPT - 1) * KILN_FL_S + KILN_FL_FIL;  // a thread's window
constexpr int kFlBatch = 8;  // staging loads a thread has in flight at once

static __device__ KILN_INLINE int kiln_fl_word(int col) { return col + col / kFlSpan; }

extern "C" __global__ void __launch_bounds__(kFlThreads)
    conv_first_nchw_fwd(const kiln_t* __restrict__ x, const kiln_t* __restrict__ w,
                        kiln_t* __restrict__ y, KilnConvArgs a, KilnEpilogue e) {
  extern __shared__ float kiln_fl_smem[];
  float* sw = kiln_fl_smem;                          // [c][tap][kFlTileK]
  float* sx = kiln_fl_smem + a.c * kFlTaps * kFlTileK;  // [c][kFlInRows][kFlPitch]

  const kiln_i32 col_tiles = (a.out_w + kFlTileW - 1) / kFlTileW;
  const kiln_i32 row_tile = (kiln_i32)blockIdx.x / col_tiles;
  const kiln_i32 oh0 = row_tile * KILN_FL_ROWS;
  const kiln_i32 ow0 = ((kiln_i32)blockIdx.x - row_tile * col_tiles) * kFlTileW;
  const kiln_i32 k0 = (kiln_i32)blockIdx.y * kFlTileK;
  const kiln_i32 n = (kiln_i32)blockIdx.z;
  const kiln_i32 tid = (kiln_i32)threadIdx.x;

  // The block's filters, transposed so that a thread's 8 channels of one tap are adjacent
  // (global reads run along a filter, KCRS, coalesced), then the input patch, zeros where it
  // lies in the padding or past the image. Each thread issues kFlBatch loads before it stores
  // any: one trip to memory per batch, not per element (a block stages about 70 values a
  // thread, and waiting on each in turn took longer than the block's arithmetic).
  const kiln_i32 per_k = a.c * kFlTaps;
  const kiln_i32 w_count = kFlTileK * per_k;
  for (kiln_i32 base = tid; base < w_count; base += kFlThreads * kFlBatch) {
    float v[kFlBatch];
#pragma unroll
    for (int b = 0; b < kFlBatch; ++b) {
      const kiln_i32 i = base + b * kFlThreads;
      const kiln_i32 kl = i / per_k;
      v[b] = i < w_count && k0 + kl < a.k ? w[(kiln_i64)k0 * per_k + i] : 0.0f;
    }
#pragma unroll
    for (int b = 0; b < kFlBatch; ++b) {
      const kiln_i32 i = base + b * kFlThreads;
      const kiln_i32 kl = i / per_k;
      if (i < w_count) sw[(i - kl * per_k) * kFlTileK + kl] = v[b];
    }
  }
  const kiln_i32 ih0 = oh0 * KILN_FL_S - a.pad_h;
  const kiln_i32 iw0 = ow0 * KILN_FL_S - a.pad_w;
  const kiln_t* xn = x + (kiln_i64)n * a.c * a.in_h * a.in_w;
  const kiln_i32 x_count = a.c * kFlInRows * kFlInCols;
  for (kiln_i32 base = tid; base < x_count; base += kFlThreads * kFlBatch) {
    float v[kFlBatch];
#pragma unroll
    for (int b = 0; b < kFlBatch; ++b) {
      const kiln_i32 i = base + b * kFlThreads;
      const kiln_i32 cr = i / kFlInCols;
      const kiln_i32 c = cr / kFlInRows;
      const kiln_i32 ih = ih0 + cr - c * kFlInRows, iw = iw0 + i - cr * kFlInCols;
      const bool in = i < x_count && ih >= 0 && ih < a.in_h && iw >= 0 && iw < a.in_w;
      v[b] = in ? xn[((kiln_i64)c * a.in_h + ih) * a.in_w + iw] : 0.0f;
    }
#pragma unroll
    for (int b = 0; b < kFlBatch; ++b) {
      const kiln_i32 i = base + b * kFlThreads;
      const kiln_i32 cr = i / kFlInCols;
      if (i < x_count) sx[cr * kFlPitch + kiln_fl_word(i - cr * kFlInCols)] = v[b];
    }
  }
  __syncthreads();

  const kiln_i32 tx = tid % KILN_FL_TX, kt = tid / KILN_FL_TX;
  const kiln_i32 ow = ow0 + tx * KILN_FL_WPT;
  const float* win_base = sx + tx * (kFlSpan + 1);
  const float* w_base = sw + kt * KILN_FL_KPT;
  // Four columns in one 16-byte store where the row's length and y allow it.
  const bool vector_store = (a.out_w & 3) == 0 && (((kiln_u64)y) & 15) == 0;
  const KilnAct act = kiln_act_params(e.act, e.act_a);
  const bool plain = !e.scale && !e.bias && !e.z && e.act == KILN_ACT_IDENTITY;
  for (kiln_i32 row = 0; row < KILN_FL_ROWS; ++row) {
    const kiln_i32 oh = oh0 + row;
    if (oh >= a.out_h) break;
    float acc[KILN_FL_WPT][KILN_FL_KPT];
#pragma unroll
    for (int j = 0; j < KILN_FL_WPT; ++j)
#pragma unroll
      for (int q = 0; q < KILN_FL_KPT; ++q) acc[j][q] = 0.0f;
    // The filter rows stay a loop: one row's body (window loads, then per tap KPT / 4 weight
    // loads and WPT x KPT FMAs) fits the instruction cache; the whole filter unrolled did not.
#pragma unroll 1
    for (kiln_i32 cy = 0; cy < a.c * KILN_FL_FIL; ++cy) {
      const kiln_i32 c = cy / KILN_FL_FIL, fy = cy - c * KILN_FL_FIL;
      const float* in_row = win_base + (c * kFlInRows + row * KILN_FL_S + fy) * kFlPitch;
      float win[kFlWin];
#pragma unroll
      for (int i = 0; i < kFlWin; ++i) win[i] = in_row[i + i / kFlSpan];
      const float* w_row = w_base + cy * KILN_FL_FIL * kFlTileK;
#pragma unroll
      for (int fx = 0; fx < KILN_FL_FIL; ++fx) {
        float wv[KILN_FL_KPT];
#pragma unroll
        for (int q4 = 0; q4 < KILN_FL_KPT; q4 += 4) {
          const float4 w4 = *reinterpret_cast<const float4*>(w_row + fx * kFlTileK + q4);
          wv[q4] = w4.x, wv[q4 + 1] = w4.y, wv[q4 + 2] = w4.z, wv[q4 + 3] = w4.w;
        }
#pragma unroll
        for (int j = 0; j < KILN_FL_WPT; ++j) {
          const float xv = win[j * KILN_FL_S + fx];
#pragma unroll
          for (int q = 0; q < KILN_FL_KPT; ++q) acc[j][q] = fmaf(xv, wv[q], acc[j][q]);
        }
      }
    }
    if (ow >= a.out_w) continue;
    if (plain) {
      // No epilogue inputs, identity: a short path of its own (the full epilogue, inlined for
      // 32 values, is most of the kernel's code).
#pragma unroll
      for (int q = 0; q < KILN_FL_KPT; ++q) {
        const kiln_i32 k = k0 + kt * KILN_FL_KPT + q;
        if (k >= a.k) break;
        const kiln_i64 yi = (((kiln_i64)n * a.k + k) * a.out_h + oh) * a.out_w + ow;
        if (vector_store) {
#pragma unroll
          for (int j = 0; j < KILN_FL_WPT; j += 4)
            if (ow + j < a.out_w)
              *reinterpret_cast<float4*>(y + yi + j) =
                  make_float4(acc[j][q] * e.alpha, acc[j + 1][q] * e.alpha,
                              acc[j + 2][q] * e.alpha, acc[j + 3][q] * e.alpha);
        } else {
#pragma unroll
          for (int j = 0; j < KILN_FL_WPT; ++j)
            if (ow + j < a.out_w) kiln_store(y, yi + j, acc[j][q] * e.alpha);
        }
      }
      continue;
    }
#pragma unroll
    for (int q = 0; q < KILN_FL_KPT; ++q) {
      const kiln_i32 k = k0 + kt * KILN_FL_KPT + q;
      if (k >= a.k) break;
      const kiln_i64 yi = (((kiln_i64)n * a.k + k) * a.out_h + oh) * a.out_w + ow;
      const float scale_k = e.scale ? kiln_ep_f32(e.scale, k) : 1.0f;
      const float bias_k = e.bias ? kiln_ep_f32(e.bias, k) : 0.0f;
      float v[KILN_FL_WPT];
#pragma unroll
      for (int j = 0; j < KILN_FL_WPT; ++j) {
        const bool in = ow + j < a.out_w;
        const float z_v = e.z && in ? kiln_ep_z(e.z, yi + j) : 0.0f;
        v[j] = kiln_epilogue_of(acc[j][q], scale_k, bias_k, z_v, e, act);
      }
      if (vector_store) {
#pragma unroll
        for (int j = 0; j < KILN_FL_WPT; j += 4)
          if (ow + j < a.out_w)
            *reinterpret_cast<float4*>(y + yi + j) = make_float4(v[j], v[j + 1], v[j + 2], v[j + 3]);
      } else {
#pragma unroll
        for (int j = 0; j < KILN_FL_WPT; ++j)
          if (ow + j < a.out_w) kiln_store(y, yi + j, v[j]);
      }
    }
  }
}
