"""``repro venv-run VARIANT``: the venv lane for one matrix.yaml variant (options and printing
only; the lane is ``repro.envs.lane``). Also the wheel-source options ``repro bisect`` shares.
"""

from __future__ import annotations

import argparse
import sys

from repro import config as matrix_mod
from repro.cli import options
from repro.envs import lane

PROG = "repro"


def add_source_arguments(parser: argparse.ArgumentParser) -> None:
    """Where the pinned wheels come from and which Python: ``--index-url``, ``--wheelhouse``
    and ``--env-python`` are the override cascade's (``REPRO_INDEX_URL``, ``REPRO_WHEELHOUSE``,
    ``REPRO_PYTHON`` when not given); ``--extra-index-url`` and ``--find-links`` add sources.
    Options from :mod:`repro.cli.options`."""
    group = parser.add_argument_group(
        "environment (else $REPRO_INDEX_URL, $REPRO_WHEELHOUSE, $REPRO_PYTHON, else matrix.yaml)"
    )
    options.add(group, "index_url", "extra_index_urls", "find_links", "wheelhouse")
    options.add(group, "env_python", "env_cache")


def overrides_from(args: argparse.Namespace) -> matrix_mod.Overrides:
    """The override cascade for ``--index-url``, ``--wheelhouse`` and ``--python``."""
    cli = {
        "index_url": getattr(args, "index_url", None),
        "wheelhouse": getattr(args, "wheelhouse", None),
        "python": getattr(args, "env_python", None),
    }
    return matrix_mod.Overrides.collect(cli, python_path=True, flags={"python": "--env-python"})


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
    options.add(run, "variant_id")
    options.add(run, "config", default=matrix_mod.DEFAULT_FILE)
    options.add(run, "patterns", "results_dir")
    add_source_arguments(run)
    options.add(run, "dry_run", "run_args")
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
        args.own_parser.parse_args([*own, args.variant_id], namespace=args)
    return after


def run_args_from(
    args: argparse.Namespace, after: list[str], no_accelerator: str | None = None
) -> list[str]:
    """``-k`` and ``--results-dir`` as `repro run` options, ``--no-expect-accelerator`` when
    ``no_accelerator`` says why the host lacks the variant's GPU, then what came after ``--``."""
    out: list[str] = ["--no-expect-accelerator"] if no_accelerator else []
    for pattern in args.patterns or ():
        out += ["-k", pattern]
    if args.results_dir:
        out += ["--results-dir", args.results_dir]
    return out + after


def cmd_venv_run(args: argparse.Namespace) -> int:
    """``repro venv-run``: the exit status of `repro run` in the environment (0, 1), 2 for bad
    input, 3 when the environment cannot be made (the message names uv's reason)."""
    from pathlib import Path

    after = split_remainder(args)
    config = matrix_mod.load(args.config)
    variant = config.variant(args.variant_id)
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
