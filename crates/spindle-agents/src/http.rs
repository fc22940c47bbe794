//! Downloads: the registry index and binary archives, with timeouts, a size limit, and the
//! `Content-Length` held to (a body shorter than announced is an error, never a short file).

use std::io::{Read, Write};
use std::path::Path;
use std::time::Duration;

use sha2::{Digest, Sha256};

/// How long connecting, and each wait for more of the body, may take.
pub const STALL_TIMEOUT: Duration = Duration::from_secs(60);

/// The largest registry index read.
pub const INDEX_LIMIT: u64 = 16 << 20;

/// The largest archive downloaded.
pub const ARCHIVE_LIMIT: u64 = 2 << 30;

/// Why a download failed.
#[derive(Debug, thiserror::Error)]
pub enum DownloadError {
    /// The request failed (DNS, connect, TLS, timeout) or the body broke off.
    #[error("cannot download {url}: {reason}")]
    Request {
        /// The URL.
        url: String,
        /// What reqwest said, with its causes.
        reason: String,
    },
    /// A status other than 2xx.
    #[error("cannot download {url}: the server answered {status}")]
    Status {
        /// The URL.
        url: String,
        /// The HTTP status.
        status: u16,
    },
    /// Larger than allowed.
    #[error("{url} is larger than the limit of {limit} bytes")]
    TooLarge {
        /// The URL.
        url: String,
        /// The limit.
        limit: u64,
    },
    /// The body ended before `Content-Length`.
    #[error("the download of {url} was cut short: {got} of {expected} bytes")]
    Truncated {
        /// The URL.
        url: String,
        /// Bytes received.
        got: u64,
        /// Bytes announced.
        expected: u64,
    },
    /// Writing the file failed.
    #[error("cannot write {path}: {source}")]
    Write {
        /// The file.
        path: std::path::PathBuf,
        /// The cause.
        #[source]
        source: std::io::Error,
    },
}

/// What a download wrote.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Downloaded {
    /// Bytes written.
    pub bytes: u64,
    /// Their SHA-256, lowercase hex.
    pub sha256: String,
}

fn client() -> Result<reqwest::blocking::Client, String> {
    reqwest::blocking::Client::builder()
        .connect_timeout(STALL_TIMEOUT)
        .timeout(STALL_TIMEOUT)
        .user_agent(concat!("spindle/", env!("CARGO_PKG_VERSION")))
        .build()
        .map_err(|e| chain(&e))
}

/// The error and its causes, joined (reqwest's own message alone says only "error sending request").
fn chain(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut cause = error.source();
    while let Some(c) = cause {
        text.push_str(": ");
        text.push_str(&c.to_string());
        cause = c.source();
    }
    text
}

/// Streams `url` into `out`, at most `limit` bytes, checking the length the server announced.
fn fetch_into(url: &str, limit: u64, out: &mut dyn Write) -> Result<u64, FetchFailure> {
    let request = |reason: String| {
        FetchFailure::Download(DownloadError::Request {
            url: url.to_owned(),
            reason,
        })
    };
    let client = client().map_err(request)?;
    let mut response = client.get(url).send().map_err(|e| request(chain(&e)))?;
    let status = response.status();
    if !status.is_success() {
        return Err(FetchFailure::Download(DownloadError::Status {
            url: url.to_owned(),
            status: status.as_u16(),
        }));
    }
    let too_large = || {
        FetchFailure::Download(DownloadError::TooLarge {
            url: url.to_owned(),
            limit,
        })
    };
    let expected = response.content_length();
    if expected.is_some_and(|n| n > limit) {
        return Err(too_large());
    }
    let mut got: u64 = 0;
    let mut buffer = vec![0u8; 64 * 1024];
    loop {
        let n = match response.read(&mut buffer) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => {
                // hyper reports a body shorter than its Content-Length as a read error.
                if let Some(expected) = expected
                    && got < expected
                {
                    return Err(FetchFailure::Download(DownloadError::Truncated {
                        url: url.to_owned(),
                        got,
                        expected,
                    }));
                }
                return Err(request(chain(&e)));
            }
        };
        got += n as u64;
        if got > limit {
            return Err(too_large());
        }
        out.write_all(&buffer[..n]).map_err(FetchFailure::Write)?;
    }
    if let Some(expected) = expected
        && got != expected
    {
        return Err(FetchFailure::Download(DownloadError::Truncated {
            url: url.to_owned(),
            got,
            expected,
        }));
    }
    Ok(got)
}

enum FetchFailure {
    Download(DownloadError),
    Write(std::io::Error),
}

/// The body of `url`, at most `limit` bytes.
pub fn fetch_bytes(url: &str, limit: u64) -> Result<Vec<u8>, DownloadError> {
    let mut body = Vec::new();
    match fetch_into(url, limit, &mut body) {
        Ok(_) => Ok(body),
        Err(FetchFailure::Download(e)) => Err(e),
        Err(FetchFailure::Write(source)) => Err(DownloadError::Write {
            path: "(memory)".into(),
            source,
        }),
    }
}

/// Downloads `url` into the new file `path` (at most `limit` bytes), hashing as it goes.
pub fn download_file(url: &str, path: &Path, limit: u64) -> Result<Downloaded, DownloadError> {
    let write_error = |source| DownloadError::Write {
        path: path.to_owned(),
        source,
    };
    let file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(path)
        .map_err(write_error)?;
    let mut out = HashingWriter {
        file,
        hasher: Sha256::new(),
    };
    let bytes = match fetch_into(url, limit, &mut out) {
        Ok(bytes) => bytes,
        Err(FetchFailure::Download(e)) => return Err(e),
        Err(FetchFailure::Write(source)) => return Err(write_error(source)),
    };
    out.file.sync_all().map_err(write_error)?;
    Ok(Downloaded {
        bytes,
        sha256: hex::encode(out.hasher.finalize()),
    })
}

struct HashingWriter {
    file: std::fs::File,
    hasher: Sha256,
}

impl Write for HashingWriter {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let n = self.file.write(buf)?;
        self.hasher.update(&buf[..n]);
        Ok(n)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.file.flush()
    }
}
