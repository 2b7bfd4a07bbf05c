//! Writing commands never write outside their destination through a symbolic link, and
//! `--fsync` writes the same data as a default write.
#![cfg(unix)]

use neurochunk_testkit::tree_files_without_uuids;
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
    // A symbolic link in the destination is not part of a Zarr node: without --overwrite
    // the destination is refused. With it, `convert` builds the new tree beside the
    // destination and swaps it in: the old tree, symbolic link included, is removed as it is
    // (the link, not what it points to).
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
        let refused = neurochunk(&args);
        let stderr = String::from_utf8_lossy(&refused.stderr);
        assert_eq!(refused.status.code(), Some(1), "{stderr}");
        assert!(
            stderr.contains("(sub)") && stderr.contains("--overwrite"),
            "{stderr}"
        );
        assert!(std::fs::symlink_metadata(dst.join("sub"))
            .unwrap()
            .file_type()
            .is_symlink());
        args.push(Path::new("--overwrite"));
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
    // What a killed writer of `sub/new` left where the link leads: a refused write must not
    // touch it (no staging, no cleanup through the link).
    let stale = plant_stale_staging(outside.path(), "new");
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
            2,
            "written outside the container"
        );
        assert!(
            stale.is_dir(),
            "a directory outside the container was removed"
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

fn run_ok(args: &[&Path]) {
    let out = neurochunk(args);
    assert!(
        out.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn fsync_nwb_and_table_writers_write_the_same_files() {
    let work = tempfile::tempdir().unwrap();
    let w = work.path();
    let p = |s: &str| w.join(s);
    let a = |s: &'static str| Path::new(s);
    let swc = p("1.swc");
    std::fs::write(&swc, "1 1 0 0 0 1 -1\n2 3 1 0 0 1 1\n3 3 2 0 0 1 2\n").unwrap();
    run_ok(&[a("nwb"), a("demo"), &p("src.nwb.zarr")]);
    let context = a("urn:uuid:00000000-0000-4000-8000-000000000001");
    for fsync in [false, true] {
        let out = |s: &str| p(&format!("{fsync}-{s}"));
        let mut commands: Vec<Vec<&Path>> = Vec::new();
        let (nwb, converted, skel, arrow, hive, derived) = (
            out("demo.nwb.zarr"),
            out("v3.nwb.zarr"),
            out("skeletons.parquet"),
            out("skeletons.arrow"),
            out("skeletons.hive"),
            out("derived.parquet"),
        );
        let src = p("src.nwb.zarr");
        commands.push(vec![a("nwb"), a("demo"), &nwb]);
        commands.push(vec![
            a("nwb"),
            a("convert"),
            &src,
            &converted,
            a("--convention"),
            a("zarr3"),
        ]);
        commands.push(vec![
            a("table"),
            a("from-swc"),
            &swc,
            &skel,
            a("--context"),
            context,
        ]);
        commands.push(vec![a("table"), a("convert"), &skel, &arrow]);
        commands.push(vec![
            a("table"),
            a("convert"),
            &skel,
            &hive,
            a("--partition-by"),
            a("fragment_id"),
        ]);
        commands.push(vec![a("table"), a("derive"), &arrow, &derived]);
        for mut args in commands {
            if fsync {
                args.push(a("--fsync"));
            }
            run_ok(&args);
        }
    }
    for name in [
        "demo.nwb.zarr",
        "v3.nwb.zarr",
        "skeletons.parquet",
        "skeletons.arrow",
        "skeletons.hive",
        "derived.parquet",
    ] {
        let (plain, durable) = (
            tree_files_without_uuids(&p(&format!("false-{name}"))),
            tree_files_without_uuids(&p(&format!("true-{name}"))),
        );
        assert!(!plain.is_empty(), "{name}: nothing written");
        assert!(plain == durable, "{name}: --fsync wrote different files");
    }
}

#[test]
fn demo_takes_fsync_for_every_part() {
    let work = tempfile::tempdir().unwrap();
    let (plain, durable) = (work.path().join("plain"), work.path().join("durable"));
    let size = Path::new("16");
    run_ok(&[Path::new("demo"), &plain, Path::new("--size"), size]);
    run_ok(&[
        Path::new("demo"),
        &durable,
        Path::new("--size"),
        size,
        Path::new("--fsync"),
    ]);
    for part in [
        "tables",
        "ecephys.zarr2.nwb.zarr",
        "ecephys.zarr3.nwb.zarr",
        "session.zarr2",
    ] {
        assert!(
            tree_files_without_uuids(&plain.join(part))
                == tree_files_without_uuids(&durable.join(part)),
            "{part}: --fsync wrote different files"
        );
    }
}

/// A staging directory a killed writer of `name` left in `dir` (its process is gone).
fn plant_stale_staging(dir: &Path, name: &str) -> std::path::PathBuf {
    let stale = dir.join(format!(".{name}.neurochunk-staging-4294967-0"));
    std::fs::create_dir(&stale).unwrap();
    stale
}

#[test]
fn put_through_a_link_inside_the_container_stages_where_the_link_leads() {
    let work = tempfile::tempdir().unwrap();
    let src = source(work.path());
    let npy = work.path().join("in.npy");
    // `alias` is a relative link to the group `sub` of the same container.
    symlink("sub", src.join("alias")).unwrap();
    // The parent group reached through the link: staged (and stale staging directories of
    // the destination cleaned up) in the real group.
    let stale = plant_stale_staging(&src.join("sub"), "new");
    run_ok(&[
        Path::new("put"),
        Path::new("--format"),
        Path::new("zarr3"),
        &npy,
        &src.join("alias/new"),
    ]);
    assert!(src.join("sub/new/zarr.json").is_file());
    assert!(std::fs::symlink_metadata(src.join("alias"))
        .unwrap()
        .file_type()
        .is_symlink());
    assert!(!stale.exists(), "not staged beside the real destination");
    // The destination itself a link inside the container: replaced where it leads, the link
    // stays.
    symlink("sub/data", src.join("data-link")).unwrap();
    run_ok(&[
        Path::new("put"),
        Path::new("--format"),
        Path::new("zarr3"),
        Path::new("--attrs"),
        Path::new(r#"{"version": 2}"#),
        &npy,
        &src.join("data-link"),
    ]);
    assert!(std::fs::symlink_metadata(src.join("data-link"))
        .unwrap()
        .file_type()
        .is_symlink());
    let doc = std::fs::read_to_string(src.join("sub/data/zarr.json")).unwrap();
    assert!(doc.contains("version"), "{doc}");
    let names: Vec<String> = std::fs::read_dir(src.join("sub"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with('.'))
        .collect();
    assert!(names.is_empty(), "left in the group: {names:?}");
}

#[test]
fn writing_to_a_destination_that_is_a_link_replaces_what_it_leads_to() {
    let work = tempfile::tempdir().unwrap();
    let w = work.path();
    let npy = w.join("in.npy");
    write_npy(&npy);
    std::fs::create_dir(w.join("real")).unwrap();
    symlink("real", w.join("alias")).unwrap();
    let src = source(w);
    for (args, check) in [
        (
            vec![
                Path::new("put"),
                Path::new("--format"),
                Path::new("zarr3"),
                &npy,
                &w.join("alias/a.zarr"),
            ],
            "real/a.zarr/zarr.json",
        ),
        (
            vec![Path::new("convert"), &src, &w.join("alias/b.zarr")],
            "real/b.zarr/sub/data/zarr.json",
        ),
    ] {
        run_ok(&args);
        assert!(w.join(check).is_file(), "{check}");
    }
    // The destination itself a link: the tree it leads to is replaced, the link stays.
    symlink("real/a.zarr", w.join("a-link.zarr")).unwrap();
    run_ok(&[
        Path::new("put"),
        Path::new("--format"),
        Path::new("zarr2"),
        &npy,
        &w.join("a-link.zarr"),
    ]);
    assert!(std::fs::symlink_metadata(w.join("a-link.zarr"))
        .unwrap()
        .file_type()
        .is_symlink());
    assert!(w.join("real/a.zarr/.zarray").is_file());
    run_ok(&[
        Path::new("nwb"),
        Path::new("demo"),
        &w.join("real/n.nwb.zarr"),
        Path::new("--convention"),
        Path::new("zarr3"),
    ]);
    symlink("real/n.nwb.zarr", w.join("n-link.nwb.zarr")).unwrap();
    run_ok(&[
        Path::new("nwb"),
        Path::new("demo"),
        &w.join("n-link.nwb.zarr"),
    ]);
    assert!(std::fs::symlink_metadata(w.join("n-link.nwb.zarr"))
        .unwrap()
        .file_type()
        .is_symlink());
    assert!(w.join("real/n.nwb.zarr/.zgroup").is_file());
}
