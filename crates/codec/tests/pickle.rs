//! The restricted pickle reader, the writer and the numcodecs `pickle` codec against real
//! pickles made by CPython / NumPy / hdmf-zarr, hostile streams, and NumPy-checked writer output.
//!
//! The base64 fixtures below were generated once with `.peers/py311/bin/python` (CPython 3.11,
//! NumPy 2.4.6, hdmf-zarr 0.13.0, zarr 2.18.7) by this script; `NUMPY1_REFS_P2` is `REFS_P2`
//! with `numpy._core.multiarray` replaced by `numpy.core.multiarray` (a NumPy 1.x stream):
//!
//! ```python
//! import base64, os, pickle, subprocess
//! import numpy as np
//! from hdmf_zarr.utils import ZarrReference
//! def ref(path, oid='oid-1'):
//!     return ZarrReference(source='.', path=path, object_id=oid, source_object_id='root-0')
//! def obj(items, shape=None):
//!     a = np.empty(len(items), dtype=object)
//!     for i, x in enumerate(items): a[i] = x
//!     return a if shape is None else a.reshape(shape)
//! r1 = ref('/acquisition/ts1')
//! r2 = ZarrReference(source='.', path='/processing/x', object_id=None, source_object_id=None)
//! REFS_P{p} = pickle.dumps(obj([r1, r2, r1]), protocol=p)            # p = 0..5
//! DICTS_P{2,5}: obj([{'a': 1, 'b': [1, 2.5, 'x'], 'c': None, 'd': True, 'e': {'nested': 'é'},
//!     'big': 2**63 + 5, 'neg': -2**40, 'nan': float('nan'), 'inf': float('-inf'),
//!     'bytes': b'raw', 'tup': (1, 'two')}, {}])
//! cdt = np.dtype([('idx_start', '<i4'), ('count', '<i4'), ('timeseries', 'O')])
//! COMPOUND_P{2,5}: np.array([(0, 5, ref('/acquisition/ts1')),
//!     (5, 3, ref('/acquisition/ts2', 'oid-2'))], dtype=cdt)
//! LISTS_P5: obj([[0, 5, ref('/acquisition/ts1')], [5, 3, ref('/acquisition/ts2', 'oid-2')]])
//! vdt = np.dtype([('name', '<U8'), ('value', '>f8'), ('id', '<i2'), ('raw', 'S4'), ('flag', '?')])
//! vs = np.array([('électrode', 1.5, -3, b'ab', True), ('x', -0.25, 7, b'wxyz', False)], vdt)
//! VOIDS_P{2,5}: obj([vs[0], vs[1]])
//! FORTRAN_P5: np.asfortranarray(obj(['r0c0', 'r0c1', 'r0c2', 'r1c0', 'r1c1', 'r1c2'], (2, 3)))
//! MIXED_P{2,4}: obj(['plain', 'é🦀', '', 'L' * 300, 0, -1, 255, 65535, 2**31, 2**64 - 1,
//!     -2**63, 1.5, float('nan'), float('-inf'), True, None, b'bytes', np.float64(2.5),
//!     np.int16(-7)])
//! ZERO_D_P5: np.array('only', dtype=object)
//! NESTED_P{2,5}: obj([np.arange(3, dtype='<i2'), np.array([[1.5, 2.0]], dtype='>f4')])
//! NUMERIC_P5: np.array([[1, 2], [3, 4]], dtype='<u2')
//! EVIL_SYSTEM_P2 / EVIL_EVAL_P5 / EVIL_POPEN_P4: obj([X()]) where X.__reduce__ returns
//!     (os.system, ('echo pwned',)) / (eval, ('1+1',)) / (subprocess.Popen, (['echo', 'pwned'],))
//! ```
//!
//! The `ZARR_*` chunks are files zarr-python 2.18 wrote for datasets created the way hdmf-zarr
//! creates them (`require_dataset(..., object_codec=numcodecs.Pickle())`, default blosc), with
//! `NUMCODECS_ALLOW_UNSAFE_PICKLE_DECODE=1`:
//!
//! ```python
//! d = g.require_dataset('refs', shape=(3,), chunks=(2,), dtype=object, object_codec=Pickle())
//! d[:] = np.array([ref('/a', 'o1'), ref('/b', 'o2'), ref('/c', 'o3')])
//! c = g.require_dataset('comp', shape=(2,), dtype=cdt, object_codec=Pickle())
//! c[...] = np.array([(0, 5, ref('/a', 'o1')), (5, 3, ref('/b', 'o2'))], dtype=cdt)
//! ```
//! (with `ref(p, o) = ZarrReference(source='.', path=p, object_id=o, source_object_id='root-0')`).

mod pickle_cases;

use base64::Engine;
use neurochunk_codec::pickle::{
    decode_object_array, decode_value, encode_object_array, PickleError, RecordField, RecordKind,
};
use neurochunk_codec::{AnyCodec, ArrayBytes, ChunkRepr, CodecChain, CodecError, CodecRegistry};
use neurochunk_dtype::DataType;
use pickle_cases::{
    golden_cases, nan, neg_inf, pickle_chain, record_fields, repr, variable, writer_cases, zref,
};
use serde_json::{json, Value};

const REFS_P0: &str = concat!(
    "Y251bXB5Ll9jb3JlLm11bHRpYXJyYXkKX3JlY29uc3RydWN0CnAwCihjbnVtcHkKbmRhcnJheQpwMQooSTAKdHAy",
    "CmNfY29kZWNzCmVuY29kZQpwMwooVmIKcDQKVmxhdGluMQpwNQp0cDYKUnA3CnRwOApScDkKKEkxCihJMwp0cDEw",
    "CmNudW1weQpkdHlwZQpwMTEKKFZPOApwMTIKSTAwCkkwMQp0cDEzClJwMTQKKEkzClZ8CnAxNQpOTk5JLTEKSS0x",
    "Ckk2Mwp0cDE2CmJJMDAKKGxwMTcKY2NvcHlfcmVnCl9yZWNvbnN0cnVjdG9yCnAxOAooY2hkbWZfemFyci51dGls",
    "cwpaYXJyUmVmZXJlbmNlCnAxOQpjX19idWlsdGluX18KZGljdApwMjAKKGRwMjEKVnNvdXJjZQpwMjIKVi4KcDIz",
    "CnNWcGF0aApwMjQKVi9hY3F1aXNpdGlvbi90czEKcDI1CnNWb2JqZWN0X2lkCnAyNgpWb2lkLTEKcDI3CnNWc291",
    "cmNlX29iamVjdF9pZApwMjgKVnJvb3QtMApwMjkKc3RwMzAKUnAzMQphZzE4CihnMTkKZzIwCihkcDMyCmcyMgpn",
    "MjMKc2cyNApWL3Byb2Nlc3NpbmcveApwMzMKc2cyNgpOc2cyOApOc3RwMzQKUnAzNQphZzMxCmF0cDM2CmIu",
);
const REFS_P1: &str = concat!(
    "Y251bXB5Ll9jb3JlLm11bHRpYXJyYXkKX3JlY29uc3RydWN0CnEAKGNudW1weQpuZGFycmF5CnEBKEsAdHECY19j",
    "b2RlY3MKZW5jb2RlCnEDKFgBAAAAYnEEWAYAAABsYXRpbjFxBXRxBlJxB3RxCFJxCShLAShLA3RxCmNudW1weQpk",
    "dHlwZQpxCyhYAgAAAE84cQxJMDAKSTAxCnRxDVJxDihLA1gBAAAAfHEPTk5OSv////9K/////0s/dHEQYkkwMApd",
    "cREoY2NvcHlfcmVnCl9yZWNvbnN0cnVjdG9yCnESKGNoZG1mX3phcnIudXRpbHMKWmFyclJlZmVyZW5jZQpxE2Nf",
    "X2J1aWx0aW5fXwpkaWN0CnEUfXEVKFgGAAAAc291cmNlcRZYAQAAAC5xF1gEAAAAcGF0aHEYWBAAAAAvYWNxdWlz",
    "aXRpb24vdHMxcRlYCQAAAG9iamVjdF9pZHEaWAUAAABvaWQtMXEbWBAAAABzb3VyY2Vfb2JqZWN0X2lkcRxYBgAA",
    "AHJvb3QtMHEddXRxHlJxH2gSKGgTaBR9cSAoaBZoF2gYWA0AAAAvcHJvY2Vzc2luZy94cSFoGk5oHE51dHEiUnEj",
    "aB9ldHEkYi4=",
);
const REFS_P2: &str = concat!(
    "gAJjbnVtcHkuX2NvcmUubXVsdGlhcnJheQpfcmVjb25zdHJ1Y3QKcQBjbnVtcHkKbmRhcnJheQpxAUsAhXECY19j",
    "b2RlY3MKZW5jb2RlCnEDWAEAAABicQRYBgAAAGxhdGluMXEFhnEGUnEHh3EIUnEJKEsBSwOFcQpjbnVtcHkKZHR5",
    "cGUKcQtYAgAAAE84cQyJiIdxDVJxDihLA1gBAAAAfHEPTk5OSv////9K/////0s/dHEQYoldcREoY2hkbWZfemFy",
    "ci51dGlscwpaYXJyUmVmZXJlbmNlCnESKYFxEyhYBgAAAHNvdXJjZXEUWAEAAAAucRVYBAAAAHBhdGhxFlgQAAAA",
    "L2FjcXVpc2l0aW9uL3RzMXEXWAkAAABvYmplY3RfaWRxGFgFAAAAb2lkLTFxGVgQAAAAc291cmNlX29iamVjdF9p",
    "ZHEaWAYAAAByb290LTBxG3VoEimBcRwoaBRoFWgWWA0AAAAvcHJvY2Vzc2luZy94cR1oGE5oGk51aBNldHEeYi4=",
);
const REFS_P3: &str = concat!(
    "gANjbnVtcHkuX2NvcmUubXVsdGlhcnJheQpfcmVjb25zdHJ1Y3QKcQBjbnVtcHkKbmRhcnJheQpxAUsAhXECQwFi",
    "cQOHcQRScQUoSwFLA4VxBmNudW1weQpkdHlwZQpxB1gCAAAATzhxCImIh3EJUnEKKEsDWAEAAAB8cQtOTk5K////",
    "/0r/////Sz90cQxiiV1xDShjaGRtZl96YXJyLnV0aWxzClphcnJSZWZlcmVuY2UKcQ4pgXEPKFgGAAAAc291cmNl",
    "cRBYAQAAAC5xEVgEAAAAcGF0aHESWBAAAAAvYWNxdWlzaXRpb24vdHMxcRNYCQAAAG9iamVjdF9pZHEUWAUAAABv",
    "aWQtMXEVWBAAAABzb3VyY2Vfb2JqZWN0X2lkcRZYBgAAAHJvb3QtMHEXdWgOKYFxGChoEGgRaBJYDQAAAC9wcm9j",
    "ZXNzaW5nL3hxGWgUTmgWTnVoD2V0cRpiLg==",
);
const REFS_P4: &str = concat!(
    "gASVLwEAAAAAAACMFm51bXB5Ll9jb3JlLm11bHRpYXJyYXmUjAxfcmVjb25zdHJ1Y3SUk5SMBW51bXB5lIwHbmRh",
    "cnJheZSTlEsAhZRDAWKUh5RSlChLAUsDhZRoA4wFZHR5cGWUk5SMAk84lImIh5RSlChLA4wBfJROTk5K/////0r/",
    "////Sz90lGKJXZQojA9oZG1mX3phcnIudXRpbHOUjA1aYXJyUmVmZXJlbmNllJOUKYGUKIwGc291cmNllIwBLpSM",
    "BHBhdGiUjBAvYWNxdWlzaXRpb24vdHMxlIwJb2JqZWN0X2lklIwFb2lkLTGUjBBzb3VyY2Vfb2JqZWN0X2lklIwG",
    "cm9vdC0wlHVoFSmBlChoF2gYaBmMDS9wcm9jZXNzaW5nL3iUaBtOaB1OdWgWZXSUYi4=",
);
const REFS_P5: &str = concat!(
    "gAWVLwEAAAAAAACMFm51bXB5Ll9jb3JlLm11bHRpYXJyYXmUjAxfcmVjb25zdHJ1Y3SUk5SMBW51bXB5lIwHbmRh",
    "cnJheZSTlEsAhZRDAWKUh5RSlChLAUsDhZRoA4wFZHR5cGWUk5SMAk84lImIh5RSlChLA4wBfJROTk5K/////0r/",
    "////Sz90lGKJXZQojA9oZG1mX3phcnIudXRpbHOUjA1aYXJyUmVmZXJlbmNllJOUKYGUKIwGc291cmNllIwBLpSM",
    "BHBhdGiUjBAvYWNxdWlzaXRpb24vdHMxlIwJb2JqZWN0X2lklIwFb2lkLTGUjBBzb3VyY2Vfb2JqZWN0X2lklIwG",
    "cm9vdC0wlHVoFSmBlChoF2gYaBmMDS9wcm9jZXNzaW5nL3iUaBtOaB1OdWgWZXSUYi4=",
);
const NUMPY1_REFS_P2: &str = concat!(
    "gAJjbnVtcHkuY29yZS5tdWx0aWFycmF5Cl9yZWNvbnN0cnVjdApxAGNudW1weQpuZGFycmF5CnEBSwCFcQJjX2Nv",
    "ZGVjcwplbmNvZGUKcQNYAQAAAGJxBFgGAAAAbGF0aW4xcQWGcQZScQeHcQhScQkoSwFLA4VxCmNudW1weQpkdHlw",
    "ZQpxC1gCAAAATzhxDImIh3ENUnEOKEsDWAEAAAB8cQ9OTk5K/////0r/////Sz90cRBiiV1xEShjaGRtZl96YXJy",
    "LnV0aWxzClphcnJSZWZlcmVuY2UKcRIpgXETKFgGAAAAc291cmNlcRRYAQAAAC5xFVgEAAAAcGF0aHEWWBAAAAAv",
    "YWNxdWlzaXRpb24vdHMxcRdYCQAAAG9iamVjdF9pZHEYWAUAAABvaWQtMXEZWBAAAABzb3VyY2Vfb2JqZWN0X2lk",
    "cRpYBgAAAHJvb3QtMHEbdWgSKYFxHChoFGgVaBZYDQAAAC9wcm9jZXNzaW5nL3hxHWgYTmgaTnVoE2V0cR5iLg==",
);
const DICTS_P2: &str = concat!(
    "gAJjbnVtcHkuX2NvcmUubXVsdGlhcnJheQpfcmVjb25zdHJ1Y3QKcQBjbnVtcHkKbmRhcnJheQpxAUsAhXECY19j",
    "b2RlY3MKZW5jb2RlCnEDWAEAAABicQRYBgAAAGxhdGluMXEFhnEGUnEHh3EIUnEJKEsBSwKFcQpjbnVtcHkKZHR5",
    "cGUKcQtYAgAAAE84cQyJiIdxDVJxDihLA1gBAAAAfHEPTk5OSv////9K/////0s/dHEQYoldcREofXESKFgBAAAA",
    "YXETSwFYAQAAAGJxFF1xFShLAUdABAAAAAAAAFgBAAAAeHEWZVgBAAAAY3EXTlgBAAAAZHEYiFgBAAAAZXEZfXEa",
    "WAYAAABuZXN0ZWRxG1gCAAAAw6lxHHNYAwAAAGJpZ3EdigkFAAAAAAAAgABYAwAAAG5lZ3EeigYAAAAAAP9YAwAA",
    "AG5hbnEfR3/4AAAAAAAAWAMAAABpbmZxIEf/8AAAAAAAAFgFAAAAYnl0ZXNxIWgDWAMAAAByYXdxImgFhnEjUnEk",
    "WAMAAAB0dXBxJUsBWAMAAAB0d29xJoZxJ3V9cShldHEpYi4=",
);
const DICTS_P5: &str = concat!(
    "gAWVJwEAAAAAAACMFm51bXB5Ll9jb3JlLm11bHRpYXJyYXmUjAxfcmVjb25zdHJ1Y3SUk5SMBW51bXB5lIwHbmRh",
    "cnJheZSTlEsAhZRDAWKUh5RSlChLAUsChZRoA4wFZHR5cGWUk5SMAk84lImIh5RSlChLA4wBfJROTk5K/////0r/",
    "////Sz90lGKJXZQofZQojAFhlEsBjAFilF2UKEsBR0AEAAAAAAAAjAF4lGWMAWOUTowBZJSIjAFllH2UjAZuZXN0",
    "ZWSUjALDqZRzjANiaWeUigkFAAAAAAAAgACMA25lZ5SKBgAAAAAA/4wDbmFulEd/+AAAAAAAAIwDaW5mlEf/8AAA",
    "AAAAAIwFYnl0ZXOUQwNyYXeUjAN0dXCUSwGMA3R3b5SGlHV9lGV0lGIu",
);
const COMPOUND_P2: &str = concat!(
    "gAJjbnVtcHkuX2NvcmUubXVsdGlhcnJheQpfcmVjb25zdHJ1Y3QKcQBjbnVtcHkKbmRhcnJheQpxAUsAhXECY19j",
    "b2RlY3MKZW5jb2RlCnEDWAEAAABicQRYBgAAAGxhdGluMXEFhnEGUnEHh3EIUnEJKEsBSwKFcQpjbnVtcHkKZHR5",
    "cGUKcQtYAwAAAFYxNnEMiYiHcQ1ScQ4oSwNYAQAAAHxxD05YCQAAAGlkeF9zdGFydHEQWAUAAABjb3VudHERWAoA",
    "AAB0aW1lc2VyaWVzcRKHcRN9cRQoaBBoC1gCAAAAaTRxFYmIh3EWUnEXKEsDWAEAAAA8cRhOTk5K/////0r/////",
    "SwB0cRliSwCGcRpoEWgXSwSGcRtoEmgLWAIAAABPOHEciYiHcR1ScR4oSwNoD05OTkr/////Sv////9LP3RxH2JL",
    "CIZxIHVLEEsBSxt0cSFiiV1xIihLAEsFY2hkbWZfemFyci51dGlscwpaYXJyUmVmZXJlbmNlCnEjKYFxJChYBgAA",
    "AHNvdXJjZXElWAEAAAAucSZYBAAAAHBhdGhxJ1gQAAAAL2FjcXVpc2l0aW9uL3RzMXEoWAkAAABvYmplY3RfaWRx",
    "KVgFAAAAb2lkLTFxKlgQAAAAc291cmNlX29iamVjdF9pZHErWAYAAAByb290LTBxLHWHcS1LBUsDaCMpgXEuKGgl",
    "aCZoJ1gQAAAAL2FjcXVpc2l0aW9uL3RzMnEvaClYBQAAAG9pZC0ycTBoK2gsdYdxMWV0cTJiLg==",
);
const COMPOUND_P5: &str = concat!(
    "gAWVwgEAAAAAAACMFm51bXB5Ll9jb3JlLm11bHRpYXJyYXmUjAxfcmVjb25zdHJ1Y3SUk5SMBW51bXB5lIwHbmRh",
    "cnJheZSTlEsAhZRDAWKUh5RSlChLAUsChZRoA4wFZHR5cGWUk5SMA1YxNpSJiIeUUpQoSwOMAXyUTowJaWR4X3N0",
    "YXJ0lIwFY291bnSUjAp0aW1lc2VyaWVzlIeUfZQoaBFoDIwCaTSUiYiHlFKUKEsDjAE8lE5OTkr/////Sv////9L",
    "AHSUYksAhpRoEmgYSwSGlGgTaAyMAk84lImIh5RSlChLA2gQTk5OSv////9K/////0s/dJRiSwiGlHVLEEsBSxt0",
    "lGKJXZQoSwBLBYwPaGRtZl96YXJyLnV0aWxzlIwNWmFyclJlZmVyZW5jZZSTlCmBlCiMBnNvdXJjZZSMAS6UjARw",
    "YXRolIwQL2FjcXVpc2l0aW9uL3RzMZSMCW9iamVjdF9pZJSMBW9pZC0xlIwQc291cmNlX29iamVjdF9pZJSMBnJv",
    "b3QtMJR1h5RLBUsDaCYpgZQoaChoKWgqjBAvYWNxdWlzaXRpb24vdHMylGgsjAVvaWQtMpRoLmgvdYeUZXSUYi4=",
);
const LISTS_P5: &str = concat!(
    "gAWVSAEAAAAAAACMFm51bXB5Ll9jb3JlLm11bHRpYXJyYXmUjAxfcmVjb25zdHJ1Y3SUk5SMBW51bXB5lIwHbmRh",
    "cnJheZSTlEsAhZRDAWKUh5RSlChLAUsChZRoA4wFZHR5cGWUk5SMAk84lImIh5RSlChLA4wBfJROTk5K/////0r/",
    "////Sz90lGKJXZQoXZQoSwBLBYwPaGRtZl96YXJyLnV0aWxzlIwNWmFyclJlZmVyZW5jZZSTlCmBlCiMBnNvdXJj",
    "ZZSMAS6UjARwYXRolIwQL2FjcXVpc2l0aW9uL3RzMZSMCW9iamVjdF9pZJSMBW9pZC0xlIwQc291cmNlX29iamVj",
    "dF9pZJSMBnJvb3QtMJR1ZV2UKEsFSwNoFimBlChoGGgZaBqMEC9hY3F1aXNpdGlvbi90czKUaByMBW9pZC0ylGge",
    "aB91ZWV0lGIu",
);
const VOIDS_P2: &str = concat!(
    "gAJjbnVtcHkuX2NvcmUubXVsdGlhcnJheQpfcmVjb25zdHJ1Y3QKcQBjbnVtcHkKbmRhcnJheQpxAUsAhXECY19j",
    "b2RlY3MKZW5jb2RlCnEDWAEAAABicQRYBgAAAGxhdGluMXEFhnEGUnEHh3EIUnEJKEsBSwKFcQpjbnVtcHkKZHR5",
    "cGUKcQtYAgAAAE84cQyJiIdxDVJxDihLA1gBAAAAfHEPTk5OSv////9K/////0s/dHEQYoldcREoY251bXB5Ll9j",
    "b3JlLm11bHRpYXJyYXkKc2NhbGFyCnESaAtYAwAAAFY0N3ETiYiHcRRScRUoSwNoD04oWAQAAABuYW1lcRZYBQAA",
    "AHZhbHVlcRdYAgAAAGlkcRhYAwAAAHJhd3EZWAQAAABmbGFncRp0cRt9cRwoaBZoC1gCAAAAVThxHYmIh3EeUnEf",
    "KEsDWAEAAAA8cSBOTk5LIEsESwh0cSFiSwCGcSJoF2gLWAIAAABmOHEjiYiHcSRScSUoSwNYAQAAAD5xJk5OTkr/",
    "////Sv////9LAHRxJ2JLIIZxKGgYaAtYAgAAAGkycSmJiIdxKlJxKyhLA2ggTk5OSv////9K/////0sAdHEsYkso",
    "hnEtaBloC1gCAAAAUzRxLomIh3EvUnEwKEsDaA9OTk5LBEsBSwB0cTFiSyqGcTJoGmgLWAIAAABiMXEziYiHcTRS",
    "cTUoSwNoD05OTkr/////Sv////9LAHRxNmJLLoZxN3VLL0sBSxh0cThiaANYMwAAAMOpAAAAbAAAAGUAAABjAAAA",
    "dAAAAHIAAABvAAAAZAAAAD/DuAAAAAAAAMO9w79hYgAAAXE5aAWGcTpScTuGcTxScT1oEmgVaANYMQAAAHgAAAAA",
    "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAwr/DkAAAAAAAAAcAd3h5egBxPmgFhnE/UnFAhnFBUnFCZXRxQ2Iu",
);
const VOIDS_P5: &str = concat!(
    "gAWVFgIAAAAAAACMFm51bXB5Ll9jb3JlLm11bHRpYXJyYXmUjAxfcmVjb25zdHJ1Y3SUk5SMBW51bXB5lIwHbmRh",
    "cnJheZSTlEsAhZRDAWKUh5RSlChLAUsChZRoA4wFZHR5cGWUk5SMAk84lImIh5RSlChLA4wBfJROTk5K/////0r/",
    "////Sz90lGKJXZQoaACMBnNjYWxhcpSTlGgMjANWNDeUiYiHlFKUKEsDaBBOKIwEbmFtZZSMBXZhbHVllIwCaWSU",
    "jANyYXeUjARmbGFnlHSUfZQoaBhoDIwCVTiUiYiHlFKUKEsDjAE8lE5OTksgSwRLCHSUYksAhpRoGWgMjAJmOJSJ",
    "iIeUUpQoSwOMAT6UTk5OSv////9K/////0sAdJRiSyCGlGgaaAyMAmkylImIh5RSlChLA2giTk5OSv////9K////",
    "/0sAdJRiSyiGlGgbaAyMAlM0lImIh5RSlChLA2gQTk5OSwRLAUsAdJRiSyqGlGgcaAyMAmIxlImIh5RSlChLA2gQ",
    "Tk5OSv////9K/////0sAdJRiSy6GlHVLL0sBSxh0lGJDL+kAAABsAAAAZQAAAGMAAAB0AAAAcgAAAG8AAABkAAAA",
    "P/gAAAAAAAD9/2FiAAABlIaUUpRoFGgXQy94AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAL/QAAAAAAAA",
    "BwB3eHl6AJSGlFKUZXSUYi4=",
);
const FORTRAN_P5: &str = concat!(
    "gAWVtgAAAAAAAACMFm51bXB5Ll9jb3JlLm11bHRpYXJyYXmUjAxfcmVjb25zdHJ1Y3SUk5SMBW51bXB5lIwHbmRh",
    "cnJheZSTlEsAhZRDAWKUh5RSlChLAUsCSwOGlGgDjAVkdHlwZZSTlIwCTziUiYiHlFKUKEsDjAF8lE5OTkr/////",
    "Sv////9LP3SUYohdlCiMBHIwYzCUjARyMGMxlIwEcjBjMpSMBHIxYzCUjARyMWMxlIwEcjFjMpRldJRiLg==",
);
const MIXED_P2: &str = concat!(
    "gAJjbnVtcHkuX2NvcmUubXVsdGlhcnJheQpfcmVjb25zdHJ1Y3QKcQBjbnVtcHkKbmRhcnJheQpxAUsAhXECY19j",
    "b2RlY3MKZW5jb2RlCnEDWAEAAABicQRYBgAAAGxhdGluMXEFhnEGUnEHh3EIUnEJKEsBSxOFcQpjbnVtcHkKZHR5",
    "cGUKcQtYAgAAAE84cQyJiIdxDVJxDihLA1gBAAAAfHEPTk5OSv////9K/////0s/dHEQYoldcREoWAUAAABwbGFp",
    "bnESWAYAAADDqfCfpoBxE1gAAAAAcRRYLAEAAExMTExMTExMTExMTExMTExMTExMTExMTExMTExMTExMTExMTExM",
    "TExMTExMTExMTExMTExMTExMTExMTExMTExMTExMTExMTExMTExMTExMTExMTExMTExMTExMTExMTExMTExMTExM",
    "TExMTExMTExMTExMTExMTExMTExMTExMTExMTExMTExMTExMTExMTExMTExMTExMTExMTExMTExMTExMTExMTExM",
    "TExMTExMTExMTExMTExMTExMTExMTExMTExMTExMTExMTExMTExMTExMTExMTExMTExMTExMTExMTExMTExMTExM",
    "TExMTExMTExMTExMTExMTExMTExMTExMTExMTExMTExMTExMTExMTExMTExMTExMTExMTExMTExMTExMTExMTHEV",
    "SwBK/////0v/Tf//igUAAACAAIoJ//////////8AiggAAAAAAAAAgEc/+AAAAAAAAEd/+AAAAAAAAEf/8AAAAAAA",
    "AIhOaANYBQAAAGJ5dGVzcRZoBYZxF1JxGGNudW1weS5fY29yZS5tdWx0aWFycmF5CnNjYWxhcgpxGWgLWAIAAABm",
    "OHEaiYiHcRtScRwoSwNYAQAAADxxHU5OTkr/////Sv////9LAHRxHmJoA1gIAAAAAAAAAAAABEBxH2gFhnEgUnEh",
    "hnEiUnEjaBloC1gCAAAAaTJxJImIh3ElUnEmKEsDaB1OTk5K/////0r/////SwB0cSdiaANYBAAAAMO5w79xKGgF",
    "hnEpUnEqhnErUnEsZXRxLWIu",
);
const MIXED_P4: &str = concat!(
    "gASVjgIAAAAAAACMFm51bXB5Ll9jb3JlLm11bHRpYXJyYXmUjAxfcmVjb25zdHJ1Y3SUk5SMBW51bXB5lIwHbmRh",
    "cnJheZSTlEsAhZRDAWKUh5RSlChLAUsThZRoA4wFZHR5cGWUk5SMAk84lImIh5RSlChLA4wBfJROTk5K/////0r/",
    "////Sz90lGKJXZQojAVwbGFpbpSMBsOp8J+mgJSMAJRYLAEAAExMTExMTExMTExMTExMTExMTExMTExMTExMTExM",
    "TExMTExMTExMTExMTExMTExMTExMTExMTExMTExMTExMTExMTExMTExMTExMTExMTExMTExMTExMTExMTExMTExM",
    "TExMTExMTExMTExMTExMTExMTExMTExMTExMTExMTExMTExMTExMTExMTExMTExMTExMTExMTExMTExMTExMTExM",
    "TExMTExMTExMTExMTExMTExMTExMTExMTExMTExMTExMTExMTExMTExMTExMTExMTExMTExMTExMTExMTExMTExM",
    "TExMTExMTExMTExMTExMTExMTExMTExMTExMTExMTExMTExMTExMTExMTExMTExMTExMTExMTExMTExMTExMTExM",
    "TExMTExMTJRLAEr/////S/9N//+KBQAAAIAAign//////////wCKCAAAAAAAAACARz/4AAAAAAAAR3/4AAAAAAAA",
    "R//wAAAAAAAAiE5DBWJ5dGVzlGgAjAZzY2FsYXKUk5RoDIwCZjiUiYiHlFKUKEsDjAE8lE5OTkr/////Sv////9L",
    "AHSUYkMIAAAAAAAABECUhpRSlGgZaAyMAmkylImIh5RSlChLA2gdTk5OSv////9K/////0sAdJRiQwL5/5SGlFKU",
    "ZXSUYi4=",
);
const ZERO_D_P5: &str = concat!(
    "gAWVjQAAAAAAAACMFm51bXB5Ll9jb3JlLm11bHRpYXJyYXmUjAxfcmVjb25zdHJ1Y3SUk5SMBW51bXB5lIwHbmRh",
    "cnJheZSTlEsAhZRDAWKUh5RSlChLASloA4wFZHR5cGWUk5SMAk84lImIh5RSlChLA4wBfJROTk5K/////0r/////",
    "Sz90lGKJXZSMBG9ubHmUYXSUYi4=",
);
const NESTED_P2: &str = concat!(
    "gAJjbnVtcHkuX2NvcmUubXVsdGlhcnJheQpfcmVjb25zdHJ1Y3QKcQBjbnVtcHkKbmRhcnJheQpxAUsAhXECY19j",
    "b2RlY3MKZW5jb2RlCnEDWAEAAABicQRYBgAAAGxhdGluMXEFhnEGUnEHh3EIUnEJKEsBSwKFcQpjbnVtcHkKZHR5",
    "cGUKcQtYAgAAAE84cQyJiIdxDVJxDihLA1gBAAAAfHEPTk5OSv////9K/////0s/dHEQYoldcREoaABoAUsAhXES",
    "aAeHcRNScRQoSwFLA4VxFWgLWAIAAABpMnEWiYiHcRdScRgoSwNYAQAAADxxGU5OTkr/////Sv////9LAHRxGmKJ",
    "aANYBgAAAAAAAQACAHEbaAWGcRxScR10cR5iaABoAUsAhXEfaAeHcSBScSEoSwFLAUsChnEiaAtYAgAAAGY0cSOJ",
    "iIdxJFJxJShLA1gBAAAAPnEmTk5OSv////9K/////0sAdHEnYoloA1gJAAAAP8OAAABAAAAAcShoBYZxKVJxKnRx",
    "K2JldHEsYi4=",
);
const NESTED_P5: &str = concat!(
    "gAWVOgEAAAAAAACMFm51bXB5Ll9jb3JlLm11bHRpYXJyYXmUjAxfcmVjb25zdHJ1Y3SUk5SMBW51bXB5lIwHbmRh",
    "cnJheZSTlEsAhZRDAWKUh5RSlChLAUsChZRoA4wFZHR5cGWUk5SMAk84lImIh5RSlChLA4wBfJROTk5K/////0r/",
    "////Sz90lGKJXZQojBNudW1weS5fY29yZS5udW1lcmljlIwLX2Zyb21idWZmZXKUk5QolgYAAAAAAAAAAAABAAIA",
    "lGgMjAJpMpSJiIeUUpQoSwOMATyUTk5OSv////9K/////0sAdJRiSwOFlIwBQ5R0lFKUaBUolggAAAAAAAAAP8AA",
    "AEAAAACUaAyMAmY0lImIh5RSlChLA4wBPpROTk5K/////0r/////SwB0lGJLAUsChpRoHXSUUpRldJRiLg==",
);
const NUMERIC_P5: &str = concat!(
    "gAWVfgAAAAAAAACME251bXB5Ll9jb3JlLm51bWVyaWOUjAtfZnJvbWJ1ZmZlcpSTlCiWCAAAAAAAAAABAAIAAwAE",
    "AJSMBW51bXB5lIwFZHR5cGWUk5SMAnUylImIh5RSlChLA4wBPJROTk5K/////0r/////SwB0lGJLAksChpSMAUOU",
    "dJRSlC4=",
);
const EVIL_SYSTEM_P2: &str = concat!(
    "gAJjbnVtcHkuX2NvcmUubXVsdGlhcnJheQpfcmVjb25zdHJ1Y3QKcQBjbnVtcHkKbmRhcnJheQpxAUsAhXECY19j",
    "b2RlY3MKZW5jb2RlCnEDWAEAAABicQRYBgAAAGxhdGluMXEFhnEGUnEHh3EIUnEJKEsBSwGFcQpjbnVtcHkKZHR5",
    "cGUKcQtYAgAAAE84cQyJiIdxDVJxDihLA1gBAAAAfHEPTk5OSv////9K/////0s/dHEQYoldcRFjcG9zaXgKc3lz",
    "dGVtCnESWAoAAABlY2hvIHB3bmVkcROFcRRScRVhdHEWYi4=",
);
const EVIL_EVAL_P5: &str = concat!(
    "gAWVpwAAAAAAAACMFm51bXB5Ll9jb3JlLm11bHRpYXJyYXmUjAxfcmVjb25zdHJ1Y3SUk5SMBW51bXB5lIwHbmRh",
    "cnJheZSTlEsAhZRDAWKUh5RSlChLAUsBhZRoA4wFZHR5cGWUk5SMAk84lImIh5RSlChLA4wBfJROTk5K/////0r/",
    "////Sz90lGKJXZSMCGJ1aWx0aW5zlIwEZXZhbJSTlIwDMSsxlIWUUpRhdJRiLg==",
);
const EVIL_POPEN_P4: &str = concat!(
    "gASVtwAAAAAAAACMFm51bXB5Ll9jb3JlLm11bHRpYXJyYXmUjAxfcmVjb25zdHJ1Y3SUk5SMBW51bXB5lIwHbmRh",
    "cnJheZSTlEsAhZRDAWKUh5RSlChLAUsBhZRoA4wFZHR5cGWUk5SMAk84lImIh5RSlChLA4wBfJROTk5K/////0r/",
    "////Sz90lGKJXZSMCnN1YnByb2Nlc3OUjAVQb3BlbpSTlF2UKIwEZWNob5SMBXB3bmVklGWFlFKUYXSUYi4=",
);

// refs/.zarray: {"chunks": [2], "compressor": {"blocksize": 0, "clevel": 5, "cname": "lz4", "id": "blosc", "shuffle": 1}, "dtype": "|O", "fill_value": 0, "filters": [{"id": "pickle", "protocol": 5}], "order": "C", "shape": [3], "zarr_format": 2}
const ZARR_REFS_0: &str = concat!(
    "AgEjASEBAAAhAQAAMQEAAIAFlRYBAAAAAAAAjBZudW1weS5fY29yZS5tdWx0aWFycmF5lIwMX3JlY29uc3RydWN0",
    "lJOUjAVudW1weZSMB25kYXJyYXmUk5RLAIWUQwFilIeUUpQoSwFLAoWUaAOMBWR0eXBllJOUjAJPOJSJiIeUUpQo",
    "SwOMAXyUTk5OSv////9K/////0s/dJRiiV2UKIwPaGRtZl96YXJyLnV0aWxzlIwNWmFyclJlZmVyZW5jZZSTlCmB",
    "lCiMBnNvdXJjZZSMAS6UjARwYXRolIwCL2GUjAlvYmplY3RfaWSUjAJvMZSMEHNvdXJjZV9vYmplY3RfaWSUjAZy",
    "b290LTCUdWgVKYGUKGgXaBhoGYwCL2KUaBuMAm8ylGgdaB51ZXSUYi4=",
);
const ZARR_REFS_1: &str = concat!(
    "AgEjAQYBAAAGAQAAFgEAAIAFlfsAAAAAAAAAjBZudW1weS5fY29yZS5tdWx0aWFycmF5lIwMX3JlY29uc3RydWN0",
    "lJOUjAVudW1weZSMB25kYXJyYXmUk5RLAIWUQwFilIeUUpQoSwFLAoWUaAOMBWR0eXBllJOUjAJPOJSJiIeUUpQo",
    "SwOMAXyUTk5OSv////9K/////0s/dJRiiV2UKIwPaGRtZl96YXJyLnV0aWxzlIwNWmFyclJlZmVyZW5jZZSTlCmB",
    "lCiMBnNvdXJjZZSMAS6UjARwYXRolIwCL2OUjAlvYmplY3RfaWSUjAJvM5SMEHNvdXJjZV9vYmplY3RfaWSUjAZy",
    "b290LTCUdUsAZXSUYi4=",
);
// comp/.zarray: {"chunks": [2], "compressor": {"blocksize": 0, "clevel": 5, "cname": "lz4", "id": "blosc", "shuffle": 1}, "dtype": [["idx_start", "<i4"], ["count", "<i4"], ["timeseries", "|O"]], "fill_value": "gAVLAC4=", "filters": [{"id": "pickle", "protocol": 5}], "order": "C", "shape": [2], "zarr_format": 2}
const ZARR_COMP_0: &str = concat!(
    "AgEjAasBAACrAQAAuwEAAIAFlaABAAAAAAAAjBZudW1weS5fY29yZS5tdWx0aWFycmF5lIwMX3JlY29uc3RydWN0",
    "lJOUjAVudW1weZSMB25kYXJyYXmUk5RLAIWUQwFilIeUUpQoSwFLAoWUaAOMBWR0eXBllJOUjANWMTaUiYiHlFKU",
    "KEsDjAF8lE6MCWlkeF9zdGFydJSMBWNvdW50lIwKdGltZXNlcmllc5SHlH2UKGgRaAyMAmk0lImIh5RSlChLA4wB",
    "PJROTk5K/////0r/////SwB0lGJLAIaUaBJoGEsEhpRoE2gMjAJPOJSJiIeUUpQoSwNoEE5OTkr/////Sv////9L",
    "P3SUYksIhpR1SxBLAUsbdJRiiV2UKEsASwWMD2hkbWZfemFyci51dGlsc5SMDVphcnJSZWZlcmVuY2WUk5QpgZQo",
    "jAZzb3VyY2WUjAEulIwEcGF0aJSMAi9hlIwJb2JqZWN0X2lklIwCbzGUjBBzb3VyY2Vfb2JqZWN0X2lklIwGcm9v",
    "dC0wlHWHlEsFSwNoJimBlChoKGgpaCqMAi9ilGgsjAJvMpRoLmgvdYeUZXSUYi4=",
);

/// Writer output for `encode_object_array(&[2], &[json!("a"), json!({"k": 1})], None)`.
const WRITER_GOLDEN_OBJECTS: &str = concat!(
    "8002636e756d70792e636f72652e6d756c746961727261790a5f7265636f6e7374727563740a636e756d7079",
    "0a6e6461727261790a4b0085635f636f646563730a656e636f64650a58010000006258060000006c6174696e",
    "3186528752284b014b0285636e756d70790a64747970650a58020000004f3889888752284b0358010000007c",
    "4e4e4e4affffffff4affffffff4b3f7462895d285801000000617d2858010000006b4b01756574622e",
);
/// Writer output for one `[1, 2, ref]` item with the fields of `record_fields()`.
const WRITER_GOLDEN_RECORD: &str = concat!(
    "8002636e756d70792e636f72652e6d756c746961727261790a5f7265636f6e7374727563740a636e756d7079",
    "0a6e6461727261790a4b0085635f636f646563730a656e636f64650a58010000006258060000006c6174696e",
    "3186528752284b014b0185636e756d70790a64747970650a580300000056313689888752284b035801000000",
    "7c4e58090000006964785f73746172745805000000636f756e74580a00000074696d65736572696573877d28",
    "58090000006964785f7374617274636e756d70790a64747970650a5802000000693489888752284b03580100",
    "00003c4e4e4e4affffffff4affffffff4b0074624b00865805000000636f756e74636e756d70790a64747970",
    "650a5802000000693489888752284b0358010000003c4e4e4e4affffffff4affffffff4b0074624b0486580a",
    "00000074696d65736572696573636e756d70790a64747970650a58020000004f3889888752284b0358010000",
    "007c4e4e4e4affffffff4affffffff4b3f74624b0886754b104b014b1b7462895d284b014b027d2858060000",
    "00736f7572636558010000002e58040000007061746858020000002f7858090000006f626a6563745f696458",
    "010000006f5810000000736f757263655f6f626a6563745f69645806000000726f6f742d3075876574622e",
);

fn b64(s: &str) -> Vec<u8> {
    base64::engine::general_purpose::STANDARD
        .decode(s)
        .expect("fixture is base64")
}

// ---------------------------------------------------------------------------------------------
// Real pickles

#[test]
fn zarr_references_read_in_every_protocol() {
    let r1 = zref("/acquisition/ts1", json!("oid-1"));
    let r2 = json!({"source": ".", "path": "/processing/x", "object_id": null,
                    "source_object_id": null});
    let expected = vec![r1.clone(), r2, r1];
    for (name, fixture) in [
        ("protocol 0", REFS_P0),
        ("protocol 1", REFS_P1),
        ("protocol 2", REFS_P2),
        ("protocol 3", REFS_P3),
        ("protocol 4", REFS_P4),
        ("protocol 5", REFS_P5),
        ("numpy 1.x spelling", NUMPY1_REFS_P2),
    ] {
        let array = decode_object_array(&b64(fixture)).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(array.shape, vec![3], "{name}");
        assert_eq!(array.items, expected, "{name}");
        assert_eq!(array.field_names, None, "{name}");
        assert!(!array.fortran, "{name}");
        // ZarrReference keys keep the order hdmf-zarr set them in.
        let keys: Vec<&String> = array.items[0].as_object().unwrap().keys().collect();
        assert_eq!(
            keys,
            ["source", "path", "object_id", "source_object_id"],
            "{name}"
        );
    }
}

#[test]
fn dicts_keep_values_and_insertion_order() {
    for fixture in [DICTS_P2, DICTS_P5] {
        let array = decode_object_array(&b64(fixture)).unwrap();
        assert_eq!(array.shape, vec![2]);
        let first = &array.items[0];
        assert_eq!(first["a"], json!(1));
        assert_eq!(first["b"], json!([1, 2.5, "x"]));
        assert_eq!(first["c"], Value::Null);
        assert_eq!(first["d"], json!(true));
        assert_eq!(first["e"], json!({"nested": "é"}));
        assert_eq!(first["big"], json!(9_223_372_036_854_775_813u64));
        assert_eq!(first["neg"], json!(-1_099_511_627_776i64));
        assert_eq!(first["nan"], nan());
        assert_eq!(first["inf"], neg_inf());
        assert_eq!(first["bytes"], json!("raw"));
        assert_eq!(first["tup"], json!([1, "two"]));
        let keys: Vec<&String> = first.as_object().unwrap().keys().collect();
        assert_eq!(
            keys,
            ["a", "b", "c", "d", "e", "big", "neg", "nan", "inf", "bytes", "tup"]
        );
        assert_eq!(array.items[1], json!({}));
    }
}

#[test]
fn structured_arrays_with_object_fields_become_objects() {
    let expected = vec![
        json!({"idx_start": 0, "count": 5, "timeseries": zref("/acquisition/ts1", json!("oid-1"))}),
        json!({"idx_start": 5, "count": 3, "timeseries": zref("/acquisition/ts2", json!("oid-2"))}),
    ];
    for fixture in [COMPOUND_P2, COMPOUND_P5] {
        let array = decode_object_array(&b64(fixture)).unwrap();
        assert_eq!(array.shape, vec![2]);
        assert_eq!(
            array.field_names.as_deref(),
            Some(&["idx_start".to_string(), "count".into(), "timeseries".into()][..])
        );
        assert_eq!(array.items, expected);
        let keys: Vec<&String> = array.items[1].as_object().unwrap().keys().collect();
        assert_eq!(keys, ["idx_start", "count", "timeseries"]);
    }
}

#[test]
fn lists_of_the_old_hdmf_zarr_layout_stay_lists() {
    let array = decode_object_array(&b64(LISTS_P5)).unwrap();
    assert_eq!(
        array.items,
        vec![
            json!([0, 5, zref("/acquisition/ts1", json!("oid-1"))]),
            json!([5, 3, zref("/acquisition/ts2", json!("oid-2"))]),
        ]
    );
}

#[test]
fn structured_numpy_scalars_are_decoded_from_their_bytes() {
    // dtype [('name','<U8'),('value','>f8'),('id','<i2'),('raw','S4'),('flag','?')]; NumPy cut
    // 'électrode' to the 8 characters of U8.
    let expected = vec![
        json!({"name": "électrod", "value": 1.5, "id": -3, "raw": "ab", "flag": true}),
        json!({"name": "x", "value": -0.25, "id": 7, "raw": "wxyz", "flag": false}),
    ];
    for fixture in [VOIDS_P2, VOIDS_P5] {
        let array = decode_object_array(&b64(fixture)).unwrap();
        assert_eq!(array.items, expected);
        // An object array of scalars has no field names of its own.
        assert_eq!(array.field_names, None);
    }
}

#[test]
fn fortran_object_arrays_list_their_elements_in_c_order() {
    let array = decode_object_array(&b64(FORTRAN_P5)).unwrap();
    assert_eq!(array.shape, vec![2, 3]);
    assert!(array.fortran);
    assert_eq!(
        array.items,
        ["r0c0", "r0c1", "r0c2", "r1c0", "r1c1", "r1c2"]
            .map(Value::from)
            .to_vec()
    );
}

#[test]
fn mixed_python_values_map_to_json() {
    let long = "L".repeat(300);
    let expected = vec![
        json!("plain"),
        json!("é🦀"),
        json!(""),
        json!(long),
        json!(0),
        json!(-1),
        json!(255),
        json!(65535),
        json!(2_147_483_648u64),
        json!(u64::MAX),
        json!(i64::MIN),
        json!(1.5),
        nan(),
        neg_inf(),
        json!(true),
        Value::Null,
        json!("bytes"),
        json!(2.5),
        json!(-7),
    ];
    for fixture in [MIXED_P2, MIXED_P4] {
        let array = decode_object_array(&b64(fixture)).unwrap();
        assert_eq!(array.shape, vec![19]);
        assert_eq!(array.items, expected);
    }
}

#[test]
fn zero_d_nested_and_numeric_arrays() {
    let zero_d = decode_object_array(&b64(ZERO_D_P5)).unwrap();
    assert_eq!(zero_d.shape, Vec::<usize>::new());
    assert_eq!(zero_d.items, vec![json!("only")]);
    for fixture in [NESTED_P2, NESTED_P5] {
        let nested = decode_object_array(&b64(fixture)).unwrap();
        assert_eq!(nested.items, vec![json!([0, 1, 2]), json!([[1.5, 2.0]])]);
    }
    let numeric = decode_object_array(&b64(NUMERIC_P5)).unwrap();
    assert_eq!(numeric.shape, vec![2, 2]);
    assert_eq!(numeric.items, vec![json!(1), json!(2), json!(3), json!(4)]);
}

#[test]
fn fill_value_pickle_decodes() {
    // The `fill_value` hdmf-zarr arrays with object fields carry: pickle.dumps(0, protocol=5).
    assert_eq!(decode_value(&b64("gAVLAC4=")).unwrap(), json!(0));
    let not_an_array = decode_object_array(&b64("gAVLAC4=")).unwrap_err();
    assert!(
        not_an_array
            .to_string()
            .contains("holds a int, not a numpy array"),
        "{not_an_array}"
    );
}

// ---------------------------------------------------------------------------------------------
// Hostile input

#[test]
fn malicious_globals_are_refused_by_name() {
    // Offsets are those `pickletools.dis` shows for the GLOBAL / STACK_GLOBAL opcode.
    for (fixture, global, offset) in [
        (EVIL_SYSTEM_P2, "posix.system", 188),
        (EVIL_EVAL_P5, "builtins.eval", 161),
        (EVIL_POPEN_P4, "subprocess.Popen", 164),
    ] {
        let err = decode_object_array(&b64(fixture)).unwrap_err();
        assert!(
            matches!(&err, PickleError::RefusedGlobal { offset: o, .. } if *o == offset),
            "{err:?}"
        );
        let message = err.to_string();
        assert!(message.contains(&format!("'{global}'")), "{message}");
        assert!(message.contains(&format!("at byte {offset}")), "{message}");
        assert!(message.contains("refused"), "{message}");
        assert!(message.contains("never run"), "{message}");
        assert!(decode_value(&b64(fixture)).is_err());
    }
    // os.system called through REDUCE, written by hand (protocol 2 GLOBAL is text).
    let stream = b"\x80\x02cos\nsystem\nX\x04\x00\x00\x00echo\x85R.";
    let message = decode_value(stream).unwrap_err().to_string();
    assert!(message.contains("'os.system' at byte 2"), "{message}");
    // Allowed module, other name; allowed name, other module.
    for (stream, global) in [
        (&b"cnumpy\nload\n."[..], "numpy.load"),
        (b"cbuiltins\ngetattr\n.", "builtins.getattr"),
        (b"cposix\ndict\n.", "posix.dict"),
        (b"\x8c\x08builtins\x8c\x04eval\x93.", "builtins.eval"),
    ] {
        let message = decode_value(stream).unwrap_err().to_string();
        assert!(message.contains(&format!("'{global}'")), "{message}");
    }
}

#[test]
fn refused_opcodes_are_named_with_their_offset() {
    for (stream, name, offset) in [
        (&b"\x80\x02\x82\x01."[..], "EXT1", 2),
        (b"\x80\x02\x83\x01\x00.", "EXT2", 2),
        (b"\x80\x02\x84\x01\x00\x00\x00.", "EXT4", 2),
        (b"(iposix\nsystem\n.", "INST", 1),
        (b"(cposix\nsystem\no.", "OBJ", 0),
        (b"Pfoo\n.", "PERSID", 0),
        (b"\x80\x02NQ.", "BINPERSID", 3),
        (b"\x80\x05\x97.", "NEXT_BUFFER", 2),
        (b"\x80\x05N\x98.", "READONLY_BUFFER", 3),
        (b"\x80\x04\x8f.", "EMPTY_SET", 2),
        (b"S'text'\n.", "STRING", 0),
    ] {
        let err = decode_value(stream).unwrap_err();
        let message = err.to_string();
        // OBJ follows a GLOBAL, which is refused first.
        if name == "OBJ" {
            assert!(message.contains("'posix.system'"), "{message}");
            continue;
        }
        assert!(
            message.contains(&format!("opcode {name} "))
                && message.contains(&format!("at byte {offset}")),
            "{name}: {message}"
        );
    }
    let message = decode_value(b"\x80\x02\xff.").unwrap_err().to_string();
    assert!(
        message.contains("invalid pickle opcode 0xff at byte 2"),
        "{message}"
    );
    let message = decode_value(b"\x80\x06N.").unwrap_err().to_string();
    assert!(message.contains("unsupported protocol 6"), "{message}");
}

#[test]
fn every_truncation_is_reported_with_its_length() {
    for fixture in [
        REFS_P0,
        REFS_P2,
        REFS_P5,
        COMPOUND_P2,
        VOIDS_P5,
        MIXED_P4,
        NESTED_P5,
    ] {
        let full = b64(fixture);
        for len in 0..full.len() {
            let err = decode_object_array(&full[..len]).unwrap_err();
            assert!(
                matches!(err, PickleError::Truncated { len: l, .. } if l == len),
                "prefix of {len} bytes: {err:?}"
            );
            assert!(
                err.to_string()
                    .contains(&format!("truncated at byte {len}")),
                "{err}"
            );
        }
    }
    let message = decode_value(b"\x80\x02X\x10\x00\x00\x00abc")
        .unwrap_err()
        .to_string();
    assert!(
        message
            .contains("truncated at byte 10: BINUNICODE at byte 2 needs 16 more bytes, 3 remain"),
        "{message}"
    );
}

#[test]
fn missing_stop_and_short_frames_are_truncations() {
    let message = decode_value(b"\x80\x02N").unwrap_err().to_string();
    assert_eq!(
        message,
        "pickle truncated at byte 3: the stream ends before its STOP opcode"
    );
    let message = decode_value(b"\x80\x04\x95\x09\x00\x00\x00\x00\x00\x00\x00N.")
        .unwrap_err()
        .to_string();
    assert!(
        message.contains("truncated at byte 13: FRAME at byte 2 declares 9 bytes, 2 remain"),
        "{message}"
    );
    let message = decode_value(b"cnumpy\ndtype").unwrap_err().to_string();
    assert!(
        message.contains("truncated at byte 12: GLOBAL at byte 0 has no end of line"),
        "{message}"
    );
}

#[test]
fn huge_declared_lengths_fail_before_allocating() {
    let mut streams: Vec<Vec<u8>> = Vec::new();
    for op in [0x8du8, 0x8e, 0x96, 0x95] {
        let mut s = vec![0x80, 0x05, op];
        s.extend_from_slice(&u64::MAX.to_le_bytes());
        streams.push(s);
        let mut s = vec![0x80, 0x05, op];
        s.extend_from_slice(&(1u64 << 40).to_le_bytes());
        s.extend_from_slice(b"abc.");
        streams.push(s);
    }
    let mut s = vec![0x80, 0x02, b'X'];
    s.extend_from_slice(&u32::MAX.to_le_bytes());
    streams.push(s);
    for s in streams {
        let err = decode_value(&s).unwrap_err();
        assert!(matches!(err, PickleError::Truncated { .. }), "{err:?}");
    }
    // A negative LONG4 / BINSTRING length is malformed.
    let message = decode_value(b"\x80\x02\x8b\xff\xff\xff\xff.")
        .unwrap_err()
        .to_string();
    assert!(message.contains("negative LONG4 length -1"), "{message}");
}

#[test]
fn malformed_machine_states_are_errors() {
    for (stream, expected) in [
        (&b"\x80\x02."[..], "STOP at byte 2: stack underflow"),
        (b"\x80\x02a.", "APPEND at byte 2: stack underflow"),
        (b"\x80\x02N\x87.", "TUPLE3 at byte 3: stack underflow (needs 3 items, has 1)"),
        (b"\x80\x02t.", "TUPLE at byte 2: no MARK to pop to"),
        (b"\x80\x02h\x05.", "BINGET at byte 2: memo index 5 is not set"),
        (b"\x80\x02j\x00\x00\x00\x01.", "memo index 16777216 is not set"),
        (b"g7\n.", "GET at byte 0: memo index 7 is not set"),
        (b"\x80\x02NNa.", "cannot append to a None"),
        (b"\x80\x02]NNs.", "cannot set items of a list"),
        (b"\x80\x02}(Nu.", "odd count"),
        (b"\x80\x02N)R.", "cannot call a None"),
        (b"\x80\x02cbuiltins\ndict\nN\x81.", "the arguments must be a tuple"),
        (b"\x80\x02Nb.", "stack underflow"),
        (b"\x80\x02NNb.", "BUILD (setting the state) of a None is not supported"),
        (b"Ix\n.", "\"x\" is not a decimal integer"),
        (b"Fnope\n.", "\"nope\" is not a float"),
        (b"\x80\x02X\x02\x00\x00\x00\xff\xfe.", "not valid UTF-8"),
        (
            b"\x80\x02cnumpy.core.multiarray\n_reconstruct\ncbuiltins\ndict\nK\x00\x85C\x01b\x87R.",
            "_reconstruct is only read for numpy.ndarray",
        ),
        (
            b"\x80\x02cnumpy.core.multiarray\n_reconstruct\ncnumpy\nndarray\n\x8a\x08\x00\x00\x00\x00\x00\x00\x00\x40\x8a\x08\x00\x00\x00\x00\x00\x00\x00\x40\x86C\x01b\x87R.",
            "overflows",
        ),
        (b"\x80\x02cnumpy\ndtype\nX\x01\x00\x00\x00x\x85R.", "holds a numpy dtype"),
    ] {
        let message = match decode_object_array(stream) {
            Ok(array) => panic!("{expected}: decoded {array:?}"),
            Err(e) => e.to_string(),
        };
        assert!(message.contains(expected), "expected {expected:?} in {message}");
    }
}

#[test]
fn self_reference_deep_nesting_and_blow_up_are_limited() {
    // l = []; l.append(l)
    let message = decode_value(b"\x80\x02]q\x00h\x00a.")
        .unwrap_err()
        .to_string();
    assert!(message.contains("deeper than 128 levels"), "{message}");
    // 300 lists nested in each other.
    let mut nested = b"\x80\x02".to_vec();
    nested.extend(std::iter::repeat_n(b']', 300));
    nested.extend(std::iter::repeat_n(b'a', 299));
    nested.push(b'.');
    let message = decode_value(&nested).unwrap_err().to_string();
    assert!(message.contains("deeper than 128 levels"), "{message}");
    // x = None; 100 times x = (x, x): 2**100 leaves from 203 bytes.
    let mut doubling = b"\x80\x02N".to_vec();
    for _ in 0..100 {
        doubling.extend_from_slice(b"2\x86");
    }
    doubling.push(b'.');
    let message = decode_value(&doubling).unwrap_err().to_string();
    assert!(message.contains("far larger than the pickle"), "{message}");
    // Too many MARKs.
    let marks = vec![b'('; 10_000];
    let message = decode_value(&marks).unwrap_err().to_string();
    assert!(message.contains("nested MARKs"), "{message}");
    // An integer beyond 64 bits, and non-UTF-8 bytes, have no JSON form.
    let message = decode_value(b"\x80\x02\x8a\x09\x00\x00\x00\x00\x00\x00\x00\x00\x01.")
        .unwrap_err()
        .to_string();
    assert!(
        message.contains("integer 18446744073709551616 does not fit in 64 bits"),
        "{message}"
    );
    let message = decode_value(b"\x80\x03C\x02\xff\xfe.")
        .unwrap_err()
        .to_string();
    assert!(
        message.contains("bytes value is not UTF-8 text"),
        "{message}"
    );
}

/// `X` (BINUNICODE) of `s`.
fn binunicode(s: &str) -> Vec<u8> {
    let mut out = vec![b'X'];
    out.extend_from_slice(&(s.len() as u32).to_le_bytes());
    out.extend_from_slice(s.as_bytes());
    out
}

/// `numpy.dtype(spec, False, True)` built with a state whose names / fields are given as raw
/// pickle ops (`b"N"` for none); the class is in memo 0.
fn dtype_ops(spec: &str, endian: &str, names_fields: &[u8], size: i8, flags: u8) -> Vec<u8> {
    let mut out = b"h\x00".to_vec();
    out.extend(binunicode(spec));
    out.extend_from_slice(b"\x89\x88\x87R(K\x03");
    out.extend(binunicode(endian));
    out.push(b'N');
    out.extend_from_slice(names_fields);
    out.extend_from_slice(&[b'J', size as u8, 0xff, 0xff, 0xff]);
    out.extend_from_slice(&[b'K', 1, b'K', flags, b't', b'b']);
    out
}

#[test]
fn shared_values_cannot_multiply_work() {
    // A 100 kB str in the memo, encoded to bytes again and again.
    let mut stream = b"\x80\x02c_codecs\nencode\nq\x00".to_vec();
    stream.extend(binunicode(&"a".repeat(100_000)));
    stream.extend_from_slice(b"q\x01");
    for _ in 0..1000 {
        stream.extend_from_slice(b"h\x00h\x01");
        stream.extend(binunicode("latin1"));
        stream.extend_from_slice(b"\x86R0");
    }
    stream.extend_from_slice(b"N.");
    let message = decode_value(&stream).unwrap_err().to_string();
    assert!(
        message.contains("REDUCE at byte") && message.contains("far more data than it holds"),
        "{message}"
    );

    // A structured dtype whose two fields are the previous level's dtype at offset 0, 40
    // levels deep: 2**40 values from one byte of a numpy scalar.
    let mut stream = b"\x80\x02cnumpy\ndtype\nq\x00".to_vec();
    stream.extend(dtype_ops("u1", "|", b"NN", -1, 0));
    stream.extend_from_slice(b"q\x01");
    for level in 1..=40u8 {
        let mut names_fields = binunicode("a");
        names_fields.extend(binunicode("b"));
        names_fields.extend_from_slice(b"\x86}(");
        for name in ["a", "b"] {
            names_fields.extend(binunicode(name));
            names_fields.extend_from_slice(&[b'h', level, b'K', 0, 0x86]);
        }
        names_fields.push(b'u');
        let mut ops = dtype_ops("V1", "|", &names_fields, 1, 16);
        // The element size of a structured dtype is written as BININT 1 here.
        ops.extend_from_slice(&[b'q', level + 1]);
        stream.extend(ops);
    }
    stream.extend_from_slice(b"cnumpy.core.multiarray\nscalar\nh\x29C\x01x\x86R.");
    let message = decode_value(&stream).unwrap_err().to_string();
    assert!(message.contains("far larger than the pickle"), "{message}");
    // The same dtype two levels deep decodes.
    let shallow = {
        let end = stream
            .windows(2)
            .position(|w| w == [b'q', 3])
            .expect("level 2")
            + 2;
        let mut s = stream[..end].to_vec();
        s.extend_from_slice(b"cnumpy.core.multiarray\nscalar\nh\x03C\x01x\x86R.");
        s
    };
    assert_eq!(
        decode_value(&shallow).unwrap(),
        json!({"a": {"a": 120, "b": 120}, "b": {"a": 120, "b": 120}})
    );

    // More dimensions than NumPy allows.
    let mut stream = b"\x80\x02cnumpy.core.multiarray\n_reconstruct\ncnumpy\nndarray\n(".to_vec();
    stream.extend(std::iter::repeat_n([b'K', 1], 65).flatten());
    stream.extend_from_slice(b"tC\x01b\x87R.");
    let message = decode_value(&stream).unwrap_err().to_string();
    assert!(
        message.contains("the shape has 65 items, more than the 64 expected"),
        "{message}"
    );
}

#[test]
fn wrong_element_counts_are_errors() {
    let good = encode_object_array(&[2], &[json!("a"), json!("b")], None).unwrap();
    // Claim 3 elements in the BUILD state's shape.
    let at = good
        .windows(5)
        .position(|w| w == b"(K\x01K\x02")
        .expect("state shape");
    let mut bad = good.clone();
    bad[at + 4] = 3;
    let message = decode_object_array(&bad).unwrap_err().to_string();
    assert!(
        message.contains("shape [3] holds 2 elements instead of 3"),
        "{message}"
    );
}

/// A small deterministic generator for the mutation test.
struct XorShift(u64);

impl XorShift {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
}

#[test]
fn mutated_fixtures_never_panic() {
    let mut rng = XorShift(0x9e37_79b9_7f4a_7c15);
    for fixture in [
        REFS_P0,
        REFS_P2,
        REFS_P5,
        COMPOUND_P5,
        VOIDS_P2,
        MIXED_P2,
        NESTED_P5,
        DICTS_P5,
    ] {
        let base = b64(fixture);
        for _ in 0..400 {
            let mut data = base.clone();
            for _ in 0..1 + rng.next() % 4 {
                let i = (rng.next() as usize) % data.len();
                data[i] = rng.next() as u8;
            }
            let _ = decode_object_array(&data);
            let _ = decode_value(&data);
        }
    }
}

// ---------------------------------------------------------------------------------------------
// The writer

#[test]
fn writer_output_reads_back() {
    for (name, shape, items, record) in writer_cases() {
        let bytes = encode_object_array(&shape, &items, record.as_deref()).unwrap();
        let array = decode_object_array(&bytes).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(array.shape, shape, "{name}");
        assert!(!array.fortran);
        match &record {
            None => {
                assert_eq!(array.items, items, "{name}");
                assert_eq!(array.field_names, None);
            }
            Some(fields) => {
                let names: Vec<String> = fields.iter().map(|f| f.name.clone()).collect();
                assert_eq!(array.field_names.as_ref(), Some(&names), "{name}");
                for (got, given) in array.items.iter().zip(&items) {
                    let given = match given {
                        Value::Array(values) => Value::Object(
                            names.iter().cloned().zip(values.iter().cloned()).collect(),
                        ),
                        other => other.clone(),
                    };
                    let mut given = given;
                    // "NaN" in a float field is stored as a float.
                    if given.get("e") == Some(&json!("NaN")) {
                        given["e"] = nan();
                    }
                    assert_eq!(got, &given, "{name}");
                }
            }
        }
    }
}

#[test]
fn writer_output_is_stable() {
    // Loaded by NumPy 2.4 and 2.5 (`pickle.loads`) when this was written; a change to the
    // writer must be checked against NumPy again (tests/interop/*/test_pickle_writer_numpy_*.py).
    let golden = golden_cases();
    assert_eq!(hex(&golden[0].1), WRITER_GOLDEN_OBJECTS);
    assert_eq!(hex(&golden[1].1), WRITER_GOLDEN_RECORD);
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[test]
fn writer_refuses_what_it_cannot_write() {
    let err = |shape: &[usize], items: &[Value], record: Option<&[RecordField]>| {
        encode_object_array(shape, items, record)
            .unwrap_err()
            .to_string()
    };
    assert!(err(&[3], &[json!(1)], None).contains("1 items for shape [3]"));
    let fields = record_fields();
    assert!(
        err(&[1], &[json!({"idx_start": 0, "count": 1})], Some(&fields))
            .contains("field \"timeseries\" is missing")
    );
    assert!(err(
        &[1],
        &[json!({"idx_start": 0, "count": 1, "timeseries": null, "x": 1})],
        Some(&fields)
    )
    .contains("no field is named \"x\""));
    assert!(err(&[1], &[json!([1, 2])], Some(&fields)).contains("a list of 3 values"));
    assert!(err(
        &[1],
        &[json!({"idx_start": 2_147_483_648u64, "count": 1, "timeseries": null})],
        Some(&fields)
    )
    .contains("2147483648 is out of range -2147483648..=2147483647"));
    assert!(err(
        &[1],
        &[json!({"idx_start": 1.5, "count": 1, "timeseries": null})],
        Some(&fields)
    )
    .contains("1.5 is not a valid value"));
    let complex = [RecordField {
        name: "z".into(),
        kind: RecordKind::Numeric("<c8".into()),
    }];
    assert!(err(&[1], &[json!([0])], Some(&complex)).contains("\"<c8\" is not supported"));
    assert!(err(&[1], &[json!(1)], Some(&[])).contains("at least one field"));
    let mut deep = json!(1);
    for _ in 0..200 {
        deep = json!([deep]);
    }
    assert!(err(&[1], &[deep], None).contains("deeper than 128"));
}

// ---------------------------------------------------------------------------------------------
// The codec

fn texts(bytes: &ArrayBytes) -> Vec<String> {
    let ArrayBytes::Variable { data, offsets } = bytes else {
        panic!("not variable-length: {bytes:?}");
    };
    offsets
        .windows(2)
        .map(|w| String::from_utf8(data[w[0]..w[1]].to_vec()).unwrap())
        .collect()
}

#[test]
fn real_hdmf_zarr_chunks_decode_through_the_v2_chain() {
    // refs/.zarray: "|O", filters [{"id": "pickle", "protocol": 5}], blosc lz4, chunks [2] of
    // shape [3]; the edge chunk is padded with the fill value 0.
    let blosc = json!({"blocksize": 0, "clevel": 5, "cname": "lz4", "id": "blosc", "shuffle": 1});
    let filters = [json!({"id": "pickle", "protocol": 5})];
    let chain =
        CodecChain::from_v2(false, Some(&filters), Some(&blosc), None, &repr(&[2])).unwrap();
    let r = |p: &str, o: &str| {
        format!(r#"{{"source":".","path":"{p}","object_id":"{o}","source_object_id":"root-0"}}"#)
    };
    let first = chain.decode(b64(ZARR_REFS_0), &repr(&[2])).unwrap();
    assert_eq!(texts(&first), vec![r("/a", "o1"), r("/b", "o2")]);
    let edge = chain.decode(b64(ZARR_REFS_1), &repr(&[2])).unwrap();
    assert_eq!(texts(&edge), vec![r("/c", "o3"), "0".to_string()]);

    // comp/.zarray: [["idx_start","<i4"],["count","<i4"],["timeseries","|O"]], read as text.
    let (data_type, _) = neurochunk_dtype::v2::dtype_from_json(
        &json!([["idx_start", "<i4"], ["count", "<i4"], ["timeseries", "|O"]]),
        Some("pickle"),
    )
    .unwrap();
    assert_eq!(data_type, DataType::String);
    let comp = chain.decode(b64(ZARR_COMP_0), &repr(&[2])).unwrap();
    assert_eq!(
        texts(&comp),
        vec![
            format!(
                r#"{{"idx_start":0,"count":5,"timeseries":{}}}"#,
                r("/a", "o1")
            ),
            format!(
                r#"{{"idx_start":5,"count":3,"timeseries":{}}}"#,
                r("/b", "o2")
            ),
        ]
    );
    // The chain writes its filters back unchanged.
    let v2 = chain.to_v2().unwrap();
    assert_eq!(v2.filters, Some(filters.to_vec()));
    assert_eq!(v2.compressor, Some(blosc));
}

#[test]
fn codec_element_texts() {
    let chain = pickle_chain(&[19]);
    let decoded = chain.decode(b64(MIXED_P2), &repr(&[19])).unwrap();
    let got = texts(&decoded);
    assert_eq!(got[0], "plain");
    assert_eq!(got[1], "é🦀");
    assert_eq!(got[2], "");
    assert_eq!(got[4], "0");
    assert_eq!(got[9], "18446744073709551615");
    assert_eq!(got[11], "1.5");
    assert_eq!(got[12], "NaN");
    assert_eq!(got[13], "-Infinity");
    assert_eq!(got[14], "true");
    assert_eq!(got[15], "null");
    assert_eq!(got[16], "bytes");
    let chain = pickle_chain(&[2]);
    let dicts = texts(&chain.decode(b64(DICTS_P5), &repr(&[2])).unwrap());
    assert_eq!(
        dicts[0],
        r#"{"a":1,"b":[1,2.5,"x"],"c":null,"d":true,"e":{"nested":"é"},"big":9223372036854775813,"neg":-1099511627776,"nan":NaN,"inf":-Infinity,"bytes":"raw","tup":[1,"two"]}"#
    );
    assert_eq!(dicts[1], "{}");
}

#[test]
fn codec_orders_fortran_chunks_like_zarr() {
    // zarr-python flattens a Fortran-contiguous chunk in Fortran order (reshape order "A").
    let chain = pickle_chain(&[3, 2]);
    let decoded = chain.decode(b64(FORTRAN_P5), &repr(&[3, 2])).unwrap();
    assert_eq!(
        texts(&decoded),
        ["r0c0", "r1c0", "r0c1", "r1c1", "r0c2", "r1c2"]
    );
}

#[test]
fn codec_round_trips_and_checks_counts() {
    let chain = pickle_chain(&[2, 2]);
    let given = ["x", "{\"k\":1}", "é🦀", ""];
    let encoded = chain.encode(variable(&given), &repr(&[2, 2])).unwrap();
    let decoded = chain.decode(encoded.clone(), &repr(&[2, 2])).unwrap();
    assert_eq!(texts(&decoded), given);
    // Text is written as a Python str; JSON-object text (how the decoder presents
    // dictionaries such as hdmf-zarr's references) is written back as a dict.
    let array = decode_object_array(&encoded).unwrap();
    assert_eq!(array.shape, vec![2, 2]);
    assert_eq!(array.items[0], json!("x"));
    assert_eq!(array.items[1], json!({"k": 1}));
    // The same elements read as a flat chunk of 4 (zarr-python reshapes), not as 3.
    assert!(pickle_chain(&[4])
        .decode(encoded.clone(), &repr(&[4]))
        .is_ok());
    let err = pickle_chain(&[3]).decode(encoded, &repr(&[3])).unwrap_err();
    assert!(matches!(err, CodecError::Corrupt { .. }), "{err:?}");
    assert!(
        err.to_string()
            .contains("holds 4 elements (shape [2, 2]), expected 3"),
        "{err}"
    );
    // Refused globals surface as unsupported, naming the global.
    let err = pickle_chain(&[1])
        .decode(b64(EVIL_SYSTEM_P2), &repr(&[1]))
        .unwrap_err();
    assert!(matches!(err, CodecError::Unsupported { .. }), "{err:?}");
    assert!(err.to_string().contains("'posix.system'"), "{err}");
}

#[test]
fn codec_registration_and_configuration() {
    let registry = CodecRegistry::global();
    assert!(registry.v2_ids().contains(&"pickle".to_string()));
    assert!(registry
        .v3_names()
        .contains(&"numcodecs.pickle".to_string()));
    let codec = registry
        .create_v3("numcodecs.pickle", &json!({"protocol": 4}), &repr(&[1]))
        .unwrap();
    let AnyCodec::ArrayToBytes(codec) = codec else {
        panic!("pickle is an array→bytes codec");
    };
    assert_eq!(
        codec.to_v3_json(),
        json!({"name": "numcodecs.pickle", "configuration": {"protocol": 4}})
    );
    assert_eq!(
        codec.to_v2_json(),
        Some(json!({"id": "pickle", "protocol": 4}))
    );
    // Only object arrays (read as text) can use it.
    let numeric = ChunkRepr {
        shape: vec![1],
        data_type: DataType::Int32,
        fill_value: vec![0; 4],
    };
    let err = registry
        .create_v2(&json!({"id": "pickle", "protocol": 5}), &numeric)
        .unwrap_err();
    assert!(err.to_string().contains("only object (|O) arrays"), "{err}");
    let err = registry
        .create_v2(&json!({"id": "pickle", "protocol": 9}), &repr(&[1]))
        .unwrap_err();
    assert!(
        err.to_string()
            .contains("'protocol' must be between -1 and 5"),
        "{err}"
    );
    // Without an object codec, |O arrays name pickle among the choices.
    let err = CodecChain::from_v2(false, None, None, None, &repr(&[1])).unwrap_err();
    assert!(err.to_string().contains("json2 or pickle"), "{err}");
}
