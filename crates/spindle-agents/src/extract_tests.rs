//! Hostile archives, built here with the `tar` and `zip` crates: each is unpacked into
//! `<tmp>/root`, and nothing may appear in `<tmp>` beside it.

use super::*;
use std::io::Write;
use std::os::unix::fs::PermissionsExt;

#[derive(Clone, Copy)]
enum E<'a> {
    File(&'a str, &'a [u8], u32),
    Dir(&'a str),
    Symlink(&'a str, &'a str),
    HardLink(&'a str, &'a str),
    Device(&'a str),
    Fifo(&'a str),
}

/// A tar stream with the names written raw (the builder itself refuses `..` and absolute paths).
fn tar_bytes(entries: &[E]) -> Vec<u8> {
    let mut builder = tar::Builder::new(Vec::new());
    for e in entries {
        let mut header = tar::Header::new_gnu();
        let (name, link, kind, data, mode): (&str, &str, tar::EntryType, &[u8], u32) = match *e {
            E::File(n, d, m) => (n, "", tar::EntryType::Regular, d, m),
            E::Dir(n) => (n, "", tar::EntryType::Directory, b"", 0o755),
            E::Symlink(n, t) => (n, t, tar::EntryType::Symlink, b"", 0o777),
            E::HardLink(n, t) => (n, t, tar::EntryType::Link, b"", 0o644),
            E::Device(n) => (n, "", tar::EntryType::Char, b"", 0o644),
            E::Fifo(n) => (n, "", tar::EntryType::Fifo, b"", 0o644),
        };
        let gnu = header.as_gnu_mut().unwrap();
        gnu.name[..name.len()].copy_from_slice(name.as_bytes());
        gnu.linkname[..link.len()].copy_from_slice(link.as_bytes());
        header.set_entry_type(kind);
        header.set_size(data.len() as u64);
        header.set_mode(mode);
        header.set_cksum();
        builder.append(&header, data).unwrap();
    }
    builder.into_inner().unwrap()
}

fn gz(bytes: &[u8]) -> Vec<u8> {
    let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    enc.write_all(bytes).unwrap();
    enc.finish().unwrap()
}

fn bz2(bytes: &[u8]) -> Vec<u8> {
    let mut enc = bzip2::write::BzEncoder::new(Vec::new(), bzip2::Compression::fast());
    enc.write_all(bytes).unwrap();
    enc.finish().unwrap()
}

fn zip_bytes(entries: &[E]) -> Vec<u8> {
    use zip::write::SimpleFileOptions;
    let mut writer = zip::ZipWriter::new(std::io::Cursor::new(Vec::new()));
    for e in entries {
        match *e {
            E::File(n, d, m) => {
                writer
                    .start_file(n, SimpleFileOptions::default().unix_permissions(m))
                    .unwrap();
                writer.write_all(d).unwrap();
            }
            E::Dir(n) => writer
                .add_directory(n, SimpleFileOptions::default())
                .unwrap(),
            E::Symlink(n, t) => writer
                .add_symlink(n, t, SimpleFileOptions::default())
                .unwrap(),
            _ => panic!("zip has no such entry"),
        }
    }
    writer.finish().unwrap().into_inner()
}

/// Unpacks and returns the outcome, after checking that nothing landed beside `root`.
fn unpack(
    bytes: &[u8],
    kind: ArchiveKind,
    limits: ExtractLimits,
) -> (tempfile::TempDir, Result<(), String>) {
    let tmp = tempfile::tempdir().unwrap();
    let archive = tmp.path().join("archive.bin");
    std::fs::write(&archive, bytes).unwrap();
    let root = tmp.path().join("root");
    std::fs::create_dir(&root).unwrap();
    let result = extract(&archive, kind, &root, "agent-bin", limits).map_err(|e| e.to_string());
    std::fs::remove_file(&archive).unwrap();
    let beside: Vec<_> = std::fs::read_dir(tmp.path())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(
        beside,
        ["root"],
        "something was written outside the install directory"
    );
    (tmp, result)
}

const SAFE: ExtractLimits = ExtractLimits {
    max_bytes: 1 << 20,
    max_entries: 100,
};

#[test]
fn hostile_tar_entries_are_refused() {
    let cases: &[(&str, &[E], &str)] = &[
        (
            "parent dir",
            &[E::File("../evil", b"x", 0o644)],
            "the archive entry \"../evil\" is refused: it contains '..'",
        ),
        (
            "parent dir inside",
            &[E::File("a/../../evil", b"x", 0o644)],
            "it contains '..'",
        ),
        (
            "absolute",
            &[E::File("/tmp/evil", b"x", 0o644)],
            "the archive entry \"/tmp/evil\" is refused: it is an absolute path",
        ),
        (
            "symlink out",
            &[E::Symlink("link", "../outside")],
            "the archive entry \"link\" is refused: it is a symlink to ../outside: it leads above the install directory",
        ),
        (
            "symlink absolute",
            &[E::Symlink("link", "/etc")],
            "it is a symlink to the absolute path /etc",
        ),
        (
            "symlink chain out",
            &[
                E::Dir("sub"),
                E::Symlink("sub/up", ".."),
                E::Symlink("out", "sub/up/.."),
            ],
            "the archive entry \"out\" is refused: it is a symlink to sub/up/..: it leads above the install directory",
        ),
        (
            "symlink dangling, then completed",
            &[E::Symlink("x", "d/e/../.."), E::Symlink("d", ".")],
            "the archive entry \"x\" is refused: it is a symlink to d/e/../..: it leads above the install directory",
        ),
        (
            "symlink in a directory that leads out",
            &[E::Symlink("up", ".."), E::Symlink("up/evil", "x")],
            "the archive entry \"up\" is refused",
        ),
        (
            "symlink loop",
            &[E::Symlink("a", "b"), E::Symlink("b", "a")],
            "its symlinks loop",
        ),
        (
            "hard link out",
            &[E::HardLink("h", "../../etc/passwd")],
            "the archive entry \"h\" is refused: it is a hard link to ../../etc/passwd, outside the archive",
        ),
        (
            "hard link absolute",
            &[E::HardLink("h", "/etc/passwd")],
            "outside the archive",
        ),
        (
            "hard link to nothing",
            &[E::HardLink("h", "missing")],
            "which is not a file the archive holds",
        ),
        (
            "device",
            &[E::Device("dev")],
            "the archive entry \"dev\" is refused: it is a device file",
        ),
        ("fifo", &[E::Fifo("pipe")], "it is a FIFO"),
        (
            "file over a directory",
            &[E::Dir("d"), E::File("d", b"x", 0o644)],
            "a directory of the same name came earlier",
        ),
    ];
    for (what, entries, expected) in cases {
        for (kind, bytes) in [
            (ArchiveKind::TarGz, gz(&tar_bytes(entries))),
            (ArchiveKind::TarBz2, bz2(&tar_bytes(entries))),
        ] {
            let (_tmp, result) = unpack(&bytes, kind, SAFE);
            let error = result.expect_err(what);
            assert!(
                error.contains(expected),
                "{what}: {expected:?} not in {error:?}"
            );
        }
    }
}

#[test]
fn limits_on_entries_and_bytes() {
    let limits = ExtractLimits {
        max_bytes: 10,
        max_entries: 3,
    };
    let many = [
        E::File("a", b"", 0o644),
        E::File("b", b"", 0o644),
        E::Dir("c"),
        E::File("c/d", b"", 0o644),
    ];
    let (_t, result) = unpack(&gz(&tar_bytes(&many)), ArchiveKind::TarGz, limits);
    assert_eq!(result.unwrap_err(), "the archive has more than 3 entries");
    let big = [
        E::File("a", b"123456", 0o644),
        E::File("b", b"12345", 0o644),
    ];
    let (_t, result) = unpack(&gz(&tar_bytes(&big)), ArchiveKind::TarGz, limits);
    assert_eq!(
        result.unwrap_err(),
        "the archive unpacks to more than 10 bytes"
    );
    let (_t, result) = unpack(&zip_bytes(&big), ArchiveKind::Zip, limits);
    assert_eq!(
        result.unwrap_err(),
        "the archive unpacks to more than 10 bytes"
    );
    let (_t, result) = unpack(b"not a gzip stream", ArchiveKind::TarGz, limits);
    assert!(
        result
            .unwrap_err()
            .starts_with("the archive cannot be read")
    );
}

#[test]
fn good_archives_keep_executable_bits_and_inside_links() {
    let entries = [
        E::Dir("./pkg/"),
        E::File("./pkg/bin/agent", b"#!/bin/sh\n", 0o775),
        E::File("pkg/README", b"hi", 0o664),
        E::File("pkg/setuid", b"x", 0o4755),
        E::Symlink("pkg/run", "bin/agent"),
        E::Symlink("pkg/dangling", "not-there"),
        E::HardLink("pkg/again", "pkg/README"),
    ];
    for (kind, bytes) in [
        (ArchiveKind::TarGz, gz(&tar_bytes(&entries))),
        (ArchiveKind::TarBz2, bz2(&tar_bytes(&entries))),
    ] {
        let (tmp, result) = unpack(&bytes, kind, SAFE);
        result.unwrap();
        let root = tmp.path().join("root/pkg");
        let mode = |p: &str| {
            std::fs::metadata(root.join(p))
                .unwrap()
                .permissions()
                .mode()
                & 0o7777
        };
        assert_eq!(
            (mode("bin/agent"), mode("README"), mode("setuid")),
            (0o755, 0o644, 0o755)
        );
        assert_eq!(
            std::fs::read_to_string(root.join("run")).unwrap(),
            "#!/bin/sh\n"
        );
        assert_eq!(std::fs::read_to_string(root.join("again")).unwrap(), "hi");
    }
}

#[test]
fn zip_entries_are_held_to_the_same_rules() {
    let cases: &[(&str, &[E], &str)] = &[
        (
            "zip slip",
            &[E::File("../evil", b"x", 0o644)],
            "the archive entry \"../evil\" is refused: it contains '..'",
        ),
        (
            "absolute",
            &[E::File("/evil", b"x", 0o644)],
            "it is an absolute path",
        ),
        (
            "backslash slip",
            &[E::File("..\\evil", b"x", 0o644)],
            "its name holds '\\' or NUL",
        ),
        (
            "symlink out",
            &[E::Symlink("link", "../../etc")],
            "it leads above the install directory",
        ),
    ];
    for (what, entries, expected) in cases {
        let (_tmp, result) = unpack(&zip_bytes(entries), ArchiveKind::Zip, SAFE);
        let error = result.expect_err(what);
        assert!(
            error.contains(expected),
            "{what}: {expected:?} not in {error:?}"
        );
    }
    let good = [
        E::Dir("bin/"),
        E::File("bin/agent", b"#!/bin/sh\n", 0o755),
        E::File("notes.txt", b"n", 0o600),
        E::Symlink("agent", "bin/agent"),
    ];
    let (tmp, result) = unpack(&zip_bytes(&good), ArchiveKind::Zip, SAFE);
    result.unwrap();
    let root = tmp.path().join("root");
    let mode = |p: &str| {
        std::fs::metadata(root.join(p))
            .unwrap()
            .permissions()
            .mode()
            & 0o777
    };
    assert_eq!(
        (mode("bin/agent"), mode("notes.txt"), mode("agent")),
        (0o755, 0o644, 0o755)
    );
}

#[test]
fn a_raw_download_is_the_program() {
    let (tmp, result) = unpack(b"\x7fELF...", ArchiveKind::Raw, SAFE);
    result.unwrap();
    let program = tmp.path().join("root/agent-bin");
    assert_eq!(std::fs::read(&program).unwrap(), b"\x7fELF...");
    assert_eq!(
        std::fs::metadata(&program).unwrap().permissions().mode() & 0o777,
        0o755
    );
}

#[test]
fn archive_kinds_come_from_the_url() {
    for (url, kind) in [
        ("https://h/a/x-1.0.zip", ArchiveKind::Zip),
        ("https://h/x.tar.gz?sig=1", ArchiveKind::TarGz),
        ("https://h/x.TGZ", ArchiveKind::TarGz),
        ("https://h/x.tar.bz2#frag", ArchiveKind::TarBz2),
        ("https://h/x.tbz2", ArchiveKind::TarBz2),
        ("https://h/codex-acp", ArchiveKind::Raw),
        ("https://h/x.tar.xz", ArchiveKind::Raw),
    ] {
        assert_eq!(ArchiveKind::of_url(url), kind, "{url}");
    }
}
