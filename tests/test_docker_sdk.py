"""A folder named docker that only shadows the SDK (the checkout's own docker/, PEP 420) is
reported as a missing SDK, not as an unreachable daemon with an AttributeError's text."""

from __future__ import annotations

import importlib.machinery
import importlib.util
import sys

import pytest

from repro.containers import images
from repro.errors import FatalError
from repro.host import docker_sdk, hostkind


@pytest.fixture
def shadowing_folder(tmp_path, monkeypatch):
    """``docker`` as Python imports it where no SDK is installed and a docker/ folder is on the path."""
    folder = tmp_path / "docker"
    folder.mkdir()
    (folder / "Dockerfile").write_text("FROM scratch\n")
    spec = importlib.machinery.PathFinder.find_spec("docker", [str(tmp_path)])
    assert spec is not None and spec.origin in (None, "namespace")  # a namespace package
    module = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, "docker", module)
    return folder


def test_the_real_sdk_is_returned():
    assert docker_sdk.import_sdk().from_env is not None


def test_a_shadowing_folder_is_a_missing_sdk_naming_the_folder(shadowing_folder):
    with pytest.raises(docker_sdk.SdkMissing) as caught:
        docker_sdk.import_sdk()
    assert "not installed" in str(caught.value)
    assert str(shadowing_folder) in str(caught.value)


def test_host_reports_the_missing_sdk_with_the_install_hint(shadowing_folder):
    daemon = hostkind.query_daemon(timeout_s=1)
    assert not daemon.reachable
    assert "docker Python SDK is not installed" in daemon.error
    assert "from_env" not in daemon.error and docker_sdk.INSTALL_HINT in daemon.error


def test_build_client_says_the_sdk_is_missing(shadowing_folder):
    with pytest.raises(FatalError) as caught:
        images.client(timeout_s=1)
    assert "docker Python SDK is not installed" in str(caught.value)
    assert "from_env" not in str(caught.value)
