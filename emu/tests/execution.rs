//! The executor on its own, below kiln's context: one embedded kernel (the naive convolution,
//! FP32, gfx90a) launched by hand, its output checked element by element, and the ways a run
//! can go wrong each reported with the kernel, pc and cause: a store past an allocation, an
//! instruction the executor does not model, a loop that never ends, a wave size the
//! architecture lacks, arguments that do not fit the kernel.

use kiln::format::abi::{Epilogue, KernelArgs};
use kiln::format::{ConvProblem, ConvSpec};
use kiln_emu::code_object::CodeObject;
use kiln_emu::launch::{pack_kernargs, run, Dispatch};
use kiln_emu::memory::Memory;
use kiln_emu::program::Program;
use kiln_emu::Error;

/// The naive FP32 convolution object of target `base`.
fn naive_object(base: &str) -> Vec<u8> {
    let kdb = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join(format!("../targets/{base}/{base}.kdb"));
    let db = kiln_embed::kdb::KernelDb::read(&kdb).unwrap();
    db.entries
        .into_iter()
        .find(|e| e.kernel_name == "conv_naive.cpp.o" && e.kernel_args.contains("FP32"))
        .unwrap()
        .object
}

fn bytes_of<T>(v: &T) -> &[u8] {
    // SAFETY: T is a plain #[repr(C)] struct of 32-bit fields (no padding).
    unsafe { std::slice::from_raw_parts(v as *const T as *const u8, std::mem::size_of::<T>()) }
}

/// 1 image, 2 channels in, 3 out, 5x4 pixels, 3x3 filter, padding 1 (NCHW FP32).
fn problem() -> ConvProblem {
    ConvProblem::new(ConvSpec {
        n: 1,
        c: 2,
        k: 3,
        input: [1, 5, 4],
        filter: [1, 3, 3],
        pad: [0, 1, 1],
        ..ConvSpec::default()
    })
    .unwrap()
}

/// Runs the naive kernel of `object` on `problem()` with room for its 60 outputs, without
/// checking them: the run's error, if any.
fn run_naive_unchecked(object: &[u8], limit: u64) -> Result<(), Error> {
    launch_naive(object, 60, limit).map(|_| ())
}

/// Runs the naive kernel of `object` on `problem()` with y holding `y_elements` floats (at
/// least the 60 outputs for a good run), checking them against the CPU reference; returns y or
/// the error.
fn run_naive(object: &[u8], y_elements: usize, limit: u64) -> Result<Vec<f32>, Error> {
    let (y, x, w) = launch_naive(object, y_elements, limit)?;
    check_naive(&y, &x, &w, y_elements);
    Ok(y)
}

/// Launches the naive kernel of `object`: y, x and w.
#[allow(clippy::type_complexity)]
fn launch_naive(
    object: &[u8],
    y_elements: usize,
    limit: u64,
) -> Result<(Vec<f32>, Vec<f32>, Vec<f32>), Error> {
    let p = problem();
    let program = Program::load(&CodeObject::parse(object)?, "conv_naive_fwd")?;
    let mut mem = Memory::new(1 << 24);
    let x: Vec<f32> = (0..40).map(|i| (i % 7) as f32 - 3.0).collect();
    let w: Vec<f32> = (0..54).map(|i| (i % 5) as f32 * 0.5 - 1.0).collect();
    let put = |mem: &mut Memory, v: &[f32]| {
        let a = mem.alloc(4 * v.len()).unwrap();
        let b: Vec<u8> = v.iter().flat_map(|f| f.to_le_bytes()).collect();
        mem.write(a, &b).unwrap();
        a
    };
    let (xa, wa) = (put(&mut mem, &x), put(&mut mem, &w));
    let ya = mem.alloc(4 * y_elements).unwrap();
    let args = KernelArgs::of(&p).unwrap();
    let epilogue = Epilogue::plain(&p);
    let values: [&[u8]; 5] = [
        &xa.to_le_bytes(),
        &wa.to_le_bytes(),
        &ya.to_le_bytes(),
        bytes_of(&args),
        bytes_of(&epilogue),
    ];
    let kernarg = pack_kernargs(&program.meta, &values)?;
    run(
        &mut mem,
        &Dispatch {
            program: &program,
            grid: [1, 1, 1],
            block: [256, 1, 1],
            dynamic_lds: 0,
            kernarg: &kernarg,
        },
        limit,
    )?;
    let mut raw = vec![0u8; 4 * y_elements];
    mem.read(ya, &mut raw)?;
    let y: Vec<f32> = raw
        .chunks_exact(4)
        .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect();
    Ok((y, x, w))
}

/// Checks the naive kernel's outputs against the CPU reference, straight from the definition.
fn check_naive(y: &[f32], x: &[f32], w: &[f32], y_elements: usize) {
    let mut want = vec![0f32; 60];
    for k in 0..3 {
        for oy in 0..5i32 {
            for ox in 0..4i32 {
                let mut s = 0f32;
                for c in 0..2 {
                    for fy in 0..3i32 {
                        for fx in 0..3i32 {
                            let (iy, ix) = (oy + fy - 1, ox + fx - 1);
                            if (0..5).contains(&iy) && (0..4).contains(&ix) {
                                s += x[(c * 20 + iy * 4 + ix) as usize]
                                    * w[(k * 18 + c * 9 + fy * 3 + fx) as usize];
                            }
                        }
                    }
                }
                want[(k * 20 + oy * 4 + ox) as usize] = s;
            }
        }
    }
    if y_elements >= 60 {
        assert_eq!(&y[..60], &want[..], "the emulated kernel's output");
    }
}

#[test]
fn a_kernel_launched_by_hand_computes_the_convolution() {
    for base in ["gfx900_56", "gfx90a68", "gfx942130"] {
        run_naive(&naive_object(base), 60, 1 << 24).unwrap();
    }
}

#[test]
fn a_store_past_the_output_names_kernel_pc_and_address() {
    let e = run_naive(&naive_object("gfx90a68"), 59, 1 << 24).unwrap_err();
    let text = e.to_string();
    assert!(matches!(e, Error::Fault(_)), "{text}");
    for want in ["conv_naive_fwd", "pc 0x", "store of 4 B at 0x"] {
        assert!(text.contains(want), "{want:?} missing from: {text}");
    }
}

/// The naive kernel with its first instruction replaced by `word`.
fn with_first_instruction(word: u32) -> Vec<u8> {
    with_first_words(&[word])
}

/// The naive gfx90a kernel with its first dwords replaced by `words`.
fn with_first_words(words: &[u32]) -> Vec<u8> {
    let mut obj = naive_object("gfx90a68");
    let parsed = CodeObject::parse(&obj).unwrap();
    let k = &parsed.kernels[0];
    let at = (parsed.text_file_offset + k.entry - parsed.text_addr) as usize;
    for (i, w) in words.iter().enumerate() {
        obj[at + 4 * i..at + 4 * i + 4].copy_from_slice(&w.to_le_bytes());
    }
    obj
}

#[test]
fn operands_at_the_edges_of_the_register_files_are_errors() {
    for (words, want) in [
        // v_mov_b32_sdwa with the reserved destination select 7.
        (
            vec![0x7e00_02f9, 0x0000_0700],
            "reserved SDWA destination select",
        ),
        // s_load_dwordx16 s[120:135], s[4:5], 0: trap registers and past s127.
        (vec![0xc012_1e02, 0x0000_0000], "scalar destination field"),
        // buffer_load_dword v0, off, s[124:127], 0: a descriptor of m0, null and exec.
        (vec![0xe050_0000, 0x801f_0000], ""),
        // v_mov_b32 v200, v0: past the descriptor's VGPRs.
        (vec![0x7f90_0300], "VGPRs the kernel descriptor allocates"),
    ] {
        let result =
            std::panic::catch_unwind(|| run_naive_unchecked(&with_first_words(&words), 100_000));
        let Ok(result) = result else {
            panic!("{words:x?} panicked the executor");
        };
        let e = result.expect_err(&format!("{words:x?} ran"));
        assert!(e.to_string().contains(want), "{words:x?}: {e}");
    }
}

#[test]
fn an_instruction_outside_the_model_names_itself_and_its_pc() {
    // s_sethalt 0 (SOPP opcode 13): a real gfx9 instruction no kiln kernel uses.
    let e = run_naive(&with_first_instruction(0xbf8d_0000), 60, 1 << 24).unwrap_err();
    let text = e.to_string();
    assert!(matches!(e, Error::Unsupported(_)), "{text}");
    assert!(
        text.contains("s_sethalt") && text.contains("pc 0x"),
        "{text}"
    );
}

#[test]
fn a_loop_that_never_ends_stops_at_the_instruction_limit() {
    // s_branch -1: a branch to itself.
    let e = run_naive(&with_first_instruction(0xbf82_ffff), 60, 100_000).unwrap_err();
    assert!(e.to_string().contains("limit of 100000"), "{e}");
}

#[test]
fn wave32_on_gfx9_and_wrong_arguments_are_refused() {
    let mut obj = naive_object("gfx90a68");
    let parsed = CodeObject::parse(&obj).unwrap();
    obj[parsed.kernels[0].descriptor_file_offset as usize + 57] |= 1 << 2;
    let e = run_naive(&obj, 60, 1 << 24).unwrap_err();
    assert!(e.to_string().contains("wave32"), "{e}");

    let program = Program::load(
        &CodeObject::parse(&naive_object("gfx90a68")).unwrap(),
        "conv_naive_fwd",
    )
    .unwrap();
    let e = pack_kernargs(&program.meta, &[&[0u8; 8]]).unwrap_err();
    assert!(
        e.to_string().contains("1 arguments given, it takes 5"),
        "{e}"
    );
    let short: [&[u8]; 5] = [&[0; 8], &[0; 8], &[0; 8], &[0; 95], &[0; 48]];
    let e = pack_kernargs(&program.meta, &short).unwrap_err();
    assert!(e.to_string().contains("95 bytes given, it takes 96"), "{e}");
}

/// Mutated code: every error path of the executor, reached by flipping bits of a real
/// kernel's instructions, reports an error or runs; none panics.
#[test]
fn mutated_kernels_fail_cleanly_never_panic() {
    let mut seed = 0x2545_f491_4f6c_dd1du64;
    let mut next = || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed
    };
    let mut outcomes = [0usize; 2];
    for base in ["gfx90a68", "gfx1100_48"] {
        let good = naive_object(base);
        let parsed = CodeObject::parse(&good).unwrap();
        let k = &parsed.kernels[0];
        let text = (parsed.text_file_offset + k.entry - parsed.text_addr) as usize;
        for _ in 0..300 {
            let mut obj = good.clone();
            // One to four random dwords of the kernel's code, each with random bits flipped.
            for _ in 0..1 + next() % 4 {
                let at = text + 4 * (next() % (k.code_size / 4)) as usize;
                let flip = (next() as u32).to_le_bytes();
                for (b, f) in obj[at..at + 4].iter_mut().zip(flip) {
                    *b ^= f;
                }
            }
            let result = std::panic::catch_unwind(|| run_naive_unchecked(&obj, 100_000));
            let Ok(result) = result else {
                panic!("a mutated {base} kernel panicked the executor");
            };
            outcomes[usize::from(result.is_err())] += 1;
        }
    }
    // Most mutations break the kernel; some land in unused bits or dead code.
    assert!(outcomes[1] > 100, "{outcomes:?}");
}
