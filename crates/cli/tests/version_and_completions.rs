//! `--version` names the formats and codecs of the build; `completions SHELL` prints a script
//! the shell accepts, offering the subcommands.

use std::process::Command;

fn neurochunk(args: &[&str]) -> (bool, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_neurochunk"))
        .args(args)
        .output()
        .expect("the binary runs");
    (out.status.success(), String::from_utf8(out.stdout).unwrap())
}

#[test]
fn version_lists_formats_and_codecs() {
    let (ok, text) = neurochunk(&["--version"]);
    assert!(ok);
    let first = text.lines().next().unwrap();
    assert_eq!(first, format!("neurochunk {}", env!("CARGO_PKG_VERSION")));
    for needle in [
        "Zarr v3",
        "N5",
        "HDF5",
        "NWB",
        "Parquet",
        "sharding_indexed",
        "numcodecs.zfpy",
        "zstd",
    ] {
        assert!(text.contains(needle), "--version lacks {needle}: {text}");
    }
    // `-V` stays one line.
    let (ok, short) = neurochunk(&["-V"]);
    assert!(ok && short.trim() == first, "{short}");
}

#[test]
fn completion_scripts_for_each_shell() {
    for (shell, marker) in [
        ("bash", "_neurochunk()"),
        ("zsh", "#compdef neurochunk"),
        ("fish", "complete -c neurochunk"),
        ("elvish", "neurochunk"),
        ("powershell", "neurochunk"),
    ] {
        let (ok, script) = neurochunk(&["completions", shell]);
        assert!(ok, "{shell}");
        assert!(
            script.contains(marker),
            "{shell}: {}",
            &script[..200.min(script.len())]
        );
        for sub in ["convert", "nwb", "table", "pyramid"] {
            assert!(script.contains(sub), "{shell} script lacks {sub}");
        }
    }
    // The bash script parses.
    let (_, script) = neurochunk(&["completions", "bash"]);
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("neurochunk.bash");
    std::fs::write(&path, script).unwrap();
    let status = Command::new("bash").arg("-n").arg(&path).status().unwrap();
    assert!(status.success(), "bash -n rejects the completion script");
    let (ok, _) = neurochunk(&["completions", "tcsh"]);
    assert!(!ok, "an unknown shell is refused");
}
