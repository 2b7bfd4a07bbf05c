"""Progress of long remote jobs: `get` and `convert` of an array on S3, run with standard error
on a pseudo-terminal, draw a bar (or spinner) naming the bytes read and the requests made;
with `--no-progress` or `--quiet`, or with standard error not a terminal, nothing is drawn."""

from __future__ import annotations

import os
import pty
import re
import subprocess

import numpy as np

from ncli import assert_same_array, cli_form
from remote_cases import peer_write, staged

DATA = np.arange(48 * 48, dtype="<i4").reshape(48, 48)


def run_on_a_terminal(cli, *args) -> tuple[int, str]:
    """Run the CLI with standard error on a pseudo-terminal; (exit status, what it drew)."""
    master, slave = pty.openpty()
    try:
        proc = subprocess.Popen(
            [str(cli.binary), *cli.global_flags, *map(str, args)],
            env={**cli.env, "TERM": "xterm"}, cwd=cli.cwd,
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=slave,
        )
        os.close(slave)
        slave = -1
        chunks = []
        while True:
            try:
                data = os.read(master, 65536)
            except OSError:  # EIO: the terminal's other end is closed
                break
            if not data:
                break
            chunks.append(data)
        return proc.wait(60), b"".join(chunks).decode(errors="replace")
    finally:
        os.close(master)
        if slave != -1:
            os.close(slave)


def test_remote_get_and_convert_show_bytes_and_requests(rnc, s3, bucket, proxy_for, tmp_path):
    staged(s3, bucket, "a.zarr", tmp_path, lambda p: peer_write(p, DATA, "v3", chunks=(8, 8)))  # 36 chunks
    proxy = proxy_for(s3)
    proxy.delay(0.05, method="GET")  # long enough for a few redraws
    cli = rnc.using(s3.via(proxy), extra_flags=["--max-requests", "2"])
    url = f"s3://{bucket}/a.zarr"

    status, drawn = run_on_a_terminal(cli, "get", url, "-o", tmp_path / "a.npy")
    assert status == 0, drawn
    assert f"reading {url}" in drawn, drawn
    assert re.search(r"\d+(\.\d+)? (B|KiB) read, \d+ requests", drawn), drawn
    assert_same_array(np.load(tmp_path / "a.npy"), cli_form(DATA))

    status, drawn = run_on_a_terminal(cli, "convert", url, tmp_path / "b.zarr", "--format", "zarr2", "--chunks", "8,8")
    assert status == 0, drawn
    assert "converting" in drawn and re.search(r"/36 chunks", drawn), drawn
    assert re.search(r"read, \d+ requests", drawn), drawn

    for flag in ("--no-progress", "--quiet", "-q"):
        status, drawn = run_on_a_terminal(cli, flag, "get", url, "-o", tmp_path / "c.npy")
        assert status == 0 and drawn.strip() == "", (flag, drawn)

    # Standard error not a terminal: nothing but errors.
    proc = cli.run("convert", url, tmp_path / "d.zarr", "--format", "zarr2")
    assert proc.stderr == "", proc.stderr
