//! Opening a remote link: the endpoint URL, the HTTP client, and the
//! transport the profile asks for.

use std::time::Duration;

use tokio::sync::mpsc;

use super::link::{Pipes, RemoteError, RemoteLink, RemoteNotices, RemoteOptions, RemoteProfile};
use super::{sse, websocket};

/// Bytes buffered in each direction between the transport and its reader.
const PIPE_BYTES: usize = 256 * 1024;

/// The endpoint URL: `/acp` added to a URL with no path; for `profile`,
/// the scheme the request goes out with (ws -> http, wss -> https).
pub(crate) fn endpoint_url(url: &str) -> Result<reqwest::Url, RemoteError> {
    let mut parsed =
        reqwest::Url::parse(url).map_err(|e| RemoteError::BadUrl(format!("{url}: {e}")))?;
    let scheme = match parsed.scheme() {
        "http" | "ws" => "http",
        "https" | "wss" => "https",
        other => {
            return Err(RemoteError::BadUrl(format!(
                "{url}: scheme {other:?} (http, https, ws or wss)"
            )));
        }
    };
    parsed
        .set_scheme(scheme)
        .map_err(|()| RemoteError::BadUrl(url.to_owned()))?;
    if parsed.path().is_empty() || parsed.path() == "/" {
        parsed.set_path(spindle_wire::remote::ACP_PATH);
    }
    Ok(parsed)
}

fn http_client(options: &RemoteOptions) -> Result<reqwest::Client, RemoteError> {
    let mut headers = reqwest::header::HeaderMap::new();
    for (name, value) in &options.headers {
        let name = reqwest::header::HeaderName::from_bytes(name.as_bytes())
            .map_err(|e| RemoteError::Client(format!("header {name:?}: {e}")))?;
        let value = reqwest::header::HeaderValue::from_str(value)
            .map_err(|e| RemoteError::Client(format!("header {name}: {e}")))?;
        headers.insert(name, value);
    }
    reqwest::Client::builder()
        .cookie_store(true)
        .default_headers(headers)
        .http1_only()
        // Small messages (a prompt POST, a WebSocket frame) go out at once,
        // not held by Nagle's algorithm until the peer's delayed ACK (tens
        // of ms per turn). reqwest's default today; said here so it stays.
        // The WebSocket runs on the same connector's socket (the upgrade).
        .tcp_nodelay(true)
        .connect_timeout(Duration::from_secs(10))
        .build()
        .map_err(|e| RemoteError::Client(e.to_string()))
}

/// Connects to a remote agent. For WebSocket the upgrade happens here (so an
/// unreachable server is an error now); for HTTP the first request is the
/// client's `initialize`.
pub async fn connect_remote(options: RemoteOptions) -> Result<RemoteLink, RemoteError> {
    let url = endpoint_url(&options.url)?;
    let http = http_client(&options)?;
    let (reader, transport_in) = tokio::io::duplex(PIPE_BYTES);
    let (transport_out, writer) = tokio::io::duplex(PIPE_BYTES);
    let (notice_tx, rx) = mpsc::unbounded_channel();
    let pipes = Pipes {
        to_client: transport_in,
        from_client: transport_out,
        notices: notice_tx,
    };
    match options.profile {
        RemoteProfile::WebSocket => {
            let opened = websocket::open(&http, &url).await?;
            tokio::spawn(websocket::run(http, url, options, opened, pipes));
        }
        RemoteProfile::Http => {
            tokio::spawn(sse::run(http, url, options, pipes));
        }
    }
    Ok(RemoteLink {
        reader,
        writer,
        notices: RemoteNotices { rx },
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn endpoint_urls_get_acp_and_http_schemes() {
        let cases = [
            ("http://127.0.0.1:8080", "http://127.0.0.1:8080/acp"),
            ("ws://127.0.0.1:8080/", "http://127.0.0.1:8080/acp"),
            ("wss://h/agent", "https://h/agent"),
            ("https://h/acp?token=x", "https://h/acp?token=x"),
        ];
        for (given, expected) in cases {
            assert_eq!(endpoint_url(given).unwrap().as_str(), expected);
        }
        assert!(matches!(
            endpoint_url("ftp://h/acp"),
            Err(RemoteError::BadUrl(_))
        ));
        assert!(matches!(
            endpoint_url("not a url"),
            Err(RemoteError::BadUrl(_))
        ));
        assert_eq!("ws".parse(), Ok(RemoteProfile::WebSocket));
        assert_eq!("http".parse(), Ok(RemoteProfile::Http));
        assert!("tcp".parse::<RemoteProfile>().is_err());
    }
}
