//! Getting a target's files: from its folder in the repo, or from a directory or URL given at
//! build time (like MIOpen's `MIOPEN_BINCACHE_PATH`). Every file is checked against the sha256
//! pin kept in the repo; downloads land in a content-addressed cache, so a pinned file is
//! fetched once and offline builds work from the cache.
//!
//! The bytes that were hashed are the bytes that are used: each file is read once (under the
//! input cap), hashed, and handed on as a private copy under the build's own directory, so a
//! file changed between the check and the parse cannot slip through. Downloads keep to
//! https once they start there (no redirect to http), and are capped in size.

use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

use crate::error::{Error, Result};
use crate::kdb::hex;

/// Where a target's files come from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Source {
    /// A local directory holding the files by name.
    Dir(PathBuf),
    /// A base URL; a file is fetched from `<url>/<file>`.
    Url(String),
}

impl Source {
    /// Parses a `KILN_DB_SOURCE` value: `http://` or `https://` URL, else a directory.
    pub fn parse(value: &str) -> Source {
        if value.starts_with("http://") || value.starts_with("https://") {
            Source::Url(value.trim_end_matches('/').to_string())
        } else {
            Source::Dir(PathBuf::from(value))
        }
    }

    fn describe(&self, file: &str) -> String {
        match self {
            Source::Dir(d) => d.join(file).display().to_string(),
            Source::Url(u) => format!("{u}/{file}"),
        }
    }
}

/// sha256 of a file, lowercase hex.
pub fn sha256_file(path: &Path) -> Result<String> {
    let bytes = crate::input::read_input(path)?;
    Ok(hex(&Sha256::digest(&bytes)))
}

/// `bytes` if they hash to `pin`, else the mismatch naming both digests.
fn checked(bytes: Vec<u8>, file: &str, origin: &str, pin: &str) -> Result<Vec<u8>> {
    let actual = hex(&Sha256::digest(&bytes));
    if actual != pin {
        return Err(Error::PinMismatch {
            file: file.to_string(),
            origin: origin.to_string(),
            expected: pin.to_string(),
            actual,
        });
    }
    Ok(bytes)
}

/// Largest file a download may deliver.
pub const MAX_DOWNLOAD_BYTES: u64 = crate::input::MAX_INPUT_BYTES;

/// Writes the verified bytes to `<private_dir>/<pin>-<file>` (once) and returns that path:
/// what the parsers read is exactly what was hashed.
fn private_copy(bytes: &[u8], file: &str, pin: &str, private_dir: &Path) -> Result<PathBuf> {
    std::fs::create_dir_all(private_dir).map_err(|e| Error::io(private_dir, e))?;
    let out = private_dir.join(format!("{pin}-{file}"));
    if std::fs::read(&out).ok().as_deref() != Some(bytes) {
        crate::input::write_atomic(&out, bytes)?;
    }
    Ok(out)
}

/// Settings for fetching.
#[derive(Clone, Debug)]
pub struct FetchOptions {
    /// Content-addressed cache directory (files named by their sha256).
    pub cache_dir: PathBuf,
    /// Never touch the network (`CARGO_NET_OFFLINE` / `KILN_OFFLINE`).
    pub offline: bool,
}

/// Returns a private local copy of `file` from `source` with the pinned content (under
/// `private_dir`, which only the build writes).
pub fn obtain(
    source: &Source,
    file: &str,
    pin: &str,
    opts: &FetchOptions,
    private_dir: &Path,
) -> Result<PathBuf> {
    let bytes = obtain_bytes(source, file, pin, opts)?;
    private_copy(&bytes, file, pin, private_dir)
}

/// The bytes of `file` from `source`, checked against `pin`.
pub fn obtain_bytes(
    source: &Source,
    file: &str,
    pin: &str,
    opts: &FetchOptions,
) -> Result<Vec<u8>> {
    match source {
        Source::Dir(dir) => {
            let path = dir.join(file);
            if !path.is_file() {
                return Err(Error::Fetch {
                    url: path.display().to_string(),
                    reason: "no such file in the source directory (a packaged kiln carries only each target's pins: set KILN_DB_SOURCE, or KILN_DB_SOURCE_<BASENAME>, to a directory holding the files, laid out by file or as targets/, or to an https URL with kiln's `fetch` feature)".into(),
                });
            }
            checked(
                crate::input::read_input(&path)?,
                file,
                &source.describe(file),
                pin,
            )
        }
        Source::Url(base) => {
            let url = format!("{base}/{file}");
            let cached = opts.cache_dir.join(pin);
            if cached.is_file() {
                if let Ok(bytes) = checked(crate::input::read_input(&cached)?, file, "cache", pin) {
                    return Ok(bytes);
                }
            }
            if opts.offline {
                return Err(Error::Fetch {
                    url,
                    reason: format!(
                        "offline and no cached copy in {} (run once online, or give a directory source)",
                        opts.cache_dir.display()
                    ),
                });
            }
            let body = checked(download(&url)?, file, &url, pin)?;
            std::fs::create_dir_all(&opts.cache_dir).map_err(|e| Error::io(&opts.cache_dir, e))?;
            // Write then rename, so a crash never leaves a partial file under the final name.
            crate::input::write_atomic(&cached, &body)?;
            Ok(body)
        }
    }
}

/// Why a redirect to a URL of `scheme` is refused, after `hops` redirects, for a download that
/// started on https (`secure`) or not; `None` to follow it.
pub fn redirect_refusal(secure: bool, scheme: &str, hops: usize) -> Option<&'static str> {
    if hops >= 5 {
        Some("more than 5 redirects")
    } else if secure && scheme != "https" {
        Some("redirect from https to a non-https URL refused")
    } else {
        None
    }
}

#[cfg(feature = "fetch")]
fn download(url: &str) -> Result<Vec<u8>> {
    let fail = |reason: String| Error::Fetch {
        url: url.to_string(),
        reason,
    };
    use std::io::Read;
    // A download that starts on https stays on https: a redirect to http would let anyone on
    // the path see what is fetched and stall it (integrity still rests on the pin).
    let secure = url.starts_with("https://");
    let policy = reqwest::redirect::Policy::custom(move |attempt| {
        match redirect_refusal(secure, attempt.url().scheme(), attempt.previous().len()) {
            Some(why) => attempt.error(why),
            None => attempt.follow(),
        }
    });
    // rustls with the platform verifier: certificates are checked against the system store.
    let client = reqwest::blocking::Client::builder()
        .timeout(std::time::Duration::from_secs(120))
        .redirect(policy)
        .build()
        .map_err(|e| fail(format!("cannot create HTTP client: {e}")))?;
    let resp = client.get(url).send().map_err(|e| fail(e.to_string()))?;
    let status = resp.status();
    if !status.is_success() {
        return Err(fail(format!("server answered {status}")));
    }
    if resp
        .content_length()
        .is_some_and(|n| n > MAX_DOWNLOAD_BYTES)
    {
        return Err(fail(format!(
            "{} bytes announced, above the {} MiB cap",
            resp.content_length().unwrap_or(0),
            MAX_DOWNLOAD_BYTES >> 20
        )));
    }
    let mut body = Vec::new();
    resp.take(MAX_DOWNLOAD_BYTES + 1)
        .read_to_end(&mut body)
        .map_err(|e| fail(format!("reading body: {e}")))?;
    if body.len() as u64 > MAX_DOWNLOAD_BYTES {
        return Err(fail(format!(
            "body larger than the {} MiB cap",
            MAX_DOWNLOAD_BYTES >> 20
        )));
    }
    Ok(body)
}

#[cfg(not(feature = "fetch"))]
fn download(url: &str) -> Result<Vec<u8>> {
    Err(Error::Fetch {
        url: url.to_string(),
        reason: "kiln-embed was built without its `fetch` feature".into(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn https_never_redirects_to_http() {
        assert_eq!(redirect_refusal(true, "https", 0), None);
        assert!(redirect_refusal(true, "http", 0).is_some());
        assert!(redirect_refusal(true, "ftp", 1).is_some());
        assert_eq!(redirect_refusal(false, "http", 2), None);
        assert!(redirect_refusal(false, "http", 5).is_some());
    }
}
