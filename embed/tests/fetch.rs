//! Fetching pinned target files from a real HTTP server on loopback.

use std::io::{BufRead, BufReader, Write};
use std::net::TcpListener;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use kiln_embed::fetch::{obtain, obtain_bytes, FetchOptions, Source};
use kiln_embed::Error;

/// A tiny HTTP/1.1 server: serves `files` by name, 404 otherwise; counts requests. It stops
/// by itself after `max_requests`.
fn serve(files: Vec<(&'static str, Vec<u8>)>, max_requests: usize) -> (String, Arc<AtomicUsize>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let count = Arc::new(AtomicUsize::new(0));
    let seen = count.clone();
    std::thread::spawn(move || {
        for stream in listener.incoming().take(max_requests) {
            let Ok(mut stream) = stream else { continue };
            let mut reader = BufReader::new(stream.try_clone().unwrap());
            let mut request = String::new();
            reader.read_line(&mut request).unwrap();
            loop {
                let mut h = String::new();
                if reader.read_line(&mut h).unwrap() == 0 || h == "\r\n" {
                    break;
                }
            }
            seen.fetch_add(1, Ordering::SeqCst);
            let path = request
                .split(' ')
                .nth(1)
                .unwrap_or("/")
                .trim_start_matches('/')
                .to_string();
            match files.iter().find(|(n, _)| *n == path) {
                Some((_, body)) => {
                    write!(
                        stream,
                        "HTTP/1.1 200 OK\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
                        body.len()
                    )
                    .unwrap();
                    stream.write_all(body).unwrap();
                }
                None => {
                    stream.write_all(b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n").unwrap();
                }
            }
        }
    });
    (base, count)
}

fn sha(b: &[u8]) -> String {
    kiln_embed::kdb::hex(&<sha2::Sha256 as sha2::Digest>::digest(b))
}

#[test]
fn fetches_verifies_caches_and_works_offline() {
    let body =
        b"1-1-1-1x1-1-1-1-1-0x0-1x1-1x1-0-NCHW-FP32-F=S:0.1,0,miopenConvolutionFwdAlgoDirect\n"
            .to_vec();
    let pin = sha(&body);
    let (base, count) = serve(vec![("t.HIP.fdb.txt", body.clone())], 16);
    let cache = tempfile::tempdir().unwrap();
    let opts = FetchOptions {
        cache_dir: cache.path().to_path_buf(),
        offline: false,
    };
    let src = Source::parse(&base);

    let private = cache.path().join("private");
    let path = obtain(&src, "t.HIP.fdb.txt", &pin, &opts, &private).unwrap();
    assert!(
        path.starts_with(&private),
        "the parsed copy is the build's own"
    );
    assert_eq!(std::fs::read(&path).unwrap(), body);
    assert_eq!(count.load(Ordering::SeqCst), 1);

    // Second time: served from the content-addressed cache, no request.
    assert_eq!(
        obtain_bytes(&src, "t.HIP.fdb.txt", &pin, &opts).unwrap(),
        body
    );
    assert_eq!(count.load(Ordering::SeqCst), 1);

    // Offline with the cached copy works; offline without one fails clearly.
    let offline = FetchOptions {
        offline: true,
        ..opts.clone()
    };
    obtain_bytes(&src, "t.HIP.fdb.txt", &pin, &offline).unwrap();
    let other = sha(b"something else");
    let e = obtain_bytes(&src, "t.HIP.fdb.txt", &other, &offline)
        .unwrap_err()
        .to_string();
    assert!(e.contains("offline and no cached copy"), "{e}");
    assert_eq!(count.load(Ordering::SeqCst), 1);
}

#[test]
fn wrong_pin_and_missing_file_fail_clearly() {
    let (base, _count) = serve(vec![("t.db.txt", b"tampered".to_vec())], 16);
    let cache = tempfile::tempdir().unwrap();
    let opts = FetchOptions {
        cache_dir: cache.path().to_path_buf(),
        offline: false,
    };
    let src = Source::parse(&base);
    let pin = sha(b"the real content");
    match obtain_bytes(&src, "t.db.txt", &pin, &opts) {
        Err(Error::PinMismatch {
            file,
            expected,
            actual,
            ..
        }) => {
            assert_eq!(file, "t.db.txt");
            assert_eq!(expected, pin);
            assert_eq!(actual, sha(b"tampered"));
        }
        other => panic!("expected a pin mismatch, got {other:?}"),
    }
    // Nothing unverified lands in the cache.
    assert_eq!(
        std::fs::read_dir(cache.path())
            .map(|d| d.count())
            .unwrap_or(0),
        0
    );
    let e = obtain_bytes(&src, "absent.kdb", &pin, &opts)
        .unwrap_err()
        .to_string();
    assert!(e.contains("404"), "{e}");
}

#[test]
fn directory_source_is_pinned_too() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("a.kdb"), b"abc").unwrap();
    let opts = FetchOptions {
        cache_dir: dir.path().join("cache"),
        offline: true,
    };
    let src = Source::Dir(dir.path().to_path_buf());
    obtain_bytes(&src, "a.kdb", &sha(b"abc"), &opts).unwrap();
    let e = obtain_bytes(&src, "a.kdb", &sha(b"abd"), &opts)
        .unwrap_err()
        .to_string();
    assert!(e.contains("does not match the pin"), "{e}");
}

/// A server that answers every request with `head` (status line and headers, `{self}`
/// replaced by its own base URL) and no body.
fn answer_with(head: String, max_requests: usize) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let head = head.replace("{self}", &base);
    std::thread::spawn(move || {
        for stream in listener.incoming().take(max_requests) {
            let Ok(mut stream) = stream else { continue };
            let mut reader = BufReader::new(stream.try_clone().unwrap());
            let mut line = String::new();
            while reader.read_line(&mut line).is_ok_and(|n| n > 0) && line != "\r\n" {
                line.clear();
            }
            let _ = stream.write_all(head.as_bytes());
        }
    });
    base
}

#[test]
fn oversized_downloads_and_redirect_loops_are_refused() {
    let cache = tempfile::tempdir().unwrap();
    let opts = FetchOptions {
        cache_dir: cache.path().to_path_buf(),
        offline: false,
    };
    // A server announcing 64 GiB: refused before anything is read.
    let base = answer_with(
        "HTTP/1.1 200 OK\r\nContent-Length: 68719476736\r\nConnection: close\r\n\r\n".into(),
        4,
    );
    let e = obtain_bytes(&Source::parse(&base), "big.kdb", &sha(b"x"), &opts)
        .unwrap_err()
        .to_string();
    assert!(e.contains("above the 128 MiB cap"), "{e}");
    // A server redirecting to itself forever: stopped after 5 hops.
    let base = answer_with(
        "HTTP/1.1 302 Found\r\nLocation: {self}/loop\r\nContent-Length: 0\r\nConnection: close\r\n\r\n".into(),
        16,
    );
    let e = obtain_bytes(&Source::parse(&base), "a.kdb", &sha(b"x"), &opts).unwrap_err();
    let chain = format!("{e} {:?}", std::error::Error::source(&e));
    assert!(chain.contains("redirect"), "{chain}");
}
