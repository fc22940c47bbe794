//! npm and PyPI installs: the package manager run into a prefix (npm) or a venv (Python) of the
//! agent's own, and the program it installed found.

use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use crate::install_error::InstallError;
use crate::registry::PackageDistribution;

/// Extra environment for the package managers (a test's local registry, a proxy).
pub type ToolEnv = [(String, String)];

/// The first executable `name` on `PATH`.
pub fn find_on_path(name: &str) -> Option<PathBuf> {
    use std::os::unix::fs::PermissionsExt;
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|dir| dir.join(name))
        .find(|p| {
            std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
        })
}

/// Runs a package manager; a failure carries the end of its output.
fn run(program: &Path, args: &[&OsStr], env: &ToolEnv, cwd: &Path) -> Result<(), InstallError> {
    let line = std::iter::once(program.as_os_str())
        .chain(args.iter().copied())
        .map(|a| a.to_string_lossy().into_owned())
        .collect::<Vec<_>>()
        .join(" ");
    let output = Command::new(program)
        .args(args)
        .envs(env.iter().map(|(k, v)| (k, v)))
        .current_dir(cwd)
        .stdin(Stdio::null())
        .output()
        .map_err(|e| InstallError::ToolFailed {
            command: line.clone(),
            status: format!("could not start: {e}"),
            output: String::new(),
        })?;
    if output.status.success() {
        return Ok(());
    }
    let mut text = String::from_utf8_lossy(&output.stdout).into_owned();
    text.push_str(&String::from_utf8_lossy(&output.stderr));
    let lines: Vec<&str> = text.lines().collect();
    let tail = lines[lines.len().saturating_sub(20)..].join("\n");
    Err(InstallError::ToolFailed {
        command: line,
        status: output.status.to_string(),
        output: tail,
    })
}

/// `@scope/name@1.2.3` -> (`@scope/name`, `Some("1.2.3")`).
pub fn split_npm_spec(spec: &str) -> (&str, Option<&str>) {
    let from = usize::from(spec.starts_with('@'));
    match spec[from..].find('@') {
        Some(at) => (&spec[..from + at], Some(&spec[from + at + 1..])),
        None => (spec, None),
    }
}

/// `name[extra]==1.2.3`, `name@1.2.3` (uvx's spelling) -> (`name[extra]`, `Some("1.2.3")`); other
/// specifiers are left in the name.
pub fn split_python_spec(spec: &str) -> (&str, Option<&str>) {
    if let Some((name, version)) = spec.split_once("==") {
        return (name.trim(), Some(version.trim()));
    }
    match spec.split_once('@') {
        Some((name, version)) if !version.contains(':') => (name.trim(), Some(version.trim())),
        _ => (spec, None),
    }
}

/// npm's package.json `bin`: a string (the program is the unscoped package name) or a map (its
/// one entry, or the one named like the package).
fn npm_bin_name(prefix: &Path, package: &str) -> Result<String, String> {
    let manifest = prefix
        .join("node_modules")
        .join(package)
        .join("package.json");
    let text = std::fs::read_to_string(&manifest)
        .map_err(|e| format!("cannot read {}: {e}", manifest.display()))?;
    let json: serde_json::Value =
        serde_json::from_str(&text).map_err(|e| format!("{}: {e}", manifest.display()))?;
    let unscoped = package.rsplit('/').next().unwrap_or(package);
    match json.get("bin") {
        Some(serde_json::Value::String(_)) => Ok(unscoped.to_owned()),
        Some(serde_json::Value::Object(bins)) if bins.len() == 1 => {
            Ok(bins.keys().next().cloned().unwrap_or_default())
        }
        Some(serde_json::Value::Object(bins)) if bins.contains_key(unscoped) => {
            Ok(unscoped.to_owned())
        }
        Some(serde_json::Value::Object(bins)) => Err(format!(
            "{package} installs several programs ({}) and the registry entry names none (`cmd`)",
            bins.keys().cloned().collect::<Vec<_>>().join(", ")
        )),
        _ => Err(format!(
            "{package} installs no program (its package.json has no `bin`)"
        )),
    }
}

/// Installs `name@version` with npm into `prefix`; returns the program's path relative to it.
pub fn install_npm(
    id: &str,
    package: &PackageDistribution,
    version: &str,
    prefix: &Path,
    env: &ToolEnv,
) -> Result<PathBuf, InstallError> {
    let missing = |tool: &str| {
        InstallError::MissingTool {
        id: id.to_owned(),
        kind: "npx",
        tool: tool.to_owned(),
        hint: "install Node.js with npm (https://nodejs.org/), or choose another distribution with --dist".into(),
    }
    };
    let npm = find_on_path("npm").ok_or_else(|| missing("npm"))?;
    find_on_path("node").ok_or_else(|| missing("node"))?;
    let (name, _) = split_npm_spec(&package.package);
    let spec = format!("{name}@{version}");
    run(
        &npm,
        &[
            OsStr::new("install"),
            OsStr::new("--prefix"),
            prefix.as_os_str(),
            OsStr::new("--no-audit"),
            OsStr::new("--no-fund"),
            OsStr::new("--no-save"),
            OsStr::new("--no-update-notifier"),
            OsStr::new(&spec),
        ],
        env,
        prefix,
    )?;
    let cmd = match &package.cmd {
        Some(cmd) => cmd.clone(),
        None => npm_bin_name(prefix, name).map_err(|reason| InstallError::NoProgram {
            id: id.to_owned(),
            program: prefix.join("node_modules/.bin"),
            reason,
        })?,
    };
    Ok(Path::new("node_modules/.bin").join(cmd))
}

/// Installs `name==version` into a venv at `venv` (uv when on `PATH`, else `python3 -m venv` and
/// pip); returns the program's path relative to it.
pub fn install_python(
    id: &str,
    package: &PackageDistribution,
    version: &str,
    venv: &Path,
    env: &ToolEnv,
) -> Result<PathBuf, InstallError> {
    let (name, _) = split_python_spec(&package.package);
    let requirement = format!("{name}=={version}");
    let python = venv.join("bin/python");
    if let Some(uv) = find_on_path("uv") {
        run(
            &uv,
            &[OsStr::new("venv"), OsStr::new("--quiet"), venv.as_os_str()],
            env,
            venv,
        )?;
        run(
            &uv,
            &[
                OsStr::new("pip"),
                OsStr::new("install"),
                OsStr::new("--quiet"),
                OsStr::new("--python"),
                python.as_os_str(),
                OsStr::new(&requirement),
            ],
            env,
            venv,
        )?;
    } else {
        let python3 = find_on_path("python3").ok_or_else(|| InstallError::MissingTool {
            id: id.to_owned(),
            kind: "uvx",
            tool: "python3".into(),
            hint: "install uv (https://docs.astral.sh/uv/) or Python 3 with its venv module, or choose another distribution with --dist".into(),
        })?;
        run(
            &python3,
            &[OsStr::new("-m"), OsStr::new("venv"), venv.as_os_str()],
            env,
            venv,
        )?;
        run(
            &python,
            &[
                OsStr::new("-m"),
                OsStr::new("pip"),
                OsStr::new("install"),
                OsStr::new("--quiet"),
                OsStr::new("--disable-pip-version-check"),
                OsStr::new("--no-input"),
                OsStr::new(&requirement),
            ],
            env,
            venv,
        )?;
    }
    let base = name.split('[').next().unwrap_or(name).trim();
    let cmd = package.cmd.clone().unwrap_or_else(|| base.to_owned());
    Ok(Path::new("bin").join(cmd))
}

/// A venv's scripts name its interpreter by absolute path: after the venv moved from `from` to
/// `to`, the files in `bin/` that name `from` are rewritten to name `to`.
pub fn relocate_venv_scripts(to: &Path, from: &Path) -> std::io::Result<()> {
    let (from, to_bytes) = (
        from.as_os_str().as_encoded_bytes(),
        to.as_os_str().as_encoded_bytes(),
    );
    for entry in std::fs::read_dir(to.join("bin"))? {
        let path = entry?.path();
        let meta = std::fs::symlink_metadata(&path)?;
        if !meta.is_file() || meta.len() > 1 << 20 {
            continue;
        }
        let bytes = std::fs::read(&path)?;
        if !bytes.windows(from.len()).any(|w| w == from) {
            continue;
        }
        let mut out = Vec::with_capacity(bytes.len());
        let mut rest = &bytes[..];
        while let Some(at) = rest.windows(from.len()).position(|w| w == from) {
            out.extend_from_slice(&rest[..at]);
            out.extend_from_slice(to_bytes);
            rest = &rest[at + from.len()..];
        }
        out.extend_from_slice(rest);
        let tmp = path.with_extension("spindle-tmp");
        std::fs::write(&tmp, &out)?;
        std::fs::set_permissions(&tmp, meta.permissions())?;
        std::fs::rename(&tmp, &path)?;
    }
    Ok(())
}
