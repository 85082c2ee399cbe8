"""``roofline-book infer --json`` 的记录：:class:`InferResult` 与它的各部分（精度、一步的各项、
通信、链路），由 :func:`roofline_book.distributed.report.inference_report` 的回答写成。
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from .._base.records import record_field
from ..distributed.parallel import GPUS_PER_NODE, Comm
from ..distributed.report import InferenceReport
from .results import CostOn, Device, LayerOp, Result, StepOp, command_field

_B, _S = "byte", "s"


@dataclass(frozen=True, kw_only=True)
class PrecisionsEntry:
    """权重、激活与 KV cache 的精度。"""

    SCHEMA_EXTRA: ClassVar[dict[str, str]] = {"description": "weights, activations, KV cache"}

    weights: str = record_field(description="linear layers' weights")
    activations: str = record_field(description="activations and compute")
    kv: str = record_field(description="KV cache")
    scheme: str = record_field(description="the scheme's name, e.g. W4A16")
    zero_point: bool = record_field(description="a zero point per group (asymmetric)")
    embeddings: str = record_field(description="the embedding table and the LM head")
    weight_block: int | None = record_field(
        nullable=True,
        minimum=1,
        unit="1",
        description="one FP32 scale per weight_block x weight_block block of weights; null: none",
    )
    source: str = record_field(
        enum=["checkpoint", "flags"],
        description="checkpoint: the config.json's quantization_config (no --weights-dtype or "
        "--dtype given); flags: --weights-dtype, --dtype and their defaults",
    )


@dataclass(frozen=True, kw_only=True)
class InferComm:
    """一步中的一种集合通信（整个模型）。"""

    SCHEMA_EXTRA: ClassVar[dict[str, str]] = {"description": "one collective of the step"}

    what: str = record_field(description="the collective's role")
    op: str = record_field(
        enum=["all_reduce", "all_gather", "all_to_all", "send_recv"], description="the collective"
    )
    count: int = record_field(minimum=0, unit="1", description="times per step")
    bytes: float = record_field(
        minimum=0, unit="byte", description="each time, each device's buffer (sent)"
    )
    devices: int = record_field(minimum=0, unit="1", description="devices taking part")
    link: str = record_field(
        description="nvlink, pcie, ...; nvlink+<network> when it also crosses nodes over the NIC"
    )
    transfer_time_s: float = record_field(
        minimum=0, unit="s", description="bandwidth term, all times"
    )
    latency_time_s: float = record_field(minimum=0, unit="s", description="alpha term, all times")

    @classmethod
    def of(cls, c: Comm) -> InferComm:
        """集合通信 ``c`` 的记录。"""
        return cls(
            what=c.what,
            op=c.op,
            count=c.count,
            bytes=c.nbytes,
            devices=c.devices,
            link=c.link,
            transfer_time_s=c.time.bandwidth_s,
            latency_time_s=c.time.latency_s,
        )


@dataclass(frozen=True, kw_only=True)
class Interconnect:
    """目录中设备之间的链路。"""

    SCHEMA_EXTRA: ClassVar[dict[str, str]] = {"description": "the catalog's GPU-to-GPU link"}

    link: str | None = record_field(nullable=True, description="nvlink, infinity-fabric or pcie")
    link_bandwidth_Bps: float | None = record_field(
        nullable=True,
        minimum=0,
        unit="byte/s",
        description="the device's links together, per direction",
    )
    link_latency_s: float | None = record_field(
        nullable=True, minimum=0, unit=_S, description="per collective step"
    )
    link_reduces: bool = record_field(
        description="the switch reduces in the network (NVLink SHARP)"
    )


_TIME = (
    "every kernel one after another; on several devices the larger of that and the "
    "collectives' bandwidth terms, which may overlap it"
)
_FLOOR = "no implementation, fused or overlapped, is faster"
_DEVICE_OPS = (
    "the whole model's operators, one device's share after the split (the same as ops on one "
    "device)"
)
_COMMS = "the step's collectives, whole model; empty on one device"


@dataclass(frozen=True, kw_only=True)
class Prefill:
    """prefill：下界与算子。"""

    SCHEMA_EXTRA: ClassVar[dict[str, str]] = {"description": "one phase"}

    time_lower_bound_s: float = record_field(minimum=0, unit=_S, description=_TIME)
    any_implementation_time_lower_bound_s: float = record_field(
        minimum=0, unit=_S, description=_FLOOR
    )
    layer_ops: tuple[LayerOp, ...] = record_field(description="one layer's operators (layer 0)")
    ops: tuple[StepOp, ...] = record_field(description="the whole model's operators")
    device_ops: tuple[StepOp, ...] = record_field(description=_DEVICE_OPS)
    communication: tuple[InferComm, ...] = record_field(description=_COMMS)


@dataclass(frozen=True, kw_only=True)
class Decode:
    """decode 的一步：下界、每秒 token 数的上限与算子。"""

    SCHEMA_EXTRA: ClassVar[dict[str, str]] = {"description": "one phase"}

    time_lower_bound_s: float = record_field(minimum=0, unit=_S, description=_TIME)
    any_implementation_time_lower_bound_s: float = record_field(
        minimum=0, unit=_S, description=_FLOOR
    )
    tokens_per_s: float = record_field(
        minimum=0, unit="1/s", description="batch / time_lower_bound_s: an upper bound"
    )
    any_implementation_tokens_per_s: float = record_field(
        minimum=0, unit="1/s", description="batch / any_implementation_time_lower_bound_s"
    )
    layer_ops: tuple[LayerOp, ...] = record_field(description="one layer's operators (layer 0)")
    ops: tuple[StepOp, ...] = record_field(description="the whole model's operators")
    device_ops: tuple[StepOp, ...] = record_field(description=_DEVICE_OPS)
    communication: tuple[InferComm, ...] = record_field(description=_COMMS)


@dataclass(frozen=True, kw_only=True)
class InferResult(Result):
    """``infer --json``：:class:`~roofline_book.distributed.report.InferenceReport` 的 JSON。"""

    SCHEMA_EXTRA: ClassVar[dict[str, str]] = {
        "description": "a language model's prefill and decode step"
    }

    command: str = command_field("infer")
    model: str = record_field(
        description="catalog key of the model, or the key of a config.json's name"
    )
    parameters: int = record_field(minimum=0, unit="1", description="parameters")
    active_parameters: int = record_field(
        minimum=0, unit="1", description="parameters used per token"
    )
    batch: int = record_field(minimum=0, unit="1", description="sequences")
    context: int = record_field(
        minimum=0, unit="token", description="tokens the decode step attends to"
    )
    prompt: int = record_field(minimum=0, unit="token", description="prompt tokens prefilled")
    precisions: PrecisionsEntry = record_field()
    sliding_window: int | None = record_field(
        nullable=True, minimum=0, unit="token", description="window of the local layers"
    )
    local_layers: int = record_field(
        minimum=0, unit="1", description="layers with a sliding window"
    )
    kv_cache_bytes_per_token: int = record_field(minimum=0, unit=_B)
    kv_cache_bytes_per_sequence: int = record_field(minimum=0, unit=_B)
    kv_cache_bytes: int = record_field(minimum=0, unit=_B, description="the whole batch's KV cache")
    weight_bytes: int = record_field(minimum=0, unit=_B)
    activation_peak_bytes: int = record_field(
        minimum=0, unit=_B, description="estimated activation peak"
    )
    max_batch: int | None = record_field(
        nullable=True,
        minimum=0,
        unit="1",
        description="largest batch that fits; null without a capacity",
    )
    decode_batch_to_ridge: float = record_field(
        minimum=0, unit="1", description="batch at which decode's MLP GEMM reaches the ridge"
    )
    devices: int = record_field(
        minimum=0, unit="1", description="devices of the group, max(tp, ep) x pp (1 unsplit)"
    )
    nodes: int = record_field(
        minimum=0,
        unit="1",
        description=f"nodes of {GPUS_PER_NODE} GPUs the group spans: "
        f"ceil(devices / {GPUS_PER_NODE})",
    )
    tp: int = record_field(minimum=0, unit="1", description="tensor-parallel devices")
    pp: int = record_field(minimum=0, unit="1", description="pipeline stages")
    ep: int = record_field(
        minimum=0,
        unit="1",
        description="expert-parallel devices: of the TP group (ep <= tp), or ep devices with "
        "attention data-parallel in ep / tp groups (ep > tp)",
    )
    attention_dp: int = record_field(
        minimum=1,
        unit="1",
        description="attention data-parallel groups: ep / tp if ep > tp, else 1",
    )
    batch_per_device: int = record_field(
        minimum=0,
        unit="1",
        description="sequences each device's attention runs: ceil(batch / attention_dp)",
    )
    weight_bytes_per_device: int = record_field(
        minimum=0, unit=_B, description="weights on the device that holds most"
    )
    kv_cache_bytes_per_sequence_per_device: int = record_field(
        minimum=0, unit=_B, description="one sequence's KV cache on one device"
    )
    communication_time_s: float = record_field(
        minimum=0,
        unit=_S,
        description="a decode step's collectives, whole model, their bandwidth terms (in the "
        "decode bound)",
    )
    communication_latency_s: float = record_field(
        minimum=0,
        unit=_S,
        description="a decode step's collectives, their alpha terms (not in the bound)",
    )
    prefill_communication_time_s: float = record_field(
        minimum=0, unit=_S, description="the prefill's collectives, bandwidth terms"
    )
    interconnect: Interconnect = record_field()
    device: Device = record_field()
    prefill: Prefill = record_field()
    decode: Decode = record_field()

    @classmethod
    def of(cls, r: InferenceReport, *, from_checkpoint: bool = False) -> InferResult:
        """回答 ``r`` 的记录；``from_checkpoint``：权重与激活的格式取自 checkpoint 的
        ``quantization_config``。"""
        c, d, p = r.config, r.device, r.precisions
        precision = p.activations

        def layer(ops: Any) -> tuple[LayerOp, ...]:
            return tuple(
                LayerOp(id=op.id, name=op.name, cost=CostOn.of(op.cost, d, precision)) for op in ops
            )

        def whole(entries: Any) -> tuple[StepOp, ...]:
            return tuple(
                StepOp(
                    id=e.key,
                    name=e.name,
                    layers=e.layers,
                    layer_kind=e.layer_kind,
                    cost=CostOn.of(e.cost, d, precision),
                )
                for e in entries
            )

        return cls(
            model=c.key,
            parameters=c.parameters(),
            active_parameters=c.parameters(active=True),
            batch=r.batch,
            context=r.context,
            prompt=r.prompt,
            precisions=PrecisionsEntry(
                weights=p.weights,
                activations=p.activations,
                kv=p.kv,
                scheme=p.scheme,
                zero_point=p.zero_point,
                embeddings=p.table_precision,
                weight_block=p.weight_block,
                source="checkpoint" if from_checkpoint else "flags",
            ),
            sliding_window=c.sliding_window,
            local_layers=c.local_layers,
            kv_cache_bytes_per_token=r.kv_bytes_per_token,
            kv_cache_bytes_per_sequence=r.kv_bytes_per_sequence,
            kv_cache_bytes=r.kv_bytes,
            weight_bytes=r.weight_bytes,
            activation_peak_bytes=r.activation_peak_bytes,
            max_batch=r.max_batch,
            decode_batch_to_ridge=r.decode_batch_to_ridge,
            devices=r.split.devices,
            nodes=r.nodes,
            tp=r.split.tp,
            pp=r.split.pp,
            ep=r.split.ep,
            attention_dp=r.split.attention_dp,
            batch_per_device=r.batch_per_device,
            weight_bytes_per_device=r.weight_bytes_per_device,
            kv_cache_bytes_per_sequence_per_device=r.kv_bytes_per_sequence_per_device,
            communication_time_s=r.decode.communication_s,
            communication_latency_s=r.decode.latency_s,
            prefill_communication_time_s=r.prefill.communication_s,
            interconnect=Interconnect(
                link=d.link or None,
                link_bandwidth_Bps=d.link_bandwidth,
                link_latency_s=d.link_latency,
                link_reduces=d.link_reduces,
            ),
            device=Device.on(d, precision),
            prefill=Prefill(
                time_lower_bound_s=r.prefill.seconds,
                any_implementation_time_lower_bound_s=r.prefill.floor_s,
                layer_ops=layer(r.prefill.layer_ops),
                ops=whole(r.prefill.ops),
                device_ops=whole(r.prefill.device_ops),
                communication=tuple(InferComm.of(c) for c in r.prefill.comms),
            ),
            decode=Decode(
                time_lower_bound_s=r.decode.seconds,
                any_implementation_time_lower_bound_s=r.decode.floor_s,
                tokens_per_s=r.tokens_per_s,
                any_implementation_tokens_per_s=r.floor_tokens_per_s,
                layer_ops=layer(r.decode.layer_ops),
                ops=whole(r.decode.ops),
                device_ops=whole(r.decode.device_ops),
                communication=tuple(InferComm.of(c) for c in r.decode.comms),
            ),
        )
