// kiln_gpu.h: the one dialect kiln's kernels are written in. The same source builds with
// clang-19 for AMD in "raw" mode (no HIP headers, no device libraries: builtins only) and with
// NVRTC for NVIDIA. Kernels are extern "C" (unmangled names on both vendors) and never assume a
// wavefront size (64 on gfx9, 32 on gfx10+/NVIDIA).
#pragma once

#if defined(__HIP__) && defined(KILN_AMD_RAW)
  #define __global__ __attribute__((global))
  #define __device__ __attribute__((device))
  #define __shared__ __attribute__((shared))
  #define KILN_INLINE __inline__ __attribute__((always_inline))
  // threadIdx and friends as zero-size property objects over the amdgcn builtins.
  #define KILN_DIM3(NAME, X, Y, Z)                                                    \
    struct NAME##_type {                                                              \
      __declspec(property(get = get_x)) unsigned int x;                               \
      __declspec(property(get = get_y)) unsigned int y;                               \
      __declspec(property(get = get_z)) unsigned int z;                               \
      static __device__ KILN_INLINE unsigned int get_x() { return X; }                \
      static __device__ KILN_INLINE unsigned int get_y() { return Y; }                \
      static __device__ KILN_INLINE unsigned int get_z() { return Z; }                \
    };                                                                                \
    extern const __device__ __attribute__((weak)) NAME##_type NAME;
  KILN_DIM3(threadIdx, __builtin_amdgcn_workitem_id_x(), __builtin_amdgcn_workitem_id_y(),
            __builtin_amdgcn_workitem_id_z())
  KILN_DIM3(blockIdx, __builtin_amdgcn_workgroup_id_x(), __builtin_amdgcn_workgroup_id_y(),
            __builtin_amdgcn_workgroup_id_z())
  KILN_DIM3(blockDim, __builtin_amdgcn_workgroup_size_x(), __builtin_amdgcn_workgroup_size_y(),
            __builtin_amdgcn_workgroup_size_z())
  static __device__ KILN_INLINE void __syncthreads() {
    __builtin_amdgcn_fence(__ATOMIC_RELEASE, "workgroup");
    __builtin_amdgcn_s_barrier();
    __builtin_amdgcn_fence(__ATOMIC_ACQUIRE, "workgroup");
  }
  typedef unsigned short kiln_u16;
  typedef unsigned int kiln_u32;
  typedef int kiln_i32;
  typedef long long kiln_i64;
#elif defined(__CUDACC_RTC__)
  #define KILN_INLINE __forceinline__
  typedef unsigned short kiln_u16;
  typedef unsigned int kiln_u32;
  typedef int kiln_i32;
  typedef long long kiln_i64;
#else
  #error "kiln kernels build with clang -x hip -DKILN_AMD_RAW (AMD) or NVRTC (NVIDIA)"
#endif

// Programmatic dependent launch (kiln launches NVIDIA sm_90 kernels with it). kiln_pdl_wait: wait
// until the previous kernel in the stream has finished and its writes are visible; every entry
// calls it before it touches global memory. kiln_pdl_release: let the next kernel be scheduled
// once every block of this one has released it (or ended); where a block calls it changes only
// how much of the next kernel's launch overlaps this one, never what it reads, since the next
// kernel waits too. Both are no-ops for a launch that did not ask for it, and are left out
// below sm_90 and on AMD.
static __device__ KILN_INLINE void kiln_pdl_wait() {
#if defined(__CUDACC_RTC__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
}
static __device__ KILN_INLINE void kiln_pdl_release() {
#if defined(__CUDACC_RTC__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
#endif
}
// Both at entry: short kernels release the next one at once.
static __device__ KILN_INLINE void kiln_pdl_enter() {
  kiln_pdl_release();
  kiln_pdl_wait();
}
// Both at entry, the wait first: the next kernel is scheduled once this one runs, not while it
// still waits. Released before the wait, a chain of short kernels (pooling, the
// squeeze-and-excitation layers) launched one another ahead, each grid's waiting blocks
// holding SM resources: EfficientNet-B0 ran 13% slower at N=1.
static __device__ KILN_INLINE void kiln_pdl_start() {
  kiln_pdl_wait();
  kiln_pdl_release();
}

// Bit-level float conversions: identical results on every compiler, no fp16 headers needed.
static __device__ KILN_INLINE float kiln_bits_to_float(kiln_u32 b) {
  union { kiln_u32 u; float f; } v; v.u = b; return v.f;
}
static __device__ KILN_INLINE kiln_u32 kiln_float_to_bits(float f) {
  union { kiln_u32 u; float f; } v; v.f = f; return v.u;
}
static __device__ KILN_INLINE float kiln_bf16_to_float(kiln_u16 h) { return kiln_bits_to_float(((kiln_u32)h) << 16); }
static __device__ KILN_INLINE kiln_u16 kiln_float_to_bf16(float f) {
  kiln_u32 b = kiln_float_to_bits(f);
  if ((b & 0x7fffffffu) > 0x7f800000u) return (kiln_u16)((b >> 16) | 0x40);  // quiet NaN
  b += 0x7fffu + ((b >> 16) & 1u);                                                // nearest even
  return (kiln_u16)(b >> 16);
}
static __device__ KILN_INLINE float kiln_half_to_float(kiln_u16 h) {
  kiln_u32 sign = ((kiln_u32)h & 0x8000u) << 16, exp = (h >> 10) & 0x1f, man = h & 0x3ffu;
  if (exp == 0x1f) return kiln_bits_to_float(sign | 0x7f800000u | (man << 13));
  if (exp == 0) {
    if (man == 0) return kiln_bits_to_float(sign);
    float v = (float)man * (1.0f / 16777216.0f);  // subnormal: man * 2^-24
    return sign ? -v : v;
  }
  return kiln_bits_to_float(sign | ((exp + 112u) << 23) | (man << 13));
}
static __device__ KILN_INLINE kiln_u16 kiln_float_to_half(float f) {
  kiln_u32 b = kiln_float_to_bits(f);
  kiln_u32 sign = (b >> 16) & 0x8000u;
  kiln_u32 absb = b & 0x7fffffffu;
  if (absb > 0x7f800000u) return (kiln_u16)(sign | 0x7e00u);           // NaN
  if (absb >= 0x477ff000u) return (kiln_u16)(sign | 0x7c00u);          // overflow -> inf
  if (absb < 0x38800000u) {                                            // subnormal or zero
    float a = kiln_bits_to_float(absb) * 16777216.0f;                  // in units of 2^-24
    kiln_u32 r = (kiln_u32)a;
    float frac = a - (float)r;
    if (frac > 0.5f || (frac == 0.5f && (r & 1u))) r++;
    return (kiln_u16)(sign | r);
  }
  kiln_u32 rounded = absb + 0xfffu + ((absb >> 13) & 1u);
  return (kiln_u16)(sign | ((rounded - 0x38000000u) >> 13));
}

// The element type a kernel variant is compiled for: KILN_DTYPE_FP32 / _FP16 / _BF16.
#if defined(KILN_DTYPE_FP16)
  typedef kiln_u16 kiln_t;
  static __device__ KILN_INLINE float kiln_load(const kiln_t* p, kiln_i64 i) { return kiln_half_to_float(p[i]); }
  static __device__ KILN_INLINE void kiln_store(kiln_t* p, kiln_i64 i, float v) { p[i] = kiln_float_to_half(v); }
#elif defined(KILN_DTYPE_BF16)
  typedef kiln_u16 kiln_t;
  static __device__ KILN_INLINE float kiln_load(const kiln_t* p, kiln_i64 i) { return kiln_bf16_to_float(p[i]); }
  static __device__ KILN_INLINE void kiln_store(kiln_t* p, kiln_i64 i, float v) { p[i] = kiln_float_to_bf16(v); }
#else
  typedef float kiln_t;
  static __device__ KILN_INLINE float kiln_load(const kiln_t* p, kiln_i64 i) { return p[i]; }
  static __device__ KILN_INLINE void kiln_store(kiln_t* p, kiln_i64 i, float v) { p[i] = v; }
#endif

// The problem as every kiln convolution kernel receives it. Mirrored by kiln_format::abi::KernelArgs;
// the build asserts the size and every field offset of the mirror against this definition.
// Spatial sizes are [d, h, w]; 2-D problems use d = 1, pad_d = 0, stride_d = dil_d = 1.
struct KilnConvArgs {
  kiln_i32 n, c, k, groups;
  kiln_i32 in_d, in_h, in_w;
  kiln_i32 fil_d, fil_h, fil_w;
  kiln_i32 out_d, out_h, out_w;
  kiln_i32 pad_d, pad_h, pad_w;
  kiln_i32 stride_d, stride_h, stride_w;
  kiln_i32 dil_d, dil_h, dil_w;
  kiln_i32 channels_last;  // 1: N[D]HWC activations and K[D]HWC/G weights; 0: NC[D]HW, KC/G[D]HW
  kiln_i32 reserved;
};
