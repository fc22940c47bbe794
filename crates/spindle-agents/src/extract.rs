//! Unpacking a downloaded archive into an install directory, refusing anything that would land
//! outside it.
//!
//! The rules, enforced here and nowhere else:
//! - an entry's path is relative and has no `..` (absolute paths, `..` and Windows prefixes are
//!   refused, `.` components dropped);
//! - regular files and directories are written first, into a tree that holds no symlink yet, so
//!   no write can pass through one; files are created new (`O_EXCL`), never opened through an
//!   existing name;
//! - symlinks come last: each is made only in a directory that resolves inside the root, its
//!   target must resolve inside the root (following the links already made, hop by hop), and once
//!   all are made every one is resolved again, so a link made dangling and later completed by
//!   another cannot lead out;
//! - a hard link must name a regular file the archive already put inside the root;
//! - device files, FIFOs and anything else are refused;
//! - the number of entries and the bytes written are limited ([`ExtractLimits`]);
//! - a file with any executable bit becomes `0755`, every other file `0644` (no setuid, no
//!   world-writable files).

use std::fs::File;
use std::io::{BufReader, Read};
use std::os::unix::fs::PermissionsExt;
use std::path::{Component, Path, PathBuf};

/// Limits on what one archive may unpack to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ExtractLimits {
    /// Bytes written, all files together.
    pub max_bytes: u64,
    /// Entries of any kind.
    pub max_entries: u64,
}

impl Default for ExtractLimits {
    /// 4 GiB and 100,000 entries: well above any agent release, well below a full disk.
    fn default() -> Self {
        ExtractLimits {
            max_bytes: 4 << 30,
            max_entries: 100_000,
        }
    }
}

/// How a download is unpacked, from its URL's suffix (the registry's list).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ArchiveKind {
    /// `.zip`.
    Zip,
    /// `.tar.gz`, `.tgz`.
    TarGz,
    /// `.tar.bz2`, `.tbz2`.
    TarBz2,
    /// Anything else: the download is the program.
    Raw,
}

impl ArchiveKind {
    /// The kind named by the last path segment of `url` (query and fragment ignored).
    pub fn of_url(url: &str) -> ArchiveKind {
        let path = url
            .split(['?', '#'])
            .next()
            .unwrap_or(url)
            .to_ascii_lowercase();
        if path.ends_with(".zip") {
            ArchiveKind::Zip
        } else if path.ends_with(".tar.gz") || path.ends_with(".tgz") {
            ArchiveKind::TarGz
        } else if path.ends_with(".tar.bz2") || path.ends_with(".tbz2") {
            ArchiveKind::TarBz2
        } else {
            ArchiveKind::Raw
        }
    }
}

/// Why an archive was not unpacked.
#[derive(Debug, thiserror::Error)]
pub enum ExtractError {
    /// An entry that would land outside the install directory, or of a refused kind.
    #[error("the archive entry {entry:?} is refused: {reason}")]
    Unsafe {
        /// The entry's name in the archive.
        entry: String,
        /// Why.
        reason: String,
    },
    /// More entries than allowed.
    #[error("the archive has more than {limit} entries")]
    TooManyEntries {
        /// The limit.
        limit: u64,
    },
    /// More bytes than allowed.
    #[error("the archive unpacks to more than {limit} bytes")]
    TooLarge {
        /// The limit.
        limit: u64,
    },
    /// Not a readable archive of its kind.
    #[error("the archive cannot be read: {0}")]
    Corrupt(String),
    /// Writing failed.
    #[error("cannot write {path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The cause.
        #[source]
        source: std::io::Error,
    },
}

fn io_error(path: &Path) -> impl FnOnce(std::io::Error) -> ExtractError + '_ {
    move |source| ExtractError::Io {
        path: path.to_owned(),
        source,
    }
}

fn refuse(entry: &Path, reason: impl Into<String>) -> ExtractError {
    ExtractError::Unsafe {
        entry: entry.display().to_string(),
        reason: reason.into(),
    }
}

/// Unpacks `archive` (of `kind`) into the existing, empty directory `root`. A raw download is
/// copied to `root/<raw_name>` and made executable.
pub fn extract(
    archive: &Path,
    kind: ArchiveKind,
    root: &Path,
    raw_name: &str,
    limits: ExtractLimits,
) -> Result<(), ExtractError> {
    let root = root.canonicalize().map_err(io_error(root))?;
    let file = File::open(archive).map_err(io_error(archive))?;
    let mut unpacker = Unpacker {
        root: &root,
        limits,
        entries: 0,
        bytes: 0,
        symlinks: Vec::new(),
    };
    match kind {
        ArchiveKind::TarGz => unpacker.tar(flate2::read::GzDecoder::new(BufReader::new(file)))?,
        ArchiveKind::TarBz2 => unpacker.tar(bzip2::read::BzDecoder::new(BufReader::new(file)))?,
        ArchiveKind::Zip => unpacker.zip(file)?,
        ArchiveKind::Raw => {
            let name = Path::new(raw_name);
            let rel = relative_path(name)?;
            if rel.components().count() != 1 {
                return Err(refuse(name, "a raw binary is named by a plain file name"));
            }
            unpacker.count_entry()?;
            unpacker.write_file(&rel, &mut BufReader::new(file), 0o755)?;
        }
    }
    unpacker.make_symlinks()
}

/// `path` as plain relative components: absolute paths, `..` and prefixes refused, `.` dropped.
/// An empty result (`./`) is allowed; the caller skips it.
fn relative_path(path: &Path) -> Result<PathBuf, ExtractError> {
    let mut out = PathBuf::new();
    for component in path.components() {
        match component {
            Component::Normal(part) => out.push(part),
            Component::CurDir => {}
            Component::ParentDir => return Err(refuse(path, "it contains '..'")),
            Component::RootDir | Component::Prefix(_) => {
                return Err(refuse(path, "it is an absolute path"));
            }
        }
    }
    Ok(out)
}

/// Resolves `rel` under `root` as the kernel would, one component at a time, following the
/// symlinks that exist: `Err(reason)` when a step leaves `root` (an absolute link target, `..` above
/// the root) or links loop. Missing components are taken as they are written. Returns the
/// resolved relative path.
pub(crate) fn resolve_inside(root: &Path, rel: &Path) -> Result<PathBuf, String> {
    const MAX_HOPS: usize = 40;
    let mut todo: Vec<std::ffi::OsString> = Vec::new();
    push_components(&mut todo, rel)?;
    let mut done: Vec<std::ffi::OsString> = Vec::new();
    let mut hops = 0;
    while let Some(part) = todo.pop() {
        if part == ".." {
            if done.pop().is_none() {
                return Err("it leads above the install directory".into());
            }
            continue;
        }
        done.push(part);
        let here: PathBuf = root.join(done.iter().collect::<PathBuf>());
        let Ok(meta) = std::fs::symlink_metadata(&here) else {
            continue;
        };
        if !meta.file_type().is_symlink() {
            continue;
        }
        hops += 1;
        if hops > MAX_HOPS {
            return Err("its symlinks loop".into());
        }
        let target = std::fs::read_link(&here).map_err(|e| e.to_string())?;
        if target.is_absolute() {
            return Err(format!(
                "a symlink on the way points to the absolute path {}",
                target.display()
            ));
        }
        done.pop();
        push_components(&mut todo, &target)?;
    }
    Ok(done.iter().collect())
}

/// Pushes `path`'s components onto the stack `todo` so the first is popped first.
fn push_components(todo: &mut Vec<std::ffi::OsString>, path: &Path) -> Result<(), String> {
    let mut parts = Vec::new();
    for component in path.components() {
        match component {
            Component::Normal(p) => parts.push(p.to_owned()),
            Component::ParentDir => parts.push("..".into()),
            Component::CurDir => {}
            Component::RootDir | Component::Prefix(_) => {
                return Err(format!("{} is an absolute path", path.display()));
            }
        }
    }
    todo.extend(parts.into_iter().rev());
    Ok(())
}

struct Unpacker<'a> {
    root: &'a Path,
    limits: ExtractLimits,
    entries: u64,
    bytes: u64,
    /// (link path, target), made after every file.
    symlinks: Vec<(PathBuf, PathBuf)>,
}

impl Unpacker<'_> {
    fn count_entry(&mut self) -> Result<(), ExtractError> {
        self.entries += 1;
        if self.entries > self.limits.max_entries {
            return Err(ExtractError::TooManyEntries {
                limit: self.limits.max_entries,
            });
        }
        Ok(())
    }

    fn make_dir(&self, rel: &Path) -> Result<(), ExtractError> {
        let path = self.root.join(rel);
        std::fs::create_dir_all(&path).map_err(io_error(&path))?;
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755))
            .map_err(io_error(&path))
    }

    /// Writes a new regular file (a duplicate entry replaces an earlier file, never a directory).
    fn write_file(
        &mut self,
        rel: &Path,
        data: &mut dyn Read,
        mode: u32,
    ) -> Result<(), ExtractError> {
        if let Some(parent) = rel.parent() {
            self.make_dir(parent)?;
        }
        let path = self.root.join(rel);
        if let Ok(meta) = std::fs::symlink_metadata(&path) {
            if meta.is_dir() {
                return Err(refuse(rel, "a directory of the same name came earlier"));
            }
            std::fs::remove_file(&path).map_err(io_error(&path))?;
        }
        let mut file = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&path)
            .map_err(io_error(&path))?;
        let room = self.limits.max_bytes - self.bytes;
        let written = std::io::copy(&mut data.take(room + 1), &mut file).map_err(|e| {
            if e.kind() == std::io::ErrorKind::InvalidData
                || e.kind() == std::io::ErrorKind::UnexpectedEof
            {
                ExtractError::Corrupt(e.to_string())
            } else {
                io_error(&path)(e)
            }
        })?;
        if written > room {
            return Err(ExtractError::TooLarge {
                limit: self.limits.max_bytes,
            });
        }
        self.bytes += written;
        let mode = if mode & 0o111 != 0 { 0o755 } else { 0o644 };
        file.set_permissions(std::fs::Permissions::from_mode(mode))
            .map_err(io_error(&path))
    }

    fn hard_link(&mut self, rel: &Path, target: &Path) -> Result<(), ExtractError> {
        let target_rel = relative_path(target).map_err(|_| {
            refuse(
                rel,
                format!(
                    "it is a hard link to {}, outside the archive",
                    target.display()
                ),
            )
        })?;
        let source = self.root.join(&target_rel);
        let is_file = std::fs::symlink_metadata(&source).is_ok_and(|m| m.is_file());
        if target_rel.as_os_str().is_empty() || !is_file {
            return Err(refuse(
                rel,
                format!(
                    "it is a hard link to {}, which is not a file the archive holds",
                    target.display()
                ),
            ));
        }
        if let Some(parent) = rel.parent() {
            self.make_dir(parent)?;
        }
        let path = self.root.join(rel);
        if std::fs::symlink_metadata(&path).is_ok() {
            return Err(refuse(rel, "an entry of the same name came earlier"));
        }
        std::fs::hard_link(&source, &path).map_err(io_error(&path))
    }

    fn make_symlinks(self) -> Result<(), ExtractError> {
        for (rel, target) in &self.symlinks {
            let name = rel.file_name().expect("a relative path with a name");
            let parent = rel.parent().unwrap_or(Path::new(""));
            let parent = resolve_inside(self.root, parent)
                .map_err(|reason| refuse(rel, format!("its directory escapes: {reason}")))?;
            let link = self.root.join(&parent).join(name);
            if target.is_absolute() {
                return Err(refuse(
                    rel,
                    format!("it is a symlink to the absolute path {}", target.display()),
                ));
            }
            let parent_dir = self.root.join(&parent);
            if !std::fs::symlink_metadata(&parent_dir).is_ok_and(|m| m.is_dir()) {
                std::fs::create_dir_all(&parent_dir).map_err(io_error(&parent_dir))?;
            }
            std::os::unix::fs::symlink(target, &link).map_err(io_error(&link))?;
            resolve_inside(self.root, &parent.join(name)).map_err(|reason| {
                refuse(
                    rel,
                    format!("it is a symlink to {}: {reason}", target.display()),
                )
            })?;
        }
        // The final tree decides: a link that was dangling when made may now lead somewhere else.
        for (rel, target) in &self.symlinks {
            resolve_inside(self.root, rel).map_err(|reason| {
                refuse(
                    rel,
                    format!("it is a symlink to {}: {reason}", target.display()),
                )
            })?;
        }
        Ok(())
    }

    fn tar(&mut self, reader: impl Read) -> Result<(), ExtractError> {
        let mut archive = tar::Archive::new(reader);
        let entries = archive
            .entries()
            .map_err(|e| ExtractError::Corrupt(e.to_string()))?;
        for entry in entries {
            let mut entry = entry.map_err(|e| ExtractError::Corrupt(e.to_string()))?;
            let name = entry
                .path()
                .map_err(|e| ExtractError::Corrupt(e.to_string()))?
                .into_owned();
            let kind = entry.header().entry_type();
            if kind.is_pax_global_extensions()
                || kind.is_pax_local_extensions()
                || kind.is_gnu_longname()
                || kind.is_gnu_longlink()
            {
                continue;
            }
            self.count_entry()?;
            let rel = relative_path(&name)?;
            if rel.as_os_str().is_empty() {
                if kind.is_dir() {
                    continue;
                }
                return Err(refuse(&name, "it has no name"));
            }
            let link_name = || -> Result<PathBuf, ExtractError> {
                Ok(entry
                    .link_name()
                    .map_err(|e| ExtractError::Corrupt(e.to_string()))?
                    .ok_or_else(|| refuse(&name, "a link without a target"))?
                    .into_owned())
            };
            if kind.is_file() || kind.is_contiguous() {
                let mode = entry.header().mode().unwrap_or(0o644);
                self.write_file(&rel, &mut entry, mode)?;
            } else if kind.is_dir() {
                self.make_dir(&rel)?;
            } else if kind.is_symlink() {
                let target = link_name()?;
                self.symlinks.push((rel, target));
            } else if kind.is_hard_link() {
                let target = link_name()?;
                self.hard_link(&rel, &target)?;
            } else {
                let what = if kind.is_character_special() || kind.is_block_special() {
                    "it is a device file"
                } else if kind.is_fifo() {
                    "it is a FIFO"
                } else {
                    "it is neither a file, a directory nor a link"
                };
                return Err(refuse(&name, what));
            }
        }
        Ok(())
    }

    fn zip(&mut self, file: File) -> Result<(), ExtractError> {
        let mut archive = zip::ZipArchive::new(BufReader::new(file))
            .map_err(|e| ExtractError::Corrupt(e.to_string()))?;
        for index in 0..archive.len() {
            let mut entry = archive
                .by_index(index)
                .map_err(|e| ExtractError::Corrupt(e.to_string()))?;
            self.count_entry()?;
            let name = entry
                .name()
                .map_err(|e| ExtractError::Corrupt(e.to_string()))?
                .into_owned();
            if name.contains('\\') || name.contains('\0') {
                return Err(refuse(Path::new(&name), "its name holds '\\' or NUL"));
            }
            let rel = relative_path(Path::new(&name))?;
            if rel.as_os_str().is_empty() {
                continue;
            }
            if entry.is_dir() {
                self.make_dir(&rel)?;
            } else if entry.is_symlink() {
                let mut target = String::new();
                (&mut entry)
                    .take(4096)
                    .read_to_string(&mut target)
                    .map_err(|e| ExtractError::Corrupt(e.to_string()))?;
                self.symlinks.push((rel, PathBuf::from(target)));
            } else {
                let mode = entry.unix_mode().unwrap_or(0o644);
                let kind = mode & 0o170000;
                if kind != 0 && kind != 0o100000 {
                    return Err(refuse(
                        Path::new(&name),
                        "it is neither a file, a directory nor a link",
                    ));
                }
                self.write_file(&rel, &mut entry, mode)?;
            }
        }
        Ok(())
    }
}

#[cfg(test)]
#[path = "extract_tests.rs"]
mod tests;
