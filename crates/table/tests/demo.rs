//! The demo's tables validate.

#[test]
fn demo_writes_valid_tables() {
    let dir = tempfile::tempdir().unwrap();
    let s = neurochunk_table::demo(dir.path()).unwrap();
    assert!(dir.path().join("demo.skeletons.parquet").is_file());
    assert!(dir.path().join("demo.connections.parquet").is_file());
    assert!(
        s.contains("1200 rows, schema skeletons, 3 fragments, valid"),
        "{s}"
    );
    assert!(s.contains("160 rows, schema connections, valid"), "{s}");
}
