"""A process that trains runs loads only what training needs: every training process of a reproduction (a
side-by-side worker, a torchrun rank, a submitit job, ``dml train``) imports the runner, and scikit-learn, numba,
pandas and matplotlib would add about a CPU-second to each start (the page builder, the linear protocol and the
glyph drawing load them where they work)."""

import subprocess
import sys

TRAINING_ENTRIES = ("dml_core.cli", "dml_core.runner.one_run", "dml_core.runner.jobs", "dml_core.runner.inline")
NOT_FOR_TRAINING = ("sklearn", "numba", "joblib", "pandas", "matplotlib", "scipy.io", "scipy.stats")


def test_the_runner_and_the_command_load_no_library_that_only_pages_linear_runs_or_glyphs_need():
    code = (
        f"import sys, {', '.join(TRAINING_ENTRIES)}; "
        f"print(','.join(m for m in {NOT_FOR_TRAINING!r} if m in sys.modules))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == ""
