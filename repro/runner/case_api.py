"""Where the case API lived before it moved to the ground floor (``repro.case_api``): kept so a
user's ``module:`` scenario that imports it from here still loads. New code imports
``repro.case_api`` (or ``from repro.scenarios import Context, CaseFailed, CaseSkipped``)."""

from repro.case_api import CaseFailed, CaseSkipped, Context

__all__ = ["CaseFailed", "CaseSkipped", "Context"]
