//! Replacing a destination never deletes what is not ours. Every writing command, given a
//! destination that holds files of another kind (a directory of unrelated files, a symbolic
//! link to one, a file of another kind), fails with one line naming the destination and what
//! would be lost, and leaves every file where it was; an earlier output of its own kind
//! is replaced, also through a link (which stays a link); `--overwrite` replaces anything.
#![cfg(unix)]

use std::ffi::OsString;
use std::os::unix::fs::symlink;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn neurochunk(args: &[OsString]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_neurochunk"))
        .args(args)
        .output()
        .unwrap()
}

fn run_ok(args: &[OsString]) {
    let out = neurochunk(args);
    assert!(
        out.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

fn os(parts: &[&dyn AsRef<std::ffi::OsStr>]) -> Vec<OsString> {
    parts.iter().map(|p| p.as_ref().to_os_string()).collect()
}

/// A 4×6 `uint16` .npy file.
fn write_npy(path: &Path) {
    let values: Vec<u8> = (0u16..24).flat_map(|v| (v * 7).to_le_bytes()).collect();
    neurochunk_dtype::npy::write_npy(path, &neurochunk_dtype::DataType::UInt16, &[4, 6], &values)
        .unwrap();
}

/// The inputs every command reads, made once per test in `work`.
struct Inputs {
    npy: PathBuf,
    zarr: PathBuf,
    nwb: PathBuf,
    hdf5: PathBuf,
    swc: PathBuf,
    parquet: PathBuf,
}

const CONTEXT: &str = "urn:uuid:00000000-0000-4000-8000-000000000029";

fn inputs(work: &Path) -> Inputs {
    let npy = work.join("in.npy");
    write_npy(&npy);
    let zarr = work.join("src.zarr");
    run_ok(&os(&[
        &"put",
        &npy,
        &zarr.join("sub/data"),
        &"--format",
        &"zarr3",
    ]));
    let nwb = work.join("src.nwb.zarr");
    run_ok(&os(&[&"nwb", &"demo", &nwb]));
    let swc = work.join("7.swc");
    std::fs::write(&swc, "1 1 0 0 0 1 -1\n2 3 1 0 0 1 1\n3 3 2 0 0 1 2\n").unwrap();
    let parquet = work.join("in.skeletons.parquet");
    run_ok(&os(&[
        &"table",
        &"from-swc",
        &swc,
        &parquet,
        &"--context",
        &CONTEXT,
    ]));
    // An HDF5 NWB file written by pynwb (see crates/hdf5/tests/data).
    let hdf5 = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../hdf5/tests/data/1.5.1_timeseries_no_unit.nwb");
    Inputs {
        npy,
        zarr,
        nwb,
        hdf5,
        swc,
        parquet,
    }
}

/// A writer of a directory tree: its name, the arguments that write `dest`, and a file its
/// output always holds.
struct TreeWriter {
    name: &'static str,
    args: fn(&Inputs, &Path) -> Vec<OsString>,
    marker: &'static str,
}

const TREE_WRITERS: &[TreeWriter] = &[
    TreeWriter {
        name: "put",
        args: |i, d| os(&[&"put", &i.npy, &d, &"--format", &"zarr3"]),
        marker: "zarr.json",
    },
    TreeWriter {
        name: "convert",
        args: |i, d| os(&[&"convert", &i.zarr, &d, &"--format", &"zarr2"]),
        marker: "sub/data/.zarray",
    },
    TreeWriter {
        name: "pyramid",
        args: |i, d| os(&[&"pyramid", &i.zarr.join("sub/data"), &d, &"--levels", &"2"]),
        marker: "1/zarr.json",
    },
    TreeWriter {
        name: "nwb demo",
        args: |_, d| os(&[&"nwb", &"demo", &d, &"--convention", &"zarr3"]),
        marker: "acquisition/zarr.json",
    },
    TreeWriter {
        name: "nwb convert",
        args: |i, d| os(&[&"nwb", &"convert", &i.nwb, &d, &"--convention", &"zarr3"]),
        marker: "units/zarr.json",
    },
    TreeWriter {
        name: "nwb import",
        args: |i, d| os(&[&"nwb", &"import", &i.hdf5, &d, &"--convention", &"zarr2"]),
        marker: "acquisition/.zgroup",
    },
    TreeWriter {
        name: "table convert (Hive)",
        args: |i, d| {
            os(&[
                &"table",
                &"convert",
                &i.parquet,
                &d,
                &"--partition-by",
                &"fragment_id",
            ])
        },
        marker: "_common_metadata",
    },
    TreeWriter {
        name: "table from-swc (Hive)",
        args: |i, d| {
            os(&[
                &"table",
                &"from-swc",
                &i.swc,
                &d,
                &"--context",
                &CONTEXT,
                &"--partition-by",
                &"fragment_id",
            ])
        },
        marker: "_common_metadata",
    },
    TreeWriter {
        name: "demo",
        args: |_, d| os(&[&"demo", &d, &"--size", &"8"]),
        marker: "tables/demo.skeletons.parquet",
    },
];

/// A directory of someone's files: a note at the top and an image one level down.
fn foreign_dir(dir: &Path) {
    std::fs::create_dir_all(dir.join("raw")).unwrap();
    std::fs::write(dir.join("notes.txt"), b"my notes").unwrap();
    std::fs::write(dir.join("raw/cell.tif"), b"pixels").unwrap();
}

fn foreign_files_kept(dir: &Path) -> bool {
    std::fs::read(dir.join("notes.txt")).ok().as_deref() == Some(&b"my notes"[..])
        && std::fs::read(dir.join("raw/cell.tif")).ok().as_deref() == Some(&b"pixels"[..])
}

/// The names in `dir` that a writer left behind (hidden staging directories, temporary files).
fn leftovers(dir: &Path) -> Vec<String> {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.contains("neurochunk-"))
        .collect()
}

/// Run `args`, expecting a refusal: the command family's error status (1; 2 for `table`,
/// whose 1 means invalid data) and one line naming `shown` and a foreign file.
fn refused(what: &str, args: &[OsString], shown: &Path, lost: &str) {
    let out = neurochunk(args);
    let stderr = String::from_utf8_lossy(&out.stderr);
    let status = if args[0] == "table" { 2 } else { 1 };
    assert_eq!(
        out.status.code(),
        Some(status),
        "{what}: {args:?}: {stderr}"
    );
    let lines: Vec<&str> = stderr.lines().collect();
    assert_eq!(lines.len(), 1, "{what}: {stderr}");
    let name = shown.file_name().unwrap().to_string_lossy();
    assert!(
        lines[0].starts_with("neurochunk")
            && lines[0].contains(name.as_ref())
            && lines[0].contains(lost)
            && lines[0].contains("--overwrite"),
        "{what}: {stderr}"
    );
}

#[test]
fn tree_writers_refuse_foreign_directories_and_links_to_them() {
    let work = tempfile::tempdir().unwrap();
    let w = work.path();
    let i = inputs(w);
    for (n, writer) in TREE_WRITERS.iter().enumerate() {
        let what = writer.name;
        // A directory holding other files.
        let dest = w.join(format!("experiments-{n}"));
        foreign_dir(&dest);
        refused(what, &(writer.args)(&i, &dest), &dest, "notes.txt");
        assert!(foreign_files_kept(&dest), "{what}: a foreign file was lost");
        assert!(!dest.join(writer.marker).exists(), "{what}: wrote into it");
        assert!(leftovers(w).is_empty(), "{what}: left {:?}", leftovers(w));

        // A symbolic link to such a directory: refused the same way, the link kept.
        let target = w.join(format!("lab-share-{n}"));
        foreign_dir(&target);
        let link = w.join(format!("link-{n}"));
        symlink(&target, &link).unwrap();
        refused(what, &(writer.args)(&i, &link), &target, "raw/cell.tif");
        assert!(
            foreign_files_kept(&target),
            "{what}: a file behind the link was lost"
        );
        assert!(std::fs::symlink_metadata(&link)
            .unwrap()
            .file_type()
            .is_symlink());

        // A file of another kind where the tree would go.
        let file = w.join(format!("thesis-{n}.txt"));
        std::fs::write(&file, b"chapter 1").unwrap();
        refused(what, &(writer.args)(&i, &file), &file, "it is a file");
        assert_eq!(std::fs::read(&file).unwrap(), b"chapter 1", "{what}");

        // --overwrite replaces the directory whatever it holds.
        let mut args = (writer.args)(&i, &dest);
        args.push("--overwrite".into());
        run_ok(&args);
        assert!(dest.join(writer.marker).is_file(), "{what}: not written");
        assert!(
            !dest.join("notes.txt").exists(),
            "{what}: --overwrite kept the files"
        );
        assert!(leftovers(w).is_empty(), "{what}: left {:?}", leftovers(w));
    }
}

#[test]
fn tree_writers_replace_their_own_output_also_through_a_link() {
    let work = tempfile::tempdir().unwrap();
    let w = work.path();
    let i = inputs(w);
    for (n, writer) in TREE_WRITERS.iter().enumerate() {
        let what = writer.name;
        let real = w.join(format!("real-{n}"));
        run_ok(&(writer.args)(&i, &real));
        assert!(real.join(writer.marker).is_file(), "{what}: not written");
        // Written again in place: an earlier output of its own kind is replaced.
        run_ok(&(writer.args)(&i, &real));
        // Through a link to it: replaced where the link leads, the link kept.
        let link = w.join(format!("alias-{n}"));
        symlink(&real, &link).unwrap();
        // What a killed writer left in it belongs to every kind of output, and goes with
        // the old tree.
        let old = real.join(".neurochunk-tmp-4294967-0");
        std::fs::write(&old, b"partial").unwrap();
        run_ok(&(writer.args)(&i, &link));
        assert!(real.join(writer.marker).is_file(), "{what}: not written");
        assert!(!old.exists(), "{what}: not replaced");
        assert!(
            std::fs::symlink_metadata(&link)
                .unwrap()
                .file_type()
                .is_symlink(),
            "{what}: the link was replaced"
        );
        assert!(leftovers(w).is_empty(), "{what}: left {:?}", leftovers(w));
    }
}

#[test]
fn put_into_a_container_replaces_a_node_but_not_a_foreign_directory_in_it() {
    let work = tempfile::tempdir().unwrap();
    let w = work.path();
    let i = inputs(w);
    // A node of the container holding a file of someone's: refused, the file kept.
    std::fs::write(i.zarr.join("sub/data/README.md"), b"how this was acquired").unwrap();
    let dest = i.zarr.join("sub/data");
    refused(
        "put",
        &os(&[&"put", &i.npy, &dest, &"--format", &"zarr3"]),
        &dest,
        "README.md",
    );
    assert!(i.zarr.join("sub/data/README.md").is_file());
    // Without it, the node is replaced and its siblings stay.
    std::fs::remove_file(i.zarr.join("sub/data/README.md")).unwrap();
    run_ok(&os(&[
        &"put",
        &i.npy,
        &i.zarr.join("sub/other"),
        &"--format",
        &"zarr3",
    ]));
    run_ok(&os(&[
        &"put",
        &i.npy,
        &dest,
        &"--format",
        &"zarr3",
        &"--attrs",
        &r#"{"v": 2}"#,
    ]));
    let doc = std::fs::read_to_string(dest.join("zarr.json")).unwrap();
    assert!(doc.contains("\"v\": 2"), "{doc}");
    assert!(i.zarr.join("sub/other/zarr.json").is_file());
}

#[test]
fn file_writers_replace_only_files_of_their_kind() {
    let work = tempfile::tempdir().unwrap();
    let w = work.path();
    let i = inputs(w);
    let table = |d: &Path| os(&[&"table", &"convert", &i.parquet, &d]);
    let lindi = |d: &Path| os(&[&"nwb", &"import", &i.hdf5, &d, &"--virtual"]);
    for (what, args, name) in [
        (
            "table convert",
            &table as &dyn Fn(&Path) -> Vec<OsString>,
            "out.skeletons.parquet",
        ),
        ("nwb import --virtual", &lindi, "out.lindi.json"),
    ] {
        // A file of another kind under the output's name.
        let dest = w.join(name);
        std::fs::write(&dest, b"not a table, not a reference file").unwrap();
        refused(what, &args(&dest), &dest, "it is not a");
        assert_eq!(
            std::fs::read(&dest).unwrap(),
            b"not a table, not a reference file",
            "{what}"
        );
        // A directory holding files under the output's name.
        let dir = w.join(format!("dir-{name}"));
        foreign_dir(&dir);
        refused(what, &args(&dir), &dir, "it is a directory");
        assert!(foreign_files_kept(&dir), "{what}");
        // --overwrite replaces the file; then the output is of its kind and is replaced.
        let mut forced = args(&dest);
        forced.push("--overwrite".into());
        run_ok(&forced);
        run_ok(&args(&dest));
        let head = std::fs::read(&dest).unwrap();
        assert!(
            head.starts_with(b"PAR1") || head.starts_with(b"{"),
            "{what}"
        );
    }
}

/// Change the JSON document at `path` with `edit`.
fn patch_json(path: &Path, edit: impl FnOnce(&mut serde_json::Value)) {
    let mut doc: serde_json::Value = serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap();
    edit(&mut doc);
    std::fs::write(path, serde_json::to_vec(&doc).unwrap()).unwrap();
}

#[test]
fn tree_exits_1_naming_a_node_whose_consolidated_document_is_malformed() {
    let work = tempfile::tempdir().unwrap();
    let w = work.path();
    let i = inputs(w);
    run_ok(&os(&[&"consolidate", &i.zarr]));
    // The consolidated copy of `sub/data` loses its shape; the array's own document is
    // malformed the same way.
    let root = i.zarr.join("zarr.json");
    patch_json(&root, |doc| {
        doc["consolidated_metadata"]["metadata"]["sub/data"]["shape"] = serde_json::json!("four")
    });
    patch_json(&i.zarr.join("sub/data/zarr.json"), |doc| {
        doc["shape"] = serde_json::json!("four")
    });
    for consolidated in [true, false] {
        if !consolidated {
            patch_json(&root, |doc| {
                doc.as_object_mut().unwrap().remove("consolidated_metadata");
            });
        }
        for json in [false, true] {
            let mut args = os(&[&"tree", &i.zarr]);
            if json {
                args.push("--json".into());
            }
            let out = neurochunk(&args);
            let (stdout, stderr) = (
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr),
            );
            assert_eq!(
                out.status.code(),
                Some(1),
                "{consolidated} {json}: {stderr}"
            );
            assert!(
                stderr.contains("'/sub/data'") && stderr.contains("shape"),
                "{stderr}"
            );
            // The rest of the tree is still shown.
            assert!(stdout.contains("sub"), "{stdout}");
        }
    }
}

#[test]
fn nwb_inspect_names_a_dataset_of_unknown_zarr_dtype() {
    let work = tempfile::tempdir().unwrap();
    let w = work.path();
    let i = inputs(w);
    for (dtype, shown) in [
        (serde_json::json!("float99"), "float99"),
        (
            serde_json::json!([{"name": "x", "dtype": "float99"}]),
            "float99",
        ),
    ] {
        // In the dataset's own attributes and in the consolidated copy.
        patch_json(&i.nwb.join("units/spike_times/.zattrs"), |doc| {
            doc["zarr_dtype"] = dtype.clone()
        });
        patch_json(&i.nwb.join(".zmetadata"), |doc| {
            doc["metadata"]["units/spike_times/.zattrs"]["zarr_dtype"] = dtype
        });
        let out = neurochunk(&os(&[&"nwb", &"inspect", &i.nwb]));
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{stderr}");
        assert!(
            stderr.contains("'/units/spike_times'")
                && stderr.contains("unknown zarr_dtype")
                && stderr.contains(shown),
            "{stderr}"
        );
    }
}
