"""``dml train`` under torchrun, stopped the way a scheduler stops a job, at a known point of the run.

Run as ``python -m torch.distributed.run ... tests/training/stopped_by_the_scheduler.py STOP_AT <dml train args>``.
The main process saves the checkpoint of iteration ``STOP_AT``, then sends SIGTERM to torchrun (which passes it on to
every worker) and waits to be killed; the other workers block in the next step's collectives. So the run always
dies right after that checkpoint, however fast or slow the machine is.
"""

from __future__ import annotations

import os
import signal
import sys
import time

from dml_core import cli
from dml_core.training import trainer


def stop_after(iteration: int) -> None:
    save = trainer.save_checkpoint

    def save_then_stop(path, state):
        written = save(path, state)
        if state["iteration"] == iteration:
            os.kill(os.getppid(), signal.SIGTERM)  # torchrun: it stops every worker, as on a scheduler's signal
            while True:
                time.sleep(1)
        return written

    trainer.save_checkpoint = save_then_stop


if __name__ == "__main__":
    stop_after(int(sys.argv[1]))
    sys.exit(cli.main(["train", *sys.argv[2:]]))
