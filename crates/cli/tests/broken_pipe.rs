//! Output into a pipe whose reader has gone (`neurochunk tree … | head`) ends the command
//! quietly, as Unix tools do, instead of panicking.

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};

#[test]
fn tree_into_a_closed_pipe_exits_quietly_with_the_sigpipe_status() {
    // A Zarr v2 hierarchy whose tree is far longer than a pipe's buffer.
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join(".zgroup"), r#"{"zarr_format": 2}"#).unwrap();
    for i in 0..4_000 {
        let group = dir.path().join(format!("group_with_a_long_name_{i:05}"));
        std::fs::create_dir(&group).unwrap();
        std::fs::write(group.join(".zgroup"), r#"{"zarr_format": 2}"#).unwrap();
    }
    for args in [vec!["tree"], vec!["tree", "--json"]] {
        let mut child = Command::new(env!("CARGO_BIN_EXE_neurochunk"))
            .args(&args)
            .arg(dir.path())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut first = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut first)
            .unwrap();
        assert!(!first.is_empty(), "{args:?}: no output");
        // The reader is gone: the pipe's read end was dropped with the BufReader.
        let output = child.wait_with_output().unwrap();
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(stderr.is_empty(), "{args:?}: {stderr}");
        assert_eq!(output.status.code(), Some(141), "{args:?}");
    }
}
