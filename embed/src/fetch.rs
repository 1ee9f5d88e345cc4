//! Getting a target's files: from its folder in the repo, or from a directory or URL given at
//! build time (like MIOpen's `MIOPEN_BINCACHE_PATH`). Every file is checked against the sha256
//! pin kept in the repo; downloads land in a content-addressed cache, so a pinned file is
//! fetched once and offline builds work from the cache.

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
    let bytes = std::fs::read(path).map_err(|e| Error::io(path, e))?;
    Ok(hex(&Sha256::digest(&bytes)))
}

/// Checks `path` against `pin`.
pub fn verify_pin(path: &Path, file: &str, origin: &str, pin: &str) -> Result<()> {
    let actual = sha256_file(path)?;
    if actual != pin {
        return Err(Error::PinMismatch {
            file: file.to_string(),
            origin: origin.to_string(),
            expected: pin.to_string(),
            actual,
        });
    }
    Ok(())
}

/// Settings for fetching.
#[derive(Clone, Debug)]
pub struct FetchOptions {
    /// Content-addressed cache directory (files named by their sha256).
    pub cache_dir: PathBuf,
    /// Never touch the network (`CARGO_NET_OFFLINE` / `KILN_OFFLINE`).
    pub offline: bool,
}

/// Returns a local path holding `file` from `source` with the pinned content.
pub fn obtain(source: &Source, file: &str, pin: &str, opts: &FetchOptions) -> Result<PathBuf> {
    match source {
        Source::Dir(dir) => {
            let path = dir.join(file);
            if !path.is_file() {
                return Err(Error::Fetch {
                    url: path.display().to_string(),
                    reason: "no such file in the source directory".into(),
                });
            }
            verify_pin(&path, file, &source.describe(file), pin)?;
            Ok(path)
        }
        Source::Url(base) => {
            let url = format!("{base}/{file}");
            let cached = opts.cache_dir.join(pin);
            if cached.is_file() && sha256_file(&cached)? == pin {
                return Ok(cached);
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
            let body = download(&url)?;
            let actual = hex(&Sha256::digest(&body));
            if actual != pin {
                return Err(Error::PinMismatch {
                    file: file.to_string(),
                    origin: url,
                    expected: pin.to_string(),
                    actual,
                });
            }
            std::fs::create_dir_all(&opts.cache_dir).map_err(|e| Error::io(&opts.cache_dir, e))?;
            // Write then rename, so a crash never leaves a partial file under the final name.
            let tmp = opts
                .cache_dir
                .join(format!("{pin}.part{}", std::process::id()));
            std::fs::write(&tmp, &body).map_err(|e| Error::io(&tmp, e))?;
            std::fs::rename(&tmp, &cached).map_err(|e| Error::io(&cached, e))?;
            Ok(cached)
        }
    }
}

#[cfg(feature = "fetch")]
fn download(url: &str) -> Result<Vec<u8>> {
    let fail = |reason: String| Error::Fetch {
        url: url.to_string(),
        reason,
    };
    // rustls with the platform verifier: certificates are checked against the system store.
    let client = reqwest::blocking::Client::builder()
        .timeout(std::time::Duration::from_secs(120))
        .build()
        .map_err(|e| fail(format!("cannot create HTTP client: {e}")))?;
    let resp = client.get(url).send().map_err(|e| fail(e.to_string()))?;
    let status = resp.status();
    if !status.is_success() {
        return Err(fail(format!("server answered {status}")));
    }
    resp.bytes()
        .map(|b| b.to_vec())
        .map_err(|e| fail(format!("reading body: {e}")))
}

#[cfg(not(feature = "fetch"))]
fn download(url: &str) -> Result<Vec<u8>> {
    Err(Error::Fetch {
        url: url.to_string(),
        reason: "kiln-embed was built without its `fetch` feature".into(),
    })
}
