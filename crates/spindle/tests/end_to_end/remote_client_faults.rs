//! `spindle chat --connect` when the network or the server fails: the TCP
//! connections cut mid-turn (the client reconnects and resumes from its
//! last event ids: the reply has nothing lost or doubled), and the server
//! restarted (the client opens a new connection, loads the session again
//! without showing its history twice, and the next prompt works).

use std::io::{Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use spindle_agent::scenarios;

use crate::harness::TempDir;
use crate::remote_client_connect::{SPINDLE, replay, shape};
use crate::serve_support::{PATIENCE, Served, serve_from};

/// The tests here kill and restart servers on fixed ports: one at a time,
/// so a restarted server finds its port free.
static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

fn one_at_a_time() -> std::sync::MutexGuard<'static, ()> {
    ONE_AT_A_TIME.lock().unwrap_or_else(|p| p.into_inner())
}

/// A TCP proxy in front of a server whose live connections can be cut
/// (both ways at once, as a dropped network does); new connections are
/// still forwarded.
struct CutProxy {
    addr: SocketAddr,
    live: Arc<Mutex<Vec<TcpStream>>>,
}

impl CutProxy {
    /// Binds the proxy's port (the server must allow it as a Host).
    fn bind() -> TcpListener {
        TcpListener::bind("127.0.0.1:0").expect("bind the proxy")
    }

    fn start(listener: TcpListener, target: SocketAddr) -> CutProxy {
        let addr = listener.local_addr().unwrap();
        let live: Arc<Mutex<Vec<TcpStream>>> = Arc::new(Mutex::new(Vec::new()));
        let registry = live.clone();
        std::thread::spawn(move || {
            for client in listener.incoming() {
                let Ok(client) = client else { continue };
                let Ok(server) = TcpStream::connect(target) else {
                    continue;
                };
                let mut list = registry.lock().unwrap_or_else(|p| p.into_inner());
                list.push(client.try_clone().unwrap());
                list.push(server.try_clone().unwrap());
                drop(list);
                pipe(client.try_clone().unwrap(), server.try_clone().unwrap());
                pipe(server, client);
            }
        });
        CutProxy { addr, live }
    }

    /// Cuts every connection open now.
    fn cut(&self) -> usize {
        let mut list = self.live.lock().unwrap_or_else(|p| p.into_inner());
        for stream in list.iter() {
            let _ = stream.shutdown(Shutdown::Both);
        }
        let n = list.len() / 2;
        list.clear();
        n
    }
}

fn pipe(mut from: TcpStream, mut to: TcpStream) {
    std::thread::spawn(move || {
        let mut buf = [0u8; 16 * 1024];
        loop {
            match from.read(&mut buf) {
                Ok(0) | Err(_) => break,
                Ok(n) => {
                    if to.write_all(&buf[..n]).is_err() {
                        break;
                    }
                }
            }
        }
        let _ = to.shutdown(Shutdown::Both);
    });
}

/// `spindle serve --protocol 1` on `bind` (a fixed address, so a restart
/// comes back at the same place) over the reference agent; what `/acp`
/// clients send is recorded under `dir/acp-recordings`.
fn serve_on(dir: &TempDir, bind: &str, delay_ms: u32, state_dir: &str, extra: &[&str]) -> Served {
    let delay = delay_ms.to_string();
    let agent = [
        SPINDLE,
        "agent",
        "--protocol",
        "1",
        "--delay-ms",
        &delay,
        "--state-dir",
        state_dir,
    ];
    std::fs::create_dir_all(dir.join("acp-recordings")).expect("the recording directory");
    let mut command = Command::new(SPINDLE);
    command
        .args(["serve", "--protocol", "1", "--bind", bind, "--db"])
        .arg(dir.join("db.sqlite"))
        .args(extra)
        .arg("--")
        .args(agent)
        .env("SPINDLE_ACP_RECORD_DIR", dir.join("acp-recordings"))
        .stderr(Stdio::inherit());
    serve_from(command)
}

/// How many `initialize` requests the servers of `dir` received (every
/// `/acp` connection's conversation is recorded there, across restarts).
fn initialize_requests_received(dir: &TempDir) -> usize {
    let Ok(files) = std::fs::read_dir(dir.join("acp-recordings")) else {
        return 0;
    };
    let mut count = 0;
    for file in files.flatten() {
        let text = std::fs::read_to_string(file.path()).unwrap_or_default();
        for line in text.lines() {
            let Ok(value) = serde_json::from_str::<serde_json::Value>(line) else {
                continue;
            };
            if value["sent"]["method"] == "initialize" {
                count += 1;
            }
        }
    }
    count
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// `spindle chat --connect URL` reading prompts from a pipe; stdout and
/// stderr collected by threads.
struct PipedChat {
    child: Child,
    stdin: Option<std::process::ChildStdin>,
    stdout: Arc<Mutex<String>>,
    stderr: Arc<Mutex<String>>,
}

impl PipedChat {
    fn start(flags: &[&str]) -> PipedChat {
        PipedChat::start_with_env(flags, &[])
    }

    fn start_with_env(flags: &[&str], env: &[(&str, &str)]) -> PipedChat {
        let mut child = Command::new(SPINDLE)
            .arg("chat")
            .args(flags)
            .envs(env.iter().copied())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn spindle chat");
        let stdin = child.stdin.take();
        let stdout = Arc::new(Mutex::new(String::new()));
        let stderr = Arc::new(Mutex::new(String::new()));
        collect(child.stdout.take().unwrap(), stdout.clone());
        collect(child.stderr.take().unwrap(), stderr.clone());
        PipedChat {
            child,
            stdin,
            stdout,
            stderr,
        }
    }

    fn send(&mut self, line: &str) {
        let stdin = self.stdin.as_mut().expect("stdin open");
        writeln!(stdin, "{line}").expect("write a prompt");
        stdin.flush().unwrap();
    }

    /// Waits until stdout holds `needle` `times` times.
    fn wait_stdout(&self, needle: &str, times: usize) {
        self.wait(&self.stdout, needle, times)
    }

    fn wait_stderr(&self, needle: &str) {
        self.wait(&self.stderr, needle, 1)
    }

    fn wait(&self, buffer: &Arc<Mutex<String>>, needle: &str, times: usize) {
        let deadline = Instant::now() + PATIENCE;
        loop {
            let seen = buffer
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .matches(needle)
                .count();
            if seen >= times {
                return;
            }
            assert!(
                Instant::now() < deadline,
                "waited for {times}x {needle:?}\nstdout:\n{}\nstderr:\n{}",
                self.stdout.lock().unwrap_or_else(|p| p.into_inner()),
                self.stderr.lock().unwrap_or_else(|p| p.into_inner())
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Closes stdin and waits for the exit status.
    fn finish(mut self) -> (Option<i32>, String, String) {
        drop(self.stdin.take());
        let status = self.child.wait().expect("wait for spindle chat");
        std::thread::sleep(Duration::from_millis(100));
        let out = self
            .stdout
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone();
        let err = self
            .stderr
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone();
        (status.code(), out, err)
    }
}

/// A test that fails mid-way leaves no chat behind (one stalled in a
/// reconnection would otherwise outlive the test run).
impl Drop for PipedChat {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn collect(mut from: impl Read + Send + 'static, into: Arc<Mutex<String>>) {
    std::thread::spawn(move || {
        let mut buf = [0u8; 8192];
        while let Ok(n) = from.read(&mut buf) {
            if n == 0 {
                break;
            }
            into.lock()
                .unwrap_or_else(|p| p.into_inner())
                .push_str(&String::from_utf8_lossy(&buf[..n]));
        }
    });
}

/// The words of the slow reply arrive 5 x 40 ms apart: cut the network
/// after the first words, then the turn must end normally with the whole
/// reply, once.
fn cut_mid_turn(transport: &str) {
    let _serial = one_at_a_time();
    let dir = TempDir::new(&format!("remote-client-cut-{transport}"));
    let state = dir.join("state");
    let bind = format!("127.0.0.1:{}", free_port());
    let listener = CutProxy::bind();
    let proxy_host = listener.local_addr().unwrap().to_string();
    let served = serve_on(
        &dir,
        &bind,
        40,
        state.to_str().unwrap(),
        &["--allow-host", &proxy_host],
    );
    let proxy = CutProxy::start(listener, served.addr);
    let url = format!("http://{}/acp", proxy.addr);
    let rec = dir.join("rec.jsonl");
    let mut chat = PipedChat::start(&[
        "--connect",
        &url,
        "--transport",
        transport,
        "--record",
        rec.to_str().unwrap(),
    ]);
    chat.send("/scenario slow");
    // Some words have arrived: the turn is under way.
    let first_words: String = scenarios::SLOW_REPLY
        .split(' ')
        .take(2)
        .collect::<Vec<_>>()
        .join(" ");
    // The reply takes about 5 s (25 words, 200 ms apart): a cut after 1.5 s
    // lands mid-turn (and a cut at any other moment must be survived too).
    std::thread::sleep(Duration::from_millis(1500));
    assert!(proxy.cut() > 0, "no connection to cut");
    chat.wait_stderr("reconnecting");
    chat.wait_stdout(scenarios::SLOW_REPLY, 1);
    // The turn itself ends: the prompt's answer arrived (over WebSocket on
    // the new socket, under the request's own id).
    chat.wait_stdout("[end_turn", 1);
    let (code, out, err) = chat.finish();
    assert_eq!(code, Some(0), "{err}");
    assert!(!out.contains("error"), "{out}");
    assert!(!err.contains("failed"), "{err}");
    // Nothing lost, nothing doubled: the reply is exactly the agent's.
    assert_eq!(out.matches(scenarios::SLOW_REPLY).count(), 1, "{out}");
    assert!(
        !out.contains(&format!("{first_words} {first_words}")),
        "{out}"
    );
    assert!(err.contains("resumed"), "{err}");
    let transcript = replay(&rec);
    let replies: Vec<String> = shape(&transcript)
        .into_iter()
        .filter(|(kind, _)| kind == "agent_message")
        .map(|(_, text)| text)
        .collect();
    assert_eq!(replies, [scenarios::SLOW_REPLY.to_owned()], "{transcript}");
    served.stop();
}

#[test]
fn remote_client_http_connection_cut_mid_turn_resumes_with_last_event_id() {
    cut_mid_turn("http");
}

/// Over WebSocket the socket is the connection: the client attaches the
/// session again from its last event id on a new socket and names the old
/// connection (`previousConnectionId`), so the prompt's answer, addressed
/// to the old socket, comes on the new one: the turn ends normally, every
/// update arrives once.
#[test]
fn remote_client_websocket_cut_mid_turn_reattaches_and_takes_over_the_answer() {
    cut_mid_turn("ws");
}

/// The server killed and started again on the same address, twice: each
/// time the client opens one new connection (one `initialize` per
/// connection, counted on the server), the session is loaded (HTTP) or
/// attached again (WebSocket) and the next prompt works, typed after the
/// restart or while no server ran. (Over HTTP a prompt queued before the
/// old connection's 404 came back used to stall the chat.)
#[test]
fn remote_client_server_restart_loads_the_session_on_a_new_connection() {
    let _serial = one_at_a_time();
    for transport in ["http", "ws"] {
        let dir = TempDir::new(&format!("remote-client-restart-{transport}"));
        let state = dir.join("state");
        let bind = format!("127.0.0.1:{}", free_port());
        let served = serve_on(&dir, &bind, 0, state.to_str().unwrap(), &[]);
        let url = format!("http://{bind}/acp");
        let rec = dir.join("rec.jsonl");
        let mut chat = PipedChat::start(&[
            "--connect",
            &url,
            "--transport",
            transport,
            "--record",
            rec.to_str().unwrap(),
        ]);
        chat.send("/scenario thoughts");
        chat.wait_stdout(scenarios::THOUGHTS_REPLY, 1);
        served.sigkill();
        let served = serve_on(&dir, &bind, 0, state.to_str().unwrap(), &[]);
        chat.send("/scenario notice");
        chat.wait_stdout(scenarios::NOTICE_REPLY, 1);
        // The recorded transcript: each reply once (the load's replay of the
        // first turn was kept from the client).
        let replies: Vec<String> = shape(&replay(&rec))
            .into_iter()
            .filter(|(kind, _)| kind == "agent_message")
            .map(|(_, text)| text)
            .collect();
        assert_eq!(
            replies,
            [
                scenarios::THOUGHTS_REPLY.to_owned(),
                scenarios::NOTICE_REPLY.to_owned()
            ],
            "{transport}"
        );
        // Again, the prompt typed while no server runs: it waits for the
        // new connection and goes there. (The restarted agent's message ids
        // are new ones, so the transcript keeps this reply apart from the
        // last.)
        served.sigkill();
        if transport == "ws" {
            // Typed once the client saw the socket drop: a line written in the instant before
            // would be in flight on the dead socket, which no new server can answer.
            chat.wait(&chat.stderr, "the WebSocket dropped", 2);
        }
        chat.send("/scenario denoise");
        std::thread::sleep(Duration::from_millis(300));
        let served = serve_on(&dir, &bind, 0, state.to_str().unwrap(), &[]);
        chat.wait_stdout(scenarios::DENOISE_REPLY, 1);
        chat.wait_stdout("[end_turn", 3);
        let (code, out, err) = chat.finish();
        let replies: Vec<String> = shape(&replay(&rec))
            .into_iter()
            .filter(|(kind, _)| kind == "agent_message")
            .map(|(_, text)| text)
            .collect();
        assert_eq!(
            replies,
            [
                scenarios::THOUGHTS_REPLY,
                scenarios::NOTICE_REPLY,
                scenarios::DENOISE_REPLY
            ],
            "{transport}"
        );
        assert_eq!(code, Some(0), "{transport}: {err}");
        // One `initialize` per connection: one to each of the three servers.
        assert_eq!(initialize_requests_received(&dir), 3, "{transport}: {err}");
        // HTTP: the server answers 404 for the old connection, the session is
        // loaded on a new one; WebSocket: a new socket attaches the session
        // from its last event id, and the server's snapshot is kept out.
        assert!(err.contains("reconnected"), "{transport}: {err}");
        // Every reply is shown once: no replay was shown again.
        for reply in [
            scenarios::THOUGHTS_REPLY,
            scenarios::NOTICE_REPLY,
            scenarios::DENOISE_REPLY,
        ] {
            assert_eq!(out.matches(reply).count(), 1, "{transport}: {out}");
        }
        served.stop();
    }
}

/// A listener on a dead server's port that takes every connection and
/// closes it at once, counting them: each is one reconnection attempt.
struct CountingListener {
    accepted: Arc<std::sync::atomic::AtomicUsize>,
    stop: Arc<std::sync::atomic::AtomicBool>,
}

impl CountingListener {
    fn start(bind: &str) -> CountingListener {
        use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
        let listener = TcpListener::bind(bind).expect("bind the dead server's port");
        listener.set_nonblocking(true).unwrap();
        let accepted = Arc::new(AtomicUsize::new(0));
        let stop = Arc::new(AtomicBool::new(false));
        let (count, done) = (accepted.clone(), stop.clone());
        std::thread::spawn(move || {
            while !done.load(Ordering::SeqCst) {
                match listener.accept() {
                    Ok((stream, _)) => {
                        count.fetch_add(1, Ordering::SeqCst);
                        drop(stream);
                    }
                    Err(_) => std::thread::sleep(Duration::from_millis(5)),
                }
            }
        });
        CountingListener { accepted, stop }
    }

    fn accepted(&self) -> usize {
        self.accepted.load(std::sync::atomic::Ordering::SeqCst)
    }
}

impl Drop for CountingListener {
    fn drop(&mut self) {
        self.stop.store(true, std::sync::atomic::Ordering::SeqCst);
    }
}

/// The server killed and never started again, a prompt waiting for it and
/// the chat's input closed (a test that failed mid-way left such chats
/// behind, each spinning at ~12% CPU for as long as anyone let it): the
/// chat retries with a growing delay, then gives up with a diagnostic and
/// exits. Counted, not timed: the connections a listener on the dead port
/// took during the reconnect window (a delay growing 50 ms -> 1 s gives a
/// few per stream; a busy retry would give thousands), and how often the
/// chat's loop was told its input closed (once; it used to be polled again
/// and again while the turn waited).
#[test]
fn remote_client_gives_up_on_a_server_that_never_comes_back() {
    let _serial = one_at_a_time();
    for transport in ["http", "ws"] {
        let dir = TempDir::new(&format!("remote-client-gone-{transport}"));
        let state = dir.join("state");
        let bind = format!("127.0.0.1:{}", free_port());
        let served = serve_on(&dir, &bind, 0, state.to_str().unwrap(), &[]);
        let url = format!("http://{bind}/acp");
        let mut chat = PipedChat::start_with_env(
            &["--connect", &url, "--transport", transport],
            &[
                // A 3 s reconnect window keeps the test short.
                ("SPINDLE_REMOTE_RECONNECT_MS", "3000"),
                ("SPINDLE_LOG", "spindle_chat=debug"),
            ],
        );
        chat.send("/scenario thoughts");
        chat.wait_stdout(scenarios::THOUGHTS_REPLY, 1);
        served.sigkill();
        let listener = CountingListener::start(&bind);
        chat.send("/scenario notice");
        let (code, out, err) = chat.finish();
        let attempts = listener.accepted();
        assert_ne!(code, Some(0), "{transport}: {out}\n{err}");
        assert!(
            err.contains("remote connection closed"),
            "{transport}: no diagnostic\n{err}"
        );
        assert!(!out.contains(scenarios::NOTICE_REPLY), "{transport}: {out}");
        assert!(attempts >= 1, "{transport}: it never tried again\n{err}");
        assert!(
            attempts <= 60,
            "{transport}: {attempts} connection attempts in a 3 s window\n{err}"
        );
        assert_eq!(
            err.matches("chat input closed").count(),
            1,
            "{transport}: the closed input was polled again\n{err}"
        );
    }
}
