//! neurarrow schemas as data.
//!
//! Each schema ([`SchemaDef`]) lists its parents, its own metadata keys and its own
//! fields; the effective schema ([`EffectiveSchema`]) is computed by walking the
//! inheritance graph, never copied by hand. Extensions ([`ExtensionDef`]) add
//! prefixed fields and metadata keys to existing schemas, or (like
//! `net.clbarnes.connector`) define new schemas. A [`Registry`] holds both, starts
//! with the neurarrow 0.2 core plus the two known extensions, and can be extended.

use arrow::datatypes::{DataType, Field, Fields};
use std::sync::Arc;

/// The neurarrow specification version this crate writes.
pub const SPEC_VERSION: &str = "0.2.1";

/// The version written for the `net.clbarnes.swc` extension.
pub const SWC_EXT_VERSION: &str = "0.1";

/// Name of the SWC extension.
pub const SWC_EXT: &str = "net.clbarnes.swc";

/// The 27 non-empty unit names neurarrow accepts (UDUNITS-2 full names).
pub const UNITS: [&str; 27] = [
    "yoctometer",
    "zeptometer",
    "attometer",
    "femtometer",
    "picometer",
    "nanometer",
    "angstrom",
    "micrometer",
    "millimeter",
    "centimeter",
    "inch",
    "decimeter",
    "foot",
    "yard",
    "meter",
    "dekameter",
    "hectometer",
    "kilometer",
    "mile",
    "megameter",
    "gigameter",
    "terameter",
    "petameter",
    "parsec",
    "exameter",
    "zettameter",
    "yottameter",
];

/// True when `unit` is a valid neurarrow unit (`""` or one of [`UNITS`]).
pub fn is_valid_unit(unit: &str) -> bool {
    unit.is_empty() || UNITS.contains(&unit)
}

/// The Arrow type a field must have, described structurally.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TypeSpec {
    /// `uint64`
    UInt64,
    /// `uint32`
    UInt32,
    /// `int64`
    Int64,
    /// `float64`
    Float64,
    /// `list<uint64>`
    ListUInt64,
    /// `dictionary<uint16, utf8>`
    DictUInt16Utf8,
    /// `map<utf8, utf8 | binary>` (the `attr` column)
    AttrMap,
}

impl TypeSpec {
    /// The canonical Arrow type written by this crate.
    pub fn data_type(self) -> DataType {
        match self {
            TypeSpec::UInt64 => DataType::UInt64,
            TypeSpec::UInt32 => DataType::UInt32,
            TypeSpec::Int64 => DataType::Int64,
            TypeSpec::Float64 => DataType::Float64,
            TypeSpec::ListUInt64 => {
                DataType::List(Arc::new(Field::new("item", DataType::UInt64, true)))
            }
            TypeSpec::DictUInt16Utf8 => {
                DataType::Dictionary(Box::new(DataType::UInt16), Box::new(DataType::Utf8))
            }
            TypeSpec::AttrMap => DataType::Map(
                Arc::new(Field::new(
                    "entries",
                    DataType::Struct(Fields::from(vec![
                        Field::new("key", DataType::Utf8, false),
                        Field::new("value", DataType::Utf8, true),
                    ])),
                    false,
                )),
                false,
            ),
        }
    }

    /// Human-readable spec name of the type.
    pub fn describe(self) -> &'static str {
        match self {
            TypeSpec::UInt64 => "uint64",
            TypeSpec::UInt32 => "uint32",
            TypeSpec::Int64 => "int64",
            TypeSpec::Float64 => "float64",
            TypeSpec::ListUInt64 => "list<uint64>",
            TypeSpec::DictUInt16Utf8 => "dictionary<uint16, utf8>",
            TypeSpec::AttrMap => "map<utf8, utf8|binary>",
        }
    }

    /// Exact structural match (nested child names are ignored).
    pub fn matches(self, dt: &DataType) -> bool {
        match self {
            TypeSpec::UInt64 => dt == &DataType::UInt64,
            TypeSpec::UInt32 => dt == &DataType::UInt32,
            TypeSpec::Int64 => dt == &DataType::Int64,
            TypeSpec::Float64 => dt == &DataType::Float64,
            TypeSpec::ListUInt64 => {
                matches!(dt, DataType::List(f) if f.data_type() == &DataType::UInt64)
            }
            TypeSpec::DictUInt16Utf8 => matches!(
                dt,
                DataType::Dictionary(k, v) if **k == DataType::UInt16 && **v == DataType::Utf8
            ),
            TypeSpec::AttrMap => attr_map_value_type(dt).is_some(),
        }
    }

    /// A type that lenient mode accepts (with a warning) and casts to the spec type.
    pub fn lenient_castable(self, dt: &DataType) -> bool {
        use DataType::*;
        let is_string = |d: &DataType| matches!(d, Utf8 | LargeUtf8 | Utf8View);
        match self {
            TypeSpec::UInt64 => {
                matches!(dt, Int64 | Int32 | Int16 | Int8 | UInt32 | UInt16 | UInt8)
            }
            TypeSpec::UInt32 => {
                matches!(dt, UInt16 | UInt8 | UInt64 | Int64 | Int32 | Int16 | Int8)
            }
            TypeSpec::Int64 => matches!(dt, Int32 | Int16 | Int8 | UInt32 | UInt16 | UInt8),
            TypeSpec::Float64 => matches!(dt, Float32 | Float16),
            TypeSpec::ListUInt64 => match dt {
                List(f) | LargeList(f) => {
                    f.data_type() == &UInt64 || TypeSpec::UInt64.lenient_castable(f.data_type())
                }
                _ => false,
            },
            TypeSpec::DictUInt16Utf8 => match dt {
                Dictionary(k, v) => k.is_integer() && is_string(v),
                d => is_string(d),
            },
            TypeSpec::AttrMap => false,
        }
    }
}

/// When `dt` is a map with string keys and string or binary values, returns the
/// value type.
pub fn attr_map_value_type(dt: &DataType) -> Option<&DataType> {
    let DataType::Map(entries, _) = dt else {
        return None;
    };
    let DataType::Struct(kv) = entries.data_type() else {
        return None;
    };
    if kv.len() != 2 {
        return None;
    }
    let (k, v) = (kv[0].data_type(), kv[1].data_type());
    let key_ok = matches!(k, DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View);
    let val_ok = matches!(
        v,
        DataType::Utf8
            | DataType::LargeUtf8
            | DataType::Utf8View
            | DataType::Binary
            | DataType::LargeBinary
            | DataType::BinaryView
    );
    (key_ok && val_ok).then_some(v)
}

/// Whether a field or metadata key must, may, or may be derived.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Presence {
    /// MUST exist.
    Required,
    /// MAY exist.
    Optional,
    /// MAY exist, MUST be computable from other fields.
    Derived,
}

impl Presence {
    /// Lowercase name.
    pub fn as_str(self) -> &'static str {
        match self {
            Presence::Required => "required",
            Presence::Optional => "optional",
            Presence::Derived => "derived",
        }
    }
}

/// Specification of one field.
#[derive(Debug, Clone)]
pub struct FieldSpec {
    /// Field name.
    pub name: String,
    /// Arrow type.
    pub ty: TypeSpec,
    /// Whether the spec declares the field nullable.
    pub nullable: bool,
    /// Required, optional or derived.
    pub presence: Presence,
    /// Values MUST be unique within the context (ids).
    pub unique_in_context: bool,
    /// The schema or extension that declares the field.
    pub origin: String,
}

impl FieldSpec {
    fn new(name: &str, ty: TypeSpec, nullable: bool, presence: Presence) -> Self {
        FieldSpec {
            name: name.to_string(),
            ty,
            nullable,
            presence,
            unique_in_context: false,
            origin: String::new(),
        }
    }

    fn unique(mut self) -> Self {
        self.unique_in_context = true;
        self
    }

    /// The canonical Arrow field.
    pub fn arrow_field(&self) -> Field {
        Field::new(&self.name, self.ty.data_type(), self.nullable)
    }
}

/// How a metadata value is checked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MetaCheck {
    /// Any string.
    Any,
    /// PEP 440 version of the neurarrow spec.
    SpecVersion,
    /// PEP 440 version (extensions).
    Version,
    /// A context identifier.
    Context,
    /// A space identifier.
    Space,
    /// A unit name.
    Unit,
    /// ASCII decimal unsigned integer.
    UnsignedDecimal,
}

/// Specification of one metadata key.
#[derive(Debug, Clone)]
pub struct MetaSpec {
    /// The key.
    pub key: String,
    /// Required or optional.
    pub presence: Presence,
    /// Value check.
    pub check: MetaCheck,
    /// The schema or extension that declares the key.
    pub origin: String,
}

impl MetaSpec {
    fn new(key: &str, presence: Presence, check: MetaCheck) -> Self {
        MetaSpec {
            key: key.to_string(),
            presence,
            check,
            origin: String::new(),
        }
    }
}

/// Row-level behaviour a schema brings (inherited by descendants).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Traits {
    /// `frag:{fragment_id}:{key}` metadata allowed (point clouds and descendants).
    pub fragment_metadata: bool,
    /// Rows are samples with `sample_id`/`fragment_id`/`x`/`y`/`z`.
    pub samples: bool,
    /// Rows form one rooted tree per fragment via `parent_id`.
    pub tree: bool,
    /// Rows carry tangent vectors and colinearity.
    pub tangents: bool,
    /// Rows are connections between samples.
    pub connections: bool,
    /// Coordinates `x`/`y`/`z` present (spatial point-like rows).
    pub coordinates: bool,
}

impl Traits {
    fn union(self, o: Traits) -> Traits {
        Traits {
            fragment_metadata: self.fragment_metadata || o.fragment_metadata,
            samples: self.samples || o.samples,
            tree: self.tree || o.tree,
            tangents: self.tangents || o.tangents,
            connections: self.connections || o.connections,
            coordinates: self.coordinates || o.coordinates,
        }
    }
}

/// A schema as declared (its own parts only).
#[derive(Debug, Clone)]
pub struct SchemaDef {
    /// Canonical name (`skeletons`, `net.clbarnes.connectors`, ...).
    pub name: String,
    /// Parent schema names.
    pub parents: Vec<String>,
    /// Abstract schemas SHOULD NOT be written as files.
    pub is_abstract: bool,
    /// Own metadata keys.
    pub metadata: Vec<MetaSpec>,
    /// Own fields.
    pub fields: Vec<FieldSpec>,
    /// Own row-level traits.
    pub traits: Traits,
    /// File-name infixes identifying the schema (`skeletons`, `skeleton`).
    pub infixes: Vec<String>,
    /// Columns whose presence identifies the schema, most specific schemas first.
    pub signature: Vec<String>,
    /// The extension defining the schema, if any.
    pub extension: Option<String>,
}

/// An extension: prefixed metadata keys and fields added to existing schemas.
#[derive(Debug, Clone)]
pub struct ExtensionDef {
    /// Prefix used in keys and field names (`net.clbarnes.swc`).
    pub prefix: String,
    /// Schemas (and their descendants) the extension's fields apply to.
    pub applies_to: Vec<String>,
    /// Fields added when the extension is used (names include the prefix).
    pub fields: Vec<FieldSpec>,
    /// Metadata key patterns under the prefix: (`header:{fragment}` / `type:{int}`).
    pub key_patterns: Vec<KeyPattern>,
}

/// A metadata key pattern of an extension (the part after `{prefix}:`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KeyPattern {
    /// `version`
    Version,
    /// `{name}:{fragment_id}` with a decimal u64 fragment id.
    PerFragment(&'static str),
    /// `{name}:{signed int}`
    PerInteger(&'static str),
}

/// The effective (inherited) schema.
#[derive(Debug, Clone)]
pub struct EffectiveSchema {
    /// Canonical name.
    pub name: String,
    /// The schema and all its ancestors, nearest first.
    pub lineage: Vec<String>,
    /// Abstract schema.
    pub is_abstract: bool,
    /// All metadata keys, ancestors first.
    pub metadata: Vec<MetaSpec>,
    /// All fields, ancestors first.
    pub fields: Vec<FieldSpec>,
    /// Union of the traits up the tree.
    pub traits: Traits,
}

impl EffectiveSchema {
    /// The spec of the field `name`, if the schema defines it.
    pub fn field(&self, name: &str) -> Option<&FieldSpec> {
        self.fields.iter().find(|f| f.name == name)
    }

    /// The spec of the metadata key `key`, if the schema defines it.
    pub fn meta(&self, key: &str) -> Option<&MetaSpec> {
        self.metadata.iter().find(|m| m.key == key)
    }

    /// True when the schema is `name` or descends from it.
    pub fn is_a(&self, name: &str) -> bool {
        self.lineage.iter().any(|l| l == name)
    }

    /// The canonical Arrow schema with required fields only, plus `extra` fields
    /// by name (optional or derived) in spec order.
    pub fn arrow_fields(&self, extra: &[&str]) -> Vec<Field> {
        self.fields
            .iter()
            .filter(|f| f.presence == Presence::Required || extra.contains(&f.name.as_str()))
            .map(FieldSpec::arrow_field)
            .collect()
    }
}

/// Errors from the registry.
#[derive(Debug, thiserror::Error)]
pub enum RegistryError {
    /// No schema of that name.
    #[error("unknown schema {0:?}")]
    UnknownSchema(String),
    /// The inheritance graph has a cycle.
    #[error("schema inheritance cycle through {0:?}")]
    Cycle(String),
    /// A schema of that name already exists.
    #[error("schema {0:?} is already registered")]
    Duplicate(String),
}

/// Schemas and extensions known to the validator.
#[derive(Debug, Clone)]
pub struct Registry {
    schemas: Vec<SchemaDef>,
    extensions: Vec<ExtensionDef>,
}

impl Default for Registry {
    fn default() -> Self {
        Self::standard()
    }
}

fn with_origin(mut fields: Vec<FieldSpec>, origin: &str) -> Vec<FieldSpec> {
    for f in &mut fields {
        f.origin = origin.to_string();
    }
    fields
}

fn meta_with_origin(mut meta: Vec<MetaSpec>, origin: &str) -> Vec<MetaSpec> {
    for m in &mut meta {
        m.origin = origin.to_string();
    }
    meta
}

#[allow(clippy::too_many_arguments)]
fn def(
    name: &str,
    parents: &[&str],
    is_abstract: bool,
    metadata: Vec<MetaSpec>,
    fields: Vec<FieldSpec>,
    traits: Traits,
    infixes: &[&str],
    signature: &[&str],
) -> SchemaDef {
    SchemaDef {
        name: name.to_string(),
        parents: parents.iter().map(|s| s.to_string()).collect(),
        is_abstract,
        metadata: meta_with_origin(metadata, name),
        fields: with_origin(fields, name),
        traits,
        infixes: infixes.iter().map(|s| s.to_string()).collect(),
        signature: signature.iter().map(|s| s.to_string()).collect(),
        extension: None,
    }
}

impl Registry {
    /// The neurarrow 0.2 core schemas plus `net.clbarnes.swc` and
    /// `net.clbarnes.connector`.
    pub fn standard() -> Self {
        use MetaCheck as M;
        use Presence::*;
        use TypeSpec as T;
        let f = FieldSpec::new;
        let m = MetaSpec::new;
        let mut schemas = vec![
            def(
                "base",
                &[],
                true,
                vec![
                    m("version", Required, M::SpecVersion),
                    m("context", Required, M::Context),
                ],
                vec![f("attr", T::AttrMap, true, Optional)],
                Traits::default(),
                &[],
                &[],
            ),
            def(
                "spatial",
                &["base"],
                true,
                vec![m("unit", Required, M::Unit), m("space", Optional, M::Space)],
                vec![],
                Traits::default(),
                &[],
                &[],
            ),
            def(
                "pointclouds",
                &["spatial"],
                false,
                vec![],
                vec![
                    f("sample_id", T::UInt64, false, Required).unique(),
                    f("fragment_id", T::UInt64, false, Required),
                    f("x", T::Float64, false, Required),
                    f("y", T::Float64, false, Required),
                    f("z", T::Float64, false, Required),
                ],
                Traits {
                    fragment_metadata: true,
                    samples: true,
                    coordinates: true,
                    ..Traits::default()
                },
                &["pointclouds", "pointcloud", "point_clouds"],
                &["sample_id", "fragment_id", "x", "y", "z"],
            ),
            def(
                "skeletons",
                &["pointclouds"],
                false,
                vec![],
                vec![
                    f("parent_id", T::UInt64, true, Required),
                    f("radius", T::Float64, true, Optional),
                    f("child_ids", T::ListUInt64, true, Derived),
                    f("n_children", T::UInt32, true, Derived),
                    f("strahler", T::UInt32, true, Derived),
                ],
                Traits {
                    tree: true,
                    ..Traits::default()
                },
                &["skeletons", "skeleton"],
                &["parent_id"],
            ),
            def(
                "dotprops",
                &["pointclouds"],
                false,
                vec![m("neighborhood_size", Required, M::UnsignedDecimal)],
                vec![
                    f("tangent_x", T::Float64, false, Required),
                    f("tangent_y", T::Float64, false, Required),
                    f("tangent_z", T::Float64, false, Required),
                    f("colinearity", T::Float64, false, Optional),
                ],
                Traits {
                    tangents: true,
                    ..Traits::default()
                },
                &["dotprops", "dotprop"],
                &["tangent_x", "tangent_y", "tangent_z"],
            ),
            def(
                "connections",
                &["base"],
                false,
                vec![],
                vec![
                    f("connection_id", T::UInt64, false, Required).unique(),
                    f("src_sample_id", T::UInt64, false, Required),
                    f("tgt_sample_id", T::UInt64, false, Required),
                    f("type", T::DictUInt16Utf8, false, Required),
                    f("src_fragment_id", T::UInt64, true, Derived),
                    f("tgt_fragment_id", T::UInt64, true, Derived),
                ],
                Traits {
                    connections: true,
                    ..Traits::default()
                },
                &["connections", "connection"],
                &["connection_id"],
            ),
        ];
        let mut connectors = def(
            "net.clbarnes.connectors",
            &["spatial"],
            false,
            vec![m("net.clbarnes.connectors:version", Required, M::Version)],
            vec![
                f("connector_id", T::UInt64, false, Required).unique(),
                f("x", T::Float64, false, Required),
                f("y", T::Float64, false, Required),
                f("z", T::Float64, false, Required),
                f("src_sample_ids", T::ListUInt64, true, Derived),
                f("tgt_sample_ids", T::ListUInt64, true, Derived),
                f("src_fragment_ids", T::ListUInt64, true, Derived),
                f("tgt_fragment_ids", T::ListUInt64, true, Derived),
            ],
            Traits {
                coordinates: true,
                ..Traits::default()
            },
            &["connectors", "connector"],
            &["connector_id"],
        );
        connectors.extension = Some("net.clbarnes.connector".into());
        schemas.push(connectors);
        let extensions = vec![
            ExtensionDef {
                prefix: SWC_EXT.into(),
                applies_to: vec!["skeletons".into()],
                fields: with_origin(
                    vec![f("net.clbarnes.swc:type_id", T::Int64, false, Required)],
                    SWC_EXT,
                ),
                key_patterns: vec![
                    KeyPattern::Version,
                    KeyPattern::PerFragment("header"),
                    KeyPattern::PerInteger("type"),
                ],
            },
            // Extension v0.1 of net.clbarnes.connector added a link column to
            // connections; v0.2 (newest) left that section empty.
            ExtensionDef {
                prefix: "net.clbarnes.connector".into(),
                applies_to: vec!["connections".into()],
                fields: with_origin(
                    vec![f(
                        "net.clbarnes.connector:connector_id",
                        T::UInt64,
                        true,
                        Optional,
                    )],
                    "net.clbarnes.connector",
                ),
                key_patterns: vec![KeyPattern::Version],
            },
        ];
        Registry {
            schemas,
            extensions,
        }
    }

    /// Adds a schema (e.g. one defined by an extension).
    pub fn register_schema(&mut self, schema: SchemaDef) -> Result<(), RegistryError> {
        if self.schemas.iter().any(|s| s.name == schema.name) {
            return Err(RegistryError::Duplicate(schema.name));
        }
        self.schemas.push(schema);
        Ok(())
    }

    /// Adds an extension.
    pub fn register_extension(&mut self, ext: ExtensionDef) {
        self.extensions.push(ext);
    }

    /// All schema definitions.
    pub fn schemas(&self) -> &[SchemaDef] {
        &self.schemas
    }

    /// All extensions.
    pub fn extensions(&self) -> &[ExtensionDef] {
        &self.extensions
    }

    /// The extension with this prefix.
    pub fn extension(&self, prefix: &str) -> Option<&ExtensionDef> {
        self.extensions.iter().find(|e| e.prefix == prefix)
    }

    /// The definition of `name`, accepting aliases (`skeleton`, `point_clouds`, ...).
    pub fn get(&self, name: &str) -> Option<&SchemaDef> {
        let lower = name.to_ascii_lowercase();
        self.schemas
            .iter()
            .find(|s| s.name == lower || s.infixes.contains(&lower))
    }

    /// The effective schema of `name`, inheritance computed.
    pub fn effective(&self, name: &str) -> Result<EffectiveSchema, RegistryError> {
        let root = self
            .get(name)
            .ok_or_else(|| RegistryError::UnknownSchema(name.to_string()))?;
        let mut lineage: Vec<String> = Vec::new();
        let mut stack: Vec<(String, Vec<String>)> = vec![(root.name.clone(), vec![])];
        while let Some((n, path)) = stack.pop() {
            if path.contains(&n) {
                return Err(RegistryError::Cycle(n));
            }
            if lineage.contains(&n) {
                continue;
            }
            let d = self
                .schemas
                .iter()
                .find(|s| s.name == n)
                .ok_or_else(|| RegistryError::UnknownSchema(n.clone()))?;
            lineage.push(n.clone());
            let mut p = path.clone();
            p.push(n.clone());
            for parent in d.parents.iter().rev() {
                stack.push((parent.clone(), p.clone()));
            }
        }
        // Ancestors first so fields come out in the spec's order.
        let mut metadata: Vec<MetaSpec> = Vec::new();
        let mut fields: Vec<FieldSpec> = Vec::new();
        let mut traits = Traits::default();
        for n in lineage.iter().rev() {
            let Some(d) = self.schemas.iter().find(|s| &s.name == n) else {
                continue;
            };
            traits = traits.union(d.traits);
            for m in &d.metadata {
                if !metadata.iter().any(|x| x.key == m.key) {
                    metadata.push(m.clone());
                }
            }
            for f in &d.fields {
                if let Some(existing) = fields.iter_mut().find(|x| x.name == f.name) {
                    // A child may tighten a parent's optional field to required.
                    if f.presence == Presence::Required {
                        *existing = f.clone();
                    }
                } else {
                    fields.push(f.clone());
                }
            }
        }
        Ok(EffectiveSchema {
            name: root.name.clone(),
            is_abstract: root.is_abstract,
            lineage,
            metadata,
            fields,
            traits,
        })
    }

    /// Identifies a schema from a file name infix (`brain.skeletons.parquet`).
    pub fn from_file_name(&self, file_name: &str) -> Option<&SchemaDef> {
        let lower = file_name.to_ascii_lowercase();
        let parts: Vec<&str> = lower.split('.').collect();
        if parts.len() < 2 {
            return None;
        }
        // Check every dot-separated part except the extension (a bare
        // `skeletons.parquet` is recognised too, although it lacks the name prefix).
        for s in &self.schemas {
            if s.is_abstract {
                continue;
            }
            for inf in &s.infixes {
                if parts[..parts.len() - 1].iter().any(|p| p == inf) {
                    return Some(s);
                }
            }
        }
        None
    }

    /// Identifies a concrete schema from the columns present (most specific first).
    pub fn from_columns<'a>(
        &self,
        columns: impl IntoIterator<Item = &'a str>,
    ) -> Option<&SchemaDef> {
        let cols: Vec<&str> = columns.into_iter().collect();
        let has = |c: &String| cols.contains(&c.as_str());
        // Descendants before ancestors: sort concrete schemas by lineage depth.
        let mut candidates: Vec<(usize, &SchemaDef)> = self
            .schemas
            .iter()
            .filter(|s| !s.is_abstract && !s.signature.is_empty())
            .map(|s| {
                (
                    self.effective(&s.name)
                        .map(|e| e.lineage.len())
                        .unwrap_or(0),
                    s,
                )
            })
            .collect();
        candidates.sort_by_key(|c| std::cmp::Reverse(c.0));
        candidates
            .into_iter()
            .map(|(_, s)| s)
            .find(|s| s.signature.iter().all(has))
    }

    /// Extensions whose fields apply to `schema`.
    pub fn extensions_for<'a>(
        &'a self,
        schema: &'a EffectiveSchema,
    ) -> impl Iterator<Item = &'a ExtensionDef> + 'a {
        self.extensions
            .iter()
            .filter(move |e| e.applies_to.iter().any(|a| schema.is_a(a)))
    }
}

/// Splits `name` into (prefix, rest) at the first `:`.
pub fn split_prefix(name: &str) -> Option<(&str, &str)> {
    name.split_once(':')
}

/// Prefixes that are never extension names.
pub fn is_reserved_prefix(prefix: &str) -> bool {
    matches!(prefix, "attr" | "frag" | "ARROW" | "PARQUET")
}

/// Keys injected by toolkits that every check ignores.
pub fn is_technical_key(key: &str) -> bool {
    key.starts_with("ARROW:") || key.starts_with("PARQUET:") || key == "pandas"
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn inheritance_is_computed() {
        let r = Registry::standard();
        let sk = r.effective("skeletons").unwrap();
        assert_eq!(sk.lineage, ["skeletons", "pointclouds", "spatial", "base"]);
        let names: Vec<&str> = sk.fields.iter().map(|f| f.name.as_str()).collect();
        assert_eq!(
            names,
            [
                "attr",
                "sample_id",
                "fragment_id",
                "x",
                "y",
                "z",
                "parent_id",
                "radius",
                "child_ids",
                "n_children",
                "strahler"
            ]
        );
        let keys: Vec<&str> = sk.metadata.iter().map(|m| m.key.as_str()).collect();
        assert_eq!(keys, ["version", "context", "unit", "space"]);
        assert!(sk.traits.tree && sk.traits.samples && sk.traits.fragment_metadata);
        let c = r.effective("connections").unwrap();
        assert!(c.meta("unit").is_none());
        assert!(!c.traits.fragment_metadata);
        let d = r.effective("dotprops").unwrap();
        assert_eq!(
            d.meta("neighborhood_size").unwrap().presence,
            Presence::Required
        );
        assert!(!d.field("colinearity").unwrap().nullable);
        let cn = r.effective("net.clbarnes.connectors").unwrap();
        assert!(cn.meta("unit").is_some() && cn.field("sample_id").is_none());
    }

    #[test]
    fn identification() {
        let r = Registry::standard();
        assert_eq!(
            r.from_file_name("brain.skeletons.parquet").unwrap().name,
            "skeletons"
        );
        assert_eq!(
            r.from_file_name("x.skeleton.parquet").unwrap().name,
            "skeletons"
        );
        assert_eq!(
            r.from_file_name("cns.connections.feather").unwrap().name,
            "connections"
        );
        assert!(r.from_file_name("brain.parquet").is_none());
        assert_eq!(
            r.from_file_name("skeletons.parquet").unwrap().name,
            "skeletons"
        );
        assert!(r.from_file_name("skeletons").is_none());
        let cols = ["sample_id", "fragment_id", "x", "y", "z", "parent_id"];
        assert_eq!(r.from_columns(cols).unwrap().name, "skeletons");
        let cols = ["sample_id", "fragment_id", "x", "y", "z"];
        assert_eq!(r.from_columns(cols).unwrap().name, "pointclouds");
        assert_eq!(
            r.from_columns(["connection_id"]).unwrap().name,
            "connections"
        );
        assert!(r.from_columns(["foo"]).is_none());
    }

    #[test]
    fn types() {
        assert!(
            TypeSpec::ListUInt64.matches(&DataType::List(Arc::new(Field::new(
                "element",
                DataType::UInt64,
                false
            ))))
        );
        assert!(
            !TypeSpec::ListUInt64.matches(&DataType::List(Arc::new(Field::new(
                "item",
                DataType::Int64,
                true
            ))))
        );
        assert!(TypeSpec::AttrMap.matches(&TypeSpec::AttrMap.data_type()));
        assert!(TypeSpec::UInt64.lenient_castable(&DataType::Int64));
        assert!(!TypeSpec::UInt64.lenient_castable(&DataType::Float64));
        assert!(TypeSpec::DictUInt16Utf8.lenient_castable(&DataType::Utf8));
        assert!(is_valid_unit("") && is_valid_unit("dekameter") && !is_valid_unit("nm"));
    }
}
