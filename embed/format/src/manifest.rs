//! The kernel manifest (`kernels/manifest.toml`) as both sides see it, and MIOpen's kdb key
//! rule. `kiln-embed` reads the TOML into its owned form and compiles each variant under the
//! key [`kdb_key`] gives; the runtime finds the same code object under the same key. One
//! function writes the key, so the two sides cannot drift.

use core::fmt;

/// One solver of the manifest, as compiled into the binary.
#[derive(Debug)]
pub struct SolverEntry {
    /// kiln's solver id (the find-db / perf-db solver name).
    pub id: &'static str,
    /// MIOpen algorithm name.
    pub algorithm: &'static str,
    /// Kernel source file (`kernel_name` = this + `.o`).
    pub source: &'static str,
    /// Kernel entry points, launched in this order.
    pub functions: &'static [&'static str],
    /// Compile-option template (`{0}`, `{1}` ... = perf-config values).
    pub options: &'static str,
    /// Precompiled perf configs.
    pub params: &'static [&'static str],
    /// Archs the solver is built for; empty = every arch.
    pub archs: &'static [&'static str],
    /// Data types the solver is built for; empty = the manifest's list.
    pub data_types: &'static [&'static str],
    /// How many trailing perf-config values are run-time parameters (split-K): they select
    /// how the code object is launched, not which code object, so they stay out of the kdb key.
    pub runtime_values: usize,
    /// `""` for kiln's own kernels; `"cutlass"` for kernels built from the pinned CUTLASS
    /// headers (NVRTC -> PTX -> unreferenced globals stripped -> ptxas).
    pub library: &'static str,
    /// Entry point run once at prepare time to build the kernel's parameter block (`""`: the
    /// kernels take kiln's `(x, w, y, KilnConvArgs)`).
    pub builder: &'static str,
    /// Math mode: `""` (the data type's own accuracy) or `"tf32"` (FP32 data through one TF32
    /// product: chosen only when the caller opts in, never silently).
    pub math: &'static str,
}

impl SolverEntry {
    /// The math mode the entry's `math` names: TF32 solvers run only problems that opt in.
    pub fn math_mode(&self) -> crate::MathMode {
        if self.math == "tf32" {
            crate::MathMode::AllowTf32
        } else {
            crate::MathMode::Default
        }
    }

    /// Whether the manifest builds this solver for `arch` (`sm_90`, `gfx942`).
    pub fn builds_for(&self, arch: &str) -> bool {
        builds_for(self.archs, arch)
    }

    /// The kdb key of this solver's variant (`data_type`, perf config `params`) on `arch`.
    pub fn kdb_key(
        &self,
        data_type: &str,
        params: &str,
        arch: &str,
    ) -> Result<(String, String), KeyRuleError> {
        kdb_key(
            self.source,
            self.options,
            data_type,
            compiled_part(params, self.runtime_values),
            arch,
        )
    }

    /// Whether the solver is built for `data_type` (one of the manifest-wide data types).
    pub fn builds_type(&self, data_type: &str) -> bool {
        self.data_types.is_empty() || self.data_types.contains(&data_type)
    }
}

/// The part of perf config `params` that selects the code object: all but the last
/// `runtime_values` comma-separated values.
pub fn compiled_part(params: &str, runtime_values: usize) -> &str {
    let mut end = params.len();
    for _ in 0..runtime_values {
        match params[..end].rfind(',') {
            Some(i) => end = i,
            None => return "",
        }
    }
    &params[..end]
}

/// Whether an `archs` list admits `arch` (an empty list admits every arch).
pub fn builds_for<S: AsRef<str>>(archs: &[S], arch: &str) -> bool {
    archs.is_empty() || archs.iter().any(|a| a.as_ref() == arch)
}

/// Why a perf config cannot be turned into compile options.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum KeyRuleError {
    /// A value holds something other than ASCII letters, digits and `_`.
    NotAToken(String),
    /// The template has no `{i}` for value `i`.
    MissingSlot(usize),
    /// The template keeps a `{..}` after substitution (fewer values than slots).
    UnfilledSlot,
}

impl fmt::Display for KeyRuleError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            KeyRuleError::NotAToken(v) => write!(f, "value '{v}' is not a plain token"),
            KeyRuleError::MissingSlot(i) => write!(f, "template has no {{{i}}}"),
            KeyRuleError::UnfilledSlot => write!(f, "template has slots left after substitution"),
        }
    }
}

impl std::error::Error for KeyRuleError {}

/// The compile options of one variant: `-DKILN_DTYPE_<type>`, then the solver's template with
/// the perf config's values substituted (`params` is comma-separated; `""` for none).
pub fn compile_options(
    template: &str,
    data_type: &str,
    params: &str,
) -> Result<String, KeyRuleError> {
    let mut opts = template.to_string();
    if !params.is_empty() {
        for (i, v) in params.split(',').enumerate() {
            if v.is_empty() || !v.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_') {
                return Err(KeyRuleError::NotAToken(v.to_string()));
            }
            let slot = format!("{{{i}}}");
            if !opts.contains(&slot) {
                return Err(KeyRuleError::MissingSlot(i));
            }
            opts = opts.replace(&slot, v);
        }
    }
    if opts.contains('{') {
        return Err(KeyRuleError::UnfilledSlot);
    }
    let mut out = format!("-DKILN_DTYPE_{data_type}");
    if !opts.is_empty() {
        out.push(' ');
        out.push_str(&opts);
    }
    Ok(out)
}

/// MIOpen's `kernel_name` of a source file: the file name plus `.o`.
pub fn kernel_name(source_file: &str) -> String {
    format!("{source_file}.o")
}

/// MIOpen's `kernel_args` for compile options on an arch: a space and the options (when there
/// are any), then ` -mcpu=<arch>`, as MIOpen's logs and kdbs write them.
pub fn kernel_args(compile_options: &str, arch: &str) -> String {
    if compile_options.is_empty() {
        format!(" -mcpu={arch}")
    } else {
        format!(" {compile_options} -mcpu={arch}")
    }
}

/// The kdb key (`kernel_name`, `kernel_args`) of a solver variant on `arch`.
pub fn kdb_key(
    source: &str,
    template: &str,
    data_type: &str,
    params: &str,
    arch: &str,
) -> Result<(String, String), KeyRuleError> {
    let opts = compile_options(template, data_type, params)?;
    Ok((kernel_name(source), kernel_args(&opts, arch)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn runtime_values_stay_out_of_the_key() {
        assert_eq!(compiled_part("128,64,32,4", 1), "128,64,32");
        assert_eq!(compiled_part("128,64,32,4", 0), "128,64,32,4");
        assert_eq!(compiled_part("4", 1), "");
        assert_eq!(compiled_part("1,2", 3), "");
    }

    #[test]
    fn the_key_rule_substitutes_validates_and_appends_the_arch() {
        let t = "-DKILN_BM={0} -DKILN_BN={1}";
        assert_eq!(
            kdb_key("conv_igemm.cpp", t, "FP16", "64,32", "sm_90").unwrap(),
            (
                "conv_igemm.cpp.o".to_string(),
                " -DKILN_DTYPE_FP16 -DKILN_BM=64 -DKILN_BN=32 -mcpu=sm_90".to_string()
            )
        );
        assert_eq!(
            kdb_key("conv_naive.cpp", "", "FP32", "", "gfx90a")
                .unwrap()
                .1,
            " -DKILN_DTYPE_FP32 -mcpu=gfx90a"
        );
        assert_eq!(
            compile_options(t, "FP32", "64"),
            Err(KeyRuleError::UnfilledSlot)
        );
        assert_eq!(
            compile_options(t, "FP32", "64,32,8"),
            Err(KeyRuleError::MissingSlot(2))
        );
        assert_eq!(
            compile_options(t, "FP32", "64,3 -DX"),
            Err(KeyRuleError::NotAToken("3 -DX".into()))
        );
    }

    #[test]
    fn arch_lists_gate_builds() {
        assert!(builds_for::<&str>(&[], "gfx900"));
        assert!(builds_for(&["sm_80", "sm_90"], "sm_90"));
        assert!(!builds_for(&["sm_80", "sm_90"], "gfx942"));
    }
}
