//! Corrupt table files get a one-line report naming the file and exit 2 ("unreadable"), with
//! no panic message and bounded memory, even where the arrow and parquet decoders themselves
//! panic or trust a declared size (the inputs are fuzz finds: fuzz/regressions/README.md).

use std::process::Command;

#[test]
fn table_validate_of_fuzz_regressions_is_a_clean_error() {
    let dir = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../fuzz/regressions/table_file"
    );
    for file in [
        "ipc-buffer-past-body.skeletons.arrow",
        "ipc-block-past-end.skeletons.arrow",
        "parquet-dictionary-count.skeletons.parquet",
        "parquet-negative-column-size.skeletons.parquet",
        "ipc-negative-row-count.skeletons.arrow",
        "parquet-page-header-list-past-end.skeletons.parquet",
        "parquet-page-size-bomb.skeletons.parquet",
        "parquet-stop-with-delta.skeletons.parquet",
        "parquet-compressed-size-as-double.skeletons.parquet",
        "parquet-compressed-size-as-boolean.skeletons.parquet",
        "ipc-magic-only.skeletons.arrow",
    ] {
        let output = Command::new(env!("CARGO_BIN_EXE_neurochunk"))
            .args(["table", "validate", &format!("{dir}/{file}")])
            .output()
            .unwrap();
        let all = format!(
            "{}{}",
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        );
        assert_eq!(output.status.code(), Some(2), "{file}: {all}");
        assert!(
            all.contains(file) && all.contains("error[table-unreadable]"),
            "{file}: {all}"
        );
        assert!(!all.contains("panicked"), "{file}: {all}");
        assert_eq!(all.trim_end().lines().count(), 1, "{file}: {all}");
    }
}
