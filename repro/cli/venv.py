"""``repro venv-run VARIANT``: the venv lane for one matrix.yaml variant (options and printing
only; the lane is ``repro.envs.lane``). Also the wheel-source options ``repro bisect`` shares.
"""

from __future__ import annotations

import argparse
import sys

from repro import config as matrix_mod
from repro.envs import lane

PROG = "repro"


def add_source_arguments(parser: argparse.ArgumentParser) -> None:
    """Where the pinned wheels come from and which Python: ``--index-url``, ``--wheelhouse``
    and ``--python`` are the override cascade's (``REPRO_INDEX_URL``, ``REPRO_WHEELHOUSE``,
    ``REPRO_PYTHON`` when not given); ``--extra-index-url`` and ``--find-links`` add sources."""
    group = parser.add_argument_group(
        "environment (else $REPRO_INDEX_URL, $REPRO_WHEELHOUSE, $REPRO_PYTHON, else matrix.yaml)"
    )
    group.add_argument(
        "--index-url",
        metavar="URL",
        help="wheel index of the pinned package ({runtime} is replaced)",
    )
    group.add_argument(
        "--extra-index-url",
        dest="extra_index_urls",
        action="append",
        default=[],
        metavar="URL",
        help="another index for the pinned package and its dependencies (repeatable)",
    )
    group.add_argument(
        "--find-links",
        action="append",
        default=[],
        metavar="DIR",
        help="a directory (or page) of wheels beside the index (repeatable)",
    )
    group.add_argument(
        "--wheelhouse",
        metavar="DIR",
        help="install from the wheels in DIR only: no index, no network (see `repro wheelhouse`)",
    )
    group.add_argument(
        "--python",
        metavar="X.Y",
        help="the environment's Python (a version or a path; uv downloads one the host lacks)",
    )
    group.add_argument(
        "--env-cache",
        metavar="DIR",
        help="where environments are kept (default: $REPRO_ENV_CACHE, else ~/.cache/repro-matrix/envs)",
    )


def overrides_from(args: argparse.Namespace) -> matrix_mod.Overrides:
    """The override cascade for ``--index-url``, ``--wheelhouse`` and ``--python``."""
    names = ("index_url", "wheelhouse", "python")
    return matrix_mod.Overrides.collect(
        {name: getattr(args, name, None) for name in names}, python_path=True
    )


def source_options(args: argparse.Namespace) -> lane.SourceOptions:
    return lane.SourceOptions(tuple(args.extra_index_urls), tuple(args.find_links))


def say(line: str) -> None:
    print(f"{PROG}: {line}", file=sys.stderr, flush=True)


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add ``venv-run`` (handler: :func:`cmd_venv_run`)."""
    run = subparsers.add_parser(
        "venv-run",
        help="run the cases in a cached uv environment holding a variant's torch pin (the venv lane)",
        description="Make (or reuse) a uv environment with the variant's torch pin and this "
        "project, then run `repro run` with its interpreter; results are recorded as the "
        "variant with variant.lane=venv. Arguments after -- go to `repro run`.",
    )
    run.add_argument("variant", metavar="VARIANT", help="variant id in matrix.yaml")
    matrix_mod.add_config_argument(run)
    matrix_mod.add_case_selector_argument(run)
    run.add_argument(
        "--results", metavar="DIR", help="results root (default: defaults.results_dir)"
    )
    add_source_arguments(run)
    run.add_argument(
        "--dry-run",
        action="store_true",
        help="print the environment's settings and key and the `repro run` command; make nothing",
    )
    run.add_argument(
        "run_args",
        nargs=argparse.REMAINDER,
        metavar="-- RUN_ARGS",
        help="more `repro run` options, e.g. -- --timeout-scale 2 -j 1",
    )
    run.set_defaults(handler=cmd_venv_run, own_parser=run)


def split_remainder(args: argparse.Namespace) -> list[str]:
    """Parse the options that followed the positional(s) (argparse's REMAINDER takes them all)
    into ``args`` and return what came after ``--``. ConfigError-free: a bad option exits 2
    through the parser, as any other."""
    rest = list(args.run_args or ())
    cut = rest.index("--") if "--" in rest else len(rest)
    own, after = rest[:cut], rest[cut + 1 :]
    if own:
        args.run_args = []
        args.own_parser.parse_args([*own, args.variant], namespace=args)
    return after


def run_args_from(
    args: argparse.Namespace, after: list[str], no_accelerator: str | None = None
) -> list[str]:
    """``-k`` and ``--results`` as `repro run` options, ``--no-expect-accelerator`` when
    ``no_accelerator`` says why the host lacks the variant's GPU, then what came after ``--``."""
    out: list[str] = ["--no-expect-accelerator"] if no_accelerator else []
    for pattern in args.patterns or ():
        out += ["-k", pattern]
    if args.results:
        out += ["--results", args.results]
    return out + after


def cmd_venv_run(args: argparse.Namespace) -> int:
    """``repro venv-run``: the exit status of `repro run` in the environment (0, 1), 2 for bad
    input, 3 when the environment cannot be made (the message names uv's reason)."""
    from pathlib import Path

    after = split_remainder(args)
    config = matrix_mod.load(args.config)
    variant = config.variant(args.variant)
    overrides = overrides_from(args)
    spec = lane.spec_for_variant(variant, overrides, source_options(args))
    for name, value in spec.describe():
        say(f"{name:<8} {value}")
    root = Path(args.env_cache).expanduser() if args.env_cache else None
    no_accelerator = lane.missing_accelerator(variant.accelerator)
    if no_accelerator:
        say(
            f"{no_accelerator}: the {variant.accelerator} cases of {variant.id} are skipped, "
            "not failed; its cpu cases run"
        )
    run_args = run_args_from(args, after, no_accelerator)
    if args.dry_run:
        from repro.envs import Env, env_root

        placeholder = Env(
            Path(root or env_root()) / spec.key(), "<env>/bin/python", spec.key(), False, 0.0
        )
        print(" ".join(lane.run_command(placeholder, variant.id, args.config, run_args)))
        return 0
    env = lane.prepare(spec, say, root)
    command = lane.run_command(env, variant.id, str(args.config), run_args)
    return lane.run_in_env(command)
