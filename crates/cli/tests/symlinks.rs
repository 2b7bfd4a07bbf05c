//! Writing commands never write outside their destination through a symbolic link, and
//! `--fsync` writes the same data as a default write.
#![cfg(unix)]

use std::os::unix::fs::symlink;
use std::path::Path;
use std::process::{Command, Output};

fn neurochunk(args: &[&Path]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_neurochunk"))
        .args(args)
        .output()
        .unwrap()
}

/// A 4×3 `uint8` .npy file.
fn write_npy(path: &Path) {
    let mut header = String::from("{'descr': '|u1', 'fortran_order': False, 'shape': (4, 3), }");
    while (10 + header.len() + 1) % 64 != 0 {
        header.push(' ');
    }
    header.push('\n');
    let mut bytes = b"\x93NUMPY\x01\x00".to_vec();
    bytes.extend_from_slice(&(header.len() as u16).to_le_bytes());
    bytes.extend_from_slice(header.as_bytes());
    bytes.extend(0u8..12);
    std::fs::write(path, bytes).unwrap();
}

/// A Zarr v3 hierarchy with an array at `sub/data`.
fn source(dir: &Path) -> std::path::PathBuf {
    let npy = dir.join("in.npy");
    write_npy(&npy);
    let src = dir.join("src.zarr");
    let p = |s: &str| Path::new(s).to_path_buf();
    let out = Command::new(env!("CARGO_BIN_EXE_neurochunk"))
        .arg("put")
        .arg(&npy)
        .arg(src.join("sub/data"))
        .args([p("--format"), p("zarr3")])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    src
}

fn count_entries(dir: &Path) -> usize {
    std::fs::read_dir(dir).unwrap().count()
}

#[test]
fn convert_replaces_a_destination_holding_a_symlink_without_touching_its_target() {
    // `convert` builds the new tree beside the destination and swaps it in: the old tree,
    // symbolic link included, is removed as it is (the link, not what it points to).
    let work = tempfile::tempdir().unwrap();
    let outside = tempfile::tempdir().unwrap();
    std::fs::write(outside.path().join("keep"), b"untouched").unwrap();
    let src = source(work.path());
    for fsync in [false, true] {
        let dst = work.path().join(format!("dst-{fsync}.zarr"));
        std::fs::create_dir(&dst).unwrap();
        symlink(outside.path(), dst.join("sub")).unwrap();
        let mut args = vec![Path::new("convert")];
        if fsync {
            args.push(Path::new("--fsync"));
        }
        args.extend([src.as_path(), dst.as_path()]);
        let output = neurochunk(&args);
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(output.status.success(), "{stderr}");
        let sub = std::fs::symlink_metadata(dst.join("sub")).unwrap();
        assert!(sub.is_dir() && !sub.file_type().is_symlink());
        assert!(dst.join("sub/data/zarr.json").is_file());
        assert_eq!(
            count_entries(outside.path()),
            1,
            "the link's target changed"
        );
        assert_eq!(
            std::fs::read(outside.path().join("keep")).unwrap(),
            b"untouched"
        );
    }
}

#[test]
fn put_refuses_to_write_through_a_symlink_out_of_the_container() {
    let work = tempfile::tempdir().unwrap();
    let outside = tempfile::tempdir().unwrap();
    let src = source(work.path());
    // The group `sub` of the container is a link to a group outside it.
    let link = src.join("sub");
    std::fs::copy(link.join("zarr.json"), outside.path().join("zarr.json")).unwrap();
    std::fs::remove_dir_all(&link).unwrap();
    symlink(outside.path(), &link).unwrap();
    let npy = work.path().join("in.npy");
    for fsync in [false, true] {
        let target = src.join("sub/new");
        let mut args = vec![Path::new("put")];
        if fsync {
            args.push(Path::new("--fsync"));
        }
        args.extend([
            Path::new("--format"),
            Path::new("zarr3"),
            npy.as_path(),
            target.as_path(),
        ]);
        let output = neurochunk(&args);
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(1), "{stderr}");
        let lines: Vec<&str> = stderr.lines().collect();
        assert_eq!(lines.len(), 1, "{stderr}");
        assert!(lines[0].starts_with("neurochunk: error: "), "{stderr}");
        assert!(lines[0].contains("symbolic link"), "{stderr}");
        assert_eq!(
            count_entries(outside.path()),
            1,
            "written outside the container"
        );
    }
}

#[test]
fn fsync_writes_the_same_tree() {
    let work = tempfile::tempdir().unwrap();
    let src = source(work.path());
    let plain = work.path().join("plain.zarr");
    let durable = work.path().join("durable.zarr");
    let convert = Path::new("convert");
    let format = [Path::new("--format"), Path::new("zarr2")];
    let fsync = Path::new("--fsync");
    for args in [
        vec![convert, &src, &plain, format[0], format[1]],
        vec![convert, fsync, &src, &durable, format[0], format[1]],
        vec![Path::new("consolidate"), fsync, &durable],
        vec![Path::new("consolidate"), &plain],
    ] {
        let out = neurochunk(&args);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    for key in [".zmetadata", "sub/data/.zarray", "sub/data/0.0"] {
        assert_eq!(
            std::fs::read(plain.join(key)).unwrap(),
            std::fs::read(durable.join(key)).unwrap(),
            "{key}"
        );
    }
}
