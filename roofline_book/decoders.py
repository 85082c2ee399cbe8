"""Decoder-only language models: their shapes, and the catalog in ``data/models.toml``.

:class:`ModelConfig` holds what the inference bounds need: widths, heads, the
MLP, the vocabulary, mixture-of-experts routing and which layers attend
through a sliding window. :func:`model` finds a catalog model by name,
:func:`adhoc_model` builds your own.

Examples
--------
>>> mistral = model("Mistral-7B")
>>> mistral.sliding_window, mistral.local_layers
(4096, 32)
>>> gemma = model("gemma-2-9b")
>>> gemma.local_layers, gemma.layers - gemma.local_layers, gemma.layer_kind(0)
(21, 21, 'local')
"""

from __future__ import annotations

import functools
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass
from importlib import resources
from types import MappingProxyType

from . import _validate
from .hardware import Source

#: The kinds of layer. ``"global"`` attends to the whole context, ``"local"`` to the last
#: ``sliding_window`` tokens and keeps only those in its cache.
LAYER_KINDS = ("global", "local")

#: Activations of a gated MLP, by the name Hugging Face configs give them (``hidden_act``).
ACTIVATIONS = {"silu": "SwiGLU", "gelu": "GeGLU"}

#: Where the catalog lives, for messages.
CATALOG_FILE = "roofline_book/data/models.toml"


@dataclass(frozen=True)
class ModelConfig:
    """A decoder-only language model's shape.

    Parameters
    ----------
    key, name : str
        Catalog key (``"llama-2-7b"``) and display name.
    hidden, layers, heads, kv_heads, ffn, vocab : int
        Model width, decoder layers, query heads, key/value heads (fewer than
        ``heads`` for GQA, 1 for MQA), MLP width (per expert), vocabulary.
    head_dim : int, optional
        Width of a head; ``hidden // heads`` by default.
    gated : bool
        Gated MLP (gate, up, down projections) or a plain two-matrix one.
    activation : str
        The gated MLP's activation, a key of :data:`ACTIVATIONS`: ``"silu"``
        (SwiGLU) or ``"gelu"`` (GeGLU, tanh form). Plain MLPs use GELU.
    tied_embeddings : bool
        The LM head shares the embedding matrix.
    max_context : int
        Longest context the model was trained for (tokens).
    experts, experts_per_token : int
        Routed experts per MLP and how many each token uses (1, 1 for a dense model).
    sliding_window : int, optional
        Tokens a ``"local"`` layer attends to, the current one included; it
        keeps only these in its KV cache (Mistral's rolling buffer). None: no
        local layers.
    layer_pattern : tuple of str, optional
        Kinds (:data:`LAYER_KINDS`) of layers 0, 1, ..., repeated over the
        layers. By default every layer is ``"local"`` when ``sliding_window``
        is set (Mistral-7B) and ``"global"`` otherwise; Gemma 2 alternates
        ``("local", "global")``.
    source : roofline_book.hardware.Source, optional
        Where the configuration was published.
    """

    key: str
    name: str
    hidden: int
    layers: int
    heads: int
    kv_heads: int
    ffn: int
    vocab: int
    head_dim: int | None = None
    gated: bool = True
    activation: str = "silu"
    tied_embeddings: bool = False
    max_context: int = 4096
    experts: int = 1
    experts_per_token: int = 1
    sliding_window: int | None = None
    layer_pattern: tuple[str, ...] | None = None
    source: Source | None = None

    def __post_init__(self) -> None:
        for field in ("hidden", "layers", "heads", "kv_heads", "ffn", "vocab", "max_context"):
            _validate.size(field, getattr(self, field))
        _validate.size("experts", self.experts)
        _validate.size("experts_per_token", self.experts_per_token)
        if self.heads % self.kv_heads:
            raise ValueError(
                f"heads ({self.heads}) must be a multiple of kv_heads ({self.kv_heads})"
            )
        if self.experts_per_token > self.experts:
            raise ValueError(
                f"experts_per_token ({self.experts_per_token}) must be <= experts ({self.experts})"
            )
        if self.activation not in ACTIVATIONS:
            raise ValueError(
                f"activation must be one of {', '.join(ACTIVATIONS)}; got {self.activation!r}"
            )
        if self.head_dim is None:
            if self.hidden % self.heads:
                raise ValueError(
                    f"hidden ({self.hidden}) must be divisible by heads ({self.heads})"
                )
            object.__setattr__(self, "head_dim", self.hidden // self.heads)
        _validate.size("head_dim", self.head_dim)
        if self.sliding_window is not None:
            _validate.size("sliding_window", self.sliding_window)
        pattern = self.layer_pattern
        if pattern is not None:
            if isinstance(pattern, str) or not pattern:
                raise TypeError(
                    f"layer_pattern must be a non-empty sequence of kinds, got {pattern!r}"
                )
            pattern = tuple(pattern)
            bad = [k for k in pattern if k not in LAYER_KINDS]
            if bad:
                raise ValueError(
                    f"layer_pattern kinds must be {' or '.join(LAYER_KINDS)}; got {bad[0]!r}"
                )
            if "local" in pattern and self.sliding_window is None:
                raise ValueError("layer_pattern has local layers but sliding_window is not set")
            object.__setattr__(self, "layer_pattern", pattern)

    @property
    def d(self) -> int:
        """Width of one head (``head_dim``, filled in)."""
        assert self.head_dim is not None
        return self.head_dim

    @property
    def q_dim(self) -> int:
        """Width of all query heads together, ``heads * head_dim``."""
        return self.heads * self.d

    @property
    def kv_dim(self) -> int:
        """Width of all key (or value) heads together, ``kv_heads * head_dim``."""
        return self.kv_heads * self.d

    @property
    def activation_name(self) -> str:
        """The gated MLP's name, ``"SwiGLU"`` or ``"GeGLU"``."""
        return ACTIVATIONS[self.activation]

    def layer_kind(self, layer: int) -> str:
        """``"local"`` (sliding window) or ``"global"``: the kind of layer ``layer`` (0-based)."""
        layer = _validate.size("layer", layer, minimum=0)
        if layer >= self.layers:
            raise ValueError(f"layer must be below {self.layers}, got {layer}")
        if self.layer_pattern is not None:
            return self.layer_pattern[layer % len(self.layer_pattern)]
        return "local" if self.sliding_window is not None else "global"

    def window(self, layer: int) -> int | None:
        """Tokens layer ``layer`` attends to: the sliding window, or None (the whole context)."""
        return self.sliding_window if self.layer_kind(layer) == "local" else None

    @property
    def local_layers(self) -> int:
        """How many layers attend through the sliding window."""
        return sum(self.layer_kind(i) == "local" for i in range(self.layers))

    def layer_parameters(self, *, active: bool = False) -> int:
        """Weights of one layer: attention, MLP (all experts, or ``active`` ones), router, norms.

        Examples
        --------
        >>> llama = model("llama-2-7b")
        >>> llama.layer_parameters()    # 4 * 4096^2 + 3 * 4096 * 11008 + 2 * 4096
        202383360
        """
        return self.layer_matrix_parameters(active=active) + 2 * self.hidden

    def layer_matrix_parameters(self, *, active: bool = False) -> int:
        """The weights of one layer's linear layers (those weight quantization converts)."""
        h = self.hidden
        attention = h * self.q_dim + 2 * h * self.kv_dim + self.q_dim * h
        per_expert = (3 if self.gated else 2) * h * self.ffn
        experts = self.experts_per_token if active else self.experts
        router = h * self.experts if self.experts > 1 else 0
        return attention + experts * per_expert + router

    def parameters(self, *, active: bool = False) -> int:
        """All weights: layers, embedding, final norm, and the LM head unless tied.

        Examples
        --------
        >>> round(model("llama-2-7b").parameters() / 1e9, 2)     # "7B"
        6.74
        """
        head = 0 if self.tied_embeddings else self.vocab * self.hidden
        return (
            self.layers * self.layer_parameters(active=active)
            + self.vocab * self.hidden
            + (self.hidden + head)
        )


# --------------------------------------------------------------------------
# The catalog


def _key(name: str) -> str:
    return "-".join(name.strip().lower().replace("_", " ").split())


#: The fields a catalog entry or :func:`adhoc_model` may set.
FIELDS = (
    "hidden",
    "layers",
    "heads",
    "kv_heads",
    "ffn",
    "vocab",
    "head_dim",
    "gated",
    "activation",
    "tied_embeddings",
    "max_context",
    "experts",
    "experts_per_token",
    "sliding_window",
    "layer_pattern",
)


def parse_catalog(text: str, where: str = CATALOG_FILE) -> Mapping[str, ModelConfig]:
    """The models of a catalog file's text, by key; ``where`` names the file in errors.

    Every key of a model entry must be a field (:data:`FIELDS`), ``name`` or
    ``source``: a misspelt key is an error, not a default.

    Examples
    --------
    >>> parse_catalog('''
    ... [sources.s]
    ... title = "t"
    ... [models.m]
    ... name = "M"
    ... source = "s"
    ... hidden = 8
    ... layers = 1
    ... heads = 2
    ... kv_heads = 2
    ... ffn = 8
    ... vocab = 8
    ... sliding_widow = 4
    ... ''', "my.toml")
    Traceback (most recent call last):
    ...
    ValueError: my.toml: model 'm' has an unknown key 'sliding_widow'; allowed: name, ...
    """
    data = tomllib.loads(text)
    fields_of_source = ("title", "url", "date", "note", "firmness")
    sources = {}
    for k, v in data.get("sources", {}).items():
        for field in v:
            if field not in fields_of_source:
                raise ValueError(
                    f"{where}: source {k!r} has an unknown key {field!r}; "
                    f"allowed: {', '.join(fields_of_source)}"
                )
        sources[k] = Source(key=k, **v)
    allowed = ("name", "source", *FIELDS)
    out = {}
    for key, entry in data.get("models", {}).items():
        for field in entry:
            if field not in allowed:
                raise ValueError(
                    f"{where}: model {key!r} has an unknown key {field!r}; "
                    f"allowed: {', '.join(allowed)}"
                )
        if entry.get("source") not in sources:
            raise ValueError(f"{where}: model {key!r} names no known source")
        if "name" not in entry:
            raise ValueError(f"{where}: model {key!r} has no name")
        fields = {f: entry[f] for f in FIELDS if f in entry}
        if "layer_pattern" in fields:
            fields["layer_pattern"] = tuple(fields["layer_pattern"])
        try:
            out[key] = ModelConfig(
                key=key, name=entry["name"], source=sources[entry["source"]], **fields
            )
        except (TypeError, ValueError) as error:
            raise ValueError(f"{where}: model {key!r}: {error}") from error
    return MappingProxyType(out)


@functools.cache
def models() -> Mapping[str, ModelConfig]:
    """Every model of the data file, by key."""
    text = resources.files(__package__).joinpath("data/models.toml").read_text("utf-8")
    return parse_catalog(text)


def model(name: str) -> ModelConfig:
    """A catalog model by name; case, spaces and underscores do not matter.

    Examples
    --------
    >>> model("Mixtral 8x7B").experts
    8
    >>> model("gpt-5")
    Traceback (most recent call last):
    ...
    ValueError: unknown model 'gpt-5'; allowed: llama-2-7b, ...
    """
    if not isinstance(name, str):
        raise TypeError(f"name must be a model name such as 'llama-2-7b', got {name!r}")
    catalog = models()
    key = _key(name)
    if key not in catalog:
        raise ValueError(f"unknown model {name!r}; allowed: {', '.join(catalog)}")
    return catalog[key]


def adhoc_model(name: str, **sizes: object) -> ModelConfig:
    """A model of your own sizes (the fields of :class:`ModelConfig`).

    Examples
    --------
    >>> tiny = adhoc_model("tiny", hidden=256, layers=2, heads=4, kv_heads=2, ffn=512, vocab=1000)
    >>> tiny.kv_dim
    128
    """
    if not isinstance(name, str) or not name:
        raise TypeError(f"name must be a non-empty string, got {name!r}")
    unknown = set(sizes) - set(FIELDS)
    if unknown:
        raise ValueError(f"unknown field(s) {sorted(unknown)}; allowed: {', '.join(FIELDS)}")
    return ModelConfig(key=_key(name), name=name, **sizes)  # type: ignore[arg-type]
