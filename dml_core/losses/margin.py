"""Margin loss with distance-weighted sampling (Wu, Manmatha, Smola and Krähenbühl 2017)."""

from __future__ import annotations

import torch
from torch import Tensor, nn

from dml_core.errors import InputError
from dml_core.losses.base import MetricLoss, check_choice, pairwise_matrix
from dml_core.losses.mining import all_triplets, distance_weighted_triplets

SAMPLINGS = ("distance_weighted", "all")


class MarginLoss(MetricLoss):
    """Wu et al. 2017, Eq. 3, on Euclidean distances between L2-normalised embeddings:

        l(i, j) = [margin + y_ij (D_ij - beta)]_+        (y_ij = +1 positive, -1 negative)

    over the positive pair (a, p) and the negative pair (a, n) of every sampled triplet, divided by the
    number of non-zero terms, plus ``nu * beta`` (the paper's beta regulariser). Defaults beta=1.2,
    margin=0.2, nu=0 (as pytorch-metric-learning; the paper gives no single nu). ``learn_beta`` makes beta
    a parameter, one per class when ``num_classes`` is given (then the regulariser is nu * beta of each
    triplet's anchor class, summed and divided like the margin terms, as pytorch-metric-learning does);
    optimise it with ``loss.parameters()`` (the paper uses its own learning rate for beta).

    ``sampling``: "distance_weighted" draws one negative per positive pair (``mining.distance_weighted_
    triplets`` with ``cutoff``/``nonzero_loss_cutoff``) from a generator seeded with ``seed`` on the
    embeddings' device; "all" uses every triplet. ``last_terms``: "pos", "neg", "beta_reg".
    """

    name = "margin"

    def __init__(
        self,
        margin: float = 0.2,
        beta: float = 1.2,
        nu: float = 0.0,
        learn_beta: bool = False,
        num_classes: int | None = None,
        sampling: str = "distance_weighted",
        cutoff: float = 0.5,
        nonzero_loss_cutoff: float = 1.4,
        seed: int = 0,
    ) -> None:
        super().__init__()
        check_choice(sampling, SAMPLINGS, self.name, "sampling")
        self.margin, self.nu, self.sampling, self.learn_beta = margin, nu, sampling, learn_beta
        self.cutoff, self.nonzero_loss_cutoff, self.seed = cutoff, nonzero_loss_cutoff, seed
        initial = torch.full((num_classes or 1,), float(beta))
        if learn_beta:
            self.beta = nn.Parameter(initial)
        else:
            self.register_buffer("beta", initial)
        self._generator: torch.Generator | None = None
        self._saved_generator: tuple[str, Tensor] | None = None  # (device type, state) from a checkpoint, not yet used

    def _sampler(self, device: torch.device) -> torch.Generator:
        # One generator per loss, made on first use on the embeddings' device: seeded, so reproducible; or
        # continuing a checkpoint's, on the kind of device it ran on (a CUDA generator's state is not a CPU one's).
        if self._generator is None or self._generator.device != device:
            self._generator = torch.Generator(device=device)
            if self._saved_generator is None:
                self._generator.manual_seed(self.seed)
            else:
                saved_type, state = self._saved_generator
                if saved_type != device.type:
                    raise InputError(
                        f"loss {self.name}: the checkpoint's triplet-sampling generator ran on {saved_type}, this run "
                        f"embeds on {device.type}; resume on a {saved_type} device (a generator's state does not "
                        "carry over to another kind of device)"
                    )
                self._generator.set_state(state)
                self._saved_generator = None
        return self._generator

    # The sampling generator's state and its kind of device travel in state_dict(), so a resumed run draws the same
    # triplets; the state is restored when the embeddings' device is known (the first step after loading).
    def get_extra_state(self) -> dict:
        if self._generator is not None:
            return {"generator": self._generator.get_state(), "device": self._generator.device.type}
        saved_type, state = self._saved_generator or (None, None)
        return {"generator": state, "device": saved_type}

    def set_extra_state(self, state: dict) -> None:
        saved = state.get("generator")
        self._generator = None
        # checkpoints from before the device was recorded: a CPU generator's state has its own size
        cpu_size = torch.Generator().get_state().numel()
        device_type = state.get("device") or ("cpu" if saved is not None and saved.numel() == cpu_size else "cuda")
        self._saved_generator = None if saved is None else (device_type, saved)

    def compute_loss(self, embeddings: Tensor, labels: Tensor) -> Tensor:
        dist = pairwise_matrix(embeddings, embeddings, "euclidean")
        # Index lists (host syncs on CUDA): the sums below run over the sampled triplets in their order (``mining``).
        if self.sampling == "all":
            a, p, n = all_triplets(labels)
        else:
            a, p, n = distance_weighted_triplets(
                dist,
                labels,
                embeddings.shape[1],
                self.cutoff,
                self.nonzero_loss_cutoff,
                self._sampler(embeddings.device),
            )
        beta = self.beta.to(embeddings.dtype)
        beta = beta[labels[a]] if len(beta) > 1 else beta.expand(len(a))
        pos_terms = torch.relu(dist[a, p] - beta + self.margin)
        neg_terms = torch.relu(beta - dist[a, n] + self.margin)
        divisor = ((pos_terms > 0).sum() + (neg_terms > 0).sum()).clamp(min=1)
        pos_loss, neg_loss = pos_terms.sum() / divisor, neg_terms.sum() / divisor
        if not self.learn_beta:  # a fixed beta makes the regulariser a constant: leave it out
            beta_reg = torch.zeros((), dtype=embeddings.dtype, device=embeddings.device)
        elif len(self.beta) > 1:
            beta_reg = self.nu * beta.sum() / divisor
        else:
            beta_reg = self.nu * self.beta.to(embeddings.dtype).sum()
        self.record_terms(pos=pos_loss, neg=neg_loss, beta_reg=beta_reg)
        return pos_loss + neg_loss + beta_reg
