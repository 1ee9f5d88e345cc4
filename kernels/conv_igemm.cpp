// ConvImplicitGemmFwd: implicit GEMM for every forward problem (see igemm.h).
#include "igemm.h"

extern "C" __global__ void conv_igemm_fwd(const kiln_t* __restrict__ x, const kiln_t* __restrict__ w,
                                          kiln_t* __restrict__ y, KilnConvArgs a, KilnEpilogue e) {
  kiln_igemm_body(x, w, y, a, e);
}
