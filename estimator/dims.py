"""The model's dimensions as the formulas name them (docs/model.md#symbols): resolved once per plan from the
``ModelSpec`` and the family profile (``resolve``), read by the parameter, activation, FLOP and static-memory
formulas."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Dims:
    """Model symbols (docs/model.md#symbols), scalars."""

    h: int
    a: int
    n_kv: int
    dh: int
    dv: int
    dqk: int
    dhr: int
    hff: int
    hff_exp: int
    hff_sh: int
    v: int
    vocab_multiple: int  # pad v to a multiple of this × t (Megatron family, D35); 1 = no padding
    g: int
    c_norm: int
    c_stat: int
    n_lay: int
    n_mtp: int
    n_exp: int
    n_chosen: int
    n_shared: int
    dc_q: int
    dc_kv: int
    mla: bool
    moe: bool
    qk_norm: bool
    output_gate: bool
    qkv_bias: bool
    out_bias: bool
    mlp_bias: bool
    router_bias: bool
    shared_gate: bool
    tie: bool
    cap_fact: float  # <= 0: dropless
    lin_k: int  # K_lin = lin_n_k · lin_d_k
    lin_v: int  # V_lin
    n_lv: int
    lin_d_k: int
    lin_d_v: int
    conv: int
    attn_dropout: bool
    hidden_dropout: bool
    emb_dropout: bool
    router_bytes: float
    kind_symbols: tuple[tuple[str, float], ...] = ()  # symbols of the data layer kinds in use (estimator/kinds)
    n_pos: int = 0  # learned absolute positions (their table sits beside the word embedding)

    @property
    def q_w(self) -> int:
        return self.a * self.dqk

    @property
    def k_w(self) -> int:
        return self.n_kv * self.dqk

    @property
    def v_w(self) -> int:
        return self.n_kv * self.dv

    @property
    def o_w(self) -> int:
        return self.a * self.dv
