//! Every path argument also takes a URL: the commands driven with `file://` URLs, which go
//! through the remote store adapter (`object_store`'s local file system), and the errors of
//! URLs that name nothing the tool can open.

use std::path::Path;
use std::process::{Command, Output};

fn run(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_neurochunk"))
        .args(args)
        .env_remove("NEUROCHUNK_ENDPOINT")
        .env_remove("NEUROCHUNK_ANON")
        .output()
        .unwrap()
}

fn ok(args: &[&str]) -> String {
    let output = run(args);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{args:?}: {stderr}");
    String::from_utf8_lossy(&output.stdout).into_owned()
}

fn url(path: &Path) -> String {
    format!("file://{}", path.display())
}

/// A float64 .npy file of `rows` x `cols` counting up.
fn write_npy(path: &Path, rows: usize, cols: usize) {
    let mut header =
        format!("{{'descr': '<f8', 'fortran_order': False, 'shape': ({rows}, {cols}), }}");
    while (header.len() + 11) % 64 != 0 {
        header.push(' ');
    }
    header.push('\n');
    let mut bytes = b"\x93NUMPY\x01\x00".to_vec();
    bytes.extend_from_slice(&(header.len() as u16).to_le_bytes());
    bytes.extend_from_slice(header.as_bytes());
    for i in 0..rows * cols {
        bytes.extend_from_slice(&(i as f64).to_le_bytes());
    }
    std::fs::write(path, bytes).unwrap();
}

#[test]
fn arrays_move_through_file_urls() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    write_npy(&d.join("in.npy"), 30, 20);
    let array = url(&d.join("a.zarr"));
    ok(&[
        "put",
        d.join("in.npy").to_str().unwrap(),
        &array,
        "--format",
        "zarr3",
        "--chunks",
        "5,5",
        "--shards",
        "10,10",
    ]);
    assert!(d.join("a.zarr/zarr.json").is_file());
    assert!(ok(&["tree", &array]).contains("[30, 20] float64"));
    ok(&["get", &array, "-o", d.join("out.npy").to_str().unwrap()]);
    assert_eq!(
        std::fs::read(d.join("out.npy")).unwrap(),
        std::fs::read(d.join("in.npy")).unwrap()
    );
    // A region: sharded partial reads through the adapter.
    ok(&[
        "get",
        &array,
        "--region",
        "3:5,0:4",
        "-o",
        d.join("r.npy").to_str().unwrap(),
    ]);
    // URL to URL, and a URL to a path.
    let n5 = url(&d.join("b.n5"));
    ok(&["convert", &array, &n5, "--format", "n5"]);
    assert!(ok(&["info", &n5]).contains("format:      n5"));
    ok(&[
        "convert",
        &n5,
        d.join("c.zarr").to_str().unwrap(),
        "--format",
        "zarr2",
    ]);
    assert!(d.join("c.zarr/.zarray").is_file());
    // Replacing a URL's tree leaves no stale objects behind.
    ok(&[
        "put",
        d.join("in.npy").to_str().unwrap(),
        &n5,
        "--format",
        "zarr2",
    ]);
    assert!(!d.join("b.n5/attributes.json").exists());
    // Consolidation in place.
    ok(&[
        "convert",
        d.join("c.zarr").to_str().unwrap(),
        &url(&d.join("g.zarr/x")),
    ]);
    std::fs::write(d.join("g.zarr/.zgroup"), r#"{"zarr_format": 2}"#).unwrap();
    ok(&["consolidate", &url(&d.join("g.zarr"))]);
    assert!(d.join("g.zarr/.zmetadata").is_file());
}

#[test]
fn nwb_files_and_tables_open_by_url() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let nwb = url(&d.join("demo.nwb.zarr"));
    ok(&["nwb", "demo", &nwb]);
    assert!(ok(&["nwb", "inspect", &nwb]).contains("ElectricalSeries"));
    ok(&["nwb", "check", &nwb]);
    let v3 = url(&d.join("demo3.nwb.zarr"));
    ok(&["nwb", "convert", &nwb, &v3, "--convention", "zarr3"]);
    ok(&["nwb", "check", &v3]);

    std::fs::write(
        d.join("7.swc"),
        "1 1 0 0 0 1 -1\n2 3 1 0 0 1 1\n3 3 2 0 0 1 2\n",
    )
    .unwrap();
    let arrow = d.join("s.skeletons.arrow");
    ok(&[
        "table",
        "from-swc",
        d.join("7.swc").to_str().unwrap(),
        arrow.to_str().unwrap(),
        "--context",
        "urn:t",
    ]);
    let parquet = url(&d.join("t/s.skeletons.parquet"));
    ok(&["table", "convert", arrow.to_str().unwrap(), &parquet]);
    assert!(ok(&["table", "info", &parquet]).contains("rows:     3"));
    let hive = url(&d.join("t/hive"));
    ok(&[
        "table",
        "convert",
        &parquet,
        &hive,
        "--partition-by",
        "fragment_id",
    ]);
    assert!(ok(&["table", "validate", &hive]).contains("valid"));
}

#[test]
fn bad_urls_and_read_only_stores_are_clear_errors() {
    let output = run(&["tree", "ftp://host/x"]);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!output.status.success());
    assert!(
        stderr.contains("ftp://host/x") && stderr.contains("unsupported URL"),
        "{stderr}"
    );

    let dir = tempfile::tempdir().unwrap();
    write_npy(&dir.path().join("in.npy"), 2, 2);
    // Nothing listens on port 9 of the loopback address: the write is refused before any
    // request, as http(s) stores are read-only.
    let output = run(&[
        "put",
        dir.path().join("in.npy").to_str().unwrap(),
        "http://127.0.0.1:9/x.zarr",
        "--format",
        "zarr2",
    ]);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!output.status.success());
    assert!(
        stderr.contains("read-only") && stderr.contains("http://127.0.0.1:9/x.zarr"),
        "{stderr}"
    );

    let output = run(&[
        "get",
        &url(&dir.path().join("missing.zarr")),
        "-o",
        "/dev/null",
    ]);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!output.status.success());
    assert!(stderr.contains("missing.zarr"), "{stderr}");
}

#[test]
fn table_derive_and_swc_commands_take_urls() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::create_dir_all(d.join("swc")).unwrap();
    let a = "# neuron seven\n1 1 0 0 0 1 -1\n2 3 1 0 0 1 1\n3 3 2 0 0 1 2\n";
    let b = "1 1 5 5 5 2 -1\n2 3 6 5 5 2 1\n";
    std::fs::write(d.join("swc/7.swc"), a).unwrap();
    std::fs::write(d.join("swc/9.swc"), b).unwrap();
    std::fs::write(d.join("swc/notes.txt"), "not an swc file").unwrap();
    // A URL prefix of .swc objects (other objects ignored), into a table at a URL.
    let table = url(&d.join("t/n.skeletons.parquet"));
    let out = ok(&[
        "table",
        "from-swc",
        &url(&d.join("swc")),
        &table,
        "--context",
        "urn:t",
    ]);
    assert!(out.contains("5 samples in 2 fragment(s)"), "{out}");
    assert!(d.join("t/n.skeletons.parquet").is_file());
    // Derived fields from a URL to a URL.
    let derived = url(&d.join("t/d.skeletons.arrow"));
    let out = ok(&["table", "derive", &table, &derived]);
    assert!(out.contains("child_ids, n_children, strahler"), "{out}");
    let info = ok(&["table", "info", "--json", &derived]);
    assert!(info.contains("\"strahler\""), "{info}");
    // Back to SWC objects under a URL prefix, and one fragment into one object.
    let back = url(&d.join("back"));
    let listed = ok(&["table", "to-swc", &derived, &back]);
    assert_eq!(
        listed.lines().collect::<Vec<_>>(),
        [format!("{back}/7.swc"), format!("{back}/9.swc")]
    );
    assert_eq!(std::fs::read_to_string(d.join("back/7.swc")).unwrap(), a);
    assert_eq!(std::fs::read_to_string(d.join("back/9.swc")).unwrap(), b);
    ok(&[
        "table",
        "to-swc",
        &table,
        &url(&d.join("one/9.swc")),
        "--fragment",
        "9",
    ]);
    assert_eq!(std::fs::read_to_string(d.join("one/9.swc")).unwrap(), b);
    // A single object named directly, too.
    ok(&[
        "table",
        "from-swc",
        &url(&d.join("swc/9.swc")),
        &url(&d.join("t/nine.skeletons.arrow")),
        "--context",
        "urn:t",
    ]);
    assert!(
        ok(&["table", "info", &url(&d.join("t/nine.skeletons.arrow"))]).contains("rows:     2")
    );
    // A prefix without .swc objects is a clear error naming it.
    let output = run(&[
        "table",
        "from-swc",
        &url(&d.join("t")),
        &url(&d.join("x.skeletons.parquet")),
        "--context",
        "urn:t",
    ]);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!output.status.success());
    assert!(
        stderr.contains("holds no .swc files") && stderr.contains(&url(&d.join("t"))),
        "{stderr}"
    );
}

#[test]
fn demo_writes_to_a_url() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    // What an earlier demo left, which the demo replaces: a chunk its volume no longer has.
    let stale = d.join("demo/volume.zarr3.raw/c/9/9/9");
    std::fs::create_dir_all(stale.parent().unwrap()).unwrap();
    std::fs::write(d.join("demo/volume.zarr3.raw/zarr.json"), "{}").unwrap();
    std::fs::write(&stale, "x").unwrap();
    let out = ok(&["demo", &url(&d.join("demo")), "--size", "16"]);
    assert!(
        out.contains("Everything written was read back and matched"),
        "{out}"
    );
    assert!(!stale.exists());
    for entry in [
        "volume.zarr3.sharded/zarr.json",
        "volume.n5.gzip/attributes.json",
        "session.zarr2/.zmetadata",
        "tables/demo.skeletons.parquet",
        "ecephys.zarr3.nwb.zarr/zarr.json",
        "ecephys.zarr2-from-zarr3.nwb.zarr/.zgroup",
    ] {
        assert!(d.join("demo").join(entry).is_file(), "{entry} missing");
    }
    assert!(
        ok(&["nwb", "check", &url(&d.join("demo/ecephys.zarr3.nwb.zarr"))]).contains("no problems")
    );
}

#[test]
fn npy_inputs_and_outputs_take_urls() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    write_npy(&d.join("in.npy"), 6, 4);
    let array = url(&d.join("a.zarr"));
    // The .npy read from a URL, the array read back into a .npy at a URL.
    ok(&[
        "put",
        &url(&d.join("in.npy")),
        &array,
        "--format",
        "zarr2",
        "--chunks",
        "4,4",
    ]);
    ok(&["get", &array, "-o", &url(&d.join("out/back.npy"))]);
    assert_eq!(
        std::fs::read(d.join("out/back.npy")).unwrap(),
        std::fs::read(d.join("in.npy")).unwrap()
    );
    let output = run(&[
        "put",
        &url(&d.join("absent.npy")),
        &url(&d.join("b.zarr")),
        "--format",
        "zarr2",
    ]);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!output.status.success());
    assert!(
        stderr.contains("absent.npy") && stderr.contains("no such object"),
        "{stderr}"
    );
}
