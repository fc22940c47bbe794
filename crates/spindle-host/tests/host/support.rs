//! A temporary workspace and helpers to call the host.

use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};

use serde_json::{Value, json};
use spindle_host::{FsPolicy, Host, HostConfig, HostEvent, HostReply};
use spindle_protocol::ResponseError;
use tokio::sync::mpsc::UnboundedReceiver;

/// A directory removed on drop.
pub struct TempDir(PathBuf);

impl TempDir {
    pub fn new() -> TempDir {
        static N: AtomicU64 = AtomicU64::new(0);
        let path = std::env::temp_dir().join(format!(
            "spindle-host-test-{}-{}",
            std::process::id(),
            N.fetch_add(1, Ordering::Relaxed)
        ));
        let _ = std::fs::remove_dir_all(&path);
        std::fs::create_dir_all(&path).unwrap();
        TempDir(std::fs::canonicalize(&path).unwrap())
    }

    pub fn join(&self, rel: &str) -> PathBuf {
        self.0.join(rel)
    }

    /// The absolute path of `rel`, as a string.
    pub fn abs(&self, rel: &str) -> String {
        self.join(rel).to_string_lossy().into_owned()
    }

    pub fn write(&self, rel: &str, text: &str) {
        let path = self.join(rel);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// A workspace `ws/` inside a temporary directory (so tests can put files
/// beside it, outside the root) and a host rooted there.
pub struct Fixture {
    pub outer: TempDir,
    pub host: Host,
    pub events: UnboundedReceiver<HostEvent>,
}

impl Fixture {
    pub fn new(policy: FsPolicy) -> Fixture {
        Fixture::with(|c| c.fs = policy)
    }

    pub fn with(configure: impl FnOnce(&mut HostConfig)) -> Fixture {
        let outer = TempDir::new();
        std::fs::create_dir_all(outer.join("ws")).unwrap();
        let mut config = HostConfig::new(outer.join("ws"));
        configure(&mut config);
        let (host, events) = Host::new(config);
        Fixture {
            outer,
            host,
            events,
        }
    }

    /// A path inside the workspace.
    pub fn ws(&self, rel: &str) -> String {
        self.outer.abs(&format!("ws/{rel}"))
    }

    pub fn ws_path(&self, rel: &str) -> PathBuf {
        self.outer.join(&format!("ws/{rel}"))
    }

    pub async fn call(&self, method: &str, params: Value) -> HostReply {
        let raw = serde_json::value::to_raw_value(&params).unwrap();
        self.host.handle(method, Some(&raw)).await
    }

    /// The reply of a request that must be answered at once.
    pub async fn done(&self, method: &str, params: Value) -> Result<Value, ResponseError> {
        match self.call(method, params).await {
            HostReply::Done(result) => result,
            HostReply::NeedsApproval(w) => panic!("{method}: asks for approval: {w:?}"),
        }
    }

    pub async fn ok(&self, method: &str, params: Value) -> Value {
        self.done(method, params)
            .await
            .unwrap_or_else(|e| panic!("{method}: {e}"))
    }

    pub async fn err(&self, method: &str, params: Value) -> ResponseError {
        match self.done(method, params).await {
            Ok(v) => panic!("{method}: expected an error, got {v}"),
            Err(e) => e,
        }
    }

    pub async fn read(&self, path: &str) -> Result<Value, ResponseError> {
        self.done("fs/read_text_file", json!({"sessionId": "s", "path": path}))
            .await
    }
}

/// Asserts an error's code and that its message contains `needle`.
pub fn assert_error(e: &ResponseError, code: i64, needle: &str) {
    assert_eq!(e.code, code, "{e}");
    assert!(
        e.message.contains(needle),
        "{:?} lacks {needle:?}",
        e.message
    );
}

/// Whether a process with this pid exists (and is not a zombie).
pub fn process_alive(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => {
            // The state follows the command in parentheses.
            let state = stat.rsplit(')').next().unwrap_or("").trim_start();
            !state.starts_with('Z') && !state.starts_with('X')
        }
        Err(_) => false,
    }
}
