//! (feature `test-server`) A throwaway PostgreSQL server for a test binary: `initdb` in a temporary directory, a free
//! loopback port, the Unix socket in the same directory; started once per test binary run (as the
//! `postgres` user when the tests run as root, since PostgreSQL refuses root) and stopped by a
//! watchdog shell when this process ends, which then removes the directory.
//!
//! Without PostgreSQL, [`server`] fails under `CI=true` and returns `None` (with a note on stderr)
//! otherwise; [`required_server`] always fails. `SPINDLE_PG_BIN` names the directory of `initdb`/`postgres`/`psql` when it
//! is not `/usr/lib/postgresql/*/bin`.

use std::net::{Shutdown, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

/// The running server.
#[derive(Debug)]
pub struct PgServer {
    bin: PathBuf,
    dir: PathBuf,
    port: u16,
}

static SERVER: OnceLock<Result<PgServer, String>> = OnceLock::new();
static DATABASES: AtomicUsize = AtomicUsize::new(0);

/// The server, started on first use; `None` (after a note) when PostgreSQL is not installed and
/// this is not CI. Panics when it is missing under `CI=true` or fails to start.
pub fn server() -> Option<&'static PgServer> {
    started(std::env::var("CI").is_ok_and(|v| v == "true"))
}

/// The server, started on first use; panics when PostgreSQL is missing or fails to start (for
/// runs that asked for PostgreSQL explicitly).
pub fn required_server() -> &'static PgServer {
    started(true).expect("a required server is started or panics")
}

fn started(required: bool) -> Option<&'static PgServer> {
    match SERVER.get_or_init(start) {
        Ok(server) => Some(server),
        Err(missing) if missing.starts_with("missing:") => {
            if required {
                panic!("PostgreSQL is required (CI=true or asked for): {missing}");
            }
            eprintln!("skipping a PostgreSQL test: {missing}");
            None
        }
        Err(error) => panic!("the test PostgreSQL server did not start: {error}"),
    }
}

fn find_bin() -> Option<PathBuf> {
    if let Ok(dir) = std::env::var("SPINDLE_PG_BIN") {
        return Some(PathBuf::from(dir));
    }
    let mut found: Vec<(u32, PathBuf)> = std::fs::read_dir("/usr/lib/postgresql")
        .ok()?
        .flatten()
        .filter_map(|entry| {
            let version = entry.file_name().to_str()?.parse::<u32>().ok()?;
            let bin = entry.path().join("bin");
            bin.join("initdb").exists().then_some((version, bin))
        })
        .collect();
    found.sort();
    found.pop().map(|(_, bin)| bin)
}

fn is_root() -> bool {
    Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|o| String::from_utf8_lossy(&o.stdout).trim() == "0")
}

/// `program args...`, as the `postgres` user when we are root.
fn as_server_user(root: bool, program: &Path) -> Command {
    if root {
        let mut command = Command::new("runuser");
        command.args(["-u", "postgres", "--"]).arg(program);
        command
    } else {
        Command::new(program)
    }
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free loopback port")
}

fn start() -> Result<PgServer, String> {
    let bin = find_bin()
        .ok_or("missing: no /usr/lib/postgresql/*/bin/initdb (apt-get install postgresql)")?;
    for tool in ["initdb", "postgres", "psql"] {
        if !bin.join(tool).exists() {
            return Err(format!("missing: {}", bin.join(tool).display()));
        }
    }
    let root = is_root();
    let dir = std::env::temp_dir().join(format!("spindle-store-pg-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    if root {
        let status = Command::new("chown")
            .args(["postgres:", dir.to_str().expect("temp dir is UTF-8")])
            .status()
            .map_err(|e| format!("chown: {e}"))?;
        if !status.success() {
            return Err("chown of the data directory to postgres failed".into());
        }
    }
    let data = dir.join("data");
    let init = as_server_user(root, &bin.join("initdb"))
        .args([
            "-D",
            data.to_str().unwrap(),
            "-U",
            "postgres",
            "-A",
            "trust",
        ])
        .args(["-E", "UTF8", "--no-locale", "--no-sync"])
        .output()
        .map_err(|e| format!("initdb: {e}"))?;
    if !init.status.success() {
        return Err(format!(
            "initdb failed: {}",
            String::from_utf8_lossy(&init.stderr)
        ));
    }
    let mut last_error = String::new();
    for _ in 0..5 {
        let port = free_port();
        let server = PgServer {
            bin: bin.clone(),
            dir: dir.clone(),
            port,
        };
        // The watchdog stops the server (fast shutdown) and removes the directory once this
        // test process is gone, however it ends.
        let script = format!(
            "'{postgres}' -D '{data}' -p {port} -k '{dir}' -c listen_addresses=127.0.0.1 \
             -c fsync=off -c max_connections=200 >'{dir}/server.log' 2>&1 &\n\
             server=$!\n\
             while [ -d /proc/{me} ] && kill -0 $server 2>/dev/null; do sleep 0.3; done\n\
             kill -INT $server 2>/dev/null; wait $server; rm -rf '{dir}'\n",
            postgres = bin.join("postgres").display(),
            data = data.display(),
            dir = dir.display(),
            me = std::process::id(),
        );
        as_server_user(root, Path::new("/bin/sh"))
            .args(["-c", &script])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .map_err(|e| format!("starting postgres: {e}"))?;
        let deadline = Instant::now() + Duration::from_secs(30);
        while Instant::now() < deadline {
            if server.psql("postgres", "SELECT 1").is_ok() {
                return Ok(server);
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        last_error = std::fs::read_to_string(dir.join("server.log")).unwrap_or_default();
    }
    Err(format!("postgres never answered: {last_error}"))
}

impl PgServer {
    /// The directory holding the Unix socket.
    pub fn socket_dir(&self) -> &Path {
        &self.dir
    }

    /// The loopback port.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// Runs `sql` in `database` with `psql` as the superuser; its output (unaligned, tuples
    /// only) or the error text.
    pub fn psql(&self, database: &str, sql: &str) -> Result<String, String> {
        let output = self
            .psql_command(database)
            .args(["-c", sql])
            .output()
            .map_err(|e| e.to_string())?;
        if output.status.success() {
            Ok(String::from_utf8_lossy(&output.stdout).trim().to_string())
        } else {
            Err(String::from_utf8_lossy(&output.stderr).into_owned())
        }
    }

    /// `psql` as the superuser on `database` (unaligned, tuples only, stopping at the first
    /// error), without the statements: `-c`, or a session fed on its standard input.
    pub fn psql_command(&self, database: &str) -> Command {
        let mut command = Command::new(self.bin.join("psql"));
        command
            .args(["-X", "-q", "-A", "-t", "-v", "ON_ERROR_STOP=1"])
            .args(["-h", self.dir.to_str().unwrap()])
            .args([
                "-p",
                &self.port.to_string(),
                "-U",
                "postgres",
                "-d",
                database,
            ]);
        command
    }

    /// The database `name`, created empty when it does not exist yet; its name. For tests that
    /// restart a server on the same database.
    pub fn ensure_database(&self, name: &str) -> String {
        let exists = self
            .psql(
                "postgres",
                &format!("SELECT COUNT(*) FROM pg_database WHERE datname = '{name}'"),
            )
            .unwrap_or_else(|e| panic!("looking up database {name}: {e}"));
        if exists == "0" {
            self.psql("postgres", &format!("CREATE DATABASE {name}"))
                .unwrap_or_else(|e| panic!("CREATE DATABASE {name}: {e}"));
        }
        name.to_string()
    }

    /// A new, empty database named after `label`; its name.
    pub fn create_database(&self, label: &str) -> String {
        let n = DATABASES.fetch_add(1, Ordering::Relaxed);
        let name: String = format!("t{n}_{label}")
            .chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() {
                    c.to_ascii_lowercase()
                } else {
                    '_'
                }
            })
            .take(60)
            .collect();
        self.psql("postgres", &format!("CREATE DATABASE {name}"))
            .unwrap_or_else(|e| panic!("CREATE DATABASE {name}: {e}"));
        name
    }

    /// The TCP URL of `database`.
    pub fn url(&self, database: &str) -> String {
        format!("postgres://postgres@127.0.0.1:{}/{database}", self.port)
    }
}

/// A TCP relay to the test server that can cut every connection and refuse new ones (a network
/// partition), and heal.
#[derive(Debug)]
pub struct Relay {
    /// The port to connect to.
    pub port: u16,
    cut: Arc<AtomicBool>,
    open: Arc<Mutex<Vec<TcpStream>>>,
}

impl Relay {
    /// Relays a new loopback port to `upstream` (the server's [`PgServer::port`]).
    pub fn start(upstream: u16) -> Relay {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let cut = Arc::new(AtomicBool::new(false));
        let open = Arc::new(Mutex::new(Vec::<TcpStream>::new()));
        let (cut_flag, streams) = (Arc::clone(&cut), Arc::clone(&open));
        std::thread::spawn(move || {
            for client in listener.incoming().flatten() {
                if cut_flag.load(Ordering::SeqCst) {
                    continue; // dropped: the connection is closed at once
                }
                let Ok(server) = TcpStream::connect(("127.0.0.1", upstream)) else {
                    continue;
                };
                let mut list = streams.lock().unwrap();
                list.push(client.try_clone().unwrap());
                list.push(server.try_clone().unwrap());
                for (mut from, mut to) in [
                    (client.try_clone().unwrap(), server.try_clone().unwrap()),
                    (server, client),
                ] {
                    std::thread::spawn(move || {
                        let _ = std::io::copy(&mut from, &mut to);
                        let _ = to.shutdown(Shutdown::Both);
                    });
                }
            }
        });
        Relay { port, cut, open }
    }

    /// Closes every relayed connection and refuses new ones.
    pub fn cut(&self) {
        self.cut.store(true, Ordering::SeqCst);
        for stream in self.open.lock().unwrap().drain(..) {
            let _ = stream.shutdown(Shutdown::Both);
        }
    }

    /// Relays new connections again.
    pub fn heal(&self) {
        self.cut.store(false, Ordering::SeqCst);
    }
}
