//! Running and checking kiln on a device, for boot checks, demos and measurements (feature
//! `harness`; an application that only resolves and runs does not need it): a CPU reference in
//! f64, checked runs, event timing, ResNet-50's conv layers and the cold-start measurement.

pub mod coldstart;
pub mod epilogue;
pub mod net;
pub mod networks;
pub mod npy;
pub mod ops;
pub mod output;
pub mod problem_list;
pub mod selftest;
pub mod timing;
pub mod verify;
