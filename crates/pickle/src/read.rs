//! The restricted pickle virtual machine: runs the opcodes of a pickle stream (protocols 0–5)
//! into an arena of plain values without importing or calling anything. Globals are resolved
//! against the caller's [`AllowList`] to markers ([`Global`]) carrying their [`Meaning`];
//! `REDUCE`, `NEWOBJ` and `BUILD` on those markers build NumPy dtype / array descriptions,
//! byte strings and dicts, and nothing else.
//!
//! Every read is bounds-checked, lengths are compared with the remaining input before any
//! allocation, and errors carry the opcode and its byte offset.

use std::collections::HashMap;

use crate::{AllowList, Meaning, PickleError};

/// Index of a value in [`Machine::arena`].
pub(crate) type Id = usize;

/// Deepest `MARK` nesting accepted (real NumPy pickles nest a handful of levels).
const MAX_MARK_DEPTH: usize = 4096;
/// Longest dtype constructor string accepted (`"V16"`, `"U12"`, `"O8"`, …).
const MAX_DTYPE_SPEC: usize = 32;
/// Most dimensions of an array (NumPy's own limit).
const MAX_DIMS: usize = 64;
/// Most fields of a structured dtype.
const MAX_FIELDS: usize = 4096;
/// Longest module or attribute name of a global.
const MAX_GLOBAL_NAME: usize = 256;
/// Work units (copied values and bytes) the calls and states of a stream may cost, always and
/// per input byte: a shared value reused by many calls could otherwise make a small stream
/// allocate without bound.
const WORK_BASE: usize = 1 << 20;
const WORK_PER_INPUT_BYTE: usize = 32;

/// A global the allow-list accepted: its meaning to the interpreter and its name as the stream
/// spelled it (`module.name`, for messages).
#[derive(Clone, Debug)]
pub(crate) struct Global {
    pub meaning: Meaning,
    pub name: Box<str>,
}

/// A NumPy dtype: the constructor string (`"i4"`, `"V16"`, `"O8"`) and, once `BUILD` ran,
/// its state.
#[derive(Clone, Debug)]
pub(crate) struct DtypeNode {
    pub spec: String,
    pub state: Option<DtypeState>,
}

/// The part of a dtype's pickled state this reader uses.
#[derive(Clone, Debug)]
pub(crate) struct DtypeState {
    /// `'<'`, `'>'`, `'|'` or `'='`.
    pub endian: char,
    /// For structured dtypes: (name, dtype, byte offset) of each field, in the dtype's order.
    pub fields: Option<Vec<(String, Id, usize)>>,
}

/// A NumPy array: made empty by `_reconstruct`, filled in by `BUILD` (or complete from
/// `_frombuffer`).
#[derive(Clone, Debug)]
pub(crate) struct ArrayNode {
    pub shape: Vec<usize>,
    pub dtype: Option<Id>,
    pub fortran: bool,
    /// A list of elements (object / structured-with-object dtypes) or the raw bytes.
    pub data: Option<Id>,
}

/// A value on the stack, in the memo or inside another value.
#[derive(Clone, Debug)]
pub(crate) enum Node {
    None,
    Bool(bool),
    /// Python ints up to 128 bits.
    Int(i128),
    /// A Python int that does not fit in 128 bits (refused when converted).
    BigInt,
    Float(f64),
    Str(String),
    Bytes(Vec<u8>),
    List(Vec<Id>),
    Tuple(Vec<Id>),
    /// A `dict`, or an instance of `dict` / `object` / `ZarrReference` (its items).
    Dict(Vec<(Id, Id)>),
    Global(Global),
    Dtype(DtypeNode),
    Array(ArrayNode),
    /// A value already converted to JSON (decoded NumPy scalars).
    Json(serde_json::Value),
}

impl Node {
    pub(crate) fn kind(&self) -> &'static str {
        match self {
            Node::None => "None",
            Node::Bool(_) => "bool",
            Node::Int(_) | Node::BigInt => "int",
            Node::Float(_) => "float",
            Node::Str(_) => "str",
            Node::Bytes(_) => "bytes",
            Node::List(_) => "list",
            Node::Tuple(_) => "tuple",
            Node::Dict(_) => "dict",
            Node::Global(_) => "global",
            Node::Dtype(_) => "numpy dtype",
            Node::Array(_) => "numpy array",
            Node::Json(_) => "numpy scalar",
        }
    }
}

/// An arena slot: the value and the offset of the opcode that made it (for errors).
#[derive(Clone, Debug)]
pub(crate) struct Entry {
    pub node: Node,
    pub pos: usize,
}

/// The pickle machine after `STOP`: the arena and the id of the result.
pub(crate) struct Machine {
    pub arena: Vec<Entry>,
    pub result: Id,
}

/// The opcode name for a byte, for messages.
pub(crate) fn opcode_name(op: u8) -> Option<&'static str> {
    Some(match op {
        b'(' => "MARK",
        b'.' => "STOP",
        b'0' => "POP",
        b'1' => "POP_MARK",
        b'2' => "DUP",
        b'F' => "FLOAT",
        b'I' => "INT",
        b'J' => "BININT",
        b'K' => "BININT1",
        b'L' => "LONG",
        b'M' => "BININT2",
        b'N' => "NONE",
        b'P' => "PERSID",
        b'Q' => "BINPERSID",
        b'R' => "REDUCE",
        b'S' => "STRING",
        b'T' => "BINSTRING",
        b'U' => "SHORT_BINSTRING",
        b'V' => "UNICODE",
        b'X' => "BINUNICODE",
        b'a' => "APPEND",
        b'b' => "BUILD",
        b'c' => "GLOBAL",
        b'd' => "DICT",
        b'}' => "EMPTY_DICT",
        b'e' => "APPENDS",
        b'g' => "GET",
        b'h' => "BINGET",
        b'i' => "INST",
        b'j' => "LONG_BINGET",
        b'l' => "LIST",
        b']' => "EMPTY_LIST",
        b'o' => "OBJ",
        b'p' => "PUT",
        b'q' => "BINPUT",
        b'r' => "LONG_BINPUT",
        b's' => "SETITEM",
        b't' => "TUPLE",
        b')' => "EMPTY_TUPLE",
        b'u' => "SETITEMS",
        b'G' => "BINFLOAT",
        0x80 => "PROTO",
        0x81 => "NEWOBJ",
        0x82 => "EXT1",
        0x83 => "EXT2",
        0x84 => "EXT4",
        0x85 => "TUPLE1",
        0x86 => "TUPLE2",
        0x87 => "TUPLE3",
        0x88 => "NEWTRUE",
        0x89 => "NEWFALSE",
        0x8a => "LONG1",
        0x8b => "LONG4",
        b'B' => "BINBYTES",
        b'C' => "SHORT_BINBYTES",
        0x8c => "SHORT_BINUNICODE",
        0x8d => "BINUNICODE8",
        0x8e => "BINBYTES8",
        0x8f => "EMPTY_SET",
        0x90 => "ADDITEMS",
        0x91 => "FROZENSET",
        0x92 => "NEWOBJ_EX",
        0x93 => "STACK_GLOBAL",
        0x94 => "MEMOIZE",
        0x95 => "FRAME",
        0x96 => "BYTEARRAY8",
        0x97 => "NEXT_BUFFER",
        0x98 => "READONLY_BUFFER",
        _ => return None,
    })
}

/// Why an opcode is refused (for the opcodes that exist but are never executed here).
fn refusal(op: u8) -> Option<&'static str> {
    Some(match op {
        b'P' | b'Q' => "persistent ids need the writer's own loader",
        0x82..=0x84 => "the extension registry is not used for NumPy data",
        b'i' | b'o' => "old-style instances would call arbitrary classes",
        0x97 | 0x98 => "out-of-band buffers are not part of a stored chunk",
        0x8f..=0x91 => "sets are not part of NumPy object arrays",
        b'S' => "protocol-0 quoted strings are not written by Python 3",
        _ => return None,
    })
}

struct Vm<'a> {
    data: &'a [u8],
    pos: usize,
    /// Offset and name of the opcode being run.
    op_pos: usize,
    op_name: &'static str,
    arena: Vec<Entry>,
    stack: Vec<Id>,
    metastack: Vec<Vec<Id>>,
    memo: HashMap<u64, Id>,
    /// The globals the stream may name.
    allow: &'a AllowList,
    /// Work units left (see [`WORK_BASE`]).
    work: usize,
}

impl Machine {
    /// Run the pickle in `data` up to its `STOP` opcode, loading only the globals `allow`
    /// lists.
    pub(crate) fn run(data: &[u8], allow: &AllowList) -> Result<Machine, PickleError> {
        let mut vm = Vm {
            data,
            pos: 0,
            op_pos: 0,
            op_name: "start",
            arena: Vec::new(),
            stack: Vec::new(),
            metastack: Vec::new(),
            memo: HashMap::new(),
            allow,
            work: WORK_BASE.saturating_add(data.len().saturating_mul(WORK_PER_INPUT_BYTE)),
        };
        let result = vm.run()?;
        Ok(Machine {
            arena: vm.arena,
            result,
        })
    }
}

impl<'a> Vm<'a> {
    fn invalid(&self, message: impl Into<String>) -> PickleError {
        PickleError::Invalid {
            opcode: self.op_name,
            offset: self.op_pos,
            message: message.into(),
        }
    }

    /// Charge `units` of copying / decoding work to the stream's budget.
    fn charge(&mut self, units: usize) -> Result<(), PickleError> {
        self.work = self.work.checked_sub(units).ok_or_else(|| {
            PickleError::Limit(format!(
                "{} at byte {}: the stream makes far more data than it holds (shared values \
                 reused too often)",
                self.op_name, self.op_pos
            ))
        })?;
        Ok(())
    }

    fn truncated(&self, what: impl Into<String>) -> PickleError {
        PickleError::Truncated {
            len: self.data.len(),
            offset: self.op_pos,
            what: what.into(),
        }
    }

    fn take(&mut self, n: usize) -> Result<&'a [u8], PickleError> {
        let data: &'a [u8] = self.data;
        let end = self
            .pos
            .checked_add(n)
            .filter(|&end| end <= data.len())
            .ok_or_else(|| {
                self.truncated(format!(
                    "{} at byte {} needs {n} more bytes, {} remain",
                    self.op_name,
                    self.op_pos,
                    data.len().saturating_sub(self.pos)
                ))
            })?;
        let slice = data.get(self.pos..end).unwrap_or_default();
        self.pos = end;
        Ok(slice)
    }

    fn take_array<const N: usize>(&mut self) -> Result<[u8; N], PickleError> {
        let bytes = self.take(N)?;
        let mut out = [0u8; N];
        out.copy_from_slice(bytes);
        Ok(out)
    }

    fn u8(&mut self) -> Result<u8, PickleError> {
        Ok(self.take_array::<1>()?[0])
    }

    fn u16(&mut self) -> Result<u16, PickleError> {
        Ok(u16::from_le_bytes(self.take_array()?))
    }

    fn u32(&mut self) -> Result<u32, PickleError> {
        Ok(u32::from_le_bytes(self.take_array()?))
    }

    fn i32(&mut self) -> Result<i32, PickleError> {
        Ok(i32::from_le_bytes(self.take_array()?))
    }

    fn u64(&mut self) -> Result<u64, PickleError> {
        Ok(u64::from_le_bytes(self.take_array()?))
    }

    /// A length read from the stream, as `usize`.
    fn len_from(&self, n: u64) -> Result<usize, PickleError> {
        usize::try_from(n).map_err(|_| {
            self.truncated(format!(
                "{} at byte {} declares {n} bytes",
                self.op_name, self.op_pos
            ))
        })
    }

    /// The bytes up to the next newline (the newline is consumed, not returned).
    fn line(&mut self) -> Result<&'a [u8], PickleError> {
        let data: &'a [u8] = self.data;
        let rest = data.get(self.pos..).unwrap_or_default();
        let n = rest.iter().position(|&b| b == b'\n').ok_or_else(|| {
            self.truncated(format!(
                "{} at byte {} has no end of line",
                self.op_name, self.op_pos
            ))
        })?;
        let line = rest.get(..n).unwrap_or_default();
        self.pos += n + 1;
        Ok(line)
    }

    fn line_str(&mut self) -> Result<&'a str, PickleError> {
        let line = self.line()?;
        std::str::from_utf8(line).map_err(|_| self.invalid("the argument line is not UTF-8"))
    }

    fn text(&self, bytes: &[u8]) -> Result<String, PickleError> {
        String::from_utf8(bytes.to_vec()).map_err(|e| {
            self.invalid(format!(
                "the string is not valid UTF-8 (at its byte {})",
                e.utf8_error().valid_up_to()
            ))
        })
    }

    fn alloc(&mut self, node: Node) -> Id {
        self.arena.push(Entry {
            node,
            pos: self.op_pos,
        });
        self.arena.len() - 1
    }

    fn push(&mut self, node: Node) {
        let id = self.alloc(node);
        self.stack.push(id);
    }

    fn pop(&mut self) -> Result<Id, PickleError> {
        self.stack
            .pop()
            .ok_or_else(|| self.invalid("stack underflow (the stack is empty)"))
    }

    fn top(&self) -> Result<Id, PickleError> {
        self.stack
            .last()
            .copied()
            .ok_or_else(|| self.invalid("stack underflow (the stack is empty)"))
    }

    /// The items pushed since the last `MARK`, restoring the stack from before it.
    fn pop_mark(&mut self) -> Result<Vec<Id>, PickleError> {
        let below = self
            .metastack
            .pop()
            .ok_or_else(|| self.invalid("no MARK to pop to"))?;
        Ok(std::mem::replace(&mut self.stack, below))
    }

    fn node(&self, id: Id) -> &Node {
        self.arena.get(id).map_or(&Node::None, |e| &e.node)
    }

    fn node_mut(&mut self, id: Id) -> Result<&mut Node, PickleError> {
        match self.arena.get_mut(id) {
            Some(e) => Ok(&mut e.node),
            None => Err(PickleError::Invalid {
                opcode: self.op_name,
                offset: self.op_pos,
                message: "dangling value".into(),
            }),
        }
    }

    fn memo_get(&self, index: u64) -> Result<Id, PickleError> {
        self.memo
            .get(&index)
            .copied()
            .ok_or_else(|| self.invalid(format!("memo index {index} is not set")))
    }

    fn memo_put(&mut self, index: u64) -> Result<(), PickleError> {
        let top = self.top()?;
        self.memo.insert(index, top);
        Ok(())
    }

    fn text_int<T: std::str::FromStr>(&self, line: &str) -> Result<T, PickleError> {
        line.trim()
            .parse()
            .map_err(|_| self.invalid(format!("{line:?} is not a decimal integer")))
    }

    fn run(&mut self) -> Result<Id, PickleError> {
        loop {
            self.op_pos = self.pos;
            self.op_name = "opcode";
            let Some(&op) = self.data.get(self.pos) else {
                return Err(self.truncated("the stream ends before its STOP opcode"));
            };
            self.pos += 1;
            let Some(name) = opcode_name(op) else {
                return Err(PickleError::UnknownOpcode {
                    opcode: op,
                    offset: self.op_pos,
                });
            };
            self.op_name = name;
            if let Some(reason) = refusal(op) {
                return Err(PickleError::RefusedOpcode {
                    opcode: op,
                    name,
                    offset: self.op_pos,
                    reason,
                });
            }
            match op {
                0x80 => {
                    let version = self.u8()?;
                    if version > 5 {
                        return Err(self.invalid(format!("unsupported protocol {version}")));
                    }
                }
                0x95 => {
                    let n = self.u64()?;
                    let n = self.len_from(n)?;
                    if n > self.data.len().saturating_sub(self.pos) {
                        return Err(self.truncated(format!(
                            "FRAME at byte {} declares {n} bytes, {} remain",
                            self.op_pos,
                            self.data.len().saturating_sub(self.pos)
                        )));
                    }
                }
                b'.' => return self.pop(),
                b'(' => {
                    if self.metastack.len() >= MAX_MARK_DEPTH {
                        return Err(PickleError::Limit(format!(
                            "more than {MAX_MARK_DEPTH} nested MARKs at byte {}",
                            self.op_pos
                        )));
                    }
                    let stack = std::mem::take(&mut self.stack);
                    self.metastack.push(stack);
                }
                b'0' => {
                    if self.stack.pop().is_none() {
                        self.pop_mark()?;
                    }
                }
                b'1' => {
                    self.pop_mark()?;
                }
                b'2' => {
                    let top = self.top()?;
                    self.stack.push(top);
                }
                b'N' => self.push(Node::None),
                0x88 => self.push(Node::Bool(true)),
                0x89 => self.push(Node::Bool(false)),
                b'I' => {
                    let line = self.line_str()?;
                    let node = match line {
                        "00" => Node::Bool(false),
                        "01" => Node::Bool(true),
                        _ => self.decimal(line)?,
                    };
                    self.push(node);
                }
                b'L' => {
                    let line = self.line_str()?;
                    let digits = line.strip_suffix('L').unwrap_or(line);
                    let node = self.decimal(digits)?;
                    self.push(node);
                }
                b'J' => {
                    let v = self.i32()?;
                    self.push(Node::Int(i128::from(v)));
                }
                b'K' => {
                    let v = self.u8()?;
                    self.push(Node::Int(i128::from(v)));
                }
                b'M' => {
                    let v = self.u16()?;
                    self.push(Node::Int(i128::from(v)));
                }
                0x8a => {
                    let n = usize::from(self.u8()?);
                    let bytes = self.take(n)?;
                    self.push(long_from_le(bytes));
                }
                0x8b => {
                    let n = self.i32()?;
                    let n = usize::try_from(n)
                        .map_err(|_| self.invalid(format!("negative LONG4 length {n}")))?;
                    let bytes = self.take(n)?;
                    self.push(long_from_le(bytes));
                }
                b'F' => {
                    let line = self.line_str()?;
                    let v: f64 = line
                        .trim()
                        .parse()
                        .map_err(|_| self.invalid(format!("{line:?} is not a float")))?;
                    self.push(Node::Float(v));
                }
                b'G' => {
                    let v = f64::from_be_bytes(self.take_array()?);
                    self.push(Node::Float(v));
                }
                b'X' => {
                    let n = u64::from(self.u32()?);
                    self.string_of(n)?;
                }
                0x8c => {
                    let n = u64::from(self.u8()?);
                    self.string_of(n)?;
                }
                0x8d => {
                    let n = self.u64()?;
                    self.string_of(n)?;
                }
                b'V' => {
                    let line = self.line()?;
                    let s = raw_unicode_escape(line)
                        .ok_or_else(|| self.invalid("malformed raw-unicode-escape text"))?;
                    self.push(Node::Str(s));
                }
                b'B' => {
                    let n = u64::from(self.u32()?);
                    self.bytes_of(n)?;
                }
                b'C' => {
                    let n = u64::from(self.u8()?);
                    self.bytes_of(n)?;
                }
                0x8e | 0x96 => {
                    let n = self.u64()?;
                    self.bytes_of(n)?;
                }
                b'T' => {
                    let n = self.i32()?;
                    let n = u64::try_from(n)
                        .map_err(|_| self.invalid(format!("negative BINSTRING length {n}")))?;
                    self.bytes_of(n)?;
                }
                b'U' => {
                    let n = u64::from(self.u8()?);
                    self.bytes_of(n)?;
                }
                b']' => self.push(Node::List(Vec::new())),
                b'}' => self.push(Node::Dict(Vec::new())),
                b')' => self.push(Node::Tuple(Vec::new())),
                b'l' => {
                    let items = self.pop_mark()?;
                    self.push(Node::List(items));
                }
                b't' => {
                    let items = self.pop_mark()?;
                    self.push(Node::Tuple(items));
                }
                b'd' => {
                    let items = self.pop_mark()?;
                    let pairs = self.pairs(items)?;
                    self.push(Node::Dict(pairs));
                }
                0x85..=0x87 => {
                    let n = usize::from(op - 0x84);
                    if self.stack.len() < n {
                        return Err(self.invalid(format!(
                            "stack underflow (needs {n} items, has {})",
                            self.stack.len()
                        )));
                    }
                    let items = self.stack.split_off(self.stack.len() - n);
                    self.push(Node::Tuple(items));
                }
                b'a' => {
                    let value = self.pop()?;
                    let list = self.top()?;
                    self.extend_list(list, vec![value])?;
                }
                b'e' => {
                    let items = self.pop_mark()?;
                    let list = self.top()?;
                    self.extend_list(list, items)?;
                }
                b's' => {
                    let value = self.pop()?;
                    let key = self.pop()?;
                    let dict = self.top()?;
                    self.extend_dict(dict, vec![(key, value)])?;
                }
                b'u' => {
                    let items = self.pop_mark()?;
                    let pairs = self.pairs(items)?;
                    let dict = self.top()?;
                    self.extend_dict(dict, pairs)?;
                }
                0x94 => {
                    let index = self.memo.len() as u64;
                    self.memo_put(index)?;
                }
                b'q' => {
                    let index = u64::from(self.u8()?);
                    self.memo_put(index)?;
                }
                b'r' => {
                    let index = u64::from(self.u32()?);
                    self.memo_put(index)?;
                }
                b'p' => {
                    let line = self.line_str()?;
                    let index = self.text_int(line)?;
                    self.memo_put(index)?;
                }
                b'h' => {
                    let index = u64::from(self.u8()?);
                    let id = self.memo_get(index)?;
                    self.stack.push(id);
                }
                b'j' => {
                    let index = u64::from(self.u32()?);
                    let id = self.memo_get(index)?;
                    self.stack.push(id);
                }
                b'g' => {
                    let line = self.line_str()?;
                    let index = self.text_int(line)?;
                    let id = self.memo_get(index)?;
                    self.stack.push(id);
                }
                b'c' => {
                    let module = self.line_str()?;
                    let name = self.line_str()?;
                    self.global(module, name)?;
                }
                0x93 => {
                    let name = self.pop()?;
                    let module = self.pop()?;
                    let (Node::Str(module), Node::Str(name)) = (self.node(module), self.node(name))
                    else {
                        return Err(self.invalid("STACK_GLOBAL needs two strings"));
                    };
                    if module.len() > MAX_GLOBAL_NAME || name.len() > MAX_GLOBAL_NAME {
                        return Err(self.invalid(format!(
                            "a global name longer than {MAX_GLOBAL_NAME} bytes"
                        )));
                    }
                    let (module, name) = (module.clone(), name.clone());
                    self.global(&module, &name)?;
                }
                b'R' => {
                    let args = self.pop()?;
                    let callable = self.pop()?;
                    let result = self.reduce(callable, args)?;
                    self.stack.push(result);
                }
                0x81 => {
                    let args = self.pop()?;
                    let class = self.pop()?;
                    let result = self.new_object(class, args)?;
                    self.stack.push(result);
                }
                0x92 => {
                    let _kwargs = self.pop()?;
                    let args = self.pop()?;
                    let class = self.pop()?;
                    let result = self.new_object(class, args)?;
                    self.stack.push(result);
                }
                b'b' => {
                    let state = self.pop()?;
                    let target = self.top()?;
                    self.build(target, state)?;
                }
                _ => {
                    // Every named opcode is either handled above or refused by `refusal`.
                    return Err(PickleError::UnknownOpcode {
                        opcode: op,
                        offset: self.op_pos,
                    });
                }
            }
        }
    }

    fn decimal(&self, text: &str) -> Result<Node, PickleError> {
        let t = text.trim();
        let digits = t.strip_prefix(['-', '+']).unwrap_or(t);
        if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
            return Err(self.invalid(format!("{text:?} is not a decimal integer")));
        }
        Ok(t.parse::<i128>().map_or(Node::BigInt, Node::Int))
    }

    fn string_of(&mut self, n: u64) -> Result<(), PickleError> {
        let n = self.len_from(n)?;
        let bytes = self.take(n)?;
        let s = self.text(bytes)?;
        self.push(Node::Str(s));
        Ok(())
    }

    fn bytes_of(&mut self, n: u64) -> Result<(), PickleError> {
        let n = self.len_from(n)?;
        let bytes = self.take(n)?.to_vec();
        self.push(Node::Bytes(bytes));
        Ok(())
    }

    fn pairs(&self, items: Vec<Id>) -> Result<Vec<(Id, Id)>, PickleError> {
        if items.len() % 2 != 0 {
            return Err(self.invalid(format!(
                "{} items cannot be key/value pairs (odd count)",
                items.len()
            )));
        }
        Ok(items.chunks_exact(2).map(|p| (p[0], p[1])).collect())
    }

    fn extend_list(&mut self, list: Id, items: Vec<Id>) -> Result<(), PickleError> {
        match self.node_mut(list)? {
            Node::List(v) => {
                v.extend(items);
                Ok(())
            }
            other => {
                let kind = other.kind();
                Err(self.invalid(format!("cannot append to a {kind}")))
            }
        }
    }

    fn extend_dict(&mut self, dict: Id, pairs: Vec<(Id, Id)>) -> Result<(), PickleError> {
        match self.node_mut(dict)? {
            Node::Dict(v) => {
                v.extend(pairs);
                Ok(())
            }
            other => {
                let kind = other.kind();
                Err(self.invalid(format!("cannot set items of a {kind}")))
            }
        }
    }

    fn global(&mut self, module: &str, name: &str) -> Result<(), PickleError> {
        match self.allow.meaning(module, name) {
            Some(meaning) => {
                self.push(Node::Global(Global {
                    meaning,
                    name: format!("{module}.{name}").into(),
                }));
                Ok(())
            }
            None => Err(PickleError::RefusedGlobal {
                module: module.to_string(),
                name: name.to_string(),
                offset: self.op_pos,
            }),
        }
    }

    /// The items of a tuple of at most `max` items (checked before copying them).
    fn tuple_items(&self, id: Id, what: &str, max: usize) -> Result<Vec<Id>, PickleError> {
        match self.node(id) {
            Node::Tuple(items) if items.len() <= max => Ok(items.clone()),
            Node::Tuple(items) => Err(self.invalid(format!(
                "{what} has {} items, more than the {max} expected",
                items.len()
            ))),
            other => Err(self.invalid(format!("{what} must be a tuple, found a {}", other.kind()))),
        }
    }

    fn int_of(&self, id: Id, what: &str) -> Result<i128, PickleError> {
        match self.node(id) {
            Node::Int(v) => Ok(*v),
            Node::Bool(b) => Ok(i128::from(*b)),
            other => Err(self.invalid(format!("{what} must be an int, found a {}", other.kind()))),
        }
    }

    /// The text of a str (or, as Python 2 era streams carry names, of UTF-8 bytes).
    fn str_ref(&self, id: Id, what: &str) -> Result<&str, PickleError> {
        match self.node(id) {
            Node::Str(s) => Ok(s),
            Node::Bytes(b) => std::str::from_utf8(b)
                .map_err(|_| self.invalid(format!("{what} is not UTF-8 text"))),
            other => Err(self.invalid(format!("{what} must be a str, found a {}", other.kind()))),
        }
    }

    /// A short text (a name, a byte order, an encoding): at most `max` bytes.
    fn short_str(&self, id: Id, what: &str, max: usize) -> Result<String, PickleError> {
        let s = self.str_ref(id, what)?;
        if s.len() > max {
            return Err(self.invalid(format!("{what} is longer than {max} bytes")));
        }
        Ok(s.to_string())
    }

    fn shape_of(&self, id: Id) -> Result<Vec<usize>, PickleError> {
        let dims = self.tuple_items(id, "the shape", MAX_DIMS)?;
        let mut shape = Vec::with_capacity(dims.len());
        for d in dims {
            let v = self.int_of(d, "a dimension")?;
            let v = usize::try_from(v)
                .map_err(|_| self.invalid(format!("dimension {v} is out of range")))?;
            shape.push(v);
        }
        if shape
            .iter()
            .try_fold(1usize, |a, &d| a.checked_mul(d))
            .is_none()
        {
            return Err(self.invalid(format!("shape {shape:?} overflows")));
        }
        Ok(shape)
    }

    fn global_of(&self, id: Id) -> Option<Meaning> {
        match self.node(id) {
            Node::Global(g) => Some(g.meaning),
            _ => None,
        }
    }

    /// The name of the global `id` as the stream spelled it (for messages).
    fn global_name(&self, id: Id) -> &str {
        match self.node(id) {
            Node::Global(g) => &g.name,
            _ => "?",
        }
    }

    fn expect_dtype(&self, id: Id) -> Result<(), PickleError> {
        match self.node(id) {
            Node::Dtype(_) => Ok(()),
            other => Err(self.invalid(format!("expected a numpy dtype, found a {}", other.kind()))),
        }
    }

    /// `callable(*args)` for an allowed global.
    fn reduce(&mut self, callable: Id, args: Id) -> Result<Id, PickleError> {
        let Some(g) = self.global_of(callable) else {
            let kind = self.node(callable).kind();
            return Err(self.invalid(format!(
                "cannot call a {kind}; only allowed globals are called"
            )));
        };
        let args = self.tuple_items(args, "the arguments", 5)?;
        let arg = |i: usize| args.get(i).copied();
        let wrong_args = |vm: &Self| {
            vm.invalid(format!(
                "unexpected arguments ({} of them) for {}",
                args.len(),
                vm.global_name(callable)
            ))
        };
        match g {
            Meaning::Reconstruct => {
                let (Some(class), Some(shape), Some(_), None) = (arg(0), arg(1), arg(2), arg(3))
                else {
                    return Err(wrong_args(self));
                };
                if self.global_of(class) != Some(Meaning::Ndarray) {
                    return Err(self.invalid(format!(
                        "{} is only read for numpy.ndarray",
                        self.global_name(callable)
                    )));
                }
                let shape = self.shape_of(shape)?;
                Ok(self.alloc(Node::Array(ArrayNode {
                    shape,
                    dtype: None,
                    fortran: false,
                    data: None,
                })))
            }
            Meaning::Dtype => {
                let (Some(spec), None) = (arg(0), arg(3)) else {
                    return Err(wrong_args(self));
                };
                let spec = self.short_str(spec, "the dtype string", MAX_DTYPE_SPEC)?;
                if spec.is_empty() {
                    return Err(self.invalid("the dtype string is empty"));
                }
                Ok(self.alloc(Node::Dtype(DtypeNode { spec, state: None })))
            }
            Meaning::Scalar => {
                let (Some(dtype), value, None) = (arg(0), arg(1), arg(2)) else {
                    return Err(wrong_args(self));
                };
                self.expect_dtype(dtype)?;
                let value = match value {
                    Some(v) => v,
                    None => return Err(self.invalid("scalar without a value is not supported")),
                };
                let json =
                    crate::numpy::scalar(&self.arena, dtype, value, self.op_pos, &mut self.work)?;
                Ok(self.alloc(Node::Json(json)))
            }
            Meaning::Frombuffer => {
                let (Some(buf), Some(dtype), Some(shape), Some(order), None) =
                    (arg(0), arg(1), arg(2), arg(3), arg(4))
                else {
                    return Err(wrong_args(self));
                };
                if !matches!(self.node(buf), Node::Bytes(_)) {
                    return Err(self.invalid("_frombuffer needs a bytes buffer"));
                }
                self.expect_dtype(dtype)?;
                let shape = self.shape_of(shape)?;
                let order = self.short_str(order, "the order", 8)?;
                Ok(self.alloc(Node::Array(ArrayNode {
                    shape,
                    dtype: Some(dtype),
                    fortran: order == "F",
                    data: Some(buf),
                })))
            }
            Meaning::CodecsEncode => {
                let (Some(text), encoding, None) = (arg(0), arg(1), arg(2)) else {
                    return Err(wrong_args(self));
                };
                let n = self.str_ref(text, "the text")?.len();
                self.charge(n)?;
                let text = self.str_ref(text, "the text")?.to_string();
                let encoding = match encoding {
                    Some(e) => self.short_str(e, "the encoding", 32)?.to_ascii_lowercase(),
                    None => "utf-8".to_string(),
                };
                let bytes = match encoding.replace('_', "-").as_str() {
                    "latin1" | "latin-1" | "iso-8859-1" | "iso8859-1" => text
                        .chars()
                        .map(|c| u8::try_from(u32::from(c)).ok())
                        .collect::<Option<Vec<u8>>>()
                        .ok_or_else(|| self.invalid("text outside latin-1 for a latin-1 encode"))?,
                    "utf-8" | "utf8" => text.into_bytes(),
                    other => {
                        return Err(self.invalid(format!("encoding {other:?} is not supported")))
                    }
                };
                Ok(self.alloc(Node::Bytes(bytes)))
            }
            Meaning::CopyregReconstructor => {
                let (Some(class), Some(base), Some(state), None) = (arg(0), arg(1), arg(2), arg(3))
                else {
                    return Err(wrong_args(self));
                };
                if !matches!(
                    self.global_of(class),
                    Some(Meaning::DictSubclass | Meaning::Dict | Meaning::Object)
                ) || !matches!(self.global_of(base), Some(Meaning::Dict | Meaning::Object))
                {
                    return Err(self.invalid(format!(
                        "{} is only read for dict, object and allowed dict subclasses (such as \
                         ZarrReference)",
                        self.global_name(callable)
                    )));
                }
                if let Node::Dict(items) = self.node(state) {
                    self.charge(items.len())?;
                }
                let items = match self.node(state) {
                    Node::None => Vec::new(),
                    Node::Dict(items) => items.clone(),
                    other => {
                        return Err(self.invalid(format!(
                            "copyreg._reconstructor state must be a dict or None, found a {}",
                            other.kind()
                        )))
                    }
                };
                Ok(self.alloc(Node::Dict(items)))
            }
            Meaning::Dict | Meaning::Object => {
                if let Some(Node::Dict(items)) = arg(0).map(|d| self.node(d)) {
                    self.charge(items.len())?;
                }
                let items = match (arg(0), arg(1)) {
                    (None, _) => Vec::new(),
                    (Some(d), None) if g == Meaning::Dict => match self.node(d) {
                        Node::Dict(items) => items.clone(),
                        _ => return Err(wrong_args(self)),
                    },
                    _ => return Err(wrong_args(self)),
                };
                Ok(self.alloc(Node::Dict(items)))
            }
            Meaning::Ndarray | Meaning::DictSubclass => Err(self.invalid(format!(
                "calling {} directly is not supported",
                self.global_name(callable)
            ))),
        }
    }

    /// `cls.__new__(cls, *args)` (NEWOBJ / NEWOBJ_EX).
    fn new_object(&mut self, class: Id, args: Id) -> Result<Id, PickleError> {
        if !matches!(self.node(args), Node::Tuple(_)) {
            let kind = self.node(args).kind();
            return Err(self.invalid(format!("the arguments must be a tuple, found a {kind}")));
        }
        match self.global_of(class) {
            Some(Meaning::DictSubclass | Meaning::Dict | Meaning::Object) => {
                Ok(self.alloc(Node::Dict(Vec::new())))
            }
            Some(_) => Err(self.invalid(format!(
                "creating {} with NEWOBJ is not supported",
                self.global_name(class)
            ))),
            None => {
                let kind = self.node(class).kind();
                Err(self.invalid(format!("NEWOBJ needs a class, found a {kind}")))
            }
        }
    }

    /// `obj.__setstate__(state)` for dtypes, arrays and dict-like instances.
    fn build(&mut self, target: Id, state: Id) -> Result<(), PickleError> {
        // Take the target out of the arena while its state is read (no copy of it is made).
        let taken = std::mem::replace(self.node_mut(target)?, Node::None);
        let built = match taken {
            Node::Dtype(mut dtype) => {
                dtype.state = Some(self.dtype_state(state)?);
                Node::Dtype(dtype)
            }
            Node::Array(array) => Node::Array(self.array_state(array, state)?),
            Node::Dict(mut items) => {
                // An instance's attribute dict, or (dict state, slot state).
                let parts = match self.node(state) {
                    Node::Tuple(parts) if parts.len() == 2 => parts.clone(),
                    _ => vec![state],
                };
                for part in parts {
                    match self.node(part) {
                        Node::None => {}
                        Node::Dict(extra) => {
                            let extra = extra.clone();
                            self.charge(extra.len())?;
                            items.extend(extra);
                        }
                        other => {
                            return Err(self.invalid(format!(
                                "the state of a dict-like object must be a dict, found a {}",
                                other.kind()
                            )))
                        }
                    }
                }
                Node::Dict(items)
            }
            other => {
                return Err(self.invalid(format!(
                    "BUILD (setting the state) of a {} is not supported",
                    other.kind()
                )))
            }
        };
        *self.node_mut(target)? = built;
        Ok(())
    }

    fn dtype_state(&mut self, state: Id) -> Result<DtypeState, PickleError> {
        let items = self.tuple_items(state, "a dtype state", 9)?;
        if !(items.len() == 8 || items.len() == 9) {
            return Err(self.invalid(format!(
                "a dtype state of {} items is not supported (expected version 3 or 4 with 8 \
                 or 9 items)",
                items.len()
            )));
        }
        let version = self.int_of(items[0], "the dtype state version")?;
        if !(version == 3 || version == 4) {
            return Err(self.invalid(format!("dtype state version {version} is not supported")));
        }
        let endian = match self.str_ref(items[1], "the byte order")? {
            "<" => '<',
            ">" => '>',
            "|" => '|',
            "=" => '=',
            other => {
                let other = other.chars().take(8).collect::<String>();
                return Err(self.invalid(format!("byte order {other:?} is not valid")));
            }
        };
        if !matches!(self.node(items[2]), Node::None) {
            return Err(self.invalid("sub-array dtypes are not supported"));
        }
        let names = match self.node(items[3]) {
            Node::None => None,
            Node::Tuple(names) if names.len() <= MAX_FIELDS => Some(names.clone()),
            Node::Tuple(names) => {
                return Err(PickleError::Limit(format!(
                    "a dtype at byte {} has {} fields, more than {MAX_FIELDS}",
                    self.op_pos,
                    names.len()
                )))
            }
            other => {
                return Err(self.invalid(format!(
                    "dtype field names must be a tuple, found a {}",
                    other.kind()
                )))
            }
        };
        let Some(names) = names else {
            return Ok(DtypeState {
                endian,
                fields: None,
            });
        };
        let pairs = match self.node(items[4]) {
            Node::Dict(pairs) if pairs.len() <= MAX_FIELDS => pairs.clone(),
            Node::Dict(_) => {
                return Err(self.invalid(format!("more than {MAX_FIELDS} dtype fields")));
            }
            other => {
                return Err(self.invalid(format!(
                    "dtype fields must be a dict, found a {}",
                    other.kind()
                )))
            }
        };
        self.charge(names.len() + pairs.len())?;
        let mut by_name: HashMap<&str, (Id, usize)> = HashMap::with_capacity(pairs.len());
        for &(key, value) in &pairs {
            let name = self.str_ref(key, "a field name")?;
            let parts = self.tuple_items(value, "a field", 3)?;
            let (Some(&dtype), Some(&offset)) = (parts.first(), parts.get(1)) else {
                return Err(self.invalid("a field must be (dtype, offset)"));
            };
            self.expect_dtype(dtype)?;
            let offset = self.int_of(offset, "a field offset")?;
            let offset = usize::try_from(offset)
                .map_err(|_| self.invalid(format!("field offset {offset} is invalid")))?;
            by_name.insert(name, (dtype, offset));
        }
        let mut fields = Vec::with_capacity(names.len());
        for &name in &names {
            let name = self.str_ref(name, "a field name")?;
            let &(dtype, offset) = by_name.get(name).ok_or_else(|| {
                self.invalid(format!("field {name:?} has no entry in the fields dict"))
            })?;
            fields.push((name.to_string(), dtype, offset));
        }
        Ok(DtypeState {
            endian,
            fields: Some(fields),
        })
    }

    fn array_state(&self, mut array: ArrayNode, state: Id) -> Result<ArrayNode, PickleError> {
        let items = self.tuple_items(state, "an array state", 5)?;
        let rest = match items.len() {
            5 => {
                let version = self.int_of(items[0], "the array state version")?;
                if version != 1 {
                    return Err(
                        self.invalid(format!("array state version {version} is not supported"))
                    );
                }
                &items[1..]
            }
            4 => &items[..],
            n => {
                return Err(self.invalid(format!(
                    "an array state of {n} items is not supported (expected 4 or 5)"
                )))
            }
        };
        array.shape = self.shape_of(rest[0])?;
        self.expect_dtype(rest[1])?;
        array.dtype = Some(rest[1]);
        array.fortran = self.int_of(rest[2], "the Fortran flag")? != 0;
        match self.node(rest[3]) {
            Node::List(_) | Node::Bytes(_) => {}
            Node::Str(_) => {
                return Err(self.invalid(
                    "array data given as str (a Python 2 pickle read without latin-1) is not \
                     supported",
                ))
            }
            other => {
                return Err(self.invalid(format!(
                    "array data must be a list or bytes, found a {}",
                    other.kind()
                )))
            }
        }
        array.data = Some(rest[3]);
        Ok(array)
    }
}

/// A Python int from little-endian two's complement bytes (LONG1 / LONG4).
fn long_from_le(bytes: &[u8]) -> Node {
    if bytes.is_empty() {
        return Node::Int(0);
    }
    let negative = bytes.last().is_some_and(|&b| b & 0x80 != 0);
    let fill = if negative { 0xff } else { 0x00 };
    // Redundant sign bytes beyond 16 do not change the value.
    let significant = bytes.iter().rposition(|&b| b != fill).map_or(0, |i| i + 1);
    let needed = if significant == 0 {
        1
    } else {
        // Keep one sign byte when the top significant byte has the wrong sign bit.
        let top = bytes[significant - 1];
        if (top & 0x80 != 0) == negative {
            significant
        } else {
            significant + 1
        }
    };
    if needed > 16 {
        return Node::BigInt;
    }
    let mut buf = [fill; 16];
    let n = bytes.len().min(16);
    buf[..n].copy_from_slice(&bytes[..n]);
    Node::Int(i128::from_le_bytes(buf))
}

/// Decode Python's `raw-unicode-escape` (protocol 0 `UNICODE`): bytes are Latin-1 code
/// points except `\uXXXX` and `\UXXXXXXXX` escapes.
fn raw_unicode_escape(bytes: &[u8]) -> Option<String> {
    let mut out = String::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let b = bytes[i];
        if b == b'\\' {
            let width = match bytes.get(i + 1) {
                Some(b'u') => 4,
                Some(b'U') => 8,
                _ => 0,
            };
            if width > 0 {
                let hex = bytes.get(i + 2..i + 2 + width)?;
                let hex = std::str::from_utf8(hex).ok()?;
                let code = u32::from_str_radix(hex, 16).ok()?;
                out.push(char::from_u32(code)?);
                i += 2 + width;
                continue;
            }
        }
        out.push(char::from(b));
        i += 1;
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn longs_decode_as_python_does() {
        let int = |b: &[u8]| match long_from_le(b) {
            Node::Int(v) => Some(v),
            _ => None,
        };
        assert_eq!(int(&[]), Some(0));
        assert_eq!(int(&[0xff]), Some(-1));
        assert_eq!(int(&[0x80]), Some(-128));
        assert_eq!(int(&[0xff, 0x00]), Some(255));
        // 2**64 - 1 and -2**63
        assert_eq!(
            int(&[0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x00]),
            Some(i128::from(u64::MAX))
        );
        assert_eq!(
            int(&[0, 0, 0, 0, 0, 0, 0, 0x80]),
            Some(i128::from(i64::MIN))
        );
        // Redundant sign bytes are fine; 17 significant bytes are not.
        let mut long = vec![1u8];
        long.extend([0u8; 20]);
        assert_eq!(int(&long), Some(1));
        let mut big = vec![0u8; 16];
        big.push(1);
        assert!(matches!(long_from_le(&big), Node::BigInt));
    }

    #[test]
    fn raw_unicode_escape_decodes_escapes_and_latin1() {
        assert_eq!(
            raw_unicode_escape(b"a\\u00e9\\U0001f980\xe9").as_deref(),
            Some("aé🦀é")
        );
        assert_eq!(
            raw_unicode_escape(b"back\\slash").as_deref(),
            Some("back\\slash")
        );
        assert_eq!(raw_unicode_escape(b"\\u12"), None);
        assert_eq!(raw_unicode_escape(b"\\UFFFFFFFF"), None);
    }
}
