"""Cold and warm image builds of two CPU variants, with BuildKit and with the classic builder.

Two variants of one torch pin on two base images (a Debian bookworm rootfs, and the same with
one more file, so the second variant's layers can never come from the first's layer cache: only
a package cache can help it). For each builder, from an empty build cache (no images but the
bases, ``docker builder prune --all``): variant A (cold), then variant B (warm: what A left in
the shared pip cache, BuildKit only), then A again with ``--force`` (docker's layer cache).
Times are of ``repro.containers.images.ensure_image``: build, probe and label, in seconds.

The wheels come from a local PEP 503 index serving ``--wheels`` (e.g. ``python -m repro
wheelhouse cpu-torch2.13 DIR --index-url https://pypi.org/simple``) with the cache headers
PyPI's file host sends (``Cache-Control: max-age=365000000, immutable, public``), reached from
the build over the host network: the variants' index URL for torch, the bases'
``PIP_INDEX_URL`` for the rest. It runs its own ``dockerd`` (own data root, exec root and
socket in a temporary directory, no iptables, no bridge), so "cold" is cold and no image,
container or cache of another daemon is touched; that daemon is stopped at the end. Needs root,
``dockerd``, and a Docker CLI that can run BuildKit builds against it (``--docker-cli``: one with
buildx, or a 20.10 CLI with ``DOCKER_BUILDKIT=1``).

    python benchmarks/build_cache.py --wheels DIR [--rootfs-tar FILE] [--docker-cli PATH]
"""

from __future__ import annotations

import argparse
import contextlib
import http.server
import io
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from urllib.parse import quote, unquote, urlsplit

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from repro.config import Overrides, parse  # noqa: E402
from repro.containers import build_settings, images  # noqa: E402
from repro.containers import builder as builder_mod  # noqa: E402

REPO = Path(__file__).resolve().parent.parent
PIN = "2.13.0"
PYPI_FILE_CACHE = "max-age=365000000, immutable, public"
BASES = ("repro-bench-base-a:bookworm", "repro-bench-base-b:bookworm")


def normalized(name: str) -> str:
    """PEP 503 project name."""
    return re.sub(r"[-_.]+", "-", name).lower()


def index_handler(wheels: Path):
    """An http.server handler serving ``wheels`` as ``/simple/<project>/`` + ``/files/<file>``."""
    projects: dict[str, list[str]] = {}
    for path in sorted(wheels.iterdir()):
        if path.suffix in (".whl", ".gz", ".zip"):
            projects.setdefault(normalized(path.name.split("-")[0]), []).append(path.name)

    class Handler(http.server.BaseHTTPRequestHandler):
        def log_message(self, *args) -> None:  # quiet
            pass

        def _send(self, body: bytes, kind: str, cache: str | None = None) -> None:
            self.send_response(200)
            self.send_header("Content-Type", kind)
            self.send_header("Content-Length", str(len(body)))
            if cache:
                self.send_header("Cache-Control", cache)
            self.end_headers()
            self.wfile.write(body)

        def do_GET(self) -> None:
            parts = [unquote(p) for p in self.path.split("?")[0].split("/") if p]
            if parts[:1] == ["simple"] and len(parts) == 2 and parts[1] in projects:
                links = "".join(
                    f'<a href="/files/{quote(name)}">{name}</a><br>\n'
                    for name in projects[parts[1]]
                )
                self._send(f"<html><body>\n{links}</body></html>\n".encode(), "text/html")
            elif parts[:1] == ["files"] and len(parts) == 2 and (wheels / parts[1]).is_file():
                self._send(
                    (wheels / parts[1]).read_bytes(), "application/octet-stream", PYPI_FILE_CACHE
                )
            else:
                self.send_error(404)

    return Handler


@contextlib.contextmanager
def private_dockerd(root: Path):
    """Yield ``DOCKER_HOST`` of a dockerd started here (overlay2, else vfs); stop it after."""
    import docker

    host = f"unix://{root}/docker.sock"
    for driver in ("overlay2", "vfs"):
        log = open(root / f"dockerd-{driver}.log", "w")  # noqa: SIM115 - lives with dockerd
        proc = subprocess.Popen(
            [
                "dockerd",
                "--host",
                host,
                "--data-root",
                str(root / f"data-{driver}"),
                "--exec-root",
                str(root / "exec"),
                "--pidfile",
                str(root / "dockerd.pid"),
                "--iptables=false",
                "--ip6tables=false",
                "--bridge=none",
                "--storage-driver",
                driver,
            ],  # fmt: skip
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
        )
        deadline = time.monotonic() + 90
        while time.monotonic() < deadline and proc.poll() is None:
            with contextlib.suppress(Exception):
                docker.DockerClient(base_url=host).ping()
                break
            time.sleep(0.5)
        if proc.poll() is None:
            print(f"dockerd {docker.DockerClient(base_url=host).version()['Version']} ({driver})")
            break
        log.close()
    else:
        raise SystemExit("dockerd did not start: see " + str(root / "dockerd-vfs.log"))
    try:
        yield host
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        # What a stopped dockerd can leave mounted (its netns file after an interrupted build).
        with open("/proc/mounts") as mounts:
            left = [line.split()[1] for line in mounts if line.split()[1].startswith(str(root))]
        for mountpoint in reversed(left):
            subprocess.run(["umount", "--lazy", mountpoint], check=False)


def base_images(client, rootfs_tar: Path | None, work: Path, index_url: str) -> None:
    """Import the bookworm rootfs as base A and, with one more file (``/etc/bench-base``), as base
    B, with
    ``PIP_INDEX_URL`` pointing at the local index, as a site's base image names its PyPI mirror
    (the dependencies' pip step uses pip's default index)."""
    if rootfs_tar is None:
        rootfs = work / "rootfs"
        subprocess.run(
            [
                "debootstrap",
                "--variant=minbase",
                "--include=python3,python3-venv,ca-certificates",
                "bookworm",
                str(rootfs),
                "http://deb.debian.org/debian",
            ],  # fmt: skip
            check=True,
            stdout=subprocess.DEVNULL,
        )
        rootfs_tar = work / "rootfs.tar"
        subprocess.run(["tar", "-C", str(rootfs), "-cf", str(rootfs_tar), "."], check=True)
        shutil.rmtree(rootfs, ignore_errors=True)

    # Base B differs in content (one more file), as two distributions' bases would: BuildKit
    # keys its cache by layer content, so identical layers would let B reuse A's every step.
    other = work / "rootfs-b.tar"
    shutil.copyfile(rootfs_tar, other)
    marker = work / "bench-base"
    marker.write_text("b\n")
    subprocess.run(
        ["tar", "-rf", str(other), "-C", str(work), "--transform", "s,^,etc/,", "bench-base"],
        check=True,
    )

    def chunks(path: Path):  # the SDK sends the stream chunked: a generator, not a sized file
        with open(path, "rb") as stream:
            yield from iter(lambda: stream.read(1 << 20), b"")

    for tag, tar in zip(BASES, (rootfs_tar, other), strict=True):
        repository, name = tag.split(":")
        client.api.import_image_from_stream(
            chunks(tar),
            repository=repository,
            tag=name,
            changes=[
                f"LABEL bench.base={tag}",
                f"ENV PIP_INDEX_URL={index_url}",
                # pip caches plain-http responses only from a trusted host (its other http
                # adapter has no cache); https indexes such as PyPI are cached as they are.
                f"ENV PIP_TRUSTED_HOST={urlsplit(index_url).hostname}",
            ],
        )
    assert len({client.images.get(tag).id for tag in BASES}) == 2


def make_cold(client, docker_cli: str) -> None:
    """Every image but the bases removed, and the BuildKit cache (cache mounts too) pruned."""
    keep = {client.images.get(tag).id for tag in BASES}
    for image in client.images.list(all=True):
        if image.id not in keep:
            with contextlib.suppress(Exception):
                client.images.remove(image.id, force=True)
    subprocess.run(
        [docker_cli, "builder", "prune", "--all", "--force"],
        check=True,
        stdout=subprocess.DEVNULL,
        env={**os.environ, "DOCKER_BUILDKIT": "1"},
    )


def variants(index_url: str):
    text = f"""
version: 1
variants:
  - {{id: bench-a, runtime: cpu, torch: "{PIN}", base_image: "{BASES[0]}", python: "3.11",
      index_url: "{index_url}"}}
  - {{id: bench-b, runtime: cpu, torch: "{PIN}", base_image: "{BASES[1]}", python: "3.11",
      index_url: "{index_url}"}}
scenarios: {{noop: {{}}}}
"""
    import yaml

    matrix = parse(yaml.safe_load(text), Path("bench-matrix.yaml"))
    return [
        build_settings.settings_for(v, Overrides({}, {}), "repro-bench", REPO)
        for v in matrix.variants
    ]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--wheels", type=Path, required=True, help="wheels to serve as the index")
    parser.add_argument(
        "--rootfs-tar", type=Path, help="a bookworm minbase rootfs tar (else debootstrap)"
    )
    parser.add_argument("--docker-cli", default="docker", help="the CLI for BuildKit builds")
    parser.add_argument("--log", type=Path, help="build output (default: discarded)")
    args = parser.parse_args()
    import docker

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), index_handler(args.wheels))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    index_url = f"http://127.0.0.1:{server.server_address[1]}/simple"
    log = open(args.log, "w") if args.log else io.StringIO()  # noqa: SIM115
    rows = []
    with tempfile.TemporaryDirectory(prefix="repro-bench-build-") as tmp:
        work = Path(tmp)
        with private_dockerd(work) as host:
            os.environ["DOCKER_HOST"] = host
            client = docker.DockerClient(base_url=host, timeout=3600)
            mark = time.monotonic()
            base_images(client, args.rootfs_tar, work, index_url)
            print(f"base images: {time.monotonic() - mark:.1f} s")
            settings_a, settings_b = variants(index_url)
            builders = [
                builder_mod.choose(builder_mod.BUILDKIT, docker=args.docker_cli),
                builder_mod.choose(builder_mod.CLASSIC),
            ]
            for chosen in builders:
                print(f"{chosen.kind}: {chosen.reason}", flush=True)
                make_cold(client, args.docker_cli)
                times = []
                for settings in (settings_a, settings_b, settings_a):
                    record = images.ensure_image(
                        client, settings, out=log, force=True, builder=chosen, network="host"
                    )
                    times.append(record.seconds)
                    print(f"  {settings.variant.id}: {record.seconds:.1f} s", flush=True)
                rows.append((chosen.kind, *times))
    server.shutdown()
    print()
    print(f"torch {PIN} CPU, two variants on two bases; seconds per variant image")
    print(f"{'builder':10} {'A cold':>8} {'B warm':>8} {'A again':>8}")
    for kind, cold, warm, again in rows:
        print(f"{kind:10} {cold:8.1f} {warm:8.1f} {again:8.1f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
