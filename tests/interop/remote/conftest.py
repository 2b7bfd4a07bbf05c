"""The remote-store suite runs in the .peers/py312 environment (zarr-python 3 with s3fs and
obstore, tensorstore, pyarrow, boto3, moto, rclone):

    .peers/py312/bin/python -m pytest tests/interop/remote

Session fixtures start real servers on 127.0.0.1, each on a free port and in its own process
group, and stop them at the end of the session whatever happened (see remote_servers.py):

* `moto_server` and `rclone serve s3` (over a temporary directory): the `s3` fixture is
  parametrized over both, so every S3 test runs against two independent implementations;
* `rclone serve http` over a temporary directory: the `http_root` fixture.

Per test: `bucket` (a fresh bucket on the `s3` server), `rnc` (the CLI pointed at the `s3`
server through the standard AWS variables), `proxy_for(server)` (a fault-injecting proxy in
front of a server, stopped at the end of the test; see faultproxy.py).

Peers in this process get AWS_REQUEST_CHECKSUM_CALCULATION / AWS_RESPONSE_CHECKSUM_VALIDATION
= when_required: rclone's S3 server refuses the aws-chunked uploads the AWS SDKs send by default
(pyarrow's S3FileSystem gets 411 MissingContentLength on UploadPart) and, for an object
uploaded with a checksum, sends the whole object's x-amz-checksum-crc32 with a ranged GET
(botocore then reports a checksum mismatch). The neurochunk CLI runs without these settings.
"""

from __future__ import annotations

import atexit
import os
from pathlib import Path

import pytest

from faultproxy import FaultProxy
from remote_cli import RemoteNeurochunk
from remote_servers import HttpRoot, S3Endpoint, start_moto, start_rclone_http, start_rclone_s3

for _name in list(os.environ):
    if _name.startswith("AWS_"):
        del os.environ[_name]
os.environ.update(
    {
        "AWS_REQUEST_CHECKSUM_CALCULATION": "when_required",
        "AWS_RESPONSE_CHECKSUM_VALIDATION": "when_required",
        "AWS_EC2_METADATA_DISABLED": "true",
        "AWS_CONFIG_FILE": os.devnull,
        "AWS_SHARED_CREDENTIALS_FILE": os.devnull,
    }
)

S3_SERVERS = ("moto", "rclone")
RCLONE_KEYS = ("rclone-test-access-key", "rclone-test-secret-key")
MOTO_KEYS = ("moto-test-access-key", "moto-test-secret-key")  # moto accepts any


class Servers:
    """The running servers of the session (started lazily, each at most once)."""

    def __init__(self, workdir: Path):
        self.workdir = workdir
        self._procs: dict = {}
        self._s3: dict[str, S3Endpoint] = {}
        self._http: HttpRoot | None = None

    def s3(self, name: str) -> S3Endpoint:
        if name not in self._s3:
            if name == "moto":
                proc = self._keep("moto", start_moto(self.workdir))
                self._s3[name] = S3Endpoint("moto", proc.url, *MOTO_KEYS)
            elif name == "rclone":
                proc = self._keep("rclone-s3", start_rclone_s3(self.workdir, self.workdir / "rclone-s3-root", *RCLONE_KEYS))
                self._s3[name] = S3Endpoint("rclone", proc.url, *RCLONE_KEYS)
            else:
                raise ValueError(name)
        self._check_alive()
        return self._s3[name]

    def http(self) -> HttpRoot:
        if self._http is None:
            root = self.workdir / "http-root"
            proc = self._keep("rclone-http", start_rclone_http(self.workdir, root))
            self._http = HttpRoot(proc.url, root)
        self._check_alive()
        return self._http

    def processes(self) -> dict:
        return dict(self._procs)

    def _keep(self, name, proc):
        self._procs[name] = proc
        return proc

    def _check_alive(self) -> None:
        dead = [f"{n} (log:\n{p.log_tail()})" for n, p in self._procs.items() if not p.alive()]
        if dead:
            pytest.fail("test server died: " + "; ".join(dead))

    def stop(self) -> None:
        for proc in self._procs.values():
            proc.stop()


@pytest.fixture(scope="session")
def servers(tmp_path_factory, request) -> Servers:
    s = Servers(tmp_path_factory.mktemp("remote-servers"))
    atexit.register(s.stop)  # even if pytest is interrupted before its finalizers
    request.addfinalizer(s.stop)
    return s


@pytest.fixture(params=S3_SERVERS)
def s3(request, servers) -> S3Endpoint:
    """Each S3 test runs against moto and against rclone."""
    return servers.s3(request.param)


@pytest.fixture
def bucket(s3) -> str:
    """A fresh, empty bucket on the `s3` server."""
    return s3.create_bucket()


@pytest.fixture
def http_root(servers) -> HttpRoot:
    return servers.http()


@pytest.fixture
def proxy_for():
    """proxy_for(server) -> a started FaultProxy in front of an S3Endpoint, HttpRoot or URL."""
    proxies: list[FaultProxy] = []

    def make(upstream) -> FaultProxy:
        url = getattr(upstream, "endpoint", None) or getattr(upstream, "url", None) or str(upstream)
        proxy = FaultProxy(url).start()
        proxies.append(proxy)
        return proxy

    yield make
    for proxy in proxies:
        proxy.stop()


@pytest.fixture
def rnc(neurochunk_binary, tmp_path, s3) -> RemoteNeurochunk:
    """The CLI pointed at the `s3` server by the standard AWS variables."""
    return RemoteNeurochunk(neurochunk_binary, tmp_path / "_neurochunk", s3)


@pytest.fixture
def hnc(neurochunk_binary, tmp_path) -> RemoteNeurochunk:
    """The CLI with no S3 settings at all (HTTP URLs and local paths)."""
    return RemoteNeurochunk(neurochunk_binary, tmp_path / "_neurochunk", None)
