"""`convert --resume`: a conversion that was interrupted (a write refused through the fault
proxy, or the process killed) and started again with `--resume` converts only the chunks it
had not stored yet, and ends with the same data as an uninterrupted conversion.

* to S3: a PUT of the last chunk is refused (403, not retried); the resumed run PUTs only the
  chunks the first one did not store;
* to a local directory, from S3 behind a slow proxy: the process is killed (SIGKILL) while it
  converts; the resumed run takes over the tree the killed one left staged beside the
  destination and reads only the source chunks of the destination chunks still missing.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time

import numpy as np

from ncli import assert_same_array, cli_form
from remote_cases import peer_read, peer_write, staged

DATA = (np.arange(64 * 64, dtype="<i4").reshape(64, 64) * 7) % 1009 - 300  # no chunk all fill


def chunk_puts(proxy, status=200) -> int:
    return proxy.count(method="PUT", path_contains="/dst.zarr/c/", status=status)


def test_resume_after_a_refused_write_puts_only_the_missing_chunks(rnc, s3, bucket, proxy_for, tmp_path):
    src = tmp_path / "src.zarr"
    peer_write(str(src), DATA, "v3", chunks=(16, 16))
    proxy = proxy_for(s3)
    cli = rnc.using(s3.via(proxy))
    dst = f"s3://{bucket}/dst.zarr"
    args = ("convert", src, dst, "--format", "zarr3", "--chunks", "8,8")  # 64 chunks
    proxy.fail(403, method="PUT", path_contains="/dst.zarr/c/7/7")
    first = cli.run(*args, "--resume", check=False)
    assert first.returncode != 0 and "dst.zarr/c/7/7" in first.stderr, first.stderr
    stored_first = chunk_puts(proxy)
    assert 0 < stored_first < 64, proxy.summary()
    marker = json.loads(s3.get_bytes(bucket, "dst.zarr/.neurochunk-convert.json"))
    assert marker["source"] == str(src)

    # Other options are another conversion: refused, nothing written.
    proxy.reset()
    other = cli.run("convert", src, dst, "--format", "zarr3", "--chunks", "4,4", "--resume", check=False)
    assert other.returncode != 0 and "nothing to resume" in other.stderr, other.stderr
    assert proxy.count(method="PUT") == 0 and proxy.count(method="DELETE") == 0, proxy.summary()

    proxy.reset()
    second = cli.run(*args, "--resume")
    assert "resuming" in second.stderr
    stored_second = chunk_puts(proxy)
    assert stored_first + stored_second == 64, (stored_first, stored_second, proxy.summary())
    assert stored_second <= 16, proxy.summary()
    assert_same_array(peer_read(s3.fsspec_store(bucket, "dst.zarr", read_only=True)), DATA)
    keys = s3.keys(bucket, "dst.zarr/")
    assert ".neurochunk-convert.json" not in " ".join(keys), keys
    assert len([k for k in keys if "/c/" in k]) == 64

    # Nothing left to resume: a finished conversion is not one.
    proxy.reset()
    again = cli.run(*args, "--resume", check=False)
    assert again.returncode != 0 and "nothing to resume" in again.stderr, again.stderr


def test_resume_after_the_process_was_killed_reads_only_what_is_missing(rnc, s3, bucket, proxy_for, tmp_path):
    staged(s3, bucket, "src.zarr", tmp_path, lambda p: peer_write(p, DATA, "v2", chunks=(8, 8)))
    proxy = proxy_for(s3)
    cli = rnc.using(s3.via(proxy), extra_flags=["--max-requests", "4"])
    out = tmp_path / "out" / "dst.zarr"
    out.parent.mkdir()
    args = ["convert", f"s3://{bucket}/src.zarr", str(out), "--format", "zarr3", "--chunks", "8,8"]
    # Slow chunk reads, so that the kill lands in the middle of the conversion.
    proxy.delay(0.15, method="GET", path_regex=r"/src\.zarr/\d+\.\d+$")
    proc = subprocess.Popen(
        [str(cli.binary), *cli.global_flags, *args, "--resume"],
        env=cli.env, cwd=cli.cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
    )
    try:
        deadline = time.monotonic() + 60
        staged_dirs = []
        while time.monotonic() < deadline:
            staged_dirs = [d for d in out.parent.iterdir() if d.name.startswith(".dst.zarr.neurochunk-staging-")]
            written = [f for d in staged_dirs for f in (d / "c").rglob("*") if f.is_file()] if staged_dirs else []
            if len(written) >= 16:
                break
            assert proc.poll() is None, proc.communicate()
            time.sleep(0.05)
        os.kill(proc.pid, signal.SIGKILL)
    finally:
        proc.wait(10)
    assert not out.exists(), "a killed conversion published its tree"
    assert len(staged_dirs) == 1, staged_dirs
    done = len([f for f in (staged_dirs[0] / "c").rglob("*") if f.is_file() and not f.name.startswith(".")])
    assert 16 <= done < 64, done

    proxy.reset()
    proxy.clear()
    second = cli.run(*args, "--resume")
    assert "resuming" in second.stderr, second.stderr
    source_reads = proxy.count(method="GET", path_regex=r"/src\.zarr/\d+\.\d+$")
    assert source_reads <= 64 - done + 8, (source_reads, done, proxy.summary())
    assert_same_array(cli.get(out), cli_form(DATA))
    assert not (out / ".neurochunk-convert.json").exists()
    assert [d.name for d in out.parent.iterdir()] == ["dst.zarr"], "the staged tree was taken over, not left behind"
