"""The GPU check's experiments: parts that measure what a setting would change, for the next default, rather than
check that the GPU path works: ``precision`` (bf16 against fp32), ``overhead`` (damlrrm's backbone bound under
each host-side setting), ``graphs`` (``training.cuda_graphs`` against eager) and ``bench`` (the training
benchmark). The registry runs them among the checks, in its one order, and they report the same way.

They may import the check's shared pieces (``part``, ``children``) and its checks (``parity``); nothing in
``gpu_check`` outside this folder imports them but the registry."""
