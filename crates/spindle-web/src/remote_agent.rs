//! A session agent reached over ACP's remote transport (`spindle serve --agent-url`): the
//! runtime's [`AgentConnector`] on `spindle_protocol::transport::remote`. It lives here because
//! the runtime links no HTTP code; this crate links it anyway.

use std::sync::Arc;

use spindle_protocol::transport::remote::{
    RemoteLink, RemoteNotice as TransportNotice, RemoteOptions, RemoteProfile, connect_remote,
};
use spindle_runtime::{AgentConnector, Connecting, RemoteAgent, RemoteNotice, RemoteStreams};
use tokio::sync::mpsc;

/// Connects to an agent's `/acp` endpoint.
#[derive(Debug, Clone)]
struct RemoteTransportConnector {
    url: String,
    profile: RemoteProfile,
    headers: Vec<(String, String)>,
}

impl AgentConnector for RemoteTransportConnector {
    fn connect(&self) -> Connecting {
        let mut options = RemoteOptions::new(self.url.clone(), self.profile);
        options.headers = self.headers.clone();
        Box::pin(async move {
            let RemoteLink {
                reader,
                writer,
                mut notices,
            } = connect_remote(options).await.map_err(|e| e.to_string())?;
            let (notice_tx, notice_rx) = mpsc::unbounded_channel();
            tokio::spawn(async move {
                while let Some(notice) = notices.recv().await {
                    let closed = match &notice {
                        TransportNotice::Closed { reason } => Some(reason.clone()),
                        _ => None,
                    };
                    let text = notice.to_string();
                    if notice_tx.send(RemoteNotice { text, closed }).is_err() {
                        break;
                    }
                }
            });
            Ok(RemoteStreams {
                reader: Box::pin(reader),
                writer: Box::pin(writer),
                notices: notice_rx,
            })
        })
    }
}

/// The agent at `url` (an `/acp` endpoint, `http(s)://` or `ws(s)://`), reached with `profile`,
/// with `headers` on every request (e.g. `Authorization: Bearer ...`).
pub fn remote_agent(
    url: String,
    profile: RemoteProfile,
    headers: Vec<(String, String)>,
) -> RemoteAgent {
    RemoteAgent {
        url: url.clone(),
        connector: Arc::new(RemoteTransportConnector {
            url,
            profile,
            headers,
        }),
    }
}
