// ConvDot1x1Fwd: 1x1 convolutions over few output pixels (squeeze-and-excitation layers on
// pooled 1x1 maps, classifier heads, the last stages of a network at batch 1) on CUDA cores.
// There the output is a few thousand dot products over C at most: too few tiles for a GEMM
// kernel's blocks (64 x 64 tiles leave most of the SMs idle and run the whole reduction in one
// block). Here each warp computes a KILN_TM x KILN_TK tile of (pixel, output channel) dot
// products: its lanes run along the channels, KILN_VEC at a time with one vector load each from
// x's pixel rows and w's output-channel rows (both contiguous in C), and the tile's sums are
// reduced across the warp at the end, each lane writing one. Accumulation is FP32, whatever
// the element type; outputs are rounded by the hardware conversion.
//
// Launch: grid ceil(pixel tiles x channel tiles / KILN_WARPS), block 32 x KILN_WARPS, no shared
// memory. Needs a 1x1 filter, stride 1, no padding, one group, C % KILN_VEC == 0, and x, w, y
// as [pixels][C], [K][C], [pixels][K]: NHWC, or NCHW over 1x1 maps (the same bytes). NVIDIA
// only (warp shuffles of 32 lanes; the manifest's archs).
#include "epilogue.h"

#if !defined(KILN_VEC) || !defined(KILN_TM) || !defined(KILN_TK) || !defined(KILN_WARPS)
#error "the perf config defines KILN_VEC, KILN_TM, KILN_TK and KILN_WARPS"
#endif
#if KILN_TM * KILN_TK > 32
#error "a warp's tile holds at most 32 sums (one a lane)"
#endif

// KILN_VEC elements read by one load (conv_grouped.cpp has the same type).
struct alignas(KILN_VEC * sizeof(kiln_t)) kiln_dot_vec_t {
  kiln_t e[KILN_VEC];
};

#if defined(KILN_DTYPE_FP16) && defined(__CUDACC_RTC__)
static __device__ KILN_INLINE float kiln_dot_to_float(kiln_t v) {
  float f;
  asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(v));
  return f;
}
#else
static __device__ KILN_INLINE float kiln_dot_to_float(kiln_t v) { return kiln_load(&v, 0); }
#endif

// One sum rounded to the element type (round to nearest even).
static __device__ KILN_INLINE void kiln_dot_store(kiln_t* out, float v) {
#if defined(KILN_DTYPE_FP16)
  asm("cvt.rn.f16.f32 %0, %1;" : "=h"(*out) : "f"(v));
#elif defined(KILN_DTYPE_BF16)
  asm("cvt.rn.bf16.f32 %0, %1;" : "=h"(*out) : "f"(v));
#else
  *out = v;
#endif
}

// One vector of a row; zeros past the row's end (a tile's rows or channels beyond the tensor).
static __device__ KILN_INLINE void kiln_dot_load(float (&out)[KILN_VEC], const kiln_t* __restrict__ row,
                                                 bool valid) {
  if (valid) {
    const kiln_dot_vec_t v = *reinterpret_cast<const kiln_dot_vec_t*>(row);
#pragma unroll
    for (int j = 0; j < KILN_VEC; ++j) out[j] = kiln_dot_to_float(v.e[j]);
  } else {
#pragma unroll
    for (int j = 0; j < KILN_VEC; ++j) out[j] = 0.0f;
  }
}

// One step of the reduction: lanes with bit HALF set keep values [HALF, 2 HALF), the others
// [0, HALF); each adds its partner's copy of what it keeps (into v[0 .. HALF)). A template so
// that every index is a constant and v stays in registers.
template <int HALF>
static __device__ KILN_INLINE void kiln_dot_halve(float (&v)[32], kiln_i32 lane) {
  const bool upper = (lane & HALF) != 0;
#pragma unroll
  for (int s = 0; s < HALF; ++s) {
    const float send = upper ? v[s] : v[s + HALF];
    const float keep = upper ? v[s + HALF] : v[s];
    v[s] = keep + __shfl_xor_sync(0xffffffffu, send, HALF);
  }
}

extern "C" __global__ void conv_dot1x1_fwd(const kiln_t* __restrict__ x,
                                           const kiln_t* __restrict__ w,
                                           kiln_t* __restrict__ y, KilnConvArgs a,
                                           KilnEpilogue e) {
  kiln_pdl_start();
  const kiln_i64 pixels = (kiln_i64)a.n * a.out_h * a.out_w;
  const kiln_i32 lane = (kiln_i32)(threadIdx.x & 31u);
  const kiln_i64 tile = (kiln_i64)blockIdx.x * KILN_WARPS + (threadIdx.x >> 5);
  const kiln_i64 k_tiles = (a.k + KILN_TK - 1) / KILN_TK;
  const kiln_i64 m0 = (tile / k_tiles) * KILN_TM;
  const kiln_i32 k0 = (kiln_i32)(tile % k_tiles) * KILN_TK;
  if (m0 >= pixels) return;  // a whole warp leaves together: the shuffles below stay full

  float acc[KILN_TM][KILN_TK];
#pragma unroll
  for (int i = 0; i < KILN_TM; ++i)
#pragma unroll
    for (int t = 0; t < KILN_TK; ++t) acc[i][t] = 0.0f;

  for (kiln_i32 c = lane * KILN_VEC; c < a.c; c += 32 * KILN_VEC) {
    float xv[KILN_TM][KILN_VEC], wv[KILN_TK][KILN_VEC];
    // Every load of the step is issued before the first product.
#pragma unroll
    for (int i = 0; i < KILN_TM; ++i)
      kiln_dot_load(xv[i], x + (m0 + i) * a.c + c, m0 + i < pixels);
#pragma unroll
    for (int t = 0; t < KILN_TK; ++t)
      kiln_dot_load(wv[t], w + (kiln_i64)(k0 + t) * a.c + c, k0 + t < a.k);
#pragma unroll
    for (int i = 0; i < KILN_TM; ++i)
#pragma unroll
      for (int t = 0; t < KILN_TK; ++t)
#pragma unroll
        for (int j = 0; j < KILN_VEC; ++j) acc[i][t] += xv[i][j] * wv[t][j];
  }

  // The tile's sums across the warp by recursive halving: at each step a lane keeps half of
  // its values and adds its partner's copy of them, so lane i ends with sum i (31 shuffles for
  // 32 sums, where a butterfly per sum takes 160).
  float v[32];
#pragma unroll
  for (int s = 0; s < 32; ++s) v[s] = s < KILN_TM * KILN_TK ? acc[s / KILN_TK][s % KILN_TK] : 0.0f;
  kiln_dot_halve<16>(v, lane);
  kiln_dot_halve<8>(v, lane);
  kiln_dot_halve<4>(v, lane);
  kiln_dot_halve<2>(v, lane);
  kiln_dot_halve<1>(v, lane);
  // Lane i holds sum i: pixel i / KILN_TK, output channel i % KILN_TK of the tile.
  const kiln_i64 m = m0 + lane / KILN_TK;
  const kiln_i32 k = k0 + lane % KILN_TK;
  if (lane < KILN_TM * KILN_TK && m < pixels && k < a.k)
    kiln_dot_store(y + m * e.y_ld + k, kiln_epilogue(v[0], k, m * e.z_ld + k, e));
}
