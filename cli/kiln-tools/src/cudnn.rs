//! cuDNN as the yardstick for `kiln bench`: cudarc's cuDNN bindings with libcudnn loaded at run
//! time (never linked, so the kiln binary still runs where cuDNN is absent). Only what the
//! benchmark needs: a forward convolution of a kiln problem, its algorithm chosen by cuDNN's own
//! exhaustive search (`cudnnFindConvolutionForwardAlgorithmEx`, what PyTorch's
//! `cudnn.benchmark = True` does), run on device buffers that kiln allocated.

use std::ffi::{c_void, CStr};

use cudarc::cudnn::sys;
use kiln::{ConvProblem, DataType};

/// A cuDNN failure: the call and cuDNN's own words.
#[derive(Debug)]
pub struct CudnnError {
    /// The cuDNN function.
    pub call: &'static str,
    /// What cuDNN said.
    pub message: String,
}

impl std::fmt::Display for CudnnError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.call, self.message)
    }
}

impl std::error::Error for CudnnError {}

fn check(call: &'static str, status: sys::cudnnStatus_t) -> Result<(), CudnnError> {
    if status == sys::cudnnStatus_t::CUDNN_STATUS_SUCCESS {
        return Ok(());
    }
    // SAFETY: cudnnGetErrorString returns a static NUL-terminated string.
    let text = unsafe {
        let p = sys::cudnnGetErrorString(status);
        if p.is_null() {
            String::new()
        } else {
            CStr::from_ptr(p).to_string_lossy().into_owned()
        }
    };
    Err(CudnnError {
        call,
        message: format!("{status:?} {text}"),
    })
}

/// An open cuDNN handle on the current CUDA context.
pub struct Cudnn {
    handle: sys::cudnnHandle_t,
    /// `cudnnGetVersion()`, e.g. 91000 for 9.10.0.
    pub version: usize,
}

impl Cudnn {
    /// Loads libcudnn (from the loader's path, e.g. `LD_LIBRARY_PATH`) and creates a handle.
    /// Call after kiln's context made the device's primary context current.
    pub fn open() -> Result<Cudnn, CudnnError> {
        // SAFETY: only tries to dlopen the library (cudarc panics later if it is absent).
        if !unsafe { sys::is_culib_present() } {
            return Err(CudnnError {
                call: "dlopen",
                message: "libcudnn.so.9 not found; add its directory to LD_LIBRARY_PATH".into(),
            });
        }
        let mut handle = std::ptr::null_mut();
        // SAFETY: valid out-pointer.
        check("cudnnCreate", unsafe { sys::cudnnCreate(&mut handle) })?;
        // SAFETY: plain query.
        let version = unsafe { sys::cudnnGetVersion() };
        Ok(Cudnn { handle, version })
    }
}

impl Drop for Cudnn {
    fn drop(&mut self) {
        // SAFETY: the handle came from cudnnCreate and is destroyed once.
        unsafe { sys::cudnnDestroy(self.handle) };
    }
}

/// Descriptors of one forward convolution and the algorithm cuDNN found fastest for it.
pub struct CudnnConv<'a> {
    cudnn: &'a Cudnn,
    x: sys::cudnnTensorDescriptor_t,
    w: sys::cudnnFilterDescriptor_t,
    y: sys::cudnnTensorDescriptor_t,
    conv: sys::cudnnConvolutionDescriptor_t,
    algo: sys::cudnnConvolutionFwdAlgo_t,
    /// Workspace bytes the chosen algorithm needs.
    pub workspace: usize,
    /// The chosen algorithm and math mode, for the report.
    pub algorithm: String,
}

impl Drop for CudnnConv<'_> {
    fn drop(&mut self) {
        // SAFETY: each descriptor was created in `new` (null ones are skipped).
        unsafe {
            if !self.x.is_null() {
                sys::cudnnDestroyTensorDescriptor(self.x);
            }
            if !self.y.is_null() {
                sys::cudnnDestroyTensorDescriptor(self.y);
            }
            if !self.w.is_null() {
                sys::cudnnDestroyFilterDescriptor(self.w);
            }
            if !self.conv.is_null() {
                sys::cudnnDestroyConvolutionDescriptor(self.conv);
            }
        }
    }
}

fn int(v: u32) -> i32 {
    v as i32 // kiln bounds every dimension far below i32::MAX (MAX_DIM)
}

impl<'a> CudnnConv<'a> {
    /// Describes `p` (2-D, FP32 or FP16) and lets cuDNN time its algorithms on the given
    /// buffers, keeping the fastest that fits in `workspace_limit` bytes. FP32 uses FMA math
    /// (true FP32, as kiln computes); FP16 may use tensor cores with FP32 accumulation.
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        cudnn: &'a Cudnn,
        p: &ConvProblem,
        x: u64,
        w: u64,
        y: u64,
        workspace: u64,
        workspace_limit: usize,
    ) -> Result<CudnnConv<'a>, CudnnError> {
        let unsupported = |message: &str| CudnnError {
            call: "kiln bench",
            message: format!("{}: {message}", p.find_db_key()),
        };
        if p.spatial_dims() != 2 {
            return Err(unsupported("only 2-D problems are compared with cuDNN"));
        }
        let (dtype, math) = match p.data_types()[0] {
            DataType::Fp32 => (
                sys::cudnnDataType_t::CUDNN_DATA_FLOAT,
                sys::cudnnMathType_t::CUDNN_FMA_MATH,
            ),
            DataType::Fp16 => (
                sys::cudnnDataType_t::CUDNN_DATA_HALF,
                sys::cudnnMathType_t::CUDNN_TENSOR_OP_MATH,
            ),
            _ => return Err(unsupported("only FP32 and FP16 are compared with cuDNN")),
        };
        let format = if p.layouts()[0].channels_last() {
            sys::cudnnTensorFormat_t::CUDNN_TENSOR_NHWC
        } else {
            sys::cudnnTensorFormat_t::CUDNN_TENSOR_NCHW
        };
        let mut d = CudnnConv {
            cudnn,
            x: std::ptr::null_mut(),
            w: std::ptr::null_mut(),
            y: std::ptr::null_mut(),
            conv: std::ptr::null_mut(),
            algo: sys::cudnnConvolutionFwdAlgo_t::CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM,
            workspace: 0,
            algorithm: String::new(),
        };
        let [_, ih, iw] = p.input();
        let [_, oh, ow] = p.output();
        let [_, fh, fw] = p.filter();
        let [_, ph, pw] = p.pad();
        let [_, sh, sw] = p.stride();
        let [_, dh, dw] = p.dilation();
        // SAFETY: out-pointers are valid; descriptors are owned by `d` and freed in its Drop.
        unsafe {
            check(
                "cudnnCreateTensorDescriptor",
                sys::cudnnCreateTensorDescriptor(&mut d.x),
            )?;
            check(
                "cudnnCreateTensorDescriptor",
                sys::cudnnCreateTensorDescriptor(&mut d.y),
            )?;
            check(
                "cudnnCreateFilterDescriptor",
                sys::cudnnCreateFilterDescriptor(&mut d.w),
            )?;
            check(
                "cudnnCreateConvolutionDescriptor",
                sys::cudnnCreateConvolutionDescriptor(&mut d.conv),
            )?;
            check(
                "cudnnSetTensor4dDescriptor(x)",
                sys::cudnnSetTensor4dDescriptor(
                    d.x,
                    format,
                    dtype,
                    int(p.n()),
                    int(p.c()),
                    int(ih),
                    int(iw),
                ),
            )?;
            check(
                "cudnnSetTensor4dDescriptor(y)",
                sys::cudnnSetTensor4dDescriptor(
                    d.y,
                    format,
                    dtype,
                    int(p.n()),
                    int(p.k()),
                    int(oh),
                    int(ow),
                ),
            )?;
            check(
                "cudnnSetFilter4dDescriptor",
                sys::cudnnSetFilter4dDescriptor(
                    d.w,
                    dtype,
                    format,
                    int(p.k()),
                    int(p.c() / p.groups()),
                    int(fh),
                    int(fw),
                ),
            )?;
            check(
                "cudnnSetConvolution2dDescriptor",
                sys::cudnnSetConvolution2dDescriptor(
                    d.conv,
                    int(ph),
                    int(pw),
                    int(sh),
                    int(sw),
                    int(dh),
                    int(dw),
                    sys::cudnnConvolutionMode_t::CUDNN_CROSS_CORRELATION,
                    sys::cudnnDataType_t::CUDNN_DATA_FLOAT,
                ),
            )?;
            check(
                "cudnnSetConvolutionGroupCount",
                sys::cudnnSetConvolutionGroupCount(d.conv, int(p.groups())),
            )?;
            check(
                "cudnnSetConvolutionMathType",
                sys::cudnnSetConvolutionMathType(d.conv, math),
            )?;
        }
        const ALGOS: usize = 16;
        // SAFETY: a plain C struct of enums, floats and integers; zero is a valid bit pattern
        // for every field (each enum has a zero variant).
        let mut perf: [sys::cudnnConvolutionFwdAlgoPerf_t; ALGOS] = unsafe { std::mem::zeroed() };
        let mut returned = 0;
        // SAFETY: buffers are device allocations of at least the problem's sizes (checked by
        // the caller); `perf` holds ALGOS entries, as passed.
        check("cudnnFindConvolutionForwardAlgorithmEx", unsafe {
            sys::cudnnFindConvolutionForwardAlgorithmEx(
                cudnn.handle,
                d.x,
                x as *const c_void,
                d.w,
                w as *const c_void,
                d.conv,
                d.y,
                y as *mut c_void,
                ALGOS as i32,
                &mut returned,
                perf.as_mut_ptr(),
                workspace as *mut c_void,
                workspace_limit,
            )
        })?;
        // cuDNN returns the algorithms sorted by time; take the first that ran.
        let best = perf[..returned.clamp(0, ALGOS as i32) as usize]
            .iter()
            .find(|r| {
                r.status == sys::cudnnStatus_t::CUDNN_STATUS_SUCCESS && r.memory <= workspace_limit
            })
            .ok_or_else(|| unsupported("no cuDNN algorithm ran within the workspace limit"))?;
        d.algo = best.algo;
        d.workspace = best.memory;
        d.algorithm = format!("{:?}", best.algo)
            .trim_start_matches("CUDNN_CONVOLUTION_FWD_ALGO_")
            .to_string();
        if best.mathType == sys::cudnnMathType_t::CUDNN_TENSOR_OP_MATH {
            d.algorithm.push_str(" (tensor cores)");
        }
        Ok(d)
    }

    /// Enqueues `y = conv(x, w)` on the default stream.
    pub fn run(&self, x: u64, w: u64, y: u64, workspace: u64) -> Result<(), CudnnError> {
        let (alpha, beta) = (1.0f32, 0.0f32);
        // SAFETY: descriptors are live; buffers are device allocations sized by the caller;
        // alpha/beta are f32 as cuDNN requires for FLOAT and HALF problems.
        check("cudnnConvolutionForward", unsafe {
            sys::cudnnConvolutionForward(
                self.cudnn.handle,
                (&alpha as *const f32).cast(),
                self.x,
                x as *const c_void,
                self.w,
                w as *const c_void,
                self.conv,
                self.algo,
                workspace as *mut c_void,
                self.workspace,
                (&beta as *const f32).cast(),
                self.y,
                y as *mut c_void,
            )
        })
    }
}
