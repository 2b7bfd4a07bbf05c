"""neurochunk against real S3 servers (moto and rclone, every test against both), with peers on
the other side:

* we write, peers read: `neurochunk put IN.npy s3://bucket/a.zarr` in Zarr v2, v3, sharded v3
  and N5, read back by zarr-python 3 (FsspecStore over s3fs) and by tensorstore's `s3` kvstore
  (which reaches a custom endpoint: `"endpoint"` in the kvstore spec, keys from AWS_* variables);
  N5 by tensorstore only (zarr-python 3 has no N5);
* peers write, we read: zarr-python 3 writes v2 / v3 / sharded arrays and hierarchies into the
  bucket; `neurochunk get`, `get --region`, `tree --json`, `info --json`;
* `convert` s3 -> local, local -> s3, s3 -> s3; `consolidate` on s3 read back by
  `zarr.open_group(..., use_consolidated=True)`;
* `table convert` to and from s3, with pyarrow's own S3FileSystem (endpoint_override) reading;
* `nwb inspect --json` of an hdmf-zarr file uploaded to the bucket equals the zarr-python walk of
  the local copy.

The endpoint reaches the CLI through the standard AWS variables (the `rnc` fixture), and in
`test_put_endpoint_given_each_way` also as `--endpoint/--bucket-region` flags and as
NEUROCHUNK_ENDPOINT/NEUROCHUNK_BUCKET_REGION.
"""

from __future__ import annotations

import json

import numpy as np
import pytest

from hierarchy import check_info_common, check_tree
from ncli import assert_same_array, cli_form, select
from remote_cases import (
    FLOAT, HIERARCHY_PATHS, INT, PEER_LAYOUTS, PUT_LAYOUTS, REGION, peer_hierarchy, peer_read, peer_write,
    staged, tensorstore_read,
)

# --------------------------------------------------------------------------------------------
# We write, peers read
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("layout", list(PUT_LAYOUTS))
def test_put_then_peers_read(rnc, s3, bucket, layout):
    fmt, options, zarr_python, driver = PUT_LAYOUTS[layout]
    url = f"s3://{bucket}/w/a.zarr"
    rnc.put(INT, url, fmt, **options)
    keys = s3.keys(bucket)
    assert keys and all(k.startswith("w/a.zarr/") for k in keys), keys
    if zarr_python:
        assert_same_array(peer_read(s3.fsspec_store(bucket, "w/a.zarr", read_only=True)), INT, f"zarr-python {layout}")
    assert_same_array(tensorstore_read(s3, bucket, "w/a.zarr", driver), INT, f"tensorstore {layout}")


@pytest.mark.parametrize("mode", ["aws", "flags", "env"])
def test_put_endpoint_given_each_way(rnc, s3, bucket, mode):
    cli = rnc.using(mode=mode)
    url = f"s3://{bucket}/{mode}.zarr"
    cli.put(FLOAT, url, "zarr3", chunks=(2, 3, 4))
    np.testing.assert_array_equal(peer_read(s3.fsspec_store(bucket, f"{mode}.zarr", read_only=True)), FLOAT)
    assert_same_array(cli.get(url), FLOAT, f"get back ({mode})")


def test_put_replaces_an_existing_array(rnc, s3, bucket):
    url = f"s3://{bucket}/a.zarr"
    rnc.put(INT, url, "zarr3", chunks=(2, 2))
    rnc.put(INT[:4, :5], url, "zarr3", chunks=(4, 5))
    assert_same_array(peer_read(s3.fsspec_store(bucket, "a.zarr", read_only=True)), INT[:4, :5])
    # No chunk of the first, finer-chunked array is left behind.
    assert s3.keys(bucket) == ["a.zarr/c/0/0", "a.zarr/zarr.json"]


def test_writers_never_empty_a_prefix_holding_other_objects(rnc, s3, bucket, tmp_path, ecephys_nwb):
    """A prefix holding objects that are not part of what a command writes is refused, every
    object kept; `--overwrite` replaces it; an earlier output of the same kind is replaced."""
    import pyarrow.parquet as pq

    client = s3.client()
    notes = {"exp/notes.txt": b"my notes", "exp/raw/cell.tif": b"pixels"}
    for key, body in notes.items():
        client.put_object(Bucket=bucket, Key=key, Body=body)
    src = tmp_path / "src.zarr"
    rnc.put(INT, src, "zarr3")
    table = tmp_path / "in.skeletons.parquet"
    pq.write_table(_skeleton(), table)
    url = f"s3://{bucket}/exp"
    for args in [
        ("put", rnc._scratch_file("in", ".npy"), url, "--format", "zarr3"),
        ("convert", src, url),
        ("pyramid", src, url, "--levels", "2"),
        ("nwb", "demo", url),
        ("nwb", "convert", ecephys_nwb[0], url, "--convention", "zarr3"),
        ("demo", url, "--size", "8"),
        ("table", "convert", table, url, "--partition-by", "fragment_id"),
    ]:
        if args[0] == "put":
            np.save(args[1], INT, allow_pickle=False)
        rnc.fails(*args, names=[url, "notes.txt", "--overwrite"])
        for key, body in notes.items():
            assert s3.get_bytes(bucket, key) == body, (args, key)
    forced = rnc._scratch_file("forced", ".npy")
    np.save(forced, INT, allow_pickle=False)
    rnc.run("put", forced, url, "--format", "zarr3", "--overwrite")
    keys = s3.keys(bucket, "exp/")
    assert "exp/zarr.json" in keys and not set(notes) & set(keys), keys
    # Our own output is replaced without being asked.
    rnc.run("convert", src, url, "--format", "zarr2")
    assert "exp/.zarray" in s3.keys(bucket, "exp/") and "exp/zarr.json" not in s3.keys(bucket, "exp/")


def test_put_into_a_group_creates_the_missing_parent_groups(rnc, s3, bucket, tmp_path):
    """As for a local path: a URL below an existing group is a node of its hierarchy; the
    groups between them are created, the group's other members are kept."""
    import zarr

    staged(s3, bucket, "h.zarr", tmp_path, lambda p: peer_hierarchy(p, 3))
    before = [k for k in s3.keys(bucket, "h.zarr/") if not k.startswith("h.zarr/sub/deeper/")]
    rnc.put(FLOAT, f"s3://{bucket}/h.zarr/sub/deeper/new", "zarr3", chunks=(2, 3, 4))
    keys = s3.keys(bucket)
    assert set(before) <= set(keys), sorted(set(before) - set(keys))
    assert "h.zarr/sub/deeper/zarr.json" in keys
    assert json.loads(s3.get_bytes(bucket, "h.zarr/sub/deeper/zarr.json"))["node_type"] == "group"
    g = zarr.open_group(s3.fsspec_store(bucket, "h.zarr", read_only=True), mode="r", use_consolidated=False)
    np.testing.assert_array_equal(g["sub/deeper/new"][...], FLOAT)
    np.testing.assert_array_equal(g["raw"][...], INT)
    assert g["sub"].attrs["name"] == "bär"
    check_tree(rnc.tree(f"s3://{bucket}/h.zarr"), {p: {} for p in HIERARCHY_PATHS | {"/sub/deeper", "/sub/deeper/new"}})


def test_put_replaces_one_node_of_a_hierarchy_and_keeps_its_siblings(rnc, s3, bucket, tmp_path):
    staged(s3, bucket, "h.zarr", tmp_path, lambda p: peer_hierarchy(p, 2))
    others = [k for k in s3.keys(bucket, "h.zarr/") if not k.startswith("h.zarr/raw/")]
    rnc.put(INT[:3, :4], f"s3://{bucket}/h.zarr/raw", "zarr2", chunks=(3, 4))
    keys = s3.keys(bucket)
    assert [k for k in keys if k.startswith("h.zarr/raw/")] == ["h.zarr/raw/.zarray", "h.zarr/raw/0.0"]
    assert set(others) <= set(keys)
    assert_same_array(rnc.get(f"s3://{bucket}/h.zarr/raw"), cli_form(INT[:3, :4]))
    assert_same_array(rnc.get(f"s3://{bucket}/h.zarr/sub/x"), cli_form(np.linspace(0, 1, 6)))


def test_put_n5_dataset_deep_in_a_new_container(rnc, s3, bucket):
    """`put IN s3://b/c.n5/a/b/ds` on an empty bucket: dataset a/b/ds of a new container c.n5
    (root attributes with the N5 version, groups a and a/b), read by tensorstore."""
    rnc.put(INT, f"s3://{bucket}/c.n5/a/b/ds", "n5", chunks=(4, 5))
    keys = s3.keys(bucket)
    assert {"c.n5/attributes.json", "c.n5/a/attributes.json", "c.n5/a/b/attributes.json", "c.n5/a/b/ds/attributes.json"} <= set(keys)
    assert "n5" in json.loads(s3.get_bytes(bucket, "c.n5/attributes.json"))
    assert_same_array(tensorstore_read(s3, bucket, "c.n5/a/b/ds", "n5"), INT)
    check_tree(rnc.tree(f"s3://{bucket}/c.n5"), {p: {} for p in ("/", "/a", "/a/b", "/a/b/ds")})


def test_anonymous_read_of_a_public_bucket(neurochunk_binary, servers, tmp_path):
    """`--anon` with no credentials at all: a bucket whose policy lets anyone read is read; a
    private one is a clean error naming the URL. moto only: it evaluates bucket policies for
    unsigned requests (rclone with --auth-key refuses every unsigned request)."""
    from remote_cli import RemoteNeurochunk

    moto = servers.s3("moto")
    public, private = moto.create_bucket(), moto.create_bucket()
    policy = {
        "Version": "2012-10-17",
        "Statement": [{
            "Effect": "Allow", "Principal": "*", "Action": ["s3:GetObject", "s3:ListBucket"],
            "Resource": [f"arn:aws:s3:::{public}", f"arn:aws:s3:::{public}/*"],
        }],
    }
    moto.client().put_bucket_policy(Bucket=public, Policy=json.dumps(policy))
    for b in (public, private):
        peer_write(moto.fsspec_store(b, "a.zarr"), INT, "v3")
    anon = RemoteNeurochunk(neurochunk_binary, tmp_path / "_anon", moto, mode="anon")
    assert_same_array(anon.get(f"s3://{public}/a.zarr"), cli_form(INT))
    anon.fails("get", f"s3://{private}/a.zarr", "-o", anon.scratch / "x.npy", names=[f"s3://{private}/a.zarr"])


# --------------------------------------------------------------------------------------------
# Peers write, we read
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("layout", list(PEER_LAYOUTS))
def test_peer_writes_then_get(rnc, s3, bucket, layout):
    peer_write(s3.fsspec_store(bucket, "p/a.zarr"), INT, layout, attributes={"unit": "µV"})
    url = f"s3://{bucket}/p/a.zarr"
    assert_same_array(rnc.get(url), cli_form(INT), f"get {layout}")
    assert_same_array(rnc.get(url, region=REGION), cli_form(select(INT, REGION)), f"get --region {layout}")
    info = rnc.info(url)
    check_info_common(info, "array", PEER_LAYOUTS[layout][0], {"unit": "µV"})
    assert info["shape"] == list(INT.shape)


def test_obstore_written_array_then_get(rnc, s3, bucket):
    peer_write(s3.obstore_store(bucket, "o.zarr"), FLOAT, "v3", chunks=(2, 3, 4))
    assert_same_array(rnc.get(f"s3://{bucket}/o.zarr"), cli_form(FLOAT))


@pytest.mark.parametrize("zarr_format", [2, 3])
def test_peer_hierarchy_tree_and_info(rnc, s3, bucket, zarr_format):
    peer_hierarchy(s3.fsspec_store(bucket, "h.zarr"), zarr_format)
    url = f"s3://{bucket}/h.zarr"
    check_tree(rnc.tree(url), {p: {} for p in HIERARCHY_PATHS})
    check_info_common(rnc.info(url), "group", zarr_format, {"title": "remote", "n": 3})
    check_info_common(rnc.info(f"{url}/sub"), "group", zarr_format, {"name": "bär"})
    assert_same_array(rnc.get(f"{url}/raw"), cli_form(INT))


def test_missing_array_is_a_clean_error(rnc, s3, bucket):
    url = f"s3://{bucket}/nothing.zarr"
    rnc.fails("get", url, "-o", rnc.scratch / "x.npy", names=[url])


def test_missing_bucket_is_a_clean_error(rnc, s3):
    url = "s3://no-such-bucket-here/a.zarr"
    rnc.fails("info", url, "--json", names=["no-such-bucket-here"])


# --------------------------------------------------------------------------------------------
# convert, consolidate
# --------------------------------------------------------------------------------------------


def test_convert_s3_to_local(rnc, s3, bucket, tmp_path):
    peer_write(s3.fsspec_store(bucket, "src.zarr"), INT, "v2")
    out = tmp_path / "out.zarr"
    rnc.convert(f"s3://{bucket}/src.zarr", out, "zarr3", chunks=(3, 3))
    assert (out / "zarr.json").is_file()
    assert_same_array(peer_read(str(out)), INT)


def test_convert_local_to_s3(rnc, s3, bucket, tmp_path):
    src = tmp_path / "src.zarr"
    peer_write(str(src), FLOAT, "v3", chunks=(2, 3, 4))
    rnc.convert(src, f"s3://{bucket}/dst.zarr", "zarr2", chunks=(5, 3, 2))
    assert "dst.zarr/.zarray" in s3.keys(bucket)
    assert_same_array(peer_read(s3.fsspec_store(bucket, "dst.zarr", read_only=True)), FLOAT)


def test_convert_s3_to_s3_another_bucket_sharded(rnc, s3, bucket):
    peer_write(s3.fsspec_store(bucket, "src.zarr"), INT, "v3")
    other = s3.create_bucket()
    rnc.convert(f"s3://{bucket}/src.zarr", f"s3://{other}/dst.zarr", "zarr3", chunks=(2, 3), shards=(4, 6))
    assert_same_array(peer_read(s3.fsspec_store(other, "dst.zarr", read_only=True)), INT)
    meta = json.loads(s3.get_bytes(other, "dst.zarr/zarr.json"))
    assert meta["codecs"][0]["name"] == "sharding_indexed"


def test_convert_s3_hierarchy_to_s3_n5(rnc, s3, bucket, tmp_path):
    staged(s3, bucket, "h.zarr", tmp_path, lambda p: peer_hierarchy(p, 3))
    rnc.convert(f"s3://{bucket}/h.zarr", f"s3://{bucket}/h.n5", "n5")
    assert_same_array(tensorstore_read(s3, bucket, "h.n5/raw", "n5"), INT)


@pytest.mark.parametrize("zarr_format", [2, 3])
def test_consolidate_on_s3(rnc, s3, bucket, zarr_format, tmp_path):
    import zarr

    staged(s3, bucket, "h.zarr", tmp_path, lambda p: peer_hierarchy(p, zarr_format))
    rnc.consolidate(f"s3://{bucket}/h.zarr")
    if zarr_format == 2:
        assert "h.zarr/.zmetadata" in s3.keys(bucket)
    else:
        assert "consolidated_metadata" in json.loads(s3.get_bytes(bucket, "h.zarr/zarr.json"))
    g = zarr.open_group(s3.fsspec_store(bucket, "h.zarr", read_only=True), mode="r", use_consolidated=True)
    assert g.metadata.consolidated_metadata is not None
    assert set(g.metadata.consolidated_metadata.flattened_metadata) >= {"raw", "sub", "sub/x"}
    np.testing.assert_array_equal(g["raw"][...], INT)


def test_convert_with_consolidate_s3_to_s3(rnc, s3, bucket, tmp_path):
    import zarr

    staged(s3, bucket, "h.zarr", tmp_path, lambda p: peer_hierarchy(p, 3))
    rnc.convert(f"s3://{bucket}/h.zarr", f"s3://{bucket}/c.zarr", "zarr2", consolidate=True)
    assert "c.zarr/.zmetadata" in s3.keys(bucket)
    g = zarr.open_group(s3.fsspec_store(bucket, "c.zarr", read_only=True), mode="r", use_consolidated=True)
    np.testing.assert_array_equal(g["raw"][...], INT)


# --------------------------------------------------------------------------------------------
# Tables
# --------------------------------------------------------------------------------------------


def _skeleton():
    from table.na_tables import skeleton

    return skeleton(ids=[1, 2, 3, 4], frags=[7, 7, 9, 9], parents=[None, 1, None, 3])


def _read_arrow_ipc(fs, path):
    import pyarrow.ipc as ipc

    with fs.open_input_file(path) as f:
        return ipc.open_file(f).read_all()


def test_table_convert_local_to_s3(rnc, s3, bucket, tmp_path):
    import pyarrow.parquet as pq

    t = _skeleton()
    src = tmp_path / "in.skeletons.parquet"
    pq.write_table(t, src)
    rnc.run("table", "convert", src, f"s3://{bucket}/t/out.skeletons.arrow")
    back = _read_arrow_ipc(s3.arrow_fs(), f"{bucket}/t/out.skeletons.arrow")
    assert back.equals(t) and back.schema.equals(t.schema, check_metadata=True)


def test_table_convert_s3_to_local(rnc, s3, bucket, tmp_path):
    import pyarrow.ipc as ipc
    import pyarrow.parquet as pq

    t = _skeleton()
    pq.write_table(t, f"{bucket}/in.skeletons.parquet", filesystem=s3.arrow_fs())
    out = tmp_path / "out.skeletons.arrow"
    rnc.run("table", "convert", f"s3://{bucket}/in.skeletons.parquet", out)
    with open(out, "rb") as f:
        back = ipc.open_file(f).read_all()
    assert back.equals(t) and back.schema.equals(t.schema, check_metadata=True)


def test_table_convert_s3_to_s3_partitioned(rnc, s3, bucket):
    import pyarrow as pa
    import pyarrow.dataset as ds
    import pyarrow.parquet as pq

    t = _skeleton()
    fs = s3.arrow_fs()
    pq.write_table(t, f"{bucket}/in.skeletons.parquet", filesystem=fs)
    rnc.run("table", "convert", f"s3://{bucket}/in.skeletons.parquet", f"s3://{bucket}/hive.skeletons",
            "--partition-by", "fragment_id")
    keys = [k for k in s3.keys(bucket, "hive.skeletons/") if k.endswith(".parquet")]
    assert keys == ["hive.skeletons/fragment_id=7/part-0.skeletons.parquet", "hive.skeletons/fragment_id=9/part-0.skeletons.parquet"]
    part = ds.partitioning(pa.schema([pa.field("fragment_id", pa.uint64())]), flavor="hive")
    back = ds.dataset(f"{bucket}/hive.skeletons", filesystem=fs, format="parquet", partitioning=part).to_table()
    assert sorted(back.column("sample_id").to_pylist()) == [1, 2, 3, 4]


# --------------------------------------------------------------------------------------------
# NWB
# --------------------------------------------------------------------------------------------


@pytest.fixture(scope="session")
def ecephys_nwb(tmp_path_factory):
    """An hdmf-zarr (Zarr v3 convention) ecephys file written once, and its expected inspect."""
    import nwbfixtures
    import nwbwalk

    path = nwbfixtures.write_ecephys(tmp_path_factory.mktemp("nwb") / "ecephys.nwb.zarr")
    return path, nwbwalk.expected_inspect(path)


def test_nwb_inspect_of_a_file_in_the_bucket(rnc, s3, bucket, ecephys_nwb):
    from nwbcli import assert_inspect_equal

    local, expected = ecephys_nwb
    s3.upload_dir(local, bucket, "nwb/ecephys.nwb.zarr")
    proc = rnc.run("nwb", "inspect", "--json", f"s3://{bucket}/nwb/ecephys.nwb.zarr")
    assert_inspect_equal(json.loads(proc.stdout), expected)


@pytest.mark.parametrize("convention", ["zarr2", "zarr3"])
def test_nwb_convert_into_the_bucket_writes_the_same_tree_as_locally(rnc, s3, bucket, ecephys_nwb, tmp_path,
                                                                     convention):
    """`nwb convert` into S3 gathers its writes (answering its own reads from memory) and
    uploads them many at a time: the objects in the bucket are, byte for byte, the files a
    local conversion writes, and pynwb + hdmf-zarr read the downloaded v3 file."""
    from nwbpeer import assert_valid, open_nwb

    local, expected = ecephys_nwb
    here = tmp_path / f"here-{convention}.nwb.zarr"
    rnc.run("nwb", "convert", "--convention", convention, local, here)
    url = f"s3://{bucket}/conv/{convention}.nwb.zarr"
    rnc.run("nwb", "convert", "--convention", convention, local, url)
    there = s3.download_dir(bucket, f"conv/{convention}.nwb.zarr", tmp_path / f"there-{convention}")
    files = lambda root: {str(f.relative_to(root)): f.read_bytes() for f in root.rglob("*") if f.is_file()}
    ours, theirs = files(here), files(there)
    assert sorted(theirs) == sorted(ours)
    differ = [k for k in ours if ours[k] != theirs[k]]
    assert not differ, differ[:5]
    proc = rnc.run("nwb", "inspect", "--json", url)
    assert len(json.loads(proc.stdout)["objects"]) == len(expected["objects"])
    if convention == "zarr3":
        with open_nwb(there) as io:
            nwbfile = io.read()
            assert set(nwbfile.acquisition) == {name.rsplit("/", 1)[-1] for name in
                                                 (o["path"] for o in expected["objects"])
                                                 if name.startswith("/acquisition/") and name.count("/") == 2}
            assert_valid(io, "converted into S3")


def test_consolidate_in_the_bucket_equals_a_local_consolidate(rnc, s3, bucket, tmp_path):
    """`consolidate` walks the hierarchy in the bucket level by level (listings and documents
    many at once) and writes what it writes locally."""
    import zarr

    root = tmp_path / "h.zarr"
    g = zarr.open_group(str(root), mode="w", zarr_format=2)
    for i in range(12):
        sub = g.create_group(f"g{i}")
        sub.attrs["i"] = i
        sub.create_group("inner").create_array("a", shape=(4,), dtype="i2")
    s3.upload_dir(root, bucket, "h.zarr")
    rnc.run("consolidate", root)
    rnc.run("consolidate", f"s3://{bucket}/h.zarr")
    ours = json.loads((root / ".zmetadata").read_bytes())
    theirs = json.loads(s3.get_bytes(bucket, "h.zarr/.zmetadata"))
    assert theirs == ours
    assert len([k for k in ours["metadata"] if k.endswith(".zarray")]) == 12
    assert zarr.open_consolidated(str(root), zarr_format=2)["g7/inner"].attrs.asdict() == {}


# --------------------------------------------------------------------------------------------
# Every command that takes a path: table derive / from-swc / to-swc, demo
# --------------------------------------------------------------------------------------------

SWC_A = "# neuron seven\n1 1 0 0 0 1 -1\n2 3 1 0 0 1 1\n3 3 2 0 0 1 2\n"
SWC_B = "1 1 5 5 5 2 -1\n2 3 6 5 5 2 1\n"


def test_swc_in_and_out_of_the_bucket_and_derive(rnc, s3, bucket):
    import pyarrow.parquet as pq

    client = s3.client()
    client.put_object(Bucket=bucket, Key="swc/7.swc", Body=SWC_A.encode())
    client.put_object(Bucket=bucket, Key="swc/9.swc", Body=SWC_B.encode())
    client.put_object(Bucket=bucket, Key="swc/readme.txt", Body=b"not swc")
    table = f"s3://{bucket}/t/n.skeletons.parquet"
    out = rnc.run("table", "from-swc", f"s3://{bucket}/swc", table, "--context", "urn:t").stdout
    assert "5 samples in 2 fragment(s)" in out, out
    t = pq.read_table(f"{bucket}/t/n.skeletons.parquet", filesystem=s3.arrow_fs())
    assert sorted(set(t.column("fragment_id").to_pylist())) == [7, 9]
    derived = f"s3://{bucket}/t/d.skeletons.parquet"
    rnc.run("table", "derive", table, derived)
    d = pq.read_table(f"{bucket}/t/d.skeletons.parquet", filesystem=s3.arrow_fs())
    assert d.column("n_children").to_pylist() == [1, 1, 0, 1, 0]
    listed = rnc.run("table", "to-swc", derived, f"s3://{bucket}/back").stdout.split()
    assert listed == [f"s3://{bucket}/back/7.swc", f"s3://{bucket}/back/9.swc"]
    assert s3.get_bytes(bucket, "back/7.swc").decode() == SWC_A
    assert s3.get_bytes(bucket, "back/9.swc").decode() == SWC_B
    rnc.fails("table", "to-swc", derived, f"s3://{bucket}/one.swc", names=["2 fragments"])
    assert "one.swc" not in s3.keys(bucket)


def test_demo_into_the_bucket(rnc, s3, bucket):
    import zarr

    out = rnc.run("demo", f"s3://{bucket}/demo", "--size", "16").stdout
    assert "Everything written was read back and matched" in out, out
    keys = set(s3.keys(bucket))
    for key in ("demo/volume.zarr3.sharded/zarr.json", "demo/session.zarr2/.zmetadata",
                "demo/tables/demo.connections.parquet", "demo/ecephys.zarr3.nwb.zarr/zarr.json"):
        assert key in keys, key
    g = zarr.open_group(s3.fsspec_store(bucket, "demo/session.zarr2", read_only=True), mode="r")
    assert g.attrs["subject"] == "mouse-042"
    assert g["imaging/raw"].shape == (16, 16, 16)
    v = zarr.open_array(s3.fsspec_store(bucket, "demo/volume.zarr3.sharded", read_only=True), mode="r")
    assert_same_array(rnc.get(f"s3://{bucket}/demo/volume.zarr3.sharded"), v[...])


def test_npy_files_in_the_bucket(rnc, s3, bucket, tmp_path, ecephys_nwb):
    """`put s3://…/in.npy`, `get -o s3://…/out.npy`, `nwb get -o s3://…`: .npy files are objects
    too; NumPy reads what we wrote."""
    import io

    buf = io.BytesIO()
    np.save(buf, INT)
    s3.client().put_object(Bucket=bucket, Key="in/int.npy", Body=buf.getvalue())
    rnc.run("put", f"s3://{bucket}/in/int.npy", f"s3://{bucket}/a.zarr", "--format", "zarr3", "--chunks", "4,5")
    rnc.run("get", f"s3://{bucket}/a.zarr", "--region", REGION, "-o", f"s3://{bucket}/out/r.npy")
    back = np.load(io.BytesIO(s3.get_bytes(bucket, "out/r.npy")))
    assert_same_array(back, cli_form(select(INT, REGION)))
    local, _ = ecephys_nwb
    s3.upload_dir(local, bucket, "e.nwb.zarr")
    series = "/acquisition/ElectricalSeries/data"
    rnc.run("nwb", "get", f"s3://{bucket}/e.nwb.zarr", series, "-o", f"s3://{bucket}/out/series.npy")
    mine = np.load(io.BytesIO(s3.get_bytes(bucket, "out/series.npy")))
    import zarr
    np.testing.assert_array_equal(mine, zarr.open_array(str(local / series.lstrip("/")), mode="r")[...])


# --------------------------------------------------------------------------------------------
# Parquet pruning through ranged reads
# --------------------------------------------------------------------------------------------


def _wide_table(rows: int = 120_000):
    """Eight incompressible uint64 columns and a rising fragment_id (own fragments per row
    group of 20 000 rows)."""
    import pyarrow as pa

    rng = np.random.default_rng(7)
    cols = {f"c{i}": pa.array(rng.integers(0, 2**63, rows, dtype=np.uint64)) for i in range(8)}
    cols["fragment_id"] = pa.array(np.arange(rows, dtype=np.uint64) // 5_000)
    return pa.table(cols)


def test_parquet_projection_and_fragment_filter_fetch_only_what_they_need(rnc, s3, bucket, proxy_for, tmp_path):
    """Footer, then only the column chunks (of the row groups) needed, by ranged GETs, from
    both servers: rclone's answers to ranged GETs (200 with the requested bytes and a
    Content-Range) are taken as the partial answers they are, not as "ranges ignored"."""
    import pyarrow.ipc as ipc
    import pyarrow.parquet as pq

    t = _wide_table()
    pq.write_table(t, f"{bucket}/wide.parquet", filesystem=s3.arrow_fs(), row_group_size=20_000, compression="none")
    size = len(s3.get_bytes(bucket, "wide.parquet"))
    proxy = proxy_for(s3)
    cli = rnc.using(s3.via(proxy))
    out = tmp_path / "c3.arrow"
    cli.run("table", "convert", f"s3://{bucket}/wide.parquet", out, "--columns", "c3")
    got = GET_BYTES(proxy)
    back = ipc.open_file(out).read_all()
    assert back.column_names == ["c3"] and back.column("c3").equals(t.column("c3"))
    # One column of nine, plus the footer; every GET ranged.
    assert got < size / 5, f"a one-column read fetched {got} of {size} bytes:\n{proxy.summary()}"
    assert proxy.count(method="GET", ranged=False) == 0, proxy.summary()

    proxy.reset()
    out = tmp_path / "f.arrow"
    cli.run("table", "convert", f"s3://{bucket}/wide.parquet", out, "--columns", "c3,fragment_id", "--fragment", "13")
    got = GET_BYTES(proxy)
    back = ipc.open_file(out).read_all()
    assert back.column("fragment_id").to_pylist() == [13] * 5_000
    assert back.column("c3").equals(t.column("c3").slice(65_000, 5_000))
    # One row group of six, two columns.
    assert got < size / 15, f"one fragment fetched {got} of {size} bytes:\n{proxy.summary()}"


def GET_BYTES(proxy) -> int:
    return proxy.bytes_sent(method="GET")


# --------------------------------------------------------------------------------------------
# NWB external links across the remote root
# --------------------------------------------------------------------------------------------


@pytest.fixture
def nwb_external_layout(s3, bucket, ecephys_nwb, tmp_path):
    """In the bucket: lab/a/b/file.nwb.zarr (ts2's `timestamps` link retargeted by each test),
    lab/a/b/sibling.nwb.zarr and lab/ext.nwb.zarr (outside lab/a/b); returns a function that
    uploads file.nwb.zarr with its link's source set to `source`."""
    import nwbcraft

    local, _ = ecephys_nwb
    s3.upload_dir(local, bucket, "lab/a/b/sibling.nwb.zarr")
    s3.upload_dir(local, bucket, "lab/ext.nwb.zarr")

    def with_source(source: str) -> str:
        copy = nwbcraft.copy_store(local, tmp_path / f"file-{len(list(tmp_path.iterdir()))}.nwb.zarr")
        nwbcraft.retarget_link(copy, "/acquisition/ts2", "timestamps", "/acquisition/ts1/timestamps", source=source)
        s3.upload_dir(copy, bucket, "lab/a/b/file.nwb.zarr")
        return f"s3://{bucket}/lab/a/b/file.nwb.zarr"

    return with_source


def test_nwb_external_link_to_a_sibling_in_the_bucket_resolves(rnc, bucket, nwb_external_layout):
    url = nwb_external_layout("../sibling.nwb.zarr")
    proc = rnc.run("nwb", "check", url)
    assert "no problems" in proc.stdout, proc.stdout + proc.stderr
    deref = rnc.run("nwb", "get", url, "/acquisition/ts2/timestamps", "-o", rnc.scratch / "t.npy")
    assert deref.returncode == 0


def test_nwb_external_link_escaping_the_files_prefix_is_refused_unless_allowed(rnc, bucket, nwb_external_layout):
    url = nwb_external_layout("../../../ext.nwb.zarr")
    proc = rnc.run("nwb", "check", url, check=False)
    assert proc.returncode == 1, proc.stderr
    assert "/acquisition/ts2" in proc.stderr and "../../../ext.nwb.zarr" in proc.stderr, proc.stderr
    assert f"s3://{bucket}/lab/a/b" in proc.stderr and "--allow-external" in proc.stderr, proc.stderr
    err = rnc.fails("nwb", "get", url, "/acquisition/ts2/timestamps", "-o", rnc.scratch / "t.npy",
                    names=["../../../ext.nwb.zarr", "outside the allowed"])
    assert "panicked" not in err
    # Allowed when --allow-external covers the target; a prefix that does not cover it is not enough.
    assert rnc.run("nwb", "check", url, "--allow-external", f"s3://{bucket}/lab").returncode == 0
    assert rnc.run("nwb", "check", url, "--allow-external", f"s3://{bucket}/lab/a", check=False).returncode == 1
    assert rnc.run("nwb", "check", url, "--allow-any-external").returncode == 0
    # Another bucket is not a prefix of this one.
    rnc.fails("nwb", "check", url, "--allow-external", "s3://elsewhere/lab", names=["not in the bucket"])


def test_nwb_external_link_leaving_the_bucket_is_refused(rnc, bucket, nwb_external_layout):
    url = nwb_external_layout("../../../../../../../x.nwb.zarr")
    proc = rnc.run("nwb", "check", url, "--allow-any-external", check=False)
    assert proc.returncode == 1 and "outside the store" in proc.stderr, proc.stderr
