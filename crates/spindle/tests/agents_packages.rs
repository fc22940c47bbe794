//! `spindle agents install` of `npx` and `uvx` entries with the real npm and pip, against local
//! registries on loopback: an npm registry (a packument and a tarball built here) and a PEP 503
//! simple index serving a wheel built here. These tests need node, npm and python3 (with its venv
//! module), and uv (SPINDLE_TEST_UV, the pinned one of requirements-uv.txt, or one on PATH); CI
//! installs them all, and a missing one fails the test there.

mod agents_support;

use std::path::PathBuf;
use std::process::{Command, Stdio};

use agents_support::{Body, Server, tar_gz};
use base64::Engine as _;
use serde_json::json;
use sha2::Digest;

struct Env {
    _tmp: tempfile::TempDir,
    root: PathBuf,
}

impl Env {
    fn new() -> Env {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().to_owned();
        for d in ["data", "config", "home", "npm-cache"] {
            std::fs::create_dir_all(root.join(d)).unwrap();
        }
        Env { _tmp: tmp, root }
    }

    fn spindle(&self, args: &[&str], extra_env: &[(&str, String)]) -> String {
        let out = Command::new(env!("CARGO_BIN_EXE_spindle"))
            .arg("agents")
            .arg("--registry")
            .arg(self.root.join("registry.json"))
            .args(args)
            .env("XDG_DATA_HOME", self.root.join("data"))
            .env("XDG_CONFIG_HOME", self.root.join("config"))
            .env("HOME", self.root.join("home"))
            .envs(extra_env.iter().map(|(k, v)| (k, v)))
            .stdin(Stdio::null())
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "spindle agents {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).unwrap()
    }

    fn write_registry(&self, entry: serde_json::Value) {
        let registry = json!({"version": "1.0.0", "agents": [entry]});
        std::fs::write(self.root.join("registry.json"), registry.to_string()).unwrap();
    }

    fn dirs(&self) -> spindle_agents::AgentsDirs {
        spindle_agents::AgentsDirs {
            data: self.root.join("data/spindle"),
            config: self.root.join("config/spindle"),
        }
    }

    /// Runs the installed agent `id` as `launch` describes it; its stdout.
    fn run_agent(&self, id: &str) -> String {
        let launch = spindle_agents::launch(&self.dirs(), id).unwrap();
        let command = launch.command();
        let out = Command::new(&command[0])
            .args(&command[1..])
            .envs(&launch.env)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{command:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).unwrap()
    }
}

fn npm_tarball(version: &str) -> Vec<u8> {
    let manifest =
        json!({"name": "@spindle-test/tiny-agent", "version": version, "bin": "bin/cli.js"})
            .to_string();
    let script = format!(
        "#!/usr/bin/env node\nconsole.log('tiny-agent {version} ' + process.argv.slice(2).join(' '));\n"
    );
    tar_gz(&[
        ("package/package.json", manifest.as_bytes(), 0o644),
        ("package/bin/cli.js", script.as_bytes(), 0o755),
    ])
}

/// The registry document of `@spindle-test/tiny-agent`, its tarballs under `base`.
fn packument(base: &str, tarballs: &[(String, Vec<u8>)]) -> Vec<u8> {
    let versions: serde_json::Map<String, serde_json::Value> = tarballs
        .iter()
        .zip(["1.0.0", "1.1.0"])
        .map(|((path, bytes), v)| {
            let integrity = format!(
                "sha512-{}",
                base64::engine::general_purpose::STANDARD.encode(sha2::Sha512::digest(bytes))
            );
            let version = json!({"name": "@spindle-test/tiny-agent", "version": v, "bin": {"tiny-agent": "bin/cli.js"},
                                 "dist": {"tarball": format!("{base}{path}"), "integrity": integrity}});
            (v.to_owned(), version)
        })
        .collect();
    json!({"name": "@spindle-test/tiny-agent", "dist-tags": {"latest": "1.1.0"}, "versions": versions})
        .to_string()
        .into_bytes()
}

#[test]
fn npx_entries_install_with_npm_into_their_own_prefix() {
    let env = Env::new();
    let tarballs: Vec<(String, Vec<u8>)> = ["1.0.0", "1.1.0"]
        .iter()
        .map(|v| (format!("/tarballs/tiny-agent-{v}.tgz"), npm_tarball(v)))
        .collect();
    // The packument names the tarballs by URL: the routes are made once the port is known.
    let server = Server::start_with(|base| {
        let doc = packument(base, &tarballs);
        let mut routes: Vec<(String, Body)> = tarballs
            .iter()
            .map(|(p, b)| (p.clone(), Body::Full(b.clone())))
            .collect();
        routes.push((
            "/@spindle-test%2ftiny-agent".into(),
            Body::Full(doc.clone()),
        ));
        routes.push(("/@spindle-test%2Ftiny-agent".into(), Body::Full(doc)));
        routes
    });
    let npm_env = [
        ("npm_config_registry", server.url("/")),
        (
            "npm_config_cache",
            env.root.join("npm-cache").display().to_string(),
        ),
        (
            "npm_config_userconfig",
            env.root.join("home/.npmrc").display().to_string(),
        ),
    ];
    env.write_registry(json!({"id": "tiny-npm", "name": "Tiny npm agent", "version": "1.0.0", "description": "d",
                              "distribution": {"npx": {"package": "@spindle-test/tiny-agent@1.0.0", "args": ["--acp"], "env": {"TINY": "1"}}}}));
    let out = env.spindle(&["install", "tiny-npm"], &npm_env);
    assert!(out.contains("installed tiny-npm 1.0.0"), "{out}");
    assert_eq!(env.run_agent("tiny-npm"), "tiny-agent 1.0.0 --acp\n");
    let record = spindle_agents::InstallRecord::read(&env.dirs(), "tiny-npm")
        .unwrap()
        .unwrap();
    assert_eq!(record.source, "@spindle-test/tiny-agent@1.0.0");
    assert_eq!(
        record.program,
        record.path.join("node_modules/.bin/tiny-agent")
    );
    assert_eq!(record.env["TINY"], "1");

    let out = env.spindle(&["install", "tiny-npm", "--version", "1.1.0"], &npm_env);
    assert!(
        out.contains("installed tiny-npm 1.1.0 (replacing 1.0.0)"),
        "{out}"
    );
    assert_eq!(env.run_agent("tiny-npm"), "tiny-agent 1.1.0 --acp\n");
    assert!(!env.dirs().agent_dir("tiny-npm").join("1.0.0").exists());
}

/// A wheel of the package `tiny-py-agent` with the console script `tiny-py-agent`.
fn wheel(version: &str) -> Vec<u8> {
    use std::io::Write;
    use zip::write::SimpleFileOptions;
    let info = format!("tiny_py_agent-{version}.dist-info");
    let files = [
        ("tiny_py_agent/__init__.py".to_owned(), format!("import sys\n\ndef main():\n    print('tiny-py-agent {version}', *sys.argv[1:])\n")),
        (format!("{info}/METADATA"), format!("Metadata-Version: 2.1\nName: tiny-py-agent\nVersion: {version}\n")),
        (format!("{info}/WHEEL"), "Wheel-Version: 1.0\nGenerator: spindle-test\nRoot-Is-Purelib: true\nTag: py3-none-any\n".to_owned()),
        (format!("{info}/entry_points.txt"), "[console_scripts]\ntiny-py-agent = tiny_py_agent:main\n".to_owned()),
    ];
    let mut record = String::new();
    let mut writer = zip::ZipWriter::new(std::io::Cursor::new(Vec::new()));
    let options = SimpleFileOptions::default().compression_method(zip::CompressionMethod::Stored);
    for (name, text) in &files {
        writer.start_file(name.as_str(), options).unwrap();
        writer.write_all(text.as_bytes()).unwrap();
        let digest = base64::engine::general_purpose::URL_SAFE_NO_PAD
            .encode(sha2::Sha256::digest(text.as_bytes()));
        record.push_str(&format!("{name},sha256={digest},{}\n", text.len()));
    }
    record.push_str(&format!("{info}/RECORD,,\n"));
    writer
        .start_file(format!("{info}/RECORD"), options)
        .unwrap();
    writer.write_all(record.as_bytes()).unwrap();
    writer.finish().unwrap().into_inner()
}

/// Which tool builds the venv: PATH is set so that the other one cannot be found.
#[derive(Debug, Clone, Copy, PartialEq)]
enum PythonInstaller {
    /// `python3 -m venv` and pip: no `uv` on PATH.
    Pip,
    /// `uv venv` and `uv pip install`: the pinned uv first on PATH (SPINDLE_TEST_UV).
    Uv,
}

/// PATH without any directory holding a `uv`, for the pip path.
fn path_without_uv() -> String {
    let path = std::env::var_os("PATH").unwrap_or_default();
    let dirs: Vec<PathBuf> = std::env::split_paths(&path)
        .filter(|dir| !dir.join("uv").exists())
        .collect();
    assert!(
        dirs.iter().any(|dir| dir.join("python3").exists()),
        "python3 shares its directory with uv: the pip path cannot be tested apart"
    );
    std::env::join_paths(dirs).unwrap().into_string().unwrap()
}

/// PATH with uv first: SPINDLE_TEST_UV (CI sets it to the pinned uv of requirements-uv.txt),
/// else a `uv` already on PATH. `None` when neither exists outside CI (`CI` unset): a developer
/// machine without uv runs the README's test command without this one case; in CI a missing uv
/// fails the test.
fn path_with_uv() -> Option<String> {
    let path = std::env::var_os("PATH").unwrap_or_default();
    let uv = match std::env::var_os("SPINDLE_TEST_UV").map(PathBuf::from) {
        Some(uv) => uv,
        None => match std::env::split_paths(&path)
            .map(|d| d.join("uv"))
            .find(|p| p.is_file())
        {
            Some(uv) => uv,
            None if std::env::var_os("CI").is_some() => panic!(
                "no uv: install the pinned one (crates/spindle/tests/requirements-uv.txt) as \
                 .ci/run does and set SPINDLE_TEST_UV to its path"
            ),
            None => {
                eprintln!(
                    "no uv on PATH and SPINDLE_TEST_UV unset: the uv install is not tested here"
                );
                return None;
            }
        },
    };
    assert!(
        uv.is_file(),
        "SPINDLE_TEST_UV={}: no such file",
        uv.display()
    );
    let mut dirs = vec![uv.parent().unwrap().to_owned()];
    dirs.extend(std::env::split_paths(&path));
    Some(std::env::join_paths(dirs).unwrap().into_string().unwrap())
}

#[test]
fn uvx_entries_install_into_a_venv_of_their_own_with_pip() {
    uvx_install(PythonInstaller::Pip);
}

#[test]
fn uvx_entries_install_into_a_venv_of_their_own_with_uv_when_present() {
    uvx_install(PythonInstaller::Uv);
}

fn uvx_install(installer: PythonInstaller) {
    let path = match installer {
        PythonInstaller::Pip => path_without_uv(),
        PythonInstaller::Uv => match path_with_uv() {
            Some(path) => path,
            None => return,
        },
    };
    let env = Env::new();
    let wheel = wheel("1.0.0");
    let file = "tiny_py_agent-1.0.0-py3-none-any.whl";
    let page = format!(
        "<!DOCTYPE html><html><body><a href=\"/files/{file}#sha256={}\">{file}</a></body></html>",
        agents_support::sha256_hex(&wheel)
    );
    let server = Server::start(vec![
        ("/simple/tiny-py-agent/", Body::Full(page.into_bytes())),
        (
            "/files/tiny_py_agent-1.0.0-py3-none-any.whl",
            Body::Full(wheel),
        ),
    ]);
    let pip_env = [
        ("PIP_INDEX_URL", server.url("/simple/")),
        ("UV_INDEX_URL", server.url("/simple/")),
        ("PIP_CONFIG_FILE", "/dev/null".to_owned()),
        ("PIP_NO_CACHE_DIR", "1".to_owned()),
        (
            "UV_CACHE_DIR",
            env.root.join("uv-cache").display().to_string(),
        ),
        // A Python from PATH, never one downloaded.
        ("UV_PYTHON_DOWNLOADS", "never".to_owned()),
        ("PATH", path),
    ];
    env.write_registry(json!({"id": "tiny-py", "name": "Tiny Python agent", "version": "1.0.0", "description": "d",
                              "distribution": {"uvx": {"package": "tiny-py-agent==1.0.0", "args": ["serve"]}}}));
    let out = env.spindle(&["install", "tiny-py"], &pip_env);
    assert!(out.contains("installed tiny-py 1.0.0"), "{out}");
    // The venv was built in a staging directory and moved: its script still finds its Python.
    assert_eq!(env.run_agent("tiny-py"), "tiny-py-agent 1.0.0 serve\n");
    let record = spindle_agents::InstallRecord::read(&env.dirs(), "tiny-py")
        .unwrap()
        .unwrap();
    assert_eq!(record.program, record.path.join("bin/tiny-py-agent"));
    // uv writes its version into the venv's pyvenv.cfg; `python3 -m venv` does not.
    let cfg = std::fs::read_to_string(record.path.join("pyvenv.cfg")).unwrap();
    assert_eq!(
        cfg.lines().any(|l| l.starts_with("uv =")),
        installer == PythonInstaller::Uv,
        "{installer:?}: {cfg}"
    );
    let script = std::fs::read_to_string(&record.program).unwrap();
    assert!(!script.contains(".staging-"), "{script}");
    assert!(
        env.dirs()
            .agent_dir("tiny-py")
            .read_dir()
            .unwrap()
            .all(|e| !e
                .unwrap()
                .file_name()
                .to_string_lossy()
                .starts_with(".staging"))
    );
}
