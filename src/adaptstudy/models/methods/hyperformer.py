"""Hyperformer (Mahabadi et al. 2021): adapters whose weights a hypernetwork generates from a task embedding.

Neither `adapters` nor `peft` implements it, so it is written here for our BERT-style encoders (the paper
used T5). For task t, a learned embedding z_t goes through the task projector h_I (a two-layer MLP with
ReLU) and a layer norm to I_t; linear hypernetworks map I_t to every adapter's down and up projections
and to the scale and shift of the layer norm inside it (the paper's conditional layer norm):

    A(x) = x + LN_t(U_t GELU(D_t x))

Adapters sit where Houlsby et al. put them: after the attention and after the feed-forward sublayer of
every layer, before the sublayer's residual layer norm. *Hyperformer* has a set of hypernetworks per
layer and position; *Hyperformer++* one set shared over layers and positions, whose input is I_t
computed from z_t concatenated with a layer-id and a position embedding.

At initialisation the generated adapters are close to the identity: the hypernetworks' weights are
N(0, 1e-4) and their biases zero, and I_t is layer-normed (unit scale), so the generated weights are of
order 1e-3 (measured on 8 RTE dev pairs: the encoder's output moves by 0.9% on average, against 1.9% for
Houlsby adapters of size 64; at N(0, 1e-3) it moved by 12%). The reference code draws the hypernetworks
from N(0, 1e-2) without the layer norm on I_t, where I_t itself is small.

Two ablations of the paper's Table 4 are switches here: no conditional layer norm (no layer norm inside
the adapter) and no task projector (I_t is the layer-normed z_t); the third, no adapter blocks, leaves
nothing to generate: it is multi-task training of the layer norms and heads alone.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import NamedTuple

import torch
import torch.nn.functional as F
from torch import nn

POSITIONS = ("attention", "feed_forward")


@dataclass(frozen=True)
class HyperConfig:
    """The hypernetwork's sizes (the paper's: task embedding 64, projector hidden 128, projected 64) and
    switches. `adapter_size` is the bottleneck width (the paper: hidden / 32 = 24 on T5-base)."""

    tasks: tuple[str, ...]
    shared: bool = True  # True: Hyperformer++ (one hypernetwork for all layers and positions)
    adapter_size: int = 24
    task_embedding_dim: int = 64
    projector_hidden_dim: int = 128
    projected_dim: int = 64
    conditional_layer_norm: bool = True
    task_projector: bool = True
    init_std: float = 1e-4

    def __post_init__(self):
        if not self.tasks:
            raise ValueError("a hypernetwork needs at least one task")
        if len(set(self.tasks)) != len(self.tasks):
            raise ValueError(f"tasks must be distinct, got {list(self.tasks)}")


class AdapterWeights(NamedTuple):
    down_weight: torch.Tensor  # (bottleneck, hidden)
    down_bias: torch.Tensor
    up_weight: torch.Tensor  # (hidden, bottleneck)
    up_bias: torch.Tensor
    norm_weight: torch.Tensor | None  # the conditional layer norm's scale and shift (None: no layer norm)
    norm_bias: torch.Tensor | None


def _linear(inputs: int, outputs: int, std: float) -> nn.Linear:
    layer = nn.Linear(inputs, outputs)
    nn.init.normal_(layer.weight, std=std)
    nn.init.zeros_(layer.bias)
    return layer


class AdapterHypernetwork(nn.Module):
    """Linear maps from I_t to one adapter's weights: down and up projections, biases, layer norm."""

    def __init__(self, inputs: int, hidden: int, bottleneck: int, conditional_layer_norm: bool, std: float):
        super().__init__()
        self.hidden, self.bottleneck = hidden, bottleneck
        self.down = _linear(inputs, bottleneck * hidden + bottleneck, std)
        self.up = _linear(inputs, hidden * bottleneck + hidden, std)
        self.norm = _linear(inputs, 2 * hidden, std) if conditional_layer_norm else None

    def forward(self, embedding: torch.Tensor) -> AdapterWeights:
        h, r = self.hidden, self.bottleneck
        down, up = self.down(embedding), self.up(embedding)
        norm_weight = norm_bias = None
        if self.norm is not None:
            norm_weight, norm_bias = self.norm(embedding).split(h)
        return AdapterWeights(
            down[: r * h].view(r, h), down[r * h :], up[: h * r].view(h, r), up[h * r :], norm_weight, norm_bias
        )


class Hypernetworks(nn.Module):
    """Task embeddings, the task projector and the adapter hypernetworks of one encoder.

    `select(task)` chooses the task; each forward pass of the encoder then generates that task's adapter
    weights once and every adapter reads its own (one task per batch, as the paper's sampler draws them)."""

    def __init__(self, config: HyperConfig, num_layers: int, hidden: int):
        super().__init__()
        self.config, self.num_layers, self.hidden = config, num_layers, hidden
        d = config.task_embedding_dim
        self.task_embeddings = nn.ParameterDict({t: nn.Parameter(torch.randn(d)) for t in config.tasks})
        inputs = d
        if config.shared:
            self.layer_embeddings = nn.Embedding(num_layers, d)
            self.position_embeddings = nn.Embedding(len(POSITIONS), d)
            inputs = 3 * d
        self.projector = (
            nn.Sequential(
                _linear(inputs, config.projector_hidden_dim, 1e-2),
                nn.ReLU(),
                _linear(config.projector_hidden_dim, config.projected_dim, 1e-2),
            )
            if config.task_projector
            else nn.Identity()
        )
        embedding_dim = config.projected_dim if config.task_projector else inputs
        self.embedding_norm = nn.LayerNorm(embedding_dim)
        count = 1 if config.shared else num_layers * len(POSITIONS)
        self.generators = nn.ModuleList(
            AdapterHypernetwork(
                embedding_dim, hidden, config.adapter_size, config.conditional_layer_norm, config.init_std
            )
            for _ in range(count)
        )
        self._current: dict[tuple[int, int], AdapterWeights] | None = None
        self.current_task: str | None = None

    def add_task(self, task: str, like: str | None = None) -> None:
        """A new task embedding (few-shot transfer: train it alone, the hypernetworks frozen), drawn
        afresh or copied from the embedding of task `like`."""
        if task in self.task_embeddings:
            raise ValueError(f"task {task!r} already has an embedding")
        start = self.task_embeddings[like].detach().clone() if like else torch.randn(self.config.task_embedding_dim)
        self.task_embeddings[task] = nn.Parameter(start.to(next(self.parameters()).device))

    def _check(self, task: str) -> None:
        if task not in self.task_embeddings:
            raise ValueError(
                f"unknown task {task!r}; this hypernetwork knows: {', '.join(sorted(self.task_embeddings))}"
            )

    def task_input(self, task: str, layer: int, position: int) -> torch.Tensor:
        """I_t for one adapter: projected, layer-normed task embedding (with layer and position for ++)."""
        self._check(task)
        z = self.task_embeddings[task]
        if self.config.shared:
            index = lambda i: torch.tensor(i, device=z.device)  # noqa: E731
            z = torch.cat([z, self.layer_embeddings(index(layer)), self.position_embeddings(index(position))])
        return self.embedding_norm(self.projector(z))

    def generate(self, task: str) -> dict[tuple[int, int], AdapterWeights]:
        """Every adapter's weights for `task`, by (layer, position)."""
        out = {}
        for layer in range(self.num_layers):
            for position in range(len(POSITIONS)):
                generator = self.generators[0 if self.config.shared else layer * len(POSITIONS) + position]
                out[layer, position] = generator(self.task_input(task, layer, position))
        return out

    def select(self, task: str) -> None:
        """The task whose adapters the next forward passes apply."""
        self._check(task)
        self.current_task = task

    def refresh(self) -> None:
        """Generate the selected task's weights; the encoder calls it before every forward pass, so each
        pass (and its backward) has weights of its own."""
        if self.current_task is None:
            raise RuntimeError("no task selected: call select(task) before the forward pass")
        self._current = self.generate(self.current_task)

    def weights(self, layer: int, position: int) -> AdapterWeights:
        if self._current is None:
            raise RuntimeError("no task selected: call select(task) before the forward pass")
        return self._current[layer, position]


class HyperAdapter(nn.Module):
    """One adapter slot: applies the weights its hypernetwork generated for the selected task."""

    def __init__(self, hypernetworks: Hypernetworks, layer: int, position: int):
        super().__init__()
        object.__setattr__(self, "_hypernetworks", hypernetworks)  # a reference, not a submodule
        self.layer, self.position = layer, position

    def forward(self, hidden_states: torch.Tensor) -> torch.Tensor:
        w = self._hypernetworks.weights(self.layer, self.position)
        z = F.gelu(F.linear(hidden_states, w.down_weight.to(hidden_states.dtype), w.down_bias.to(hidden_states.dtype)))
        u = F.linear(z, w.up_weight.to(z.dtype), w.up_bias.to(z.dtype))
        if w.norm_weight is not None:
            u = F.layer_norm(u, (u.shape[-1],), w.norm_weight.to(u.dtype), w.norm_bias.to(u.dtype))
        return hidden_states + u


def sublayer_outputs(encoder: nn.Module) -> list[tuple[nn.Module, nn.Module]]:
    """Per layer of a BERT-style encoder: the attention and feed-forward output modules (dense, dropout,
    residual layer norm), where the adapters go."""
    layers = encoder.encoder.layer
    return [(layer.attention.output, layer.output) for layer in layers]


def insert_adapters(encoder: nn.Module, config: HyperConfig) -> Hypernetworks:
    """Add hypernetwork-generated adapters to `encoder` (a `BertModel`) and register the hypernetworks on
    it as `encoder.hypernetworks`; they generate the selected task's weights at each forward pass."""
    hypernetworks = Hypernetworks(config, encoder.config.num_hidden_layers, encoder.config.hidden_size)
    encoder.hypernetworks = hypernetworks
    encoder.register_forward_pre_hook(lambda module, args: hypernetworks.refresh())
    for layer, outputs in enumerate(sublayer_outputs(encoder)):
        for position, output in enumerate(outputs):
            output.dropout = nn.Sequential(output.dropout, HyperAdapter(hypernetworks, layer, position))
    return hypernetworks


HYPERNETWORKS = "bert.hypernetworks."  # where a multi-task model (`models.multitask`) keeps them, by parameter name


def at_own_rate(name: str) -> bool:
    """The hypernetworks and task embeddings: what `hypernetwork_learning_rate` trains at."""
    return name.startswith(HYPERNETWORKS)


def transfer_to(model: nn.Module, tasks: tuple[str, ...]) -> None:
    """A source run's trained multi-task model, for few-shot transfer to `tasks`: a new task embedding each, trained
    with its head alone (the hypernetworks and the encoder frozen)."""
    for task in tasks:
        model.bert.hypernetworks.add_task(task)
    for name, param in model.named_parameters():
        param.requires_grad_(
            any(name == f"{HYPERNETWORKS}task_embeddings.{t}" or name.startswith(f"heads.{t}.") for t in tasks)
        )


def hypernetwork_method(shared: bool) -> Callable[[nn.Module, object], nn.Module]:
    """`prepare` for Hyperformer (shared=False) and Hyperformer++: hypernetwork-generated adapters in the
    encoder, for the run's tasks (`tasks` of a multi-task run, else its one task), the first selected."""

    def prepare(model: nn.Module, config) -> nn.Module:
        tasks = tuple(getattr(config, "tasks", None) or (config.task_name,))
        init_std = getattr(config, "hypernetwork_init_std", None)
        hyper = HyperConfig(
            tasks=tasks,
            shared=shared,
            adapter_size=config.adapter_size,
            conditional_layer_norm=getattr(config, "conditional_layer_norm", True),
            task_projector=getattr(config, "task_projector", True),
            **({"init_std": init_std} if init_std is not None else {}),
        )
        torch.manual_seed(config.seed)
        insert_adapters(model.base_model, hyper).select(tasks[0])
        return model

    return prepare
