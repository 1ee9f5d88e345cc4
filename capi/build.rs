//! The shared library's soname: programs link `-lkiln` and load `libkiln.so.0` at run time
//! (`ci/capi.sh` stages it under that name).
fn main() {
    println!("cargo:rustc-cdylib-link-arg=-Wl,-soname,libkiln.so.0");
}
