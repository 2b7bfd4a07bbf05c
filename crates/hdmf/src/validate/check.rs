//! The structural validator: walks a file from its root through the specification of each
//! object, matching children to child specifications the way hdmf's validator does, and checks
//! attributes, data types, shapes, values, quantities, links and reference targets. Every
//! typed object the walk does not reach is then checked against its own type.
//!
//! Everything comes from the node table (consolidated metadata); dataset values are read only
//! for ISO 8601 text, reference targets and fixed values.

use std::borrow::Cow;
use std::collections::{BTreeMap, HashMap, HashSet};

use serde_json::{Map, Value};

use super::report::{Finding, Rule};
use super::schema::{Dtype, LinkSpec, NodeSpec, Primitive, Quantity, SchemaSet, Stored, TypeDef};
use super::stored::{
    classify, classify_attribute, has_timezone, is_iso8601, AttrElement, StoredType,
};
use crate::convention::Convention;
use crate::file::{Link, NwbFile};
use crate::index::{NodeDoc, NodeKind};
use crate::reference::Reference;
use crate::values::DatasetValue;

/// What the type attributes of an object say, looked up in the schema.
#[derive(Clone, Debug)]
pub(crate) enum TypeLookup<'s> {
    /// No `neurodata_type` / `data_type`.
    Untyped,
    /// A type of a loaded namespace.
    Known(&'s TypeDef),
    /// A type no loaded namespace (visible from its `namespace`) defines.
    Unknown(String),
    /// A type whose `namespace` is not loaded: (namespace, type).
    MissingNamespace(String, String),
}

/// The type attributes of a node: (`namespace`, `neurodata_type` or `data_type`).
pub(crate) fn type_attributes(attrs: &Map<String, Value>) -> Option<(Option<&str>, &str)> {
    let name = attrs
        .get("neurodata_type")
        .or_else(|| attrs.get("data_type"))?
        .as_str()?;
    Some((attrs.get("namespace").and_then(Value::as_str), name))
}

pub(crate) fn lookup<'s>(schema: &'s SchemaSet, attrs: &Map<String, Value>) -> TypeLookup<'s> {
    let Some((namespace, name)) = type_attributes(attrs) else {
        return TypeLookup::Untyped;
    };
    if let Some(ns) = namespace {
        if schema.namespace(ns).is_none() {
            return TypeLookup::MissingNamespace(ns.to_string(), name.to_string());
        }
    }
    match schema.lookup(namespace, name) {
        Some(t) => TypeLookup::Known(t),
        None => TypeLookup::Unknown(name.to_string()),
    }
}

/// A child of a group as stored: a dataset, a group or a link (resolved).
struct ChildInfo<'s> {
    name: Cow<'s, str>,
    /// Where it is stored (for a link, the link's path).
    path: Cow<'s, str>,
    /// The kind of the object (for a link, of its target).
    kind: NodeKind,
    /// For a link: the target's path and whether it is in another file.
    link_target: Option<(String, bool)>,
    /// The type of the object (for a link, of its target).
    lookup: TypeLookup<'s>,
    /// Its documents (not for a link), until it is checked.
    node: Option<Cow<'s, NodeDoc>>,
}

/// A child specification of a group.
#[derive(Clone, Copy)]
enum ChildSpec<'n> {
    Node(&'n NodeSpec),
    Link(&'n LinkSpec),
}

impl<'n> ChildSpec<'n> {
    fn name(self) -> Option<&'n str> {
        match self {
            ChildSpec::Node(s) => s.name.as_deref(),
            ChildSpec::Link(l) => l.name.as_deref(),
        }
    }

    fn quantity(self) -> Quantity {
        match self {
            ChildSpec::Node(s) => s.quantity(),
            ChildSpec::Link(l) => l.quantity(),
        }
    }

    fn data_type(self) -> Option<&'n str> {
        match self {
            ChildSpec::Node(s) => s.data_type(),
            ChildSpec::Link(l) => Some(&l.target_type),
        }
    }

    fn noun(self) -> &'static str {
        match self {
            ChildSpec::Node(s) if s.kind == NodeKind::Dataset => "dataset",
            ChildSpec::Node(_) => "group",
            ChildSpec::Link(_) => "link",
        }
    }

    fn describe(self) -> String {
        match (self.name(), self.data_type()) {
            (Some(name), Some(t)) => format!("{} '{name}' of type {t}", self.noun()),
            (Some(name), None) => format!("{} '{name}'", self.noun()),
            (None, Some(t)) => format!("{} of type {t}", self.noun()),
            (None, None) => self.noun().to_string(),
        }
    }
}

/// The validator's state for one file.
pub(crate) struct Checker<'a> {
    pub file: &'a NwbFile,
    pub schema: &'a SchemaSet,
    /// Parent path → its stored datasets and groups (name, path, kind).
    children: HashMap<&'a str, Vec<(&'a str, &'a str, NodeKind)>>,
    /// Parent path → its links.
    links: HashMap<String, Vec<Link>>,
    /// The cached specifications' group, left out of the walk.
    specloc: Option<String>,
    /// `specloc` + `/`.
    specloc_prefix: Option<String>,
    /// Objects validated against a specification (or known to be of an unknown type's).
    visited: HashSet<&'a str>,
    /// Typed objects of known types, for the table rules.
    pub typed: Vec<(String, NodeKind, &'a TypeDef)>,
    /// Reference and link targets already resolved: (source, path) → type or error.
    targets: HashMap<(String, String), Result<Option<String>, String>>,
    pub findings: Vec<Finding>,
    /// How many groups deep the walk is.
    depth: usize,
}

/// How deep the walk goes (a bound on its recursion, for hostile hierarchies).
const MAX_DEPTH: usize = 512;

impl<'a> Checker<'a> {
    pub fn new(file: &'a NwbFile, schema: &'a SchemaSet) -> Self {
        let specloc = file.specloc();
        let specloc_prefix = specloc
            .as_deref()
            .map(|s| format!("{}/", s.trim_end_matches('/')));
        let mut checker = Checker {
            file,
            schema,
            children: HashMap::new(),
            links: HashMap::new(),
            specloc,
            specloc_prefix,
            visited: HashSet::new(),
            typed: Vec::new(),
            targets: HashMap::new(),
            findings: Vec::new(),
            depth: 0,
        };
        for (path, kind) in file.nodes() {
            if path == "/" || checker.in_specloc(path) {
                continue;
            }
            let (parent, name) = match path.rsplit_once('/') {
                Some(("", name)) => ("/", name),
                Some((parent, name)) => (parent, name),
                None => continue,
            };
            checker
                .children
                .entry(parent)
                .or_default()
                .push((name, path, kind));
        }
        match file.links() {
            Ok(links) => {
                for l in links {
                    checker.links.entry(l.parent.clone()).or_default().push(l);
                }
            }
            Err(e) => checker.find(
                Rule::Unreadable,
                "/",
                "NWBFile",
                None,
                format!("the link lists cannot be read: {e}"),
            ),
        }
        checker
    }

    pub fn find(
        &mut self,
        rule: Rule,
        path: &str,
        data_type: &str,
        attribute: Option<&str>,
        message: String,
    ) {
        self.findings.push(Finding {
            severity: rule.severity(),
            path: path.to_string(),
            data_type: data_type.to_string(),
            rule,
            attribute: attribute.map(str::to_string),
            message,
        });
    }

    fn in_specloc(&self, path: &str) -> bool {
        self.specloc.as_deref().is_some_and(|s| path == s)
            || self
                .specloc_prefix
                .as_deref()
                .is_some_and(|prefix| path.starts_with(prefix))
    }

    /// Validate the whole file.
    pub fn run(&mut self) {
        self.schema_findings();
        let root = self.file.node("/").ok().flatten();
        let root_attrs = root
            .as_ref()
            .map(|n| n.attributes.clone())
            .unwrap_or_default();
        match lookup(self.schema, &root_attrs) {
            TypeLookup::Known(t) => {
                self.typed.push(("/".into(), NodeKind::Group, t));
                self.validate_object("/", Some("/"), NodeKind::Group, &t.resolved, &t.name, None);
            }
            TypeLookup::Untyped => self.find(
                Rule::UnknownType,
                "/",
                "(untyped)",
                None,
                "the root group has no neurodata_type or data_type attribute".into(),
            ),
            // Reported with every other typed object below.
            TypeLookup::Unknown(_) | TypeLookup::MissingNamespace(..) => {}
        }
        self.sweep_typed_objects();
    }

    /// Problems of the specifications themselves, and namespaces included but not loaded.
    fn schema_findings(&mut self) {
        let at = self.specloc.clone().unwrap_or_else(|| "/".into());
        let missing: Vec<_> = self.schema.missing_includes().to_vec();
        let incomplete: HashSet<String> = missing.iter().map(|m| m.by.clone()).collect();
        for m in &missing {
            self.find(
                Rule::MissingNamespace,
                &at,
                &format!("namespace {}", m.by),
                None,
                format!(
                    "namespace '{}' includes '{}', which is not cached in the file (nor given \
                     with --namespace)",
                    m.by, m.namespace
                ),
            );
        }
        let problems: Vec<_> = self.schema.problems().to_vec();
        for p in problems {
            // An unresolvable parent type in a namespace with a missing include follows from it.
            if incomplete.contains(&p.namespace) && p.message.contains("which is not defined") {
                continue;
            }
            self.find(
                Rule::Schema,
                &at,
                &format!("namespace {}", p.namespace),
                None,
                p.message,
            );
        }
    }

    /// Every typed object the walk did not reach is checked against its own type; unknown
    /// types and namespaces are reported here, once.
    fn sweep_typed_objects(&mut self) {
        let file = self.file;
        // Namespace → (first object, its type, how many objects).
        let mut missing: BTreeMap<String, (String, String, usize)> = BTreeMap::new();
        for (path, kind) in file.nodes() {
            if self.visited.contains(path) || self.in_specloc(path) {
                continue;
            }
            let Some(node) = file.node(path).ok().flatten() else {
                continue;
            };
            match lookup(self.schema, &node.attributes) {
                TypeLookup::Untyped => {}
                TypeLookup::Known(t) => {
                    self.typed.push((path.to_string(), kind, t));
                    self.validate_object(path, Some(path), kind, &t.resolved, &t.name, Some(node));
                }
                TypeLookup::Unknown(name) => {
                    let ns = type_attributes(&node.attributes)
                        .and_then(|(ns, _)| ns)
                        .map(|ns| format!(" in namespace '{ns}'"))
                        .unwrap_or_default();
                    self.find(
                        Rule::UnknownType,
                        path,
                        &name,
                        None,
                        format!(
                            "type '{name}' is not defined{ns} (nor in the namespaces it includes)"
                        ),
                    );
                }
                TypeLookup::MissingNamespace(ns, name) => {
                    let entry = missing.entry(ns).or_insert((path.to_string(), name, 0));
                    entry.2 += 1;
                }
            }
        }
        for (ns, (path, name, count)) in missing {
            self.find(
                Rule::MissingNamespace,
                &path,
                &name,
                None,
                format!(
                    "its namespace '{ns}' is not cached in the file (nor given with --namespace); \
                     {count} object(s) use it"
                ),
            );
        }
    }

    /// Check one object against a specification. `visit`: the path under which the object
    /// counts as checked (`None`: reached through a link; `path` is then the target and its own
    /// links are not followed). `node`: its documents, when the caller has them.
    fn validate_object(
        &mut self,
        path: &str,
        visit: Option<&'a str>,
        kind: NodeKind,
        spec: &NodeSpec,
        label: &str,
        node: Option<Cow<'a, NodeDoc>>,
    ) {
        let via_link = visit.is_none();
        if let Some(key) = visit {
            self.visited.insert(key);
        }
        let file = self.file;
        let Some(node) = node.or_else(|| file.node(path).ok().flatten()) else {
            self.find(
                Rule::Unreadable,
                path,
                label,
                None,
                "its metadata cannot be read".into(),
            );
            return;
        };
        if node.kind != kind {
            // Matched by kind already; a mismatch means a hand-built call.
            return;
        }
        self.check_attributes(path, &node.attributes, spec, label);
        match kind {
            NodeKind::Dataset => self.check_dataset(path, &node, spec, label),
            NodeKind::Group if self.depth >= MAX_DEPTH => self.find(
                Rule::Unreadable,
                path,
                label,
                None,
                format!("more than {MAX_DEPTH} levels deep: its children are not checked"),
            ),
            NodeKind::Group => {
                self.depth += 1;
                self.check_children(path, spec, label, via_link);
                self.depth -= 1;
            }
        }
    }

    fn check_attributes(
        &mut self,
        path: &str,
        attrs: &Map<String, Value>,
        spec: &NodeSpec,
        label: &str,
    ) {
        for attr in &spec.attributes {
            let name = attr.name.as_str();
            let Some(value) = attrs.get(name).filter(|v| !v.is_null()) else {
                if attr.is_required() {
                    let default = attr
                        .default_value
                        .as_ref()
                        .map(|d| format!(" (its default is {d}, but readers may not supply it)"))
                        .unwrap_or_default();
                    self.find(
                        Rule::MissingAttribute,
                        path,
                        label,
                        Some(name),
                        format!("required attribute is missing{default}"),
                    );
                }
                continue;
            };
            let stored = classify_attribute(value);
            match (&attr.shape, &stored.shape) {
                (None, Some(shape)) => self.find(
                    Rule::Shape,
                    path,
                    label,
                    Some(name),
                    format!("expected a scalar, found an array of shape {shape:?}"),
                ),
                (Some(want), None) => self.find(
                    Rule::Shape,
                    path,
                    label,
                    Some(name),
                    format!("expected an array of shape {want}, found a scalar"),
                ),
                (Some(want), Some(got)) if !want.accepts(got) => self.find(
                    Rule::Shape,
                    path,
                    label,
                    Some(name),
                    format!("expected shape {want}, found {got:?}"),
                ),
                _ => {}
            }
            match &attr.dtype {
                Some(Dtype::Primitive(p)) => {
                    self.check_attribute_elements(path, label, name, *p, &stored.elements)
                }
                Some(Dtype::Reference { target_type, .. }) => {
                    for (element, _) in &stored.elements {
                        match element {
                            AttrElement::Reference(r) => {
                                self.check_reference_target(path, label, Some(name), r, target_type)
                            }
                            other => {
                                self.find(
                                    Rule::Dtype,
                                    path,
                                    label,
                                    Some(name),
                                    format!(
                                        "expected an object reference to {target_type}, found {}",
                                        describe_element(other)
                                    ),
                                );
                                break;
                            }
                        }
                    }
                }
                Some(Dtype::Compound(_)) | None => {}
            }
            if let Some(want) = &attr.value {
                if !same_value(want, value) {
                    self.find(
                        Rule::Value,
                        path,
                        label,
                        Some(name),
                        format!("must be {want}, found {value}"),
                    );
                }
            }
        }
    }

    fn check_attribute_elements(
        &mut self,
        path: &str,
        label: &str,
        name: &str,
        want: Primitive,
        elements: &[(AttrElement, &Value)],
    ) {
        for (element, value) in elements {
            let ok = match element {
                AttrElement::Primitive(stored) => {
                    want.accepts(*stored)
                        // JSON carries no integer width: a non-negative integer fits any
                        // unsigned width.
                        || (matches!(
                            want,
                            Primitive::UInt8 | Primitive::UInt16 | Primitive::UInt32 | Primitive::UInt64
                        ) && value.as_u64().is_some())
                        // Nor does it tell bytes from text.
                        || (want == Primitive::Ascii && *stored == Stored::Utf8)
                }
                _ => false,
            };
            if !ok {
                self.find(
                    Rule::Dtype,
                    path,
                    label,
                    Some(name),
                    format!(
                        "expected {}, found {}",
                        want.name(),
                        describe_element(element)
                    ),
                );
                return;
            }
            if want == Primitive::IsoDatetime {
                let text = value.as_str().unwrap_or_default();
                if !self.check_iso(path, label, Some(name), text) {
                    return;
                }
            }
        }
    }

    /// Report text that is not ISO 8601 (`dtype`) or lacks a time zone (`timezone`); whether
    /// it was fine.
    fn check_iso(&mut self, path: &str, label: &str, attribute: Option<&str>, text: &str) -> bool {
        if !is_iso8601(text) {
            self.find(
                Rule::Dtype,
                path,
                label,
                attribute,
                format!("expected isodatetime, found text that is not ISO 8601: {text:?}"),
            );
            return false;
        }
        if text.contains('T') && !has_timezone(text) {
            self.find(
                Rule::Timezone,
                path,
                label,
                attribute,
                format!("the date-time {text:?} has no time zone"),
            );
            return false;
        }
        true
    }

    /// The type of the object a reference or link leads to (`None`: untyped), cached.
    fn target_type(
        &mut self,
        source: &str,
        path: &str,
        reference: &Reference,
    ) -> Result<Option<String>, String> {
        let key = (source.to_string(), path.to_string());
        if let Some(hit) = self.targets.get(&key) {
            return hit.clone();
        }
        let result = self
            .file
            .dereference(reference)
            .map_err(|e| e.to_string())
            .and_then(|target| {
                let owner = self.file.file_of(&target);
                let node = owner
                    .node(&target.path)
                    .map_err(|e| e.to_string())?
                    .ok_or_else(|| format!("no object at '{}'", target.path))?;
                Ok(type_attributes(&node.attributes).map(|(_, t)| t.to_string()))
            });
        self.targets.insert(key, result.clone());
        result
    }

    fn check_reference_target(
        &mut self,
        path: &str,
        label: &str,
        attribute: Option<&str>,
        reference: &Reference,
        target_type: &str,
    ) {
        match self.target_type(&reference.source, &reference.path, reference) {
            Err(e) => self.find(
                Rule::Unresolved,
                path,
                label,
                attribute,
                format!(
                    "the reference to '{}' does not resolve: {e}",
                    reference.path
                ),
            ),
            Ok(found) => {
                if !self.schema.knows_type(target_type) {
                    return;
                }
                let ok = match &found {
                    Some(t) => match self.schema.lookup(None, t) {
                        Some(def) => def.is_a(target_type),
                        // Unknown types are reported where they are stored.
                        None => true,
                    },
                    None => false,
                };
                if !ok {
                    self.find(
                        Rule::ReferenceTarget,
                        path,
                        label,
                        attribute,
                        format!(
                            "refers to '{}', {}, expected {target_type} (or a subtype)",
                            reference.path,
                            found
                                .map(|t| format!("of type {t}"))
                                .unwrap_or_else(|| "which has no type".into())
                        ),
                    );
                }
            }
        }
    }

    fn check_dataset(&mut self, path: &str, node: &NodeDoc, spec: &NodeSpec, label: &str) {
        let Some(doc) = node.array_doc.as_ref() else {
            return;
        };
        let stored = classify(self.file.convention(), &node.attributes, doc);
        match (&spec.shape, &stored.shape) {
            (Some(want), None) => self.find(
                Rule::Shape,
                path,
                label,
                None,
                format!("expected an array of shape {want}, found a scalar"),
            ),
            (Some(want), Some(got)) if !want.accepts(got) => self.find(
                Rule::Shape,
                path,
                label,
                None,
                format!("expected shape {want}, found {got:?}"),
            ),
            // An untyped dataset without shape or dims is a scalar. The legacy convention
            // marks only text and numeric scalars: a one-element reference or compound
            // dataset may be a scalar too.
            (None, Some(got))
                if spec.data_type().is_none()
                    && spec.dims.is_none()
                    && spec.dtype.is_some()
                    && !(self.file.convention() == Convention::Legacy && got.as_slice() == [1]) =>
            {
                self.find(
                    Rule::Shape,
                    path,
                    label,
                    None,
                    format!("expected a scalar, found an array of shape {got:?}"),
                )
            }
            _ => {}
        }
        if let Some(want) = &spec.dtype {
            match &stored.dtype {
                Err(e) => self.find(
                    Rule::Unreadable,
                    path,
                    label,
                    None,
                    format!("its data type cannot be told: {e}"),
                ),
                Ok(found) => self.check_dataset_dtype(path, label, want, found),
            }
        }
        if let Some(want) = &spec.value {
            if stored.shape.is_none() {
                match self.file.read_dataset(path, None) {
                    Ok(ds) => {
                        if let Some(found) = scalar_json(&ds.value) {
                            if !same_value(want, &found) {
                                self.find(
                                    Rule::Value,
                                    path,
                                    label,
                                    None,
                                    format!("must be {want}, found {found}"),
                                );
                            }
                        }
                    }
                    Err(e) => self.find(Rule::Unreadable, path, label, None, e.to_string()),
                }
            }
        }
    }

    fn check_dataset_dtype(&mut self, path: &str, label: &str, want: &Dtype, found: &StoredType) {
        match (want, found) {
            (Dtype::Primitive(p), StoredType::Primitive(s)) => {
                let accepted = p.accepts(*s)
                    // hdmf-zarr 0.14 stores every text as UTF-8 strings.
                    || (*p == Primitive::Ascii
                        && *s == Stored::Utf8
                        && self.file.convention() == Convention::V3);
                if !accepted {
                    self.find(
                        Rule::Dtype,
                        path,
                        label,
                        None,
                        format!("expected {}, found {}", p.name(), s.name()),
                    );
                } else if *p == Primitive::IsoDatetime {
                    match self.file.read_dataset(path, None) {
                        Ok(ds) => {
                            if let DatasetValue::Text { values, .. } = &ds.value {
                                for text in values {
                                    if !self.check_iso(path, label, None, text) {
                                        break;
                                    }
                                }
                            }
                        }
                        Err(e) => self.find(Rule::Unreadable, path, label, None, e.to_string()),
                    }
                }
            }
            (
                Dtype::Reference {
                    reftype,
                    target_type,
                },
                StoredType::Reference(kind),
            ) => {
                if reftype != kind {
                    self.find(
                        Rule::Dtype,
                        path,
                        label,
                        None,
                        format!(
                            "expected {} references, found {} references",
                            reftype.name(),
                            kind.name()
                        ),
                    );
                    return;
                }
                self.check_dataset_reference_targets(path, label, &[(None, target_type.clone())]);
            }
            (Dtype::Compound(fields), StoredType::Compound(stored)) => {
                let mut ref_fields = Vec::new();
                for field in fields {
                    let Some((_, got)) = stored.iter().find(|(n, _)| *n == field.name) else {
                        self.find(
                            Rule::Dtype,
                            path,
                            label,
                            None,
                            format!("compound field '{}' is missing", field.name),
                        );
                        continue;
                    };
                    let ok = match (&field.dtype, got) {
                        (Dtype::Primitive(p), StoredType::Primitive(s)) => {
                            p.accepts(*s) || (*p == Primitive::Ascii && *s == Stored::Utf8)
                        }
                        (Dtype::Reference { target_type, .. }, StoredType::Reference(_)) => {
                            ref_fields.push((Some(field.name.clone()), target_type.clone()));
                            true
                        }
                        _ => false,
                    };
                    if !ok {
                        self.find(
                            Rule::Dtype,
                            path,
                            label,
                            None,
                            format!(
                                "compound field '{}': expected {}, found {}",
                                field.name,
                                field.dtype,
                                got.describe()
                            ),
                        );
                    }
                }
                if !ref_fields.is_empty() {
                    self.check_dataset_reference_targets(path, label, &ref_fields);
                }
            }
            (want, found) => self.find(
                Rule::Dtype,
                path,
                label,
                None,
                format!("expected {want}, found {}", found.describe()),
            ),
        }
    }

    /// Read a reference dataset and check each distinct target's type; `fields` pairs a
    /// compound field (`None`: the plain elements) with the type its targets must have.
    fn check_dataset_reference_targets(
        &mut self,
        path: &str,
        label: &str,
        fields: &[(Option<String>, String)],
    ) {
        let dataset = match self.file.read_dataset(path, None) {
            Ok(ds) => ds,
            Err(e) => {
                self.find(Rule::Unreadable, path, label, None, e.to_string());
                return;
            }
        };
        let mut seen: HashSet<(Option<String>, String, String)> = HashSet::new();
        for (_, field, reference) in dataset.value.references() {
            let Some((_, target_type)) = fields.iter().find(|(f, _)| f.as_deref() == field) else {
                continue;
            };
            if !seen.insert((
                field.map(str::to_string),
                reference.source.clone(),
                reference.path.clone(),
            )) {
                continue;
            }
            let before = self.findings.len();
            self.check_reference_target(path, label, None, reference, target_type);
            if let (Some(f), Some(last)) = (field, self.findings.get_mut(before)) {
                last.message = format!("compound field '{f}': {}", last.message);
            }
        }
    }

    /// The stored children of a group with their types (links resolved).
    /// Also the names of links that do not resolve (reported here).
    fn child_infos(&mut self, path: &str, label: &str) -> (Vec<ChildInfo<'a>>, Vec<String>) {
        let file = self.file;
        let schema = self.schema;
        let mut out = Vec::new();
        let mut dangling = Vec::new();
        for &(name, child_path, kind) in self.children.get(path).into_iter().flatten() {
            let node = file.node(child_path).ok().flatten();
            let lookup = node
                .as_ref()
                .map(|n| lookup(schema, &n.attributes))
                .unwrap_or(TypeLookup::Untyped);
            out.push(ChildInfo {
                name: Cow::Borrowed(name),
                path: Cow::Borrowed(child_path),
                kind,
                link_target: None,
                lookup,
                node,
            });
        }
        for link in self.links.get(path).cloned().unwrap_or_default() {
            match file.resolve(&link.path) {
                Err(e) => {
                    self.find(
                        Rule::Unresolved,
                        &link.path,
                        &format!("{label}/{}", link.name),
                        None,
                        format!(
                            "the link to '{}' ({}) does not resolve: {e}",
                            link.target, link.source
                        ),
                    );
                    dangling.push(link.name.clone());
                }
                Ok(target) => {
                    let external = target.file.is_some();
                    let owner = file.file_of(&target);
                    let lookup = owner
                        .node(&target.path)
                        .ok()
                        .flatten()
                        .map(|n| lookup(schema, &n.attributes))
                        .unwrap_or(TypeLookup::Untyped);
                    out.push(ChildInfo {
                        name: Cow::Owned(link.name.clone()),
                        path: Cow::Owned(link.path.clone()),
                        kind: target.kind,
                        link_target: Some((target.path.clone(), external)),
                        lookup,
                        node: None,
                    });
                }
            }
        }
        (out, dangling)
    }

    /// Whether a child may be matched to a specification (name, kind and type).
    fn compatible(&self, spec: ChildSpec<'_>, child: &ChildInfo<'a>) -> bool {
        if spec.name().is_some_and(|n| n != child.name) {
            return false;
        }
        match spec {
            ChildSpec::Node(s) if s.kind != child.kind => return false,
            ChildSpec::Link(_) if child.link_target.is_none() => return false,
            _ => {}
        }
        self.type_fits(spec.data_type(), &child.lookup)
    }

    /// The type definition of an object: its own, or for an object whose namespace is missing
    /// (reported once), the type of that name in any loaded namespace.
    fn definition<'l>(&self, lookup: &'l TypeLookup<'a>) -> Option<&'a TypeDef> {
        match lookup {
            TypeLookup::Known(def) => Some(*def),
            TypeLookup::MissingNamespace(_, name) => self.schema.lookup(None, name),
            TypeLookup::Untyped | TypeLookup::Unknown(_) => None,
        }
    }

    /// Whether an object of `lookup`'s type may stand where a specification asks for `want`.
    fn type_fits(&self, want: Option<&str>, lookup: &TypeLookup<'a>) -> bool {
        match want {
            None => true,
            // A type no loaded namespace defines cannot be checked (its namespace is reported).
            Some(t) if !self.schema.knows_type(t) => true,
            Some(t) => self.definition(lookup).is_some_and(|def| def.is_a(t)),
        }
    }

    fn check_children(&mut self, path: &str, spec: &NodeSpec, label: &str, via_link: bool) {
        let (mut children, dangling) = self.child_infos(path, label);
        let specs: Vec<ChildSpec<'_>> = spec
            .datasets
            .iter()
            .map(ChildSpec::Node)
            .chain(spec.groups.iter().map(ChildSpec::Node))
            .chain(spec.links.iter().map(ChildSpec::Link))
            .collect();
        let mut matched: Vec<Vec<usize>> = vec![Vec::new(); specs.len()];
        let mut unmatched = Vec::new();
        for (ci, c) in children.iter().enumerate() {
            let mut candidates: Vec<usize> = (0..specs.len())
                .filter(|&si| self.compatible(specs[si], c))
                .collect();
            // A specification of the child's very name is more specific than an unnamed one
            // (hdmf's validator takes the first unsatisfied candidate, so an optional named
            // column of a table fell to the table's unnamed `VectorData *` and went unchecked).
            if candidates
                .iter()
                .any(|&si| specs[si].name() == Some(c.name.as_ref()))
            {
                candidates.retain(|&si| specs[si].name() == Some(c.name.as_ref()));
            }
            let unsatisfied = |si: &usize| {
                let q = specs[*si].quantity();
                let n = matched[*si].len() as u64;
                (q.required() && n == 0) || matches!(q, Quantity::Exactly(k) if n < k)
            };
            let chosen = match candidates.as_slice() {
                [] => None,
                [one] => Some(*one),
                many => many.iter().copied().find(unsatisfied).or(Some(many[0])),
            };
            match chosen {
                Some(si) => matched[si].push(ci),
                None => unmatched.push(ci),
            }
        }
        // Children whose name matches a specification of another type, and dangling links,
        // explain why a specification has no match.
        let mut explained: HashSet<usize> = (0..specs.len())
            .filter(|&si| {
                specs[si]
                    .name()
                    .is_some_and(|n| dangling.iter().any(|d| d == n))
            })
            .collect();
        for &ci in &unmatched {
            let c = &children[ci];
            if matches!(
                c.lookup,
                TypeLookup::Unknown(_) | TypeLookup::MissingNamespace(..)
            ) {
                continue;
            }
            let named = (0..specs.len()).find(|&si| {
                specs[si].name() == Some(c.name.as_ref())
                    && match specs[si] {
                        ChildSpec::Node(s) => s.kind == c.kind,
                        ChildSpec::Link(_) => c.link_target.is_some(),
                    }
            });
            let found = match &c.lookup {
                TypeLookup::Known(t) => format!("of type {}", t.name),
                _ => "which has no type".to_string(),
            };
            if let Some(si) = named {
                explained.insert(si);
                let want = specs[si].data_type().unwrap_or("?");
                match &c.link_target {
                    Some((target, _)) => self.find(
                        Rule::LinkTarget,
                        &c.path,
                        &format!("{label}/{}", c.name),
                        None,
                        format!("links to '{target}', {found}, expected {want} (or a subtype)"),
                    ),
                    None => self.find(
                        Rule::WrongType,
                        &c.path,
                        &format!("{label}/{}", c.name),
                        None,
                        format!("is an object {found}, expected {want} (or a subtype)"),
                    ),
                }
            } else if !(path == "/" && c.name.starts_with('.')) {
                let what = match (&c.link_target, c.kind) {
                    (Some(_), _) => "link",
                    (None, NodeKind::Dataset) => "dataset",
                    (None, NodeKind::Group) => "group",
                };
                let data_type = match &c.lookup {
                    TypeLookup::Known(t) => t.name.clone(),
                    _ => format!("{label}/{}", c.name),
                };
                self.find(
                    Rule::Unmatched,
                    &c.path,
                    &data_type,
                    None,
                    format!("this {what} is not described by the specification of {label}"),
                );
            }
        }
        for (si, child_spec) in specs.iter().enumerate() {
            let n = matched[si].len() as u64;
            let q = child_spec.quantity();
            if n == 0 && q.required() {
                if explained.contains(&si) {
                    continue;
                }
                let rule = match child_spec {
                    ChildSpec::Link(_) => Rule::MissingLink,
                    ChildSpec::Node(s) if s.kind == NodeKind::Dataset => Rule::MissingDataset,
                    ChildSpec::Node(_) => Rule::MissingGroup,
                };
                self.find(
                    rule,
                    path,
                    label,
                    None,
                    format!(
                        "required {} is missing (quantity {q})",
                        child_spec.describe()
                    ),
                );
            } else if n > 0
                && ((!q.is_many() && n > 1) || matches!(q, Quantity::Exactly(k) if n != k))
            {
                self.find(
                    Rule::Quantity,
                    path,
                    label,
                    None,
                    format!("expected {q} {}, found {n}", child_spec.describe()),
                );
            }
        }
        for (si, child_spec) in specs.iter().enumerate() {
            let ChildSpec::Node(child_spec) = *child_spec else {
                continue;
            };
            for &ci in &matched[si] {
                let node = children[ci].node.take();
                let c = &children[ci];
                let (target, visit) = match &c.link_target {
                    // Objects of unknown types are reported (once) by the sweep.
                    None => match (&c.path, &c.lookup, via_link) {
                        (_, TypeLookup::Unknown(_) | TypeLookup::MissingNamespace(..), _)
                        | (_, _, true)
                        | (Cow::Owned(_), _, _) => (c.path.to_string(), None),
                        (Cow::Borrowed(p), _, false) => (p.to_string(), Some(*p)),
                    },
                    Some((target, external)) => {
                        if via_link {
                            // One hop: what a linked object links to is checked where that
                            // object lives.
                            continue;
                        }
                        if !child_spec.is_linkable() {
                            self.find(
                                Rule::IllegalLink,
                                &c.path,
                                &format!("{label}/{}", c.name),
                                None,
                                format!(
                                    "is a link to '{target}', but the specification wants the {} itself",
                                    if c.kind == NodeKind::Dataset { "dataset" } else { "group" }
                                ),
                            );
                            continue;
                        }
                        if *external {
                            self.find(
                                Rule::External,
                                &c.path,
                                &format!("{label}/{}", c.name),
                                None,
                                format!("links to '{target}' in another file, which is not validated here"),
                            );
                            continue;
                        }
                        (target.clone(), None)
                    }
                };
                let (effective, child_label): (Cow<'_, NodeSpec>, String) =
                    match self.definition(&c.lookup) {
                        Some(t) => (
                            if child_spec.refines() {
                                Cow::Owned(super::schema::refine(&t.resolved, child_spec))
                            } else {
                                Cow::Borrowed(&t.resolved)
                            },
                            t.name.clone(),
                        ),
                        None => (Cow::Borrowed(child_spec), format!("{label}/{}", c.name)),
                    };
                if visit.is_some() {
                    if let TypeLookup::Known(t) = c.lookup {
                        self.typed.push((target.clone(), c.kind, t));
                    }
                }
                self.validate_object(&target, visit, c.kind, &effective, &child_label, node);
            }
        }
    }
}

fn describe_element(element: &AttrElement) -> String {
    match element {
        AttrElement::Primitive(s) => s.name().to_string(),
        AttrElement::Reference(_) => "an object reference".into(),
        AttrElement::Other(what) => what.clone(),
    }
}

/// Whether a stored value equals a specification's fixed value (numbers by value).
fn same_value(want: &Value, found: &Value) -> bool {
    match (want, found) {
        (Value::Number(a), Value::Number(b)) => a.as_f64() == b.as_f64(),
        (Value::String(a), Value::String(b)) => a == b,
        (Value::Number(_), Value::String(s)) | (Value::String(s), Value::Number(_)) => {
            s == &want.to_string() || s == &found.to_string()
        }
        (Value::Array(a), Value::Array(b)) => {
            a.len() == b.len() && a.iter().zip(b).all(|(x, y)| same_value(x, y))
        }
        _ => want == found,
    }
}

/// A scalar dataset's value as JSON.
fn scalar_json(value: &DatasetValue) -> Option<Value> {
    match value {
        DatasetValue::Text { values, .. } => values.first().map(|t| Value::String(t.clone())),
        DatasetValue::Numeric { data_type, bytes } => {
            crate::values::numeric_to_json(data_type, bytes).ok()
        }
        _ => None,
    }
}
