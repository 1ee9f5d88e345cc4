// ConvDirectGroupedFwd: grouped and depthwise 2-D convolution in NHWC (MobileNet, EfficientNet,
// ConvNeXt, ResNeXt layers) on CUDA cores / vector ALUs, vectorized over output channels.
//
// A block is KILN_TX x KILN_TY threads: x runs over vectors of KILN_VEC consecutive output
// channels (a slice of KILN_VEC * KILN_TX channels per block, blockIdx.y picks the slice), y over
// consecutive output pixels (blockIdx.x). The block first stages its slice of the filter in shared
// memory as FP32, transposed to [tap][channel] so a thread reads its KILN_VEC weights of a tap
// side by side. Depthwise layers (one input channel per group, one output channel per group)
// read KILN_VEC input channels with one vector load per tap; other groupings read each lane's
// input channel on its own (neighbouring lanes still share cache lines). Accumulation is FP32.
//
// Launch: grid (ceil(pixels / KILN_TY), ceil(K / (KILN_VEC * KILN_TX))), block (KILN_TX,
// KILN_TY), dynamic shared memory: filter taps x channels per group x slice x 4 bytes. Needs
// C % KILN_VEC == 0 and K % KILN_VEC == 0 (vector alignment), channels_last = 1, 2-D.
//
// Built with KILN_DW_S, this file is ConvDirectDepthwiseFwd instead (at its end; the two share
// the vector type and the conversions).
#include "epilogue.h"

#if !defined(KILN_VEC) || !defined(KILN_TX) || !defined(KILN_TY)
#error "the perf config defines KILN_VEC, KILN_TX and KILN_TY"
#endif

#define KILN_SLICE (KILN_VEC * KILN_TX)

// KILN_VEC elements read or written by one access.
struct alignas(KILN_VEC * sizeof(kiln_t)) kiln_vec_t {
  kiln_t e[KILN_VEC];
};

// One element to FP32. NVIDIA converts FP16 with one instruction (exact, like kiln_gpu.h's
// bit-level conversion, which the AMD build keeps: no AMD device here to check another path on).
#if defined(KILN_DTYPE_FP16) && defined(__CUDACC_RTC__)
static __device__ KILN_INLINE float kiln_elem_to_float(kiln_t v) {
  float f;
  asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(v));
  return f;
}
#elif defined(KILN_DTYPE_FP16) || defined(KILN_DTYPE_BF16)
static __device__ KILN_INLINE float kiln_elem_to_float(kiln_t v) { return kiln_load(&v, 0); }
#else
static __device__ KILN_INLINE float kiln_elem_to_float(kiln_t v) { return v; }
#endif

// The block's slice of the filter into shared memory as FP32, [tap][channel in slice]: `taps`
// values per output channel, read in order (coalesced).
static __device__ KILN_INLINE void kiln_stage_filter(float* slice, const kiln_t* __restrict__ w,
                                                     kiln_i32 taps, kiln_i32 slice_base,
                                                     kiln_i32 k_total) {
  const kiln_i32 tid = (kiln_i32)(threadIdx.y * blockDim.x + threadIdx.x);
  const kiln_i32 threads = (kiln_i32)(blockDim.x * blockDim.y);
  for (kiln_i32 i = tid; i < taps * KILN_SLICE; i += threads) {
    const kiln_i32 ch = i / taps, t = i - ch * taps;
    const kiln_i32 k = slice_base + ch;
    slice[t * KILN_SLICE + ch] = k < k_total ? kiln_elem_to_float(w[(kiln_i64)k * taps + t]) : 0.0f;
  }
  __syncthreads();
}

#if !defined(KILN_DW_S)
extern "C" __global__ void conv_grouped_nhwc_fwd(const kiln_t* __restrict__ x,
                                                 const kiln_t* __restrict__ w,
                                                 kiln_t* __restrict__ y, KilnConvArgs a,
                                                 KilnEpilogue e) {
  extern __shared__ float kiln_w_slice[];  // [tap * cpg + cg][channel in slice]
  const kiln_i32 cpg = a.c / a.groups;     // input channels per group
  const kiln_i32 kpg = a.k / a.groups;     // output channels per group
  const kiln_i32 taps = a.fil_h * a.fil_w * cpg;
  const kiln_i32 slice_base = (kiln_i32)blockIdx.y * KILN_SLICE;

  kiln_stage_filter(kiln_w_slice, w, taps, slice_base, a.k);

  const kiln_i32 lane0 = (kiln_i32)threadIdx.x * KILN_VEC;  // first channel in the slice
  const kiln_i32 k0 = slice_base + lane0;
  const kiln_i64 pixels = (kiln_i64)a.n * a.out_h * a.out_w;
  const kiln_i64 pix = (kiln_i64)blockIdx.x * blockDim.y + threadIdx.y;
  if (k0 >= a.k || pix >= pixels) return;
  const kiln_i32 ow = (kiln_i32)(pix % a.out_w);
  const kiln_i64 rest = pix / a.out_w;
  const kiln_i32 oh = (kiln_i32)(rest % a.out_h);
  const kiln_i32 n = (kiln_i32)(rest / a.out_h);

  float acc[KILN_VEC];
  for (int j = 0; j < KILN_VEC; ++j) acc[j] = 0.0f;
  const bool depthwise = cpg == 1 && kpg == 1;
  for (kiln_i32 fy = 0; fy < a.fil_h; ++fy) {
    const kiln_i32 ih = oh * a.stride_h - a.pad_h + fy * a.dil_h;
    if (ih < 0 || ih >= a.in_h) continue;
    for (kiln_i32 fx = 0; fx < a.fil_w; ++fx) {
      const kiln_i32 iw = ow * a.stride_w - a.pad_w + fx * a.dil_w;
      if (iw < 0 || iw >= a.in_w) continue;
      const kiln_i64 pixel = (((kiln_i64)n * a.in_h + ih) * a.in_w + iw) * a.c;
      const float* wt = kiln_w_slice + (fy * a.fil_w + fx) * cpg * KILN_SLICE + lane0;
      if (depthwise) {
        const kiln_vec_t v = *reinterpret_cast<const kiln_vec_t*>(x + pixel + k0);
        for (int j = 0; j < KILN_VEC; ++j) acc[j] += kiln_elem_to_float(v.e[j]) * wt[j];
      } else {
        for (kiln_i32 cg = 0; cg < cpg; ++cg) {
          for (int j = 0; j < KILN_VEC; ++j) {
            const kiln_i32 c = ((k0 + j) / kpg) * cpg + cg;
            acc[j] += kiln_elem_to_float(x[pixel + c]) * wt[cg * KILN_SLICE + j];
          }
        }
      }
    }
  }
  kiln_vec_t out;
  for (int j = 0; j < KILN_VEC; ++j)
    kiln_store(out.e, j, kiln_epilogue(acc[j], k0 + j, pix * e.z_ld + k0 + j, e));
  *reinterpret_cast<kiln_vec_t*>(y + pix * e.y_ld + k0) = out;
}
#endif  // !KILN_DW_S

#if defined(KILN_DW_S)
// ConvDirectDepthwiseFwd (this file built with KILN_PW, KILN_DW_S and KILN_DW_U): depthwise 2-D
// convolution in NHWC (one input and one output channel per group: MobileNet, EfficientNet,
// ConvNeXt layers) on CUDA cores, each thread computing KILN_PW consecutive output pixels of one
// output row for KILN_VEC consecutive channels.
//
// The filter size KILN_DW_S (square) and the horizontal stride KILN_DW_U are compile-time, so a
// filter row's (KILN_PW - 1) * U + S input pixels are loaded once each (one vector load per
// pixel), every product's operands sit in registers, and the loads of all S rows are issued
// before the first is used; ConvDirectGroupedFwd loads S pixels per output pixel, a row at a
// time. The block first stages its slice of the filter in shared memory as FP32,
// [tap][channel]. Accumulation is FP32.
//
// Launch: grid (ceil(strips / KILN_TY), ceil(K / (KILN_VEC * KILN_TX))), block (KILN_TX,
// KILN_TY), a strip being KILN_PW output pixels of a row; dynamic shared memory: taps x slice x
// 4 bytes. Needs C = K = groups, C % KILN_VEC == 0, an S x S filter, horizontal dilation 1,
// channels_last, 2-D.
#if !defined(KILN_PW) || !defined(KILN_DW_U)
#error "the depthwise perf config defines KILN_PW, KILN_DW_S and KILN_DW_U"
#endif
// Input pixels one filter row of a strip covers.
#define KILN_COLS ((KILN_PW - 1) * KILN_DW_U + KILN_DW_S)

extern "C" __global__ void conv_depthwise_nhwc_fwd(const kiln_t* __restrict__ x,
                                                   const kiln_t* __restrict__ w,
                                                   kiln_t* __restrict__ y, KilnConvArgs a,
                                                   KilnEpilogue e) {
  extern __shared__ float kiln_w_slice[];  // [tap][channel in slice]
  const kiln_i32 taps = KILN_DW_S * KILN_DW_S;
  const kiln_i32 slice_base = (kiln_i32)blockIdx.y * KILN_SLICE;
  kiln_stage_filter(kiln_w_slice, w, taps, slice_base, a.k);

  const kiln_i32 lane0 = (kiln_i32)threadIdx.x * KILN_VEC;
  const kiln_i32 k0 = slice_base + lane0;
  const kiln_i32 strips_per_row = (a.out_w + KILN_PW - 1) / KILN_PW;
  const kiln_i64 strips = (kiln_i64)a.n * a.out_h * strips_per_row;
  const kiln_i64 strip = (kiln_i64)blockIdx.x * blockDim.y + threadIdx.y;
  if (k0 >= a.k || strip >= strips) return;
  const kiln_i32 ow0 = (kiln_i32)(strip % strips_per_row) * KILN_PW;
  const kiln_i64 rest = strip / strips_per_row;
  const kiln_i32 oh = (kiln_i32)(rest % a.out_h);
  const kiln_i32 n = (kiln_i32)(rest / a.out_h);
  const kiln_i32 iw0 = ow0 * KILN_DW_U - a.pad_w;

  float acc[KILN_PW][KILN_VEC];
#pragma unroll
  for (int p = 0; p < KILN_PW; ++p)
#pragma unroll
    for (int j = 0; j < KILN_VEC; ++j) acc[p][j] = 0.0f;
#pragma unroll
  for (int fy = 0; fy < KILN_DW_S; ++fy) {
    const kiln_i32 ih = oh * a.stride_h - a.pad_h + fy * a.dil_h;
    const bool row_in = ih >= 0 && ih < a.in_h;
    const kiln_t* row = x + ((kiln_i64)n * a.in_h + ih) * a.in_w * a.c + k0;
    float wv[KILN_DW_S][KILN_VEC];
#pragma unroll
    for (int fx = 0; fx < KILN_DW_S; ++fx)
#pragma unroll
      for (int j = 0; j < KILN_VEC; ++j)
        wv[fx][j] = kiln_w_slice[(fy * KILN_DW_S + fx) * KILN_SLICE + lane0 + j];
#pragma unroll
    for (int col = 0; col < KILN_COLS; ++col) {
      const kiln_i32 iw = iw0 + col;
      float v[KILN_VEC];
      if (row_in && iw >= 0 && iw < a.in_w) {
        const kiln_vec_t in = *reinterpret_cast<const kiln_vec_t*>(row + (kiln_i64)iw * a.c);
#pragma unroll
        for (int j = 0; j < KILN_VEC; ++j) v[j] = kiln_elem_to_float(in.e[j]);
      } else {
#pragma unroll
        for (int j = 0; j < KILN_VEC; ++j) v[j] = 0.0f;
      }
      // Output pixel p reads this column as its tap col - p * U.
#pragma unroll
      for (int p = 0; p < KILN_PW; ++p) {
        const int fx = col - p * KILN_DW_U;
        if (fx >= 0 && fx < KILN_DW_S) {
#pragma unroll
          for (int j = 0; j < KILN_VEC; ++j) acc[p][j] += v[j] * wv[fx][j];
        }
      }
    }
  }
  const kiln_i64 pix0 = ((kiln_i64)n * a.out_h + oh) * a.out_w + ow0;
#pragma unroll
  for (int p = 0; p < KILN_PW; ++p) {
    if (ow0 + p >= a.out_w) break;
    kiln_vec_t o;
#pragma unroll
    for (int j = 0; j < KILN_VEC; ++j)
      kiln_store(o.e, j, kiln_epilogue(acc[p][j], k0 + j, (pix0 + p) * e.z_ld + k0 + j, e));
    *reinterpret_cast<kiln_vec_t*>(y + (pix0 + p) * e.y_ld + k0) = o;
  }
}
#endif  // KILN_DW_S
