//! One conformance suite for every backend (as IREE's HAL CTS): memory (alloc, upload,
//! download, fill, size checks), module load and launch of the naive kernel checked against
//! the CPU reference, events, owned streams, graph capture and replay, zeroing on a stream,
//! and refusal of a code object built for another device. Each
//! compiled-in backend runs it on its first device; a backend with no runtime or device here
//! must say so with an error (never a panic), and the suite reports it as not run.
//!
//! On the H100 (`ci/on-device.sh`) the CUDA instance runs; no AMD GPU exists here, so the HIP
//! instance is compiled and exercises only its no-device path.

use kiln::backend::{Device, Stream};
use kiln::context::Context;
use kiln::harness::verify::{download, random_values, reference, relative_error, upload};
use kiln::resolve::Variant;
use kiln::{ConvProblem, ConvSpec, DataType};

fn memory(dev: &Device) {
    let b = dev.alloc(4096).unwrap();
    assert_eq!(b.bytes(), 4096);
    let data: Vec<u8> = (0..4096u32).map(|i| (i * 7) as u8).collect();
    b.upload(&data).unwrap();
    let mut back = vec![0u8; 4096];
    b.download(&mut back).unwrap();
    assert_eq!(back, data);
    b.fill(0xA5).unwrap();
    dev.synchronize().unwrap();
    b.download(&mut back).unwrap();
    assert!(back.iter().all(|&x| x == 0xA5));
    // Sizes are checked before the driver is called.
    let e = b.upload(&vec![0u8; 4097]).unwrap_err();
    assert!(e.message.contains("do not fit a 4096 B buffer"), "{e}");
    let mut big = vec![0u8; 8192];
    assert!(b.download(&mut big).is_err());
    // Freed on drop, many times over: a leak would exhaust nothing here but is caught by
    // compute-sanitizer's leak check in ci/on-device.sh.
    for _ in 0..64 {
        drop(dev.alloc(1 << 20).unwrap());
    }
}

fn launch(dev: &Device) {
    let ctx = Context::new(dev.clone()).unwrap();
    let p = ConvProblem::new(ConvSpec {
        n: 2,
        c: 8,
        k: 16,
        input: [1, 11, 9],
        filter: [1, 3, 3],
        pad: [0, 1, 1],
        ..ConvSpec::default()
    })
    .unwrap();
    let v = Variant {
        solver: kiln::solvers::by_id(kiln::solvers::REFERENCE_SOLVER).unwrap(),
        params: "",
    };
    let [xn, wn, _] = p.element_counts();
    let (x, xv) = upload(dev, DataType::Fp32, &random_values(xn as usize, 3)).unwrap();
    let (w, wv) = upload(dev, DataType::Fp32, &random_values(wn as usize, 4)).unwrap();
    let y = dev.alloc(p.byte_counts()[2]).unwrap();
    let inv = ctx.prepare(&p, &v).unwrap();
    let stream = Stream::default();
    let start = dev.record_event(&stream).unwrap();
    ctx.run(&inv, &x, &w, &y, None, &stream).unwrap();
    let end = dev.record_event(&stream).unwrap();
    let ms = start.elapsed_ms(&end).unwrap();
    assert!((0.0..1000.0).contains(&ms), "{ms}");
    let got = download(&y, DataType::Fp32).unwrap();
    assert!(relative_error(&got, &reference(&p, &xv, &wv)) < 1e-5);
    // The same launch captured into a graph on a stream kiln owns, replayed: same result.
    // Backends without graph capture (HIP here) must refuse it with a named error.
    let own = dev.create_stream().unwrap();
    y.fill(0xFF).unwrap();
    match dev.capture(&own, |s| ctx.run(&inv, &x, &w, &y, None, s)) {
        Ok(graph) => {
            graph.launch(&own).unwrap();
            graph.launch(&own).unwrap();
            assert_eq!(download(&y, DataType::Fp32).unwrap(), got);
        }
        Err(kiln::RunError::Backend(e)) => assert_eq!(e.call, "begin_capture", "{e}"),
        Err(e) => panic!("{e}"),
    }
    // Zeroing on a stream (split-K semaphores): exactly the words asked for.
    let b = dev.alloc(64).unwrap();
    b.fill(0xFF).unwrap();
    dev.zero_async(&b, 8, 4, &own).unwrap();
    dev.synchronize().unwrap();
    let mut back = [0u8; 64];
    b.download(&mut back).unwrap();
    assert!(back[..8].iter().all(|&v| v == 0xFF));
    assert!(back[8..24].iter().all(|&v| v == 0) && back[24..].iter().all(|&v| v == 0xFF));
    assert!(dev.zero_async(&b, 4, 16, &own).is_err());
    assert!(dev.zero_async(&b, 2, 1, &own).is_err());
}

fn foreign_object(dev: &Device) {
    // A code object of the other vendor's first embedded target.
    let theirs = kiln::targets()
        .iter()
        .find(|t| t.kdb.is_some() && !dev.info().arch.starts_with(&t.arch[..2]))
        .expect("a target of another vendor is embedded");
    let rec = theirs.kdb.unwrap().record(0).unwrap();
    let obj = kiln::format::records::kdb_payload(rec.payload)
        .unwrap()
        .object;
    let e = kiln::codeobject::check_for_device(obj, &dev.info().arch).unwrap_err();
    assert!(e.to_string().contains(&dev.info().arch), "{e}");
}

/// Runs the suite on `scheme`'s first device, or checks that its absence is a clean error.
fn conformance(scheme: &str) {
    let Some(entry) = kiln::backend::BACKENDS.iter().find(|b| b.scheme == scheme) else {
        panic!("backend {scheme} is not compiled in");
    };
    match (entry.open)(":0") {
        Ok(dev) => {
            assert_eq!(dev.info().spec, format!("{scheme}:0"));
            memory(&dev);
            launch(&dev);
            foreign_object(&dev);
            println!("{scheme}: conformance suite passed on {}", dev.info().name);
        }
        Err(e) => {
            assert!(!e.message.is_empty());
            // No device: listing says so the same way.
            assert!((entry.list)().map_or(true, |d| d.is_empty()));
            println!("{scheme}: not run here: {e}");
        }
    }
}

#[test]
fn cuda_conforms() {
    conformance("cuda");
}

#[test]
fn hip_conforms() {
    conformance("hip");
}
