//! The allow-list: which globals a stream may name and what each one means to the interpreter.

use std::collections::BTreeMap;

/// What an allowed global means to the interpreter.
///
/// Nothing is ever imported or called. When a `GLOBAL` / `STACK_GLOBAL` opcode names a global
/// on the list, the reader pushes a marker carrying its meaning. `REDUCE`, `NEWOBJ` and `BUILD`
/// on that marker then run the reader's own built-in version of it, which makes only plain
/// values, NumPy dtypes and array descriptions. The allow-list chooses which names reach which
/// of these behaviours; it cannot add new behaviour.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[non_exhaustive]
pub enum Meaning {
    /// `numpy.core.multiarray._reconstruct(ndarray, shape, typecode)`: an empty array that a
    /// following `BUILD` fills in (shape, dtype, Fortran flag, data). Its first argument must
    /// be a global with the meaning [`Meaning::Ndarray`].
    Reconstruct,
    /// `numpy.core.multiarray.scalar(dtype, raw)`: a NumPy scalar decoded from its raw bytes.
    Scalar,
    /// The class `numpy.ndarray`, accepted only as the first argument of
    /// [`Meaning::Reconstruct`].
    Ndarray,
    /// `numpy.dtype(spec, align, copy)`: a dtype, whose byte order and fields a following
    /// `BUILD` sets.
    Dtype,
    /// `numpy.core.numeric._frombuffer(buffer, dtype, shape, order)`: a numeric array from
    /// raw bytes (how protocol 5 pickles numeric arrays).
    Frombuffer,
    /// `_codecs.encode(text, encoding)` for latin-1 and UTF-8: how protocols 0–2 write Python 3
    /// `bytes`, NumPy's own array pickles included.
    CodecsEncode,
    /// `copyreg._reconstructor(class, base, state)`: an instance of a [`Meaning::Dict`],
    /// [`Meaning::Object`] or [`Meaning::DictSubclass`] class over a `dict` or `object` base,
    /// read as its state (how protocols 0–1 write such instances).
    CopyregReconstructor,
    /// The class `object`: `object()`, or a class for `NEWOBJ` and
    /// [`Meaning::CopyregReconstructor`]; its instances read as their attribute dict.
    Object,
    /// The class `dict`: `dict()` and `dict(mapping)`, or a class for `NEWOBJ` and
    /// [`Meaning::CopyregReconstructor`].
    Dict,
    /// A `dict` subclass whose instances read as their items, in insertion order (hdmf-zarr's
    /// `ZarrReference`). Created with `NEWOBJ` or [`Meaning::CopyregReconstructor`] and filled
    /// by `SETITEMS` / `BUILD`; never called.
    DictSubclass,
}

/// NumPy's array, dtype and scalar reconstructors, in both the `numpy.core` (NumPy 1.x) and the
/// `numpy._core` (NumPy 2.x) spelling, and `_codecs.encode`, which their protocol 0–2 pickles
/// use for bytes.
const NUMPY: &[(&str, &str, Meaning)] = &[
    (
        "numpy.core.multiarray",
        "_reconstruct",
        Meaning::Reconstruct,
    ),
    (
        "numpy._core.multiarray",
        "_reconstruct",
        Meaning::Reconstruct,
    ),
    ("numpy.core.multiarray", "scalar", Meaning::Scalar),
    ("numpy._core.multiarray", "scalar", Meaning::Scalar),
    ("numpy.core.numeric", "_frombuffer", Meaning::Frombuffer),
    ("numpy._core.numeric", "_frombuffer", Meaning::Frombuffer),
    ("numpy", "ndarray", Meaning::Ndarray),
    ("numpy", "dtype", Meaning::Dtype),
    ("_codecs", "encode", Meaning::CodecsEncode),
];

/// hdmf-zarr's `ZarrReference` (a `dict` subclass) and what protocols 0–1 write its instances
/// with (Python 3 and Python 2 module names).
const HDMF_ZARR: &[(&str, &str, Meaning)] = &[
    ("hdmf_zarr.utils", "ZarrReference", Meaning::DictSubclass),
    ("copyreg", "_reconstructor", Meaning::CopyregReconstructor),
    ("copy_reg", "_reconstructor", Meaning::CopyregReconstructor),
    ("builtins", "object", Meaning::Object),
    ("__builtin__", "object", Meaning::Object),
    ("builtins", "dict", Meaning::Dict),
    ("__builtin__", "dict", Meaning::Dict),
];

/// The globals (`module`, `name`) a pickle may name, each with its [`Meaning`]. Any other
/// global is refused with [`PickleError::RefusedGlobal`](crate::PickleError::RefusedGlobal)
/// when the stream names it, before anything could use it.
///
/// Names are matched exactly, as the stream spells them: NumPy 1.x and 2.x spell their module
/// differently, and both spellings are separate entries.
///
/// ```
/// use neurochunk_pickle::{AllowList, Meaning};
///
/// // NumPy arrays plus instances of a dict subclass of one's own.
/// let list = AllowList::numpy()
///     .allow("copyreg", "_reconstructor", Meaning::CopyregReconstructor)
///     .allow("builtins", "dict", Meaning::Dict)
///     .allow("mypackage.refs", "Ref", Meaning::DictSubclass);
/// assert_eq!(list.meaning("mypackage.refs", "Ref"), Some(Meaning::DictSubclass));
///
/// // hdmf-zarr's list without its references.
/// let narrower = AllowList::hdmf_zarr().deny("hdmf_zarr.utils", "ZarrReference");
/// assert_eq!(narrower.meaning("hdmf_zarr.utils", "ZarrReference"), None);
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct AllowList {
    /// module → name → meaning.
    globals: BTreeMap<String, BTreeMap<String, Meaning>>,
}

impl AllowList {
    /// An empty list: every global is refused. Streams of plain Python values (`None`, bools,
    /// numbers, `str`, `bytes` in protocol 3 and later, lists, tuples, dicts) still read.
    pub fn new() -> AllowList {
        AllowList::default()
    }

    /// NumPy arrays, dtypes and scalars only: `_reconstruct`, `scalar` and `_frombuffer`
    /// (`numpy.core` and `numpy._core` spellings), `numpy.ndarray`, `numpy.dtype` and
    /// `_codecs.encode` (bytes in protocols 0–2). Object arrays of plain Python values read
    /// under this list; instances of classes do not.
    pub fn numpy() -> AllowList {
        AllowList::new().allow_all(NUMPY)
    }

    /// [`AllowList::numpy`] plus hdmf-zarr's `hdmf_zarr.utils.ZarrReference` (read as a dict)
    /// and what protocols 0–1 write its instances with: `copyreg._reconstructor`,
    /// `builtins.dict` and `builtins.object` (also as `copy_reg` / `__builtin__`). This is the
    /// list for the object arrays in NWB files written by hdmf-zarr.
    pub fn hdmf_zarr() -> AllowList {
        AllowList::numpy().allow_all(HDMF_ZARR)
    }

    fn allow_all(mut self, entries: &[(&str, &str, Meaning)]) -> AllowList {
        for &(module, name, meaning) in entries {
            self.insert(module, name, meaning);
        }
        self
    }

    /// This list with `module.name` allowed as `meaning` (replacing its meaning if it was
    /// already listed).
    pub fn allow(
        mut self,
        module: impl Into<String>,
        name: impl Into<String>,
        meaning: Meaning,
    ) -> AllowList {
        self.insert(module, name, meaning);
        self
    }

    /// This list without `module.name`.
    pub fn deny(mut self, module: &str, name: &str) -> AllowList {
        self.remove(module, name);
        self
    }

    /// Allow `module.name` as `meaning`; returns the meaning it had before, if it was listed.
    pub fn insert(
        &mut self,
        module: impl Into<String>,
        name: impl Into<String>,
        meaning: Meaning,
    ) -> Option<Meaning> {
        self.globals
            .entry(module.into())
            .or_default()
            .insert(name.into(), meaning)
    }

    /// Take `module.name` off the list; returns the meaning it had, if it was listed.
    pub fn remove(&mut self, module: &str, name: &str) -> Option<Meaning> {
        let names = self.globals.get_mut(module)?;
        let removed = names.remove(name);
        if names.is_empty() {
            self.globals.remove(module);
        }
        removed
    }

    /// The meaning of `module.name`, or `None` when it is not allowed.
    pub fn meaning(&self, module: &str, name: &str) -> Option<Meaning> {
        self.globals.get(module)?.get(name).copied()
    }

    /// Every allowed global as (module, name, meaning), sorted by module and name.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &str, Meaning)> + '_ {
        self.globals.iter().flat_map(|(module, names)| {
            names
                .iter()
                .map(move |(name, &meaning)| (module.as_str(), name.as_str(), meaning))
        })
    }

    /// How many globals are allowed.
    pub fn len(&self) -> usize {
        self.globals.values().map(BTreeMap::len).sum()
    }

    /// Whether no global is allowed.
    pub fn is_empty(&self) -> bool {
        self.globals.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_lists_nest_and_edit() {
        let numpy = AllowList::numpy();
        let hdmf = AllowList::hdmf_zarr();
        assert_eq!(numpy.len(), NUMPY.len());
        assert_eq!(hdmf.len(), NUMPY.len() + HDMF_ZARR.len());
        assert!(numpy.iter().all(|(m, n, g)| hdmf.meaning(m, n) == Some(g)));
        assert_eq!(numpy.meaning("hdmf_zarr.utils", "ZarrReference"), None);
        assert_eq!(
            numpy.meaning("numpy._core.multiarray", "_reconstruct"),
            Some(Meaning::Reconstruct)
        );
        assert_eq!(numpy.meaning("numpy", "load"), None);

        let mut edited = hdmf.clone();
        assert_eq!(
            edited.remove("hdmf_zarr.utils", "ZarrReference"),
            Some(Meaning::DictSubclass)
        );
        assert_eq!(edited.remove("hdmf_zarr.utils", "ZarrReference"), None);
        assert!(!edited.iter().any(|(m, _, _)| m == "hdmf_zarr.utils"));
        assert_eq!(
            edited.insert("numpy", "dtype", Meaning::Dtype),
            Some(Meaning::Dtype)
        );
        assert_eq!(edited.len(), hdmf.len() - 1);
        assert_eq!(
            edited.allow("hdmf_zarr.utils", "ZarrReference", Meaning::DictSubclass),
            hdmf
        );
        let empty = NUMPY.iter().fold(numpy, |list, &(m, n, _)| list.deny(m, n));
        assert!(empty.is_empty());
        assert_eq!(empty, AllowList::new());
    }
}
