//! The HDMF specification language as a model: namespaces and their includes, type definitions
//! (`neurodata_type_def` / `data_type_def`) resolved down their inheritance chain, and the
//! group, dataset, attribute and link specifications a file is checked against.
//!
//! A [`SchemaSet`] is built from namespace documents ([`NamespaceDocs`], as cached in a file
//! or loaded from YAML) and never fails: what it cannot understand (an unknown parent type, a
//! malformed `dtype`, a namespace that includes one that is not there) is kept as a
//! [`SchemaProblem`] and the rest stays usable.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::fmt;

use neurochunk_dtype::DataType;
use serde_json::Value;

use crate::index::NodeKind;
use crate::write::NamespaceDocs;

/// How many objects a child specification allows (`quantity`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Quantity {
    /// Exactly this many (`1` is the default).
    Exactly(u64),
    /// `?` (`zero_or_one`).
    ZeroOrOne,
    /// `*` (`zero_or_many`).
    ZeroOrMore,
    /// `+` (`one_or_many`).
    OneOrMore,
}

impl Quantity {
    /// Parse a `quantity` value: `?`, `*`, `+`, their long names, or a non-negative integer.
    pub fn parse(value: &Value) -> Result<Self, String> {
        match value {
            Value::String(s) => match s.as_str() {
                "?" | "zero_or_one" => Ok(Quantity::ZeroOrOne),
                "*" | "zero_or_many" => Ok(Quantity::ZeroOrMore),
                "+" | "one_or_many" => Ok(Quantity::OneOrMore),
                other => other
                    .parse::<u64>()
                    .map(Quantity::Exactly)
                    .map_err(|_| format!("unknown quantity '{other}'")),
            },
            Value::Number(n) => n
                .as_u64()
                .map(Quantity::Exactly)
                .ok_or_else(|| format!("quantity {n} is not a non-negative integer")),
            other => Err(format!(
                "quantity must be text or an integer, found {other}"
            )),
        }
    }

    /// Whether at least one object is required.
    pub fn required(self) -> bool {
        match self {
            Quantity::Exactly(n) => n > 0,
            Quantity::OneOrMore => true,
            Quantity::ZeroOrOne | Quantity::ZeroOrMore => false,
        }
    }

    /// Whether more than one object may match.
    pub fn is_many(self) -> bool {
        !matches!(self, Quantity::Exactly(0 | 1) | Quantity::ZeroOrOne)
    }

    /// Whether `n` matching objects satisfy the quantity.
    pub fn allows(self, n: u64) -> bool {
        match self {
            Quantity::Exactly(k) => n == k,
            Quantity::ZeroOrOne => n <= 1,
            Quantity::ZeroOrMore => true,
            Quantity::OneOrMore => n >= 1,
        }
    }
}

impl fmt::Display for Quantity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Quantity::Exactly(n) => write!(f, "{n}"),
            Quantity::ZeroOrOne => f.write_str("?"),
            Quantity::ZeroOrMore => f.write_str("*"),
            Quantity::OneOrMore => f.write_str("+"),
        }
    }
}

/// A primitive `dtype` of the specification language, its synonyms folded
/// (`float` = `float32`, `int` = `int32`, `text` = `utf8`, …).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Primitive {
    /// `float`, `float32`.
    Float32,
    /// `double`, `float64`.
    Float64,
    /// `int8`.
    Int8,
    /// `short`, `int16`.
    Int16,
    /// `int`, `int32`.
    Int32,
    /// `long`, `int64`.
    Int64,
    /// `uint8`.
    UInt8,
    /// `uint16`.
    UInt16,
    /// `uint`, `uint32`.
    UInt32,
    /// `uint64`.
    UInt64,
    /// `bool`.
    Bool,
    /// `text`, `utf`, `utf8`, `utf-8`: Unicode text (ASCII text is also accepted).
    Text,
    /// `ascii`, `bytes`.
    Ascii,
    /// `isodatetime`, `datetime`, `date`: ISO 8601 text.
    IsoDatetime,
    /// `numeric`: any integer or floating-point type.
    Numeric,
}

/// Every primitive with its `dtype` names, the canonical one first.
const PRIMITIVE_NAMES: [(Primitive, &[&str]); 15] = [
    (Primitive::Float32, &["float32", "float"]),
    (Primitive::Float64, &["float64", "double"]),
    (Primitive::Int8, &["int8"]),
    (Primitive::Int16, &["int16", "short"]),
    (Primitive::Int32, &["int32", "int"]),
    (Primitive::Int64, &["int64", "long"]),
    (Primitive::UInt8, &["uint8"]),
    (Primitive::UInt16, &["uint16"]),
    (Primitive::UInt32, &["uint32", "uint"]),
    (Primitive::UInt64, &["uint64"]),
    (Primitive::Bool, &["bool"]),
    (Primitive::Text, &["text", "utf", "utf8", "utf-8"]),
    (Primitive::Ascii, &["ascii", "bytes"]),
    (Primitive::IsoDatetime, &["isodatetime", "datetime", "date"]),
    (Primitive::Numeric, &["numeric"]),
];

impl Primitive {
    /// The primitive a `dtype` name stands for.
    pub fn from_name(name: &str) -> Option<Self> {
        PRIMITIVE_NAMES
            .iter()
            .find(|(_, names)| names.contains(&name))
            .map(|(p, _)| *p)
    }

    /// The canonical name.
    pub fn name(self) -> &'static str {
        PRIMITIVE_NAMES
            .iter()
            .find(|(p, _)| *p == self)
            .map_or("?", |(_, names)| names[0])
    }

    /// Whether a value stored as `stored` satisfies this dtype. Numbers may be wider than the
    /// specification asks, never narrower and never of another kind (`float32` accepts
    /// `float64`; `int16` accepts `int32` and `int64`; `uint8` accepts every unsigned width;
    /// `numeric` accepts every integer and floating-point type but `bool`); `text` accepts
    /// ASCII. `isodatetime` accepts text here; its format is a matter of the values.
    pub fn accepts(self, stored: Stored) -> bool {
        use Primitive as P;
        use Stored as S;
        match self {
            P::Float32 => matches!(stored, S::Float32 | S::Float64),
            P::Float64 => stored == S::Float64,
            P::Int8 => matches!(stored, S::Int8 | S::Int16 | S::Int32 | S::Int64),
            P::Int16 => matches!(stored, S::Int16 | S::Int32 | S::Int64),
            P::Int32 => matches!(stored, S::Int32 | S::Int64),
            P::Int64 => stored == S::Int64,
            P::UInt8 => matches!(stored, S::UInt8 | S::UInt16 | S::UInt32 | S::UInt64),
            P::UInt16 => matches!(stored, S::UInt16 | S::UInt32 | S::UInt64),
            P::UInt32 => matches!(stored, S::UInt32 | S::UInt64),
            P::UInt64 => stored == S::UInt64,
            P::Bool => stored == S::Bool,
            P::Text | P::IsoDatetime => matches!(stored, S::Utf8 | S::Ascii),
            P::Ascii => stored == S::Ascii,
            P::Numeric => stored.is_integer() || matches!(stored, S::Float32 | S::Float64),
        }
    }
}

/// The element type found in a file, in the terms of the specification language.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Stored {
    /// `bool`.
    Bool,
    /// `int8`.
    Int8,
    /// `int16`.
    Int16,
    /// `int32`.
    Int32,
    /// `int64`.
    Int64,
    /// `uint8`.
    UInt8,
    /// `uint16`.
    UInt16,
    /// `uint32`.
    UInt32,
    /// `uint64`.
    UInt64,
    /// `float16` (no specification dtype accepts it).
    Float16,
    /// `float32`.
    Float32,
    /// `float64`.
    Float64,
    /// UTF-8 text.
    Utf8,
    /// Bytes (ASCII text).
    Ascii,
    /// Something else (complex numbers, raw bytes, dates as numbers …).
    Other,
}

/// The numbers and booleans a file stores, with their data types and names (hdmf's spelling,
/// which is the data types' too).
const STORED_NUMBERS: [(Stored, DataType, &str); 12] = [
    (Stored::Bool, DataType::Bool, "bool"),
    (Stored::Int8, DataType::Int8, "int8"),
    (Stored::Int16, DataType::Int16, "int16"),
    (Stored::Int32, DataType::Int32, "int32"),
    (Stored::Int64, DataType::Int64, "int64"),
    (Stored::UInt8, DataType::UInt8, "uint8"),
    (Stored::UInt16, DataType::UInt16, "uint16"),
    (Stored::UInt32, DataType::UInt32, "uint32"),
    (Stored::UInt64, DataType::UInt64, "uint64"),
    (Stored::Float16, DataType::Float16, "float16"),
    (Stored::Float32, DataType::Float32, "float32"),
    (Stored::Float64, DataType::Float64, "float64"),
];

impl Stored {
    /// The name used in messages (hdmf's spelling).
    pub fn name(self) -> &'static str {
        match self {
            Stored::Utf8 => "utf",
            Stored::Ascii => "ascii",
            Stored::Other => "other",
            number => STORED_NUMBERS
                .iter()
                .find(|(s, _, _)| *s == number)
                .map_or("other", |(_, _, name)| name),
        }
    }

    /// The element type of a `DataType`.
    pub fn of(data_type: &DataType) -> Stored {
        match data_type {
            DataType::String | DataType::FixedUtf32 { .. } => Stored::Utf8,
            DataType::Bytes | DataType::FixedBytes { .. } => Stored::Ascii,
            other => STORED_NUMBERS
                .iter()
                .find(|(_, d, _)| d == other)
                .map_or(Stored::Other, |(s, _, _)| *s),
        }
    }

    /// Whether it is a signed or unsigned integer.
    pub fn is_integer(self) -> bool {
        use Stored as S;
        matches!(
            self,
            S::Int8 | S::Int16 | S::Int32 | S::Int64 | S::UInt8 | S::UInt16 | S::UInt32 | S::UInt64
        )
    }
}

/// What a reference points at.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum RefType {
    /// `reftype: object`: a whole group or dataset.
    Object,
    /// `reftype: region`: a region of a dataset.
    Region,
}

impl RefType {
    /// `object` / `region`.
    pub fn name(self) -> &'static str {
        match self {
            RefType::Object => "object",
            RefType::Region => "region",
        }
    }
}

/// A `dtype` of an attribute, a dataset or a compound field.
#[derive(Clone, Debug, PartialEq)]
pub enum Dtype {
    /// A primitive type.
    Primitive(Primitive),
    /// A reference to an object whose type is `target_type` or one of its subtypes.
    Reference {
        /// Object or region.
        reftype: RefType,
        /// The type the target must have (or inherit from).
        target_type: String,
    },
    /// A compound type, field by field.
    Compound(Vec<CompoundFieldSpec>),
}

/// One field of a compound `dtype`.
#[derive(Clone, Debug, PartialEq)]
pub struct CompoundFieldSpec {
    /// The field's name.
    pub name: String,
    /// Its type.
    pub dtype: Dtype,
}

impl Dtype {
    /// Parse a `dtype` value: a primitive name, `{target_type, reftype}` or a list of
    /// `{name, dtype}` fields.
    pub fn parse(value: &Value) -> Result<Self, String> {
        match value {
            Value::String(name) => Primitive::from_name(name)
                .map(Dtype::Primitive)
                .ok_or_else(|| format!("unknown dtype '{name}'")),
            Value::Object(map) => {
                let target_type = map
                    .get("target_type")
                    .and_then(Value::as_str)
                    .ok_or_else(|| format!("a reference dtype needs a 'target_type': {value}"))?;
                let reftype = match map.get("reftype").and_then(Value::as_str) {
                    None | Some("object") | Some("ref") | Some("reference") => RefType::Object,
                    Some("region") => RefType::Region,
                    Some(other) => return Err(format!("unknown reftype '{other}'")),
                };
                Ok(Dtype::Reference {
                    reftype,
                    target_type: target_type.to_string(),
                })
            }
            Value::Array(fields) => fields
                .iter()
                .map(|field| {
                    let name = field
                        .get("name")
                        .and_then(Value::as_str)
                        .ok_or_else(|| format!("a compound field needs a 'name': {field}"))?;
                    let dtype = field
                        .get("dtype")
                        .ok_or_else(|| format!("compound field '{name}' has no 'dtype'"))?;
                    Ok(CompoundFieldSpec {
                        name: name.to_string(),
                        dtype: Dtype::parse(dtype)?,
                    })
                })
                .collect::<Result<Vec<_>, String>>()
                .map(Dtype::Compound),
            other => Err(format!(
                "a dtype must be text, a mapping or a list, found {other}"
            )),
        }
    }
}

impl fmt::Display for Dtype {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Dtype::Primitive(p) => f.write_str(p.name()),
            Dtype::Reference {
                reftype,
                target_type,
            } => write!(f, "{} reference to {target_type}", reftype.name()),
            Dtype::Compound(fields) => {
                f.write_str("compound (")?;
                for (i, field) in fields.iter().enumerate() {
                    if i > 0 {
                        f.write_str(", ")?;
                    }
                    write!(f, "{}: {}", field.name, field.dtype)?;
                }
                f.write_str(")")
            }
        }
    }
}

/// The allowed shapes of an attribute or dataset: one or more alternatives, each a list of
/// extents where `None` (`null`) allows any length.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Shape {
    /// Each allowed shape.
    pub alternatives: Vec<Vec<Option<u64>>>,
}

impl Shape {
    /// Parse a `shape` value: `[null, 3]` (one shape) or `[[null], [null, null]]` (several).
    pub fn parse(value: &Value) -> Result<Self, String> {
        let dims = |list: &[Value]| -> Result<Vec<Option<u64>>, String> {
            list.iter()
                .map(|d| match d {
                    Value::Null => Ok(None),
                    Value::Number(n) => n
                        .as_u64()
                        .map(Some)
                        .ok_or_else(|| format!("shape entry {n} is not a non-negative integer")),
                    other => Err(format!(
                        "a shape entry must be null or an integer, found {other}"
                    )),
                })
                .collect()
        };
        let Value::Array(list) = value else {
            return Err(format!("a shape must be a list, found {value}"));
        };
        if list.first().is_some_and(Value::is_array) {
            let alternatives = list
                .iter()
                .map(|alt| match alt {
                    Value::Array(a) => dims(a),
                    other => Err(format!("a shape alternative must be a list, found {other}")),
                })
                .collect::<Result<Vec<_>, String>>()?;
            Ok(Shape { alternatives })
        } else {
            Ok(Shape {
                alternatives: vec![dims(list)?],
            })
        }
    }

    /// Whether an array of this shape is allowed.
    pub fn accepts(&self, shape: &[u64]) -> bool {
        self.alternatives.iter().any(|alt| {
            alt.len() == shape.len()
                && alt
                    .iter()
                    .zip(shape)
                    .all(|(want, got)| want.is_none_or(|w| w == *got))
        })
    }
}

impl fmt::Display for Shape {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, alt) in self.alternatives.iter().enumerate() {
            if i > 0 {
                f.write_str(" or ")?;
            }
            f.write_str("[")?;
            for (j, d) in alt.iter().enumerate() {
                if j > 0 {
                    f.write_str(", ")?;
                }
                match d {
                    Some(n) => write!(f, "{n}")?,
                    None => f.write_str("*")?,
                }
            }
            f.write_str("]")?;
        }
        Ok(())
    }
}

/// An attribute's specification.
#[derive(Clone, Debug, PartialEq)]
pub struct AttributeSpec {
    /// The attribute's name.
    pub name: String,
    /// Its type (`None`: not stated).
    pub dtype: Option<Dtype>,
    /// Its allowed shapes (`None`: a scalar).
    pub shape: Option<Shape>,
    /// Its dimension names, as written.
    pub dims: Option<Value>,
    /// `required` as written (`None`: the default, required).
    pub required: Option<bool>,
    /// A fixed value the attribute must have.
    pub value: Option<Value>,
    /// The value readers assume when the attribute is absent.
    pub default_value: Option<Value>,
}

impl AttributeSpec {
    /// Whether the attribute must be present.
    pub fn is_required(&self) -> bool {
        self.required.unwrap_or(true)
    }
}

/// A link's specification.
#[derive(Clone, Debug, PartialEq)]
pub struct LinkSpec {
    /// The link's name (`None`: any).
    pub name: Option<String>,
    /// The type the target must have (or inherit from).
    pub target_type: String,
    /// How many such links (`None`: exactly one).
    pub quantity: Option<Quantity>,
}

impl LinkSpec {
    /// The effective quantity.
    pub fn quantity(&self) -> Quantity {
        self.quantity.unwrap_or(Quantity::Exactly(1))
    }
}

/// The specification of a group or dataset: a type definition, a typed child
/// (`neurodata_type_inc` with refinements) or an untyped child.
#[derive(Clone, Debug, PartialEq)]
pub struct NodeSpec {
    /// Group or dataset.
    pub kind: NodeKind,
    /// The fixed name (`None`: any name).
    pub name: Option<String>,
    /// The suggested name.
    pub default_name: Option<String>,
    /// `neurodata_type_def` / `data_type_def`.
    pub type_def: Option<String>,
    /// `neurodata_type_inc` / `data_type_inc`.
    pub type_inc: Option<String>,
    /// How many objects may match (`None`: exactly one).
    pub quantity: Option<Quantity>,
    /// Whether a link may stand in for the object (`None`: the default, yes).
    pub linkable: Option<bool>,
    /// Attributes.
    pub attributes: Vec<AttributeSpec>,
    /// Child datasets.
    pub datasets: Vec<NodeSpec>,
    /// Child groups.
    pub groups: Vec<NodeSpec>,
    /// Child links.
    pub links: Vec<LinkSpec>,
    /// A dataset's type.
    pub dtype: Option<Dtype>,
    /// A dataset's allowed shapes.
    pub shape: Option<Shape>,
    /// A dataset's dimension names, as written.
    pub dims: Option<Value>,
    /// A fixed value.
    pub value: Option<Value>,
    /// A default value.
    pub default_value: Option<Value>,
}

impl NodeSpec {
    fn empty(kind: NodeKind) -> Self {
        NodeSpec {
            kind,
            name: None,
            default_name: None,
            type_def: None,
            type_inc: None,
            quantity: None,
            linkable: None,
            attributes: Vec::new(),
            datasets: Vec::new(),
            groups: Vec::new(),
            links: Vec::new(),
            dtype: None,
            shape: None,
            dims: None,
            value: None,
            default_value: None,
        }
    }

    /// The data type this specification stands for: the one it defines, else the one it
    /// includes (`None` for an untyped child).
    pub fn data_type(&self) -> Option<&str> {
        self.type_def.as_deref().or(self.type_inc.as_deref())
    }

    /// The effective quantity.
    pub fn quantity(&self) -> Quantity {
        self.quantity.unwrap_or(Quantity::Exactly(1))
    }

    /// Whether a link may stand in for the object.
    pub fn is_linkable(&self) -> bool {
        self.linkable.unwrap_or(true)
    }

    /// Whether it states anything beyond the type it includes (attributes, children, dtype,
    /// shape, value): a typed child without refinements is its type.
    pub fn refines(&self) -> bool {
        !self.attributes.is_empty()
            || !self.datasets.is_empty()
            || !self.groups.is_empty()
            || !self.links.is_empty()
            || self.dtype.is_some()
            || self.shape.is_some()
            || self.dims.is_some()
            || self.value.is_some()
            || self.default_value.is_some()
    }

    /// Parse a group (`kind` Group) or dataset specification; problems with parts of it are
    /// pushed to `problems` and those parts left out.
    pub fn parse(
        kind: NodeKind,
        value: &Value,
        problems: &mut Vec<String>,
    ) -> Result<Self, String> {
        let Value::Object(map) = value else {
            return Err(format!("a specification must be a mapping, found {value}"));
        };
        let text = |keys: &[&str]| -> Option<String> {
            keys.iter()
                .find_map(|k| map.get(*k))
                .and_then(Value::as_str)
                .map(str::to_string)
        };
        let mut spec = NodeSpec::empty(kind);
        spec.name = text(&["name"]);
        spec.default_name = text(&["default_name"]);
        spec.type_def = text(&["neurodata_type_def", "data_type_def"]);
        spec.type_inc = text(&["neurodata_type_inc", "data_type_inc"]);
        let label = spec
            .name
            .clone()
            .or_else(|| spec.data_type().map(str::to_string))
            .unwrap_or_else(|| "(unnamed)".into());
        if let Some(q) = map.get("quantity") {
            match Quantity::parse(q) {
                Ok(q) => spec.quantity = Some(q),
                Err(e) => problems.push(format!("'{label}': {e}")),
            }
        }
        spec.linkable = map.get("linkable").and_then(Value::as_bool);
        if let Some(list) = map.get("attributes") {
            for a in list.as_array().into_iter().flatten() {
                match parse_attribute(a, problems) {
                    Ok(attr) => spec.attributes.push(attr),
                    Err(e) => problems.push(format!("'{label}': {e}")),
                }
            }
        }
        for (key, child_kind) in [("datasets", NodeKind::Dataset), ("groups", NodeKind::Group)] {
            for child in map.get(key).and_then(Value::as_array).into_iter().flatten() {
                match NodeSpec::parse(child_kind, child, problems) {
                    Ok(c) => match child_kind {
                        NodeKind::Dataset => spec.datasets.push(c),
                        NodeKind::Group => spec.groups.push(c),
                    },
                    Err(e) => problems.push(format!("'{label}': {e}")),
                }
            }
        }
        for link in map
            .get("links")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            let target = link.get("target_type").and_then(Value::as_str);
            let Some(target) = target else {
                problems.push(format!("'{label}': a link needs a 'target_type': {link}"));
                continue;
            };
            let quantity = match link.get("quantity").map(Quantity::parse).transpose() {
                Ok(q) => q,
                Err(e) => {
                    problems.push(format!("'{label}': {e}"));
                    None
                }
            };
            spec.links.push(LinkSpec {
                name: link.get("name").and_then(Value::as_str).map(str::to_string),
                target_type: target.to_string(),
                quantity,
            });
        }
        if let Some(d) = map.get("dtype") {
            match Dtype::parse(d) {
                Ok(d) => spec.dtype = Some(d),
                Err(e) => problems.push(format!("'{label}': {e}")),
            }
        }
        if let Some(s) = map.get("shape").filter(|s| !s.is_null()) {
            match Shape::parse(s) {
                Ok(s) => spec.shape = Some(s),
                Err(e) => problems.push(format!("'{label}': {e}")),
            }
        }
        spec.dims = map.get("dims").filter(|d| !d.is_null()).cloned();
        spec.value = map.get("value").filter(|v| !v.is_null()).cloned();
        spec.default_value = map.get("default_value").filter(|v| !v.is_null()).cloned();
        Ok(spec)
    }
}

fn parse_attribute(value: &Value, problems: &mut Vec<String>) -> Result<AttributeSpec, String> {
    let name = value
        .get("name")
        .and_then(Value::as_str)
        .ok_or_else(|| format!("an attribute needs a 'name': {value}"))?;
    let mut attr = AttributeSpec {
        name: name.to_string(),
        dtype: None,
        shape: None,
        dims: value.get("dims").filter(|d| !d.is_null()).cloned(),
        required: value.get("required").and_then(Value::as_bool),
        value: value.get("value").filter(|v| !v.is_null()).cloned(),
        default_value: value.get("default_value").filter(|v| !v.is_null()).cloned(),
    };
    if let Some(d) = value.get("dtype") {
        match Dtype::parse(d) {
            Ok(d) => attr.dtype = Some(d),
            Err(e) => problems.push(format!("attribute '{name}': {e}")),
        }
    }
    if let Some(s) = value.get("shape").filter(|s| !s.is_null()) {
        match Shape::parse(s) {
            Ok(s) => attr.shape = Some(s),
            Err(e) => problems.push(format!("attribute '{name}': {e}")),
        }
    }
    Ok(attr)
}

/// The key under which a refinement replaces what it refines: the name, else the type.
fn child_key(spec: &NodeSpec) -> (Option<&str>, Option<&str>) {
    match spec.name.as_deref() {
        Some(name) => (Some(name), None),
        None => (None, spec.data_type()),
    }
}

/// `own` laid over `base`: what `own` states wins; attributes are merged by name, child
/// datasets and groups by name (or, unnamed, by type) and refined recursively, links by name
/// (or target type). This is how a type inherits from its parent and how a typed child's
/// inline specification refines its type.
pub fn refine(base: &NodeSpec, own: &NodeSpec) -> NodeSpec {
    let mut out = base.clone();
    out.kind = own.kind;
    macro_rules! over {
        ($($field:ident),*) => {$(
            if own.$field.is_some() {
                out.$field = own.$field.clone();
            }
        )*};
    }
    over!(
        name,
        default_name,
        type_def,
        type_inc,
        quantity,
        linkable,
        dtype,
        shape,
        dims,
        value,
        default_value
    );
    for attr in &own.attributes {
        match out.attributes.iter_mut().find(|a| a.name == attr.name) {
            Some(existing) => {
                let merged = AttributeSpec {
                    name: attr.name.clone(),
                    dtype: attr.dtype.clone().or(existing.dtype.clone()),
                    shape: attr.shape.clone().or(existing.shape.clone()),
                    dims: attr.dims.clone().or(existing.dims.clone()),
                    required: attr.required.or(existing.required),
                    value: attr.value.clone().or(existing.value.clone()),
                    default_value: attr
                        .default_value
                        .clone()
                        .or(existing.default_value.clone()),
                };
                *existing = merged;
            }
            None => out.attributes.push(attr.clone()),
        }
    }
    for (outs, owns) in [
        (&mut out.datasets, &own.datasets),
        (&mut out.groups, &own.groups),
    ] {
        for child in owns {
            match outs.iter().position(|b| child_key(b) == child_key(child)) {
                Some(i) => {
                    let merged = refine(&outs[i], child);
                    outs[i] = merged;
                }
                None => outs.push(child.clone()),
            }
        }
    }
    for link in &own.links {
        let same = |l: &LinkSpec| match (&l.name, &link.name) {
            (Some(a), Some(b)) => a == b,
            (None, None) => l.target_type == link.target_type,
            _ => false,
        };
        match out.links.iter_mut().find(|l| same(l)) {
            Some(existing) => *existing = link.clone(),
            None => out.links.push(link.clone()),
        }
    }
    out
}

/// A data type defined in a namespace, resolved down its inheritance chain.
#[derive(Clone, Debug)]
pub struct TypeDef {
    /// The type's name.
    pub name: String,
    /// The namespace defining it.
    pub namespace: String,
    /// The schema source (document) defining it.
    pub source: String,
    /// The type it includes (its parent), if any.
    pub parent: Option<String>,
    /// The specification as written.
    pub spec: NodeSpec,
    /// The specification with everything inherited from the ancestors merged in.
    pub resolved: NodeSpec,
    /// The type itself, then its parent, grandparent, … (by name).
    pub ancestors: Vec<String>,
}

impl TypeDef {
    /// Whether this type is `name` or inherits from it.
    pub fn is_a(&self, name: &str) -> bool {
        self.ancestors.iter().any(|a| a == name)
    }
}

/// An include of another namespace (`- namespace: core`), optionally restricted to some types.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Include {
    /// The included namespace.
    pub namespace: String,
    /// Only these of its types (`neurodata_types` / `data_types`), when given.
    pub types: Option<Vec<String>>,
}

/// A loaded namespace.
#[derive(Clone, Debug)]
pub struct NamespaceInfo {
    /// Its name.
    pub name: String,
    /// Its version.
    pub version: String,
    /// The namespaces it includes.
    pub includes: Vec<Include>,
    /// The types it defines itself, in the order of its sources.
    pub types: Vec<String>,
}

/// Something in the namespaces that could not be understood or resolved.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SchemaProblem {
    /// The namespace concerned.
    pub namespace: String,
    /// What is wrong.
    pub message: String,
}

/// A namespace included by another one that is not loaded.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MissingInclude {
    /// The including namespace.
    pub by: String,
    /// The missing one.
    pub namespace: String,
}

/// How many ancestors a type may have before its chain is cut (a bound on the recursion of
/// cached, possibly hostile, specifications).
const MAX_INHERITANCE: usize = 256;

/// (namespace, type name): where a type is defined.
type TypeKey = (String, String);

/// Every loaded namespace with its types resolved: what a file is validated against.
#[derive(Clone, Debug, Default)]
pub struct SchemaSet {
    namespaces: BTreeMap<String, NamespaceInfo>,
    types: HashMap<(String, String), TypeDef>,
    /// Per namespace: every type name visible in it (its own and its includes') → the key
    /// (defining namespace, type) of its definition.
    scopes: HashMap<String, HashMap<String, TypeKey>>,
    /// Type name → the key of its definition in the first namespace (by name) defining it.
    by_name: HashMap<String, TypeKey>,
    problems: Vec<SchemaProblem>,
    missing_includes: Vec<MissingInclude>,
}

/// A version as numbers for ordering (`2.10.0` > `2.9.1`); non-numeric parts count as 0.
fn version_key(version: &str) -> Vec<u64> {
    version
        .split(['.', '-', '+'])
        .map(|p| {
            p.chars()
                .take_while(char::is_ascii_digit)
                .collect::<String>()
                .parse()
                .unwrap_or(0)
        })
        .collect()
}

impl SchemaSet {
    /// Load namespaces from their documents (the `namespace` document and one per schema
    /// source, as [`crate::cached_namespaces`] and [`crate::parse_namespaces`] give them).
    /// When a namespace comes in several versions, the newest is used.
    pub fn from_namespace_docs(docs: &[NamespaceDocs]) -> Self {
        let mut newest: BTreeMap<&str, &NamespaceDocs> = BTreeMap::new();
        for ns in docs {
            match newest.get(ns.name.as_str()) {
                Some(have) if version_key(&have.version) >= version_key(&ns.version) => {}
                _ => {
                    newest.insert(&ns.name, ns);
                }
            }
        }
        let mut set = SchemaSet::default();
        for ns in newest.values() {
            set.load(ns);
        }
        set.build_scopes();
        set.resolve_all();
        set
    }

    fn problem(&mut self, namespace: &str, message: String) {
        self.problems.push(SchemaProblem {
            namespace: namespace.to_string(),
            message,
        });
    }

    fn load(&mut self, ns: &NamespaceDocs) {
        let documents: HashMap<&str, &Value> =
            ns.documents.iter().map(|(n, v)| (n.as_str(), v)).collect();
        let entry = documents
            .get("namespace")
            .and_then(|d| d.get("namespaces"))
            .and_then(Value::as_array)
            .and_then(|list| {
                list.iter()
                    .find(|n| n.get("name").and_then(Value::as_str) == Some(ns.name.as_str()))
                    .or(list.first())
            });
        let mut info = NamespaceInfo {
            name: ns.name.clone(),
            version: ns.version.clone(),
            includes: Vec::new(),
            types: Vec::new(),
        };
        let Some(entry) = entry else {
            self.problem(
                &ns.name,
                "the namespace document is missing or declares no namespace".into(),
            );
            self.namespaces.insert(ns.name.clone(), info);
            return;
        };
        for item in entry
            .get("schema")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            if let Some(other) = item.get("namespace").and_then(Value::as_str) {
                let types = item
                    .get("neurodata_types")
                    .or_else(|| item.get("data_types"))
                    .and_then(Value::as_array)
                    .map(|a| {
                        a.iter()
                            .filter_map(Value::as_str)
                            .map(str::to_string)
                            .collect()
                    });
                info.includes.push(Include {
                    namespace: other.to_string(),
                    types,
                });
            } else if let Some(source) = item.get("source").and_then(Value::as_str) {
                let stem = ["yaml", "yml", "json"]
                    .iter()
                    .find_map(|ext| source.strip_suffix(&format!(".{ext}")))
                    .unwrap_or(source);
                let Some(doc) = documents.get(stem).or_else(|| documents.get(source)) else {
                    self.problem(&ns.name, format!("schema source '{source}' is not there"));
                    continue;
                };
                let mut problems = Vec::new();
                for (key, kind) in [("groups", NodeKind::Group), ("datasets", NodeKind::Dataset)] {
                    for spec in doc.get(key).and_then(Value::as_array).into_iter().flatten() {
                        match NodeSpec::parse(kind, spec, &mut problems) {
                            Ok(spec) => self.register(&mut info, stem, spec),
                            Err(e) => problems.push(e),
                        }
                    }
                }
                for p in problems {
                    self.problem(&ns.name, format!("{stem}: {p}"));
                }
            }
        }
        self.namespaces.insert(ns.name.clone(), info);
    }

    /// Register a type definition and every type defined inside it.
    fn register(&mut self, info: &mut NamespaceInfo, source: &str, spec: NodeSpec) {
        for child in spec.datasets.iter().chain(&spec.groups) {
            if child.type_def.is_some() {
                self.register(info, source, child.clone());
            } else {
                // Untyped children may hold nested definitions too.
                for nested in child.datasets.iter().chain(&child.groups) {
                    if nested.type_def.is_some() {
                        self.register(info, source, nested.clone());
                    }
                }
            }
        }
        let Some(name) = spec.type_def.clone() else {
            self.problem(
                &info.name,
                format!("{source}: a top-level specification defines no type; ignored"),
            );
            return;
        };
        let key = (info.name.clone(), name.clone());
        if self.types.contains_key(&key) {
            self.problem(
                &info.name,
                format!("type '{name}' is defined twice; the later one is used"),
            );
        } else {
            info.types.push(name.clone());
        }
        self.types.insert(
            key,
            TypeDef {
                name: name.clone(),
                namespace: info.name.clone(),
                source: source.to_string(),
                parent: spec.type_inc.clone(),
                resolved: spec.clone(),
                spec,
                ancestors: vec![name],
            },
        );
    }

    fn build_scopes(&mut self) {
        let names: Vec<String> = self.namespaces.keys().cloned().collect();
        for name in &names {
            let mut visiting = HashSet::new();
            let scope = self.scope_of(name, &mut visiting);
            self.scopes.insert(name.clone(), scope);
        }
        for name in names.iter().rev() {
            if let Some(ns) = self.namespaces.get(name) {
                for t in &ns.types {
                    self.by_name.insert(t.clone(), (name.clone(), t.clone()));
                }
            }
        }
    }

    fn scope_of(&mut self, name: &str, visiting: &mut HashSet<String>) -> HashMap<String, TypeKey> {
        let mut scope = HashMap::new();
        if !visiting.insert(name.to_string()) {
            return scope;
        }
        let Some(ns) = self.namespaces.get(name).cloned() else {
            return scope;
        };
        for include in &ns.includes {
            if !self.namespaces.contains_key(&include.namespace) {
                let missing = MissingInclude {
                    by: name.to_string(),
                    namespace: include.namespace.clone(),
                };
                if !self.missing_includes.contains(&missing) {
                    self.missing_includes.push(missing);
                }
                continue;
            }
            let included = self.scope_of(&include.namespace, visiting);
            for (t, def) in included {
                if include.types.as_ref().is_none_or(|only| only.contains(&t)) {
                    scope.insert(t, def);
                }
            }
        }
        for t in &ns.types {
            scope.insert(t.clone(), (name.to_string(), t.clone()));
        }
        visiting.remove(name);
        scope
    }

    fn resolve_all(&mut self) {
        let mut keys: Vec<(String, String)> = self.types.keys().cloned().collect();
        keys.sort();
        let mut done = HashSet::new();
        for key in keys {
            let mut visiting = Vec::new();
            self.resolve(&key, &mut visiting, &mut done);
        }
    }

    fn resolve(
        &mut self,
        key: &(String, String),
        visiting: &mut Vec<(String, String)>,
        done: &mut HashSet<(String, String)>,
    ) {
        if done.contains(key) {
            return;
        }
        if visiting.len() >= MAX_INHERITANCE {
            self.problem(
                &key.0,
                format!(
                    "type '{}' has more than {MAX_INHERITANCE} ancestors; its chain is cut there",
                    key.1
                ),
            );
            return;
        }
        if visiting.contains(key) {
            let chain: Vec<&str> = visiting.iter().map(|(_, t)| t.as_str()).collect();
            self.problem(
                &key.0,
                format!(
                    "type '{}' inherits from itself ({})",
                    key.1,
                    chain.join(" -> ")
                ),
            );
            return;
        }
        let Some(parent) = self.types.get(key).and_then(|t| t.parent.clone()) else {
            done.insert(key.clone());
            return;
        };
        let parent_key = self
            .scopes
            .get(&key.0)
            .and_then(|s| s.get(&parent))
            .cloned();
        let Some(parent_key) = parent_key else {
            self.problem(
                &key.0,
                format!("type '{}' includes '{parent}', which is not defined in any loaded namespace it can see", key.1),
            );
            done.insert(key.clone());
            return;
        };
        visiting.push(key.clone());
        self.resolve(&parent_key, visiting, done);
        visiting.pop();
        let Some(base) = self.types.get(&parent_key).cloned() else {
            done.insert(key.clone());
            return;
        };
        if let Some(t) = self.types.get_mut(key) {
            t.resolved = refine(&base.resolved, &t.spec);
            let mut ancestors = vec![t.name.clone()];
            ancestors.extend(base.ancestors.iter().filter(|a| **a != t.name).cloned());
            t.ancestors = ancestors;
        }
        done.insert(key.clone());
    }

    /// The loaded namespaces, by name.
    pub fn namespaces(&self) -> impl Iterator<Item = &NamespaceInfo> {
        self.namespaces.values()
    }

    /// One loaded namespace.
    pub fn namespace(&self, name: &str) -> Option<&NamespaceInfo> {
        self.namespaces.get(name)
    }

    /// What could not be understood or resolved.
    pub fn problems(&self) -> &[SchemaProblem] {
        &self.problems
    }

    /// Namespaces that loaded ones include but that are not loaded.
    pub fn missing_includes(&self) -> &[MissingInclude] {
        &self.missing_includes
    }

    /// The type `name` as seen from namespace `namespace` (its own types and those of its
    /// includes); without a namespace, the type of that name in any loaded namespace.
    pub fn lookup(&self, namespace: Option<&str>, name: &str) -> Option<&TypeDef> {
        let key = match namespace {
            Some(ns) => self.scopes.get(ns)?.get(name)?,
            None => self.by_name.get(name)?,
        };
        self.types.get(key)
    }

    /// Every type of every loaded namespace.
    pub fn types(&self) -> impl Iterator<Item = &TypeDef> {
        self.types.values()
    }

    /// Whether a type of this name is defined in any loaded namespace.
    pub fn knows_type(&self, name: &str) -> bool {
        self.by_name.contains_key(name)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::specs::parse_namespaces;
    use serde_json::json;

    /// A schema set from namespace YAML and its sources, given as (name, text) pairs.
    fn schema(namespace_yaml: &str, sources: &[(&str, &str)]) -> SchemaSet {
        let sources: HashMap<String, String> = sources
            .iter()
            .map(|(n, t)| (n.to_string(), t.to_string()))
            .collect();
        let docs = parse_namespaces("ns.yaml", namespace_yaml, &mut |s: &str| {
            sources
                .get(s)
                .map(|t| (s.to_string(), t.clone()))
                .ok_or_else(|| crate::HdmfError::input(s, "no such source"))
        })
        .expect("namespaces parse");
        SchemaSet::from_namespace_docs(&docs)
    }

    const BASE_NS: &str =
        "namespaces:\n- name: base\n  version: 1.0.0\n  schema:\n  - source: base.yaml\n";
    const BASE: &str = r#"
groups:
- data_type_def: Container
  doc: a container
- data_type_def: Table
  data_type_inc: Container
  doc: a table
  attributes:
  - name: colnames
    dtype: text
    shape: [null]
  - name: description
    dtype: text
  datasets:
  - name: id
    data_type_inc: Ids
  - data_type_inc: Column
    quantity: '*'
datasets:
- data_type_def: Data
  doc: data
- data_type_def: Column
  data_type_inc: Data
  doc: a column
  shape:
  - [null]
  - [null, null]
  attributes:
  - name: description
    dtype: text
- data_type_def: Ids
  data_type_inc: Data
  dtype: int
  shape: [null]
- data_type_def: Index
  data_type_inc: Column
  dtype: uint8
  attributes:
  - name: target
    dtype:
      target_type: Column
      reftype: object
- data_type_def: Region
  data_type_inc: Column
  dtype: int
  attributes:
  - name: table
    dtype:
      target_type: Table
      reftype: object
"#;

    #[test]
    fn inheritance_merges_attributes_children_and_refinements() {
        let set = schema(BASE_NS, &[("base.yaml", BASE)]);
        assert!(set.problems().is_empty(), "{:?}", set.problems());
        let index = set.lookup(Some("base"), "Index").expect("Index");
        assert_eq!(index.ancestors, ["Index", "Column", "Data"]);
        assert!(index.is_a("Data") && !index.is_a("Table"));
        // Inherited from Column: the shape alternatives and 'description'; its own 'target'.
        let names: Vec<&str> = index
            .resolved
            .attributes
            .iter()
            .map(|a| a.name.as_str())
            .collect();
        assert_eq!(names, ["description", "target"]);
        assert_eq!(
            index
                .resolved
                .shape
                .as_ref()
                .map(|s| s.alternatives.clone()),
            Some(vec![vec![None], vec![None, None]])
        );
        assert_eq!(
            index.resolved.dtype,
            Some(Dtype::Primitive(Primitive::UInt8))
        );
        assert_eq!(
            index.resolved.attributes[1].dtype,
            Some(Dtype::Reference {
                reftype: RefType::Object,
                target_type: "Column".into()
            })
        );
        let table = set.lookup(None, "Table").expect("Table");
        assert_eq!(table.resolved.datasets.len(), 2);
        assert_eq!(table.resolved.datasets[0].name.as_deref(), Some("id"));
        assert_eq!(table.resolved.datasets[1].quantity(), Quantity::ZeroOrMore);
        assert_eq!(table.resolved.datasets[1].data_type(), Some("Column"));
    }

    #[test]
    fn a_subtype_refines_an_inherited_child_and_attribute_in_place() {
        let ext_ns = "namespaces:\n- name: ext\n  version: 0.2.0\n  schema:\n  - namespace: base\n  - source: ext.yaml\n";
        let ext = r#"
groups:
- data_type_def: Units
  data_type_inc: Table
  attributes:
  - name: description
    value: units table
  datasets:
  - name: id
    data_type_inc: Ids
    dtype: int64
  - name: spike_times
    data_type_inc: Column
    dtype: float64
    quantity: '?'
"#;
        let docs_base = parse(BASE_NS, &[("base.yaml", BASE)]);
        let docs_ext = parse(ext_ns, &[("ext.yaml", ext)]);
        let set = SchemaSet::from_namespace_docs(&[docs_base, docs_ext].concat());
        assert!(set.problems().is_empty(), "{:?}", set.problems());
        let units = set
            .lookup(Some("ext"), "Units")
            .expect("Units is visible in ext");
        assert_eq!(units.ancestors, ["Units", "Table", "Container"]);
        // 'description' keeps its inherited dtype and gains a fixed value.
        let description = units
            .resolved
            .attributes
            .iter()
            .find(|a| a.name == "description")
            .expect("description");
        assert_eq!(description.dtype, Some(Dtype::Primitive(Primitive::Text)));
        assert_eq!(description.value, Some(json!("units table")));
        assert!(description.is_required());
        // 'id' is refined in place (not duplicated); the new column is appended.
        let names: Vec<Option<&str>> = units
            .resolved
            .datasets
            .iter()
            .map(|d| d.name.as_deref())
            .collect();
        assert_eq!(names, [Some("id"), None, Some("spike_times")]);
        assert_eq!(
            units.resolved.datasets[0].dtype,
            Some(Dtype::Primitive(Primitive::Int64))
        );
        assert_eq!(units.resolved.datasets[0].type_inc.as_deref(), Some("Ids"));
        // A type of an included namespace is visible from the including one, not vice versa.
        assert!(set.lookup(Some("ext"), "Column").is_some());
        assert!(set.lookup(Some("base"), "Units").is_none());
    }

    fn parse(namespace_yaml: &str, sources: &[(&str, &str)]) -> Vec<NamespaceDocs> {
        let sources: HashMap<String, String> = sources
            .iter()
            .map(|(n, t)| (n.to_string(), t.to_string()))
            .collect();
        parse_namespaces("ns.yaml", namespace_yaml, &mut |s: &str| {
            sources
                .get(s)
                .map(|t| (s.to_string(), t.clone()))
                .ok_or_else(|| crate::HdmfError::input(s, "no such source"))
        })
        .expect("namespaces parse")
    }

    #[test]
    fn includes_can_be_restricted_and_missing_ones_are_reported() {
        let ns = "namespaces:\n- name: ext\n  version: 1.0.0\n  schema:\n  - namespace: base\n    data_types: [Table]\n  - namespace: absent\n  - source: ext.yaml\n";
        let ext = "groups:\n- data_type_def: MyTable\n  data_type_inc: Table\n- data_type_def: Orphan\n  data_type_inc: Nowhere\n";
        let set = SchemaSet::from_namespace_docs(
            &[
                parse(BASE_NS, &[("base.yaml", BASE)]),
                parse(ns, &[("ext.yaml", ext)]),
            ]
            .concat(),
        );
        assert!(set.lookup(Some("ext"), "Table").is_some());
        assert!(
            set.lookup(Some("ext"), "Column").is_none(),
            "not in the include's type list"
        );
        assert_eq!(
            set.missing_includes(),
            [MissingInclude {
                by: "ext".into(),
                namespace: "absent".into()
            }]
        );
        let problems: Vec<&str> = set.problems().iter().map(|p| p.message.as_str()).collect();
        assert!(
            problems
                .iter()
                .any(|p| p.contains("'Orphan' includes 'Nowhere'")),
            "{problems:?}"
        );
        // The orphan is still a type, with only its own specification.
        assert_eq!(
            set.lookup(Some("ext"), "Orphan").expect("Orphan").ancestors,
            ["Orphan"]
        );
        assert_eq!(
            set.lookup(Some("ext"), "MyTable")
                .expect("MyTable")
                .ancestors,
            ["MyTable", "Table", "Container"]
        );
    }

    #[test]
    fn nested_definitions_links_and_the_newest_version_are_loaded() {
        let v1 = "namespaces:\n- name: lab\n  version: 1.9.0\n  schema:\n  - source: lab.yaml\n";
        let v2 = "namespaces:\n- name: lab\n  version: 1.10.0\n  schema:\n  - source: lab.yaml\n";
        let lab = r#"
groups:
- neurodata_type_def: Session
  groups:
  - neurodata_type_def: Probe
    quantity: '+'
    links:
    - name: device
      target_type: Session
  - name: notes
    groups:
    - neurodata_type_def: Note
      quantity: 2
"#;
        let old = "groups:\n- neurodata_type_def: Old\n";
        let set = SchemaSet::from_namespace_docs(
            &[
                parse(v2, &[("lab.yaml", lab)]),
                parse(v1, &[("lab.yaml", old)]),
            ]
            .concat(),
        );
        assert_eq!(
            set.namespace("lab").map(|n| n.version.as_str()),
            Some("1.10.0")
        );
        assert!(set.lookup(Some("lab"), "Old").is_none());
        let probe = set
            .lookup(Some("lab"), "Probe")
            .expect("nested definition registered");
        assert_eq!(
            probe.resolved.links,
            [LinkSpec {
                name: Some("device".into()),
                target_type: "Session".into(),
                quantity: None
            }]
        );
        assert!(
            set.lookup(Some("lab"), "Note").is_some(),
            "definition inside an untyped child"
        );
        let session = set.lookup(Some("lab"), "Session").expect("Session");
        assert_eq!(session.resolved.groups[0].quantity(), Quantity::OneOrMore);
        assert_eq!(
            session.resolved.groups[1].groups[0].quantity(),
            Quantity::Exactly(2)
        );
    }

    #[test]
    fn quantities_parse_and_count() {
        let q = |v: Value| Quantity::parse(&v).expect("parses");
        assert_eq!(q(json!("?")), Quantity::ZeroOrOne);
        assert_eq!(q(json!("zero_or_many")), Quantity::ZeroOrMore);
        assert_eq!(q(json!("+")), Quantity::OneOrMore);
        assert_eq!(q(json!(3)), Quantity::Exactly(3));
        assert!(Quantity::parse(&json!("lots")).is_err());
        assert!(Quantity::parse(&json!(-1)).is_err());
        assert!(Quantity::Exactly(1).required() && !Quantity::Exactly(1).is_many());
        assert!(!Quantity::ZeroOrOne.required() && !Quantity::ZeroOrOne.is_many());
        assert!(Quantity::OneOrMore.required() && Quantity::OneOrMore.is_many());
        assert!(Quantity::Exactly(2).is_many() && !Quantity::Exactly(2).allows(3));
        assert!(Quantity::ZeroOrMore.allows(0) && !Quantity::OneOrMore.allows(0));
    }

    #[test]
    fn dtypes_parse_with_synonyms_and_widen_only_upwards() {
        let d = |v: Value| Dtype::parse(&v).expect("parses");
        assert_eq!(d(json!("float")), Dtype::Primitive(Primitive::Float32));
        assert_eq!(d(json!("double")), Dtype::Primitive(Primitive::Float64));
        assert_eq!(d(json!("int")), Dtype::Primitive(Primitive::Int32));
        assert_eq!(d(json!("uint")), Dtype::Primitive(Primitive::UInt32));
        assert_eq!(d(json!("utf8")), Dtype::Primitive(Primitive::Text));
        assert_eq!(d(json!("bytes")), Dtype::Primitive(Primitive::Ascii));
        assert_eq!(
            d(json!("datetime")),
            Dtype::Primitive(Primitive::IsoDatetime)
        );
        assert!(Dtype::parse(&json!("complex")).is_err());
        assert_eq!(
            d(json!({"target_type": "Table", "reftype": "region"})),
            Dtype::Reference {
                reftype: RefType::Region,
                target_type: "Table".into()
            }
        );
        let compound = d(json!([
            {"name": "idx_start", "dtype": "int32", "doc": "start"},
            {"name": "timeseries", "dtype": {"target_type": "TimeSeries", "reftype": "object"}, "doc": "ref"}
        ]));
        assert_eq!(
            compound.to_string(),
            "compound (idx_start: int32, timeseries: object reference to TimeSeries)"
        );
        use Primitive as P;
        use Stored as S;
        assert!(P::Float32.accepts(S::Float64) && !P::Float64.accepts(S::Float32));
        assert!(
            !P::Float32.accepts(S::Int32),
            "no integer where a float is asked"
        );
        assert!(P::Int16.accepts(S::Int64) && !P::Int16.accepts(S::Int8));
        assert!(!P::Int32.accepts(S::UInt32), "signedness is kept");
        assert!(P::UInt8.accepts(S::UInt64) && !P::UInt8.accepts(S::Int64));
        assert!(P::Numeric.accepts(S::UInt16) && P::Numeric.accepts(S::Float32));
        assert!(!P::Numeric.accepts(S::Bool) && !P::Numeric.accepts(S::Float16));
        assert!(P::Text.accepts(S::Ascii) && !P::Ascii.accepts(S::Utf8));
        assert!(P::IsoDatetime.accepts(S::Utf8) && !P::IsoDatetime.accepts(S::Float64));
        assert!(!P::Bool.accepts(S::UInt8));
    }

    #[test]
    fn shapes_have_alternatives_and_free_extents() {
        let one = Shape::parse(&json!([null, 3])).expect("parses");
        assert!(one.accepts(&[10, 3]) && !one.accepts(&[10, 4]) && !one.accepts(&[10]));
        let alts = Shape::parse(&json!([[null], [null, null], [null, null, 3]])).expect("parses");
        assert!(alts.accepts(&[5]) && alts.accepts(&[5, 2]) && alts.accepts(&[5, 2, 3]));
        assert!(!alts.accepts(&[5, 2, 4]) && !alts.accepts(&[]) && !alts.accepts(&[1, 1, 1, 1]));
        assert_eq!(alts.to_string(), "[*] or [*, *] or [*, *, 3]");
        assert!(Shape::parse(&json!([-1])).is_err());
        assert!(Shape::parse(&json!("3")).is_err());
    }

    #[test]
    fn malformed_parts_become_problems_and_the_rest_loads() {
        let ns = "namespaces:\n- name: bad\n  version: '1'\n  schema:\n  - source: bad.yaml\n  - source: gone.yaml\n";
        let bad = r#"
groups:
- neurodata_type_def: Thing
  attributes:
  - name: weird
    dtype: complex128
  - dtype: text
  datasets:
  - name: data
    dtype: float
    shape: [oops]
    quantity: many
- doc: no type here
"#;
        let docs = parse_namespaces("ns.yaml", ns, &mut |s: &str| match s {
            "bad.yaml" => Ok((s.to_string(), bad.to_string())),
            _ => Ok((s.to_string(), "{}".to_string())),
        })
        .expect("parses");
        let mut docs = docs;
        // Drop a source to see it reported.
        docs[0].documents.retain(|(n, _)| n != "gone");
        let set = SchemaSet::from_namespace_docs(&docs);
        let thing = set.lookup(Some("bad"), "Thing").expect("Thing still loads");
        assert_eq!(
            thing.resolved.attributes.len(),
            1,
            "the weird attribute stays, untyped"
        );
        assert_eq!(thing.resolved.attributes[0].dtype, None);
        assert_eq!(
            thing.resolved.datasets[0].dtype,
            Some(Dtype::Primitive(Primitive::Float32))
        );
        let problems: Vec<&str> = set.problems().iter().map(|p| p.message.as_str()).collect();
        for needle in [
            "unknown dtype 'complex128'",
            "an attribute needs a 'name'",
            "shape entry must be null or an integer",
            "unknown quantity 'many'",
            "defines no type",
            "schema source 'gone' is not there",
        ] {
            assert!(
                problems.iter().any(|p| p.contains(needle)),
                "{needle}: {problems:?}"
            );
        }
    }
}
