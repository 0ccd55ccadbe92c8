"""matrix.yaml to a typed model: validation, selection, canonical ids, the override cascade.

``read`` reads the file as untrusted input (regular file, size, UTF-8, duplicate keys, depth,
aliases), ``load`` validates it into the ``model`` (Variant, ScenarioConfig, Expectation,
Matrix), ``select`` is the one glob semantics and the case/variant selectors, ``ids`` the
canonical ids and runtime tags, ``overrides`` the CLI > environment > matrix.yaml cascade,
``github_plan`` the CI job matrix. Import the names from here: ``from repro.config import load``.
Never imports torch.
"""

from repro.config.ids import (
    canonical_id,
    variant_mismatch,
)
from repro.config.load import SCHEMA_VERSION, load, parse
from repro.config.model import (
    EXPECT_OUTCOMES,
    Expectation,
    Matrix,
    ScenarioConfig,
    Variant,
)
from repro.config.overrides import OVERRIDE_ENV, Overrides
from repro.config.select import (
    DEFAULT_FILE,
    case_matches,
    glob_match,
    select_cases,
    select_variants,
)
from repro.config.sizes import SIZE_EXPECTED, size_bytes, size_ok
from repro.model.variant import accelerator_of, runtime_tag

__all__ = [
    "DEFAULT_FILE",
    "EXPECT_OUTCOMES",
    "OVERRIDE_ENV",
    "SCHEMA_VERSION",
    "Expectation",
    "Matrix",
    "Overrides",
    "ScenarioConfig",
    "Variant",
    "accelerator_of",
    "canonical_id",
    "case_matches",
    "glob_match",
    "load",
    "parse",
    "runtime_tag",
    "select_cases",
    "select_variants",
    "size_bytes",
    "size_ok",
    "SIZE_EXPECTED",
    "variant_mismatch",
]
