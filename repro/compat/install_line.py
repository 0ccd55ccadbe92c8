"""Read an install line as people type it: what it asks for, from where. Parsing only.

Forms (each seen in public issues; tests/fixtures/install-lines/ holds 40+ of them):

- pip: ``pip``/``pip3``/``pip3.10``/``python -m pip``/``py -m pip``/``%pip``/``!pip`` ``install``;
  uv: ``uv pip install``, ``uv add``; options ``--index-url``/``-i``, ``--extra-index-url``,
  ``--find-links``/``-f`` (``torch_stable.html``), ``--pre``, uv's ``--index``/``--default-index``
  and ``--torch-backend``; ``-r FILE``;
- conda/mamba/micromamba ``install``/``create``: ``pytorch=X``, ``pytorch-cpu``, ``cudatoolkit=Y``,
  ``pytorch-cuda=Y``, ``cuda90``-style packages, ``cpuonly``, ``-c CHANNEL``, ``channel::package``;
- a wheel URL or file name (``torch-2.0.0+cu118-cp310-cp310-linux_x86_64.whl``);
- requirements-file text (one requirement or option per line).

Requirements and versions are read with ``packaging`` (PEP 508/440), wheel names with
:func:`packaging.utils.parse_wheel_filename`, shell words with :mod:`shlex`. Shell prompts before
the command (``(venv) user@host:~$``), ``&&``-joined commands and ``\\`` continuations are
tolerated. Pure: never runs pip or conda, never touches the network.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from urllib.parse import unquote, urlparse

from packaging.requirements import InvalidRequirement, Requirement
from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.utils import InvalidWheelFilename, parse_wheel_filename
from packaging.version import InvalidVersion, Version

from repro.errors import ConfigError

#: The packages whose builds the facts describe; torchvision/torchaudio are checked beside torch.
TORCH = "torch"
COMPANIONS = ("torchvision", "torchaudio")
#: A runtime tag as the wheel index spells it: cu92, cu121, rocm6.4, rocm6.2.4, cpu.
RUNTIME_RE = re.compile(r"^(cu\d{2,3}|rocm\d+(?:\.\d+){1,2}|cpu)$")
#: The index folders of download.pytorch.org: those and Intel GPUs' ``xpu`` (from 2.5).
INDEX_RUNTIME_RE = re.compile(r"^(cu\d{2,3}|rocm\d+(?:\.\d+){1,2}|cpu|xpu)$")
_URL_RUNTIME_RE = re.compile(
    r"/(cu\d{2,3}|rocm\d+(?:\.\d+){1,2}|cpu|xpu)(?:/|/torch_(?:stable|nightly)\.html)?$"
)

#: pip/uv options that take a value (the value is the next word unless written ``--opt=value``).
_VALUE_OPTIONS = frozenset(
    {
        "-i", "--index-url", "--extra-index-url", "-f", "--find-links", "-c", "--constraint",
        "-r", "--requirement", "-t", "--target", "--python-version", "--platform",
        "--only-binary", "--no-binary", "--trusted-host", "--cache-dir", "--prefix", "--root",
        "--src", "-e", "--editable", "--progress-bar", "--log", "--proxy", "--timeout",
        "--retries", "--upgrade-strategy", "--abi", "--implementation", "-C", "--config-settings",
        "--global-option", "--report", "--index", "--default-index", "--torch-backend",
        "--index-strategy", "-p", "--python", "--group", "--extra", "--optional", "--dev-group",
        "--resolution", "--prerelease", "--keyring-provider", "--exclude-newer", "--directory",
        "--project", "--frozen-extras", "--environment", "--with", "-w", "--from",
    }
)  # fmt: skip
#: conda options that take a value.
_CONDA_VALUE_OPTIONS = frozenset(
    {"-c", "--channel", "-n", "--name", "-p", "--prefix", "--file", "--override-channels-x"}
)


@dataclass(frozen=True)
class Wheel:
    """A wheel named by URL or file name: ``version`` with its local label (``2.0.0+cu118``),
    ``runtime`` (the label, else the URL's ``/whl/cu118/`` folder), ``pythons`` ("3.10") and
    ``platforms`` (``linux``, ``windows``, ``macos``, ``linux-aarch64``, ``macos-arm64``)."""

    name: str
    version: Version
    runtime: str | None
    pythons: tuple[str, ...]
    platforms: tuple[str, ...]
    source: str


@dataclass(frozen=True)
class Conda:
    """A conda/mamba install: channels in order, the pytorch spec (PEP 440 text, "" when
    unpinned), the CUDA it asks for (``cudatoolkit``/``pytorch-cuda``/``cudaXY`` package),
    whether it asks for the CPU build (``cpuonly``/``pytorch-cpu``), whether the package is the
    pre-1.0 ``pytorch-nightly`` and the ``mkl`` spec it pins (PEP 440 text; None: none)."""

    tool: str
    channels: tuple[str, ...]
    spec: str
    cuda: str | None
    cuda_package: str | None
    cpu_only: bool
    nightly_package: bool = False
    mkl: str | None = None
    #: torchvision/torchaudio/torchdata/torchtext packages the line names beside pytorch.
    companions: tuple[str, ...] = ()
    #: A match spec of pytorch/libtorch whose build string asks for a CUDA build
    #: (``libtorch=*=cuda12*``, ``pytorch=*=cuda*``): conda-forge's CUDA builds need ``__cuda``.
    cuda_build: bool = False


@dataclass(frozen=True)
class InstallLine:
    """What one install line asks for.

    ``tool``: ``pip``, ``uv``, ``conda``, ``wheel`` or ``requirements``. ``torch``: the torch
    requirement (None when the line names no torch; then ``companions`` may imply one).
    ``indexes`` replace PyPI (``--index-url``, uv ``--default-index``); ``extra_indexes`` add to
    it (``--extra-index-url``; uv ``--index`` is searched first); ``find_links`` pages (``-f``).
    ``torch_backend``: uv's ``--torch-backend`` value. ``unread``: ``-r`` files that could not
    be read. ``uv_first_index``: uv takes the first index that has torch at all (its default
    ``--index-strategy first-index``; False for ``unsafe-best-match``, which merges the indexes
    as pip does); ``index_strategy``: the ``--index-strategy`` given, if any. ``python``: the
    Python ("3.10") the text itself names for the environment (``conda create ... python=3.10``,
    ``uv venv -p 3.10`` or ``python3.10 -m venv`` before the install, uv ``--python 3.10``),
    else None. ``universal``: ``uv add``, whose lock resolves for every platform the project
    declares (uv's universal resolution) before it installs for this one. ``pypi_pytorch``: a
    pip/uv requirement on the name ``pytorch``, which on PyPI is not torch but a placeholder
    project (conda's ``pytorch`` is torch; compat-extra ``pypi_pytorch_placeholder``).
    ``torch_nightly``: a pip/uv requirement on ``torch_nightly`` (the 1.0 preview's nightly
    package name, compat-extra ``pip_torch_nightly``), else None.
    ``numpy``: a pip/uv requirement on numpy beside torch (which numpy pip takes decides whether
    a torch built against NumPy 1.x works: compat-extra ``numpy2_abi``), else None.
    """

    text: str
    tool: str
    torch: Requirement | None = None
    companions: dict[str, Requirement] = field(default_factory=dict)
    indexes: tuple[str, ...] = ()
    extra_indexes: tuple[str, ...] = ()
    find_links: tuple[str, ...] = ()
    pre: bool = False
    torch_backend: str | None = None
    wheel: Wheel | None = None
    conda: Conda | None = None
    unread: tuple[str, ...] = ()
    uv_first_index: bool = False
    index_strategy: str | None = None
    python: str | None = None
    universal: bool = False
    pypi_pytorch: Requirement | None = None
    numpy: Requirement | None = None
    torch_nightly: Requirement | None = None

    @property
    def all_indexes(self) -> tuple[str, ...]:
        return self.indexes + self.extra_indexes + self.find_links


def runtime_from_url(url: str) -> str | None:
    """The runtime tag a PyTorch wheel index or find-links page serves: ``.../whl/cu121`` ->
    ``cu121``, ``.../whl/nightly/cu128/`` -> ``cu128``, ``.../whl/cu111/torch_stable.html`` ->
    ``cu111``; the root (``.../whl/``, ``torch_stable.html``) and other indexes -> None."""
    path = urlparse(url.strip()).path or url.strip()
    found = _URL_RUNTIME_RE.search(path.rstrip("/") if not path.endswith(".html") else path)
    return found.group(1) if found else None


def is_pytorch_index(url: str) -> bool:
    """A download.pytorch.org index or find-links page, or a mirror of one (its path has
    ``whl`` or ``pytorch`` and a runtime folder, e.g. mirror.nju.edu.cn/pytorch/whl/cu128)."""
    parsed = urlparse(url.strip())
    if parsed.netloc.endswith("download.pytorch.org"):
        return True
    return runtime_from_url(url) is not None and (
        "whl" in parsed.path or "pytorch" in parsed.path.lower()
    )


def is_nightly(url: str) -> bool:
    return "/nightly" in urlparse(url.strip()).path


# --------------------------------------------------------------------------------------------
# Words


def _words(text: str) -> list[list[str]]:
    """Shell words of each command in ``text`` (``&&``, ``;``, ``|`` and new lines split commands;
    ``\\`` continuations join lines). Raises ConfigError for unbalanced quotes."""
    joined = re.sub(r"\\\r?\n", " ", text)
    commands: list[list[str]] = []
    for line in joined.splitlines():
        line = re.sub(r"(^|\s)#.*$", "", line)  # a shell or requirements-file comment
        try:
            lexer = shlex.shlex(line, posix=True, punctuation_chars=";&|")
            lexer.whitespace_split = True
            lexer.commenters = ""
            words = list(lexer)
        except ValueError as exc:
            raise ConfigError(f"check: cannot split {line.strip()!r} into words: {exc}") from exc
        current: list[str] = []
        for word in words:
            if word and set(word) <= set(";&|"):
                commands.append(current)
                current = []
            else:
                current.append(word)
        commands.append(current)
    return [c for c in commands if c]


def _tool_start(words: list[str]) -> tuple[str, int] | None:
    """(tool, index of the first argument after the sub-command) of an install command."""
    for i, word in enumerate(words):
        base = word.lstrip("!%").rsplit("/", 1)[-1].lower()
        base = base[:-4] if base.endswith(".exe") else base
        rest = words[i + 1 :]
        if re.fullmatch(r"pip(3(\.\d+)?)?", base) and rest[:1] == ["install"]:
            return "pip", i + 2
        if re.fullmatch(r"(python(3(\.\d+)?)?|py)", base) and rest[:3] == ["-m", "pip", "install"]:
            return "pip", i + 4
        if base == "uv" and rest[:2] == ["pip", "install"]:
            return "uv", i + 3
        if base == "uv" and rest[:1] == ["add"]:
            return "uv-add", i + 2
        if base == "uvx" or base == "uv" and rest[:1] in (["run"], ["tool"]):
            return "uv", i + 1
        if (
            base in ("conda", "mamba", "micromamba")
            and rest[:1]
            and rest[0]
            in (
                "install",
                "create",
            )
        ):
            return base, i + 2
    return None


def _venv_python(words: list[str]) -> str | None:
    """The X.Y of a virtual environment a command creates: ``uv venv -p 3.10`` /
    ``uv venv --python 3.10``, ``python3.10 -m venv``, ``py -3.10 -m venv``."""
    for i, word in enumerate(words):
        base = word.rsplit("/", 1)[-1].lower()
        if base == "uv" and words[i + 1 : i + 2] == ["venv"]:
            for j in range(i + 2, len(words) - 1):
                if words[j] in ("-p", "--python"):
                    found = re.search(r"(?<![\d.])(3\.\d+)", words[j + 1])
                    return found.group(1) if found else None
                if words[j].startswith("--python="):
                    found = re.search(r"(?<![\d.])(3\.\d+)", words[j])
                    return found.group(1) if found else None
            return None
        if "-m" in words[i + 1 : i + 4] and "venv" in words[i + 1 : i + 4]:
            found = re.fullmatch(r"python(3\.\d+)(\.exe)?", base)
            if found:
                return found.group(1)
            if base in ("py", "py.exe") and re.fullmatch(r"-3\.\d+", words[i + 1]):
                return words[i + 1][1:]
    return None


def _option(words: list[str], i: int) -> tuple[str, str | None, int]:
    """(name, value, next index) for an option at ``words[i]``."""
    word = words[i]
    if word.startswith("--") and "=" in word:
        name, value = word.split("=", 1)
        return name, value, i + 1
    if word in _VALUE_OPTIONS or word in _CONDA_VALUE_OPTIONS:
        return word, (words[i + 1] if i + 1 < len(words) else None), i + 2
    if len(word) > 2 and word[:2] in ("-i", "-f", "-r", "-c") and not word.startswith("--"):
        return word[:2], word[2:], i + 1
    return word, None, i + 1


# --------------------------------------------------------------------------------------------
# Wheels


def _platform(tag: str) -> str | None:
    if "aarch64" in tag:
        return "linux-aarch64"
    if "arm64" in tag or "universal2" in tag:
        return "macos-arm64"
    if "linux" in tag:
        return "linux"
    if tag.startswith("win"):
        return "windows"
    if tag.startswith("macosx"):
        return "macos"
    return None


def wheel_of(text: str) -> Wheel | None:
    """A torch/torchvision/torchaudio wheel from a URL or file name, else None.

    ``https://download.pytorch.org/whl/cu118/torch-2.0.0%2Bcu118-cp310-cp310-linux_x86_64.whl``
    -> torch 2.0.0+cu118, runtime cu118, Python 3.10, linux. A wheel without a local label
    under ``/whl/cu90/`` gets that folder's runtime.
    """
    path = urlparse(text).path if "://" in text else text
    name = unquote(path.rsplit("/", 1)[-1])
    if not name.endswith(".whl"):
        return None
    try:
        project, version, _build, tags = parse_wheel_filename(name)
    except (InvalidWheelFilename, InvalidVersion):
        return None
    project = str(project)
    if project not in (TORCH, *COMPANIONS):
        return None
    pythons, platforms = set(), set()
    for tag in tags:
        found = re.fullmatch(r"cp(\d)(\d+)", tag.interpreter)
        if found:
            pythons.add(f"{found.group(1)}.{found.group(2)}")
        plat = _platform(tag.platform)
        if plat:
            platforms.add(plat)
    runtime = version.local if version.local and RUNTIME_RE.match(version.local) else None
    if runtime is None and "://" in text:
        folder = re.search(r"/(cu\d{2,3}|rocm[\d.]+|cpu)/[^/]+$", urlparse(text).path)
        runtime = folder.group(1) if folder else None
    return Wheel(project, version, runtime, tuple(sorted(pythons)), tuple(sorted(platforms)), text)


# --------------------------------------------------------------------------------------------
# Requirements


def split_with(value: str) -> list[str]:
    """The requirements of one uv ``--with`` value, as uv reads it (uv-cli ``comma.rs``,
    ``CommaSeparatedRequirements``): split at commas outside ``[...]`` unless a version operator
    follows (``torch>=2.5,<2.7`` stays one), and ``name@2.5.1`` means ``name==2.5.1``.

    ``"moshi,torch==2.5.1+cu124"`` -> ``["moshi", "torch==2.5.1+cu124"]``.
    """
    parts, depth, start = [], 0, 0
    for i, char in enumerate(value):
        if char == "[":
            depth += 1
        elif char == "]":
            depth = max(depth - 1, 0)
        elif char == "," and depth == 0:
            if value[i + 1 :].lstrip()[:1] in ("!", "=", "<", ">", "~", "@"):
                continue
            parts.append(value[start:i].strip())
            start = i + 1
    parts.append(value[start:].strip())
    return [
        re.sub(r"^([A-Za-z0-9_.\-]+(?:\[[^\]]*\])?)@(?=\d)", r"\1==", part)
        for part in parts
        if part
    ]


def _requirement(text: str) -> Requirement | None:
    try:
        return Requirement(text)
    except InvalidRequirement:
        return None


def _conda_spec(text: str) -> tuple[str, str] | None:
    """(name, PEP 440 specifier) of a conda match spec like ``pytorch=1.8``,
    ``pytorch==1.8.0=py3.8_cuda11.1_0``, ``pytorch::pytorch>=1.8``, ``cudatoolkit=11.3``."""
    text = text.split("::", 1)[-1].strip()
    found = re.fullmatch(r"([A-Za-z0-9_.\-]+)\s*(.*)", text)
    if not found:
        return None
    name, rest = found.group(1).lower(), found.group(2).strip()
    if not rest:
        return name, ""
    if rest.startswith("=") and not rest.startswith("=="):
        version = rest[1:].split("=", 1)[0]
        if re.fullmatch(r"\d+(\.\d+)*\.dev\d{8}", version):
            # a dated nightly (pytorch=1.10.0.dev20210911): PEP 440 has no prefix match of a
            # dev release, and that day's builds are the only ones the prefix matches.
            return name, f"=={version}"
        return name, f"=={version}" if "*" in version else f"=={version}.*"
    if rest.startswith("=="):
        rest = "==" + rest[2:].split("=", 1)[0]
    try:
        SpecifierSet(rest)
    except InvalidSpecifier:
        return None
    return name, rest


def _build_string(text: str) -> str:
    """The build string of a conda match spec (``libtorch=*=cuda12*`` -> ``cuda12*``,
    ``pytorch==2.5.1=cuda126_py312h`` -> ``cuda126_py312h``); "" when it has none."""
    rest = re.sub(r"^[A-Za-z0-9_.\-]+", "", text.split("::", 1)[-1].strip()).lstrip("=")
    return rest.split("=", 1)[1] if "=" in rest else ""


def _conda_line(text: str, tool: str, args: list[str]) -> InstallLine:
    channels: list[str] = []
    spec, cuda, cuda_package, cpu_only, found = "", None, None, False, False
    nightly_package, mkl, cuda_build = False, None, False
    companions: list[str] = []
    i = 0
    while i < len(args):
        word = args[i]
        if word.startswith("-"):
            name, value, i = _option(args, i)
            if name in ("-c", "--channel") and value:
                channels.append(value)
            continue
        i += 1
        if "::" in word:
            channels.append(word.split("::", 1)[0])
        parsed = _conda_spec(word)
        if parsed is None:
            continue
        name, version = parsed
        if name in ("pytorch", "libtorch", "torch") and "cuda" in _build_string(word).lower():
            cuda_build = True
        if name in ("pytorch", "pytorch-cpu", "pytorch-gpu", "torch", "pytorch-nightly"):
            spec, found = version, True
            cpu_only = cpu_only or name == "pytorch-cpu"
            nightly_package = nightly_package or name == "pytorch-nightly"
        elif name == "mkl":
            mkl = version
        elif name in ("torchvision", "torchaudio", "torchdata", "torchtext"):
            companions.append(name)
        elif name in ("cudatoolkit", "pytorch-cuda", "cuda-toolkit") and version:
            cuda = re.sub(r"^==|\.\*$", "", version)
            cuda_package = name
        elif re.fullmatch(r"cuda(\d\d)(\d)?", name):
            digits = name[4:]
            cuda, cuda_package = f"{int(digits[:-1])}.{digits[-1]}", name
        elif name == "cpuonly":
            cpu_only = True
    try:
        requirement = Requirement("torch" + spec) if found else None
    except InvalidRequirement as exc:
        raise ConfigError(
            f"check: {_short(text)!r}: the pytorch spec {spec!r} is no version (like pytorch=1.9)"
        ) from exc
    conda = Conda(
        tool,
        tuple(channels),
        spec,
        cuda,
        cuda_package,
        cpu_only,
        nightly_package,
        mkl,
        tuple(companions),
        cuda_build,
    )
    return InstallLine(text, "conda", requirement, conda=conda, python=_conda_python(args))


def _conda_python(args: list[str]) -> str | None:
    """The X.Y of a ``python=3.10``/``python==3.10.4`` spec among conda arguments."""
    for word in args:
        parsed = _conda_spec(word) if not word.startswith("-") else None
        if parsed and parsed[0] == "python":
            found = re.search(r"(\d+\.\d+)", parsed[1])
            if found:
                return found.group(1)
    return None


def _pip_args(
    args: list[str],
    acc: dict,
    read_file: Callable[[str], str | None],
    depth: int = 0,
) -> None:
    """Collect requirements and options of pip/uv arguments (or requirements-file lines)."""
    i = 0
    while i < len(args):
        word = args[i]
        if word.startswith("-"):
            name, value, i = _option(args, i)
            if value is None:
                if name == "--pre":
                    acc["pre"] = True
                continue
            if name in ("-i", "--index-url", "--default-index"):
                acc["indexes"].append(value)
            elif name == "--extra-index-url":
                acc["extra_indexes"].append(value)
            elif name == "--index":
                acc["extra_indexes"].append(value.split("=", 1)[-1] if "=" in value else value)
                acc["uv_first_index"] = True
            elif name in ("-f", "--find-links"):
                acc["find_links"].append(value)
            elif name in ("--with", "-w"):
                _pip_args(split_with(value), acc, read_file, depth + 1)
            elif name == "--torch-backend":
                acc["torch_backend"] = value
            elif name == "--index-strategy":
                acc["index_strategy"] = value
            elif name in ("--python", "-p") and re.search(r"(?<![\d.])3\.\d+", value):
                acc["python"] = re.search(r"(?<![\d.])(3\.\d+)", value).group(1)
            elif name == "--prerelease" and value in ("allow", "explicit", "if-necessary"):
                acc["pre"] = True
            elif name in ("-r", "--requirement") and depth < 5:
                content = read_file(value)
                if content is None:
                    acc["unread"].append(value)
                else:
                    for line in content.splitlines():
                        line = line.split(" #", 1)[0].strip()
                        if line and not line.startswith("#"):
                            try:
                                _pip_args(shlex.split(line), acc, read_file, depth + 1)
                            except ValueError:
                                continue
            continue
        i += 1
        wheel = wheel_of(word)
        if wheel is not None:
            if wheel.name == TORCH:
                acc["wheel"] = wheel
                acc["torch"] = Requirement(f"torch=={wheel.version}")
            else:
                acc["companions"][wheel.name] = Requirement(f"{wheel.name}=={wheel.version}")
            continue
        requirement = _requirement(word)
        if requirement is None:
            continue
        name = requirement.name.lower()
        if name == TORCH:
            acc["torch"] = requirement
        elif name == "pytorch":
            acc["pypi_pytorch"] = requirement
        elif name in ("torch_nightly", "torch-nightly"):
            acc["torch_nightly"] = requirement
        elif name in COMPANIONS:
            acc["companions"][name] = requirement
        elif name == "numpy":
            acc["numpy"] = requirement


def parse(text: str, read_file: Callable[[str], str | None] | None = None) -> InstallLine:
    """The install line in ``text``.

    ``read_file(name)`` returns a ``-r`` file's text, or None when it cannot be read (the file
    is then listed in ``unread``); by default no file is read. A conda install of a CUDA toolkit
    package and no pytorch (``conda install pytorch-cuda=11.3 -c nvidia``), when no other command
    installs torch, is a conda line whose ``torch`` is None (still a verdict: conda may not find
    that package).

    Raises:
        ConfigError: text that is no install command (no pip/uv/conda install, no requirement
            of torch/torchvision/torchaudio, no wheel, no requirements lines), or unbalanced quotes.
    """
    read = read_file or (lambda _name: None)
    stripped = text.strip()
    commands = _words(stripped)
    env_python = None  # from an earlier `conda create -n x python=3.10`
    toolkit_only = None  # a conda install of a CUDA toolkit package and no pytorch
    for words in commands:
        env_python = _venv_python(words) or env_python
        start = _tool_start(words)
        if start is None:
            continue
        tool, at = start
        args = words[at:]
        if tool in ("conda", "mamba", "micromamba"):
            conda = _conda_line(stripped, tool, args)
            if conda.torch is None and conda.conda and not conda.conda.cpu_only:
                env_python = conda.python or env_python
                if conda.conda.cuda_package:
                    toolkit_only = replace(conda, python=conda.python or env_python)
                continue  # an environment or another package: look at the next command
            return replace(conda, python=conda.python or env_python)
        acc = _empty()
        _pip_args(args, acc, read)
        if (
            acc["torch"] is None
            and not acc["companions"]
            and not acc["unread"]
            and acc["pypi_pytorch"] is None
            and acc["torch_nightly"] is None
        ):
            continue  # an install of something else: look at the next command
        acc["python"] = acc["python"] or env_python
        acc["universal"] = tool == "uv-add"
        return _line(stripped, "uv" if tool == "uv-add" else tool, acc)
    if toolkit_only is not None:
        # conda install pytorch-cuda=11.3 / cudatoolkit=11.2 with no pytorch: whether conda
        # finds that toolkit package is still a verdict (install_conda_cuda.toolkit_only).
        return toolkit_only
    # No install command: a wheel, requirement lines, or a requirements file's text.
    acc = _empty()
    for words in commands:
        _pip_args(words, acc, read)
    if (
        acc["torch"] is not None
        or acc["companions"]
        or acc["pypi_pytorch"] is not None
        or acc["torch_nightly"] is not None
    ):
        return _line(stripped, "wheel" if acc["wheel"] else "requirements", acc)
    if any(_tool_start(words) for words in commands):
        raise ConfigError(
            f"check: {_short(stripped)!r} installs no torch, torchvision or torchaudio: "
            "nothing to check"
        )
    raise ConfigError(
        f"check: {_short(stripped)!r} is no install command: give a pip/uv/conda install line, "
        "a torch requirement (torch==2.7.0+cu126), a wheel URL or requirements lines"
    )


def _empty() -> dict:
    return {
        "torch": None,
        "companions": {},
        "indexes": [],
        "extra_indexes": [],
        "find_links": [],
        "pre": False,
        "torch_backend": None,
        "wheel": None,
        "unread": [],
        "uv_first_index": False,
        "index_strategy": None,
        "python": None,
        "universal": False,
        "pypi_pytorch": None,
        "numpy": None,
        "torch_nightly": None,
    }


def _line(text: str, tool: str, acc: dict) -> InstallLine:
    return InstallLine(
        text=text,
        tool=tool,
        torch=acc["torch"],
        companions=dict(acc["companions"]),
        indexes=tuple(acc["indexes"]),
        extra_indexes=tuple(acc["extra_indexes"]),
        find_links=tuple(acc["find_links"]),
        pre=acc["pre"],
        torch_backend=acc["torch_backend"],
        wheel=acc["wheel"],
        unread=tuple(acc["unread"]),
        uv_first_index=(acc["uv_first_index"] or tool == "uv")
        and acc["index_strategy"] != "unsafe-best-match",
        index_strategy=acc["index_strategy"],
        python=acc["python"],
        universal=acc["universal"],
        pypi_pytorch=acc["pypi_pytorch"],
        numpy=acc["numpy"],
        torch_nightly=acc["torch_nightly"],
    )


def _short(text: str) -> str:
    return text if len(text) <= 80 else text[:77] + "..."
