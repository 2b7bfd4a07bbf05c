//! `nwb inspect` of something that is not an NWB file says so and fails, instead of listing
//! an empty file with exit status 0.

use std::process::Command;

#[test]
fn nwb_inspect_of_a_plain_zarr_group_says_it_is_not_nwb() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join(".zgroup"), r#"{"zarr_format": 2}"#).unwrap();
    let output = Command::new(env!("CARGO_BIN_EXE_neurochunk"))
        .args(["nwb", "inspect"])
        .arg(dir.path())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "{stderr}");
    assert!(output.stdout.is_empty());
    assert!(stderr.contains("not an NWB or HDMF file"), "{stderr}");
}
