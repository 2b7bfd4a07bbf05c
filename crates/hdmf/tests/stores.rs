//! Files read and written through the `Store` trait only: in a `MemoryStore`, under a
//! `PrefixStore` view, with external links between files of one store and sources that would
//! escape it.

use std::sync::Arc;

use neurochunk_hdmf::demo::{i64s, write_demo_into, DemoOptions};
use neurochunk_hdmf::{
    check, convert_into, Convention, DatasetOptions, FileLocation, HdmfError, Inventory, NwbFile,
    NwbWriter, ReadOptions, TypeInfo, WriteOptions,
};
use neurochunk_store::{Bytes, MemoryStore, PrefixStore, Store};

const BOTH: [Convention; 2] = [Convention::Legacy, Convention::V3];

fn demo_options(convention: Convention) -> DemoOptions {
    DemoOptions {
        convention,
        scale: 2,
        namespaces: Vec::new(),
        write: WriteOptions::default(),
    }
}

fn memory() -> Arc<dyn Store> {
    Arc::new(MemoryStore::new())
}

/// A v3 writer of a new file at `prefix`.
fn v3_writer(store: &Arc<dyn Store>, prefix: &str) -> NwbWriter {
    NwbWriter::create_in(
        store.clone(),
        prefix,
        Convention::V3,
        WriteOptions::default(),
    )
    .unwrap()
}

/// A file holding one dataset `/x` = `values`, written at `prefix`.
fn small(store: &Arc<dyn Store>, prefix: &str, values: &[i64]) {
    let mut w = v3_writer(store, prefix);
    w.dataset("/x", None, &i64s(values), &[], &DatasetOptions::default())
        .unwrap();
    w.finish().unwrap();
}

/// A file at `prefix` whose group `/view` links `data` to `/x` in `source`.
fn linking(store: &Arc<dyn Store>, prefix: &str, source: &str) {
    let mut w = v3_writer(store, prefix);
    w.group("/view", Some(&TypeInfo::new("core", "TimeSeries")), &[])
        .unwrap();
    w.link("/view", "data", "/x", source).unwrap();
    w.finish().unwrap();
}

#[test]
fn the_demo_is_written_read_and_converted_in_a_memory_store() {
    for convention in BOTH {
        let store = memory();
        let prefix = "lab/demo.nwb.zarr";
        let writer =
            NwbWriter::create_in(store.clone(), prefix, convention, WriteOptions::default())
                .unwrap();
        let summary = write_demo_into(writer, &demo_options(convention)).unwrap();
        assert_eq!(summary.name, prefix);
        assert!(store
            .list_prefix("")
            .unwrap()
            .iter()
            .all(|k| k.starts_with("lab/")));

        let file = NwbFile::open_store(store.clone(), prefix, ReadOptions::default()).unwrap();
        assert_eq!(file.convention(), convention);
        assert_eq!(file.name(), prefix);
        assert!(file.used_consolidated_metadata());
        let inventory = Inventory::of(&file).unwrap();
        assert!(inventory.objects.len() > 10, "{}", inventory.objects.len());
        assert!(!inventory.links.is_empty() && !inventory.dataset_refs.is_empty());
        assert!(check(&file).is_empty(), "{:?}", check(&file));
        let data = file
            .read_dataset("/acquisition/ElectricalSeries/data", None)
            .unwrap();
        assert_eq!(data.shape, [summary.samples, summary.electrodes]);

        // The same file through a prefixed view of the store, and by listing.
        let view: Arc<dyn Store> = Arc::new(PrefixStore::new(store.clone(), "lab").unwrap());
        let listed = NwbFile::open_store(
            view,
            "demo.nwb.zarr",
            ReadOptions {
                use_consolidated: false,
                ..Default::default()
            },
        )
        .unwrap();
        assert!(!listed.used_consolidated_metadata());
        assert_eq!(
            Inventory::of(&listed).unwrap().to_json(),
            inventory.to_json()
        );

        // Conversion into the same store.
        let other = match convention {
            Convention::Legacy => Convention::V3,
            Convention::V3 => Convention::Legacy,
        };
        let writer = NwbWriter::create_in(
            store.clone(),
            "lab/converted",
            other,
            WriteOptions::default(),
        )
        .unwrap();
        let converted = convert_into(&file, writer, &|_| {}).unwrap();
        assert!(converted.datasets > 0 && converted.links > 0);
        let back =
            NwbFile::open_store(store.clone(), "lab/converted", ReadOptions::default()).unwrap();
        assert_eq!(back.convention(), other);
        assert_eq!(Inventory::of(&back).unwrap().to_json(), inventory.to_json());
        assert_eq!(
            back.read_dataset("/acquisition/ElectricalSeries/data", None)
                .unwrap(),
            data
        );
    }
}

#[test]
fn external_links_between_files_of_one_store_resolve() {
    let store = memory();
    small(&store, "session/raw.nwb.zarr", &[7, 8, 9]);
    linking(&store, "session/main.nwb.zarr", "../raw.nwb.zarr");
    // hdmf-zarr 0.10 wrote sources relative to the directory holding the file.
    linking(&store, "session/old.nwb.zarr", "raw.nwb.zarr");
    for prefix in ["session/main.nwb.zarr", "session/old.nwb.zarr"] {
        let file = NwbFile::open_store(store.clone(), prefix, ReadOptions::default()).unwrap();
        assert_eq!(
            file.read_dataset("/view/data", None).unwrap(),
            i64s(&[7, 8, 9])
        );
        let target = file.resolve("/view/data").unwrap();
        assert_eq!(target.file.unwrap().name(), "session/raw.nwb.zarr");
        assert!(check(&file).is_empty());
    }
    // Names given by the caller carry over to the linked file.
    let file = NwbFile::open_location(
        FileLocation::named(
            store.clone(),
            "session/main.nwb.zarr",
            "mem://bucket/session/main.nwb.zarr",
        ),
        ReadOptions::default(),
    )
    .unwrap();
    let target = file.resolve("/view/data").unwrap();
    assert_eq!(
        target.file.unwrap().name(),
        "mem://bucket/session/raw.nwb.zarr"
    );
    // A source naming the file itself stays in it.
    linking(&store, "self.nwb.zarr", "../self.nwb.zarr");
    let err = NwbFile::open_store(store.clone(), "self.nwb.zarr", ReadOptions::default())
        .unwrap()
        .read_dataset("/view/data", None)
        .unwrap_err()
        .to_string();
    assert!(err.contains("no object at '/x'"), "{err}");
}

#[test]
fn sources_escaping_the_store_are_refused_naming_the_link() {
    let store = memory();
    // A file the escape would reach, outside the tenant's view.
    small(&store, "outside", &[1]);
    let tenant: Arc<dyn Store> = Arc::new(PrefixStore::new(store.clone(), "tenant").unwrap());
    linking(&tenant, "main.nwb.zarr", "../../outside");
    linking(&tenant, "absolute.nwb.zarr", "/outside");
    linking(&tenant, "missing.nwb.zarr", "../absent.nwb.zarr");
    for (prefix, source) in [
        ("main.nwb.zarr", "../../outside"),
        ("absolute.nwb.zarr", "/outside"),
    ] {
        let file = NwbFile::open_store(tenant.clone(), prefix, ReadOptions::default()).unwrap();
        let err = file.read_dataset("/view/data", None).unwrap_err();
        assert!(
            matches!(err, HdmfError::ExternalOutsideStore { .. }),
            "{err:?}"
        );
        let text = err.to_string();
        assert!(
            text.contains(prefix)
                && text.contains("/view/data")
                && text.contains(source)
                && text.contains("outside the store"),
            "{text}"
        );
        let problems = check(&file);
        assert_eq!(problems.len(), 1, "{problems:?}");
        assert_eq!(problems[0].path, "/view/data");
    }
    let file =
        NwbFile::open_store(tenant.clone(), "missing.nwb.zarr", ReadOptions::default()).unwrap();
    let err = file
        .read_dataset("/view/data", None)
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("'../absent.nwb.zarr' does not exist") && err.contains("/view/data"),
        "{err}"
    );
}

#[test]
fn writers_need_an_empty_prefix_and_clean_up_when_dropped() {
    let store = memory();
    store
        .set("taken/zarr.json", Bytes::from_static(b"{}"))
        .unwrap();
    let err = NwbWriter::create_in(
        store.clone(),
        "taken",
        Convention::V3,
        WriteOptions::default(),
    )
    .unwrap_err()
    .to_string();
    assert!(
        err.contains("taken") && err.contains("already holds data"),
        "{err}"
    );

    let mut w = NwbWriter::create_in(
        store.clone(),
        "abandoned",
        Convention::Legacy,
        WriteOptions::default(),
    )
    .unwrap();
    w.dataset("/x", None, &i64s(&[1, 2]), &[], &DatasetOptions::default())
        .unwrap();
    assert!(!store.list_prefix("abandoned/").unwrap().is_empty());
    drop(w);
    assert!(store.list_prefix("abandoned/").unwrap().is_empty());
    assert_eq!(store.list_prefix("").unwrap(), ["taken/zarr.json"]);
}

#[test]
fn errors_name_the_file_by_its_display_name() {
    let store = memory();
    let err = NwbFile::open_store(store.clone(), "nowhere.nwb.zarr", ReadOptions::default())
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("nowhere.nwb.zarr") && err.contains("not a Zarr group"),
        "{err}"
    );
    small(&store, "", &[3]);
    let file = NwbFile::open_location(
        FileLocation::named(store.clone(), "", "s3://bucket/file.nwb.zarr"),
        ReadOptions::default(),
    )
    .unwrap();
    let err = file.read_dataset("/y", None).unwrap_err().to_string();
    assert_eq!(err, "s3://bucket/file.nwb.zarr: no object at '/y'");
}

#[test]
fn a_store_that_no_longer_matches_its_consolidated_metadata_fails_check() {
    for convention in BOTH {
        let store = memory();
        let writer =
            NwbWriter::create_in(store.clone(), "f", convention, WriteOptions::default()).unwrap();
        write_demo_into(writer, &demo_options(convention)).unwrap();
        let open = || NwbFile::open_store(store.clone(), "f", ReadOptions::default()).unwrap();
        assert!(check(&open()).is_empty(), "{convention:?}");

        // What an interrupted replacement or an outside edit leaves: a node gone, and
        // attributes changed behind the consolidated metadata's back.
        let zattrs = match convention {
            Convention::Legacy => ".zattrs",
            Convention::V3 => "zarr.json",
        };
        store
            .delete_prefix("f/acquisition/ElectricalSeries/")
            .unwrap();
        let key = format!("f/general/devices/{zattrs}");
        let listed = store.list_prefix("f/general/").unwrap();
        let device = listed
            .iter()
            .find(|k| {
                k.starts_with("f/general/devices/") && k.ends_with(zattrs) && k.as_str() != key
            })
            .cloned()
            .unwrap_or_else(|| panic!("no device node in {listed:?}"));
        let mut doc: serde_json::Value =
            serde_json::from_slice(&store.get(&device).unwrap().unwrap()).unwrap();
        let attributes = match convention {
            Convention::Legacy => &mut doc,
            Convention::V3 => &mut doc["attributes"],
        };
        attributes["description"] = serde_json::json!("edited");
        store
            .set(&device, Bytes::from(serde_json::to_vec(&doc).unwrap()))
            .unwrap();

        let file = open();
        assert!(file.used_consolidated_metadata());
        let problems = neurochunk_hdmf::consolidated_problems(&file);
        let text: Vec<String> = problems
            .iter()
            .map(|p| format!("{}: {}", p.path, p.message))
            .collect();
        assert!(
            text.contains(&"/acquisition/ElectricalSeries: listed in the consolidated metadata but missing from the store".to_string()),
            "{convention:?}: {text:?}"
        );
        assert!(
            text.iter()
                .any(|t| t.ends_with("its attributes differ from the consolidated copy")),
            "{convention:?}: {text:?}"
        );
        assert!(!check(&file).is_empty());
    }
}

#[test]
fn scoped_resolvers_keep_links_below_the_allowed_prefixes() {
    use neurochunk_hdmf::{ExternalResolver, ScopedStoreResolver};

    let store = memory();
    small(&store, "lab/a/b/sibling.nwb.zarr", &[1, 2]);
    small(&store, "lab/ext.nwb.zarr", &[3]);
    linking(&store, "lab/a/b/near.nwb.zarr", "../sibling.nwb.zarr");
    linking(&store, "lab/a/b/far.nwb.zarr", "../../../ext.nwb.zarr");
    linking(
        &store,
        "lab/a/b/away.nwb.zarr",
        "../../../../../../x.nwb.zarr",
    );
    let open = |prefix: &str, resolver: ScopedStoreResolver| {
        NwbFile::open_location(
            FileLocation::named(store.clone(), prefix, format!("s3://bkt/{prefix}")),
            ReadOptions {
                resolver: Some(Arc::new(resolver) as Arc<dyn ExternalResolver>),
                ..ReadOptions::default()
            },
        )
        .unwrap()
    };
    let default =
        |prefix: &str| ScopedStoreResolver::parent_of(prefix, |p| format!("s3://bkt/{p}"));
    // Below the prefix holding the file: resolved.
    let near = open("lab/a/b/near.nwb.zarr", default("lab/a/b/near.nwb.zarr"));
    assert_eq!(
        near.read_dataset("/view/data", None).unwrap(),
        i64s(&[1, 2])
    );
    // Above it: refused, naming the link, its source and the allowed prefix.
    let far = open("lab/a/b/far.nwb.zarr", default("lab/a/b/far.nwb.zarr"));
    let err = far.read_dataset("/view/data", None).unwrap_err();
    assert!(matches!(err, HdmfError::ExternalRefused { .. }), "{err:?}");
    let text = err.to_string();
    assert!(
        text.contains("s3://bkt/lab/a/b/far.nwb.zarr")
            && text.contains("/view/data")
            && text.contains("../../../ext.nwb.zarr")
            && text.contains("'s3://bkt/lab/a/b'"),
        "{text}"
    );
    assert_eq!(check(&far).len(), 1);
    // Allowed when a root covers it; a root that does not cover it is not enough.
    let wider = |roots: &[&str]| ScopedStoreResolver {
        roots: roots.iter().map(|r| r.to_string()).collect(),
        root_names: roots.iter().map(|r| format!("s3://bkt/{r}")).collect(),
        files: None,
    };
    let far = open("lab/a/b/far.nwb.zarr", wider(&["lab"]));
    assert_eq!(far.read_dataset("/view/data", None).unwrap(), i64s(&[3]));
    let far = open("lab/a/b/far.nwb.zarr", wider(&["lab/a", "la"]));
    assert!(matches!(
        far.read_dataset("/view/data", None).unwrap_err(),
        HdmfError::ExternalRefused { .. }
    ));
    // Out of the store entirely: refused whatever the roots.
    let away = open("lab/a/b/away.nwb.zarr", wider(&[""]));
    assert!(matches!(
        away.read_dataset("/view/data", None).unwrap_err(),
        HdmfError::ExternalOutsideStore { .. }
    ));
}
