"""The versions of a package an index really serves, and the ones between two ends.

Read from a PEP 503 / PEP 691 simple index (``https://...`` or ``file:///...``: the project
page ``<index>/<normalised name>/``), from ``--find-links`` directories (wheel and sdist file
names) or pages (their links). File names are parsed with ``packaging.utils``
(``parse_wheel_filename``, ``parse_sdist_filename``); yanked files (PEP 592) are left out.
An end may be a nightly's date (``20241112``, ``2024-11-12``): the served dev build of that
day (torch's nightly index: ``2.6.0.dev20241112+cpu``, its date in the PEP 440 dev number).
"""

from __future__ import annotations

import datetime
import json
import os
import re
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterable, Mapping, Sequence
from html.parser import HTMLParser
from pathlib import Path

from packaging.utils import (
    InvalidSdistFilename,
    InvalidWheelFilename,
    canonicalize_name,
    parse_sdist_filename,
    parse_wheel_filename,
)
from packaging.version import InvalidVersion, Version

from repro.envs.spec import Source
from repro.errors import ConfigError, FatalError

PYPI_SIMPLE = "https://pypi.org/simple"
#: PEP 691 JSON first, HTML (PEP 503) as the fallback.
ACCEPT = "application/vnd.pypi.simple.v1+json, application/vnd.pypi.simple.v1+html;q=0.2, text/html;q=0.01"
TIMEOUT_S = 60


class _Links(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.files: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag != "a":
            return
        attributes = dict(attrs)
        href = attributes.get("href") or ""
        if "data-yanked" in attributes or not href:
            return
        self.files.append(urllib.parse.unquote(href.split("#", 1)[0].rsplit("/", 1)[-1]))


def version_of(filename: str, package: str) -> Version | None:
    """The version in a wheel or sdist file name of ``package``, else None."""
    name = canonicalize_name(package)
    try:
        if filename.endswith(".whl"):
            dist, version, _, _ = parse_wheel_filename(filename)
        elif filename.endswith((".tar.gz", ".zip")):
            dist, version = parse_sdist_filename(filename)
        else:
            return None
    except (InvalidWheelFilename, InvalidSdistFilename, InvalidVersion):
        return None
    return version if dist == name else None


def _read(url: str) -> tuple[str, str]:
    """(content type, body) of ``url``; FatalError when it cannot be read."""
    request = urllib.request.Request(url, headers={"Accept": ACCEPT})
    try:
        with urllib.request.urlopen(request, timeout=TIMEOUT_S) as response:
            kind = response.headers.get("Content-Type", "") if hasattr(response, "headers") else ""
            return kind or "", response.read().decode("utf-8", "replace")
    except urllib.error.HTTPError as exc:
        if exc.code == 404:
            return "", ""
        raise FatalError(f"cannot list versions at {url}: HTTP {exc.code}") from None
    except (urllib.error.URLError, OSError) as exc:
        if url.startswith("file:"):
            return "", ""  # a local index without this project: nothing served here
        raise FatalError(f"cannot list versions at {url}: {getattr(exc, 'reason', exc)}") from None


def _index_files(index_url: str, package: str) -> list[str]:
    page = index_url.rstrip("/") + "/" + canonicalize_name(package) + "/"
    if page.startswith("file:"):
        path = Path(urllib.request.url2pathname(urllib.parse.urlparse(page).path))
        page_file = path / "index.html" if path.is_dir() else path
        if not page_file.is_file():
            return []
        kind, body = "text/html", page_file.read_text(errors="replace")
    else:
        kind, body = _read(page)
    if "json" in kind:
        data = json.loads(body)
        return [f["filename"] for f in data.get("files", []) if not f.get("yanked")]
    links = _Links()
    links.feed(body)
    return links.files


def _link_files(link: str) -> list[str]:
    if "://" not in link or link.startswith("file:"):
        path = Path(
            urllib.request.url2pathname(urllib.parse.urlparse(link).path) if "://" in link else link
        )
        if path.is_dir():
            return [p.name for p in path.iterdir() if p.is_file()]
        if path.is_file() and path.suffix in (".html", ".htm"):
            links = _Links()
            links.feed(path.read_text(errors="replace"))
            return links.files
        return []
    links = _Links()
    links.feed(_read(link)[1])
    return links.files


#: uv's own settings of its default index, newest spelling first (docs.astral.sh/uv, "Package
#: indexes": ``UV_DEFAULT_INDEX``, and the pip-style ``UV_INDEX_URL`` it replaces).
UV_DEFAULT_INDEX_VARS = ("UV_DEFAULT_INDEX", "UV_INDEX_URL")


def default_index(environ: Mapping[str, str] | None = None) -> str:
    """The index uv installs from when none is named: ``$UV_DEFAULT_INDEX``, else
    ``$UV_INDEX_URL``, else PyPI's simple index."""
    environ = os.environ if environ is None else environ
    return next((environ[v] for v in UV_DEFAULT_INDEX_VARS if environ.get(v)), PYPI_SIMPLE)


def served_versions(package: str, source: Source) -> list[Version]:
    """Every version of ``package`` with at least one file in ``source`` (its index, extra
    indexes and find-links; uv's default index (:func:`default_index`) when no index is named
    and not offline), ascending: where uv installs it from."""
    files: list[str] = []
    if not source.no_index:
        for url in (source.index_url or default_index(), *source.extra_index_urls):
            files += _index_files(url, package)
    for link in source.find_links:
        files += _link_files(link)
    found = {v for v in (version_of(f, package) for f in files) if v is not None}
    return sorted(found)


def _pick_local(candidates: Iterable[Version], prefer: Sequence[str | None]) -> Version:
    """One of several builds of a public version (``2.13.0`` and ``2.13.0+cpu``): the one with
    the local label of an end, else the one without a label, else the first."""
    candidates = sorted(candidates)
    for label in prefer:
        for v in candidates:
            if v.local == label:
                return v
    return candidates[0]


_DATE = re.compile(r"^(\d{4})-?(\d{2})-?(\d{2})$")


def nightly_of(served: Sequence[Version], end: str, what: str) -> str:
    """``end`` itself, or when it is a date (``YYYYMMDD`` or ``YYYY-MM-DD``) that is not a
    served version, the served dev build of that day: the version whose dev number is the date
    (``2.6.0.dev20241112+cpu``; ``.devYYYYMMDDHH...`` too), the highest when several are.

    Raises ConfigError for an impossible date or a day with no nightly served (naming the
    served days nearest to it). ``what``: ``good`` or ``bad``, for the message."""
    match = _DATE.match(end.strip())
    if not match:
        return end
    try:
        if Version(end) in served:  # a calendar-versioned release, e.g. 20241112
            return end
    except InvalidVersion:
        pass
    try:
        day = datetime.date(*(int(g) for g in match.groups()))
    except ValueError:
        raise ConfigError(f"bisect --{what} {end}: not a date (expected YYYYMMDD)") from None
    stamp = day.strftime("%Y%m%d")
    dated = [v for v in served if v.dev is not None and len(str(v.dev)) >= 8]
    same_day = [v for v in dated if str(v.dev).startswith(stamp)]
    if same_day:
        return str(max(same_day))
    days = sorted({str(v.dev)[:8] for v in dated}, key=lambda d: (abs(int(d) - int(stamp)), d))
    near = ", ".join(sorted(days[:6])) or "none: the index serves no dated dev builds"
    raise ConfigError(f"bisect --{what} {end}: no nightly of that day served (days served: {near})")


def between(served: Sequence[Version], good: str, bad: str) -> list[Version]:
    """The served versions from ``good`` to ``bad`` inclusive, ordered from good to bad (so a
    "first good" search after a fix works the same way). Pre-releases and dev builds count
    only when an end is one (nightlies: ``2.6.0.dev20241112``, or an end given as a date, see
    :func:`nightly_of`). One build per public version.

    Raises ConfigError when an end is not a version or not served (naming what is nearby)."""
    good, bad = nightly_of(served, good, "good"), nightly_of(served, bad, "bad")
    try:
        good_v, bad_v = Version(good), Version(bad)
    except InvalidVersion as exc:
        raise ConfigError(f"bisect ends: {exc}") from None
    if good_v == bad_v:
        raise ConfigError(f"bisect ends: good and bad are the same version {good}")
    pre = good_v.is_prerelease or bad_v.is_prerelease
    low, high = sorted((good_v, bad_v))
    groups: dict[Version, list[Version]] = {}
    for v in served:
        if low.public and Version(low.public) <= Version(v.public) <= Version(high.public):
            if v.is_prerelease and not pre and v not in (good_v, bad_v):
                continue
            groups.setdefault(Version(v.public), []).append(v)
    for end, what in ((good_v, "good"), (bad_v, "bad")):
        group = groups.get(Version(end.public), [])
        if end.local and end not in group or not group:
            near = ", ".join(str(v) for v in served[-12:]) or "none"
            raise ConfigError(f"bisect --{what} {end}: not served by the index (served: {near})")
    prefer = [good_v.local, bad_v.local, None]
    chosen = []
    for public, group in sorted(groups.items()):
        if public == Version(good_v.public):
            chosen.append(good_v if good_v in group else _pick_local(group, prefer))
        elif public == Version(bad_v.public):
            chosen.append(bad_v if bad_v in group else _pick_local(group, prefer))
        else:
            chosen.append(_pick_local(group, prefer))
    return chosen if good_v < bad_v else list(reversed(chosen))


_GIT_VERSION = re.compile(r"^[0-9a-f]{7,40}$")


def compare_url(package: str, good_commit: str | None, bad_commit: str | None) -> str | None:
    """The GitHub compare URL of the two ends' commits (torch's ``torch.version.git_version``);
    None for another package or an unknown commit."""
    if canonicalize_name(package) != "torch" or not good_commit or not bad_commit:
        return None
    if not (_GIT_VERSION.match(good_commit) and _GIT_VERSION.match(bad_commit)):
        return None
    return f"https://github.com/pytorch/pytorch/compare/{good_commit}...{bad_commit}"
