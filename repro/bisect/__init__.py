"""``repro bisect``: the first bad release of a package (torch by default) between a good and
a bad version that an index really serves, judged by signature in the venv lane.

``search`` is the pure search (which version next, what the verdicts say), ``judge`` the pure
verdict of one step from its cases, ``versions`` what an index or wheel directory serves,
``run`` the orchestration (environments, ``repro run``, evidence), ``render`` the plan, the
report and the paragraph to paste into an issue. Never imports torch.
"""
