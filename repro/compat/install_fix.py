"""The line that works: pip lines that install a given release and build the way pytorch.org's
previous-versions page does (:func:`fix_line`, :func:`pypi_fix_line`), with the
torchvision/torchaudio released with it, and the releases nearest to a wanted one that have a
wheel for the host's Python (:func:`nearest_python`).
"""

from __future__ import annotations

from packaging.version import Version

from repro.compat import sources as src
from repro.compat.facts import Facts
from repro.compat.install_line import InstallLine
from repro.compat.sources import DOWNLOAD, Host


def install_form(facts: Facts, release: Version) -> str:
    """How the previous-versions page installs a release's pip builds (``index``,
    ``extra_index``, ``find_links`` or ``wheel_page``); ``index`` from 2.0 on."""
    if str(release.public) == "1.8.2":
        return "lts"
    form = facts.get("torch_variants", f"{release.major}.{release.minor}", "install_form")
    return str(form) if form else "index"


def fix_line(
    facts: Facts, release: Version, runtime: str, line: InstallLine, companions: dict[str, str]
) -> str:
    """A pip line that installs ``release`` built for ``runtime`` (pytorch_previous_versions),
    with ``companions`` pinned and the line's other torchvision/torchaudio unpinned (pip picks
    the one that pins this torch)."""
    tool = "uv pip install" if line.tool == "uv" else "pip install"
    form = install_form(facts, release)
    public = release.public
    local = runtime != "cpu" or form != "index"
    pins = [
        f"torch=={public}+{runtime}"
        if form in ("extra_index", "find_links") and local
        else f"torch=={public}"
    ]
    for name, pinned in companions.items():
        label = (
            f"+{runtime}" if form in ("extra_index", "find_links") and name == "torchvision" else ""
        )
        pins.append(f"{name}=={pinned}{label}")
    pins += [name for name in line.companions if name not in companions]  # pip picks the pair
    if form == "find_links":
        where = f"-f {DOWNLOAD}/torch_stable.html"
    elif form == "wheel_page":
        where = f"-f {DOWNLOAD}/{runtime}/torch_stable.html"
    elif form == "extra_index":
        where = f"--extra-index-url {DOWNLOAD}/{runtime}"
    elif form == "lts":
        where = f"--extra-index-url {DOWNLOAD}/lts/1.8/{runtime}"
    else:
        where = f"--index-url {DOWNLOAD}/{runtime}"
    return f"{tool} {' '.join(pins)} {where}"


def pypi_fix_line(facts: Facts, release: Version, line: InstallLine) -> str:
    """A pip line that installs ``release`` from PyPI, with the torchvision/torchaudio released
    with it for the companions the line names: ``pip install torch==2.2.2 torchvision==0.17.2``."""
    tool = "uv pip install" if line.tool == "uv" else "pip install"
    pins = companion_pins(facts, release, line)
    names = [f"{n}=={pins[n]}" if n in pins else n for n in line.companions]
    return " ".join([f"{tool} torch=={release}", *names])


def companion_pins(facts: Facts, release: Version, line: InstallLine) -> dict[str, str]:
    """torchvision/torchaudio versions released with ``release`` for the companions the line
    names (``companions`` facts); unknown ones are left out."""
    out = {}
    for name in line.companions:
        paired = facts.get("companions", str(release.public), name)
        if paired:
            out[name] = str(paired)
    return out


def nearest_python(facts: Facts, extra: Facts, host: Host, wanted: Version | None) -> list[str]:
    """Releases with a PyPI wheel for the host's Python and platform, nearest to ``wanted``."""
    if host.python is None:
        return []
    ok = [
        r
        for r in src.releases(facts, extra)
        if host.python in (src.pypi_pythons(facts, r, host) or [])
    ]
    if not ok:
        return []
    if wanted is None:
        return [str(ok[-1])]
    older = [r for r in ok if r < wanted]
    newer = [r for r in ok if r > wanted]
    out = ([str(older[-1])] if older else []) + ([str(newer[0])] if newer else [])
    return out
