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
#include "kiln_gpu.h"

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

extern "C" __global__ void conv_grouped_nhwc_fwd(const kiln_t* __restrict__ x,
                                                 const kiln_t* __restrict__ w,
                                                 kiln_t* __restrict__ y, KilnConvArgs a) {
  extern __shared__ float kiln_w_slice[];  // [tap * cpg + cg][channel in slice]
  const kiln_i32 cpg = a.c / a.groups;     // input channels per group
  const kiln_i32 kpg = a.k / a.groups;     // output channels per group
  const kiln_i32 taps = a.fil_h * a.fil_w * cpg;
  const kiln_i32 slice_base = (kiln_i32)blockIdx.y * KILN_SLICE;

  const kiln_i32 tid = (kiln_i32)(threadIdx.y * blockDim.x + threadIdx.x);
  const kiln_i32 threads = (kiln_i32)(blockDim.x * blockDim.y);
  for (kiln_i32 i = tid; i < taps * KILN_SLICE; i += threads) {
    const kiln_i32 ch = i / taps, t = i - ch * taps;  // reads w in order: coalesced
    const kiln_i32 k = slice_base + ch;
    kiln_w_slice[t * KILN_SLICE + ch] = k < a.k ? kiln_elem_to_float(w[(kiln_i64)k * taps + t]) : 0.0f;
  }
  __syncthreads();

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
  for (int j = 0; j < KILN_VEC; ++j) kiln_store(out.e, j, acc[j]);
  *reinterpret_cast<kiln_vec_t*>(y + pix * a.k + k0) = out;
}
