"""Running a paper or one run: the one package behind `dml reproduce`, `dml nightly`, `dml train` and the
`reproduce-<key>` nox sessions.

- ``run_options``: ``RunOptions``, the options ``dml reproduce`` and ``dml nightly`` share (roots, device, pipeline);
- ``plan``: which runs (every run x seed of the recipe files, or the mini tier's headline comparison; the linear
  plans), each resolved and placed (``plan_run``, ``dml train``'s one run too), and which are finished;
- ``run_path``: ``RunPath``, the one path every planned run takes: the rules checked before anything trains and
  the one training entry;
- ``one_run``: ``OneRun`` and ``train_one``, ``dml train``'s one run on that path;
- ``fetch``: the datasets and weight files they need and this machine lacks, fetched before the preflight's checks;
- ``preflight``: what they need before anything trains (parameters, datasets, weight files, writable places);
- ``component_check``: a recipe's loss, sampler and head parameters against what their registries accept (here,
  above ``recipes``, ``data``, ``models`` and ``losses``, which it reads);
- ``inline``: ``PaperRun`` (a paper's options) and ``reproduce``, which trains the runs in this process and
  builds the tables;
- ``jobs``: the same with each run submitted as a job (local processes or Slurm, through submitit);
- ``linear``: anml Table 2's linear runs (plan, resume from finished splits, results files);
- ``side_by_side``: a paper's CPU runs in worker processes, one per core, each on one thread (the mini tier);
- ``eta``: the time left of a paper, from the pace of the runs already finished;
- ``plan_report``: the plan printed before the first step (runs, hours and their basis, inputs, disk), from
  ``training_shape`` (what sets a run's time, read from its recipe), ``calibration`` (those shapes timed here),
  ``expected_hours`` (each run's hours and what they rest on) and ``disk_needs`` (the disk each stage needs);
- ``nightly``: every paper again at this commit, checked against the published numbers and the last nightly.
"""
