//! NumPy meaning of the values the pickle machine built: dtype layouts, raw scalar and array
//! bytes (with their byte order), structured elements, and the conversion of every value to
//! JSON under a depth limit and an output budget (shared values in a hostile stream could
//! otherwise expand exponentially).

use neurochunk_dtype::json::non_finite_value;
use serde_json::{Map, Number, Value};

use crate::read::{ArrayNode, Entry, Id, Machine, Node};
use crate::{PickleError, PickledArray};

/// Deepest nesting of values converted to JSON (self-referencing values end here too).
const MAX_DEPTH: usize = 128;
/// Output units (values plus text bytes) always allowed, on top of [`BUDGET_PER_INPUT_BYTE`].
const BUDGET_BASE: usize = 1 << 20;
/// Output units allowed per input byte.
const BUDGET_PER_INPUT_BYTE: usize = 32;

fn budget_for(input_len: usize) -> usize {
    BUDGET_BASE.saturating_add(input_len.saturating_mul(BUDGET_PER_INPUT_BYTE))
}

/// The element kinds this reader decodes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    Bool,
    Int,
    UInt,
    Float,
    Complex,
    /// `U`: UTF-32 text.
    Unicode,
    /// `S`: NUL-padded bytes.
    Bytes,
    /// `V`: raw bytes, or a structured element when it has fields.
    Void,
    Object,
}

/// A dtype resolved from its pickled constructor string and state.
struct Layout<'a> {
    kind: Kind,
    size: usize,
    big_endian: bool,
    /// Fields in the dtype's order: (name, dtype, offset).
    fields: Option<&'a [(String, Id, usize)]>,
}

fn unsupported(offset: usize, message: impl Into<String>) -> PickleError {
    PickleError::Unsupported {
        offset,
        message: message.into(),
    }
}

fn node(arena: &[Entry], id: Id) -> &Node {
    arena.get(id).map_or(&Node::None, |e| &e.node)
}

fn pos(arena: &[Entry], id: Id) -> usize {
    arena.get(id).map_or(0, |e| e.pos)
}

fn layout(arena: &[Entry], id: Id) -> Result<Layout<'_>, PickleError> {
    let at = pos(arena, id);
    let Node::Dtype(dtype) = node(arena, id) else {
        return Err(unsupported(
            at,
            format!("expected a numpy dtype, found a {}", node(arena, id).kind()),
        ));
    };
    let spec = dtype.spec.trim_start_matches(['<', '>', '|', '=']);
    let mut chars = spec.chars();
    let kind_char = chars.next().unwrap_or(' ');
    let digits = chars.as_str();
    let number = || digits.parse::<usize>().ok().filter(|&n| n > 0);
    let bad = || unsupported(at, format!("numpy dtype {:?} is not supported", dtype.spec));
    let (kind, size) = match (kind_char, digits) {
        ('b', "1") | ('?', "") => (Kind::Bool, 1),
        ('i', "1" | "2" | "4" | "8") => (Kind::Int, number().ok_or_else(bad)?),
        ('u', "1" | "2" | "4" | "8") => (Kind::UInt, number().ok_or_else(bad)?),
        ('f', "2" | "4" | "8") => (Kind::Float, number().ok_or_else(bad)?),
        ('c', "8" | "16") => (Kind::Complex, number().ok_or_else(bad)?),
        ('U', _) => (
            Kind::Unicode,
            number().and_then(|n| n.checked_mul(4)).ok_or_else(bad)?,
        ),
        ('S', _) => (Kind::Bytes, number().ok_or_else(bad)?),
        ('V', _) => (Kind::Void, number().ok_or_else(bad)?),
        ('O', "" | "8") => (Kind::Object, 8),
        _ => return Err(bad()),
    };
    let state = dtype.state.as_ref();
    let big_endian = state.is_some_and(|s| s.endian == '>') || dtype.spec.starts_with('>');
    let fields = match state.and_then(|s| s.fields.as_deref()) {
        Some(fields) if kind == Kind::Void => Some(fields),
        _ => None,
    };
    Ok(Layout {
        kind,
        size,
        big_endian,
        fields,
    })
}

fn float_json(x: f64) -> Value {
    Number::from_f64(x).map_or_else(|| non_finite_value(x), Value::Number)
}

fn out_of_budget() -> PickleError {
    PickleError::Limit(
        "the decoded values would be far larger than the pickle (shared values repeated too \
         often)"
            .into(),
    )
}

/// Decode one element of dtype `dtype` from its raw bytes, charging each value to `budget`.
fn raw_element(
    arena: &[Entry],
    dtype: Id,
    bytes: &[u8],
    depth: usize,
    budget: &mut usize,
) -> Result<Value, PickleError> {
    let at = pos(arena, dtype);
    if depth > MAX_DEPTH {
        return Err(PickleError::Limit(format!(
            "structured dtypes nest deeper than {MAX_DEPTH} levels"
        )));
    }
    *budget = budget.checked_sub(1).ok_or_else(out_of_budget)?;
    let l = layout(arena, dtype)?;
    if bytes.len() != l.size {
        return Err(unsupported(
            at,
            format!("{} bytes for an element of {} bytes", bytes.len(), l.size),
        ));
    }
    let ordered = |b: &[u8]| -> [u8; 8] {
        // Little-endian value in the low bytes, sign handled by the caller.
        let mut out = [0u8; 8];
        let n = b.len().min(8);
        for (i, slot) in out.iter_mut().enumerate().take(n) {
            *slot = if l.big_endian { b[n - 1 - i] } else { b[i] };
        }
        out
    };
    Ok(match l.kind {
        Kind::Bool => Value::Bool(bytes.first().is_some_and(|&b| b != 0)),
        Kind::Int => {
            let raw = u64::from_le_bytes(ordered(bytes));
            let shift = 64 - 8 * l.size as u32;
            let v = ((raw << shift) as i64) >> shift;
            Value::from(v)
        }
        Kind::UInt => Value::from(u64::from_le_bytes(ordered(bytes))),
        Kind::Float => float_json(float_from(&ordered(bytes), l.size)),
        Kind::Complex => {
            let half = l.size / 2;
            let re = float_from(&ordered(bytes.get(..half).unwrap_or_default()), half);
            let im = float_from(&ordered(bytes.get(half..).unwrap_or_default()), half);
            Value::Array(vec![float_json(re), float_json(im)])
        }
        Kind::Unicode => {
            let mut text = String::with_capacity(bytes.len() / 4);
            for unit in bytes.chunks_exact(4) {
                let arr = [unit[0], unit[1], unit[2], unit[3]];
                let code = if l.big_endian {
                    u32::from_be_bytes(arr)
                } else {
                    u32::from_le_bytes(arr)
                };
                let c = char::from_u32(code).ok_or_else(|| {
                    unsupported(at, format!("U+{code:X} in UTF-32 text is not a character"))
                })?;
                text.push(c);
            }
            let trimmed = text.trim_end_matches('\0').len();
            text.truncate(trimmed);
            *budget = budget.checked_sub(trimmed).ok_or_else(out_of_budget)?;
            Value::String(text)
        }
        Kind::Bytes => {
            let end = bytes.iter().rposition(|&b| b != 0).map_or(0, |i| i + 1);
            let text = std::str::from_utf8(bytes.get(..end).unwrap_or_default())
                .map_err(|_| unsupported(at, "S (bytes) data is not UTF-8 text"))?;
            *budget = budget.checked_sub(end).ok_or_else(out_of_budget)?;
            Value::String(text.to_string())
        }
        Kind::Void => {
            let Some(fields) = l.fields else {
                return Err(unsupported(at, "raw void (V) data has no JSON form"));
            };
            let mut object = Map::with_capacity(fields.len());
            for (name, field_dtype, offset) in fields {
                *budget = budget.checked_sub(name.len()).ok_or_else(out_of_budget)?;
                let fl = layout(arena, *field_dtype)?;
                let slice = offset
                    .checked_add(fl.size)
                    .and_then(|end| bytes.get(*offset..end))
                    .ok_or_else(|| {
                        unsupported(
                            at,
                            format!("field {name:?} lies outside the {}-byte element", l.size),
                        )
                    })?;
                let value = raw_element(arena, *field_dtype, slice, depth + 1, budget)?;
                object.insert(name.clone(), value);
            }
            Value::Object(object)
        }
        Kind::Object => {
            return Err(unsupported(
                at,
                "object (O) elements stored as raw bytes (pointers) cannot be read",
            ))
        }
    })
}

fn float_from(le: &[u8; 8], size: usize) -> f64 {
    match size {
        2 => half::f16::from_bits(u16::from_le_bytes([le[0], le[1]])).to_f64(),
        4 => f64::from(f32::from_le_bytes([le[0], le[1], le[2], le[3]])),
        _ => f64::from_le_bytes(*le),
    }
}

/// `numpy.core.multiarray.scalar(dtype, raw)`: the scalar as JSON (called while the machine
/// runs, so the arena is borrowed directly), charging the machine's work `budget`.
pub(crate) fn scalar(
    arena: &[Entry],
    dtype: Id,
    value: Id,
    offset: usize,
    budget: &mut usize,
) -> Result<Value, PickleError> {
    match node(arena, value) {
        Node::Bytes(raw) => raw_element(arena, dtype, raw, 0, budget),
        other => Err(unsupported(
            offset,
            format!(
                "a numpy scalar made from a {} (not raw bytes) is not supported",
                other.kind()
            ),
        )),
    }
}

/// Converts arena values to JSON, charging every value and text byte to a budget.
struct Conv<'a> {
    arena: &'a [Entry],
    budget: usize,
}

impl Conv<'_> {
    fn charge(&mut self, units: usize) -> Result<(), PickleError> {
        self.budget = self.budget.checked_sub(units).ok_or_else(out_of_budget)?;
        Ok(())
    }

    fn deeper(depth: usize) -> Result<usize, PickleError> {
        if depth >= MAX_DEPTH {
            return Err(PickleError::Limit(format!(
                "values nest deeper than {MAX_DEPTH} levels (or contain themselves)"
            )));
        }
        Ok(depth + 1)
    }

    fn value(&mut self, id: Id, depth: usize) -> Result<Value, PickleError> {
        self.charge(1)?;
        let depth = Self::deeper(depth)?;
        let at = pos(self.arena, id);
        Ok(match node(self.arena, id) {
            Node::None => Value::Null,
            Node::Bool(b) => Value::Bool(*b),
            Node::Int(v) => {
                if let Ok(i) = i64::try_from(*v) {
                    Value::from(i)
                } else if let Ok(u) = u64::try_from(*v) {
                    Value::from(u)
                } else {
                    return Err(unsupported(
                        at,
                        format!("integer {v} does not fit in 64 bits"),
                    ));
                }
            }
            Node::BigInt => {
                return Err(unsupported(at, "an integer does not fit in 64 bits"));
            }
            Node::Float(x) => float_json(*x),
            Node::Str(s) => {
                self.charge(s.len())?;
                Value::String(s.clone())
            }
            Node::Bytes(b) => {
                self.charge(b.len())?;
                let text = std::str::from_utf8(b)
                    .map_err(|_| unsupported(at, "a bytes value is not UTF-8 text"))?;
                Value::String(text.to_string())
            }
            Node::List(items) | Node::Tuple(items) => {
                let mut out = Vec::with_capacity(items.len().min(1 << 16));
                for &item in items {
                    out.push(self.value(item, depth)?);
                }
                Value::Array(out)
            }
            Node::Dict(pairs) => {
                let mut object = Map::with_capacity(pairs.len().min(1 << 16));
                for &(key, item) in pairs {
                    let key = match node(self.arena, key) {
                        Node::Str(s) => s.clone(),
                        other => {
                            return Err(unsupported(
                                pos(self.arena, key),
                                format!("a dict key is a {}, not a str", other.kind()),
                            ))
                        }
                    };
                    self.charge(key.len())?;
                    let value = self.value(item, depth)?;
                    object.insert(key, value);
                }
                Value::Object(object)
            }
            Node::Global(g) => {
                return Err(unsupported(
                    at,
                    format!("the global {} is not a value", g.name),
                ))
            }
            Node::Dtype(_) => return Err(unsupported(at, "a numpy dtype is not a value")),
            Node::Array(array) => {
                let array = array.clone();
                let (items, _) = self.array_items(&array, at, depth)?;
                nest(items, &array.shape, &mut self.budget)?
            }
            Node::Json(v) => {
                self.charge(json_cost(v))?;
                v.clone()
            }
        })
    }

    /// An element of a structured array pickled as a tuple: an object keyed by field name.
    fn typed(&mut self, id: Id, dtype: Id, depth: usize) -> Result<Value, PickleError> {
        let l = layout(self.arena, dtype)?;
        let (Some(fields), Node::Tuple(items)) = (l.fields, node(self.arena, id)) else {
            return self.value(id, depth);
        };
        if items.len() != fields.len() {
            return Err(unsupported(
                pos(self.arena, id),
                format!(
                    "a structured element has {} values for {} fields",
                    items.len(),
                    fields.len()
                ),
            ));
        }
        self.charge(1)?;
        let depth = Self::deeper(depth)?;
        let mut object = Map::with_capacity(fields.len());
        for ((name, field_dtype, _), &item) in fields.iter().zip(items.iter()) {
            self.charge(name.len())?;
            let value = self.typed(item, *field_dtype, depth)?;
            object.insert(name.clone(), value);
        }
        Ok(Value::Object(object))
    }

    /// The elements of an array in C order, and its field names if structured.
    fn array_items(
        &mut self,
        array: &ArrayNode,
        at: usize,
        depth: usize,
    ) -> Result<(Vec<Value>, Option<Vec<String>>), PickleError> {
        let (Some(dtype), Some(data)) = (array.dtype, array.data) else {
            return Err(unsupported(
                at,
                "the numpy array was never given its contents (no BUILD)",
            ));
        };
        let l = layout(self.arena, dtype)?;
        let count = array
            .shape
            .iter()
            .try_fold(1usize, |a, &d| a.checked_mul(d))
            .ok_or_else(|| unsupported(at, format!("shape {:?} overflows", array.shape)))?;
        let names = l
            .fields
            .map(|f| f.iter().map(|(n, _, _)| n.clone()).collect::<Vec<_>>());
        let items = match node(self.arena, data) {
            Node::List(list) => {
                if list.len() != count {
                    return Err(unsupported(
                        at,
                        format!(
                            "the array of shape {:?} holds {} elements instead of {count}",
                            array.shape,
                            list.len()
                        ),
                    ));
                }
                let list = list.clone();
                let mut out = Vec::with_capacity(count.min(1 << 20));
                for item in list {
                    // Object lists are in C order whatever the Fortran flag says (NumPy
                    // iterates the array in C order both when pickling and unpickling).
                    out.push(self.typed(item, dtype, depth)?);
                }
                out
            }
            Node::Bytes(raw) => {
                if l.kind == Kind::Object {
                    return Err(unsupported(
                        at,
                        "an object array given as raw bytes (pointers) cannot be read",
                    ));
                }
                let expected = count.checked_mul(l.size);
                if expected != Some(raw.len()) {
                    return Err(unsupported(
                        at,
                        format!(
                            "the array of shape {:?} needs {count} elements of {} bytes but \
                             holds {} bytes",
                            array.shape,
                            l.size,
                            raw.len()
                        ),
                    ));
                }
                let mut flat = Vec::with_capacity(count.min(1 << 20));
                if l.size > 0 {
                    for element in raw.chunks_exact(l.size) {
                        flat.push(raw_element(
                            self.arena,
                            dtype,
                            element,
                            0,
                            &mut self.budget,
                        )?);
                    }
                }
                if array.fortran && array.shape.len() > 1 {
                    // Raw bytes follow the memory order: bring Fortran order to C order.
                    fortran_to_c(flat, &array.shape)
                } else {
                    flat
                }
            }
            other => {
                return Err(unsupported(
                    at,
                    format!(
                        "array data must be a list or bytes, found a {}",
                        other.kind()
                    ),
                ))
            }
        };
        Ok((items, names))
    }
}

/// The number of values and text bytes in `v` (what converting it costs).
pub(crate) fn json_cost(v: &Value) -> usize {
    match v {
        Value::String(s) => 1 + s.len(),
        Value::Array(items) => 1 + items.iter().map(json_cost).sum::<usize>(),
        Value::Object(m) => 1 + m.iter().map(|(k, v)| k.len() + json_cost(v)).sum::<usize>(),
        _ => 1,
    }
}

/// Reorder elements stored in Fortran order to C order.
fn fortran_to_c(flat: Vec<Value>, shape: &[usize]) -> Vec<Value> {
    let n = flat.len();
    let mut slots: Vec<Option<Value>> = flat.into_iter().map(Some).collect();
    let mut out = Vec::with_capacity(n);
    let mut idx = vec![0usize; shape.len()];
    for _ in 0..n {
        // Fortran offset of the C multi-index `idx`.
        let mut offset = 0usize;
        let mut stride = 1usize;
        for (&i, &d) in idx.iter().zip(shape) {
            offset += i * stride;
            stride *= d;
        }
        out.push(
            slots
                .get_mut(offset)
                .and_then(Option::take)
                .unwrap_or(Value::Null),
        );
        for k in (0..shape.len()).rev() {
            idx[k] += 1;
            if idx[k] < shape[k] {
                break;
            }
            idx[k] = 0;
        }
    }
    out
}

/// Nest C-ordered items into lists per dimension (a 0-d array gives its single item),
/// charging every list made to `budget` (a shape like `(2**40, 0)` holds no element but would
/// make 2**40 empty lists).
fn nest(items: Vec<Value>, shape: &[usize], budget: &mut usize) -> Result<Value, PickleError> {
    Ok(match shape {
        [] => items.into_iter().next().unwrap_or(Value::Null),
        [_] => Value::Array(items),
        [first, rest @ ..] => {
            *budget = budget.checked_sub(*first).ok_or_else(out_of_budget)?;
            // An overflowing product means a zero follows (the whole shape's product fits).
            let inner = rest
                .iter()
                .try_fold(1usize, |a, &d| a.checked_mul(d))
                .unwrap_or(0);
            let mut it = items.into_iter();
            let mut out = Vec::with_capacity(*first);
            for _ in 0..*first {
                let chunk: Vec<Value> = it.by_ref().take(inner).collect();
                out.push(nest(chunk, rest, budget)?);
            }
            Value::Array(out)
        }
    })
}

/// The pickled top-level value as an array.
pub(crate) fn array_from(machine: &Machine, input_len: usize) -> Result<PickledArray, PickleError> {
    let arena = &machine.arena;
    let at = pos(arena, machine.result);
    let Node::Array(array) = node(arena, machine.result) else {
        return Err(unsupported(
            at,
            format!(
                "the pickle holds a {}, not a numpy array",
                node(arena, machine.result).kind()
            ),
        ));
    };
    let mut conv = Conv {
        arena,
        budget: budget_for(input_len),
    };
    let (items, field_names) = conv.array_items(array, at, 0)?;
    Ok(PickledArray {
        shape: array.shape.clone(),
        items,
        field_names,
        fortran: array.fortran && array.shape.len() > 1,
    })
}

/// The pickled top-level value as JSON.
pub(crate) fn value_from(machine: &Machine, input_len: usize) -> Result<Value, PickleError> {
    let mut conv = Conv {
        arena: &machine.arena,
        budget: budget_for(input_len),
    };
    conv.value(machine.result, 0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn fortran_order_becomes_c_order() {
        // 2 x 3 array [[0, 1, 2], [3, 4, 5]] stored in Fortran order: 0 3 1 4 2 5.
        let f = [0, 3, 1, 4, 2, 5].map(Value::from).to_vec();
        assert_eq!(
            fortran_to_c(f, &[2, 3]),
            [0, 1, 2, 3, 4, 5].map(Value::from).to_vec()
        );
    }

    #[test]
    fn nest_follows_the_shape() {
        let mut budget = 100;
        let items = (0..6).map(Value::from).collect::<Vec<_>>();
        let mut nest = |items, shape: &[usize]| nest(items, shape, &mut budget).unwrap();
        assert_eq!(nest(items.clone(), &[2, 3]), json!([[0, 1, 2], [3, 4, 5]]));
        assert_eq!(nest(items, &[6]), json!([0, 1, 2, 3, 4, 5]));
        assert_eq!(nest(vec![json!("x")], &[]), json!("x"));
        assert_eq!(nest(Vec::new(), &[2, 0]), json!([[], []]));
        // Empty arrays with huge dimensions cost their lists.
        let mut small = 1000;
        assert!(super::nest(Vec::new(), &[1 << 40, 0], &mut small).is_err());
        assert!(super::nest(Vec::new(), &[0, 1 << 40, 1 << 40], &mut small).is_ok());
    }
}
