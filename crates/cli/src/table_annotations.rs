//! `table convert` between point cloud or connections tables and Neuroglancer precomputed
//! annotation collections (`neurochunk_table::annotation`).

use neurochunk_array::precomputed::annotation::{AnnotationCollection, AnnotationType};
use neurochunk_store::join_key;
use neurochunk_table::annotation::{
    export_annotations, import_annotations, AnnotationExportOptions, AnnotationImportOptions,
    AnnotationSummary, AnnotationTable, ANNOTATION_TYPE,
};
use neurochunk_table::precomputed::default_sharding;
use neurochunk_table::{Registry, TableError};

use crate::store_args::Location;
use crate::table_cmd::{
    open_table, publish_layer, staged_layer, table_target, OutputArgs, SkeletonArgs,
};

/// Whether the location holds an annotation collection.
fn is_annotation_collection(store: &dyn neurochunk_store::Store, key: &str) -> bool {
    let Ok(Some(bytes)) = store.get(&join_key(key, "info")) else {
        return false;
    };
    serde_json::from_slice::<serde_json::Value>(&bytes)
        .ok()
        .and_then(|doc| doc.get("@type")?.as_str().map(|t| t == ANNOTATION_TYPE))
        .unwrap_or(false)
}

/// `table convert` between a point cloud or connections table and an annotation collection:
/// `None` when neither side is one (a skeleton layer or an ordinary table conversion).
pub(crate) fn convert_annotations(
    input: &Location,
    output: &Location,
    args: &SkeletonArgs,
    out: &OutputArgs,
) -> Result<Option<AnnotationSummary>, TableError> {
    let annotation_type = match args.annotation_type.as_deref() {
        None => None,
        Some("line") => Some(AnnotationType::Line),
        Some("point") => Some(AnnotationType::Point),
        Some(other) => {
            return Err(TableError::Usage(format!(
                "--annotation-type {other:?}: line or point"
            )))
        }
    };
    if args.format.as_deref() == Some("precomputed") {
        let src = open_table(input)?;
        let schema = src.schema();
        // Skeletons (and tables that are neither) are the skeleton conversion's.
        let has = |c: &str| schema.field_with_name(c).is_ok();
        if has("parent_id") || !(has("connection_id") || has("sample_id")) {
            return Ok(None);
        }
        let count = src.num_rows()?;
        let sharding = args.sharded.then(|| default_sharding(count));
        let opts = AnnotationExportOptions {
            sharding,
            annotation_type,
            limit: 0,
        };
        let (store, key, staged) = staged_layer(output, out)?;
        let summary = export_annotations(&src, store, &key, &opts)?;
        publish_layer(staged, output)?;
        return Ok(Some(summary));
    }
    if args.format.is_some() {
        return Ok(None);
    }
    let name = input.file_name().to_ascii_lowercase();
    let table_file = [".parquet", ".arrow", ".feather", ".ipc"]
        .iter()
        .any(|ext| name.ends_with(ext));
    if table_file || input.local().is_some_and(|p| !p.is_dir()) {
        return Ok(None);
    }
    let Ok((store, key)) = input.open_parts() else {
        return Ok(None);
    };
    if !is_annotation_collection(store.as_ref(), &key) {
        return Ok(None);
    }
    if args.sharded || annotation_type.is_some() {
        return Err(TableError::Usage(
            "--sharded and --annotation-type are for writing a collection (--format precomputed)"
                .into(),
        ));
    }
    let collection = AnnotationCollection::open(store, &key)
        .map_err(|e| TableError::data(input.display(), e.to_string()))?;
    // The table kind: from the output's name, else from the annotation type.
    let registry = Registry::standard();
    let table = match registry
        .from_file_name(&output.file_name())
        .map(|d| d.name.as_str())
    {
        Some("pointclouds") => Some(AnnotationTable::Pointclouds),
        Some("connections") => Some(AnnotationTable::Connections),
        Some(other) => {
            return Err(TableError::Usage(format!(
                "{output}: an annotation collection reads into a pointclouds or connections \
                 table, not {other}"
            )))
        }
        None => None,
    };
    let opts = AnnotationImportOptions {
        context: args.context.clone().ok_or_else(|| {
            TableError::Usage(format!(
                "{input} is a precomputed annotation collection: a context identifier is \
                 required (--context)"
            ))
        })?,
        space: args.space.clone(),
        table,
    };
    import_annotations(
        &collection,
        &input.display(),
        &table_target(output)?,
        &opts,
        &out.options(),
    )
    .map(Some)
}
