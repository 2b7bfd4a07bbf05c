"""The neurochunk CLI pointed at a test server: `RemoteNeurochunk` is the shared `Neurochunk`
wrapper (get / put / convert / consolidate / info / tree / fails) run with a scrubbed environment
that names the endpoint, in one of three ways (the CLI must honour each):

* "aws"   the standard AWS variables: AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_REGION,
          AWS_ENDPOINT_URL, AWS_ALLOW_HTTP=true
* "flags" credentials from AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY, the endpoint and region as
          global flags: `neurochunk --endpoint URL --bucket-region R SUBCOMMAND ...`
* "env"   NEUROCHUNK_ENDPOINT / NEUROCHUNK_BUCKET_REGION (credentials from the AWS variables)
* "anon"  no credentials at all: AWS_ENDPOINT_URL, AWS_REGION, AWS_ALLOW_HTTP and `--anon`

`extra_flags` adds other global flags (e.g. ["--max-requests", "2"] or ["--anon"]).
"""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any, Sequence

from ncli import Neurochunk
from remote_servers import S3Endpoint, scrubbed_env

MODES = ("aws", "flags", "env", "anon")


def cli_env(s3: S3Endpoint | None, mode: str = "aws") -> tuple[dict[str, str], list[str]]:
    """(environment, global flags) that point neurochunk at `s3` (None: no S3 settings)."""
    if mode not in MODES:
        raise ValueError(f"mode {mode!r} not in {MODES}")
    if s3 is None:
        return scrubbed_env(), []
    aws = s3.aws_env()
    if mode == "aws":
        return scrubbed_env(aws), []
    if mode == "anon":
        return scrubbed_env({k: aws[k] for k in ("AWS_ENDPOINT_URL", "AWS_REGION", "AWS_ALLOW_HTTP")}), ["--anon"]
    creds = {k: aws[k] for k in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_ALLOW_HTTP")}
    if mode == "flags":
        return scrubbed_env(creds), ["--endpoint", s3.endpoint, "--bucket-region", s3.region]
    return scrubbed_env({**creds, "NEUROCHUNK_ENDPOINT": s3.endpoint, "NEUROCHUNK_BUCKET_REGION": s3.region}), []


class RemoteNeurochunk(Neurochunk):
    """`Neurochunk` run against `s3` (or no S3 server: HTTP and local paths only)."""

    def __init__(
        self,
        binary: Path,
        scratch: Path,
        s3: S3Endpoint | None = None,
        mode: str = "aws",
        extra_flags: Sequence[str] = (),
    ):
        env, flags = cli_env(s3, mode)
        scratch.mkdir(parents=True, exist_ok=True)
        super().__init__(binary, scratch, env=env, cwd=scratch)
        self.s3 = s3
        self.mode = mode
        self.global_flags = [*flags, *extra_flags]

    def using(self, s3: S3Endpoint | None = None, mode: str | None = None, extra_flags: Sequence[str] = ()) -> "RemoteNeurochunk":
        """The same binary and scratch folder pointed elsewhere (e.g. `s3.via(proxy)`)."""
        other = RemoteNeurochunk(self.binary, self.scratch, s3 if s3 is not None else self.s3, mode or self.mode, extra_flags)
        other._counter = self._counter + 1000
        return other

    def run(self, *args: Any, check: bool = True) -> subprocess.CompletedProcess:
        return super().run(*self.global_flags, *args, check=check)
