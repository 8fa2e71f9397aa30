# Type stub of the C++ extension g5sim._g5sim (python/module.cpp), for editors and type checkers.
from typing import Any, Callable, Dict, List, Optional, Tuple

def version() -> str: ...
def data_dir() -> str: ...
def shipped_chip_path() -> str: ...
def shipped_model_path() -> str: ...
def shipped_chips() -> List[str]: ...
def shipped_models() -> List[str]: ...
def shipped_runtimes() -> List[str]: ...
def shipped_kv_tiers() -> List[str]: ...
def kv_tiers_path(name_or_path: str) -> str: ...
def kv_tiers(name_or_path: str) -> Dict[str, Any]: ...
def runtime_path(name_or_path: str) -> str: ...
def runtime(name_or_path: str) -> Dict[str, Any]: ...
def chip_path(name_or_path: str) -> str: ...
def model_path(name_or_path: str) -> str: ...
def grid_nesting() -> List[str]: ...
def diff_json(a: str, a_name: str, b: str, b_name: str, top: int) -> str: ...
def reports() -> List[Dict[str, Any]]: ...
def run_limits() -> Dict[str, int]: ...
def knobs() -> List[Dict[str, Any]]: ...
def serve_texts(chip: Chip, model: Model, request: Request, items: List[Tuple[str, str]], trace_text: Optional[str],
                perfetto: bool, progress: Optional[Callable[[int, int], None]] = None) -> Tuple[str, str, str]: ...
def sensitivity_texts(chip_text: str, chip_source: str, model: Model, request: Request,
                      items: List[Tuple[str, str]]) -> Tuple[str, str, str]: ...
def solve_texts(chip_text: str, chip_source: str, model: Model, request: Request,
                items: List[Tuple[str, str]]) -> Tuple[str, str, str]: ...
def search_texts(chips: List[Chip], model: Model, request: Request, items: List[Tuple[str, str]],
                 run_pass: Optional[Callable[[List[int]], List[str]]],
                 progress: Optional[Callable[[int, int], None]] = None) -> Tuple[str, str, str]: ...
def search_point_text(chips: List[Chip], model: Model, request: Request, items: List[Tuple[str, str]],
                      index: int) -> str: ...
def why_option_does_not_apply(field: str, model: Model, request: Request) -> str: ...

class Chip:
    @staticmethod
    def from_file(path: str) -> Chip: ...
    @staticmethod
    def from_yaml(text: str, source: str) -> Chip: ...
    @staticmethod
    def from_document(json_text: str, source: str) -> Chip: ...
    @property
    def name(self) -> str: ...
    @property
    def source(self) -> str: ...
    @property
    def cores(self) -> int: ...
    @property
    def engines(self) -> List[str]: ...
    @property
    def ddr_capacity_bytes(self) -> int: ...
    @property
    def summary(self) -> str: ...
    @property
    def calibration_summary(self) -> str: ...
    @property
    def sha256(self) -> str: ...
    def with_cores(self, cores: int) -> Chip: ...

class ModelSchema:
    g5sim: ModelSchema
    hugging_face: ModelSchema

class Model:
    @staticmethod
    def from_file(path: str) -> Model: ...
    @staticmethod
    def from_yaml(text: str, source: str) -> Model: ...
    @staticmethod
    def from_document(json_text: str, source: str, schema: ModelSchema) -> Model: ...
    @property
    def name(self) -> str: ...
    @property
    def source(self) -> str: ...
    @property
    def model_type(self) -> str: ...
    @property
    def attention(self) -> str: ...
    @property
    def num_hidden_layers(self) -> int: ...
    @property
    def num_attention_heads(self) -> int: ...
    @property
    def kv_lora_rank(self) -> int: ...
    @property
    def qk_rope_head_dim(self) -> int: ...
    @property
    def parameter_count(self) -> int: ...
    @property
    def summary(self) -> str: ...
    @property
    def sha256(self) -> str: ...
    @property
    def latent_kv_elements(self) -> int: ...

class Request:
    # One property per row of the run-option table (g5sim/run_options.hpp), in its order; the
    # test python/tests/test_run_options.py checks these against the table.
    phase: str
    batch: Optional[int]
    ctx: int
    q_len: Optional[int]
    mix: Optional[str]
    seqs: Optional[str]
    decode_max_q: int
    kv_dtype: str
    mla_mode: str
    prefill_mla_mode: str
    prefill_attention: Optional[str]
    weight_dtype: Optional[str]
    weight_group: Optional[int]
    act_dtype: str
    kv_read_engine: Optional[str]
    attn_split: str
    kv_append: Optional[str]
    lm_head_weights: Optional[str]
    scope: str
    layers: Optional[int]
    micro_batches: int
    host_launch_ns: Optional[int]
    runtime: Optional[str]
    cores: Optional[int]
    tp: Optional[int]
    ep: Optional[int]
    dp: Optional[int]
    expert_load: Optional[str]
    strict_capacity: bool
    max_commands: int
    prefetch: bool
    replay: bool
    def __init__(self) -> None: ...

class SequenceGroup:
    """One group of a step's sequences: count sequences of q_len new tokens after history
    cached tokens, on the "decode" or "prefill" path."""
    count: int
    q_len: int
    history: int
    path: str

class Op:
    id: int
    name: str
    layer: Optional[int]
    kind: str
    shape: str
    engines: str
    op_start_ps: int
    op_end_ps: int
    op_start_ns: float
    op_end_ns: float
    hbm_bytes: int
    unique_bytes: int
    c2c_bytes: int
    flops: int
    kv_bytes: int
    peak_lmem_bytes: int
    roofline_ns: float
    regime: str
    bound_by: str
    bound_share: float
    idle_gap_ps: int
    energy_j: float
    def to_dict(self) -> Dict[str, Any]: ...

class Kind:
    kind: str
    ops: int
    busy_ps: int
    busy_ns: float
    hbm_bytes: int
    c2c_bytes: int
    flops: int
    regime: str
    bound_by: str
    energy_j: float

class RuntimeParts:
    kernel_mode: str
    kernels: int
    collectives: int
    layer_launches: int
    kernel_floor_ps: int
    kernel_gap_ps: int
    collective_ps: int
    layer_launch_ps: int
    step_cpu_ps: int
    total_ps: int

class Result:
    chip: str
    model: str
    scope: str
    layers: int
    micro_batches: int
    host_launch_ns: int
    phase: str
    batch: int
    q_len: int
    kv_len: int
    kv_dtype: str
    mla_mode: str
    prefill_mla_mode: str
    weight_dtype: str
    weight_group: int
    kv_read_engine: str
    attn_split: str
    prefill_attention: str
    kv_append: str
    lm_head_weights: str
    act_dtype: str
    sequences: List[SequenceGroup]
    chip_sequences: List[SequenceGroup]
    chip_source: str
    chip_sha256: str
    model_source: str
    model_sha256: str
    cores: int
    prefetch: bool
    replay: bool
    tp: int
    ep: int
    dp: int
    chips: int
    automatic_sharding: bool
    weight_bytes: int
    kv_cache_bytes: int
    capacity_bytes: int
    total_ps: int
    total_ns: float
    runtime: str
    runtime_version: str
    runtime_source: str
    runtime_sha256: str
    runtime_adds: str
    runtime_parts: RuntimeParts
    chip_ps: int
    step_ps: int
    runtime_ps: int
    hbm_bytes: int
    c2c_bytes: int
    flops: int
    command_count: int
    simulated_commands: int
    replayed_commands: int
    has_band: bool
    band_low_ps: int
    band_high_ps: int
    band_low_ns: Optional[float]
    band_high_ns: Optional[float]
    band_coverage: float
    band_basis: str
    tokens_per_s: float
    tokens_per_s_per_chip: float
    compute_ns: float
    memory_ns: float
    regime: str
    bound_by: str
    bound_share: float
    idle_gap_ps: int
    has_energy: bool
    energy_j: float
    dynamic_energy_j: float
    static_energy_j: float
    average_power_w: float
    tdp_w: float
    joules_per_token: float
    tokens_per_joule: float
    energy_by_engine: Dict[str, float]
    ops: List[Op]
    kinds: List[Kind]
    commands: Dict[str, int]
    warnings: List[str]
    def op(self, name: str, layer: Optional[int] = None) -> Op: ...
    def ops_named(self, name: str) -> List[Op]: ...
    def json(self) -> str: ...
    def table(self) -> str: ...
    def identity(self) -> Dict[str, Any]: ...
    def to_dict(self) -> Dict[str, Any]: ...
    def to_dataframe(self) -> Any: ...
    def per_layer_records(self) -> List[Dict[str, Any]]: ...
    def per_layer(self) -> Any: ...

class OpResult:
    op: str
    shape: str
    cores: int
    total_ps: int
    ddr_bytes: int
    c2c_bytes: int
    unique_bytes: int
    peak_lmem_bytes: int
    flops: int
    commands: int
    tiu_utilization: float
    has_energy: bool
    energy_j: float
    dynamic_energy_j: float
    static_energy_j: float
    def json(self) -> str: ...
    def table(self) -> str: ...

def simulate_request(chip: Chip, model: Model, request: Request,
                     progress: Optional[Callable[[str, int, int], None]] = ...) -> Result: ...
def check_report(chip: Chip, model: Model) -> str: ...
def simulate_matmul(chip: Chip, m: int, n: int, k: int, dtype: str = ..., cores: int = ...) -> OpResult: ...
def simulate_attention(chip: Chip, *, kv_len: int, heads: int, qk_dim: int, v_dim: int, batch: int = ...,
                       q_len: int = ..., kv_heads: int = ..., shared_kv: bool = ..., causal: bool = ...,
                       cores: int = ...) -> OpResult: ...
def simulate_collective(chip: Chip, kind: str, *, bytes: int, chips: int) -> OpResult: ...
def check_deployment_request(chip: Chip, model: Model, request: Request) -> None: ...
def chrome_trace_request(chip: Chip, model: Model, request: Request, layers: Optional[Tuple[int, int]] = ...) -> str: ...
def run_options() -> List[Dict[str, Any]]: ...
