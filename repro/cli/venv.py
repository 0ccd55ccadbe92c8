"""``repro venv-run --variant ID``: the venv lane for one matrix.yaml variant (options and printing
only; the lane is ``repro.envs.lane``). Also the wheel-source options ``repro bisect`` shares.
"""

from __future__ import annotations

import argparse
import sys

from repro import config as matrix_mod
from repro.cli import options
from repro.envs import lane
from repro.errors import ConfigError

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
    # --variant like every other command; the old `venv-run VARIANT` still parses (a note names
    # --variant): it is the first of run_args (argparse's REMAINDER), taken by split_remainder.
    options.add(run, "variants")
    options.add(run, "config", default=matrix_mod.DEFAULT_FILE)
    options.add(run, "patterns", "results_dir")
    add_source_arguments(run)
    options.add(run, "dry_run", "run_args")
    run.set_defaults(handler=cmd_venv_run, own_parser=run)


def split_remainder(args: argparse.Namespace) -> list[str]:
    """Parse the options that followed the old positional variant (argparse's REMAINDER takes
    them all) into ``args``, set ``args.old_variant`` (that positional, or None) and return what
    came after ``--``. ConfigError-free: a bad option or a stray argument exits 2 through the
    parser, as any other."""
    rest = list(args.run_args or ())
    args.old_variant = rest.pop(0) if rest and not rest[0].startswith("-") else None
    cut = rest.index("--") if "--" in rest else len(rest)
    own, after = rest[:cut], rest[cut + 1 :]
    args.run_args = []
    if own:
        args.own_parser.parse_args(own, namespace=args)
        if args.run_args:  # a second positional: nothing takes it
            args.own_parser.error(f"unrecognized arguments: {' '.join(args.run_args)}")
    return after


def chosen_variant(args: argparse.Namespace, config: matrix_mod.Matrix) -> matrix_mod.Variant:
    """The one variant ``--variant`` (or the deprecated positional, with a note) selects: an exact
    id, or a glob matching exactly one id. Raises ConfigError otherwise."""
    selectors = list(args.variants or []) + options.deprecated_positional(
        args, "old_variant", "--variant ID"
    )
    if not selectors:
        raise ConfigError("venv-run: name the variant with --variant ID")
    if len(selectors) == 1 and not any(c in selectors[0] for c in "*?"):
        return config.variant(selectors[0])  # an exact id; an unknown one gets a did-you-mean
    variants = config.select_variants(selectors)
    if len(variants) != 1:
        raise ConfigError(
            f"venv-run: --variant must select exactly one variant ({len(variants)} matched: "
            f"{', '.join(v.id for v in variants)})"
        )
    return variants[0]


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
    variant = chosen_variant(args, config)
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
