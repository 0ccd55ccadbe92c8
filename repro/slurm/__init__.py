"""The Slurm lane: matrix.yaml on the scheduler users already run (issue 33).

``repro slurm`` turns the matrix file into job arrays (one task per node or node group x lane x
variant, each running the host lane, ``repro venv-run`` or the variant's image on its node into
one run directory under a shared results root) and a report job that depends on them
(``--dependency=afterany``), collects what the scheduler did to each task and runs ``repro
report --config``. One module per concept:

- :mod:`repro.slurm.plan`: the tasks (typed: target, lane, variant) and the submission record.
- :mod:`repro.slurm.script`: the batch scripts (pure text, golden-tested).
- :mod:`repro.slurm.containers`: pyxis/enroot and Apptainer command lines from a variant's image.
- :mod:`repro.slurm.scheduler`: ``sbatch --parsable``, and task states from ``squeue``,
  ``sacct`` (slurmdbd), ``scontrol show job`` and the job-completion log.
- :mod:`repro.slurm.cells`: a task the scheduler ended (TIMEOUT, NODE_FAIL, PREEMPTED,
  OUT_OF_MEMORY, CANCELLED...) as a red cell with an ``infra.slurm_*`` signature and its job id.
- :mod:`repro.slurm.submit`: the steps of a submission and of ``--wait``.

Never imports torch.
"""
