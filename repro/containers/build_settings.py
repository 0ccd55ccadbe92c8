"""A variant's effective build settings: the matrix's values with the command-line and
environment overrides applied, the image tag, and the checkout whose ``repro`` goes into it.

The override cascade itself (command line > ``REPRO_*`` environment > matrix.yaml) is
:class:`repro.config.Overrides`. Never imports torch or the Docker SDK.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import repro
from repro.config import Overrides, Variant
from repro.errors import ConfigError, FatalError

DEFAULT_REPO = "repro-matrix"
SOURCE_ROOT = Path(repro.__file__).resolve().parent.parent


@dataclass(frozen=True)
class BuildSettings:
    """One variant with the overrides applied, the tag it gets and where its code comes from."""

    variant: Variant
    tag: str
    wheelhouse: Path | None
    source_root: Path
    sources: Mapping[str, str]

    @property
    def torch_spec(self) -> str:
        return f"torch=={self.variant.torch}"

    def describe(self) -> list[tuple[str, str]]:
        """(name, value with its source) lines for "print the effective settings"."""
        v = self.variant

        def src(name: str) -> str:
            return f"  [{self.sources[name]}]" if name in self.sources else "  [matrix.yaml]"

        rows = [
            (
                "variant",
                f"{v.id} (runtime {v.runtime}, accelerator {v.accelerator}, torch {v.torch})",
            ),
            ("image", self.tag),
            ("base image", v.base_image + src("base_image")),
            ("python", v.python + src("python")),
        ]
        if self.wheelhouse:
            rows.append(("wheelhouse", f"{self.wheelhouse} (offline: no index){src('wheelhouse')}"))
        else:
            rows.append(("index url", v.index_url + src("index_url")))
        if v.extra_packages:
            rows.append(("extra packages", " ".join(v.extra_packages)))
        rows.append(
            ("repro source", f"{self.source_root} (repro {source_version(self.source_root)})")
        )
        return rows


def image_tag(variant_id: str, repo: str = DEFAULT_REPO) -> str:
    """``repro-matrix:<variant-id>``."""
    return f"{repo}:{variant_id}"


def settings_for(
    variant: Variant,
    overrides: Overrides | None = None,
    repo: str = DEFAULT_REPO,
    source_root: Path | None = None,
) -> BuildSettings:
    """Apply ``overrides`` to ``variant``. Raises ConfigError for a wheelhouse that is not a directory."""
    overrides = overrides or Overrides({}, {})
    values = overrides.values
    variant = overrides.apply(variant)
    wheelhouse = None
    if values.get("wheelhouse"):
        wheelhouse = Path(values["wheelhouse"]).expanduser().resolve()
        if not wheelhouse.is_dir():
            raise ConfigError(
                f"wheelhouse {values['wheelhouse']} ({overrides.sources.get('wheelhouse')}): not a directory",
                hint="make one with `repro wheelhouse VARIANT DIR`",
            )
    return BuildSettings(
        variant,
        image_tag(variant.id, repo),
        wheelhouse,
        Path(source_root or SOURCE_ROOT).resolve(),
        dict(overrides.sources),
    )


def source_version(source_root: Path) -> str:
    """``__version__`` of the repro package under ``source_root`` (the one copied into images)."""
    text = (source_root / "repro" / "__init__.py").read_text()
    match = re.search(r"^__version__\s*=\s*['\"]([^'\"]+)['\"]", text, re.MULTILINE)
    return match.group(1) if match else "unknown"


def project_requirements(source_root: Path) -> list[str]:
    """``[project].dependencies`` of the checkout's pyproject.toml."""
    path = source_root / "pyproject.toml"
    text = path.read_text()
    try:
        import tomllib
    except ImportError:  # Python 3.10: the list is simple enough to read without a TOML parser
        match = re.search(r"^dependencies\s*=\s*\[(.*?)\]", text, re.MULTILINE | re.DOTALL)
        if not match:
            raise FatalError(f"{path}: no [project] dependencies list") from None
        body = "\n".join(line.split("#", 1)[0] for line in match.group(1).splitlines())
        return re.findall(r"['\"]([^'\"]+)['\"]", body)
    return list(tomllib.loads(text).get("project", {}).get("dependencies", []))
